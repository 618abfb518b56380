"""A scorecard PDF read for verification: its bytes, its attachments, its pages.

    read_document(path)            -> Document (NotAScorecard: unreadable, or not ours)

The PDF is input like any other: read bounded, parsed by pypdf without trusting it, and
a file that is not a PDF, or a PDF that carries no scorecard.json, is said to be so in
one sentence (exit 2), never a traceback.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import InputError

#: larger than any scorecard (64 MiB of records plus the page): not ours beyond it
MAX_PDF_BYTES = 512 << 20


class NotAScorecard(InputError):
    """The file cannot be read as a PDF, or is not an evalkit scorecard (exit 2)."""


@dataclass
class Document:
    """A PDF as read: its bytes, its attachments by name, and the pypdf reader (its pages
    are read by `evalkit.verify.drawing`)."""

    path: Path
    data: bytes
    files: dict[str, bytes]
    reader: Any
    digests: dict[str, str] = field(default_factory=dict)


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
