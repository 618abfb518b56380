"""`evalkit report` end to end: real questionnaires through the real loader and reconciler,
a hostile questionnaire against a loopback trap server, exit codes, and one report from a
real probe of the reference endpoint."""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pypdf
import pytest
import yaml
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.fmt import fmt_rate
from evalkit.questionnaire.schema import QUESTION_TITLES
from evalkit.render.questions import BADGES
from evalkit.render.report import render_report

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "tests" / "data" / "report_run"
HEADLINE = ROOT / "questionnaires" / "headline.yaml"


def _text(pdf: Path) -> str:
    return re.sub(r"\s+", " ", "\n".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages))


class TestExitCodes:
    def test_fail_on_present_exits_1_and_writes_everything(self, tmp_path: Path) -> None:
        """The headline sample's panel is unreconciled: --fail-on unreconciled exits 1.

        (Claims-only keeps this fast; the run + questionnaire path is the slow test below.)
        """
        out = tmp_path / "card.pdf"
        res = CliRunner().invoke(cli, ["report", "--questionnaire", str(HEADLINE),
                                       "--out", str(out), "--html",
                                       "--fail-on", "unanswered,unreconciled"])
        assert res.exit_code == 1, res.output
        card = json.loads(out.with_suffix(".json").read_text())
        flagged = [q for q, v in card["questions"].items()
                   if v["status"] in ("unanswered", "unreconciled")]
        assert flagged  # the sample is built to be flagged
        lines = res.stdout.splitlines()
        assert lines[:3] == [str(out), str(out.with_suffix(".json")),
                             str(out.with_suffix(".html"))]
        counts = {s: sum(q["status"] == s for q in card["questions"].values())
                  for s in ("unreconciled", "unverified", "ok")}
        assert lines[3].startswith("NOT STREAMING-READY: ")  # the outcome, without the PDF
        for status, n in counts.items():
            assert (f"{n} {status}" in lines[3]) == (n > 0), (status, lines[3])
        assert f"flagged: {flagged[0]} {card['questions'][flagged[0]]['status']}" in res.stderr
        text = _text(out)
        reader = pypdf.PdfReader(out)  # the questions start on page one and may go on
        page = re.sub(r"\s+", " ", reader.pages[0].extract_text() + reader.pages[1].extract_text())
        page = page[page.index("The six capacity questions"):]
        starts = [page.index(f"{qid} {QUESTION_TITLES[qid]}") for qid in card["questions"]]
        for (qid, q), start, end in zip(card["questions"].items(), starts,
                                        [*starts[1:], len(page)], strict=True):
            row = page[start:end]  # each row's status on page one is the JSON's
            assert f"{BADGES[q['status']]} {q['status']}" in row, (qid, row)
        assert card["vendor"] == "Blazefast Cloud" and "Blazefast Cloud" in text

    def test_fail_on_absent_exits_0(self, tmp_path: Path) -> None:
        """Claims-only, with a tolerance file that lets the headline stand 10x the panel:
        Q6 is no longer unreconciled (only unverified: no run), so --fail-on unreconciled
        exits 0."""
        out = tmp_path / "claims.pdf"
        tol = tmp_path / "tol.yaml"
        tol.write_text("headline_panel_ratio: 10\n")
        res = CliRunner().invoke(cli, ["report", "--questionnaire", str(HEADLINE),
                                       "--out", str(out), "--fail-on", "unreconciled",
                                       "--tolerances", str(tol)])
        card = json.loads(out.with_suffix(".json").read_text())
        assert card["questions"]["Q6"]["status"] == "unverified"
        assert "unreconciled" not in {q["status"] for q in card["questions"].values()}
        assert res.exit_code == 0, res.output
        assert "headline/panel p50 ≤ 10×" in _text(out)  # the tolerance used is printed
        reader = pypdf.PdfReader(out)
        # claims-only: no run, no records; the manifest names what there is (our own
        # panel Q6 was judged beside, of no samples where no catalog is: verify needs it)
        assert sorted(reader.attachments) == ["manifest.json", "our_panel.json",
                                              "questionnaire.yaml", "scorecard.json"]
        manifest = json.loads(reader.attachments["manifest.json"][0])
        assert sorted(manifest["files"]) == ["our_panel.json", "questionnaire.yaml",
                                             "scorecard.json"]
        assert manifest["records"] is None
        text = _text(out)
        assert "none: this is a claims-only review" in text
        assert "gpt-oss-120b (as stated by the vendor)" in text
        assert "Figure 1." in text and "Figure 2." not in text  # only the claims chart
        assert reader.attachments["questionnaire.yaml"][0] == HEADLINE.read_bytes()

    @pytest.mark.parametrize(("args", "message"), [
        (["--out", "x.pdf"], "Error: give --run DIR, --questionnaire FILE, or both"),
        (["--run", str(RUN_DIR), "--out", "x.pdf", "--fail-on", "ok,bogus"],
         "Error: --fail-on: unknown status bogus; choose from ok, unverified, unanswered, "
         "unanswerable, unreconciled"),
        (["--run", "/nonexistent/run", "--out", "x.pdf"],
         "Error: /nonexistent/run: not a directory"),
        (["--run", str(RUN_DIR), "--out", "x.txt"], "Error: --out x.txt: the report file must end "
         "in .pdf (its scorecard.json is written beside it as FILE.json)"),
    ])
    def test_bad_input_exits_2(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               args: list[str], message: str) -> None:
        """Usage and input errors are one line on stderr and exit 2, and nothing is written."""
        monkeypatch.chdir(tmp_path)
        res = CliRunner().invoke(cli, ["report", *args])
        assert res.exit_code == 2
        assert res.stderr.splitlines()[0] == message
        assert list(tmp_path.iterdir()) == []

    def test_never_overwrites_an_input(self, tmp_path: Path) -> None:
        """--out acme.pdf beside acme.json would replace the questionnaire: refused, exit 2."""
        q = tmp_path / "acme.json"
        q.write_bytes(HEADLINE.read_bytes())  # refused before it is read
        before = q.read_bytes()
        res = CliRunner().invoke(cli, ["report", "--questionnaire", str(q),
                                       "--out", str(tmp_path / "acme.pdf")])
        assert res.exit_code == 2
        assert res.stderr.startswith(f"Error: --out {tmp_path / 'acme.pdf'} would overwrite "
                                     f"the input {q};")
        assert q.read_bytes() == before and not (tmp_path / "acme.pdf").exists()

    def test_invalid_questionnaire_exits_2(self, tmp_path: Path) -> None:
        """A malformed questionnaire is named with its line, exit 2."""
        bad = tmp_path / "bad.yaml"
        bad.write_text("schema: evalkit.questionnaire/1\nQ1:\n  ttft_p50_ms: fast\n")
        res = CliRunner().invoke(cli, ["report", "--questionnaire", str(bad),
                                       "--out", str(tmp_path / "c.pdf")])
        assert res.exit_code == 2
        assert f"{bad}:3:" in res.stderr
        assert not (tmp_path / "c.pdf").exists()


class _Trap(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def trap() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that counts every request it gets."""
    hits: list[str] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             type("T", (_Trap,), {"hits": hits}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def test_hostile_questionnaire_renders_as_text_and_fetches_nothing(
        tmp_path: Path, trap: tuple[str, list[str]]) -> None:
    """A valid questionnaire full of markup, URLs, file://, RTL, emoji and 4 kB words."""
    url, hits = trap
    long_word = "Z" * 3990
    doc = {
        "schema": "evalkit.questionnaire/1",
        "vendor": f'Evil <img src="{url}/vendor.png"> Corp',
        "model": f"<style>@import url({url}/m.css);</style>",
        "endpoint": "file:///etc/passwd",
        "headline": {"value": 1107, "unit": "output_tokens_per_s",
                     "source": f'<link rel="stylesheet" href="{url}/h.css">'},
        "Q1": {"ttft_p50_ms": 100, "ttft_p90_ms": 200, "at_concurrency": 8,
               "source": "production", "window": "last week",
               "evidence": ["file:///etc/passwd", f"{url}/evidence"],
               "notes": f'<object data="{url}/obj"></object><a href="{url}/a">click</a>'},
        "Q4": {"notes": "שלום עולם مرحبا ‮gnp.exe 🚀"},
        "Q5": {"observability": "per_stream", "metrics_url": f"{url}/metrics",
               "export": f'<svg><image href="{url}/svg.png"/></svg>'},
        "Q6": {"output_tokens_per_s": {"p50": 170, "p90": 520, "p99": 767},
               "window": "2026-11-17 to 2026-11-23", "source": "production",
               "panel_url": f"{url}/panel", "reconciliation": long_word},
    }
    qfile = tmp_path / "evil.yaml"
    qfile.write_text(yaml.safe_dump(doc, allow_unicode=True))
    result = render_report(None, qfile, tmp_path / "evil.pdf", html=True)
    assert hits == []
    assert result.refused == ()
    assert result.fetched == ()  # the fetcher was not even asked (CSS and charts are inline)
    text = _text(result.pdf)
    assert f'Evil <img src="{url}/vendor.png"> Corp' in text
    assert "file:///etc/passwd" in text and "root:x:" not in text
    assert "[U+1F680]" in text and "[U+202E]" in text  # emoji and bidi override shown as codes
    # page one leaves the 4 kB reconciliation to the appendix, which prints it in full
    page_one = pypdf.PdfReader(result.pdf).pages[0].extract_text()
    assert "Z" * 100 not in page_one and long_word in text.replace(" ", "")
    html = result.html.read_text() if result.html else ""
    assert "<img" not in html and "<object" not in html and "<link rel=\"stylesheet\" href=\"h" \
        not in html and "&lt;img src=" in html
    attached = pypdf.PdfReader(result.pdf).attachments["questionnaire.yaml"][0]
    assert attached == qfile.read_bytes()  # the reviewer still gets the exact original


@pytest.mark.slow
def test_report_from_a_real_quick_run(tmp_path: Path, reference: Any) -> None:
    """Probe the reference endpoint briefly, then render: figures in the PDF are the run's."""
    from evalkit.probe.plan.settings import ProbeConfig
    from evalkit.probe.suite import run_probe

    srv = reference("gpu", mode="thread", decode_base_ms=5, request_overhead_ms=5)
    cfg = ProbeConfig(base_url=srv.base_url, model=srv.model, profile="quick",
                      phases=("connect", "baseline", "prefill", "ramp"), levels=(1, 2, 4),
                      # no level's interval is read here: levels of 8 requests, not 36
                      overrides={"ramp": {"level_duration_s": 1.0, "level_min_requests": 8},
                                 "baseline": {"requests": 3},
                                 "prefill": {"prompt_tokens": [64, 1024], "repeats": 1}})
    run = run_probe(cfg, tmp_path / "run")
    assert run.status == "complete"
    out = tmp_path / "real.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(run.out_dir), "--questionnaire",
                                   str(HEADLINE), "--out", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((run.out_dir / "summary.json").read_text())
    text = _text(out)
    base = summary["baseline"]["stream_tokens_per_s"]["p50"]
    assert f"Decode rate, one stream alone (1 ÷ TPOT) {fmt_rate(base)}" in text
    assert f"model {srv.model}" in text and srv.base_url in text
    reader = pypdf.PdfReader(out)
    atts = {k: v[0] for k, v in reader.attachments.items()}
    assert atts["summary.json"] == (run.out_dir / "summary.json").read_bytes()
    assert hashlib.sha256(atts["run.json"]).hexdigest() in text
    # records were read: the stream raster (Figure 5) exists
    assert "Figure 5." in text and "one row each in send order" in text
