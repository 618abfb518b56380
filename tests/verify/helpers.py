"""Tampering with a scorecard PDF the way someone holding it could: attachments replaced
(optionally with the manifest fixed up to match), appended as an incremental update or
rewritten whole, with pypdf."""

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
