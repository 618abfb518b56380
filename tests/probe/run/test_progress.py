"""The probe's closing lines (`evalkit.probe.run.progress.summary_lines`), read from the
typed `Summary` the run's write-up hands back, say word for word what they said when
they were read from the summary's dict (issue 42): the lines below were printed by that
reading, on the same documents, before the move. A real reference run through the CLI
then prints the lines of the summary.json it wrote, each level's figures its own.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.cli import cli
from evalkit.probe.run.progress import summary_lines

REPORT_RUN = Path(__file__).resolve().parents[2] / "data" / "report_run" / "summary.json"


def _report_run() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(REPORT_RUN.read_text())
    return doc


def _everything_else() -> dict[str, Any]:
    """The report run with each branch the run above leaves out: a floor under the
    prefill rate, a tie, reconnects and configuration refusals, a bound client outside
    the judgement, the buyer's workload and a trace cut short, a degraded run."""
    doc = copy.deepcopy(_report_run())
    doc["prefill"] = {"tokens_per_s": None, "tokens_per_s_at_least": 150000.0,
                      "reason": "the slope is indistinguishable from zero: faster than "
                                "150,000 prompt tokens/s"}
    levels = doc["ramp"]["levels"]
    levels[1].update(reconnects=2, configuration_failures=3)
    levels[2].update(status="tie", ties=["ttft", "itl"])
    doc["ramp"].update(first_degraded=None, max_sustained_concurrency=8,
                       first_tie_concurrency=4,
                       note="level 4 is a tie (ttft, itl: its 95 % interval straddles the "
                            "limit), so the max sustained level may be higher")
    doc["configuration"]["findings"] = [{
        "status": 400, "message": "request (9000 tokens) exceeds the context size",
        "requests": 5, "phases": {"baseline": 2, "ramp": 3},
        "change": "ask the vendor for a longer context per request"}]
    doc["reconnects"] = 5
    doc["workload"] = {"levels": [{"users": 2, "client_bound": True, "shapes": {"chat": {
        "units": 4, "units_complete": 3, "ttft_s": {"p90": 0.25},
        "goodput": {"interactive_chat": {"fraction": 0.75}}}}}]}
    doc["trace"] = {"requests": 10, "planned": 12, "complete": False,
                    "outcomes": {"ok": 9, "timeout": 1}, "send_lag_s": {"p99": 0.004},
                    "ttft_s": {"p90": 0.3}}
    doc["client"].update(client_bound=True, capacity_judgement_affected=False,
                         client_bound_phases=["soak"], client_bound_levels=[16])
    doc["validity"].update(status="degraded", reasons=["soak: 1 of 40 requests failed",
                                                       "the stream arrived buffered"])
    return doc


def _nothing_held() -> dict[str, Any]:
    """A run that could judge no level, with a bound client where the judgement is drawn,
    a prefill rate without an interval, and a validity of invalid."""
    doc = copy.deepcopy(_report_run())
    doc["prefill"]["tokens_per_s_ci"] = [18000.0, None]
    doc["ramp"].update(first_degraded=None, max_sustained_concurrency=None,
                       first_tie_concurrency=None, note=None)
    doc["client"].update(client_bound=True, capacity_judgement_affected=True)
    doc["validity"].update(status="invalid", reasons=["baseline: no request succeeded"])
    return doc


LEVELS = [
    "  c=   1: TTFT p90 217.8 ms, TPOT p90 20.5 ms, aggregate 36 tok/s, outcomes ok 40",
    "  c=   2: TTFT p90 225.7 ms, TPOT p90 21.6 ms, aggregate 69 tok/s, outcomes ok 40",
    "  c=   4: TTFT p90 247.6 ms, TPOT p90 23.6 ms, aggregate 126 tok/s, outcomes ok 40",
    "  c=   8: TTFT p90 323.8 ms, TPOT p90 26.8 ms, aggregate 210 tok/s, outcomes ok 40",
    "  c=  16: TTFT p90 1273.1 ms, TPOT p90 31.8 ms, aggregate 193 tok/s, outcomes ok 63, "
    "rejected 1  [breached]"]
INTERVALS = [
    "intervals: each level's TTFT p90 with its 95 % interval (n; the interval's ends as "
    "percentiles of what was measured)",
    "  c=   1: 216–220 ms (n 40; p80–p100, 20.0 points wide)",
    "  c=   2: 220–229 ms (n 40; p80–p100, 20.0 points wide)",
    "  c=   4: 242–252 ms (n 40; p80–p100, 20.0 points wide)",
    "  c=   8: 320–329 ms (n 40; p80–p100, 20.0 points wide)",
    "  c=  16: 1265–1310 ms (n 63; p83–p98, 15.9 points wide)"]
BASELINE = "baseline: TTFT p50 197.5 ms, p90 203.4 ms; TPOT p50 19.8 ms; ITL p50 19.8 ms"

#: each document, and the lines the dict reading printed for it
SAID: dict[str, tuple[Callable[[], dict[str, Any]], list[str]]] = {
    "report run": (_report_run, [
        BASELINE,
        "prefill: 20,076 prompt tokens/s, 95 % interval 19,683–20,486 (r² 1.00)",
        *LEVELS, *INTERVALS,
        "ramp: max sustained concurrency 8, first degraded: ttft (at concurrency 16)",
        "validity: valid"]),
    "everything else": (_everything_else, [
        BASELINE,
        "prefill: the slope is indistinguishable from zero: faster than 150,000 prompt "
        "tokens/s",
        LEVELS[0], LEVELS[1] + "; 2 reconnects, 3 configuration",
        LEVELS[2] + "  [tie: ttft, itl]", *LEVELS[3:], *INTERVALS,
        'configuration: HTTP 400 "request (9000 tokens) exceeds the context size" for 5 '
        "requests (baseline 2, ramp 3), alone as under load: not counted as load; ask the "
        "vendor for a longer context per request",
        "reconnects: 5 requests went out again on a fresh connection (the server had "
        "closed the reused one as they reached it, unanswered): timed from their first "
        "send, not counted as errors",
        "ramp: no level breached; max sustained concurrency 8 is a lower bound",
        "ramp: level 4 is a tie (ttft, itl: its 95 % interval straddles the limit), so the "
        "max sustained level may be higher",
        "  workload chat at 2 users: 3 of 4 units complete, TTFT p90 250.0 ms, interactive "
        "chat goodput 75%  [client-bound]",
        "trace: 10 of 12 (cut short) requests, outcomes ok 9, timeout 1; sent behind "
        "schedule p99 4.0 ms; TTFT p90 300.0 ms",
        "client: the client was the bottleneck in soak, level 16 only; the capacity "
        "judgement is unaffected",
        "validity: degraded: soak: 1 of 40 requests failed",
        "  also: the stream arrived buffered"]),
    "nothing held": (_nothing_held, [
        BASELINE,
        "prefill: 20,076 prompt tokens/s, no interval: too few prompt lengths (r² 1.00)",
        *LEVELS, *INTERVALS,
        "ramp: no capacity conclusion: no level was judged",
        "client: the client was the bottleneck where the capacity judgement is drawn; no "
        "capacity conclusion comes from this run",
        "RUN INVALID: baseline: no request succeeded"]),
}


def test_the_closing_lines_read_from_typed_fields_say_what_the_dict_said() -> None:
    for name, (document, said) in SAID.items():
        assert summary_lines(Summary.from_json(document())) == said, name
    assert summary_lines(None) == ["no summary (no request completed)"]


def test_a_summary_stating_no_validity_is_not_read_as_valid() -> None:
    """A summary whose validity is missing or none the probe knows says it was not
    assessed, and the run reads invalid (the CLI then exits 2), never valid."""
    from evalkit.probe.suite import RunResult

    for validity in (None, {"status": "fine", "reasons": []}):
        doc = {**_report_run(), "validity": validity}
        typed = Summary.from_json(doc)
        assert summary_lines(typed)[-1] == \
            "validity: not assessed (a summary from an older evalkit)"
        assert RunResult(Path("run"), "complete", 1, typed).validity == "invalid"


def test_a_reference_run_prints_the_lines_of_the_summary_it_wrote(
        reference: Callable[..., Any], tmp_path: Path) -> None:
    """`evalkit probe` on the reference endpoint: its closing lines are those of the
    summary.json on disk, and each level's figures are that level's (read by key here,
    from the document: the contract the typed fields must agree with)."""
    srv = reference("headline", request_overhead_ms=5, decode_base_ms=2)
    profile = tmp_path / "profile.json"
    # (a loaded CI host must not make the client the bottleneck: not this test's subject)
    profile.write_text(json.dumps({
        "extends": "quick", "connect": {"rtt_samples": 2}, "baseline": {"requests": 8},
        "canaries": {"count": 0}, "ramp": {"level_duration_s": 1.0},
        "client_check": {
            "loop_lag_p99_s": 60, "cpu_fraction": 100, "coalesced_fraction": 1,
            "send_lag_fraction": 100}}))
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, [
        "probe", "--base-url", srv.base_url, "--model", srv.model, "--out", str(out),
        "--phases", "connect,baseline,ramp", "--levels", "1,2", "--output-tokens", "8",
        "--profile", str(profile), "--quiet"])
    doc = json.loads((out / "summary.json").read_text())
    lines = summary_lines(Summary.from_json(doc))
    assert r.exit_code == 0 and doc["validity"]["status"] == "valid", r.output
    assert r.stdout.splitlines() == [
        *lines, f"complete, valid: {doc['requests']} requests written to {out}"], r.output
    assert lines[0].startswith("baseline: TTFT p50 ")
    for lv in doc["ramp"]["levels"]:
        line = next(x for x in lines if x.startswith(f"  c={lv['concurrency']:>4}: TTFT"))
        ttft, tpot = (float(v) for v in re.findall(r"p90 ([\d.]+) ms", line))
        assert ttft == round(lv["ttft_s"]["p90"] * 1000, 1)
        assert tpot == round(lv["tpot_s"]["p90"] * 1000, 1)
        assert f"outcomes ok {lv['outcomes']['ok']}" in line
    assert lines[-1] == "validity: valid"
