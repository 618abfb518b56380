"""`evalkit verify` end to end on one real scorecard (tests/verify/conftest.py): signed,
unsigned, signed by a stranger, and tampered with the ways someone holding the PDF could."""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pypdf
import pytest
from click.testing import CliRunner, Result

from evalkit.cli import cli
from evalkit.render.sign import SigningKey, sign_pdf
from evalkit.verify.check import verify_pdf
from tests.verify.conftest import PASS_ENV, PASSPHRASE, ROOT, RUN_DIR, Keys, Scorecards
from tests.verify.helpers import attachments, edit_records, replace_attachments

PdfFile = Callable[..., Path]


def _verify(path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["verify", str(path), *args])


VERIFIED = re.compile(r"^verified: (\d+) figures and 6 statuses re-derived from the "
                      r"attached evidence; its \d+ pages draw what the evidence draws$", re.M)


class TestSigned:
    def test_a_signed_report_verifies_and_names_its_signer(
            self, scorecards: Scorecards, keys: Keys, pdf_file: PdfFile) -> None:
        res = _verify(pdf_file(scorecards.signed), "--trust", str(keys.ca_pem))
        assert res.exit_code == 0, res.output
        found = VERIFIED.search(res.output)
        assert found and int(found[1]) > 500, res.output  # summary and scorecard figures
        assert "signed by Organization: Test Procurement, Common Name: Alice Signer" \
            in res.output
        assert ": intact; signer trusted" in res.output

    def test_without_trust_the_signer_is_reported_untrusted_but_the_evidence_holds(
            self, scorecards: Scorecards, pdf_file: PdfFile) -> None:
        res = _verify(pdf_file(scorecards.signed))
        assert res.exit_code == 0, res.output
        assert "Alice Signer" in res.output and "signer NOT trusted" in res.output

    def test_a_strangers_signature_is_untrusted(self, scorecards: Scorecards, keys: Keys,
                                                 pdf_file: PdfFile,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASS_ENV, PASSPHRASE)
        stranger = SigningKey.load(p12=keys.stranger_p12, passphrase_env=PASS_ENV)
        assert stranger is not None
        signed = sign_pdf(scorecards.unsigned, stranger, scorecards.box)
        result = verify_pdf(pdf_file(signed), trust=(keys.ca_pem,))
        assert [s.subject for s in result.signatures] == [
            "Organization: Test Procurement, Common Name: Mallory Stranger"]
        sig = result.signatures[0]
        assert sig.intact and sig.valid and not sig.trusted
        assert result.verified  # untrusted is reported, the evidence still verifies
        res = _verify(pdf_file(signed, "stranger.pdf"), "--trust", str(keys.ca_pem))
        assert "Mallory Stranger" in res.output and "signer NOT trusted" in res.output

    def test_a_byte_flipped_in_the_signed_content_fails(
            self, scorecards: Scorecards, keys: Keys, pdf_file: PdfFile) -> None:
        data = bytearray(scorecards.signed)
        at = data.index(b"stream\n") + 200  # inside the first stream, in the signed revision
        assert at < len(scorecards.unsigned)
        data[at] ^= 0x01
        res = _verify(pdf_file(bytes(data)), "--trust", str(keys.ca_pem))
        assert res.exit_code == 1, res.output
        assert "NOT VERIFIED" in res.output
        assert "BROKEN: the signed bytes changed after signing" in res.output

    def test_an_attachment_swapped_after_signing_is_an_update_named(
            self, scorecards: Scorecards, keys: Keys, pdf_file: PdfFile) -> None:
        card = json.loads(attachments(scorecards.signed)["scorecard.json"])
        card["questions"]["Q6"]["status"] = "ok"
        edited = replace_attachments(scorecards.signed, {
            "scorecard.json": json.dumps(card, indent=2).encode()},
            fix_manifest=True, incremental=True)
        assert edited.startswith(scorecards.signed)  # appended, not rewritten
        res = _verify(pdf_file(edited), "--trust", str(keys.ca_pem))
        assert res.exit_code == 1, res.output
        assert re.search(r"revision \d of \d, appended after signing, changed .*"
                         r"attachment scorecard\.json", res.output), res.output
        assert "scorecard.json: questions.Q6.status: the document says 'ok', the " \
               "evidence gives 'unreconciled'" in res.output

    def test_the_signed_pdf_is_still_pdf_a_3b_with_its_attachments(
            self, scorecards: Scorecards) -> None:
        reader = pypdf.PdfReader(io.BytesIO(scorecards.signed))
        root = reader.trailer["/Root"]
        xmp = root["/Metadata"].get_object().get_data().decode()
        assert re.search(r'pdfaid:part="3"', xmp) and re.search(r'pdfaid:conformance="B"',
                                                                 xmp)
        producer = re.search(r'pdf:Producer="([^"]+)"', xmp)
        assert producer and reader.metadata["/Producer"] == producer[1]  # PDF/A: they agree
        names = root["/Names"]["/EmbeddedFiles"]["/Names"]
        rel = {str(names[i]): names[i + 1].get_object()["/AFRelationship"]
               for i in range(0, len(names), 2)}
        assert rel == {"run.json": "/Data", "summary.json": "/Data",
                       "requests.jsonl.gz": "/Data", "scorecard.json": "/Data",
                       "questionnaire.yaml": "/Data", "manifest.json": "/Supplement"}
        af = {str(f.get_object()["/UF"]) for f in root["/AF"]}
        assert af == set(rel)  # every file associated with the document, as PDF/A-3 wants
        assert attachments(scorecards.signed) == attachments(scorecards.unsigned)
        widget = next(a.get_object() for a in reader.pages[0]["/Annots"]
                      if a.get_object().get("/FT") == "/Sig")
        assert int(widget["/F"]) & 4  # printed: the visible block is part of page one


class TestUnsigned:
    def test_an_unsigned_scorecard_re_derives_and_says_unsigned(
            self, scorecards: Scorecards, pdf_file: PdfFile) -> None:
        res = _verify(pdf_file(scorecards.unsigned))
        assert res.exit_code == 0, res.output
        assert VERIFIED.search(res.output)
        assert "unsigned: nothing says who issued this document (its evidence and its " \
            "pages are checked all the same)" in res.output

    def test_json_is_the_same_as_data(self, scorecards: Scorecards,
                                      pdf_file: PdfFile) -> None:
        res = _verify(pdf_file(scorecards.unsigned), "--json")
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        assert doc["verified"] is True and doc["signed"] is False
        assert doc["statuses"] == 6 and doc["figures"] > 500 and doc["differences"] == []
        assert doc["suite_version"] == "1"

    def test_a_status_lifted_to_ok_is_named(self, scorecards: Scorecards,
                                            pdf_file: PdfFile) -> None:
        """The manifest fixed up to match: only the re-judged questionnaire can tell."""
        card = json.loads(attachments(scorecards.unsigned)["scorecard.json"])
        assert card["questions"]["Q6"]["status"] == "unreconciled"
        card["questions"]["Q6"]["status"] = "ok"
        edited = replace_attachments(scorecards.unsigned, {
            "scorecard.json": json.dumps(card, indent=2).encode()}, fix_manifest=True)
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        lines = [ln for ln in res.output.splitlines() if ln.startswith("  difference:")]
        assert lines == ["  difference: scorecard.json: questions.Q6.status: the document "
                         "says 'ok', the evidence gives 'unreconciled'"], res.output
        assert "note: the pages were not drawn again: the attached evidence does not give " \
            "the scorecard they were drawn from" in res.output

    def test_edited_records_are_named(self, scorecards: Scorecards,
                                      pdf_file: PdfFile) -> None:
        """One ramp record's TTFT halved, re-gzipped, the manifest fixed up: the summary
        no longer follows from the records."""
        gz = attachments(scorecards.unsigned)["requests.jsonl.gz"]

        def faster(rec: dict[str, object]) -> None:
            rec["ttft_s"] = float(rec["ttft_s"]) / 2  # type: ignore[arg-type]

        edited = replace_attachments(scorecards.unsigned,
                                     {"requests.jsonl.gz": edit_records(gz, faster)},
                                     fix_manifest=True)
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        assert re.search(r"attachment requests.jsonl.gz: .*the records were edited", res.output)
        assert "difference: summary.json: summary.json does not agree with requests.jsonl" \
            in res.output

    def test_a_replaced_attachment_the_manifest_does_not_match(
            self, scorecards: Scorecards, pdf_file: PdfFile) -> None:
        files = attachments(scorecards.unsigned)
        edited = replace_attachments(scorecards.unsigned, {
            "run.json": files["run.json"].replace(b'"quick"', b'"standard"', 1)})
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        assert re.search(r"difference: attachment run\.json: its SHA-256 is [0-9a-f]{64} "
                         r"\([\d,]+ bytes\); manifest.json says '[0-9a-f]{64}'", res.output)


    def test_an_older_suite_version_is_said_and_unverifiable(
            self, scorecards: Scorecards, pdf_file: PdfFile) -> None:
        files = attachments(scorecards.unsigned)
        run = json.loads(files["run.json"])
        assert run["suite_version"] == "1"
        run["suite_version"] = "0"
        edited = replace_attachments(scorecards.unsigned, {
            "run.json": json.dumps(run).encode()}, fix_manifest=True)
        res = _verify(pdf_file(edited), "--json")
        assert res.exit_code == 1
        doc = json.loads(res.output)
        assert doc["suite_version"] == "0" and doc["figures"] == 0
        assert [d["where"] for d in doc["differences"]] == ["suite version"]
        assert "the run followed suite v0; this evalkit has the rules of suite v1 only, so " \
            "its figures are unverifiable here" in doc["differences"][0]["what"]


class TestRecordsElsewhere:
    def test_run_dir_is_checked_against_the_digest(self, scorecards: Scorecards,
                                                   pdf_file: PdfFile, tmp_path: Path) -> None:
        path = pdf_file(scorecards.unsigned)
        assert _verify(path, "--run", str(RUN_DIR)).exit_code == 0
        other = Path(shutil.copytree(RUN_DIR, tmp_path / "other"))
        with (other / "requests.jsonl").open("a") as fh:
            fh.write("\n")
        res = _verify(path, "--run", str(other))
        assert res.exit_code == 1
        assert "this scorecard was judged on records with SHA-256" in res.output

    def test_records_not_attached_need_the_run(self, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """A report over the cap: no requests.jsonl.gz, the manifest saying where the
        records live, and page one saying so (drawn again from the manifest)."""
        import functools

        from evalkit.render import evidence, report

        monkeypatch.setattr(report, "evidence_files",
                            functools.partial(evidence.evidence_files, cap=1000))
        path = tmp_path / "card.pdf"
        report.render_report(RUN_DIR, None, path)
        manifest = json.loads(attachments(path.read_bytes())["manifest.json"])
        assert manifest["records"]["attached_as"] is None
        res = _verify(path)
        assert res.exit_code == 2
        assert f"give --run DIR with the run directory they live in ({RUN_DIR})" \
            in res.output
        res = _verify(path, "--run", str(RUN_DIR))
        assert res.exit_code == 0, res.output
        assert "note: records read from" in res.output


class TestNotOurs:
    def test_a_pdf_that_is_not_a_scorecard(self, tmp_path: Path) -> None:
        writer = pypdf.PdfWriter()
        writer.add_blank_page(200, 200)
        path = tmp_path / "other.pdf"
        with path.open("wb") as fh:
            writer.write(fh)
        res = _verify(path)
        assert res.exit_code == 2
        assert "not an evalkit scorecard (it carries no scorecard.json, and no attachment " \
               "at all; 1 pages)" in res.output

    def test_not_a_pdf_at_all(self, tmp_path: Path) -> None:
        path = tmp_path / "card.pdf"
        path.write_text("hello")
        res = _verify(path)
        assert res.exit_code == 2 and "not a PDF (it does not start with %PDF-)" in res.output

    def test_a_truncated_scorecard(self, scorecards: Scorecards, pdf_file: PdfFile) -> None:
        res = _verify(pdf_file(scorecards.unsigned[:4000]))
        assert res.exit_code == 2, res.output
        assert "Error:" in res.output and "Traceback" not in res.output


def test_a_claims_only_scorecard_verifies(tmp_path: Path) -> None:
    """No run, no records: the questionnaire alone is judged again."""
    from tests.verify.conftest import HEADLINE

    out = tmp_path / "claims.pdf"
    assert CliRunner().invoke(cli, ["report", "--questionnaire", str(HEADLINE),
                                    "--out", str(out)]).exit_code == 0
    res = _verify(out, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["verified"], doc["statuses"], doc["signed"]) == (True, 6, False)
    assert doc["figures"] > 10  # the vendor's claimed numbers, judged again


class TestOurPanel:
    """`evalkit report` judges Q6 beside our own panel from the catalog whenever the
    questionnaire names its vendor (a catalog with no samples is a panel of none, and the
    reason says so). Verify once judged Q6 again without it, so every such report failed
    its own verification; the panel now travels in the PDF as our_panel.json."""

    @pytest.fixture(scope="class")
    def reported(self, tmp_path_factory: pytest.TempPathFactory) -> Path:
        tmp = tmp_path_factory.mktemp("panel")
        pdf = tmp / "card.pdf"
        res = CliRunner().invoke(cli, ["report", "--run", str(RUN_DIR), "--questionnaire",
                                       str(ROOT / "questionnaires" / "forthright.yaml"),
                                       "--out", str(pdf), "--catalog",
                                       str(tmp / "none.sqlite")])
        assert res.exit_code == 0, res.output
        return pdf

    def test_a_report_judged_beside_our_panel_verifies(self, reported: Path) -> None:
        card = json.loads(reported.with_suffix(".json").read_text())
        assert "Our own panel: the catalog holds no sample" in card["questions"]["Q6"][
            "reason"]
        panel = json.loads(attachments(reported.read_bytes())["our_panel.json"])
        assert panel["samples"] == 0
        res = _verify(reported)
        assert res.exit_code == 0, res.output
        assert VERIFIED.search(res.output), res.output
        assert "Q6 was judged beside our own panel (0 of 0 samples pooled" in res.output
        assert "attached as our_panel.json" in res.output

    def test_without_the_attached_panel_q6_does_not_verify(self, reported: Path,
                                                         pdf_file: PdfFile) -> None:
        edited = replace_attachments(reported.read_bytes(), {"our_panel.json": None},
                                     fix_manifest=True)
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        assert "questions.Q6.reason" in res.output

    def test_a_panel_edited_to_agree_does_not_verify(self, reported: Path,
                                                    pdf_file: PdfFile) -> None:
        """Someone holding the PDF who swaps the panel for one that backs the vendor
        (its digest fixed in the manifest too) changes what Q6 is judged beside: the
        scorecard's reason no longer follows from it."""
        files = attachments(reported.read_bytes())
        panel = json.loads(files["our_panel.json"])
        panel.update(samples=3, coverage={"pooled": 3, "invalid": 0, "gap_count": 0},
                     stream_tokens_per_s={"p50": 80.0, "p90": 70.0, "p99": 60.0, "n": 90})
        edited = replace_attachments(reported.read_bytes(), {
            "our_panel.json": json.dumps(panel).encode()}, fix_manifest=True)
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        assert "questions.Q6" in res.output
