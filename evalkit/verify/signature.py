"""A PDF's signatures checked with pyHanko: integrity, the signer against trust roots,
and what was appended after signing.

    check_signatures(pdf_bytes, trust)   one `SignatureReport` per signature (none: unsigned)

Integrity: the signed byte ranges hash to the digest the signature covers (a byte
changed anywhere in them fails). Trust: the signer's certificate chains to one of the
`--trust` certificates, else to the system's store; nothing is fetched (no revocation
look-up over the network). An incremental update after signing (bytes appended: a form
filled, an attachment swapped) leaves the signature intact for its own revision, so it
is reported separately: which revisions came after, and which objects they changed, named
(a page, an attachment, the document's metadata) where we can tell.
"""

from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.errors import InputError


@dataclass(frozen=True)
class SignatureReport:
    """One signature as `evalkit verify` reports it."""

    name: str
    #: the signed bytes hash to what the signature covers
    intact: bool
    #: the signature is cryptographically valid for the signer's key
    valid: bool
    #: the signer's certificate chains to a trusted root
    trusted: bool
    subject: str
    #: the signing time: the TSA's when timestamped (B-T), else the signer's own claim
    signing_time: str | None
    timestamped: bool
    #: what was appended after signing, one phrase per change (empty: nothing)
    changed_after: tuple[str, ...] = ()
    #: why it is not trusted or not valid, in pyHanko's words (short)
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Intact, valid, and nothing appended after signing (trust is reported apart)."""
        return self.intact and self.valid and not self.changed_after

    def sentence(self) -> str:
        """The signature in one line."""
        when = f" at {self.signing_time}" if self.signing_time else ""
        stamp = " (timestamped by a TSA)" if self.timestamped else ""
        trust = "trusted" if self.trusted else "NOT trusted (its certificate does not chain " \
            "to a --trust certificate or the system's store)"
        state = "intact" if self.intact and self.valid else "BROKEN: the signed bytes " \
            "changed after signing" if not self.intact else "BROKEN: invalid signature"
        return f"signed by {self.subject}{when}{stamp}: {state}; signer {trust}"

    def to_dict(self) -> dict[str, Json]:
        """For `verify --json`."""
        return {"field": self.name, "intact": self.intact, "valid": self.valid,
                "trusted": self.trusted, "subject": self.subject,
                "signing_time": self.signing_time, "timestamped": self.timestamped,
                "changed_after_signing": list(self.changed_after),
                "problems": list(self.problems)}


def load_trust(paths: tuple[str | Path, ...]) -> list[Any]:
    """The `--trust` certificates (PEM or DER; a file may hold several)."""
    from pyhanko.keys import load_certs_from_pemder

    out: list[Any] = []
    for p in paths:
        try:
            certs = list(load_certs_from_pemder([str(p)]))  # type: ignore[no-untyped-call]
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"--trust {p}: not a certificate we can read "
                             f"({type(exc).__name__})") from None
        if not certs:
            raise InputError(f"--trust {p}: holds no certificate")
        out += certs
    return out


def _key(ref: Any) -> tuple[int, int] | None:
    """A reference as (object number, generation), however pyHanko spelt it."""
    ref = getattr(ref, "reference", ref)
    idnum = getattr(ref, "idnum", None)
    return (idnum, getattr(ref, "generation", 0)) if isinstance(idnum, int) else None


class _Names(dict[tuple[int, int], str]):
    """Object -> what a reader would call it; set by any spelling of a reference."""

    def __setitem__(self, ref: Any, label: str) -> None:
        key = _key(ref)
        if key is not None and key not in self:  # the first, most specific name stays
            super().__setitem__(key, label)


def _names(reader: Any) -> dict[tuple[int, int], str]:
    """Object reference -> what a reader would call it (page N, attachment X, ...)."""
    out = _Names()
    root = reader.root
    out[reader.trailer.raw_get("/Root")] = "the document catalog"
    for key, name in (("/Metadata", "the XMP metadata"), ("/AcroForm", "the form fields")):
        if key in root:
            raw = root.raw_get(key)
            if hasattr(raw, "idnum"):
                out[raw] = name
    if "/Info" in reader.trailer:
        out[reader.trailer.raw_get("/Info")] = "the document properties"
    try:
        pages = reader.root["/Pages"]["/Kids"]
    except KeyError:
        pages = []
    for i, ref in enumerate(getattr(pages, "__iter__", lambda: iter(()))()):
        _page_refs(ref, f"page {i + 1}", out)
    try:
        files = reader.root["/Names"]["/EmbeddedFiles"]["/Names"]
    except (KeyError, TypeError):
        files = []
    for i in range(0, len(files) - 1, 2):
        label = f"attachment {files[i]}"
        spec = files.raw_get(i + 1)
        out[spec] = label
        with contextlib.suppress(KeyError, AttributeError):
            out[spec.get_object()["/EF"].raw_get("/F")] = label
    return out


def _page_refs(ref: Any, label: str, out: dict[Any, str]) -> None:
    if not hasattr(ref, "idnum"):
        return
    out[ref] = label
    page = ref.get_object()
    for key, what in (("/Contents", "content"), ("/Annots", "annotations")):
        raw = page.raw_get(key) if key in page else None
        if hasattr(raw, "idnum"):
            out[raw] = f"{label} ({what})"
        items: Any = page.get(key)
        if hasattr(items, "raw_get"):  # an array: each item's reference
            for item in (items.raw_get(j) for j in range(len(items))):
                if hasattr(item, "idnum"):
                    out[item] = f"{label} ({what})"


def _changed_after(reader: Any, signed_revision: int) -> tuple[str, ...]:
    """What each revision after the signed one changed, named where we can tell."""
    total = reader.xrefs.total_revisions
    if signed_revision >= total - 1:
        return ()
    names = _names(reader)
    out: list[str] = []
    for rev in range(signed_revision + 1, total):
        refs = [_key(ref) for ref in reader.xrefs.explicit_refs_in_revision(rev)]
        said = sorted({names.get(ref, "") for ref in refs if ref} - {""})
        others = sum(1 for ref in refs if ref not in names)
        what = ", ".join(said + ([f"{others} other object{'s' * (others != 1)}"]
                                  if others else []))
        out.append(f"revision {rev + 1} of {total}, appended after signing, changed "
                   f"{what or 'nothing we can name'}")
    return tuple(out)


def check_signatures(pdf: bytes, trust: list[Any]) -> list[SignatureReport]:
    """Every signature of the PDF, checked (none: the PDF is unsigned)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    reader = PdfFileReader(io.BytesIO(pdf), strict=False)
    # pyHanko logs an untrusted chain with its traceback: the report below says it
    quiet = logging.getLogger("pyhanko")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        return [_check(sig, reader, trust) for sig in reader.embedded_signatures]
    finally:
        quiet.setLevel(level)


def _check(sig: Any, reader: Any, trust: list[Any]) -> SignatureReport:
    """One signature checked."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    context = ValidationContext(trust_roots=trust or None, allow_fetching=False)
    # pyHanko's own analysis of later revisions is skipped (it costs tens of seconds on a
    # scorecard): any revision after the signed one is reported, named, as a difference
    status = validate_pdf_signature(sig, context, skip_diff=True)
    ts = status.timestamp_validity
    when = ts.timestamp if ts is not None else status.signer_reported_dt
    problems = []
    if not status.trusted:
        problems.append("the signer's certificate does not chain to a trusted root")
    return SignatureReport(
        name=str(sig.field_name), intact=bool(status.intact), valid=bool(status.valid),
        trusted=bool(status.trusted),
        subject=str(status.signing_cert.subject.human_friendly),
        signing_time=when.isoformat(timespec="seconds") if when else None,
        timestamped=ts is not None,
        changed_after=_changed_after(reader, sig.signed_revision),
        problems=tuple(problems))
