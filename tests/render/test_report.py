"""The PDF scorecard: real PDFs rendered, then read back with pypdf.

The run is the synthetic fixture in tests/data/report_run (built by
make_report_fixture.py, so its figures are known exactly); the scorecard is built here
to the SPEC's `evalkit.scorecard/1` contract with one question in each status.
"""

from __future__ import annotations

import gzip
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
from hypothesis import given, settings
from hypothesis import strategies as st

import evalkit
from evalkit import errors, fmt
from evalkit.analysis.summary import Summary
from evalkit.questionnaire import schema
from evalkit.render import pagetext, pdf, report
from evalkit.render.charts import figures, ramp
from evalkit.render.charts.listed import ChartInputs, draw_charts
from evalkit.render.keyfigures import slo_limits
from evalkit.render.page import build_page, page_fields
from evalkit.render.questions import BADGES
from evalkit.review.scorecard import Scorecard
from evalkit.rundir import run as rundir_run

RUN_DIR = Path(__file__).parent.parent / "data" / "report_run"


def fixture_scorecard(**over: Any) -> dict[str, Any]:
    """A scorecard with every status present and Q6 carrying a headline and a panel."""
    sc: dict[str, Any] = {
        "schema": "evalkit.scorecard/1",
        "vendor": "Forthright Inference",
        "verdict": {"streaming_ready": False,
                    "text": "Forthright cannot answer Q2 with measured numbers, so its quote "
                            "is sized for a batch regime."},
        "questions": {
            "Q1": {"status": "ok", "claimed": {"ttft_p50_ms": 290, "ttft_p90_ms": 330,
                                                "at_concurrency": 8},
                   "measured": {"ttft_p90_s": 0.324}, "reason": "within 25% of measured"},
            "Q2": {"status": "unanswered", "claimed": None, "measured": None,
                   "reason": "no answer given"},
            "Q3": {"status": "unanswerable", "claimed": {"blended_price_per_mtok": 0.6},
                   "measured": {"prefill_tokens_per_s": 20000}, "reason": "a blended price only"},
            "Q4": {"status": "ok", "claimed": {"max_concurrent_streams_per_node": 8,
                                                "first_degrades": "ttft"},
                   "measured": {"max_sustained_concurrency": 8}, "reason": "matches the ramp"},
            "Q5": {"status": "ok", "claimed": {"observability": "per_stream"}, "measured": None,
                   "reason": "per-stream export named"},
            "Q6": {"status": "unreconciled",
                   "claimed": {"headline": 1107, "panel": {"p50": 170, "p90": 520, "p99": 767}},
                   "measured": {"stream_tokens_per_s_p50": 38.5},
                   "reason": "headline is 6.5x the panel p50 with no reconciliation"},
        },
        "use_cases": {"voice_agent": {"fit": True, "reason": "TTFT p90 324 ms within 500 ms",
                                      "profile": {"ttft_p90_s": 0.5}},
                      "live_suggestions": {"fit": False, "reason": "TTFT p90 324 ms; TPOT ok"},
                      "batch": {"fit": None, "reason": "no aggregate measured"}},
        "tolerances": {"ttft_rel": 0.25,
                       "slo_profiles": {"live_suggestions": {"ttft_p90_s": 0.45,
                                                             "tpot_p90_s": 0.04}}},
        "run": {"validity": "valid", "validity_reasons": [], "model": "ref-model-7b",
                "endpoint": "http://127.0.0.1:8011/v1", "profile": "quick",
                "stands_in_for": None, "target_mismatch": None},
    }
    sc.update(over)
    return sc


#: a scorecard.json dict read as the typed Scorecard the page takes
typed_card = Scorecard.from_json

QUESTIONNAIRE = ("questionnaire.yaml", b"vendor: Forthright Inference\n")


def _render(tmp_path: Path, scorecard: dict[str, Any], run: bool = True,
            html: bool = False) -> report.ReportResult:
    data = rundir_run.open_run(RUN_DIR) if run else None
    return report.write_scorecard(typed_card(scorecard), data, QUESTIONNAIRE, tmp_path / "card.pdf",
                                  html=html)


Rendered = tuple[report.ReportResult, pypdf.PdfReader]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """One full render shared by the read-back tests (rendering takes a few seconds)."""
    res = _render(tmp_path_factory.mktemp("card"), fixture_scorecard(), html=True)
    return res, pypdf.PdfReader(res.pdf)


_TEXTS: dict[int, str] = {}


def _text(reader: pypdf.PdfReader) -> str:
    """All pages' text, extracted once per reader (extraction costs ~1 s)."""
    if id(reader) not in _TEXTS:
        _TEXTS[id(reader)] = "\n".join(p.extract_text() for p in reader.pages)
    return _TEXTS[id(reader)]


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


class TestPageOne:
    def test_identity_and_verdict(self, rendered: Rendered) -> None:
        """Vendor, model, endpoint, run date and the verdict sentence are on page one."""
        page = _squash(rendered[1].pages[0].extract_text())
        for expected in ("Forthright Inference", "ref-model-7b", "http://127.0.0.1:8011/v1",
                         "2026-11-30T07:00:00Z", "NOT STREAMING-READY",
                         "its quote is sized for a batch regime"):
            assert expected in page

    def test_a_ready_quote_gets_the_streaming_ready_banner(self, tmp_path: Path) -> None:
        """A verdict of ready is rendered as the STREAMING-READY banner on page one, and
        never beside a NOT; an invalid run adds its RUN INVALID box above the verdict."""
        ready = fixture_scorecard(verdict={"streaming_ready": True, "text": "Holds up."})
        page = _squash(pypdf.PdfReader(_render(tmp_path, ready).pdf).pages[0].extract_text())
        assert "STREAMING-READY" in page and "NOT STREAMING-READY" not in page
        assert "RUN INVALID" not in page
        html = pdf.render_html(page_fields(build_page(typed_card(ready), None, {})))
        assert '<div class="verdict ready" id="field:verdict">' in html
        invalid = fixture_scorecard(run={**fixture_scorecard()["run"], "validity": "invalid"})
        html = pdf.render_html(page_fields(build_page(typed_card(invalid), None, {})))
        assert "RUN INVALID" in html and "✗ NOT STREAMING-READY" in html
        assert html.index("RUN INVALID") < html.index("NOT STREAMING-READY")

    def test_each_question_shows_its_status(
            self, rendered: Rendered) -> None:
        """Each question row carries its own status word, in order, with its reason."""
        page = _squash(rendered[1].pages[0].extract_text() + rendered[1].pages[1].extract_text())
        page = page[page.index("The six capacity questions"):]
        want = ["ok", "unanswered", "unanswerable", "ok", "ok", "unreconciled"]
        for qid, status in zip(schema.QUESTION_IDS, want, strict=True):
            row = page[page.index(qid + " "):]
            nxt = row.find(f"Q{int(qid[1]) + 1} ", 3)
            row = row[: nxt if nxt > 0 else 400]
            assert f"{BADGES[status]} {status}" in row, (qid, row)
        assert "headline is 6.5x the panel p50" in page

    def test_key_figures_are_the_runs_numbers(
            self, rendered: Rendered) -> None:
        """Under-load figures come from the max sustained level (8); prefill from the fit."""
        text = _squash(rendered[1].pages[0].extract_text() + rendered[1].pages[1].extract_text())
        summary = json.loads((RUN_DIR / "summary.json").read_text())
        level8 = summary["ramp"]["levels"][3]
        assert level8["concurrency"] == summary["ramp"]["max_sustained_concurrency"] == 8
        ttft = level8["ttft_s"]
        def span(ci: list[float | None]) -> str:  # an end too few samples bound is open
            return " [95 %: {}–{}]".format(*(fmt.fmt_ms(v) if v else "open" for v in ci))

        assert ttft["n"] < 100  # so the figure is marked
        assert (f"TTFT under load at 8 streams p50 {fmt.fmt_ms(ttft['p50'])}"
                f"{span(ttft['p50_ci'])} · p90 {fmt.fmt_ms(ttft['p90'])}"
                f"{span(ttft['p90_ci'])} (n={ttft['n']}, low confidence)") in text
        assert 0.28 < ttft["p50"] < 0.33  # the fixture's 300 ms ± 10 %
        # in words: TTFT p90, not the summary's key `ttft`; the breach level named
        assert "8 streams; TTFT p90 degraded first at 16 streams" in text
        # 1 / 20,000 per token ± noise, with the fit's 95 % interval around it
        pre = summary["prefill"]
        assert 19_000 < pre["tokens_per_s"] < 21_000
        assert (f"Prefill rate {fmt.fmt_rate(pre['tokens_per_s'])} [95 %: "
                f"{fmt.fmt_num(pre['tokens_per_s_ci'][0])}–"
                f"{fmt.fmt_num(pre['tokens_per_s_ci'][1])}] (fit r² 1.00)") in text
        base = summary["baseline"]["stream_tokens_per_s"]
        assert ("Decode rate, one stream alone (1 ÷ TPOT) 50.4 tok/s [95 %: "
                f"{fmt.fmt_rate(base['p50_ci'][0])}–{fmt.fmt_rate(base['p50_ci'][1])}] "
                "(n=8, low confidence)") in text    # 1 / 20 ms ± jitter
        assert "Run validity valid" in text
        assert "Suite profile quick (suite v1)" in text

    def test_use_cases(self, rendered: Rendered) -> None:
        """Use-case rows read fits / does not fit as words, not colour."""
        text = _squash(_text(rendered[1]))
        assert "✓ fits TTFT p90 324 ms within 500 ms" in text
        assert "✗ does not fit TTFT p90 324 ms; TPOT ok" in text
        assert "○ not judged no aggregate measured" in text

    def test_a_fit_says_how_far_it_was_tried(self) -> None:
        """'fits up to N' where a level broke it, 'fits ≥ N' where none tried did."""
        def label(uc: dict[str, Any]) -> str:
            card = fixture_scorecard(use_cases={"voice_agent": uc})
            return build_page(typed_card(card), None, {}).use_cases[0].label
        assert label({"fit": True, "max_concurrency": 4, "lower_bound": False}) == \
            "✓ fits up to 4 streams"
        assert label({"fit": True, "max_concurrency": 16, "lower_bound": True}) == \
            "✓ fits ≥ 16 streams"


class TestChartsAndAppendix:
    def test_charts_are_vector_and_labelled(
            self, rendered: Rendered) -> None:
        """All six charts render, their labels are text in the PDF (vector, not raster)."""
        text = _squash(_text(rendered[1]))
        for n in range(1, 7):
            assert f"Figure {n}." in text
        assert "Figure 7." not in text
        assert "max sustained: 8 streams; above it TTFT p90 degraded first" in text
        assert "vendor headline 1,107 tokens/s" in text and "p50 170" in text
        pre = json.loads((RUN_DIR / "summary.json").read_text())["prefill"]
        assert (f"fit: {fmt.fmt_ms(pre['overhead_s'])} + n / "
                f"{fmt.fmt_num(pre['tokens_per_s'])} tok/s, r² 1.000") in text
        assert "stall: a gap over 1 s (1 in these streams)" in text  # the one 1.4 s gap
        # limits come from the use case's own profile, else from the tolerances' profiles
        assert "voice agent 500 ms" in text and "live suggestions 450 ms" in text
        assert "live suggestions 40 ms" in text  # the TPOT panel
        for page in rendered[1].pages:
            assert not page.images  # nothing rasterised

    def test_appendix_outcomes_and_escaped_errors(
            self, rendered: Rendered) -> None:
        """Outcome counts match the records; an endpoint's error text stays literal text."""
        text = _squash(_text(rendered[1]))
        recs = [json.loads(x) for x in (RUN_DIR / "requests.jsonl").read_text().splitlines()]
        rejected = sum(r["outcome"] == "rejected" for r in recs)
        assert rejected == 1
        assert f"rejected {rejected}" in text
        assert f"ok {len(recs) - rejected}" in text
        assert "429: <b>slow down</b> 1" in text
        assert "16 64 ok 63 · rejected 1" in text  # the 16-stream row of the ramp table
        assert "Suite version 1; profile quick" in text

    def test_self_checks_in_provenance(self, rendered: Rendered) -> None:
        """The run's own checks are printed with their verdicts, flagged ones in words."""
        text = _squash(_text(rendered[1]))
        assert "event-loop lag p99 1.20 ms, CPU max 31%; the client was not the bottleneck" \
            in text
        assert "repeat/first TTFT 0.210 over 2 pairs: a prefix cache serves repeats" in text
        checks = json.loads((RUN_DIR / "summary.json").read_text())["checks"]
        n = checks["output_length"]["checked"]
        assert n > 100 and checks["usage_honesty"]["checked"] == n
        assert f"3 of {n} requests short by > 5%: FLAGGED" in text  # the three 20-token outputs
        assert f"0 of {n} disagree by > 25%: ok" in text

    def test_low_confidence_p99_marked(
            self, rendered: Rendered) -> None:
        """Baseline p99 from 8 samples carries the low-confidence mark."""
        text = _squash(_text(rendered[1]))
        p99 = json.loads((RUN_DIR / "summary.json").read_text())["baseline"]["ttft_s"]["p99"]
        assert f"p99 {fmt.fmt_ms(p99)} (low confidence) · n=8" in text


class TestEvidence:
    def test_attachments_are_the_files_and_hashes_printed(
            self, rendered: Rendered) -> None:
        """Each attachment equals its source bytes, and its SHA-256 is printed in the PDF;
        the records are attached as the gzip of requests.jsonl's exact bytes, and the
        manifest names every other attachment."""
        res, reader = rendered
        atts = {name: data[0] for name, data in reader.attachments.items()}
        assert sorted(atts) == ["manifest.json", "questionnaire.yaml", "requests.jsonl.gz",
                                "run.json", "scorecard.json", "summary.json"]
        assert gzip.decompress(atts["requests.jsonl.gz"]) == \
            (RUN_DIR / "requests.jsonl").read_bytes()
        assert atts["requests.jsonl.gz"][4:8] == b"\0\0\0\0"  # mtime 0: deterministic
        manifest = json.loads(atts["manifest.json"])
        assert manifest["files"] == {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                   "what": manifest["files"][name]["what"]}
            for name, data in atts.items() if name != "manifest.json"}
        assert manifest["records"]["attached_as"] == "requests.jsonl.gz"
        assert atts["run.json"] == (RUN_DIR / "run.json").read_bytes()
        assert atts["summary.json"] == (RUN_DIR / "summary.json").read_bytes()
        assert atts["questionnaire.yaml"] == QUESTIONNAIRE[1]
        assert atts["scorecard.json"] == res.scorecard_json.read_bytes()
        text = _text(reader)
        for name, data in atts.items():
            digest = hashlib.sha256(data).hexdigest()
            assert res.sha256[name] == digest
            assert digest in text, name
        jsonl = hashlib.sha256((RUN_DIR / "requests.jsonl").read_bytes()).hexdigest()
        assert jsonl in text  # the records' own digest, as the manifest names it
        assert manifest["records"]["sha256"] == jsonl

    def test_scorecard_json_beside_pdf(
            self, rendered: Rendered) -> None:
        """FILE.json sits beside FILE.pdf and is the scorecard that was rendered."""
        res = rendered[0]
        assert res.scorecard_json == res.pdf.with_suffix(".json")
        assert res.scorecard_json.read_bytes() == report.scorecard_bytes(res.scorecard)
        assert res.scorecard == typed_card(fixture_scorecard())
        assert json.loads(res.scorecard_json.read_text())["vendor"] == \
            fixture_scorecard()["vendor"]
        assert res.html is not None and res.html.read_text().startswith("<!DOCTYPE html>")
        assert (res.fetched, res.refused) == ((), ())  # styles and charts are inline


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def trap_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request it receives."""
    hits: list[str] = []
    handler = type("H", (_CountingHandler,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def hostile_scorecard(url: str) -> dict[str, Any]:
    """Vendor text that would fetch, style or link if it ever became markup."""
    payloads = [
        f'<img src="{url}/img.png">',
        f'<link rel="stylesheet" href="{url}/x.css"><link rel="attachment" href="{url}/a">',
        f"<style>@import url({url}/imp.css); body {{ background: url({url}/bg.png) }}</style>",
        f'<svg><image href="{url}/svg.png"/></svg><object data="{url}/o"></object>',
        '<a href="file:///etc/passwd">file:///etc/passwd</a>',
        "مرحبا بالعالم עברית 🚀🔥 ‮gnp.exe",
        "W" * 100_000,
    ]
    sc = fixture_scorecard(vendor=payloads[0] + " " + payloads[5])
    for qid, text in zip(schema.QUESTION_IDS, payloads[1:], strict=False):
        sc["questions"][qid]["reason"] = text
        sc["questions"][qid]["claimed"] = {"notes": text, "source": f"{url}/source"}
    sc["verdict"]["text"] = payloads[2]
    sc["use_cases"]["voice_agent"]["reason"] = payloads[0]
    return sc


class TestUntrustedInput:
    def test_hostile_text_is_escaped_and_bounded(self) -> None:
        """Markup, URLs and a 100,000-character word become bounded, escaped text in the HTML.

        (The PDF of a hostile questionnaire, and the trap server, are in test_report_cli.py.)
        """
        url = "http://127.0.0.1:9"
        html = pdf.render_html(page_fields(build_page(typed_card(hostile_scorecard(url)), None,
                                                      {})))
        assert "&lt;img src=&#34;http://127.0.0.1:9/img.png&#34;&gt;" in html
        for tag in ("<img", "<style>@import", "<object", "<link rel=\"attachment\"", "<a href"):
            assert tag not in html, tag
        assert "<link" not in html and html.count("<style>") == 1  # our inline stylesheet
        assert "W" * pagetext.LONG_TEXT in html and "W" * (pagetext.LONG_TEXT + 1) not in html
        assert "[U+1F680]" in html and "[U+202E]" in html
        assert len(html) < 200_000

    def test_fetcher_refuses_everything_outside_templates(
            self, trap_server: tuple[str, list[str]]) -> None:
        """Only files under templates/ load; network, other files and traversal are refused."""
        url, hits = trap_server
        fetcher = pdf.AssetFetcher()
        bad = [f"{url}/x.png", "file:///etc/passwd",
               (pdf.TEMPLATES_DIR / ".." / "pyproject.toml").as_uri(),
               pdf.TEMPLATES_DIR.as_uri() + "/../pyproject.toml",
               "data:text/css,body{}", "ftp://127.0.0.1/x",
               "file://127.0.0.1" + str(pdf.TEMPLATES_DIR / "scorecard.css")]
        for u in bad:
            with pytest.raises(ValueError, match="refusing"):
                fetcher.fetch(u)
        assert fetcher.refused == bad
        assert hits == []
        ok = fetcher.fetch((pdf.TEMPLATES_DIR / "scorecard.css").as_uri())
        assert b"@page" in ok.read()
        ok.close()

    def test_charts_draw_no_colour(self) -> None:
        """Every colour in every chart is a grey (r == g == b): the charts print in greyscale."""
        data = rundir_run.open_run(RUN_DIR)
        card = typed_card(fixture_scorecard())
        svgs = draw_charts(ChartInputs(card, data.summary, data.stats, slo_limits(card)))
        assert len(svgs) == 6
        for caption, svg in ((c.caption, str(c.svg)) for c in svgs):
            colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg))
            assert colours, caption
            for c in colours:
                assert c[0:2] == c[2:4] == c[4:6], (caption, c)
            assert "href=\"http" not in svg and "url(http" not in svg


class TestPartialReviews:
    def test_interrupted_run_says_so_first(self) -> None:
        """A run stopped early leads the key figures with its status."""
        data = rundir_run.open_run(RUN_DIR)
        stopped = rundir_run.RunDir({**data.run, "status": "interrupted"}, data.summary, (), {})
        ctx = build_page(typed_card(fixture_scorecard()), stopped, {}, charts=False)
        assert ctx.key_figures[0] == ("Run validity", "valid")
        assert ctx.key_figures[1] == (
            "Run status", "INTERRUPTED: the figures cover only what was measured before the "
            "run stopped")
        complete = build_page(typed_card(fixture_scorecard()),
                              rundir_run.RunDir(data.run, data.summary, (), {}), {}, charts=False)
        assert all(label != "Run status" for label, _ in complete.key_figures)

    def test_reconnects_and_a_configuration_finding_are_on_the_page(self) -> None:
        """Requests sent again stand beside their level's outcomes in the ramp table; a
        shape refused alone as under load is a row of page one, naming what to change,
        the endpoint's words escaped."""
        data = rundir_run.open_run(RUN_DIR)
        summary = json.loads(json.dumps(data.summary.to_json()))
        summary["ramp"]["levels"][1].update(reconnects=3, configuration_failures=2)
        summary["configuration"] = {"findings": [{
            "status": 400, "message": "request (7037 tokens) exceeds the <b>context</b>",
            "requests": 8, "phases": {"cache": 8}, "change": "serve a longer context"}]}
        ctx = build_page(typed_card(fixture_scorecard()),
                         rundir_run.RunDir(data.run, summary, (), {}), {}, charts=False)
        assert ("Configuration finding", "HTTP 400 “request (7037 tokens) exceeds the "
                "<b>context</b>” for 8 requests (cache 8), alone as under load: a shape "
                "the endpoint never serves, left out of the degradation order. To change: "
                "serve a longer context") in ctx.key_figures
        html = pdf.render_html(page_fields(ctx))
        assert "(3 reconnects, 2 configuration)" in html
        assert "&lt;b&gt;context&lt;/b&gt;" in html and "<b>context" not in html

    def test_missing_metrics_are_dashes_not_numbers(self) -> None:
        """A summary without a ramp shows em dashes, not zeros."""
        figs = dict(pagetext.key_figures(Summary.from_json({"schema": "evalkit.summary/1",
                                                            "baseline": {}})))
        assert figs["Prefill rate"] == "—"
        assert figs["Max sustained concurrency"] == "not established by this run"
        assert figs["TTFT under load"] == "p50 — · p90 —"
        assert ramp.throughput_vs_concurrency([], None, None) is None
        assert figures.prefill_fit([], None, None, None) is None

    def test_estimated_tokens_are_marked(self) -> None:
        """Rates from tokens we counted ourselves say so; server-reported ones do not."""
        summary = json.loads((RUN_DIR / "summary.json").read_text())
        assert "estimated" not in " ".join(
            v for _, v in pagetext.key_figures(Summary.from_json(summary)))
        summary["ramp"]["levels"][3]["output_tokens_estimated"] = True  # the 8-stream level
        figs = dict(pagetext.key_figures(Summary.from_json(summary)))
        assert figs["Stream rate at 8 streams"].endswith("(tokens estimated)")
        agg = summary["ramp"]["levels"][3]["aggregate_tokens_per_s"]
        shown = figs["Aggregate throughput at 8 streams"]
        assert shown.startswith(f"{fmt.fmt_rate(agg)} [95 %: ")  # with its interval
        assert shown.endswith("] (tokens estimated)")
        assert "estimated" not in figs["Decode rate, one stream alone (1 ÷ TPOT)"]


class TestFailOn:
    def test_parse_and_flag(self) -> None:
        """--fail-on names are validated; flagged() lists the questions with those statuses."""
        assert report.parse_fail_on("unanswered, unreconciled") == ("unanswered", "unreconciled")
        with pytest.raises(errors.UsageError, match="unknown status bogus"):
            report.parse_fail_on("unanswered,bogus")
        sc = fixture_scorecard()
        assert report.flagged(typed_card(sc), ("unanswered", "unreconciled")) == ["Q2", "Q6"]
        assert report.flagged(typed_card(sc), ("unanswerable",)) == ["Q3"]


class TestEscapingProperty:
    _plain: ClassVar[list[list[str]]] = []

    @staticmethod
    def _tags(page: str) -> list[str]:
        """The element structure of a page: every start tag, in order."""
        from html.parser import HTMLParser

        tags: list[str] = []

        class P(HTMLParser):
            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                tags.append(tag + "".join(sorted(f" {k}" for k, _ in attrs)))

        P().feed(page)
        return tags

    @settings(max_examples=40, deadline=None)
    @given(text=st.lists(st.one_of(
        st.sampled_from(["<img src=x>", "<b>", "</td></tr>", "<script>", "&amp;", "\"", "'",
                         "<!--", "]]>", "{{ vendor }}", "{% if %}", "<style>", "\u202e"]),
        st.text(max_size=20)), max_size=12).map("".join))
    def test_vendor_text_never_changes_the_page_structure(self, text: str) -> None:
        """Any string in any vendor field leaves the tag structure exactly as for plain text."""
        def card(t: str) -> dict[str, Any]:
            sc = fixture_scorecard(vendor=t)
            for q in sc["questions"].values():
                q["reason"], q["claimed"] = t, {"notes": t, t[:40] or "k": t}
            sc["verdict"]["text"] = t
            sc["use_cases"]["voice_agent"]["reason"] = t
            return sc

        def page(t: str) -> str:
            return pdf.render_html(page_fields(build_page(typed_card(card(t)), None, {})))

        if not TestEscapingProperty._plain:  # the same for every example: made once
            TestEscapingProperty._plain.append(self._tags(page("plain")))
        assert self._tags(page(text)) == TestEscapingProperty._plain[0]


def test_fixture_is_what_its_generator_writes() -> None:
    """The run fixture is derived, never hand-edited: its summary is summarize(records)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_report_fixture", RUN_DIR.parent / "make_report_fixture.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, text in gen.files().items():
        kept = (RUN_DIR / name).read_text()
        if name.endswith(".json"):
            # values, with floats to 12 significant digits: the last digits of a float may
            # differ by processor and numpy build, and are no behaviour of ours
            assert _rounded(json.loads(kept)) == _rounded(json.loads(text)), \
                f"re-run {spec.origin} ({name} differs)"
        else:
            assert kept == text, f"re-run {spec.origin} ({name} differs)"


def _rounded(value: Any) -> Any:
    """A JSON value with every float at 12 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_the_pdf_is_an_archival_document(rendered: Rendered) -> None:
    """PDF/A-3b (the archive format that allows embedded evidence), tagged, with the
    vendor and date in its title and the verdict in its subject, read back from the file."""
    reader = rendered[1]
    meta = reader.metadata
    assert meta is not None
    assert meta.title == "Streaming-capacity scorecard: Forthright Inference (2026-11-30T07:00:00Z)"
    assert (meta.author or "").startswith("evalkit ")
    assert meta.subject == "Not streaming-ready: Forthright Inference, model ref-model-7b"
    assert "Forthright Inference" in (meta.get("/Keywords") or "")
    root = reader.trailer["/Root"]
    assert "/StructTreeRoot" in root and root["/MarkInfo"]["/Marked"]  # tagged
    assert "/OutputIntents" in root  # an output intent, as PDF/A requires
    xmp = root["/Metadata"].get_object().get_data().decode()
    assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="B"' in xmp


MM = 72 / 25.4


def page_fill(page: pypdf.PageObject) -> float:
    """How far down the page its body text reaches (0 = empty, 1 = the bottom margin), read
    back from the PDF: the lowest line of the page's own text (the footer in the margin
    left out; chart labels sit inside their figure, whose caption is page text below)."""
    lows: list[float] = []

    def visit(text: str, cm: list[float], tm: list[float], *_: Any) -> None:
        if text.strip() and abs(cm[0] - 0.75) < 1e-6:  # WeasyPrint's page text (px → pt)
            lows.append(tm[4] * cm[1] + tm[5] * cm[3] + cm[5])

    page.extract_text(visitor_text=visit)
    height = float(page.mediabox.height)
    top, bottom = height - 14 * MM, 16 * MM  # scorecard.css's @page margins
    body = [y for y in lows if y > bottom - 1]
    return (top - min(body)) / (top - bottom) if body else 0.0


def full_answer_links(reader: pypdf.PdfReader) -> dict[str, int]:
    """Page one's links to the appendix: the named place each points at, and its page."""
    targets = {}
    for page in reader.pages[:2]:
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            dest = a.get("/Dest")
            if a.get("/Subtype") == "/Link" and isinstance(dest, str):
                targets[dest] = reader.get_destination_page_number(
                    reader.named_destinations[dest])
    return targets


class TestPagination:
    def test_every_answer_is_one_link_away(self, rendered: Rendered) -> None:
        """Each question on page one links (a PDF link annotation) to the place in the
        appendix that holds its whole answer, and prints that place's page number."""
        reader = rendered[1]
        links = full_answer_links(reader)
        assert sorted(links) == [f"answer-{q}" for q in schema.QUESTION_IDS]
        text = _squash(_text(reader))
        for qid, page in links.items():
            assert page >= 2  # the appendix, after page one and the charts
            where = _squash(reader.pages[page].extract_text())
            assert f"{qid.removeprefix('answer-')}: " in where and "Claimed" in where, qid
        assert f"full answer, p. {links['answer-Q1'] + 1}" in text

    def test_no_page_under_half_full_but_the_last(self, rendered: Rendered) -> None:
        """No forced page break leaves a page mostly blank: every page but the last is at
        least half full (the demo's scorecards had pages 75-80 % blank)."""
        fills = [page_fill(p) for p in rendered[1].pages]
        assert len(fills) == 7
        assert all(f >= 0.5 for f in fills[:-1]), fills
        assert 0 < fills[-1] <= 1.0

    def test_no_question_row_is_split_across_pages(self, rendered: Rendered) -> None:
        """A question's id, status, claim and reason print on one page: a row is never cut
        (the issue's use-case badge on one page, its reason on the next)."""
        card = fixture_scorecard()
        pages = [_squash(p.extract_text()) for p in rendered[1].pages[:3]]
        for qid, q in card["questions"].items():
            title = schema.QUESTION_TITLES[qid]
            on = [i for i, t in enumerate(pages) if f"{qid} {title}" in t]
            assert len(on) == 1, qid
            page = pages[on[0]]
            row = page[page.index(f"{qid} {title}"):]
            assert f"{BADGES[q['status']]} {q['status']}" in row[:400], qid
            assert q["reason"][:30] in row, qid
        for reason in ("TTFT p90 324 ms within 500 ms", "no aggregate measured"):
            where = [t for t in pages if reason in t]
            assert len(where) == 1 and ("✓ fits" in where[0] or "○ not judged" in where[0])

    def test_rules_and_words_on_page_one(self, rendered: Rendered) -> None:
        """The verdict rule and the degradation rule (with the run's thresholds) are on page
        one; the per-token metric is TPOT everywhere, never the summary's `itl` key."""
        text = _squash(rendered[1].pages[0].extract_text())
        assert "Verdict rule Streaming-ready only when Q2 (throughput per stream), Q4" in text
        assert ("the 95 % interval of its TTFT p90 lies wholly above 2× the baseline's p90, "
                "that of its TPOT p90 (per-token latency) wholly above 2× the baseline's, or "
                "that of its failure rate wholly above 1%; an interval that straddles a limit "
                "is a tie") in text
        for key in ("first_degraded", "ttft_p90", "_ms", "_per_s", "at_concurrency"):
            assert key not in text, key
        assert "first to degrade: itl" not in _text(rendered[1])

    def test_page_one_names_the_evalkit_that_wrote_it(self, rendered: Rendered) -> None:
        """Page one's footer prints the evalkit version and a short digest of its package
        (issue 26); the appendix says the run's provenance, or that it has none."""
        from evalkit.provenance import installed_digest

        digest = installed_digest()
        assert digest is not None and len(digest) == 64
        assert (f"evalkit {evalkit.__version__} ({digest[:12]})"
                in _squash(rendered[1].pages[0].extract_text()))
        text = _squash(_text(rendered[1]))
        assert f"Report written by evalkit {evalkit.__version__}, package {digest[:12]}" in text
        assert "not recorded (a run from before the suite recorded its provenance)" in text

    def test_a_tie_is_named_in_words(self) -> None:
        """A level whose interval straddled a limit is named with its metric in words and
        the requests that would decide it, beside the max sustained level."""
        summary = json.loads((RUN_DIR / "summary.json").read_text())
        summary["ramp"]["first_tie_concurrency"] = 16
        summary["ramp"]["levels"][4].update(status="tie", ties=["itl"], tie_requests=120)
        assert pagetext.max_sustained_text(Summary.from_json(summary)).endswith(
            "; at 16 streams a tie on TPOT p90 (per-token latency) (its 95 % interval "
            "straddles the limit, so the max sustained level may be higher; about 120 "
            "requests there would decide it)")
