"""The buyer's documents read as plain text: Markdown and text, HTML, PDF, JSONL chat.

Every file is input from anywhere (an export, a wiki dump, a PDF off a shared drive), so
each is read bounded (`MAX_FILE_BYTES`, `MAX_DOCUMENT_CHARS`, PDF pages, JSONL lines) and
a file that cannot be read is an `InputError` naming it and what is wrong, never a
traceback. Text comes out as stored: paragraphs with one blank line between them, lone
surrogates and control characters gone (`evalkit.corpus.text.normalised`).

- `.md .markdown .txt .text .rst`: UTF-8 (a BOM is dropped).
- `.html .htm`: the standard library's parser; scripts, styles and the head left out,
  block elements ending paragraphs, entities decoded.
- `.pdf`: each page's text layer (pypdf); a scan without one has no text, and says so.
- `.jsonl`: one conversation a line, OpenAI chat format (`{"messages": [{"role",
  "content"}, ...]}`), or one message a line; each message's text is a paragraph.
"""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from evalkit.corpus.text import normalised
from evalkit.errors import InputError

#: the largest file read (a PDF or an export larger is not a document to quote from)
MAX_FILE_BYTES = 64 << 20
#: the most text one document may hold, once extracted (characters)
MAX_DOCUMENT_CHARS = 16_000_000
MAX_PDF_PAGES = 5000
MAX_JSONL_LINE = 1 << 20
#: how deep a JSONL line's content may nest (a hostile line nests thousands deep)
_MAX_DEPTH = 64

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst")
HTML_SUFFIXES = (".html", ".htm")
SUFFIXES = (*TEXT_SUFFIXES, *HTML_SUFFIXES, ".pdf", ".jsonl")

_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def kind_of(path: Path) -> str | None:
    """What a file is read as, by its suffix: text, html, pdf, jsonl; None: not read."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "text"
    if suffix in HTML_SUFFIXES:
        return "html"
    return {".pdf": "pdf", ".jsonl": "jsonl"}.get(suffix)


def read_document(path: Path) -> tuple[str, str]:
    """(kind, text) of one document, as stored; InputError naming the file otherwise."""
    kind = kind_of(path)
    if kind is None:
        raise InputError(f"{path}: not a document evalkit reads (its suffix is not one of "
                         f"{', '.join(SUFFIXES)})")
    data = _read_bounded(path)
    if kind == "pdf":
        raw = _pdf_text(path, data)
    else:
        if b"\x00" in data[:65536]:
            raise InputError(f"{path}: holds NUL bytes: a binary file, not {kind} text")
        try:
            decoded = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text (byte {exc.start:,} is not UTF-8); "
                             "save it as UTF-8 and add it again") from None
        raw = (_html_text(decoded) if kind == "html" else
               _jsonl_text(path, decoded) if kind == "jsonl" else decoded)
    if len(raw) > MAX_DOCUMENT_CHARS:
        raise InputError(f"{path}: {len(raw):,} characters of text, more than one document "
                         f"may hold ({MAX_DOCUMENT_CHARS:,}): split it")
    text = normalised(_CONTROLS.sub(" ", _no_surrogates(raw)))
    if not text:
        raise InputError(f"{path}: no text in it" + (" (a scan without a text layer?)"
                                                     if kind == "pdf" else ""))
    return kind, text


def _read_bounded(path: Path) -> bytes:
    if not path.is_file():  # a FIFO or a device would block or never end
        raise InputError(f"{path}: not a regular file")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; split it or "
                         "add the part that matters")
    return data


def _no_surrogates(text: str) -> str:
    """`text` with lone surrogates (a JSON escape of half a UTF-16 pair) replaced."""
    return _SURROGATES.sub("\ufffd", text)


class _TextOf(HTMLParser):
    """The text a reader sees: no scripts, styles or head; block elements end lines."""

    _SKIP = frozenset({"script", "style", "head", "template", "noscript", "svg", "math"})
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                         "pre", "blockquote", "section", "article", "table", "ul", "ol",
                         "dd", "dt", "hr", "header", "footer", "main", "aside", "nav"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data.replace("\n", " "))


def _html_text(text: str) -> str:
    parser = _TextOf()
    parser.feed(text)
    parser.close()
    return "".join(parser.parts)


def _pdf_text(path: Path, data: bytes) -> str:
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise InputError(f"{path}: an encrypted PDF; add a copy without a password")
        pages = len(reader.pages)
        if pages > MAX_PDF_PAGES:
            raise InputError(f"{path}: {pages:,} pages, more than a document may hold "
                             f"({MAX_PDF_PAGES:,}): split it")
        out: list[str] = []
        size = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            out.append(text)
            size += len(text)
            if size > MAX_DOCUMENT_CHARS:
                break
    except InputError:
        raise
    except Exception as exc:  # pypdf's errors on a broken file are many and not all its own
        raise InputError(f"{path}: a PDF that cannot be read ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    return "\n\n".join(out)


def _jsonl_text(path: Path, text: str) -> str:
    """Each message's text a paragraph; a message repeated (a system prompt on every
    conversation) once."""
    seen: dict[str, None] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(line) > MAX_JSONL_LINE:
            raise InputError(f"{path}:{n}: a line longer than {MAX_JSONL_LINE >> 20} MiB")
        if line.count("[") + line.count("{") > 4 * _MAX_DEPTH and _too_deep(line):
            raise InputError(f"{path}:{n}: JSON nested deeper than {_MAX_DEPTH} levels")
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{path}:{n}: not JSON ({str(exc)[:80]})") from None
        messages = obj.get("messages") if isinstance(obj, dict) else None
        if messages is None and isinstance(obj, dict) and "content" in obj:
            messages = [obj]
        if not isinstance(messages, list):
            raise InputError(f"{path}:{n}: expected {{\"messages\": [...]}} (OpenAI chat "
                             "format) or one {\"role\", \"content\"} message")
        for m in messages:
            for part in _message_texts(m):
                seen.setdefault(part, None)
    return "\n\n".join(seen)


def _too_deep(line: str) -> bool:
    depth = 0
    for c in line:
        if c in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return True
        elif c in "]}":
            depth -= 1
    return False


def _message_texts(message: Any) -> list[str]:
    """A message's text: its content string, or the text parts of a content list."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content] if content.strip() else []
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict)
                and isinstance(p.get("text"), str) and p["text"].strip()]
    return []
