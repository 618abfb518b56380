"""A scorecard PDF read for verification: its bytes, its attachments, its page text.

    read_document(path)            -> Document (NotAScorecard: unreadable, or not ours)
    page_check(doc, card, run)     page one's key figures and statuses against a card

The PDF is input like any other: read bounded, parsed by pypdf without trusting it, and
a file that is not a PDF, or a PDF that carries no scorecard.json, is said to be so in
one sentence (exit 2), never a traceback.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import InputError
from evalkit.review.recheck import Recheck, page_differences, page_statuses

if TYPE_CHECKING:
    from evalkit.review.scorecard import Scorecard
    from evalkit.rundir.run import RunDir

#: larger than any scorecard (64 MiB of records plus the page): not ours beyond it
MAX_PDF_BYTES = 512 << 20


class NotAScorecard(InputError):
    """The file cannot be read as a PDF, or is not an evalkit scorecard (exit 2)."""


@dataclass
class Document:
    """A PDF as read: its bytes, its attachments by name, and the pypdf reader."""

    path: Path
    data: bytes
    files: dict[str, bytes]
    reader: Any
    digests: dict[str, str] = field(default_factory=dict)
    _texts: dict[int, str] = field(default_factory=dict)

    def text(self, page: int) -> str:
        """A page's text (0-based), extracted once; '' for a page that has none we read."""
        if page not in self._texts:
            try:
                self._texts[page] = self.reader.pages[page].extract_text() or ""
            except Exception:  # a damaged content stream: its text is simply not there
                self._texts[page] = ""
        return self._texts[page]


def read_document(path: Path) -> Document:
    """The PDF at `path`, with its attachments; NotAScorecard when it is not one of ours."""
    import pypdf

    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_PDF_BYTES + 1)
    except OSError as exc:
        raise NotAScorecard(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_PDF_BYTES:
        raise NotAScorecard(f"{path}: larger than {MAX_PDF_BYTES >> 20} MiB; not a scorecard "
                            "evalkit wrote")
    if not data.lstrip()[:5] == b"%PDF-":
        raise NotAScorecard(f"{path}: not a PDF (it does not start with %PDF-)")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        attached = reader.attachments
        files: dict[str, bytes] = {}
        for name in attached:
            blobs = attached[name]
            files[str(name)] = blobs[-1] if blobs else b""
        pages = len(reader.pages)
    except Exception as exc:  # pypdf's errors on a broken file are many and not all its own
        raise NotAScorecard(f"{path}: a PDF that cannot be read ({type(exc).__name__}: "
                            f"{str(exc)[:200]})") from None
    if "scorecard.json" not in files:
        raise NotAScorecard(
            f"{path}: not an evalkit scorecard (it carries no scorecard.json"
            + (f"; its attachments: {', '.join(sorted(files))[:200]}" if files else
               ", and no attachment at all") + f"; {pages} pages). `evalkit verify` checks "
            "the PDFs `evalkit report` writes")
    digests = {name: hashlib.sha256(blob).hexdigest() for name, blob in files.items()}
    return Document(path, data, files, reader, digests)


def page_check(doc: Document, card: Scorecard, run: RunDir | None) -> Recheck:
    """Page one's key figures and the questions' statuses, as the page must print them
    for this card, against the page's text (the questions' table may run onto the next
    pages: read until six statuses are found, at most three pages)."""
    from evalkit.questionnaire.schema import QUESTION_IDS
    from evalkit.render.report import build_context

    context = build_context(card, run, {}, charts=False)
    figures = [(str(label), str(value)) for label, value in context["key_figures"]]
    statuses = [(qid, card.question(qid).status) for qid in QUESTION_IDS]
    text = doc.text(0)
    for page in range(1, min(3, len(doc.reader.pages))):
        if len(page_statuses(text)) >= len(statuses):
            break
        text += "\n" + doc.text(page)
    first = text.split("The six capacity questions")[0] if figures else text
    out = page_differences(first, figures, [], where="page 1")
    out.add(page_differences(text, [], statuses, where="page 1"))
    return out
