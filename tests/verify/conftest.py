"""Throwaway keys and one real scorecard per session, for the verification tests.

Keys: a CA, a signer it certified, and a stranger (self-signed), made here with
`cryptography` (EC P-256: fast). The scorecard: one real report of the report-run
fixture against the headline sample (Q6 unreconciled), signed by the signer. Rendering
costs seconds, so it is made once; its first revision (the bytes before the signature's
incremental update) is the same scorecard unsigned, and tests edit copies.

The vendor of that sample is renamed with status words and badges (HOSTILE_VENDOR) and
its notes are made of them, as a vendor may write its own name: every test that verifies
the genuine scorecard also shows that a page full of status words verifies.
"""

from __future__ import annotations

import datetime
import io
from dataclasses import dataclass
from pathlib import Path

import pypdf
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "tests" / "data" / "report_run"
HEADLINE = ROOT / "questionnaires" / "headline.yaml"
#: a vendor's own name, made of what a page prints beside each status: a verify that reads
#: statuses by pattern from the page's text reads the name's instead of the table's
HOSTILE_VENDOR = "Blazefast ✗ unreconciled ✓ ok ✓ ok ✓ ok ✓ ok ✓ ok ✓ ok"
HOSTILE_NOTES = "✓ ok ◐ unverified 250 ms <b>✓ ok</b> & evalkit 9.9.9 (ffffffffffff)"
PASSPHRASE = "correct horse battery staple"
PASS_ENV = "EVALKIT_TEST_SIGN_PASS"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test Procurement")])


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
          issuer_key: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    usage = x509.KeyUsage(digital_signature=True, content_commitment=not ca,
                          key_encipherment=False, data_encipherment=False,
                          key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                          encipher_only=False, decipher_only=False)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .sign(issuer_key, hashes.SHA256()))


@dataclass(frozen=True)
class Keys:
    ca_pem: Path
    signer_p12: Path
    signer_key: Path
    signer_cert: Path
    stranger_p12: Path


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    """A CA, a signer it certified (as PKCS#12 and as PEM key + cert), a stranger."""
    d = tmp_path_factory.mktemp("keys")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("Test Procurement CA", ca_key, _name("Test Procurement CA"), ca_key, ca=True)
    signer_key = ec.generate_private_key(ec.SECP256R1())
    signer = _cert("Alice Signer", signer_key, ca.subject, ca_key, ca=False)
    stranger_key = ec.generate_private_key(ec.SECP256R1())
    stranger = _cert("Mallory Stranger", stranger_key, _name("Mallory Stranger"),
                     stranger_key, ca=False)
    enc = serialization.BestAvailableEncryption(PASSPHRASE.encode())
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (d / "signer.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(b"alice", signer_key, signer, [ca], enc))
    (d / "signer.key").write_bytes(signer_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (d / "signer.pem").write_bytes(signer.public_bytes(serialization.Encoding.PEM)
                                   + ca.public_bytes(serialization.Encoding.PEM))
    (d / "stranger.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(b"mallory", stranger_key, stranger, None, enc))
    return Keys(d / "ca.pem", d / "signer.p12", d / "signer.key", d / "signer.pem",
                d / "stranger.p12")


@dataclass(frozen=True)
class Scorecards:
    signed: bytes
    unsigned: bytes
    #: the signature box page one reserved (points)
    box: tuple[float, float, float, float]


@pytest.fixture(scope="session")
def scorecards(keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> Scorecards:
    """The one real report of the session, signed, and its first revision (unsigned)."""
    from evalkit.render.report import render_report
    from evalkit.render.sign import SigningKey

    mp = pytest.MonkeyPatch()
    mp.setenv(PASS_ENV, PASSPHRASE)
    try:
        key = SigningKey.load(p12=keys.signer_p12, passphrase_env=PASS_ENV)
    finally:
        mp.undo()
    tmp = tmp_path_factory.mktemp("card")
    questionnaire = tmp / HEADLINE.name  # the reasons quote its name: the sample's own
    text = HEADLINE.read_text(encoding="utf-8")
    assert text.count("vendor: Blazefast Cloud\n") == 1 and "  notes: Output tokens" in text
    text = text.replace("vendor: Blazefast Cloud\n", f"vendor: {HOSTILE_VENDOR}\n")
    questionnaire.write_text(text.replace("  notes: Output tokens",
                                          f"  notes: {HOSTILE_NOTES} Output tokens"),
                             encoding="utf-8")
    out = tmp / "card.pdf"
    render_report(RUN_DIR, questionnaire, out, signing=key)
    signed = out.read_bytes()
    first = signed.index(b"%%EOF") + len(b"%%EOF")
    unsigned = signed[:first] + b"\n"
    widget = next(a.get_object() for a in pypdf.PdfReader(io.BytesIO(signed)).pages[0]
                  ["/Annots"] if a.get_object().get("/FT") == "/Sig")
    x1, y1, x2, y2 = (float(v) for v in widget["/Rect"])
    return Scorecards(signed, unsigned, (x1, y1, x2, y2))


@pytest.fixture
def pdf_file(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write PDF bytes to a file in the test's directory: pdf_file(data, name)."""
    def write(data: bytes, name: str = "card.pdf") -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path
    return write
