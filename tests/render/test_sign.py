"""Signing options and their failures: the key from PKCS#12 or PEM, the passphrase only
from the environment, a timestamp authority that cannot be reached failing closed.
(Signed scorecards verified end to end: tests/verify/test_check.py.)"""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError, SigningError, UsageError
from evalkit.render.sign import SigningKey, sign_pdf
from tests.verify.conftest import HEADLINE, PASS_ENV, PASSPHRASE, RUN_DIR, Keys, keys

__all__ = ["keys"]  # the session's throwaway keys, shared with tests/verify


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TestLoad:
    def test_no_option_is_no_signing(self) -> None:
        assert SigningKey.load() is None

    def test_pkcs12_with_its_passphrase_from_the_environment(
            self, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASS_ENV, PASSPHRASE)
        key = SigningKey.load(p12=keys.signer_p12, passphrase_env=PASS_ENV)
        assert key is not None
        assert key.subject == "Organization: Test Procurement, Common Name: Alice Signer"

    def test_a_wrong_passphrase_is_an_input_error(
            self, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASS_ENV, "wrong")
        with pytest.raises(InputError, match="not a PKCS#12 key, or the passphrase is wrong"):
            SigningKey.load(p12=keys.signer_p12, passphrase_env=PASS_ENV)

    def test_an_unset_variable_is_named(self, keys: Keys,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(PASS_ENV, raising=False)
        with pytest.raises(UsageError, match=f"--sign-passphrase-env {PASS_ENV}: that "
                                             "environment variable is not set"):
            SigningKey.load(p12=keys.signer_p12, passphrase_env=PASS_ENV)

    def test_options_that_do_not_fit(self, keys: Keys) -> None:
        with pytest.raises(UsageError, match="not both"):
            SigningKey.load(p12=keys.signer_p12, key=keys.signer_key, cert=keys.signer_cert)
        with pytest.raises(UsageError, match=r"--sign-key KEY\.pem needs --sign-cert"):
            SigningKey.load(key=keys.signer_key)
        with pytest.raises(UsageError, match=r"need --sign FILE\.p12"):
            SigningKey.load(timestamp_url="http://tsa.example/")
        with pytest.raises(UsageError, match="give the TSA's http"):
            SigningKey.load(key=keys.signer_key, cert=keys.signer_cert,
                            timestamp_url="ftp://tsa.example/")

    def test_pem_key_and_certificate_with_its_chain(self, keys: Keys) -> None:
        key = SigningKey.load(key=keys.signer_key, cert=keys.signer_cert)
        assert key is not None and "Alice Signer" in key.subject
        # the CA after the signer's certificate in the file is kept as its chain
        assert [c.subject.human_friendly for c in key.signer.cert_registry] == [
            "Organization: Test Procurement, Common Name: Test Procurement CA"]

    def test_not_a_key(self, tmp_path: Path, keys: Keys) -> None:
        bogus = tmp_path / "bogus.pem"
        bogus.write_text("not a key")
        with pytest.raises(InputError, match="not a private key we can read"):
            SigningKey.load(key=bogus, cert=keys.signer_cert)


class TestTimestamp:
    def test_an_unreachable_tsa_fails_closed(self, keys: Keys) -> None:
        """B-T wired: the TSA is asked, and when it cannot answer nothing is signed."""
        url = f"http://127.0.0.1:{_closed_port()}/tsa"
        key = SigningKey.load(key=keys.signer_key, cert=keys.signer_cert, timestamp_url=url)
        assert key is not None and key.timestamp_url == url
        writer = pypdf.PdfWriter()
        writer.add_blank_page(200, 200)
        buf = io.BytesIO()
        writer.write(buf)
        with pytest.raises(SigningError, match=f"--timestamp-url {url}: no timestamp .*"
                                               "nothing was written"):
            sign_pdf(buf.getvalue(), key, None)

    def test_report_writes_nothing_when_the_tsa_is_unreachable(
            self, keys: Keys, tmp_path: Path) -> None:
        out = tmp_path / "card.pdf"
        res = CliRunner().invoke(cli, [
            "report", "--questionnaire", str(HEADLINE), "--out", str(out),
            "--sign-key", str(keys.signer_key), "--sign-cert", str(keys.signer_cert),
            "--timestamp-url", f"http://127.0.0.1:{_closed_port()}/"])
        assert res.exit_code == 2, res.output
        assert "no timestamp" in res.output and "nothing was written" in res.output
        assert not out.exists() and not out.with_suffix(".json").exists()


class TestCli:
    @pytest.mark.parametrize("command", [
        ["report", "--questionnaire", str(HEADLINE), "--out", "x.pdf"],
        ["compare", str(RUN_DIR), "--out", "x.pdf"]])
    def test_report_and_compare_take_the_signing_options(
            self, command: list[str], keys: Keys, monkeypatch: pytest.MonkeyPatch,
            tmp_path: Path) -> None:
        """Checked before any work: an unset passphrase variable is exit 2, named."""
        monkeypatch.delenv(PASS_ENV, raising=False)
        monkeypatch.chdir(tmp_path)
        res = CliRunner().invoke(cli, [*command, "--sign", str(keys.signer_p12),
                                       "--sign-passphrase-env", PASS_ENV])
        assert res.exit_code == 2, res.output
        assert f"--sign-passphrase-env {PASS_ENV}: that environment variable is not set" \
            in res.output
        assert not (tmp_path / "x.pdf").exists()

    def test_the_passphrase_is_never_a_flag_value(self) -> None:
        res = CliRunner().invoke(cli, ["report", "--help"])
        assert "--sign-passphrase-env VAR" in res.output
        assert "--sign-passphrase " not in res.output


@pytest.mark.slow
def test_compare_signs_too(keys: Keys, tmp_path: Path) -> None:
    """A comparison signed as a report is: one signature, intact, in page one's box."""
    from evalkit.render.comparison import CompareInput, render_comparison
    from evalkit.verify.signature import check_signatures, load_trust

    key = SigningKey.load(key=keys.signer_key, cert=keys.signer_cert)
    out = tmp_path / "cmp.pdf"
    render_comparison([CompareInput.parse(str(RUN_DIR))], out, signing=key)
    (sig,) = check_signatures(out.read_bytes(), load_trust((keys.ca_pem,)))
    assert (sig.intact, sig.valid, sig.trusted, sig.changed_after) == (True, True, True, ())
    assert "Alice Signer" in sig.subject
    page = pypdf.PdfReader(out).pages[0]
    (widget,) = [a.get_object() for a in page["/Annots"] if a.get_object().get("/FT") == "/Sig"]
    x1, y1, x2, y2 = (float(v) for v in widget["/Rect"])
    assert x2 - x1 > 150 and y2 - y1 > 30  # the reserved box: 70 mm x 13 mm, in points
    assert y2 > float(page.mediabox.top) - 60  # at the top of page one
