"""Comparison core: best-of-row, trends and regressions, and what is left out and why."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from evalkit.analysis.summary import Summary
from evalkit.review import compare
from evalkit.review.compare import RunView, compare_runs
from evalkit.review.scorecard import Scorecard


def _summary(ttft: float, rate: float, sustained: int, agg: float) -> dict[str, Any]:
    levels = [
        {"concurrency": c, "ttft_s": {"p50": ttft, "p90": ttft * (1 + c / 8)},
         "tpot_s": {"p50": 1 / rate, "p90": 1.2 / rate}, "aggregate_tokens_per_s": agg * c / 8}
        for c in (1, 2, 4, 8)
    ]
    return {"schema": "evalkit.summary/1",
            "baseline": {"ttft_s": {"p50": ttft}, "stream_tokens_per_s": {"p50": rate}},
            "prefill": {"tokens_per_s": 8000.0},
            "ramp": {"levels": levels, "max_sustained_concurrency": sustained,
                     "first_degraded": "itl"}}


READY = {"verdict": {"streaming_ready": True}, "run": {"validity": "valid"}}


def _run(label: str, target: str, started: str, summary: dict[str, Any],
         suite: str = "1", prompt_tokens: int = 256,
         scorecard: dict[str, Any] | None = READY) -> RunView:
    settings = {"prompt_tokens": prompt_tokens, "output_tokens": 64, "levels": [1, 2, 4, 8]}
    return RunView(label, target, started, suite, settings, Summary.from_json(summary),
                   None if scorecard is None else Scorecard.from_json(scorecard))


class TestSideBySide:
    def test_best_value_of_each_row_follows_its_direction(self) -> None:
        """Lower TTFT and higher throughput win their rows."""
        cmp = compare_runs([_run("a", "A", "2026-01", _summary(0.2, 50, 4, 800)),
                            _run("b", "B", "2026-01", _summary(0.1, 40, 8, 900))])
        rows = {r.figure.key: r for r in cmp.rows}
        assert [c.best for c in rows["baseline_ttft_p50_s"].cells] == [False, True]
        assert [c.best for c in rows["baseline_stream_rate_p50"].cells] == [True, False]
        assert [c.best for c in rows["max_sustained_concurrency"].cells] == [False, True]
        assert rows["sustained_ttft_p90_s"].cells[1].value == pytest.approx(0.1 * 2)
        assert cmp.trends == {} and cmp.regressions == []

    def test_a_star_is_earned(self) -> None:
        """★ never goes to a run not judged streaming-ready (or with no scorecard), nor to a
        peak read above the run's sustained level; the row says why it has none."""
        fast_but_not_ready = _run("b", "B", "1", _summary(0.1, 90, 8, 900),
                                  scorecard={"verdict": {"streaming_ready": False}})
        cmp = compare_runs([_run("a", "A", "1", _summary(0.2, 50, 8, 800)), fast_but_not_ready,
                            _run("c", "C", "1", _summary(0.3, 40, 8, 700), scorecard=None)])
        rows = {r.figure.key: r for r in cmp.rows}
        # b is best on TTFT and rate, but not streaming-ready: no star on those rows at all
        for key in ("baseline_ttft_p50_s", "baseline_stream_rate_p50"):
            assert [c.best for c in rows[key].cells] == [False, False, False], key
            assert rows[key].no_star == "no ★: the best value is from a run that did not earn one"
            assert rows[key].cells[1].unstarred == "not streaming-ready"
        # a run with the best value among those that earned one, and the best of all, wins
        assert [c.best for c in rows["max_sustained_concurrency"].cells] == [True, False, False]
        # a ready run whose peak was read above its sustained level wins no star either
        above = _summary(0.05, 50, 4, 5000)
        cmp = compare_runs([_run("a", "A", "1", above), _run("b", "B", "1", _summary(
            0.2, 50, 8, 800))])
        peak = next(r for r in cmp.rows if r.figure.key == "peak_aggregate_tokens_per_s")
        assert [c.level for c in peak.cells] == [8, 8]
        assert peak.cells[0].unstarred == "read at 8 streams, above its max sustained level"
        assert [c.best for c in peak.cells] == [False, False]

    def test_load_figures_at_different_loads_get_no_star(self) -> None:
        """TTFT p90 at max sustained load compares 4 streams with 8 only by saying so."""
        cmp = compare_runs([_run("a", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("b", "B", "1", _summary(0.1, 40, 8, 900))])
        row = next(r for r in cmp.rows if r.figure.key == "sustained_ttft_p90_s")
        assert [c.level for c in row.cells] == [4, 8]
        assert not any(c.best for c in row.cells)
        assert row.no_star == "no ★: measured at different loads (4 streams, 8 streams)"
        data = cmp.to_dict()["figures"]["sustained_ttft_p90_s"]
        assert data["levels"] == [4, 8] and data["best"] == [False, False]

    def test_different_suite_version_is_left_out_with_the_reason(self) -> None:
        """A run from another suite version is named, not silently averaged in."""
        cmp = compare_runs([_run("a", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("b", "B", "1", _summary(0.1, 40, 8, 900)),
                            _run("old", "C", "1", _summary(0.05, 90, 64, 9000), suite="0")])
        assert all(row.cells[2].value is None for row in cmp.rows)
        assert any("old: suite version 0 differs" in why for why in cmp.left_out)

    def test_load_figures_need_equal_prompt_lengths_but_prefill_does_not(self) -> None:
        cmp = compare_runs([_run("a", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("b", "B", "1", _summary(0.1, 40, 8, 900), prompt_tokens=2048)])
        rows = {r.figure.key: r for r in cmp.rows}
        assert rows["baseline_ttft_p50_s"].cells[1].value is None
        why = str(rows["baseline_ttft_p50_s"].cells[1].excluded)
        assert "prompt length (tokens) 2048 differs from 256" in why
        assert compare.left_out_words(why) == "left out: other prompt length"
        assert rows["prefill_tokens_per_s"].cells[1].value == 8000.0


class TestOverTime:
    def test_slower_quarter_is_a_regression_and_a_faster_one_is_not(self) -> None:
        """Runs of one target become a trend, oldest first; only worsening is flagged."""
        runs = [_run("q3", "A", "2026-09-30", _summary(0.3, 40, 4, 700)),
                _run("q1", "A", "2026-03-31", _summary(0.2, 50, 4, 800)),
                _run("q2", "A", "2026-06-30", _summary(0.19, 51, 4, 810))]
        cmp = compare_runs(runs)
        assert cmp.trends == {"A": [1, 2, 0]}
        flagged = {(g.figure, g.before_label, g.after_label) for g in cmp.regressions}
        assert ("TTFT p50, alone", "q2", "q3") in flagged
        assert ("Stream rate p50, alone", "q2", "q3") in flagged
        assert not any(g.after_label == "q2" for g in cmp.regressions)
        ttft = next(g for g in cmp.regressions if g.figure == "TTFT p50, alone")
        assert ttft.change == pytest.approx(0.3 / 0.19 - 1)
        assert "against a tolerance of 10%" in ttft.sentence
        # each figure in its unit, without false precision
        assert ttft.sentence.startswith("TTFT p50, alone: 190 ms (q2) → 300 ms (q3), +58%")

    def test_change_within_tolerance_is_not_flagged(self) -> None:
        cmp = compare_runs([_run("q1", "A", "1", _summary(0.20, 50, 4, 800)),
                            _run("q2", "A", "2", _summary(0.21, 48, 4, 790))])
        assert cmp.regressions == []
        assert compare_runs(cmp.runs, tolerance=0.01).regressions != []

    def test_json_names_runs_and_regressions(self) -> None:
        cmp = compare_runs([_run("q1", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("q2", "A", "2", _summary(0.4, 50, 2, 800))])
        data = cmp.to_dict()
        assert data["schema"] == "evalkit.compare/1"
        assert data["trends"] == {"A": ["q1", "q2"]}
        assert {r["figure"] for r in data["regressions"]} >= {
            "TTFT p50, alone", "Max sustained concurrent streams"}


def test_hostile_vendor_names_stay_literal_chart_text() -> None:
    """A questionnaire's vendor name reaches chart legends: never mathtext, never markup."""
    from evalkit.render.comparison import _overlay

    for name in ["$\\frac{1}{0}$ <b>x</b> &", "a$b", "$$", "\\$x$"]:
        svg = _overlay([_run(name, "A", "1", _summary(0.2, 50, 4, 800))],
                       [("TTFT p50", lambda lv: lv.ttft_s.p50, 1000.0)], ["ms"])
        assert svg is not None and "<b>" not in svg


class TestJudged:
    """A regression gate must know whether it judged anything at all."""

    def test_trend_of_comparable_runs_is_judged(self) -> None:
        cmp = compare_runs([_run("q1", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("q2", "A", "2", _summary(0.2, 50, 4, 800)),
                            _run("b", "B", "1", _summary(0.1, 40, 8, 900))])
        assert cmp.judged == ["A"] and cmp.not_judged == {}
        assert cmp.to_dict()["judged_trends"] == ["A"]

    def test_trend_whose_runs_were_left_out_is_not_judged_and_says_why(self) -> None:
        """A's second quarter is another suite version: A has nothing comparable; B has."""
        cmp = compare_runs([_run("a1", "A", "1", _summary(0.2, 50, 4, 800)),
                            _run("a2", "A", "2", _summary(0.9, 5, 1, 80), suite="0"),
                            _run("b1", "B", "1", _summary(0.1, 40, 8, 900)),
                            _run("b2", "B", "2", _summary(0.1, 40, 8, 900))])
        assert cmp.judged == ["B"]
        assert "a2: suite version 0 differs from 1" in cmp.not_judged["A"]
        assert cmp.regressions == []  # a2 is far worse, but not comparable
        assert cmp.to_dict()["not_judged"] == cmp.not_judged

    def test_trend_with_no_figure_measured_twice_is_not_judged(self) -> None:
        cmp = compare_runs([_run("q1", "A", "1", {"schema": "evalkit.summary/1"}),
                            _run("q2", "A", "2", _summary(0.2, 50, 4, 800))])
        assert cmp.judged == []
        assert cmp.not_judged == {"A": "no key figure was measured in two of its 2 runs"}


class TestRegressionGate:
    """`--fail-on regression` (render_comparison(require_trend=True)) never passes silently."""

    def test_no_two_runs_of_one_vendor_is_a_usage_error_naming_each_runs_group(self) -> None:
        from pathlib import Path

        from evalkit.errors import UsageError
        from evalkit.render.comparison import CompareInput, require_judged_trend

        runs = [replace(_run("q1", "m at http://h:1/v1", "1", _summary(0.2, 50, 4, 800)),
                        grouped_by="model and endpoint URL"),
                replace(_run("q2", "m at http://h:2/v1", "2", _summary(0.2, 50, 4, 800)),
                        grouped_by="model and endpoint URL")]
        with pytest.raises(UsageError) as exc:
            require_judged_trend(compare_runs(runs), [CompareInput(Path("r/q1")),
                                                     CompareInput(Path("r/q2"))])
        text = str(exc.value)
        assert text.startswith("--fail-on regression has no trend to judge")
        assert "run 1 (r/q1): 'm at http://h:1/v1' (model and endpoint URL)" in text
        assert "run 2 (r/q2): 'm at http://h:2/v1'" in text
        assert "--same-vendor NAME" in text and "probe --vendor NAME" in text

    def test_some_vendor_judged_passes(self) -> None:
        from pathlib import Path

        from evalkit.render.comparison import CompareInput, require_judged_trend

        runs = [_run("a1", "A", "1", _summary(0.2, 50, 4, 800)),
                _run("a2", "A", "2", _summary(0.2, 50, 4, 800), suite="0"),
                _run("b1", "B", "1", _summary(0.1, 40, 8, 900)),
                _run("b2", "B", "2", _summary(0.1, 40, 8, 900))]
        require_judged_trend(compare_runs(runs), [CompareInput(Path(r.label)) for r in runs])


@pytest.mark.parametrize(("value", "name"), [
    ("Acme", "Acme"), ("  Acme \n Cloud ", "Acme Cloud"), ("x" * 100, "x" * 100),
    ("x" * 101, None), ("", None), ("   ", None), (None, None), (7, None), (["Acme"], None),
    ("Acme\x1b[2J", None), ("Acme\u202eduA", None),
])
def test_vendor_label_is_a_short_line_of_text_or_nothing(value: Any, name: str | None) -> None:
    """run.json's `vendor` is input: a name only if it is a short, printable line."""
    from evalkit.render.comparison import vendor_name

    assert vendor_name(value) == name


def test_compare_sets_the_highest_level_within_each_slo_side_by_side() -> None:
    """Each run's ramp.max_goodput_concurrency is a row per latency profile, higher is
    better; an older summary without goodput gives no value, never zero."""
    from evalkit.review.compare import RunView, compare_runs

    def view(label: str, best: dict[str, int | None] | None) -> RunView:
        ramp: dict = {"levels": [{"concurrency": 1, "requests": 10,
                                  "outcomes": {"ok": 10}}]}
        if best is not None:
            ramp["max_goodput_concurrency"] = best
        return RunView(label, label, "2026-01-01", "1", {}, Summary.from_json({"ramp": ramp}))

    cmp = compare_runs([view("a", {"voice_agent": 4, "live_suggestions": None}),
                        view("b", {"voice_agent": 8, "live_suggestions": 2}),
                        view("c", None)])
    rows = {r.figure.key: r for r in cmp.rows}
    assert [c.value for c in rows["max_goodput_concurrency.voice_agent"].cells] == [4, 8, None]
    assert [c.value for c in rows["max_goodput_concurrency.live_suggestions"].cells] == [
        None, 2, None]
    assert "max_goodput_concurrency.batch" not in rows
    assert rows["max_goodput_concurrency.voice_agent"].figure.title == (
        "Highest level within the voice agent SLO")


def test_cost_rows_star_the_cheapest_at_the_slo_only_where_workloads_are_alike() -> None:
    """Cost rows come from each scorecard's `cost`; the cheapest per million tokens within
    an SLO earns the ★ among runs of the same prompt and output lengths and currency."""
    from evalkit.review.compare import RunView, compare_runs

    def view(label: str, per_m: float, output: int = 128, cur: str = "USD") -> RunView:
        card = {"verdict": {"streaming_ready": True}, "run": {"validity": "valid"},
                "cost": {"currency": cur, "per_session": per_m / 1e4,
                         "per_stream_hour": per_m * 3,
                         "at_slo": {"voice_agent": {"concurrency": 4,
                                                    "per_million_slo_tokens": per_m}}}}
        summary = {"ramp": {"levels": [{"concurrency": 1, "requests": 10,
                                        "outcomes": {"ok": 10}}]}}
        return RunView(label, label, "2026-01-01", "1",
                       {"prompt_tokens": 256, "output_tokens": output},
                       Summary.from_json(summary),
                       Scorecard.from_json(card))

    cmp = compare_runs([view("a", 0.8), view("b", 0.5), view("c", 0.2, output=64),
                        view("d", 0.1, cur="EUR")])
    rows = {r.figure.key: r for r in cmp.rows}
    slo = rows["cost.at_slo.voice_agent"]
    assert slo.figure.title == ("Cost per million tokens within the voice agent SLO, at its "
                                "highest level (USD)")
    assert [c.value for c in slo.cells] == [0.8, 0.5, None, None]
    assert [c.best for c in slo.cells] == [False, True, False, False]
    assert slo.cells[2].excluded and slo.cells[2].excluded.startswith("output length")
    assert slo.cells[3].excluded and slo.cells[3].excluded.startswith("currency EUR")
    # at the concurrency sold: side by side, no ★ (each vendor sells its own load)
    sold = rows["cost.per_session"]
    assert [c.value for c in sold.cells][:2] == pytest.approx([0.8e-4, 0.5e-4])
    assert not any(c.best for c in sold.cells)
