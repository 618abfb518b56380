"""summary.json read as typed data (`evalkit.analysis.summary`): every reader's one way in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.summary import (
    Summary,
    as_count,
    as_number,
    as_text,
    measurements,
    ramp_levels,
)

FIXTURE = Path(__file__).parent.parent / "data" / "report_run" / "summary.json"


def _level(c: int, **kw: Any) -> dict[str, Any]:
    return {"concurrency": c, "requests": 10, "outcomes": {"ok": 10},
            "ttft_s": {"p50": 0.1 * c, "p90": 0.2 * c, "p99": 0.3 * c, "n": 10,
                       "p90_ci": [0.15 * c, 0.25 * c]}, **kw}


class TestReadBack:
    def test_to_json_gives_back_the_document_as_written(self) -> None:
        """A reader never rewrites the contract: every key, read or not, comes back."""
        doc = json.loads(FIXTURE.read_text())
        s = Summary.from_json(doc)
        assert s is not None and s.to_json() == doc
        assert s.to_json() is not doc  # a copy: the caller cannot change what was read

    def test_levels_and_percentiles_are_typed(self) -> None:
        """Percentiles, counts and intervals come through as numbers; failures are
        counted from the outcomes."""
        doc = {"validity": {"status": "valid"}, "baseline": _level(1),
               "ramp": {"levels": [_level(2), _level(4, outcomes={"ok": 7, "error": 3})],
                        "max_sustained_concurrency": 2, "first_breach_concurrency": 4}}
        s = Summary.from_json(doc)
        assert s is not None
        assert [lv.concurrency for lv in s.levels] == [1, 2, 4]
        four = s.level(4)
        assert four is not None and four.ttft_s.p90 == pytest.approx(0.8)
        assert four.ttft_s.interval("p90") == pytest.approx((0.6, 1.0))
        assert four.failed == 3 and four.failure_rate == pytest.approx(0.3)
        assert four.raw["outcomes"] == {"ok": 7, "error": 3}
        assert (s.max_sustained, s.first_breach, s.validity) == (2, 4, "valid")

    @pytest.mark.parametrize("doc", [None, [], "x", {}, {"ramp": "nope"},
                                     {"validity": {"status": "valid"}},
                                     {"ramp": {"levels": [{"concurrency": "4"}, None, 7]}}])
    def test_nothing_measured_is_none_never_a_crash(self, doc: Any) -> None:
        """Old, empty or tampered documents read as 'nothing measured'."""
        assert measurements(doc) is None


class TestUnderLoad:
    def test_the_max_sustained_level(self) -> None:
        """Under load means the highest level the run held."""
        s = Summary.from_json({"ramp": {"levels": [_level(1), _level(2), _level(4)],
                                        "max_sustained_concurrency": 2}})
        assert s is not None and s.under_load() == (s.level(2), "max sustained")
        assert s.sustained() is s.level(2)

    def test_else_the_highest_level_measured_and_never_the_baseline(self) -> None:
        """No level held: the highest measured, said so; a baseline alone is no load."""
        s = Summary.from_json({"ramp": {"levels": [_level(1), _level(8)],
                                        "max_sustained_concurrency": None}})
        assert s is not None and s.under_load() == (s.level(8), "highest level measured")
        assert s.sustained() is None  # "at max sustained load" has no value here
        alone = Summary.from_json({"baseline": _level(1)})
        assert alone is not None and alone.under_load() is None
        # the baseline standing in as level 1 is not a sustained ramp level
        stand_in = Summary.from_json({"baseline": _level(1), "ramp": {
            "levels": [_level(2)], "max_sustained_concurrency": 1}})
        assert stand_in is not None and stand_in.sustained() is None


@pytest.mark.parametrize("value, number, count", [
    (3, 3.0, 3), (2.5, 2.5, None), (True, None, None), (float("inf"), None, None),
    (float("nan"), None, None), (10 ** 400, None, None), ("3", None, None), (None, None, None),
])
def test_json_values_become_numbers_only_when_they_are(value: Any, number: float | None,
                                                       count: int | None) -> None:
    """A boolean, a string, NaN or an int beyond float range is no measurement."""
    assert as_number(value) == number and as_count(value) == count


@pytest.mark.parametrize("value, least, count", [
    (0, 0, 0), (-1, 0, None), (-1.0, None, -1), (4, 5, None), (5.0, 5, 5), (True, 0, None),
])
def test_a_count_below_its_least_is_none(value: Any, least: int | None,
                                         count: int | None) -> None:
    """An imported file's negative token count is no count; without `least`, any whole
    number is one."""
    assert as_count(value, least=least) == count


def test_ramp_levels_are_the_entries_as_written_lowest_first() -> None:
    """What the charts draw: the ramp's own entries (not the baseline standing in as level
    1), in order, those without a usable concurrency left out; nothing measured is []."""
    four, one = _level(4, extra="kept"), _level(1)
    doc = {"baseline": _level(1, note="baseline"),
           "ramp": {"levels": [four, {"concurrency": 0}, one, {"concurrency": "2"}]}}
    assert ramp_levels(doc) == [one, four] and ramp_levels(doc)[1] is four
    without_one = {"baseline": _level(1), "ramp": {"levels": [_level(2)]}}
    s = Summary.from_json(without_one)
    assert s is not None and [lv.concurrency for lv in s.levels] == [1, 2]
    assert [lv.concurrency for lv in s.ramp] == [2] and ramp_levels(without_one) == [_level(2)]
    assert ramp_levels(None) == [] and ramp_levels({"ramp": {"levels": "x"}}) == []


def test_text_is_stripped_and_empty_is_none() -> None:
    """Blank text is no answer."""
    assert as_text("  x ") == "x" and as_text("   ") is None and as_text(3) is None


class TestReadDefensively:
    def test_a_level_not_measured_is_none(self) -> None:
        """Asking for a level the ramp never reached is an answer (None), not a crash."""
        s = Summary.from_json({"ramp": {"levels": [_level(1), _level(2)]}})
        assert s is not None and s.level(2) is not None and s.level(3) is None

    def test_under_load_without_a_held_level_is_the_highest_of_several(self) -> None:
        """With several ramp levels and none held, the figures come from the top one,
        not from the second measured."""
        s = Summary.from_json({"ramp": {"levels": [_level(c) for c in (1, 2, 4, 8)]}})
        assert s is not None and s.under_load() == (s.level(8), "highest level measured")

    def test_prefill_interval_missing_only_when_written_as_null(self) -> None:
        """A current summary that could not bound the prefill rate says null: the rate then
        decides nothing; an interval given, or an older summary without the key, is not
        'missing'."""
        def read(pre: dict[str, Any]) -> Summary:
            s = Summary.from_json({"prefill": {"tokens_per_s": 5000.0, **pre}})
            assert s is not None
            return s

        given = read({"tokens_per_s_ci": [4000.0, 6000.0]})
        assert given.prefill_ci == (4000.0, 6000.0) and given.prefill_ci_missing is False
        assert read({"tokens_per_s_ci": None}).prefill_ci_missing is True
        assert read({}).prefill_ci_missing is False

    @pytest.mark.parametrize("ok, failed, status", [(99, 1, "valid"), (98, 2, "degraded")])
    def test_an_older_summary_is_judged_on_its_baseline_at_one_percent(
            self, ok: int, failed: int, status: str) -> None:
        """Without a stated validity the baseline's failures decide it: above 1 % of its
        requests failed, the run is degraded, and says how many."""
        s = Summary.from_json({"baseline": _level(1, requests=ok + failed,
                                                  outcomes={"ok": ok, "error": failed})})
        assert s is not None and s.validity == status
        if status == "degraded":
            assert any(f"{failed} of {ok + failed}" in r for r in s.validity_reasons)
