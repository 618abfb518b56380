"""Tampering with a scorecard PDF the way someone holding it could: attachments replaced
(optionally with the manifest fixed up to match), appended as an incremental update or
rewritten whole, with pypdf; words and boxes drawn over a page, and pages added, with
pypdf's overlay or, after signing, pyHanko's incremental writer."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Mapping
from typing import Any

import pypdf


def attachments(pdf: bytes) -> dict[str, bytes]:
    """The PDF's attachments by name."""
    return {k: v[-1] for k, v in pypdf.PdfReader(io.BytesIO(pdf)).attachments.items()}


def replace_attachments(pdf: bytes, changes: Mapping[str, bytes | None], *,
                        fix_manifest: bool = False, incremental: bool = False) -> bytes:
    """`pdf` with the named attachments' bytes replaced (None: removed). With
    `fix_manifest`, manifest.json is rewritten to name the new bytes, so only the
    re-derivation can tell. `incremental` appends the change (as after signing)."""
    changes = dict(changes)
    if fix_manifest:
        files = attachments(pdf)
        manifest = json.loads(files["manifest.json"])
        for name, data in changes.items():
            if data is None:
                manifest["files"].pop(name, None)
            else:
                manifest["files"][name].update(sha256=hashlib.sha256(data).hexdigest(),
                                               bytes=len(data))
        changes["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    writer = (pypdf.PdfWriter(reader, incremental=True) if incremental
              else pypdf.PdfWriter(clone_from=reader))
    names = writer.root_object["/Names"]["/EmbeddedFiles"]["/Names"]
    for i in reversed(range(0, len(names), 2)):
        name = str(names[i])
        if name not in changes:
            continue
        data = changes[name]
        if data is None:
            del names[i:i + 2]
            continue
        stream: Any = names[i + 1].get_object()["/EF"]["/F"].get_object()
        stream.set_data(data)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def edit_records(gz: bytes, edit: Any) -> bytes:
    """requests.jsonl.gz with `edit(record dict)` applied to its first ramp record."""
    lines = gzip.decompress(gz).decode().splitlines(keepends=True)
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec.get("phase") == "ramp":
            edit(rec)
            lines[i] = json.dumps(rec, separators=(",", ":")) + "\n"
            break
    return gzip.compress("".join(lines).encode(), mtime=0)


# --------------------------------------------------------------------------- drawing over


Box = tuple[float, float, float, float]


def text_box(pdf: bytes, page: int, needle: str) -> Box:
    """Where a page draws the first run of text holding `needle` (PDF points), as pypdf's
    own text extraction places it: what someone painting over it would aim at."""
    found: list[Box] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, size: float) -> None:
        if needle in text and not found:
            x, y = pypdf.mult(tm, cm)[4:6]
            found.append((x, y - 0.3 * size, x + 0.6 * size * len(text), y + size))

    pypdf.PdfReader(io.BytesIO(pdf)).pages[page].extract_text(visitor_text=visit)
    assert found, f"no text {needle!r} on page {page + 1}"
    return found[0]


def cover(box: Box, words: str, pad: float = 2.0) -> bytes:
    """A white box over `box` and `words` written on it, in Helvetica (/Helv)."""
    x1, y1, x2, y2 = box
    return (f"q 1 1 1 rg {x1 - pad:.2f} {y1 - pad:.2f} {x2 - x1 + 2 * pad:.2f} "
            f"{y2 - y1 + 2 * pad:.2f} re f 0 0 0 rg BT /Helv 9 Tf {x1:.2f} {y1 + 1:.2f} Td "
            f"({words}) Tj ET Q").encode()


def _helvetica(generic: Any = None) -> Any:
    """Helvetica's font dictionary, as pypdf's objects (or those of `generic`, pyHanko's)."""
    if generic is None:
        from pypdf import generic
    return generic.DictionaryObject({generic.NameObject(k): generic.NameObject(v) for k, v in (
        ("/Type", "/Font"), ("/Subtype", "/Type1"), ("/BaseFont", "/Helvetica"),
        ("/Encoding", "/WinAnsiEncoding"))})


def rewritten(pdf: bytes, edit: Any) -> bytes:
    """`pdf` cloned by pypdf's writer, `edit(writer)` applied, and written whole."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    edit(writer)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def overlay(pdf: bytes, page: int, ops: bytes) -> bytes:
    """`pdf` rewritten with `ops` stamped over a page, as pypdf's merge_page stamps one
    page onto another (a PDF editor's "add text" does the same)."""

    target = pypdf.PdfReader(io.BytesIO(pdf)).pages[page]
    stamp = _stamp_page(ops, float(target.mediabox.width), float(target.mediabox.height))
    return rewritten(pdf, lambda writer: writer.pages[page].merge_page(stamp))


def _stamp_page(ops: bytes, width: float, height: float) -> Any:
    """A page of its own drawing `ops` with Helvetica as /Helv, read back from a PDF pypdf
    wrote (a stamp, as an editor makes one)."""
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    stamp_doc = pypdf.PdfWriter()
    stamp = stamp_doc.add_blank_page(width, height)
    stamp[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
        {NameObject("/Helv"): stamp_doc._add_object(_helvetica())})})
    content = DecodedStreamObject()
    content.set_data(ops)
    stamp[NameObject("/Contents")] = stamp_doc._add_object(content)
    buf = io.BytesIO()
    stamp_doc.write(buf)
    return pypdf.PdfReader(buf).pages[0]


def draw_after_signing(pdf: bytes, page: int, ops: bytes) -> bytes:
    """`ops` appended to a page's content in an incremental update (pyHanko's writer), the
    signed bytes left as they were: what editing a signed PDF in place does."""
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    buf = io.BytesIO(pdf)
    writer = IncrementalPdfFileWriter(buf, strict=False)
    font = writer.add_object(_helvetica(generic))
    # the page's own content leaves its coordinates flipped: wrapped in q ... Q first, as
    # a stamping tool does, so the words land where they are aimed
    writer.add_stream_to_page(page, writer.add_object(generic.StreamObject(
        stream_data=b"q")), prepend=True)
    stream = writer.add_object(generic.StreamObject(stream_data=b"Q\n" + ops))
    writer.add_stream_to_page(page, stream, resources=generic.DictionaryObject({
        generic.pdf_name("/Font"): generic.DictionaryObject({generic.pdf_name("/Helv"): font})}))
    writer.write_in_place()
    return buf.getvalue()


def append_page(pdf: bytes, words: str, *, after_signing: bool = False) -> bytes:
    """`pdf` with a page of `words` added at its end: pypdf's writer, or pyHanko's
    incremental writer after signing."""
    ops = f"BT /Helv 14 Tf 72 720 Td ({words}) Tj ET".encode()
    if after_signing:
        from pyhanko.pdf_utils import generic
        from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

        buf = io.BytesIO(pdf)
        writer = IncrementalPdfFileWriter(buf, strict=False)
        font = writer.add_object(_helvetica(generic))
        page = generic.DictionaryObject({
            generic.pdf_name("/Type"): generic.pdf_name("/Page"),
            generic.pdf_name("/MediaBox"): generic.ArrayObject(
                [generic.NumberObject(v) for v in (0, 0, 595, 842)]),
            generic.pdf_name("/Resources"): generic.DictionaryObject({
                generic.pdf_name("/Font"): generic.DictionaryObject(
                    {generic.pdf_name("/Helv"): font})}),
            generic.pdf_name("/Contents"): writer.add_object(
                generic.StreamObject(stream_data=ops))})
        writer.insert_page(page)
        writer.write_in_place()
        return buf.getvalue()
    return rewritten(pdf, lambda writer: writer.add_page(_stamp_page(ops, 595, 842)))
