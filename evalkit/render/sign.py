"""Signing a PDF we rendered: PAdES baseline B-B with pyHanko (B-T with a TSA timestamp).

    SigningKey.load(...)     the key from a PKCS#12 file (passphrase from an environment
                             variable, never a flag value) or a PEM key and certificate
    sign_pdf(pdf, key, box)  an incremental update: a signature field in page one's
                             reserved box, its visible block naming the signer and time

The signature is an incremental update, so the PDF/A-3b document and its attachments
stay byte for byte what the renderer wrote, and `evalkit verify` can show whether
anything was appended after it. pyHanko rewrites the XMP metadata's producer and date in
that update; the Info dictionary's producer is set to the same words first, because
PDF/A requires the two to agree. The visible block's font is DejaVu Sans, embedded (the
scorecard's own font; PDF/A allows no font that is not embedded).
"""

from __future__ import annotations

import functools
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import InputError, SigningError, UsageError
from evalkit.render.pdf import SIGNATURE_ANCHOR

if TYPE_CHECKING:  # pyHanko loads only when a report is signed
    from pyhanko.sign.signers import SimpleSigner

#: the signature field's name in every PDF evalkit signs
FIELD_NAME = "evalkit-signature"
#: the visible block's words (%(signer)s and %(ts)s are pyHanko's: subject CN, time)
STAMP_TEXT = "Signed by %(signer)s\n%(ts)s\nPAdES signature: a change breaks it"


@dataclass(frozen=True)
class SigningKey:
    """A loaded signer and, for B-T, the timestamp authority to ask."""

    signer: SimpleSigner
    timestamp_url: str | None = None

    @property
    def subject(self) -> str:
        """The signer certificate's subject, as a reader sees it."""
        cert = self.signer.signing_cert
        assert cert is not None, "a signer is loaded with its certificate (`load`)"
        return str(cert.subject.human_friendly)

    @classmethod
    def load(cls, p12: str | Path | None = None, passphrase_env: str | None = None,
             key: str | Path | None = None, cert: str | Path | None = None,
             timestamp_url: str | None = None) -> SigningKey | None:
        """The key the options name, or None when no signing option was given.

        UsageError: options that do not fit (both forms, half of the PEM pair, a
        passphrase variable that is not set); InputError: a file that cannot be read or is
        not a key (or the passphrase is wrong).
        """
        from pyhanko.keys import load_certs_from_pemder, load_private_key_from_pemder
        from pyhanko.sign.signers import SimpleSigner
        from pyhanko_certvalidator.registry import SimpleCertificateStore

        if p12 is None and key is None and cert is None:
            if timestamp_url or passphrase_env:
                raise UsageError("--timestamp-url and --sign-passphrase-env need --sign "
                                 "FILE.p12 or --sign-key KEY.pem --sign-cert CERT.pem")
            return None
        if p12 is not None and (key is not None or cert is not None):
            raise UsageError("give --sign FILE.p12, or --sign-key and --sign-cert, not both")
        if p12 is None and (key is None or cert is None):
            raise UsageError("--sign-key KEY.pem needs --sign-cert CERT.pem (and the other "
                             "way round)")
        if timestamp_url is not None and not timestamp_url.startswith(("http://", "https://")):
            raise UsageError(f"--timestamp-url {timestamp_url[:100]!r}: give the TSA's "
                             "http(s):// URL")
        secret = None
        if passphrase_env:
            value = os.environ.get(passphrase_env)
            if value is None:
                raise UsageError(f"--sign-passphrase-env {passphrase_env}: that environment "
                                 "variable is not set")
            secret = value.encode()
        if p12 is not None:
            path = Path(p12)
            try:
                data = path.read_bytes()
                signer = SimpleSigner.load_pkcs12_data(data, other_certs=(), passphrase=secret)
            except OSError as exc:
                raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
            except ValueError:
                raise InputError(f"{path}: not a PKCS#12 key, or the passphrase is wrong "
                                 "(--sign-passphrase-env VAR names the variable that holds "
                                 "it)") from None
            return cls(signer, timestamp_url)
        assert key is not None and cert is not None
        try:
            private = load_private_key_from_pemder(str(key), passphrase=secret)
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"{key}: not a private key we can read, or the passphrase is "
                             f"wrong ({type(exc).__name__})") from None
        try:
            certs = list(load_certs_from_pemder([str(cert)]))  # type: ignore[no-untyped-call]
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"{cert}: not a certificate we can read "
                             f"({type(exc).__name__})") from None
        if not certs:
            raise InputError(f"{cert}: holds no certificate")
        store = SimpleCertificateStore()  # type: ignore[no-untyped-call]
        store.register_multiple(certs[1:])  # the rest of the file: the chain
        return cls(SimpleSigner(signing_cert=certs[0], signing_key=private,
                                cert_registry=store), timestamp_url)


def box_context(key: object) -> dict[str, Any]:
    """What a template needs to reserve page one's signature box: `key` the SigningKey (or
    True) when the page will be signed; nothing unsigned."""
    from evalkit.render.pdf import SIGNATURE_BOX_MM

    return {"signature_box": SIGNATURE_BOX_MM if key else None,
            "signature_anchor": SIGNATURE_ANCHOR}


def _int_box(box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    """The box in whole points, rounded inwards (it must stay inside the reserved one)."""
    x1, y1, x2, y2 = box
    return (math.ceil(x1), math.ceil(y1), math.floor(x2), math.floor(y2))


@functools.lru_cache(maxsize=1)
def _font_1000() -> bytes:
    """DejaVu Sans scaled to 1,000 units per em: pyHanko writes a font's widths in its own
    units, and PDF reads them as thousandths (2,048-unit DejaVu would be drawn spaced out)."""
    from fontTools.ttLib import TTFont
    from fontTools.ttLib.scaleUpem import scale_upem
    from matplotlib import font_manager

    font = TTFont(font_manager.findfont("DejaVu Sans"))
    scale_upem(font, 1000)
    if "FFTM" in font:  # FontForge's timestamps: fontTools cannot subset it, and says so
        del font["FFTM"]
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _font_factory() -> Any:
    """pyHanko's font engine for the block, from bytes in memory (its own factory opens
    the font file and never closes it)."""
    from pyhanko.pdf_utils.font.api import FontEngineFactory
    from pyhanko.pdf_utils.font.opentype import GlyphAccumulator

    class Factory(FontEngineFactory):
        def create_font_engine(self, writer: Any, obj_stream: Any = None) -> Any:
            if obj_stream is None and writer.stream_xrefs:
                obj_stream = writer.prepare_object_stream()
            return GlyphAccumulator(writer=writer, font_handle=io.BytesIO(_font_1000()),
                                    font_size=7, obj_stream=obj_stream)

    return Factory()


def sign_pdf(pdf: bytes, key: SigningKey,
             box: tuple[float, float, float, float] | None) -> bytes:
    """The PDF signed (PAdES B-B; B-T with the key's timestamp URL), its visible block in
    `box` on page one (points; None: an invisible signature).

    SigningError: the timestamp authority could not be reached or refused: the PDF is
    not written unsigned in its place (fail closed).
    """
    from pyhanko import stamp
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.pdf_utils.metadata.model import VENDOR
    from pyhanko.pdf_utils.text import TextBoxStyle
    from pyhanko.sign import fields, signers
    from pyhanko.sign.timestamps import HTTPTimeStamper

    writer = IncrementalPdfFileWriter(io.BytesIO(pdf))
    info_ref = writer.trailer.raw_get("/Info") if "/Info" in writer.trailer else None
    if info_ref is not None:  # PDF/A: Info's producer must say what the XMP will say
        info = info_ref.get_object()
        info["/Producer"] = generic.TextStringObject(VENDOR)
        writer.mark_update(info_ref)
    fields.append_signature_field(writer, fields.SigFieldSpec(
        FIELD_NAME, on_page=0, box=_int_box(box) if box else None))
    font = _font_factory()
    style = stamp.TextStampStyle(
        stamp_text=STAMP_TEXT, border_width=1, background=None,
        timestamp_format="%Y-%m-%d %H:%M:%S %Z",
        text_box_style=TextBoxStyle(font=font, font_size=7, leading=9))
    meta = signers.PdfSignatureMetadata(
        field_name=FIELD_NAME, subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256", reason="evalkit scorecard, as issued")
    stamper = HTTPTimeStamper(key.timestamp_url, timeout=10) if key.timestamp_url else None
    pdf_signer = signers.PdfSigner(meta, signer=key.signer, timestamper=stamper,
                                   stamp_style=style)
    try:
        out = pdf_signer.sign_pdf(writer)
    except Exception as exc:  # the TSA's failures arrive as aiohttp's, OSError or pyHanko's
        if stamper is None:
            raise
        raise SigningError(
            f"--timestamp-url {key.timestamp_url}: no timestamp ({type(exc).__name__}: "
            f"{str(exc)[:200]}); nothing was written. Check the URL and the network, or "
            "sign without --timestamp-url (PAdES B-B: the signing time is then the "
            "signer's own claim)") from None
    data: bytes = out.getvalue()
    return data
