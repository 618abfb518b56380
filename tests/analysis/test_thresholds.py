"""Tolerance overrides: every value is checked, every error names the field and the value,
and what is accepted is exactly what was written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.summary import measurements
from evalkit.analysis.thresholds import (
    MAX_OVERRIDE_BYTES,
    SloProfile,
    Thresholds,
    Tolerances,
    _show,
    load_tolerances,
    tolerances_from_dict,
)
from evalkit.errors import InputError, UsageError
from evalkit.review.fit import streams_at_reading_speed
from tests.review.helpers import SUMMARY, judge


def _error(data: object) -> str:
    with pytest.raises(InputError) as info:
        tolerances_from_dict(data)
    return str(info.value)


class TestNumbers:
    @pytest.mark.parametrize("value", [1e9, 0.001, 3])
    def test_in_range(self, value: float) -> None:
        assert tolerances_from_dict({"ttft_rel": value}).ttft_rel == value

    @pytest.mark.parametrize(("value", "says"), [
        (0, "ttft_rel: must be greater than 0, got 0"),
        (-0.5, "ttft_rel: must be greater than 0, got -0.5"),
        (1e9 + 1, "ttft_rel: expected a number, got 1000000001.0"),
        (float("nan"), "ttft_rel: expected a number, got nan"),
        (float("inf"), "ttft_rel: expected a number, got inf"),
        (True, "ttft_rel: expected a number, got True"),
        ("0.3", "ttft_rel: expected a number, got '0.3'"),
    ])
    def test_out_of_range(self, value: object, says: str) -> None:
        assert _error({"ttft_rel": value}) == says

    def test_a_shortfall_share_stays_below_1(self) -> None:
        assert tolerances_from_dict({"rate_rel": 0.99}).rate_rel == 0.99
        assert _error({"rate_rel": 1.0}).startswith("rate_rel: a shortfall share must be")
        assert tolerances_from_dict({"ttft_rel": 1.5}).ttft_rel == 1.5  # not a shortfall

    def test_a_character_count_is_whole(self) -> None:
        tol = tolerances_from_dict({"min_reconciliation_chars": 39.0})
        assert tol.min_reconciliation_chars == 39
        assert type(tol.min_reconciliation_chars) is int

    def test_percentile_names(self) -> None:
        assert tolerances_from_dict({"reading_speed_percentile": "p50"}
                                    ).reading_speed_percentile == "p50"
        assert "got 5" in _error({"reading_speed_percentile": 5})

    def test_nothing_and_non_mappings(self) -> None:
        assert tolerances_from_dict(None) == Tolerances()
        assert _error("x") == "tolerances: expected a mapping, got str"
        assert _error({"slo_profiles": [1]}) == "slo_profiles: expected a mapping, got [1]"


class TestProfiles:
    def test_a_new_profile_is_labelled_from_its_name(self) -> None:
        tol = tolerances_from_dict({"slo_profiles": {"code_review": {"ttft_p90_s": 3}}})
        p = tol.slo_profiles["code_review"]
        assert (p.label, p.ttft_p90_s, p.tpot_p90_s) == ("code review", 3.0, None)
        assert "voice_agent" in tol.slo_profiles  # the defaults stay

    def test_an_override_keeps_the_rest_of_a_default(self) -> None:
        tol = tolerances_from_dict({"slo_profiles": {"voice_agent": {
            "label": 7, "itl_p99_s": None, "above_reading_speed": True}}})
        p = tol.slo_profiles["voice_agent"]
        assert (p.label, p.ttft_p90_s, p.itl_p99_s, p.above_reading_speed) == (
            "7", 0.5, None, True)
        assert tolerances_from_dict({"slo_profiles": {"batch": {"throughput_only": False}}}
                                    ).slo_profiles["batch"].throughput_only is False

    @pytest.mark.parametrize(("data", "says"), [
        ({"voice_agent": 3}, "slo_profiles.voice_agent: expected a mapping, got 3"),
        ({"voice_agent": {"ttft_p90_s": 0}},
         "slo_profiles.voice_agent.ttft_p90_s: must be greater than 0, got 0"),
        ({"voice_agent": {"ttft_p90_s": "x"}},
         "slo_profiles.voice_agent.ttft_p90_s: expected a number, got 'x'"),
        ({"x": {"throughput_only": "yes"}},
         "slo_profiles.x.throughput_only: expected true or false, got 'yes'"),
        ({"x": {"above_reading_speed": 1}},
         "slo_profiles.x.above_reading_speed: expected true or false, got 1"),
        ({"n" * 50: {"bogus": 1}}, f"slo_profiles.{'n' * 40}: unknown field 'bogus'"),
    ])
    def test_bad_profiles(self, data: dict[str, object], says: str) -> None:
        assert _error({"slo_profiles": data}) == says


def test_shown_values_are_clipped() -> None:
    """Vendor-sized values in a message are cut at 40 characters, and the cut is marked."""
    assert _show("x" * 38) == repr("x" * 38)           # 40 with its quotes: whole
    assert _show("x" * 39) == "'" + "x" * 35 + "...'"   # 41: cut
    assert len(_error({"ttft_rel": "y" * 500})) < 80


class TestFiles:
    def test_json_is_read_as_json(self, tmp_path: Path) -> None:
        """A .json file is JSON (1e-1 is a number there, text to YAML); others are YAML."""
        path = tmp_path / "t.json"
        path.write_text('{"ttft_rel": 1e-1}')
        assert load_tolerances(path).ttft_rel == 0.1
        yaml_path = tmp_path / "t.yaml"
        yaml_path.write_text("\ufeffttft_rel: 0.2\n")  # a BOM is allowed
        assert load_tolerances(yaml_path).ttft_rel == 0.2
        assert load_tolerances(None) == Tolerances()

    def test_size_bound(self, tmp_path: Path) -> None:
        """A file of exactly the bound is read; one byte more is refused unread."""
        body = b"ttft_rel: 0.2\n"
        path = tmp_path / "t.yaml"
        path.write_bytes(body + b"#" * (MAX_OVERRIDE_BYTES - len(body)))
        assert load_tolerances(path).ttft_rel == 0.2
        path.write_bytes(body + b"#" * (MAX_OVERRIDE_BYTES + 1 - len(body)))
        with pytest.raises(InputError, match=f"t.yaml: tolerances file is larger than "
                                             f"{MAX_OVERRIDE_BYTES} bytes"):
            load_tolerances(path)

    @pytest.mark.parametrize(("content", "says"), [
        (b"ttft_rel: [\n", "not a readable tolerances file (ParserError)"),
        (b"\xff\xfe", "not a readable tolerances file (UnicodeDecodeError)"),
        (b"ttft_rel: -1\n", "ttft_rel: must be greater than 0"),
    ])
    def test_errors_name_the_file(self, tmp_path: Path, content: bytes, says: str) -> None:
        path = tmp_path / "t.yaml"
        path.write_bytes(content)
        with pytest.raises(InputError) as info:
            load_tolerances(path)
        assert str(info.value).startswith(f"{path}: ") and says in str(info.value)

    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(InputError, match="cannot read tolerances file: No such file"):
            load_tolerances(tmp_path / "none.yaml")


def test_the_default_profiles_are_the_specs() -> None:
    """The use cases' limits, as the SPEC sets them (public anchors)."""
    p = Tolerances().slo_profiles
    assert p["voice_agent"] == SloProfile("voice agent", ttft_p90_s=0.5, itl_p99_s=0.3)
    assert p["live_suggestions"] == SloProfile("live suggestions", ttft_p90_s=0.45,
                                               tpot_p90_s=0.040)
    assert p["interactive_chat"] == SloProfile("interactive chat", ttft_p90_s=2.0,
                                               tpot_p90_s=0.200, above_reading_speed=True)
    assert p["batch"] == SloProfile("batch", throughput_only=True)


class TestThresholds:
    def test_overrides_are_taken_as_written(self) -> None:
        """A threshold given is the one used; the others keep the SPEC's defaults."""
        th = Thresholds.from_dict({"stall_s": 0.3, "ttft_p90_ratio": 3})
        assert (th.stall_s, th.ttft_p90_ratio, th.tpot_p90_ratio) == (0.3, 3.0, 2.0)
        assert Thresholds.from_dict({}) == Thresholds()

    @pytest.mark.parametrize("value", [0, -1.0, float("inf")])
    def test_built_in_code_a_threshold_is_positive_and_finite_too(self, value: float) -> None:
        """A library caller builds Thresholds without from_dict: zero, a negative or an
        infinite limit would judge every level breached (or none), so it is refused."""
        with pytest.raises(UsageError, match=rf"threshold stall_s must be a positive "
                                             rf"number, got {value!r}"):
            Thresholds(stall_s=value)
        assert Thresholds(stall_s=0.25).stall_s == 0.25

    def test_an_unknown_key_is_named_not_ignored(self) -> None:
        """A misspelt threshold would leave the default in force unnoticed: it is an error
        naming the key and the keys there are."""
        with pytest.raises(UsageError, match=r"thresholds: unknown key 'stall'; known: "
                                             r"ttft_p90_ratio, tpot_p90_ratio, "):
            Thresholds.from_dict({"stall_s": 0.5, "stall": 0.5})

    @pytest.mark.parametrize("data, message", [
        ({"stall_s": True}, "threshold stall_s: expected a number, got True"),
        ({"stall_s": "2"}, "threshold stall_s: expected a number, got '2'"),
        ({"cache_ttft_ratio": float("nan")}, "threshold cache_ttft_ratio: expected a number"),
        ({"admission_failure_rate": 0}, "threshold admission_failure_rate: must be greater "
                                        "than 0, got 0"),
        ([("stall_s", 1)], r"thresholds: expected a mapping, got \[\('stall_s', 1\)\]"),
    ])
    def test_a_value_that_is_no_positive_number_is_named(self, data: object,
                                                         message: str) -> None:
        """true is not 1 and "2" is not 2 here: a threshold is a number or an error."""
        with pytest.raises(UsageError, match=message):
            Thresholds.from_dict(data)


class TestTolerances:
    def test_override_file_changes_the_judgement_and_the_printed_tolerance(
            self, tmp_path: Path) -> None:
        """A looser TTFT tolerance from a file turns 3.3× slower into a hold, and says so."""
        path = tmp_path / "tol.yaml"
        path.write_text("ttft_rel: 2.5\nslo_profiles:\n  voice_agent: {ttft_p90_s: 0.4}\n")
        tol = load_tolerances(path)
        text = "Q1: {ttft_p90_ms: 100, at_concurrency: 16, source: production}\n"
        j = judge(text, SUMMARY, tol).judgements["Q1"]
        assert (j.status, j.tolerance) == ("ok", "one-sided: measured ≤ claimed × 3.5 "
                                                 "(ttft_rel 250%)")
        assert tol.slo_profiles["voice_agent"].ttft_p90_s == 0.4
        assert tol.slo_profiles["voice_agent"].itl_p99_s == 0.3

    def test_json_override_and_reading_speed(self, tmp_path: Path) -> None:
        """A JSON file can raise reading speed; fewer levels then qualify."""
        path = tmp_path / "tol.json"
        path.write_text(json.dumps({"reading_speed_tokens_per_s": 10}))
        fit = streams_at_reading_speed(measurements(SUMMARY), load_tolerances(path))
        assert fit.max_concurrency == 128

    @pytest.mark.parametrize("data, message", [
        ({"ttft_rell": 0.3}, "tolerances: unknown field 'ttft_rell'"),
        ({"ttft_rel": "lots"}, "ttft_rel: expected a number, got 'lots'"),
        ({"ttft_rel": -1}, "ttft_rel: must be greater than 0, got -1"),
        ({"throughput_rel": 1}, "throughput_rel: a shortfall share must be below 1 (0.25 = 25% "
                                "short), got 1"),
        ({"reading_speed_percentile": "p95"}, "reading_speed_percentile: expected one of p50, "
                                              "p90, p99, got 'p95'"),
        ({"slo_profiles": {"voice_agent": {"ttft": 1}}},
         "slo_profiles.voice_agent: unknown field 'ttft'"),
        ([1, 2], "tolerances: expected a mapping, got list"),
    ])
    def test_bad_overrides_are_input_errors(self, data: Any, message: str) -> None:
        """A typo never silently falls back to a default."""
        with pytest.raises(InputError) as info:
            tolerances_from_dict(data)
        assert str(info.value) == message


@pytest.mark.parametrize("bad", [{"stall_s": 0}, {"ttft_p90_ratio": -2}, {"stall_s": "x"}])
def test_thresholds_must_be_positive(bad: dict) -> None:
    """A zero or negative threshold is a usage error, not a silent never-breach."""
    from evalkit.errors import UsageError

    with pytest.raises(UsageError, match="threshold"):
        Thresholds.from_dict(bad)
