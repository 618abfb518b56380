"""Errors that happen alone are not load (`evalkit.analysis.configuration`): a shape the
endpoint refuses with the same 4xx alone as under load is a configuration finding, left
out of the degradation order and of "mostly failed"; an error only load brings is load."""

from __future__ import annotations

from evalkit.analysis.configuration import configuration_failures
from evalkit.analysis.frames import frames
from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord
from tests.analysis.helpers import closed_loop, stream

CONTEXT = "HTTP 400: request ({} tokens) exceeds the available context size"


def refused(rid: str, phase: str, level: int | None, tokens: int, *, status: int = 400,
            error: str = CONTEXT, t0: float = 0.0) -> RequestRecord:
    """A request of `tokens` prompt tokens refused at once with `status`."""
    return RequestRecord(id=rid, phase=phase, level=level, outcome="rejected" if status in (
        429, 503) else "error", t0_s=t0, http_status=status, error=error.format(tokens + 37),
        counted_prompt_tokens=tokens, requested_output_tokens=2, end_s=0.001)


def sized(records: list[RequestRecord], tokens: int, asked: int = 10) -> list[RequestRecord]:
    """The records as requests of `tokens` prompt tokens asking for `asked` out."""
    import dataclasses

    return [dataclasses.replace(r, counted_prompt_tokens=tokens, requested_output_tokens=asked)
            for r in records]


#: when each ramp level starts on the run's clock (s)
START = {1: 20.0, 2: 40.0, 4: 60.0}


def ramp(per_worker: int = 40) -> list[RequestRecord]:
    """A ramp whose every level holds (the same TTFT and rhythm throughout, enough
    requests to bound a p90), at 256 tokens."""
    out: list[RequestRecord] = []
    for c, t in START.items():
        out += closed_loop("ramp", c, per_worker, t_start=t)
    return sized(out, 256)


def at_levels(tokens: int, per_worker: int, levels: tuple[int, ...] = (1, 2, 4)
              ) -> list[RequestRecord]:
    """`per_worker` x level refused requests of `tokens` at each level, inside its span."""
    return [refused(f"r{c}-{i}", "ramp", c, tokens, t0=START[c] + 1 + i * 0.1)
            for c in levels for i in range(per_worker * c)]


def baseline(n: int = 8) -> list[RequestRecord]:
    return sized([stream(f"b{i}", t0=i * 0.3) for i in range(n)], 256)


class TestTheRule:
    def test_a_shape_refused_alone_is_a_finding_with_what_to_change(self) -> None:
        """The cache phase's 2,048-token prompts refused every time, alone: one finding,
        with its status, the cleaned message, where, how many and what to change."""
        recs = [*baseline(), *[refused(f"c{i}", "cache", 1, 2048) for i in range(4)]]
        mask, findings = configuration_failures(frames(recs)[0])
        assert mask.sum() == 4 and len(findings) == 1
        f = findings[0]
        assert (f["status"], f["requests"], f["alone"], f["under_load"]) == (400, 4, 4, 0)
        assert f["message"] == "request (2085 tokens) exceeds the available context size"
        assert f["phases"] == {"cache": 4} and f["ramp_levels"] == {}
        assert (f["smallest_refused_tokens"], f["largest_served_alone_tokens"]) == (2050, 266)
        assert "longer context per request" in f["change"] and "--parallel" in f["change"]

    def test_the_same_refusal_under_load_for_that_size_is_the_findings(self) -> None:
        """The long prompts are refused at every level: under load too, the finding's."""
        long = [refused(f"r{c}-{i}", "ramp", c, 3000, t0=START[c] + 1) for c in (1, 2, 4)
                for i in range(3)]
        mask, findings = configuration_failures(frames([*baseline(), *ramp(), *long])[0])
        assert mask.sum() == 9
        assert findings[0]["ramp_levels"] == {"2": 3, "4": 3}
        assert (findings[0]["alone"], findings[0]["under_load"]) == (3, 6)

    def test_an_error_seen_only_under_load_is_load(self) -> None:
        """The same message, but never alone: the ramp is there to find it."""
        load = [refused(f"r4-{i}", "ramp", 4, 256, t0=START[4] + 1) for i in range(5)]
        mask, findings = configuration_failures(frames([*baseline(), *ramp(), *load])[0])
        assert not mask.any() and findings == []

    def test_a_smaller_request_refused_under_load_is_load(self) -> None:
        """Refused alone from 2,048 tokens up; under load a 256-token request (served
        alone) gets the same words: the engine's context filled with load, not config."""
        recs = [*baseline(), *[refused(f"c{i}", "cache", 1, 2048) for i in range(2)],
                *[refused(f"r4-{i}", "ramp", 4, 256, t0=START[4] + 1) for i in range(5)]]
        mask, findings = configuration_failures(frames(recs)[0])
        assert mask.sum() == 2 and findings[0]["requests"] == 2

    def test_a_size_served_alone_is_no_shape_the_endpoint_never_serves(self) -> None:
        """A 400 alone on a request as large as one served alone is not about its size:
        no finding, it stays a failure."""
        recs = [*baseline(), refused("c0", "cache", 1, 200)]
        mask, findings = configuration_failures(frames(recs)[0])
        assert not mask.any() and findings == []

    def test_admission_and_server_faults_are_never_configuration(self) -> None:
        """A 429 or 408 alone and under load, a 500 likewise: not configuration."""
        recs = [*baseline()]
        for status in (429, 408, 500, 503):
            recs += [refused(f"{status}-{c}", "ramp" if c > 1 else "cache", c, 3000,
                             status=status, error=f"HTTP {status}: busy") for c in (1, 4)]
        mask, findings = configuration_failures(frames(recs)[0])
        assert not mask.any() and findings == []


class TestTheJudgement:
    def test_a_finding_is_out_of_the_degradation_order(self) -> None:
        """A quarter of every level refused for its size, alone as under load: the ramp
        holds at every level (it breached on `error` at level 1 before), and the levels
        and the run count the refusals beside their outcomes."""
        s = summarize([*baseline(), *ramp(), *at_levels(3000, 10)])
        r = s["ramp"]
        assert r["first_degraded"] is None and r["max_sustained_concurrency"] == 4
        assert [lv["configuration_failures"] for lv in r["levels"]] == [10, 20, 40]
        assert [lv["status"] for lv in r["levels"]] == ["sustained"] * 3
        assert all(lv["failure_rate"] == 0 for lv in r["levels"])
        assert s["configuration"]["findings"][0]["requests"] == 70
        assert "configuration finding" in s["configuration"]["rule"]

    def test_without_the_rule_the_same_run_breaches_on_error(self) -> None:
        """The same refusals on a shape served alone: load, and the ramp says `error`."""
        r = summarize([*baseline(), *ramp(), *at_levels(256, 10, (2, 4))])["ramp"]
        assert r["first_degraded"] == "error" and r["first_breach_concurrency"] == 2

    def test_a_phase_of_refused_shapes_is_not_mostly_failed(self) -> None:
        """Prefill with its long lengths refused alone (7 of 10): degraded, naming the
        finding, never 'most requests failed'; the cache phase, all refused, measured
        nothing and stays invalid, saying why."""
        prefill = [*sized([stream(f"p{i}", "prefill", 1, t0=i) for i in range(3)], 512),
                   *[refused(f"q{i}", "prefill", 1, 4096, t0=5 + i) for i in range(7)]]
        cache = [refused(f"c{i}", "cache", 1, 4096, t0=20 + i) for i in range(4)]
        v = summarize([*baseline(), *prefill, *cache])["validity"]
        assert v["phases"]["prefill"]["status"] == "degraded"
        assert not any("most requests failed" in r for r in v["phases"]["prefill"]["reasons"])
        assert "7 of 10 requests were refused alone as under load" in \
            v["phases"]["prefill"]["reasons"][0]
        assert v["phases"]["cache"]["status"] == "invalid"
        assert "a configuration finding" in " ".join(v["phases"]["cache"]["reasons"])
        assert v["phases"]["baseline"]["status"] == "valid" and v["status"] == "degraded"

    def test_a_baseline_of_refused_shapes_leaves_the_run_invalid(self) -> None:
        """A run whose baseline shape is refused measured nothing: invalid, as before."""
        recs = [*[refused(f"b{i}", "baseline", 1, 4096, t0=i) for i in range(4)],
                *sized([stream(f"p{i}", "prefill", 1, t0=10 + i) for i in range(3)], 64)]
        assert summarize(recs)["validity"]["status"] == "invalid"
