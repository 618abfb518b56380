"""Run validity (fail closed): a run that measured nothing never reads as one that found
nothing wrong. Pure tests on counts and on records built to fail in known ways."""

from __future__ import annotations

import dataclasses

import pytest

from evalkit.analysis.summarize import summarize
from evalkit.analysis.summary import Summary
from evalkit.analysis.validity import group_validity, run_validity
from evalkit.probe.run.progress import summary_lines
from evalkit.records import RequestRecord

LIMIT = 0.01


def _counts(ok: int = 0, **failed: int) -> dict[str, int]:
    return {"ok": ok, **failed}


class TestGroup:
    """One phase's or level's validity from its outcomes."""

    @pytest.mark.parametrize(("ok", "failed", "status"), [
        (0, {}, "invalid"),                 # nothing sent
        (0, {"error": 6}, "invalid"),       # nothing succeeded
        (2, {"error": 3}, "invalid"),       # most failed (2 of 5 ok)
        (3, {"timeout": 3}, "degraded"),    # half ok is not "most failed"
        (99, {"incomplete": 1}, "valid"),   # 1 % is within the 1 % limit
        (98, {"rejected": 2}, "degraded"),  # 2 % is not
        (10, {}, "valid"),
    ])
    def test_status_follows_the_outcomes(self, ok: int, failed: dict[str, int],
                                         status: str) -> None:
        """The boundaries: none ok, under half ok, over the failure limit, within it."""
        n = ok + sum(failed.values())
        v = group_validity(n, _counts(ok, **failed), max_failure_rate=LIMIT)
        assert v["status"] == status

    def test_reasons_name_the_outcomes_and_the_error(self) -> None:
        """A reader sees which outcomes failed and the error to fix first."""
        v = group_validity(6, _counts(0, error=5, timeout=1), max_failure_rate=LIMIT,
                           top_error="HTTP 501: Unsupported method (x5)")
        [reason] = v["reasons"]
        assert "6 of 6" in reason
        assert "error 5" in reason and "timeout 1" in reason
        assert "HTTP 501" in reason

    def test_a_client_bound_group_is_degraded_not_valid(self) -> None:
        """The client's own bottleneck lowers a clean group to degraded, never higher."""
        assert group_validity(10, _counts(10), max_failure_rate=LIMIT,
                              client_bound=True)["status"] == "degraded"
        assert group_validity(10, _counts(0, error=10), max_failure_rate=LIMIT,
                              client_bound=True)["status"] == "invalid"


def _phase(status: str, ok: int = 5) -> dict[str, object]:
    return {"status": status, "reasons": [f"{status} reason"], "ok": ok}


class TestRun:
    """The run's validity rests on the phases every judgement leans on."""

    def test_a_failed_connect_gate_is_invalid(self) -> None:
        """The gate's first line is the reason; later lines (advice) are not repeated."""
        v = run_validity({"connect": _phase("invalid", 0)}, run_status="failed",
                         capacity_judgement_affected=False,
                         run_error="POST /v1/chat/completions answered HTTP 404\nwhat to try: x")
        assert v["status"] == "invalid"
        assert v["reasons"] == ["the connect gate failed: POST /v1/chat/completions answered "
                                "HTTP 404"]

    def test_a_baseline_without_success_is_invalid_whatever_the_ramp_did(self) -> None:
        """SPEC: a run whose baseline has no ok request is invalid."""
        v = run_validity({"connect": _phase("valid"), "baseline": _phase("invalid", 0),
                          "ramp": _phase("valid", 100)}, run_status="complete",
                         capacity_judgement_affected=False)
        assert v["status"] == "invalid"
        assert any(r.startswith("baseline:") for r in v["reasons"])

    def test_no_success_anywhere_is_invalid(self) -> None:
        """Without a baseline phase, a run with no ok request at all is still invalid."""
        v = run_validity({"ramp": _phase("invalid", 0)}, run_status="complete",
                         capacity_judgement_affected=False)
        assert v["status"] == "invalid"

    def test_nothing_after_the_connect_check_is_invalid(self) -> None:
        """The connect gate's one stream measures nothing: a workload (or trace) run whose
        every request failed past it is invalid, not valid on the gate's success."""
        for phase in ("workload", "trace"):
            v = run_validity({"connect": _phase("valid"), phase: _phase("invalid", 0)},
                             run_status="complete", capacity_judgement_affected=False)
            assert v["status"] == "invalid"
            assert "no request succeeded after the connect check" in v["reasons"]
            # failures in it degrade the run, as the soak's do
            v = run_validity({"connect": _phase("valid"), "baseline": _phase("valid"),
                              phase: _phase("degraded")}, run_status="complete",
                             capacity_judgement_affected=False)
            assert v["status"] == "degraded"
            assert any(r.startswith(f"{phase}:") for r in v["reasons"])

    @pytest.mark.parametrize(("phases", "status", "affected", "expected"), [
        ({"baseline": _phase("valid")}, "complete", False, "valid"),
        ({"baseline": _phase("valid")}, "interrupted", False, "degraded"),
        ({"baseline": _phase("valid")}, "running", False, "degraded"),
        ({"baseline": _phase("valid")}, "complete", True, "degraded"),
        ({"baseline": _phase("valid"), "prefill": _phase("invalid", 0)}, "complete", False,
         "degraded"),
        ({"baseline": _phase("degraded")}, "complete", False, "degraded"),
        # ramp levels that fail are the finding, not a defect of the run
        ({"baseline": _phase("valid"), "ramp": _phase("invalid", 3)}, "complete", False,
         "valid"),
    ])
    def test_degraded_when_what_judgements_rest_on_is_weak(
            self, phases: dict[str, dict[str, object]], status: str, affected: bool,
            expected: str) -> None:
        """Cut short, a weak groundwork phase, a client bottleneck where it matters."""
        v = run_validity(phases, run_status=status, capacity_judgement_affected=affected)
        assert v["status"] == expected
        assert bool(v["reasons"]) == (expected != "valid")


def _ok(rid: str, phase: str, level: int, t0: float, ttft: float, gap: float,
        tokens: int = 8) -> RequestRecord:
    chunks = [(ttft + i * gap, 1) for i in range(tokens)]
    return RequestRecord(id=rid, phase=phase, level=level, outcome="ok", t0_s=t0,
                         output_tokens=tokens, output_tokens_estimated=False,
                         usage_completion_tokens=tokens, ttft_s=ttft, e2e_s=chunks[-1][0],
                         chunks=chunks, http_status=200, finish_reason="length",
                         end_s=chunks[-1][0])


def _err(rid: str, phase: str, level: int, t0: float, status: int = 500) -> RequestRecord:
    outcome = "rejected" if status in (429, 503) else "error"
    return RequestRecord(id=rid, phase=phase, level=level, outcome=outcome, t0_s=t0,
                         http_status=status, error=f"HTTP {status}: boom", end_s=0.001)


def _run(ramp: dict[int, tuple[int, int]], baseline_ok: int = 6) -> list[RequestRecord]:
    """Baseline, then ramp levels {concurrency: (ok, errors)} with healthy latencies."""
    recs = [_ok(f"b{i}", "baseline", 1, i, 0.2, 0.02) for i in range(baseline_ok)]
    recs += [_err(f"be{i}", "baseline", 1, 10 + i) for i in range(6 - baseline_ok)]
    t = 20.0
    for c, (ok, bad) in ramp.items():
        recs += [_ok(f"r{c}-{i}", "ramp", c, t + i * 0.01, 0.2, 0.02) for i in range(ok)]
        recs += [_err(f"e{c}-{i}", "ramp", c, t + i * 0.01) for i in range(bad)]
        t += 10
    return recs


class TestSummary:
    """summarize() carries validity everywhere, and a failed level is a breach."""

    def test_a_level_that_mostly_failed_is_the_breach_not_a_lower_bound(self) -> None:
        """Errors count toward degradation: level 4 failed, so 2 is the max sustained (40
        requests a level: fewer cannot bound a p90, and an unbounded level is a tie)."""
        s = summarize(_run({1: (40, 0), 2: (40, 0), 4: (3, 17), 8: (0, 20)}))
        ramp = s["ramp"]
        statuses = {lv["concurrency"]: lv["status"] for lv in ramp["levels"]}
        assert statuses == {1: "sustained", 2: "sustained", 4: "failed", 8: "failed"}
        assert ramp["max_sustained_concurrency"] == 2
        assert ramp["first_breach_concurrency"] == 4
        assert ramp["first_degraded"] == "error"  # 500s: served badly, not refused
        assert ramp["first_breach_failures"] == {"error": 17}
        assert ramp["max_sustained_is_lower_bound"] is False
        assert s["validity"]["levels"]["8"]["status"] == "invalid"
        assert s["validity"]["status"] == "valid"  # the run measured that finding well
        assert not any("no level breached" in line for line in summary_lines(Summary.from_json(s)))

    def test_errors_beyond_the_limit_breach_as_errors(self) -> None:
        """A 500 is a failure to serve: 4 of 40 (10 %, exact interval 2.8-24 %) breaches
        the 1 % limit, named `error` (the server took the request: no admission limit)."""
        s = summarize(_run({1: (40, 0), 2: (36, 4)}))
        lv2 = s["ramp"]["levels"][1]
        assert lv2["status"] == "breached" and lv2["breaches"] == ["error"]
        assert s["ramp"]["first_degraded"] == "error"

    def test_a_failed_baseline_makes_the_run_invalid_and_the_probe_says_so(self) -> None:
        """The last lines a user reads say RUN INVALID; no 'no level breached'."""
        s = summarize(_run({1: (0, 10), 2: (0, 10)}, baseline_ok=0),
                      {"run_status": "complete"})
        assert s["validity"]["status"] == "invalid"
        assert s["baseline"]["validity"]["status"] == "invalid"
        assert s["ramp"]["max_sustained_concurrency"] is None
        lines = summary_lines(Summary.from_json(s))
        assert any(line.startswith("RUN INVALID") for line in lines)
        assert not any("no level breached" in line for line in lines)

    @pytest.mark.parametrize(("billed", "status"), [
        (16, "degraded"), (11, "degraded"), (10, "valid"), (8, "valid"), (6, "valid"),
        (5, "degraded")])
    def test_a_vendor_billing_tokens_it_never_streamed_degrades_the_run(
            self, billed: int, status: str) -> None:
        """Rates and TPOT count the vendor's usage: usage twice the streamed text doubles
        its measured speed, so such a run gets no readiness verdict. We count 8 tokens in
        each stream; the tolerance is 25 %, so 10 and 6 billed sit on the line, 11 and 5
        are over it."""
        recs = [dataclasses.replace(r, usage_completion_tokens=billed, output_tokens=billed,
                                    counted_output_tokens=8)
                for r in _run({1: (40, 0), 2: (40, 0)})]
        s = summarize(recs, {"run_status": "complete"})
        assert s["checks"]["usage_honesty"]["flagged"] is (status == "degraded")
        assert s["validity"]["status"] == status
        words = [r for r in s["validity"]["reasons"] if "usage" in r]
        if status == "valid":
            assert words == []
        else:
            assert words == [
                f"the vendor's usage (completion_tokens, what it bills) is {billed / 8:.2f}× "
                "our count of the text it streamed (over 25% apart): rates and TPOT rest on "
                "counts we could not check; ask which tokenizer it uses"]

    @pytest.mark.parametrize(("reported", "status"), [
        (768, "degraded"), (449, "degraded"), (448, "valid"), (256, "valid"),
        (192, "valid"), (191, "degraded")])
    def test_a_vendor_reporting_prompt_tokens_nobody_sent_degrades_the_run(
            self, reported: int, status: str) -> None:
        """Issue 24: the vendor's prompt_tokens replaced our count unchecked. We count 256
        tokens in each prompt; 25 % either way, plus 128 tokens of chat template above,
        is our tokenizer's drift (192..448); beyond it the run is degraded, with the ratio."""
        recs = [dataclasses.replace(r, prompt_tokens=reported, prompt_tokens_estimated=False,
                                    counted_prompt_tokens=256)
                for r in _run({1: (40, 0), 2: (40, 0)})]
        s = summarize(recs, {"run_status": "complete"})
        assert s["checks"]["prompt_honesty"]["flagged"] is (status == "degraded")
        assert s["validity"]["status"] == status
        words = [r for r in s["validity"]["reasons"] if "prompt_tokens" in r]
        assert words == ([] if status == "valid" else [
            f"the vendor's usage (prompt_tokens, what it bills) is {reported / 256:.2f}× our "
            "count of the prompt we sent: the prefill rate is fitted on our count; ask which "
            "tokenizer it uses"])
        assert all(len(w) <= 200 for w in words)

    def test_prompt_flagged_without_figures_is_still_said(self) -> None:
        v = run_validity({"baseline": _phase("valid")}, run_status="complete",
                         capacity_judgement_affected=False, prompt={"flagged": True})
        assert v["status"] == "degraded"
        assert v["reasons"] == [
            "the vendor's usage (prompt_tokens, what it bills) is far from the prompt we "
            "sent: the prefill rate is fitted on our count; ask which tokenizer it uses"]

    def test_usage_flagged_without_figures_is_still_said(self) -> None:
        """A flagged check that lost its ratio and tolerance (an edited or older summary)
        still degrades the run, in words that claim no number."""
        v = run_validity({"baseline": _phase("valid")}, run_status="complete",
                         capacity_judgement_affected=False, usage={"flagged": True})
        assert v["status"] == "degraded"
        assert v["reasons"] == [
            "the vendor's usage (completion_tokens, what it bills) is far from the text it "
            "streamed: rates and TPOT rest on counts we could not check; ask which "
            "tokenizer it uses"]

    def test_tokens_per_chunk_follow_server_usage(self) -> None:
        """48 tokens (server usage) in 16 chunks read 3.0 per chunk, whatever we counted."""
        chunks = [(0.1 + i * 0.03, 4 if i % 2 else 3) for i in range(16)]  # we count 56
        rec = RequestRecord(id="a", phase="baseline", level=1, outcome="ok", t0_s=0.0,
                            output_tokens=48, output_tokens_estimated=False,
                            usage_completion_tokens=48, counted_output_tokens=56,
                            ttft_s=0.1, e2e_s=chunks[-1][0], chunks=chunks, http_status=200,
                            finish_reason="stop", end_s=chunks[-1][0])
        s = summarize([rec])
        assert s["baseline"]["tokens_per_chunk"]["p50"] == pytest.approx(3.0)
        # TPOT divides the decode time by the tokens after the first chunk, that chunk
        # carrying the request's tokens per chunk like every other (48 / 16 = 3)
        assert s["baseline"]["tpot_s"]["p50"] == pytest.approx(15 * 0.03 / (48 - 3))


def _strings(v: dict[str, object]) -> list[str]:
    reasons = v["reasons"]
    assert isinstance(reasons, list) and all(isinstance(r, str) and r for r in reasons)
    return reasons


class TestEdges:
    """The boundaries of each rule, and what each verdict carries."""

    @pytest.mark.parametrize(("requests", "outcomes", "status", "ok", "says"), [
        (0, {}, "invalid", 0, "no request was sent"),
        (1, {"ok": 1}, "valid", 1, None),
        (3, {"error": 3}, "invalid", 0, "no request succeeded: 3 of 3 failed (error 3)"),
        (2, {"ok": 1, "error": 1}, "degraded", 1, "1 of 2 requests failed (error 1)"),
        (3, {"ok": 1, "timeout": 2}, "invalid", 1, "most requests failed: 2 of 3 (timeout 2)"),
        (100, {"ok": 99, "error": 1}, "valid", 99, None),
    ])
    def test_each_rule_at_its_edge(self, requests: int, outcomes: dict[str, int], status: str,
                                   ok: int, says: str | None) -> None:
        v = group_validity(requests, outcomes, max_failure_rate=LIMIT)
        assert (v["status"], v["requests"], v["ok"]) == (status, requests, ok)
        assert _strings(v) == ([says] if says else [])

    def test_a_client_bound_group_says_so(self) -> None:
        v = group_validity(4, _counts(4), max_failure_rate=LIMIT, client_bound=True)
        assert _strings(v) == ["the client was the bottleneck"]

    @pytest.mark.parametrize(("status", "error", "reason"), [
        ("failed", None, "the connect gate failed"),
        ("failed", "HTTP 404\nadvice", "the connect gate failed: HTTP 404"),
        ("crashed", None, "the run was crashed"),
        ("interrupted", None, "the run was interrupted"),
        ("running", None, "the run did not finish writing up"),
    ])
    def test_how_the_run_ended(self, status: str, error: str | None, reason: str) -> None:
        v = run_validity({"connect": _phase("valid"), "baseline": _phase("valid")},
                         run_status=status, run_error=error, capacity_judgement_affected=False)
        assert v["status"] == ("invalid" if status == "failed" else "degraded")
        assert _strings(v)[0].startswith(reason), v["reasons"]
        assert len(v["reasons"]) == 1
        if status == "failed":  # the gate's first line, and nothing when there is none
            assert v["reasons"][0] == reason

    def test_the_worst_mark_stands(self) -> None:
        """A milder finding after an invalid one never lifts the run to degraded."""
        v = run_validity({"connect": _phase("invalid", 0)}, run_status="failed",
                         capacity_judgement_affected=True)
        assert v["status"] == "invalid"
        assert len(_strings(v)) == 2 and "no capacity conclusion" in v["reasons"][1]

    @pytest.mark.parametrize("name", ["connect", "prefill", "cache", "soak", "rate"])
    def test_every_phase_a_judgement_leans_on_counts(self, name: str) -> None:
        """Connect, prefill, cache, soak and rate weaken the run (baseline voids it)."""
        v = run_validity({"baseline": _phase("valid"), name: _phase("degraded")},
                         run_status="complete", capacity_judgement_affected=False)
        assert v["status"] == "degraded"
        assert _strings(v) == [f"{name}: degraded reason"]

    def test_a_phase_without_reasons_is_named_by_its_status(self) -> None:
        v = run_validity({"baseline": _phase("valid"),
                          "prefill": {"status": "invalid", "ok": 0}},
                         run_status="complete", capacity_judgement_affected=False)
        assert (v["status"], _strings(v)) == ("degraded", ["prefill: invalid"])

    def test_phases_that_say_no_ok_count_succeeded_nowhere(self) -> None:
        v = run_validity({"baseline": {"status": "valid"}}, run_status="complete",
                         capacity_judgement_affected=False)
        assert (v["status"], _strings(v)) == ("invalid", ["no request of the run succeeded"])
        assert run_validity({}, run_status=None, capacity_judgement_affected=False)[
            "status"] == "invalid"



def test_the_gates_own_words_are_not_repeated() -> None:
    """explain_failure's lead-in is dropped: the reason says the gate failed once."""
    v = run_validity({}, run_status="failed", capacity_judgement_affected=False,
                     run_error="the connect stream failed: POST /x answered HTTP 404\nadvice")
    assert v["reasons"] == ["the connect gate failed: POST /x answered HTTP 404"]


class TestSummaryValidity:
    def test_a_bound_phase_and_a_bound_level_are_degraded(self) -> None:
        recs = [*_run({1: (5, 0), 2: (5, 0)}), _ok("s", "soak", 2, 90, 0.2, 0.02)]
        s = summarize(recs, {"phases": {"soak": {"client_bound": True}},
                             "levels": {"2": {"client_bound": True}}})
        assert s["validity"]["phases"]["soak"]["status"] == "degraded"
        assert "the client was the bottleneck" in s["validity"]["phases"]["soak"]["reasons"]
        assert s["validity"]["levels"]["2"]["status"] == "degraded"
        assert s["validity"]["levels"]["1"]["status"] == "valid"

    def test_reasons_carry_the_top_error_and_rtt_is_not_judged(self) -> None:
        recs = _run({1: (5, 0)}, baseline_ok=4)
        recs.append(RequestRecord(id="rtt", phase="rtt", level=None, outcome="error", t0_s=0))
        s = summarize(recs)
        assert "most often: HTTP 500: boom (x2)" in s["validity"]["phases"]["baseline"][
            "reasons"][0]
        assert "rtt" not in s["validity"]["phases"]

    def test_a_levels_validity_counts_its_ramp_requests_only(self) -> None:
        recs = _run({1: (4, 0)}, baseline_ok=0)  # six failed baseline requests at level 1
        assert summarize(recs)["validity"]["levels"]["1"] == {
            "status": "valid", "reasons": [], "requests": 4, "ok": 4}

    def test_a_failed_bound_level_at_the_breach_voids_the_judgement(self) -> None:
        s = summarize(_run({1: (20, 0), 4: (1, 19)}), {"levels": {"4": {"client_bound": True}}})
        assert s["ramp"]["first_breach_concurrency"] == 4
        assert s["client"]["capacity_judgement_affected"] is True
        assert summarize([_ok("b", "baseline", 1, 0, 0.2, 0.02)])["client"][
            "capacity_judgement_affected"] is False


@pytest.mark.parametrize("affected", [False, True])
def test_a_lost_worker_degrades_a_clean_run_and_says_which(affected: bool) -> None:
    """Every phase valid, a Ray worker lost: degraded, for that reason alone (a lost worker
    explains the bound client, so the bottleneck is not said twice)."""
    v = run_validity({"baseline": {"status": "valid", "ok": 10, "reasons": []}},
                     run_status="complete", capacity_judgement_affected=affected,
                     lost=["worker 2 died"])
    assert v == {"status": "degraded", "reasons": ["a client worker was lost: worker 2 died"]}


def test_a_lost_worker_degrades_a_clean_group_but_never_lifts_an_invalid_one() -> None:
    """The load a group was to offer was not held: degraded, with the worker named; a
    group that failed outright stays invalid."""
    clean = group_validity(10, {"ok": 10}, max_failure_rate=0.01, lost=["worker 2 died"])
    assert (clean["status"], clean["reasons"]) == (
        "degraded", ["a client worker was lost: worker 2 died"])
    dead = group_validity(10, {"error": 10}, max_failure_rate=0.01, lost=["worker 2 died"])
    assert dead["status"] == "invalid" and dead["reasons"][-1].endswith("worker 2 died")
