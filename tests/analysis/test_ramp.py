"""The ramp judged level by level (`evalkit.analysis.ramp`): sustained, breaking, tied, and the
requests a tie needs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.analysis.ramp import FAILURE_KINDS, _requests_to_decide, judge_ramp
from evalkit.analysis.summarize import summarize
from evalkit.analysis.thresholds import Thresholds
from evalkit.records import RequestRecord
from tests.analysis.helpers import BASE, _level, failed, stream


class TestJudgeRamp:
    @pytest.mark.parametrize(("levels", "bound", "sustained", "first", "at"), [
        # TTFT breaches at 8, TPOT flat
        ([(1, .1, .02), (2, .12, .02), (4, .15, .021), (8, .5, .022), (16, .9, .02)],
         (), 4, "ttft", 8),
        # TPOT breaches first at 4
        ([(1, .1, .02), (2, .1, .03), (4, .15, .05), (8, .5, .06)], (), 2, "itl", 4),
        # admission: 5 % of 100 rejected at 8 (exact interval 1.6-11 %, above 1 %) while
        # latency holds
        ([(1, .1, .02), (4, .1, .02), (8, .1, .02, .05)], (), 4, "admission", 8),
        # no breach: the highest level is the (lower-bound) answer
        ([(1, .1, .02), (2, .1, .02), (4, .15, .03)], (), 4, None, None),
        # level 1 already breaches: nothing sustained, not "0"
        ([(1, .3, .02), (2, .4, .02)], (), None, "ttft", 1),
        # client-bound level 4 is neither sustained nor breached
        ([(1, .1, .02), (2, .1, .02), (4, .15, .02), (8, .5, .02)], (4,), 2, "ttft", 8),
        # client-bound breaching level 8 gives no conclusion; 16 is the first real breach
        ([(1, .1, .02), (4, .1, .02), (8, .5, .02), (16, .5, .02)], (8,), 4, "ttft", 16),
    ])
    def test_table(self, levels: list[tuple], bound: tuple[int, ...], sustained: int | None,
                   first: str | None, at: int | None) -> None:
        """Highest sustained level and first degraded metric, on hand-built levels."""
        out = judge_ramp([_level(*lv) for lv in levels], BASE, Thresholds(), bound)
        assert out["max_sustained_concurrency"] == sustained
        assert out["first_degraded"] == first
        assert out["first_breach_concurrency"] == at
        for d in out["levels"]:
            if d["concurrency"] in bound:
                assert d["status"] == "client_bound" and d["breaches"] == []

    @given(st.lists(st.tuples(st.floats(0.05, 0.5), st.floats(0.01, 0.1),
                              st.sampled_from([0.0, 0.005, 0.05]), st.booleans()),
                    min_size=1, max_size=7))
    def test_invariants(self, spec: list[tuple[float, float, float, bool]]) -> None:
        """Sustained < first breach; bound levels neither; first_degraded is a breach there."""
        levels = [_level(2 ** i, t, p, a) for i, (t, p, a, _) in enumerate(spec)]
        bound = [2 ** i for i, (*_, b) in enumerate(spec) if b]
        out = judge_ramp(levels, BASE, Thresholds(), bound)
        first, held = out["first_breach_concurrency"], out["max_sustained_concurrency"]
        if first is not None and held is not None:
            assert held < first
        by_c = {d["concurrency"]: d for d in out["levels"]}
        for c in bound:
            assert by_c[c]["status"] == "client_bound"
        assert held is None or by_c[held]["status"] == "sustained"
        if first is not None:
            assert out["first_degraded"] in by_c[first]["breaches"]
            assert all(by_c[c]["status"] != "breached" for c in by_c if c < first)
        else:
            assert out["first_degraded"] is None

    def test_tie_goes_to_largest_excess_and_says_so(self) -> None:
        """At level 8 TTFT is 3× (1.5× its limit) and TPOT 5× (2.5×): 'itl' first."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .3, .1)], BASE)
        assert out["first_degraded"] == "itl"
        assert out["first_degraded_tied"] == ["itl", "ttft"]
        assert out["first_degraded_tie_rule"]

    def test_confirmation_and_lower_bound_flags(self) -> None:
        """A breach the next level repeats is confirmed; a run with no breach is a bound."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), _level(16, .1, .02)], BASE)
        assert out["breach_confirmed"] is False
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), _level(16, .6, .02)], BASE)
        assert out["breach_confirmed"] is True and out["max_sustained_is_lower_bound"] is False
        out = judge_ramp([_level(1, .1, .02)], BASE)
        assert out["max_sustained_is_lower_bound"] is True and out["breach_confirmed"] is None

    def test_thresholds_override(self) -> None:
        """A 1.5× TTFT rise passes at 2× and breaches at 1.2×."""
        levels = [_level(1, .1, .02), _level(4, .15, .02)]
        assert judge_ramp(levels, BASE)["first_degraded"] is None
        assert judge_ramp(levels, BASE, Thresholds(ttft_p90_ratio=1.2))["first_degraded"] == "ttft"

    def test_level_without_successes_is_the_breach(self) -> None:
        """All requests failed mid-stream: a failed level is the breach (never 'no level
        breached'), judged on its failure rate, whatever the client's state; named by
        what failed (cut streams), not `admission`: none was refused."""
        lv = _level(4, None, None)
        lv["outcomes"], lv["failure_rate"] = {"ok": 0, "incomplete": 100}, None
        out = judge_ramp([_level(1, .1, .02), lv], BASE, client_bound=[4])
        assert out["levels"][1]["status"] == "failed"
        assert out["levels"][1]["excess"]["incomplete"] == pytest.approx(100.0)
        assert out["max_sustained_concurrency"] == 1
        assert (out["first_breach_concurrency"], out["first_degraded"]) == (4, "incomplete")
        assert out["max_sustained_is_lower_bound"] is False

    def test_a_level_with_no_requests_is_no_data(self) -> None:
        """Nothing sent at a level is no evidence either way."""
        lv = _level(4, None, None)
        lv["requests"], lv["outcomes"], lv["failure_rate"] = 0, {}, None
        out = judge_ramp([_level(1, .1, .02), lv], BASE)
        assert out["levels"][1]["status"] == "no_data"
        assert out["first_breach_concurrency"] is None


class TestFailureKinds:
    """A failure-rate breach names its outcome: only refusals are `admission`."""

    @staticmethod
    def _failing(outcomes: dict[str, int], admission: int = 0) -> dict[str, Any]:
        lv = _level(2, .1, .02)
        requests = sum(outcomes.values())
        lv.update(requests=requests, outcomes=outcomes, failure_rate=None,
                  admission_failure_rate=admission / requests)
        return lv

    @pytest.mark.parametrize(("outcomes", "admission", "kind"), [
        # llama.cpp at 2 streams: 11 of 22 streams cut, none refused
        ({"ok": 11, "incomplete": 11}, 0, "incomplete"),
        ({"ok": 90, "rejected": 10}, 10, "admission"),
        # a timeout before any content was never admitted; one after it began stalled
        ({"ok": 90, "timeout": 10}, 10, "admission"),
        ({"ok": 90, "timeout": 10}, 0, "timeout"),
        ({"ok": 90, "error": 6, "incomplete": 4}, 0, "error"),
        # equal counts go to the earlier name in FAILURE_KINDS
        ({"ok": 90, "rejected": 5, "incomplete": 5}, 5, "admission"),
    ])
    def test_the_dominant_outcome_names_the_breach(self, outcomes: dict[str, int],
                                                   admission: int, kind: str) -> None:
        out = judge_ramp([_level(1, .1, .02), self._failing(outcomes, admission)], BASE)
        level = out["levels"][1]
        assert level["status"] in ("breached", "failed")
        assert level["breaches"] == [kind] and level["failure_kind"] == kind
        assert (out["first_degraded"], out["first_breach_concurrency"]) == (kind, 2)
        assert out["first_degraded_metric"] == "failure_rate"
        assert level["failure_kinds"][kind] == max(level["failure_kinds"].values())

    def test_a_clean_level_names_no_kind(self) -> None:
        out = judge_ramp([_level(1, .1, .02)], BASE)
        assert out["levels"][0]["failure_kind"] is None
        assert out["levels"][0]["failure_kinds"] == dict.fromkeys(FAILURE_KINDS, 0)

    def test_cut_streams_over_records(self) -> None:
        """From records through summarize: streams cut mid-way, none refused."""
        recs = [stream(f"b{i}", t0=i) for i in range(5)]
        recs += [stream(f"r{i}", "ramp", 2, t0=10 + i, outcome="ok" if i % 2 else
                        "incomplete", finish_reason=None if i % 2 == 0 else "length")
                 for i in range(22)]
        ramp = summarize(recs)["ramp"]
        assert ramp["levels"][0]["admission_failure_rate"] == 0
        assert ramp["first_degraded"] == "incomplete", ramp["levels"][0]["status"]


class TestAchievedConcurrency:
    """A level judged at what it held in flight: under 90 % of its concurrency, a hold or
    a tie is no evidence for that concurrency (status underloaded); a breach stands."""

    @staticmethod
    def _held(c: int, mean: float, *args: Any) -> dict[str, Any]:
        lv = _level(c, *args)
        lv["steady_state"] = {"max_inflight": c, "mean_inflight": mean, "min_inflight": 1}
        return lv

    @pytest.mark.parametrize(("mean", "status"), [(8.0, "sustained"), (7.2, "sustained"),
                                                  (7.1, "underloaded"), (3.0, "underloaded")])
    def test_the_rule(self, mean: float, status: str) -> None:
        out = judge_ramp([_level(1, .1, .02), self._held(8, mean, .1, .02)], BASE)
        level = out["levels"][1]
        assert level["status"] == status
        assert level["achieved_concurrency"] == {
            "mean": mean, "min": 1, "nominal": 8, "share": pytest.approx(mean / 8),
            "underloaded": status == "underloaded"}
        assert out["max_sustained_concurrency"] == (8 if status == "sustained" else 1)
        assert out["underloaded_levels"] == ([8] if status == "underloaded" else [])
        if status == "underloaded":
            assert "level 8 held a mean of" in out["note"] and "not judged" in out["note"]
            assert out["max_sustained_is_lower_bound"] is True

    def test_a_breach_under_less_load_stands(self) -> None:
        out = judge_ramp([_level(1, .1, .02), self._held(8, 5.0, .5, .02)], BASE)
        assert out["levels"][1]["status"] == "breached"
        assert (out["first_degraded"], out["first_breach_concurrency"]) == ("ttft", 8)
        assert out["levels"][1]["achieved_concurrency"]["underloaded"] is True

    def test_a_level_without_the_mean_is_judged_as_before(self) -> None:
        lv = _level(8, .1, .02)
        lv["steady_state"] = {"max_inflight": 8}
        out = judge_ramp([_level(1, .1, .02), lv], BASE)
        assert out["levels"][1]["status"] == "sustained"
        assert out["levels"][1]["achieved_concurrency"] is None


class TestJudgeRampEdges:
    def test_exactly_at_a_threshold_is_not_a_breach(self) -> None:
        """TTFT p90 exactly 2× the baseline's is at the limit, not over it."""
        out = judge_ramp([_level(1, .1, .02), _level(4, .2, .02)], BASE)
        assert (out["levels"][1]["status"], out["levels"][1]["excess"]["ttft"]) == (
            "sustained", 1.0)

    def test_exactly_half_ok_is_not_mostly_failed(self) -> None:
        half = _level(4, .1, .02, admission=0.5)
        out = judge_ramp([_level(1, .1, .02), half], BASE)
        assert out["levels"][1]["status"] == "breached"  # 50 % failed > 1 %, not 'failed'
        below = _level(4, .1, .02, admission=0.51)
        assert judge_ramp([_level(1, .1, .02), below], BASE)["levels"][1]["status"] == "failed"

    def test_failure_rate_from_outcomes_when_not_given(self) -> None:
        lv = {"concurrency": 4, "requests": 10, "outcomes": {"ok": 8, "error": 2},
              "ttft_s": {"p90": .1}, "tpot_s": {"p90": .02}}
        out = judge_ramp([_level(1, .1, .02), lv], BASE)
        assert out["levels"][1]["excess"]["error"] == pytest.approx(0.2 / 0.01)
        no_ok = {**lv, "outcomes": {"error": 10}}
        assert judge_ramp([no_ok], BASE)["levels"][0]["status"] == "failed"

    def test_a_bound_level_says_what_it_would_have_breached(self) -> None:
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE, client_bound=[8])
        lv8 = out["levels"][1]
        assert (lv8["status"], lv8["breaches"], lv8["would_breach"]) == (
            "client_bound", [], ["ttft"])
        assert out["levels"][0]["would_breach"] == []
        assert out["client_bound_levels"] == [8]
        assert out["note"] == "no level breached: the highest level measured is a lower bound"

    def test_the_larger_excess_goes_first_whatever_its_name(self) -> None:
        """TTFT 5× (2.5× its limit) beats TPOT 3× (1.5×) at level 8."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .06)], BASE)
        assert (out["first_degraded"], out["first_degraded_tied"]) == ("ttft", ["ttft", "itl"])
        assert out["first_degraded_metric"] == "ttft_s p90 / baseline"
        one = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE)
        assert (one["first_degraded_tied"], one["first_degraded_tie_rule"]) == ([], None)
        admission = judge_ramp([_level(1, .1, .02), _level(8, .1, .02, .05)], BASE)
        assert admission["first_degraded_metric"] == "failure_rate"

    def test_notes_and_confirmation_by_a_failed_level(self) -> None:
        failed = _level(16, None, None)
        failed["outcomes"], failed["failure_rate"] = {"ok": 0, "error": 100}, None
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), failed], BASE)
        assert out["breach_confirmed"] is True and out["note"] is None
        first = judge_ramp([_level(1, .5, .02)], BASE)
        assert first["note"] == "the lowest judged level (1) already breaches"
        nothing = judge_ramp([_level(1, .1, .02)], BASE, client_bound=[1])
        assert nothing["note"] == "no level could be judged"

    def test_judged_on_and_thresholds(self) -> None:
        out = judge_ramp([_level(1, .1, .02)], {"ttft_s": {"p90": .1}})
        assert out["judged_on"] == ["ttft", "admission"]
        assert judge_ramp([_level(1, .1, .02)], None)["judged_on"] == ["admission"]
        assert judge_ramp([_level(1, .1, .02)], BASE)["judged_on"] == ["ttft", "itl",
                                                                       "admission"]
        assert out["thresholds"] == {"ttft_p90_ratio": 2.0, "tpot_p90_ratio": 2.0,
                                     "admission_failure_rate": 0.01, "length_tolerance": 0.1,
                                     "precision_match_tolerance": 0.1}


def _ramp_level(c: int, ttfts: list[float], rejected: int = 0, t0: float = 0.0
                ) -> list[RequestRecord]:
    """A ramp level of len(ttfts) served streams (TPOT flat at the baseline's 20 ms) and
    `rejected` requests refused at once."""
    recs = [stream(f"r{c}-{i}", "ramp", c, t0=t0 + i * 0.01, ttft=v)
            for i, v in enumerate(ttfts)]
    return recs + [failed(f"x{c}-{i}", "rejected", "ramp", c, t0=t0, status=429)
                   for i in range(rejected)]


def _straddle(n: int = 60) -> list[float]:
    """n TTFTs whose p90 interval straddles the 0.2 s limit (2x a 0.1 s baseline): the
    order statistics bounding it are 0.1 s (rank 49 of 60) and 0.25 s (rank 59)."""
    return [0.1] * 58 + [0.25] * (n - 58)


#: how each kind of level is built: its TTFTs and rejected count
LEVEL_KINDS: dict[str, tuple[list[float], int]] = {
    "held": ([0.1 + 0.001 * i for i in range(40)], 0),        # p90 interval 0.13-0.14 s
    "slow": ([0.3 + 0.001 * i for i in range(40)], 0),        # wholly above 0.2 s
    "straddle": (_straddle(), 0),
    "few": ([0.1] * 10, 0),                                   # p90 unbounded above
    "fail2": ([0.1] * 98, 2),                                 # 2 %: exact 0.2-7 %
    "fail10": ([0.1] * 90, 10),                               # 10 %: exact 4.9-18 %
}


class TestRampTies:
    """The breach rule on intervals: a level breaches when its p90's (or its failure
    rate's) 95 % interval lies wholly above the limit; a straddling interval is a tie,
    which is neither held nor breached."""

    @pytest.mark.parametrize(("kinds", "statuses", "sustained", "breach", "first", "tie"), [
        (("held", "held", "slow"), ["sustained", "sustained", "breached"], 2, 4, "ttft",
         None),
        # a tie below the breach: the max sustained stops under it, and says so
        (("held", "straddle", "slow"), ["sustained", "tie", "breached"], 1, 4, "ttft", 2),
        # a tie below a sustained level bounds nothing (load only makes it worse)
        (("few", "held", "slow"), ["tie", "sustained", "breached"], 2, 4, "ttft", None),
        # failures: 2 % of 100 cannot be told from 1 %; 10 % of 100 can
        (("held", "fail2", "fail10"), ["sustained", "tie", "breached"], 1, 4, "admission",
         2),
        # no breach at all, a tie on top: a lower bound, and bounded by the tie
        (("held", "straddle"), ["sustained", "tie"], 1, None, None, 2),
        # nothing confirmed either way
        (("few", "straddle"), ["tie", "tie"], None, None, None, 1),
    ])
    def test_table(self, kinds: tuple[str, ...], statuses: list[str], sustained: int | None,
                   breach: int | None, first: str | None, tie: int | None) -> None:
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]  # p90 0.1 s, TPOT 20 ms
        for i, kind in enumerate(kinds):
            ttfts, rejected = LEVEL_KINDS[kind]
            recs += _ramp_level(2 ** i, ttfts, rejected, t0=100.0 * (i + 1))
        ramp = summarize(recs)["ramp"]
        assert [lv["status"] for lv in ramp["levels"]] == statuses
        assert ramp["max_sustained_concurrency"] == sustained
        assert ramp["first_breach_concurrency"] == breach
        assert ramp["first_degraded"] == first
        assert ramp["first_tie_concurrency"] == tie
        assert ramp["max_sustained_bounded_by_tie"] is (tie is not None)
        assert ramp["tie_levels"] == [lv["concurrency"] for lv in ramp["levels"]
                                      if lv["status"] == "tie"]
        for lv in ramp["levels"]:  # what a tie says: which metric, and how many would decide
            if lv["status"] == "tie":
                assert lv["ties"] and lv["breaches"] == []
                assert lv["tie_requests"] > lv["requests"]
            else:
                assert lv["tie_requests"] is None
        if tie is not None:
            assert f"level {tie} is a tie" in ramp["note"]

    def test_each_call_agrees_with_the_interval(self) -> None:
        """The ratio intervals are the level's p90 interval over the baseline p90, and the
        call follows them: straddle 0.1-0.25 s over 0.1 s is 1.0-2.5 against 2.0."""
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]
        recs += _ramp_level(2, _straddle(), t0=100) + _ramp_level(4, [0.1] * 10, t0=200)
        lv2, lv4 = summarize(recs)["ramp"]["levels"]
        assert lv2["ttft_p90_ratio_ci"] == pytest.approx([1.0, 2.5])
        assert lv2["excess_ci"]["ttft"] == pytest.approx([0.5, 1.25])
        assert (lv2["status"], lv2["ties"]) == ("tie", ["ttft"])
        # 10 samples bound a p90 from below only: a tie that 36 requests could close
        assert lv4["ttft_p90_ratio_ci"][1] is None
        assert (lv4["status"], lv4["ties"], lv4["tie_requests"]) == ("tie", ["ttft", "itl"],
                                                                     36)

    def test_failure_tie_needs_about_this_many(self) -> None:
        """2 % seen in 100: about 1.96² · 0.02 · 0.98 / 0.01² ≈ 753 requests would confirm
        a 2 % rate is above 1 %."""
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]
        recs += _ramp_level(2, [0.1] * 98, 2, t0=100)
        lv = summarize(recs)["ramp"]["levels"][0]
        assert lv["failure_rate_ci"][0] < 0.01 < lv["failure_rate"]
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == ("tie", ["admission"], 753)


class TestRequestsToDecide:
    """`tie_requests`, the figure a tie prints ("about N requests there would decide it"):
    if what was seen holds, an interval narrows as 1/sqrt(n); never fewer than one more
    request than the level had, and no figure where nothing could decide it."""

    @pytest.mark.parametrize(("n", "point", "ci", "limit", "expected"), [
        (40, 1.5, [1.0, 2.5], 2.0, 90),      # half-width 0.75 over a gap of 0.5: 40 · 1.5²
        (40, 2.5, [1.0, 3.0], 2.0, 160),     # above the limit: 40 · (1.0 / 0.5)²
        (100, 1.0, [0.9, 1.1], 2.0, 101),    # already narrow: one more than it had
        (100, 1.5, [1.0, None], 2.0, 101),   # an open end: the p90's own floor, 36, is less
        (10, 1.5, [None, 2.5], 2.0, 36),     # an open end: 36 samples bound a p90
        (40, 2.0, [1.0, 2.5], 2.0, None),    # on the limit: no number of requests decides
        (40, 1.5, None, 2.0, None),          # no interval: nothing to narrow
    ])
    def test_a_latency_ratio(self, n: int, point: float, ci: list[float | None] | None,
                             limit: float, expected: int | None) -> None:
        assert _requests_to_decide(n, point, ci, limit, False) == expected

    @pytest.mark.parametrize(("n", "point", "limit", "expected"), [
        (100, 0.02, 0.01, 753),    # 1.96² · 0.02 · 0.98 / 0.01²
        (1000, 0.5, 0.01, 1001),   # the formula's 4 is fewer than it had: one more
        (100, 0.02, 0.02, None),   # at the limit, or under it: no count confirms a breach
        (100, 0.01, 0.02, None),
    ])
    def test_a_failure_rate(self, n: int, point: float, limit: float,
                            expected: int | None) -> None:
        assert _requests_to_decide(n, point, [0.0, 1.0], limit, True) == expected
        assert _requests_to_decide(n, point, None, limit, True) is None


class TestJudgedOnTheGivenInterval:
    """`judge_ramp` judges a level on the intervals its dict carries (a summary re-judged,
    a merged shard): an interval ending exactly at the limit is not beyond it, and an
    open end falls back to the point."""

    def _judge(self, **kw: Any) -> dict[str, Any]:
        base = {"concurrency": 1, "requests": 40, "outcomes": {"ok": 40},
                "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        level = {"concurrency": 2, "requests": 100, "outcomes": {"ok": 98, "error": 2},
                 "ttft_s": {"p90": 0.1, "p90_ci": [0.09, 0.11]},
                 "tpot_s": {"p90": 0.02, "p90_ci": [0.019, 0.021]}, **kw}
        judged: dict[str, Any] = judge_ramp([base, level], base)["levels"][1]
        return judged

    @pytest.mark.parametrize(("kw", "status"), [
        ({}, "tie"),                                   # 2 of 100: exact [0.2 %, 7 %]
        ({"failure_rate_ci": [0.015, 0.03]}, "breached"),   # the given interval decides
        ({"failure_rate_ci": [0.01, 0.05]}, "tie"),    # a low end at the limit: not above
        ({"failure_rate": 0.01, "failure_rate_ci": [0.005, 0.05]}, "sustained"),  # at it
        # an interval without its low end: judged on the observed rate
        ({"failure_rate_ci": [None, 0.5]}, "breached"),
        ({"failure_rate": 0.01, "failure_rate_ci": [None, 0.5]}, "sustained"),
        ({"failure_rate": 0.0, "failure_rate_ci": [None, 0.5]}, "sustained"),
        # a rate without requests is no data, not a crash
        ({"requests": 0, "outcomes": {}, "failure_rate": 0.5}, "no_data"),
    ])
    def test_failure_rate(self, kw: dict[str, Any], status: str) -> None:
        lv = self._judge(**kw)
        assert lv["status"] == status
        # the failures are errors (a 500, an error payload), not refusals
        assert lv["breaches"] == (["error"] if status == "breached" else [])
        assert lv["ties"] == (["error"] if status == "tie" else [])

    @pytest.mark.parametrize(("ci", "status"), [
        ([0.2, 0.3], "tie"),        # 2.0-3.0 × the baseline against 2.0: not wholly above
        ([0.1, 0.2], "sustained"),  # 1.0-2.0: at the limit is within it
    ])
    def test_latency_interval_ending_at_the_limit(self, ci: list[float], status: str
                                                  ) -> None:
        lv = self._judge(outcomes={"ok": 100}, ttft_s={"p90": 0.15, "p90_ci": ci})
        assert (lv["status"], lv["ties"]) == (status, ["ttft"] if status == "tie" else [])

    @pytest.mark.parametrize("key", ["ttft_s", "tpot_s"])
    def test_requests_to_decide_a_tie_count_the_samples_the_percentile_had(self, key: str
                                                                           ) -> None:
        """10 TTFT (or TPOT) samples among 100 ok requests: a p90 needs 36 samples for both
        ends, so about 36 requests would decide it, not 101."""
        base_p90 = 0.1 if key == "ttft_s" else 0.02
        lv = self._judge(outcomes={"ok": 100}, **{key: {
            "p90": 1.5 * base_p90, "n": 10, "p90_ci": [base_p90, None]}})
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == (
            "tie", ["ttft" if key == "ttft_s" else "itl"], 36)

    def test_a_breached_level_names_its_ties_too_and_no_count(self) -> None:
        """Breached on failures, tied on TTFT: both are said; no count would decide it."""
        lv = self._judge(failure_rate_ci=[0.015, 0.03],
                         ttft_s={"p90": 0.25, "p90_ci": [0.2, 0.3]})
        assert (lv["status"], lv["breaches"], lv["ties"], lv["tie_requests"]) == (
            "breached", ["error"], ["ttft"], None)

    def test_a_client_bound_level_names_no_tie(self) -> None:
        """A client-bound level supports no conclusion, a tie included."""
        level = {"concurrency": 2, "requests": 100, "outcomes": {"ok": 100},
                 "ttft_s": {"p90": 0.25, "p90_ci": [0.2, 0.3]}}
        base = {"concurrency": 1, "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        lv = judge_ramp([base, level], base, client_bound=[2])["levels"][1]
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == ("client_bound", [], None)


class TestTieInTheRampNote:
    """What the ramp's note says of a tie: the count that would decide it when there is
    one, and whether any level held; a breach is confirmed only by the next judged level
    (a tie after it confirms nothing)."""

    @staticmethod
    def _lv(c: int, p90: float, ci: list[float | None], n: int | None = None
            ) -> dict[str, Any]:
        ttft: dict[str, Any] = {"p90": p90, "p90_ci": ci, **({"n": n} if n else {})}
        return {"concurrency": c, "requests": 100, "outcomes": {"ok": 100}, "ttft_s": ttft,
                "tpot_s": {"p90": 0.02, "p90_ci": [0.019, 0.021]}}

    def _ramp(self, *levels: dict[str, Any]) -> dict[str, Any]:
        base = {"concurrency": 1, "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        return judge_ramp(list(levels), base)

    def test_held_then_a_tie_with_a_count(self) -> None:
        ramp = self._ramp(self._lv(2, 0.1, [0.09, 0.11]), self._lv(4, 0.15, [0.1, None], 10),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["note"].startswith("level 4 is a tie (ttft")
        assert ramp["note"].endswith("; about 36 requests there would decide it")

    def test_a_tie_on_the_limit_has_no_count_to_give(self) -> None:
        """A p90 exactly at the limit: no number of requests decides it, and the note
        says no count (never 'None')."""
        ramp = self._ramp(self._lv(2, 0.1, [0.09, 0.11]), self._lv(4, 0.2, [0.15, 0.25]),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["levels"][1]["tie_requests"] is None
        assert ramp["note"].endswith("so the max sustained level may be higher")

    @pytest.mark.parametrize(("tie", "more"), [
        ((0.15, [0.1, None], 10), "; about 36 requests there would decide it"),
        ((0.2, [0.15, 0.25], None), ""),
    ])
    def test_no_level_held_and_a_tie(self, tie: tuple[float, list[float | None],
                                                       int | None], more: str) -> None:
        ramp = self._ramp(self._lv(4, *tie), self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["note"] == ("no level was confirmed sustained: level 4 is a tie (its 95 "
                                f"% interval straddles the limit on ttft){more}")
        assert ramp["max_sustained_concurrency"] is None

    def test_a_tie_after_the_breach_confirms_nothing(self) -> None:
        ramp = self._ramp(self._lv(2, 0.5, [0.4, 0.6]), self._lv(4, 0.15, [0.1, None], 10),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert [lv["status"] for lv in ramp["levels"]] == ["breached", "tie", "breached"]
        assert ramp["breach_confirmed"] is None
