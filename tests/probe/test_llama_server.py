"""evalkit against llama.cpp's own C++ server with parallel slots (`llama-server`).

The engine batches: 8 slots, continuous batching, one KV cache for all of them
(`engines.native_server`), the tiny random-weight GGUF the tests write
(`engines.tiny_gguf`). One probe of it (connect, baseline, a 1-16 ramp, canaries, its
Prometheus page scraped) is shared by this module's tests, each of which reads one
thing from it. What this engine does, as measured here on 2 shared CPU cores:

- a level of at most 8 streams runs them all at once (its `requests_processing` is
  the level, its `requests_deferred` 0, its mean batch per decode call near the level);
  at 16, 8 run and up to 8 wait for a slot: their first token waits a whole request;
- on a CPU a decode step of 8 costs about 2-3 times a step of 1 (a GPU's costs little
  more), and a prompt's prefill is compute-bound, so closed-loop prompts that arrive
  together are prefilled one after another: TTFT can break below 16 already, the
  engine's own prompt time growing with it while nothing waits for a slot;
- it ends each stream with its `timings` (prompt and predicted tokens and ms), and
  closes the connection after every streamed response while advertising keep-alive;
- its temperature-0 answers mostly stay the same under batching, and the few that
  change change alone too (a cached prompt is another computation).

The streams' 0 errors at every level need the transport's re-send of a request the
server closed under (branch `reconnects`): without it 1-3 requests a run die with
"Server disconnected without sending a response.", charged to the vendor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalkit.analysis.summary import Summary
from evalkit.probe.apis.base import OpenAIChat
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.records import RequestRecord
from evalkit.rundir.store import read_run_files
from tests.engines.native_server import NativeServer, server_binary

SLOTS = 8
LEVELS = (1, 2, 4, 8, 16)


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeServer]:
    """llama-server on the tiny model, 8 slots, started once for the module (~0.2 s)."""
    from tests.engines.tiny_gguf import build_tiny_gguf

    here = tmp_path_factory.mktemp("native")
    gguf = build_tiny_gguf(here / "tiny.gguf")
    with NativeServer(gguf, here / "server.log", slots=SLOTS) as srv:
        yield srv


@dataclass(frozen=True)
class Probed:
    """One probe of the engine: its run directory, read back."""

    run_dir: Path
    #: the run's typed summary (`RunResult.summary`), read by key as summary.json's keys
    summary: Summary
    meta: dict[str, Any]
    records: list[RequestRecord]

    def level(self, c: int) -> dict[str, Any]:
        return next(lv for lv in self.summary["ramp"]["levels"] if lv["concurrency"] == c)

    def vendor(self, c: int) -> dict[str, Any]:
        return dict(self.summary["vendor_metrics"]["levels"][str(c)]["vendor"])


@pytest.fixture(scope="module")
def probed(native: NativeServer, tmp_path_factory: pytest.TempPathFactory) -> Probed:
    """The probe every test here reads (about a minute): a 16-request baseline, levels
    1-16 of at least 36 requests each, a canary every third request, the metrics page
    scraped around and during each level."""
    out = tmp_path_factory.mktemp("probed") / "run"
    res = run_probe(ProbeConfig(
        native.base_url, native.model, phases=("connect", "baseline", "ramp"), levels=LEVELS,
        metrics_url=native.metrics_url,
        overrides={
            # short prompts, longer answers: a level is mostly decoding, as a chat is
            "prompt_tokens": 16, "output_tokens": 48, "connect": {"rtt_samples": 3},
            "baseline": {"requests": 16},
            # every level runs, whatever breaches below it (confirm_levels)
            "ramp": {"level_duration_s": 1.5, "confirm_levels": len(LEVELS)},
            # at 1x and 2x the slots a canary is every third request: 12 a level
            "canaries": {"count": 4, "alone_repeats": 2, "every": 3},
            # the engine writes two of its few-ms-apart tokens together now and then, and
            # two shared cores read some late (as in test_llama_cpp's serial ramp)
            "client_check": {"coalesced_fraction": 0.10}}), out)
    meta, records = read_run_files(out)
    assert res.status == "complete" and res.summary is not None, meta.get("error")
    return Probed(out, res.summary, meta, records)


# --------------------------------------------------------------------------- the build


def test_a_missing_server_fails_the_test_naming_make_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no built binary answers, the tests fail, never skip, and say what to run; a
    cached one that answers `--version` is used and not rebuilt."""
    import tools.llama_server as build

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"run `make install`"):
        server_binary()
    path = build.binary_path()
    assert path == tmp_path / "evalkit" / f"llama.cpp-{build.pinned_version()}" / "bin" / \
        "llama-server"
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    with pytest.raises(pytest.fail.Exception, match=r"make install"):
        server_binary()  # there, but it does not answer
    path.write_text("#!/bin/sh\necho 'version: 1 (stand-in)'\n")
    assert server_binary() == path
    monkeypatch.setattr(build, "build", lambda v: pytest.fail("rebuilt a cached binary"))
    assert build.main(["llama_server.py"]) == 0


# --------------------------------------------------------------------------- the engine


def test_its_last_chunk_carries_its_own_timings(native: NativeServer) -> None:
    """llama-server ends a stream with `timings` in the chunk before [DONE]; the adapter
    reads them, typed, and a chunk without them reads as none."""
    body = {"model": native.model, "messages": [{"role": "user", "content": "hello there"}],
            "max_tokens": 5, "stream": True}
    with httpx.Client(timeout=30) as client:
        raw = client.post(f"{native.base_url}/chat/completions", json=body).text
    events = [e.removeprefix("data: ") for e in raw.split("\n\n") if e.startswith("data: ")]
    assert events[-1] == "[DONE]"
    last = json.loads(events[-2])
    assert set(last["timings"]) >= {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms",
                                    "cache_n"}
    read = OpenAIChat().parse(events[-2]).timings
    assert read is not None and read.output_tokens == 5 == last["timings"]["predicted_n"]
    assert read.prompt_s == pytest.approx(last["timings"]["prompt_ms"] / 1000)
    assert all(OpenAIChat().parse(e).timings is None for e in events[:-2])


# --------------------------------------------------------------------------- the probe


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_ramp_names_ttft_and_the_engine_queues_above_its_slots(probed: Probed) -> None:
    """At 16 streams half wait for a slot: TTFT breaks there, the engine's own waiting
    count says so, and its own prompt time says the wait is not in its prefill. Below
    the slots nothing waits (deferred 0), whatever broke there."""
    s, ramp = probed.summary, probed.summary["ramp"]
    # every request of every level answered (needs branch `reconnects`: the server
    # closes after each stream, and a request written as it closed must not count)
    assert [lv["outcomes"]["ok"] for lv in ramp["levels"]] == \
        [lv["requests"] for lv in ramp["levels"]], [lv["outcomes"] for lv in ramp["levels"]]
    assert [lv["concurrency"] for lv in ramp["levels"]] == list(LEVELS)
    # what degrades first on this CPU is latency, TTFT or ITL by the machine's load
    # (module docstring); never an error, a changed answer or a shorter one
    assert ramp["first_degraded"] in ("ttft", "itl"), {k: ramp[k] for k in (
        "first_degraded", "first_breach_concurrency", "note")}
    # above the slots the queue dominates: TTFT breaks, by far the most of any metric
    top = probed.level(16)
    assert top["status"] == "breached" and "ttft" in top["breaches"], top["breaches"]
    assert top["excess"]["ttft"] > 2 * max(v for k, v in top["excess"].items() if k != "ttft")
    # the engine's waiting count: nothing waits at or below its slots, a queue above
    for c in LEVELS:
        waiting = probed.vendor(c)["waiting"]
        if c <= SLOTS:
            assert waiting["max"] == 0, (c, waiting)
        else:
            assert waiting["during_mean"] >= 1 and waiting["max"] >= SLOTS / 2, waiting
    # where the first token's time went, by the engine's own account: at 16 our TTFT
    # exceeds its prompt time by about a whole request (the wait for a slot, which its
    # prompt time does not see); at or below the slots by the HTTP front only
    beyond = {c: probed.level(c)["engine_timings"]["ttft_beyond_prompt_s"]["p50"]
              for c in LEVELS}
    assert beyond[16] > 0.5 * probed.level(SLOTS)["e2e_s"]["p50"], beyond
    assert beyond[16] > 10 * max(beyond[c] for c in LEVELS if c <= SLOTS), beyond
    # TTFT breaking at or below the slots is the engine's own prefill, not a queue: its
    # prompt time there grew with ours (prompts that arrive together, on a CPU)
    first = probed.level(ramp["first_breach_concurrency"])
    if first["concurrency"] <= SLOTS and "ttft" in first["breaches"]:
        alone = s["baseline"]["engine_timings"]["prompt_s"]["p90"]
        assert first["engine_timings"]["prompt_s"]["p90"] > alone


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_its_metrics_page_is_read(probed: Probed) -> None:
    """`llamacpp:*` is llama.cpp's: running and waiting per level, its token counters as
    rates, and its mean batch, which says the slots were batched."""
    vm = probed.summary["vendor_metrics"]
    assert vm["engine"] == "llama.cpp" and vm["scrapes_ok"] == vm["scrapes"] > 10
    assert vm["families"]["running"] == "llamacpp:requests_processing"
    assert vm["families"]["waiting"] == "llamacpp:requests_deferred"
    assert vm["unrecognised_names"] == []
    for c in LEVELS:
        v = probed.vendor(c)
        # the streams the engine ran while the level ran: the level, up to its slots
        assert v["running"]["max"] == min(c, SLOTS), (c, v["running"])
        # its generated tokens over the level are the tokens its timings gave us, one
        # for one: the page counts what the streams carried
        ours = sum(r.engine_output_tokens or 0 for r in probed.records
                   if r.phase == "ramp" and r.level == c)
        assert v["counters"]["generated_tokens"]["delta"] == ours > 0, c
        assert v["counters"]["generated_tokens"]["per_s"] > 0
    # one decode call served about as many streams as ran: continuous batching
    assert probed.vendor(1)["busy_slots_per_decode"] == pytest.approx(1.0, abs=0.05)
    assert probed.vendor(SLOTS)["busy_slots_per_decode"] > SLOTS / 2


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_engines_timings_sit_beside_ours(probed: Probed) -> None:
    """Every ok stream carried the engine's timings into its record; per level the
    engine's prompt time is never more than our TTFT of the same request."""
    ok = [r for r in probed.records if r.outcome == "ok" and r.phase != "connect"]
    assert ok and all(r.engine_prompt_s is not None and r.engine_output_tokens
                      for r in ok), [r.id for r in ok if r.engine_prompt_s is None][:5]
    for r in ok:
        assert r.ttft_s is not None and r.engine_prompt_s is not None
        assert r.engine_prompt_s <= r.ttft_s, r.id        # the engine saw less of it
        assert r.engine_output_tokens == len(r.chunks)     # one chunk a token, here
    for c in LEVELS:
        e = probed.level(c)["engine_timings"]
        assert e["requests"] == probed.level(c)["outcomes"]["ok"]
        assert e["ttft_beyond_prompt_s"]["p50"] >= 0


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_precision_holds_under_batching(probed: Probed) -> None:
    """Canaries at 1x and 2x the slots: evalkit does not accuse this engine of degrading
    precision. Its temperature-0 answers are not all fixed: now and then one answers
    otherwise, alone as well as under load (a prompt its cache served is another
    computation, and a random-weight model has near-ties), so a level's match rate is
    judged against the engine's own rate alone, never against 100 %."""
    p = probed.summary["precision"]
    assert p is not None and p["alone"]["answers"] == 8, p["alone"]
    assert p["alone"]["match_rate"] is not None and p["alone"]["match_rate"] >= 0.5
    for lv in p["levels"]:
        if lv["concurrency"] >= SLOTS:
            assert lv["compared"] >= 8, lv
        assert lv["status"] in ("held", "tie"), lv
        assert lv["models_seen"] == ["evalkit-tiny"] and not lv["models_not_seen_alone"]
    assert p["degraded_at"] is None
    assert probed.summary["ramp"]["first_degraded"] != "precision"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_report_draws_its_queue(probed: Probed, tmp_path: Path) -> None:
    """The scorecard's throughput chart gets the engine's running and waiting requests
    per level, and the appendix sets its prompt time beside our TTFT."""
    from evalkit.render.charts.ramp import vendor_queue
    from evalkit.render.report import render_report

    queue = vendor_queue(probed.summary.sections.vendor_metrics)
    assert sorted(queue) == list(LEVELS)
    assert queue[16]["waiting"][0] > 0 and queue[SLOTS]["waiting"] == (0.0, 0.0)
    result = render_report(probed.run_dir, None, tmp_path / "card.pdf", html=True)
    page = (tmp_path / "card.html").read_text()
    assert "requests running and waiting" in page
    assert "own account beside ours</h3>" in page
    assert result is not None and (tmp_path / "card.pdf").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_an_engine_whose_answers_flip_on_rounding_is_not_accused(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """On a GGUF whose every top logit has a twin within rounding, llama-server's
    temperature-0 answers change with any change in its arithmetic: a cached prompt
    alone, another batch under load. Its answers alone never repeat, so answers under
    load have nothing to match: evalkit neither accuses it of degrading precision (not
    even at level 1, as it did when a reference counted as matching itself) nor passes
    it."""
    from tests.engines.tiny_gguf import TinyModel, build_tiny_gguf

    here = tmp_path_factory.mktemp("twins")
    gguf = build_tiny_gguf(here / "twins.gguf", TinyModel(twin_noise=1e-7))
    with NativeServer(gguf, here / "server.log", slots=SLOTS) as srv:
        res = run_probe(ProbeConfig(
            srv.base_url, srv.model, phases=("connect", "baseline", "ramp"), levels=(1, SLOTS),
            overrides={"prompt_tokens": 16, "output_tokens": 16, "connect": {"rtt_samples": 1},
                       "baseline": {"requests": 8},
                       "ramp": {"level_duration_s": 0.5, "level_min_requests": 16,
                                "confirm_levels": 2},
                       "canaries": {"count": 4, "alone_repeats": 2, "every": 2},
                       "client_check": {"coalesced_fraction": 0.10}}), here / "run")
    s = res.summary
    assert res.status == "complete" and s is not None
    p = s["precision"]
    # each canary answered twice alone, differently: it never agrees with itself
    assert p["alone"]["answers"] == 8 and p["alone"]["distinct"] >= 7, p["alone"]
    assert p["alone"]["match_rate"] is not None and p["alone"]["match_rate"] <= 0.25
    assert [lv["concurrency"] for lv in p["levels"]] == [1, SLOTS]
    assert all(lv["compared"] >= 4 and lv["matches"] < lv["compared"] for lv in p["levels"])
    assert [lv["status"] for lv in p["levels"]] == ["not_measured"] * 2, p["levels"]
    assert p["degraded_at"] is None and s["ramp"]["first_degraded"] != "precision"
    assert all(lv["models_seen"] == ["evalkit-tiny"] for lv in p["levels"])
