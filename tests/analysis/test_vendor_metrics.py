"""The vendor's own metrics (`probe --metrics-url`) and Q5's judgement from them.

The scrape is checked against known values: the reference endpoint's `/metrics` is
computed from the same stamps as its truth log, so the TTFT and inter-token histograms
the probe read over a phase must equal what the truth log says of that phase's requests.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.summary import Sections, Summary
from evalkit.analysis.thresholds import Tolerances
from evalkit.analysis.vendor_metrics import SCRAPES_FILE, Histogram, engine_of, parse
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.questionnaire.model import ObservabilityAnswer
from evalkit.review.limits import judge_q5
from evalkit.review.rules import Evidence
from evalkit.rundir.run import open_run as read_run
from evalkit.rundir.scrapes import digest_log, read_log

VLLM_PAGE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="m"} 6.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 10.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 3.0
vllm:time_to_first_token_seconds_count{model_name="m"} 10.0
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{le="0.01",model_name="m"} 0.0
vllm:inter_token_latency_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:inter_token_latency_seconds_sum{model_name="m"} 0.2
vllm:inter_token_latency_seconds_count{model_name="m"} 4.0
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.0
"""


class TestParse:
    def test_vllm_names_summed_over_label_sets(self) -> None:
        snap = parse(VLLM_PAGE)
        assert snap.gauges == {"running": 5.0, "waiting": 7.0, "kv_cache": 0.5}
        ttft = snap.histograms["ttft"]
        assert (ttft.count, ttft.sum) == (10.0, 3.0)
        assert ttft.quantile(0.5) == pytest.approx(0.1 + 0.4 * (3 / 4))  # in (0.1, 0.5]
        assert ttft.quantile(0.1) == pytest.approx(0.05)
        assert ttft.quantile(0.99) == 0.5  # in +Inf: the last finite bound is all we know
        assert snap.names["itl"] == "vllm:inter_token_latency_seconds"
        assert engine_of(list(snap.names.values())) == "vllm"

    def test_older_vllm_sglang_and_tgi_names(self) -> None:
        old = parse(VLLM_PAGE.replace("inter_token_latency", "time_per_output_token"))
        assert old.names["itl"] == "vllm:time_per_output_token_seconds"
        sg = parse("sglang:num_running_reqs 4\nsglang:num_queue_reqs 9\n"
                   'sglang:inter_token_latency_seconds_bucket{le="+Inf"} 3\n'
                   "sglang:inter_token_latency_seconds_sum 0.3\n"
                   "sglang:inter_token_latency_seconds_count 3\n")
        assert sg.gauges["running"] == 4 and sg.gauges["waiting"] == 9
        assert sg.histograms["itl"].count == 3 and engine_of(list(sg.names.values())) == "sglang"
        tgi = parse("# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n"
                    "# TYPE tgi_request_mean_time_per_token_duration histogram\n"
                    'tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 5\n'
                    "tgi_request_mean_time_per_token_duration_sum 0.1\n"
                    "tgi_request_mean_time_per_token_duration_count 5\n")
        assert "itl" not in tgi.names and tgi.names["tpot_req"].startswith("tgi_")
        assert tgi.gauges == {"waiting": 2.0}

    def test_difference_over_a_phase_and_a_reset(self) -> None:
        before = parse(VLLM_PAGE).histograms["ttft"]
        after = parse(VLLM_PAGE.replace("} 10.0", "} 14.0").replace("} 6.0", "} 9.0")
                      .replace("_sum{model_name=\"m\"} 3.0", "_sum{model_name=\"m\"} 4.0")
                      ).histograms["ttft"]
        diff = after.minus(before)
        assert (diff.count, diff.sum, diff.buckets[0.5]) == (4.0, 1.0, 3.0)
        assert before.minus(after).count == 0  # the engine restarted: nothing to difference
        assert Histogram().stats()["mean"] is None


def _given(value: object) -> object:
    """A JSON value without its nulls and falses (what a typed reading leaves at its
    defaults)."""
    if isinstance(value, dict):
        return {k: _given(v) for k, v in value.items() if v is not None and v is not False}
    return value


class TestScrapeAgainstTheReference:
    def test_vendor_histograms_equal_the_truth_over_each_phase(self, reference: Any,
                                                               tmp_path: Path) -> None:
        """Run the probe with --metrics-url at the reference; every scraped figure over a
        phase is what its truth log says of that phase's requests."""
        # requests spend their time inside the engine (a short HTTP front), so a sample
        # taken mid-level sees the level's streams running
        srv = reference("gpu", decode_base_ms=10, request_overhead_ms=1)
        config = ProbeConfig(srv.base_url, srv.model, tag_requests=True, profile="quick",
                             phases=("connect", "baseline", "ramp"), levels=(1, 3),
                             output_tokens=20,
                             metrics_url=srv.base_url.removesuffix("/v1") + "/metrics",
                             # level 1 of 8 requests: the means are compared whatever
                             # the count; level 3, sampled mid-level, keeps its 36
                             overrides={"baseline": {"requests": 4},
                                        "ramp": {"level_duration_s": 1.6,
                                                 "level_min_requests": 8,
                                                 "min_requests": {"3": 36}}})
        result = run_probe(config, tmp_path / "run")
        vm = json.loads((tmp_path / "run" / "summary.json").read_text())["vendor_metrics"]
        assert result.summary is not None and vm["engine"] == "vllm"
        assert vm["per_stream_itl"] is True and vm["scrapes"] == vm["scrapes_ok"]
        records = [json.loads(line) for line in
                   (tmp_path / "run" / "requests.jsonl").read_text().splitlines()]
        truth = {t["request_id"]: t for t in srv.truth()}
        for phase in ("baseline", "ramp"):
            ids = [r["id"] for r in records if r["phase"] == phase and r["ttft_s"] is not None]
            firsts = [(truth[i]["first_write_ns"] - truth[i]["received_ns"]) / 1e9 for i in ids]
            gaps = []
            for i in ids:
                stamps = [w[0] for w in truth[i]["writes"] if w[3] in ("content", "reasoning")]
                gaps += [(b - a) / 1e9 for a, b in itertools.pairwise(stamps)]
            got = vm["phases"][phase]
            assert got["vendor"]["ttft_s"]["n"] == len(ids) == got["ours"]["ttft_s"]["n"]
            assert got["vendor"]["ttft_s"]["mean"] == pytest.approx(sum(firsts) / len(firsts),
                                                                    rel=1e-9)
            assert got["vendor"]["itl_s"]["n"] == len(gaps)
            assert got["vendor"]["itl_s"]["mean"] == pytest.approx(sum(gaps) / len(gaps),
                                                                   rel=1e-9)
            # ours starts when our bytes left, theirs when the server had them
            assert got["overhead_s"]["mean"] > -0.002 and got["counted_ours"] is True
        level3 = vm["levels"]["3"]
        assert level3["phase"] == "ramp" and level3["vendor"]["running"]["max"] >= 1
        assert level3["vendor"]["running"]["samples"] >= 3  # before, during, after
        # while the level ran its streams were in the engine; around it, it was idle
        assert level3["vendor"]["running"]["during_mean"] >= 1
        assert level3["vendor"]["running"]["during_samples"] >= 1
        # waiting is a sample too: a request sits in it until the engine's next step, and
        # one that arrives before the engine has let go of its stream's last request
        # finds the batch of 3 full for that moment; never more than the level's streams
        assert level3["vendor"]["waiting"]["max"] <= 3
        # the typed reading the page draws from holds every window's figures as written
        typed = result.summary.sections.vendor_metrics
        assert typed is not None and typed.levels[3].vendor is not None
        for windows, by_key in ((typed.phases, vm["phases"]),
                                (typed.levels, {int(k): w for k, w in vm["levels"].items()})):
            assert set(windows) == set(by_key)
            for key, window in windows.items():
                assert _given(dataclasses.asdict(window)) == _given(by_key[key]), key

    def test_an_unreachable_metrics_page_costs_nothing(self, reference: Any,
                                                       tmp_path: Path) -> None:
        srv = reference("gpu", mode="thread")
        config = ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                             phases=("connect", "baseline"),
                             # a page behind a token takes it in the query (the
                             # scraper sends no header): it must reach no file
                             metrics_url=srv.base_url + "/no-such-metrics?t=SeCrEt-42",
                             overrides={"baseline": {"requests": 2}})
        result = run_probe(config, tmp_path / "run")
        vm = (result.summary or {})["vendor_metrics"]
        assert result.validity == "valid" and vm["scrapes_ok"] == 0
        assert "HTTP 404" in vm["scrape_errors"][0] and vm["phases"] == {}
        assert vm["url"].endswith("/no-such-metrics?t=***")
        written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
        assert written and not [p.name for p in written if b"SeCrEt-42" in p.read_bytes()]


def _q5(vm: dict[str, Any] | None, validity: str = "valid") -> Any:
    answer = ObservabilityAnswer(observability="per_stream",
                                 export="Prometheus inter-token histogram",
                                 metrics_url="https://vendor.example/metrics")
    m = Summary((), None, None, None, None, False, validity=validity,
                sections=Sections.from_json({"vendor_metrics": vm}))
    return judge_q5(answer, Evidence(m), Tolerances())


def _vm(**over: Any) -> dict[str, Any]:
    base = {"url": "https://vendor.example/metrics", "engine": "vllm", "scrapes": 6,
            "scrapes_ok": 6, "scrape_errors": [], "per_stream_itl": True,
            "families": {"itl": "vllm:inter_token_latency_seconds"},
            "itl_observations": 120}
    return {**base, **over}


class TestQ5:
    def test_per_stream_itl_that_counted_our_tokens_is_ok(self) -> None:
        j = _q5(_vm())
        assert j.status == "ok" and "vllm:inter_token_latency_seconds" in j.reason
        assert "120 inter-token intervals" in j.reason
        assert j.measured is not None and j.measured.itl_observations == 120

    def test_no_per_stream_metric_is_unreconciled(self) -> None:
        j = _q5(_vm(per_stream_itl=False, itl_observations=0,
                    families={"tpot_req": "tgi_request_mean_time_per_token_duration"}))
        assert j.status == "unreconciled"
        assert "only the request-level tgi_request_mean_time_per_token_duration" in j.reason

    def test_a_page_of_an_unknown_engine_names_what_it_held(self) -> None:
        j = _q5(_vm(per_stream_itl=False, itl_observations=0, families={},
                    unrecognised_names=["newengine:queue_depth", "newengine:slots_busy"]))
        assert j.status == "unreconciled"
        assert "none of the metric families evalkit reads" in j.reason
        assert "newengine:queue_depth, newengine:slots_busy" in j.reason

    def test_a_histogram_that_counted_none_of_ours_is_unreconciled(self) -> None:
        j = _q5(_vm(itl_observations=0))
        assert j.status == "unreconciled" and "counted none of our streams" in j.reason

    def test_without_a_scrape_it_says_how_to_verify(self) -> None:
        j = _q5(None)
        assert j.status == "unverified"
        assert "--metrics-url https://vendor.example/metrics" in j.reason

    def test_a_failed_scrape_or_an_invalid_run_verifies_nothing(self) -> None:
        j = _q5(_vm(scrapes_ok=0, scrape_errors=["ConnectError: refused"]))
        assert j.status == "unverified" and "ConnectError" in j.reason
        assert _q5(_vm(), validity="invalid").status == "unverified"

    def test_request_level_stays_an_honest_gap(self) -> None:
        answer = ObservabilityAnswer(observability="request_level", export="Prometheus")
        m = Summary((), None, None, None, None, False, validity="valid",
                    sections=Sections.from_json({"vendor_metrics": _vm()}))
        j = judge_q5(answer, Evidence(m), Tolerances())
        assert (j.status, j.finding) == ("ok", "gap")


def test_quantile_of_an_empty_histogram() -> None:
    assert Histogram().quantile(0.5) is None and not math.isnan(Histogram().sum)


# --------------------------------------------------------------------------- after a kill


def _ramp_records(path: Path, level: int) -> int:
    return sum(f'"phase":"ramp","level":{level},' in line
               for line in path.read_text().splitlines())


@pytest.mark.slow
def test_a_killed_run_keeps_the_vendor_metrics(reference: Any, tmp_path: Path) -> None:
    """A probe with --metrics-url SIGKILLed mid-ramp wrote no summary, but appended every
    scrape to vendor_scrapes.jsonl as it went: the summary `runcheck` rebuilds from the
    records keeps vendor_metrics, and the baseline's vendor TTFT is the truth log's."""
    srv = reference("gpu", decode_base_ms=10, request_overhead_ms=1)
    out = tmp_path / "run"
    # levels of 8 requests, not 36: each still lasts the quick profile's 2.5 s, long
    # enough to be scraped before, during and after
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"extends": "quick", "ramp": {"level_min_requests": 8}}))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit.cli", "probe", "--tag-requests", "--base-url",
         srv.base_url, "--model", srv.model, "--out", str(out), "--phases", "baseline,ramp",
         "--levels", "1,2,4,8", "--output-tokens", "16", "--quiet", "--profile", str(profile),
         "--metrics-url", srv.base_url.removesuffix("/v1") + "/metrics"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    req = out / "requests.jsonl"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (not req.exists() or _ramp_records(req, 4) < 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL and not (out / "summary.json").exists()

    checked = read_run(out)
    vm = checked.summary["vendor_metrics"]
    assert vm["rebuilt_from"]["file"] == SCRAPES_FILE and vm["engine"] == "vllm"
    assert vm["per_stream_itl"] is True and vm["scrapes_ok"] == vm["scrapes"] >= 4
    assert any("re-derived from vendor_scrapes.jsonl" in n for n in checked.notes)
    # the baseline was scraped before and after: its vendor TTFT is the server's truth
    records = [json.loads(line) for line in req.read_text().splitlines()
               if line.endswith("}")]
    truth = {t["request_id"]: t for t in srv.truth()}
    ids = [r["id"] for r in records if r["phase"] == "baseline" and r["ttft_s"] is not None]
    firsts = [(truth[i]["first_write_ns"] - truth[i]["received_ns"]) / 1e9 for i in ids]
    base = vm["phases"]["baseline"]
    assert base["vendor"]["ttft_s"]["n"] == len(ids) == base["ours"]["ttft_s"]["n"]
    assert base["vendor"]["ttft_s"]["mean"] == pytest.approx(sum(firsts) / len(firsts),
                                                             rel=1e-9)
    # the levels that finished have their queue and batch samples (before, during,
    # after); the one the kill cut ends at its last sample and says so
    levels = vm["levels"]
    for lv in ("1", "2"):
        assert levels[lv]["vendor"]["running"]["samples"] >= 3 and "cut" not in levels[lv]
        assert levels[lv]["vendor"]["running"]["max"] >= 1
    cut = [d for d in levels.values() if d.get("cut")]
    assert len(cut) <= 1 and all(d["vendor"]["running"]["samples"] >= 2 for d in cut)
    assert checked.summary["validity"]["status"] == "degraded"  # cut: still says so


def test_a_torn_or_edited_scrape_log_is_read_bounded(tmp_path: Path) -> None:
    """Lines that are not scrapes (the kill's torn tail, an edit) are skipped and counted;
    a page the parser refuses is a failed scrape, not a crash."""
    log = tmp_path / SCRAPES_FILE
    good = {"phase": "baseline", "level": None, "t_ns": 1, "text": VLLM_PAGE, "error": None}
    lines = [json.dumps({"schema": "evalkit.vendor_scrapes/1", "url": "http://m/metrics"}),
             json.dumps({**good, "when": "before"}),
             json.dumps({**good, "when": "after", "text": "vllm:num_requests_running{ 1\n"}),
             json.dumps({**good, "when": "after"}), "[1, 2]",
             json.dumps({**good, "when": "sometime"}), '{"phase": "ramp", "le']
    log.write_text("\n".join(lines))
    url, scrapes, bad = read_log(log)
    assert url == "http://m/metrics" and len(scrapes) == 3 and bad == 3
    vm = digest_log(log, [])
    assert vm is not None and vm["scrapes"] == 3 and vm["scrapes_ok"] == 2
    assert vm["scrape_errors"][0].startswith("unparseable page")
    assert vm["phases"]["baseline"]["vendor"]["waiting"]["max"] == 7.0
    assert vm["rebuilt_from"]["skipped_lines"] == 3


def test_the_metrics_page_is_read_straight_as_the_streams_go(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The scraper uses no proxy from the environment, as a stream's client uses none:
    one run reaches the vendor one way (it once scraped through HTTP_PROXY while its
    streams went straight)."""
    import asyncio

    from evalkit.probe.run.scrape import VendorScraper
    from tests.probe.helpers import RawServer

    page = b"vllm:num_requests_running 3\n"
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(page), page)
    with RawServer([[answer]]) as proxy, RawServer([[answer]]) as vendor:
        for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        scraper = VendorScraper(vendor.url + "/metrics", timeout_s=2)

        async def go() -> None:
            await scraper.scrape("baseline", None, "before")
            await scraper.aclose()
        asyncio.run(go())
        assert proxy.connections == 0 and len(vendor.requests) == 1
    assert scraper.scrapes[0].error is None


# --------------------------------------------------------------------------- llama.cpp


def llama_page(prompt: float = 0, predicted: float = 0, decodes: float = 0,
               busy_per_decode: float = 0, processing: int = 0, deferred: int = 0) -> str:
    """A page as llama-server 0.3.36 writes it (tools/server/server-task.cpp `to_metrics`:
    HELP and TYPE before each line, counters then gauges, C++'s 6 significant digits)."""
    items = [("prompt_tokens_total", "counter", prompt),
             ("prompt_tokens_cached_total", "counter", 0),
             ("prompt_seconds_total", "counter", prompt / 4000),
             ("tokens_predicted_total", "counter", predicted),
             ("tokens_predicted_seconds_total", "counter", predicted / 250),
             ("n_decode_total", "counter", decodes), ("n_tokens_max", "counter", 80),
             ("prompt_tokens_seconds", "gauge", 4000), ("predicted_tokens_seconds", "gauge", 250),
             ("requests_processing", "gauge", processing),
             ("requests_deferred", "gauge", deferred),
             ("n_busy_slots_per_decode", "gauge", busy_per_decode)]
    return "".join(f"# HELP llamacpp:{n} what it is\n# TYPE llamacpp:{n} {t}\n"
                   f"llamacpp:{n} {v:.6g}\n" for n, t, v in items)


def _scrape(when: str, t_s: float, page: str, level: int = 8) -> Any:
    from evalkit.analysis.vendor_metrics import _Scrape, keep_lines, unknown_names

    kept = keep_lines(page)
    return _Scrape("ramp", level, when, int(t_s * 1e9), kept, None, unknown_names(page, kept))


class TestLlamaCpp:
    def test_its_names_fill_the_roles(self) -> None:
        snap = parse(llama_page(processing=8, deferred=5))
        assert snap.gauges["running"] == 8 and snap.gauges["waiting"] == 5
        assert snap.names["waiting"] == "llamacpp:requests_deferred"
        assert engine_of(list(snap.names.values())) == "llama.cpp"

    def test_counters_become_rates_per_level_and_the_mean_batch(self) -> None:
        """Over a level the counters' differences per wall second are the engine's
        token rates; its since-start mean of busy slots per decode becomes the level's."""
        from evalkit.analysis.vendor_metrics import digest

        before = llama_page(prompt=1000, predicted=2000, decodes=1000, busy_per_decode=1.5)
        # 400 calls at 6 slots each: (1.5 x 1000 + 6 x 400) / 1400 = 2.785714...
        during = llama_page(prompt=1200, predicted=2500, decodes=1200, busy_per_decode=2.2,
                            processing=8, deferred=4)
        after = llama_page(prompt=1640, predicted=4400, decodes=1400,
                           busy_per_decode=(1.5 * 1000 + 6 * 400) / 1400)
        vm = digest("http://m/metrics", [_scrape("before", 10, before),
                                         _scrape("during", 11, during),
                                         _scrape("after", 12, after)], [])
        assert vm["engine"] == "llama.cpp" and vm["unrecognised_names"] == []
        level = vm["levels"]["8"]["vendor"]
        assert level["window_s"] == pytest.approx(2.0)
        rates = level["counters"]
        assert rates["prompt_tokens_processed"] == {"delta": 640, "per_s": 320}
        assert rates["generated_tokens"]["per_s"] == 1200
        assert rates["decode_calls"]["delta"] == 400
        assert rates["decode_seconds"]["delta"] == pytest.approx(2400 / 250, rel=1e-5)
        assert level["busy_slots_per_decode"] == pytest.approx(6.0, abs=0.01)
        assert level["waiting"]["during_mean"] == 4 and level["running"]["max"] == 8
        # the engine restarted inside the level: nothing is counted, nothing goes negative
        vm = digest("u", [_scrape("before", 10, after), _scrape("after", 12, before)], [])
        assert vm["levels"]["8"]["vendor"]["counters"]["generated_tokens"] is None
        assert vm["levels"]["8"]["vendor"]["busy_slots_per_decode"] is None

    def test_a_mean_its_digits_cannot_resolve_is_not_given(self) -> None:
        """After 10 million decode calls the page's 6 significant digits hide a
        2,000-call level's mean batch: it is left out, not made up."""
        from evalkit.analysis.vendor_metrics import digest

        vm = digest("u", [_scrape("before", 0, llama_page(decodes=1e7, busy_per_decode=3.1)),
                          _scrape("after", 1, llama_page(decodes=1e7 + 2000,
                                                         busy_per_decode=3.1))], [])
        assert vm["levels"]["8"]["vendor"]["busy_slots_per_decode"] is None

    def test_an_unknown_page_says_which_names_it_held(self, tmp_path: Path) -> None:
        """A page of no engine known here keeps its metric names (valid names only, a
        bounded number) in vendor_metrics, and they survive the scrape log."""
        from evalkit.analysis.vendor_metrics import MAX_UNKNOWN_NAMES, digest
        from evalkit.probe.run.scrape import VendorScraper

        page = ("# HELP newengine:queue_depth requests queued\n"
                "# TYPE newengine:queue_depth gauge\nnewengine:queue_depth{gpu=\"0\"} 3\n"
                "newengine:queue_depth{gpu=\"1\"} 1\nnewengine:slots_busy 2\n"
                "evil\x1b]0;owned\x07_name 1\n" + "x" * 5000 + " 1\n"
                + "".join(f"filler_{i} 1\n" for i in range(100)))
        scrapes = [_scrape("before", 0, page), _scrape("after", 1, page)]
        vm = digest("u", scrapes, [])
        names = vm["unrecognised_names"]
        assert vm["engine"] is None and vm["families"] == {}
        assert names[:3] == ["newengine:queue_depth", "newengine:slots_busy", "filler_0"]
        assert len(names) == MAX_UNKNOWN_NAMES
        # written to the scrape log as the scraper writes it, and read back the same
        log = tmp_path / SCRAPES_FILE
        scraper = VendorScraper("u", log=log)
        for s in scrapes:
            scraper._keep(s)
        scraper.summary([])
        assert read_log(log)[1][0].names == scrapes[0].names
        assert digest_log(log, [])["unrecognised_names"] == names  # type: ignore[index]
        # a recognised page keeps none
        assert _scrape("after", 1, VLLM_PAGE).names == ()


def test_a_logged_scrape_is_kept_on_disk_not_in_memory(reference: Any, tmp_path: Path
                                                       ) -> None:
    """At one a second a day-long soak would hold tens of thousands of pages: a scrape the
    log took is read back for the summary, and memory keeps none of them. A log that
    cannot be written loses nothing: its scrapes stay in memory for the summary."""
    import asyncio

    from evalkit.probe.run.scrape import VendorScraper

    srv = reference("gpu", mode="thread")
    url = srv.base_url.removesuffix("/v1") + "/metrics"

    def scraped(log: Path) -> tuple[VendorScraper, dict[str, Any]]:
        scraper = VendorScraper(url, timeout_s=2, log=log)

        async def go() -> None:
            await scraper.scrape("soak", 4, "before")
            for _ in range(5):
                await scraper.scrape("soak", 4, "during")
            await scraper.scrape("soak", 4, "after")
            await scraper.aclose()
        asyncio.run(go())
        return scraper, scraper.summary([])

    logged, vm = scraped(tmp_path / SCRAPES_FILE)
    assert logged.scrapes == [] and vm["scrapes"] == vm["scrapes_ok"] == 7
    assert vm["engine"] == "vllm" and vm["levels"]["4"]["vendor"]["running"]["samples"] == 7
    rebuilt = digest_log(tmp_path / SCRAPES_FILE, [])
    assert rebuilt is not None and rebuilt.pop("rebuilt_from")["scrapes"] == 7
    assert vm == rebuilt  # the same figures as re-derivation's
    unlogged, vm = scraped(tmp_path)  # a directory: the log cannot be opened
    assert len(unlogged.scrapes) == 7 and vm["scrapes"] == vm["scrapes_ok"] == 7
