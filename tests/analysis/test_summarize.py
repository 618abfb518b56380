"""The metrics core on synthetic records whose right answers are known by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.analysis.frames import chunks_frame
from evalkit.analysis.ramp import judge_ramp
from evalkit.analysis.summarize import ClientCheck, SummaryMeta, client_section, summarize
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.records import RequestRecord
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import RunTarget
from tests.analysis.helpers import BASE, _level, closed_loop, failed, stream
from tests.review.helpers import typed


class TestSummarize:
    def _run(self) -> list[RequestRecord]:
        recs = [stream("c", "connect")]
        recs += [stream(f"b{i}", t0=i, ttft=0.1) for i in range(20)]
        recs += [stream(f"p{p}", "prefill", t0=100 + i, ttft=0.05 + 0.0001 * p, n=2,
                        prompt_tokens=p) for i, p in enumerate((100, 1000, 4000))]
        t = 200.0
        for level, ttft in ((1, 0.1), (2, 0.11), (4, 0.14), (8, 0.45), (16, 0.8)):
            # at least 40 requests a level: fewer cannot bound a p90 from above (36), and
            # an unbounded interval is a tie, never a sustained level
            recs += closed_loop("ramp", level, max(6, 40 // level), ttft=ttft, t_start=t)
            t += 20
        return recs

    def test_ramp_end_to_end(self) -> None:
        """TTFT breaches at 8 while TPOT stays flat: first_degraded 'ttft', sustained 4."""
        s = summarize(self._run())
        assert s["schema"] == "evalkit.summary/1"
        assert s["ramp"]["first_degraded"] == "ttft"
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert [lv["concurrency"] for lv in s["ramp"]["levels"]] == [1, 2, 4, 8, 16]
        lv8 = s["ramp"]["levels"][3]
        assert lv8["ttft_s"]["p90"] == pytest.approx(0.45)
        assert lv8["tpot_p90_ratio"] == pytest.approx(1.0)
        assert lv8["outcomes"]["ok"] == 48 and lv8["requests"] == 48
        assert s["ramp"]["baseline_source"] == "baseline"
        assert s["prefill"]["tokens_per_s"] == pytest.approx(10000.0)

    def test_client_bound_level_from_meta(self) -> None:
        """meta marks level 8 client-bound: no breach there; 16 is the first, 4 sustained."""
        meta = {"levels": {"8": {"loop_lag_p99_s": 0.2, "cpu_fraction": 0.98,
                                 "client_bound": True}},
                "phases": {"baseline": {"loop_lag_p99_s": 0.001, "cpu_fraction": 0.1}}}
        s = summarize(self._run(), meta)
        assert s["ramp"]["first_breach_concurrency"] == 16
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert s["ramp"]["levels"][3]["status"] == "client_bound"
        assert s["client"]["client_bound"] is True
        assert s["client"]["loop_lag_p99_s"] == pytest.approx(0.2)
        assert s["client"]["client_bound_levels"] == [8]
        assert s["client"]["capacity_judgement_affected"] is True

    def test_client_bound_above_the_breach_changes_no_conclusion(self) -> None:
        """Bound only at 16, after the breach at 8: the judgement stands and says so."""
        s = summarize(self._run(), {"levels": {"16": {"client_bound": True}}})
        assert s["ramp"]["first_breach_concurrency"] == 8
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert s["client"]["client_bound"] is True
        assert s["client"]["capacity_judgement_affected"] is False

    def test_a_client_bound_baseline_voids_the_capacity_judgement(self) -> None:
        """Every ramp ratio is taken against the baseline: bound there, no level's verdict
        stands, however clean the ramp looked, and no claim is verified from the run."""
        s = summarize(self._run(), {"phases": {"baseline": {"cpu_fraction": 0.99,
                                                            "client_bound": True}}})
        assert s["ramp"]["baseline_client_bound"] is True
        assert s["baseline"]["client_bound"] is True
        assert s["client"]["client_bound_phases"] == ["baseline"]
        assert s["client"]["capacity_judgement_affected"] is True
        assert s["validity"]["status"] == "degraded"
        assert any("no capacity conclusion" in r for r in s["validity"]["reasons"])
        claim = parse_questionnaire(b"schema: evalkit.questionnaire/1\nmodel: m\n"
                                    b"endpoint: http://h/v1\nQ4: {max_concurrent_streams_"
                                    b"per_node: 4, first_degrades: ttft, source: lab}\n")
        q4 = reconcile(claim, typed(s), None, RunTarget("m", "http://h/v1")).judgements["Q4"]
        assert q4.status == "unverified" and "client-bound" in q4.reason
        clean = summarize(self._run())
        assert clean["client"]["capacity_judgement_affected"] is False
        assert reconcile(claim, typed(clean), None, RunTarget("m", "http://h/v1")).judgements[
            "Q4"].status == "ok"

    def test_contract_keys_and_json_safety(self) -> None:
        """Every contract key is present, and the dict survives strict JSON."""
        s = summarize(self._run(), SummaryMeta(phases={"ramp": ClientCheck(0.001, 0.3)}))
        json.dumps(s, allow_nan=False)
        assert {"schema", "connect", "baseline", "prefill", "ramp", "client"} <= set(s)
        assert {"usage_reported", "tokens_per_chunk", "rtt_s"} <= set(s["connect"])
        assert {"ttft_s", "tpot_s", "itl_s", "stream_tokens_per_s", "requests"} <= \
            set(s["baseline"])
        assert {"tokens_per_s", "overhead_s", "r2", "points"} <= set(s["prefill"])
        assert {"levels", "max_sustained_concurrency", "first_degraded"} <= set(s["ramp"])
        level_keys = {"concurrency", "requests", "outcomes", "ttft_s", "tpot_s", "itl_s",
                      "stream_tokens_per_s", "aggregate_tokens_per_s", "stalls"}
        assert all(level_keys <= set(lv) for lv in s["ramp"]["levels"])
        assert {"p50", "p90", "p99", "n"} <= set(s["baseline"]["ttft_s"])
        assert {"loop_lag_p99_s", "client_bound"} <= set(s["client"])
        assert s["client"]["client_bound"] is False

    def test_documented_extra_keys_are_there(self) -> None:
        """The keys the module docstring promises to readers exist in a full run."""
        s = summarize(self._run())
        stats = {"admission_failure_rate", "failure_rate", "ttfa_s", "reasoning_first",
                 "e2e_s", "tokens_per_chunk", "output_tokens", "steady_state",
                 "stalled_streams", "max_gap_s", "output_length", "output_tokens_estimated"}
        assert stats <= set(s["baseline"]) and stats <= set(s["ramp"]["levels"][0])
        assert {"p10", "p1"} <= set(s["ramp"]["levels"][0]["stream_tokens_per_s"])
        assert {"status", "excess", "breaches", "ttft_p90_ratio", "tpot_p90_ratio"} <= \
            set(s["ramp"]["levels"][0])
        assert {"first_breach_concurrency", "breach_confirmed", "baseline_source",
                "max_sustained_is_lower_bound", "judged_on", "note"} <= set(s["ramp"])
        assert {"cache", "network", "output_length", "usage_honesty", "prompt_honesty",
                "streaming", "buffering"} == set(s["checks"])
        assert s["checks"]["network"] is None  # no rtt records, no meta rtt_s

    def test_missing_phases_are_none(self) -> None:
        """Only a baseline was run: the other sections are None, not empty numbers."""
        s = summarize([stream("b")])
        assert s["baseline"]["requests"] == 1
        for key in ("connect", "prefill", "ramp", "soak", "rate"):
            assert s[key] is None
        assert s["checks"]["cache"] is None and s["checks"]["network"] is None
        empty = summarize([])
        assert empty["baseline"] is None and empty["requests"] == 0
        json.dumps(empty, allow_nan=False)

    def test_ramp_level_1_stands_in_for_a_missing_baseline(self) -> None:
        """No baseline phase: ramp level 1 is the reference, and the summary says so."""
        recs = closed_loop("ramp", 1, 40) + closed_loop("ramp", 4, 10, ttft=0.5, t_start=50)
        s = summarize(recs)
        assert s["ramp"]["baseline_source"] == "ramp level 1"
        assert s["ramp"]["first_degraded"] == "ttft"
        assert s["ramp"]["max_sustained_concurrency"] == 1

    def test_soak_drift(self) -> None:
        """TTFT rising from 0.1 to 0.3 s over a soak shows as a 3× drift in p90."""
        recs = [stream(f"s{i}", "soak", 8, t0=float(i), ttft=0.1 if i < 30 else 0.3)
                for i in range(90)]
        s = summarize(recs)["soak"]
        assert s["concurrency"] == 8
        assert s["drift"]["ttft_p90_ratio"] == pytest.approx(3.0)
        assert s["drift"]["tpot_p90_ratio"] == pytest.approx(1.0)

    def test_meta_thresholds_and_versions(self) -> None:
        """Thresholds and versions from meta are used and echoed."""
        s = summarize([stream("b")], {"thresholds": {"stall_s": 0.3}, "suite_version": "9"})
        assert s["thresholds"]["stall_s"] == 0.3 and s["suite_version"] == "9"
        assert s["baseline"]["stall_threshold_s"] == 0.3

    def test_client_bound_phase_is_said_in_its_section(self) -> None:
        """A client-bound soak says so beside its numbers; the baseline did not."""
        recs = [stream("b")] + [stream(f"s{i}", "soak", 4, t0=i) for i in range(6)]
        s = summarize(recs, {"phases": {"soak": {"client_bound": True}}})
        assert s["soak"]["client_bound"] is True and s["baseline"]["client_bound"] is False


_chunk_lists = st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(0, 5)), max_size=6).map(
    lambda cs: sorted(cs))


_records = st.builds(
    RequestRecord,
    id=st.uuids().map(str),
    phase=st.sampled_from(["connect", "baseline", "prefill", "ramp", "soak", "rate", "cache",
                           "rtt", "warmup"]),
    level=st.one_of(st.none(), st.sampled_from([1, 2, 4, 8])),
    outcome=st.sampled_from(["ok", "rejected", "error", "incomplete", "timeout"]),
    t0_s=st.floats(0.0, 100.0),
    prompt_tokens=st.one_of(st.none(), st.sampled_from([64, 512, 2048])),
    requested_output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    counted_output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    usage_completion_tokens=st.one_of(st.none(), st.integers(0, 64)),
    chunks=_chunk_lists,
    send_lag_s=st.one_of(st.none(), st.floats(0.0, 0.1)),
    prompt_id=st.one_of(st.none(), st.sampled_from(["a", "b"])),
)


@given(st.lists(_records, max_size=25), st.booleans())
@settings(max_examples=60, deadline=None)
def test_any_records_give_strict_json(records: list[RequestRecord], bound: bool) -> None:
    """Whatever mix of phases, outcomes and gaps in the data: a summary, never NaN or a crash."""
    meta = {"levels": {"4": {"client_bound": bound}}, "rtt_s": 0.001}
    s = summarize(records, meta)
    json.dumps(s, allow_nan=False)
    assert s["requests"] == len(records)
    assert sum(s["outcomes"].values()) == len(records)


class TestSections:
    """Each section's exact keys (the contract readers code against) and its edge cases."""

    def test_connect_section(self) -> None:
        recs = [stream("c", "connect", ttft=0.3, usage=None, counted=10)]
        c = summarize(recs)["connect"]
        assert set(c) == {"usage_reported", "tokens_per_chunk", "rtt_s", "requests",
                          "outcomes", "ttft_s", "output_tokens_estimated", "validity",
                          "connections"}
        assert (c["usage_reported"], c["requests"], c["ttft_s"]) == (False, 1, 0.3)
        assert c["connections"] is None  # the record opened no connection in its send
        assert (c["outcomes"]["ok"], c["output_tokens_estimated"]) == (1, True)
        assert summarize([stream("c", "connect")])["connect"]["usage_reported"] is True
        failed_only = summarize([failed("c", "error", "connect")])["connect"]
        assert (failed_only["usage_reported"], failed_only["ttft_s"]) == (None, None)
        assert failed_only["output_tokens_estimated"] is False

    def test_prefill_keys_points_and_confidence(self) -> None:
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.05 + 0.0001 * p, n=2,
                       prompt_tokens=p, prompt_tokens_estimated=True)
                for i, p in enumerate((100, 1000))]
        fit = summarize(recs)["prefill"]
        assert set(fit) == {"tokens_per_s", "overhead_s", "r2", "slope_s_per_token", "points",
                            "lengths", "requests", "prompt_tokens_estimated", "lengths_from",
                            "reason", "low_confidence", "validity", "slope_ci", "overhead_s_ci",
                            "tokens_per_s_ci", "tokens_per_s_at_least"}
        assert fit["slope_ci"] is None  # two lengths: a line, but no interval
        assert fit["points"] == [{"prompt_tokens": 100, "ttft_s": pytest.approx(0.06), "n": 1},
                                 {"prompt_tokens": 1000, "ttft_s": pytest.approx(0.15), "n": 1}]
        assert (fit["lengths"], fit["requests"], fit["low_confidence"]) == (2, 2, True)
        assert fit["prompt_tokens_estimated"] is True and fit["reason"] is None
        assert fit["slope_s_per_token"] == pytest.approx(0.0001)
        three = summarize([*recs, stream("p3", "prefill", t0=9, ttft=0.25, n=2,
                                         prompt_tokens=2000)])["prefill"]
        assert (three["low_confidence"], three["prompt_tokens_estimated"]) == (False, True)

    def test_prefill_uses_only_ok_prefill_requests_with_a_length(self) -> None:
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.05 + 0.0001 * p, n=2, prompt_tokens=p)
                for i, p in enumerate((100, 1000, 2000))]
        noise = [stream("b", t0=10, ttft=9.0, n=2, prompt_tokens=500),            # baseline
                 stream("x", "prefill", t0=11, ttft=9.0, n=2),                    # no length
                 stream("f", "prefill", t0=12, ttft=9.0, n=2, prompt_tokens=300,
                        outcome="incomplete")]                                    # not ok
        fit = summarize(recs + noise)["prefill"]
        assert fit["requests"] == 3 and fit["tokens_per_s"] == pytest.approx(10_000)
        assert fit["r2"] == pytest.approx(1.0)

    def test_prefill_r2_of_a_noisy_fit(self) -> None:
        """r² = 1 − SS_res/SS_tot, by hand for three points off a line."""
        ttft = {100: 0.06, 200: 0.08, 300: 0.07}
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=t, n=2, prompt_tokens=p)
                for i, (p, t) in enumerate(ttft.items())]
        x, y = np.array(list(ttft)), np.array(list(ttft.values()))
        b, a = np.polyfit(x, y, 1)
        r2 = 1 - ((y - (a + b * x)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        fit = summarize(recs)["prefill"]
        assert fit["r2"] == pytest.approx(r2) and 0 < r2 < 1
        assert fit["slope_s_per_token"] == pytest.approx(b)

    def test_a_flat_prefill_has_no_rate(self) -> None:
        """TTFT that does not grow with the prompt: slope 0, no rate, r² undefined."""
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.0, n=2, prompt_tokens=p)
                for i, p in enumerate((100, 1000, 2000))]
        fit = summarize(recs)["prefill"]
        assert fit["tokens_per_s"] is None and fit["r2"] is None
        assert fit["slope_s_per_token"] == 0.0
        assert "slope" in fit["reason"]

    def test_ramp_section_keys_thresholds_and_targets(self) -> None:
        recs = closed_loop("ramp", 2, 4, t_start=0) + closed_loop("ramp", 4, 4, t_start=10)
        recs.append(stream("u", "ramp", None, t0=30))
        s = summarize(recs, {"thresholds": {"stall_s": 0.3, "ttft_p90_ratio": 5}})
        ramp = s["ramp"]
        assert ramp["unlevelled_requests"] == 1
        assert ramp["baseline_client_bound"] is False and ramp["baseline_source"] is None
        assert ramp["thresholds"]["ttft_p90_ratio"] == 5
        assert [lv["stall_threshold_s"] for lv in ramp["levels"]] == [0.3, 0.3]
        assert [lv["steady_state"]["target_inflight"] for lv in ramp["levels"]] == [2, 4]

    def test_soak_section(self) -> None:
        recs = closed_loop("soak", 3, 4)
        soak = summarize(recs, {"thresholds": {"stall_s": 0.3}})["soak"]
        assert soak["concurrency"] == 3 and soak["stall_threshold_s"] == 0.3
        assert soak["steady_state"]["target_inflight"] == 3
        mixed = [*recs, stream("other", "soak", 5, t0=1)]
        assert summarize(mixed)["soak"]["concurrency"] is None

    @pytest.mark.parametrize(("t0s", "rps"), [((0.0, 0.5), 2.0), ((0.0, 2.0, 4.0), 0.5),
                                              ((1.0, 1.0), None), ((3.0,), None)])
    def test_rate_arrivals(self, t0s: tuple[float, ...], rps: float | None) -> None:
        recs = [stream(f"r{i}", "rate", None, t0=t, send_lag_s=0.0) for i, t in enumerate(t0s)]
        rate = summarize(recs, {"thresholds": {"stall_s": 0.3}})["rate"]
        assert rate["arrival_rps"] == (pytest.approx(rps) if rps else None)
        assert rate["stall_threshold_s"] == 0.3

    def test_drift_windows(self) -> None:
        """Thirds of the soak by start time; each window's own p90; last over first."""
        recs = [stream(f"s{i}", "soak", 2, t0=float(i), ttft=0.1 + 0.1 * (i // 3),
                       gap=0.01 * (1 + i // 3)) for i in range(9)]
        drift = summarize(recs)["soak"]["drift"]
        assert set(drift) == {"windows", "ttft_p90_ratio", "tpot_p90_ratio"}
        assert [(w["start_s"], w["end_s"]) for w in drift["windows"]] == [
            (0.0, pytest.approx(8 / 3)), (pytest.approx(8 / 3), pytest.approx(16 / 3)),
            (pytest.approx(16 / 3), 8.0)]
        assert [w["ttft_s"]["p90"] for w in drift["windows"]] == pytest.approx([0.1, 0.2, 0.3])
        assert [w["tpot_s"]["p90"] for w in drift["windows"]] == pytest.approx(
            [0.01, 0.02, 0.03])
        assert drift["ttft_p90_ratio"] == pytest.approx(3.0)
        assert drift["tpot_p90_ratio"] == pytest.approx(3.0)
        assert summarize(recs[:6])["soak"]["drift"] is not None  # two per window: enough
        assert summarize(recs[:5])["soak"]["drift"] is None

    def test_meta_from_plain_data(self) -> None:
        meta = SummaryMeta.from_dict({"phases": {"baseline": {"cpu_fraction": 0.4}},
                                      "levels": {"8": {"loop_lag_p99_s": 0.01}}})
        assert meta.phases["baseline"] == ClientCheck(None, 0.4, False)
        assert meta.levels[8] == ClientCheck(0.01, None, False)
        assert (meta.tool_version, meta.run_status) == (SummaryMeta().tool_version, None)
        s = summarize([stream("b")], {"phases": {"baseline": {"cpu_fraction": 0.4}}})
        assert s["client"]["cpu_fraction_max"] == 0.4


class TestSummaryParts:
    def test_ramp_keys(self) -> None:
        s = summarize(closed_loop("ramp", 1, 3) + closed_loop("ramp", 2, 3, t_start=10))
        assert set(s["ramp"]) == {
            "levels", "max_sustained_concurrency", "first_degraded", "first_degraded_metric",
            "first_breach_concurrency", "first_degraded_tied", "first_degraded_tie_rule",
            "breach_confirmed", "max_sustained_is_lower_bound", "first_breach_failures",
            "note", "client_bound_levels", "judged_on", "thresholds", "baseline_source",
            "baseline_client_bound", "unlevelled_requests", "tie_levels",
            "first_tie_concurrency", "max_sustained_bounded_by_tie", "breach_rule",
            "failure_kind_rule", "underloaded_levels", "underload_rule",
            "max_goodput_concurrency", "max_goodput_is_lower_bound", "goodput_stopped_at",
            "goodput_target", "goodput_limits", "goodput_rule"}
        assert {"ttft_p90_ratio", "tpot_p90_ratio", "breaches", "would_breach", "failures",
                "failure_kinds", "failure_kind", "achieved_concurrency",
                "excess", "client_bound", "status", "validity", "ttft_p90_ratio_ci",
                "tpot_p90_ratio_ci", "excess_ci", "ties", "tie_requests",
                "failure_rate_ci"} <= set(s["ramp"]["levels"][1])

    def test_client_section(self) -> None:
        meta = {"phases": {"baseline": {"cpu_fraction": 0.3, "client_bound": True,
                                        "client_bound_reasons": ["cpu"]},
                           "soak": {"loop_lag_p99_s": 0.01, "send_lag_p99_s": 0.002,
                                    "send_lag_fraction": 0.001}},
                "levels": {"16": {"cpu_fraction": 0.95}, "4": {
                    "client_bound": True, "client_bound_reasons": ["send_lag", "cpu"],
                    "send_lag_p99_s": 0.04, "send_lag_fraction": 0.08}}}
        client = summarize([stream("b")], meta)["client"]
        assert set(client) == {"loop_lag_p99_s", "cpu_fraction_max", "send_lag_p99_s",
                               "send_lag_fraction_max", "client_bound", "client_bound_reasons",
                               "client_bound_phases", "client_bound_levels", "phases",
                               "levels", "capacity_judgement_affected"}
        assert (client["cpu_fraction_max"], client["loop_lag_p99_s"]) == (0.95, 0.01)
        # the worst of every phase and level, and every reason any of them gave, once
        assert (client["send_lag_p99_s"], client["send_lag_fraction_max"]) == (0.04, 0.08)
        assert client["client_bound_reasons"] == ["cpu", "send_lag"]
        assert client["levels"]["4"]["client_bound_reasons"] == ["send_lag", "cpu"]
        assert client["levels"]["16"]["send_lag_fraction"] is None
        assert (client["client_bound_phases"], client["client_bound_levels"]) == (
            ["baseline"], [4])
        assert list(client["levels"]) == ["4", "16"]
        soak = client["phases"]["soak"]
        assert (soak["loop_lag_p99_s"], soak["cpu_fraction"], soak["client_bound"]) == (
            0.01, None, False)
        assert summarize([stream("b")])["client"]["cpu_fraction_max"] is None

    def test_network_from_records_or_meta(self) -> None:
        recs = [stream(f"rtt{i}", "rtt", None, t0=i, n=0, usage=None, counted=None,
                       ttft_s=0.02) for i in range(3)]  # no e2e: the round trip is ttft
        recs += [stream(f"b{i}", t0=10 + i, ttft=0.2) for i in range(3)]
        net = summarize(recs, {"rtt_s": 0.5})["checks"]["network"]
        assert set(net) == {"rtt_s", "rtt", "source", "baseline_ttft_p50_s", "share_of_ttft"}
        assert (net["rtt_s"], net["source"], net["rtt"]["n"]) == (pytest.approx(0.02),
                                                                  "rtt records", 3)
        assert net["baseline_ttft_p50_s"] == pytest.approx(0.2)
        meta_only = summarize(recs[3:], {"rtt_s": 0.05})["checks"]["network"]
        assert (meta_only["rtt_s"], meta_only["source"]) == (0.05, "meta")
        assert meta_only["share_of_ttft"] == pytest.approx(0.25)

    def test_usage_honesty_edges(self) -> None:
        recs = [stream("a", n=100, usage=125, counted=100),   # 25 % over: at the tolerance
                stream("b", n=100, usage=126, counted=100, t0=1),  # over it
                stream("c", n=100, usage=100, counted=0, t0=2)]    # nothing counted: skipped
        check = summarize(recs)["checks"]["usage_honesty"]
        assert set(check) == {"checked", "usage_over_counted", "disagreeing", "outliers",
                              "flagged", "tolerance"}
        assert (check["checked"], check["disagreeing"], check["tolerance"]) == (2, 1, 0.25)
        assert check["outliers"] == 0  # 125 and 126 sit at the run's own ratio
        assert check["usage_over_counted"]["n"] == 2
        assert check["flagged"] is True  # median 1.255
        at_edge = summarize([stream("a", n=100, usage=125, counted=100)])
        assert at_edge["checks"]["usage_honesty"]["flagged"] is False
        none = summarize([stream("a", n=10, usage=None, counted=10)])["checks"][
            "usage_honesty"]
        assert (none["checked"], none["disagreeing"], none["flagged"]) == (0, 0, None)

    def test_meta_thresholds_reach_every_check(self) -> None:
        recs = [stream("c0", "cache", t0=0, ttft=0.2, prompt_id="p"),
                stream("c1", "cache", t0=1, ttft=0.14, prompt_id="p"),
                *[stream(f"b{i}", t0=10 + i) for i in range(3)]]
        assert summarize(recs)["checks"]["cache"]["prefix_cache"] is False      # 0.7 ≥ 0.5
        tuned = summarize(recs, {"thresholds": {"cache_ttft_ratio": 0.8}})
        assert tuned["checks"]["cache"]["prefix_cache"] is True                  # 0.7 < 0.8
        assert tuned["baseline"]["steady_state"]["target_inflight"] == 1


class TestMoreEdges:
    """Edges the mutants of the judgement, the drift and the prefill interval pointed to."""

    def test_a_breached_level_would_breach_nothing(self) -> None:
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE)
        assert (out["levels"][1]["breaches"], out["levels"][1]["would_breach"]) == (["ttft"],
                                                                                    [])

    def test_no_ok_count_is_no_success(self) -> None:
        """Two requests, both errors, no 'ok' key and no failure_rate: the level failed."""
        lv = {"concurrency": 2, "requests": 2, "outcomes": {"error": 2}}
        assert judge_ramp([lv], BASE)["levels"][0]["status"] == "failed"

    def test_the_given_failure_rate_is_used(self) -> None:
        lv = {**_level(4, .1, .02), "failure_rate": 0.05}  # outcomes say all ok
        assert judge_ramp([_level(1, .1, .02), lv], BASE)["levels"][1]["breaches"] == [
            "admission"]

    def test_a_zero_baseline_gives_no_ratio(self) -> None:
        out = judge_ramp([_level(1, .1, .02)], {"ttft_s": {"p90": 0.0}, "tpot_s": {"p90": .02}})
        assert out["levels"][0]["ttft_p90_ratio"] is None

    def test_chunks_frame(self) -> None:
        chunks = chunks_frame([stream("a", n=3, tpc=2, t0=1.0), stream("b", n=2, t0=5.0)])
        assert list(chunks["id"]) == ["a", "a", "a", "b", "b"]
        assert list(chunks["t_s"]) == pytest.approx([1.1, 1.12, 1.14, 5.1, 5.12])
        assert list(chunks["tokens"]) == [2, 2, 2, 1, 1]

    def test_drift_windows_split_at_their_edges(self) -> None:
        """Starts 0..6 s in thirds [0, 2), [2, 4), [4, 6]: a start on an edge opens the
        later window, and the last start is in the last window."""
        recs = [stream(f"s{i}", "soak", 2, t0=float(i), ttft=0.1 * (i + 1)) for i in range(7)]
        drift = summarize(recs)["soak"]["drift"]
        assert [w["ttft_s"]["n"] for w in drift["windows"]] == [2, 2, 3]
        assert [w["ttft_s"]["p90"] for w in drift["windows"]] == pytest.approx([0.19, 0.39,
                                                                               0.68])

    def test_the_prefill_rate_and_its_interval(self) -> None:
        """Noisy points: the rate's interval is the slope's, inverted; two points give no
        interval; a slope whose interval reaches 0 gives only a lower bound on the rate."""
        def fit(ttfts: dict[int, float]) -> dict:
            recs = [stream(f"p{p}", "prefill", t0=i, ttft=t, n=2, prompt_tokens=p)
                    for i, (p, t) in enumerate(ttfts.items())]
            return summarize(recs)["prefill"]

        noisy = fit({100: 0.061, 1000: 0.148, 2000: 0.252, 3000: 0.349})
        low, high = noisy["slope_ci"]
        assert 0 < low < noisy["slope_s_per_token"] < high
        assert noisy["tokens_per_s_ci"] == pytest.approx([1 / high, 1 / low])
        assert noisy["tokens_per_s"] == pytest.approx(1 / noisy["slope_s_per_token"])
        assert fit({100: 0.06, 1000: 0.15})["tokens_per_s_ci"] is None
        flat = fit({100: 0.10, 1000: 0.13, 2000: 0.09, 3000: 0.125})
        assert flat["slope_s_per_token"] > 0 and flat["slope_ci"][0] <= 0
        assert flat["tokens_per_s"] is None and flat["tokens_per_s_ci"] is None
        assert flat["tokens_per_s_at_least"] == pytest.approx(1 / flat["slope_ci"][1])
        assert f"above {1 / flat['slope_ci'][1]:,.0f} tokens/s" in flat["reason"]

    def test_meta_run_status_and_versions_from_plain_data(self) -> None:
        meta = SummaryMeta.from_dict({"run_status": "failed", "run_error": "HTTP 404\nmore",
                                      "tool_version": "9.9", "suite_version": "7"})
        assert (meta.run_status, meta.run_error) == ("failed", "HTTP 404\nmore")
        assert (meta.tool_version, meta.suite_version) == ("9.9", "7")
        assert SummaryMeta.from_dict({}).suite_version == SummaryMeta().suite_version
        s = summarize([failed("c", "error", "connect")], {"run_status": "failed",
                                                          "run_error": "HTTP 404\nmore"})
        assert s["validity"]["reasons"][0] == "the connect gate failed: HTTP 404"


class TestTopLevel:
    def test_top_level_keys_and_what_they_say(self) -> None:
        s = summarize([stream("b", usage=None, counted=10), failed("f", "error", t0=1)],
                      {"tool_version": "1.2.3"})
        assert set(s) == {"schema", "tool", "tool_version", "suite_version", "requests",
                          "outcomes", "output_tokens_estimated", "thresholds", "connect",
                          "baseline", "prefill", "ramp", "soak", "rate", "precision", "checks",
                          "client", "validity", "rate_limits", "workload", "trace",
                          "reconnects", "configuration", "prompt_text"}
        assert s["precision"] is None  # no canary was sent
        assert s["reconnects"] == 0 and s["configuration"]["findings"] == []
        assert s["workload"] is None and s["trace"] is None  # no workload, no trace
        assert (s["tool"], s["tool_version"], s["requests"]) == ("evalkit", "1.2.3", 2)
        assert (s["outcomes"]["ok"], s["outcomes"]["error"]) == (1, 1)
        assert s["output_tokens_estimated"] is True

    def test_a_bound_rate_phase_says_so(self) -> None:
        recs = [stream(f"r{i}", "rate", None, t0=i * 0.5, send_lag_s=0.0) for i in range(3)]
        assert summarize(recs, {"phases": {"rate": {"client_bound": True}}})["rate"][
            "client_bound"] is True

    def test_checks_take_the_runs_thresholds(self) -> None:
        recs = [stream(f"a{i}", n=85, usage=85 * 3 // 2, counted=85, t0=i,
                       requested_output_tokens=150) for i in range(3)]
        s = summarize(recs, {"thresholds": {"usage_disagreement": 0.6,
                                            "output_shortfall": 0.2}})
        assert s["checks"]["usage_honesty"]["flagged"] is False    # 1.5× within ±60 %
        assert s["checks"]["output_length"]["flagged"] is False    # 127 of 150: within 20 %
        default = summarize(recs)["checks"]
        assert default["usage_honesty"]["flagged"] is True
        assert default["output_length"]["flagged"] is True

    def test_a_failed_cache_request_is_no_first_ttft(self) -> None:
        recs = [failed("x", "error", "cache", t0=0.0),
                stream("c1", "cache", t0=1, ttft=0.2, prompt_id="p"),
                stream("c2", "cache", t0=2, ttft=0.05, prompt_id="p")]
        recs[0] = RequestRecord(id="x", phase="cache", level=1, outcome="error", t0_s=0.0,
                                prompt_id="p")
        out = summarize(recs)["checks"]["cache"]
        assert (out["pairs"], out["repeat_over_first"]) == (1, pytest.approx(0.25))


def test_a_lost_worker_is_said_only_where_one_was_lost() -> None:
    """summary.json's client checks carry `lost` only for the level that lost a worker."""
    client = client_section(SummaryMeta(phases={"ramp": ClientCheck(0.001, 0.3)},
                                        levels={8: ClientCheck(lost=("worker 2 died",))}))
    assert "lost" not in client["phases"]["ramp"]
    assert list(client["levels"]["8"]["lost"]) == ["worker 2 died"]


def test_meta_from_plain_data_keeps_lost_workers_and_reasons() -> None:
    """A Ray run's meta after a JSON round trip: the lost worker and the reasons stay."""
    meta = SummaryMeta.from_dict({"levels": {"8": {
        "client_bound": True, "lost": ["worker 2 died"], "client_bound_reasons": ["cpu"]}}})
    assert meta.levels[8] == ClientCheck(client_bound=True, lost=("worker 2 died",),
                                         client_bound_reasons=("cpu",))


def test_a_lost_worker_degrades_its_phase_its_level_and_the_run() -> None:
    """Scale-out: a worker lost during the baseline and another at level 2 each degrade
    where they were lost, and the run names both (its ramp level is not a phase)."""
    recs = [stream(f"b{i}", t0=float(i)) for i in range(10)] + closed_loop("ramp", 2, 5,
                                                                              t_start=20)
    v = summarize(recs, SummaryMeta(phases={"baseline": ClientCheck(lost=("w1 died",))},
                                    levels={2: ClientCheck(lost=("w2 died",))}))["validity"]
    assert (v["phases"]["baseline"]["status"], v["phases"]["baseline"]["reasons"]) == (
        "degraded", ["a client worker was lost: w1 died"])
    assert (v["levels"]["2"]["status"], v["levels"]["2"]["reasons"]) == (
        "degraded", ["a client worker was lost: w2 died"])
    assert v["status"] == "degraded"
    assert "a client worker was lost: w2 died" in v["reasons"]
    assert v["phases"]["ramp"]["status"] == "valid"


@pytest.mark.parametrize(("requested", "checked", "flagged"), [(1, 1, False), (None, 0, None)])
def test_output_length_checks_every_requested_length(requested: int | None, checked: int,
                                                     flagged: bool | None) -> None:
    """A request for one token is checked like any other; with no length requested there
    is nothing to flag (None, not a clean False)."""
    out = summarize([stream("a", n=1, requested_output_tokens=requested)])["baseline"]
    assert (out["output_length"]["checked"], out["output_length"]["flagged"]) == (
        checked, flagged)


def test_without_usage_the_output_is_our_count_and_said_estimated() -> None:
    """No usage from the server: the output is our count of the text (12), not the chunks'
    token sum (10), and it is flagged as estimated even when the record did not say so."""
    b = summarize([stream("a", n=10, usage=None, counted=12, output_tokens=None,
                          output_tokens_estimated=False)])["baseline"]
    assert (b["output_tokens"]["p50"], b["output_tokens_estimated"]) == (12, True)


def test_a_stream_whose_first_chunk_carries_every_token_has_no_tpot() -> None:
    """Two tokens, both in the first chunk, the stream closing 0.2 s later: no token came
    after the first chunk, so there is no TPOT and no per-stream rate (not 0 tok/s)."""
    b = summarize([stream("a", n=1, tpc=2, usage=2, e2e_s=0.3)])["baseline"]
    assert (b["tpot_s"]["n"], b["stream_tokens_per_s"]["n"]) == (0, 0)
