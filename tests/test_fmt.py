"""Numbers in words (`evalkit.fmt`)."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit import fmt
from evalkit.fmt import fmt_s
from evalkit.fmt import fmt_tokens_per_s as fmt_rate


class TestNumbersInWords:
    @pytest.mark.parametrize(("seconds", "shown"), [
        (None, "not measured"), (0.9994, "999 ms"), (0.33, "330 ms"), (1.0, "1.00 s"),
        (2.345, "2.35 s")])
    def test_durations(self, seconds: float | None, shown: str) -> None:
        assert fmt_s(seconds) == shown

    @pytest.mark.parametrize(("rate", "shown"), [
        (None, "not measured"), (99.94, "99.9 tokens/s"), (100.0, "100 tokens/s"),
        (1234.5, "1,234 tokens/s")])
    def test_rates(self, rate: float | None, shown: str) -> None:
        assert fmt_rate(rate) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (99.99, "100"), (0.09999, "0.100"), (9.996, "10.0"), (50_023.2, "50,023"),
    (0.2531, "0.253"), (1_234.5, "1,234"), (None, "—"), (float("nan"), "—"), (True, "—")])
def test_three_significant_figures_and_no_more(value: Any, shown: str) -> None:
    """A figure carries no false precision: rounding to three significant figures first,
    so 99.99 is '100' (not '100.0'), and anything not a number is an em dash."""
    assert fmt.fmt_num(value) == shown


def test_times_stays_short_for_a_claim_of_next_to_nothing() -> None:
    """A claim of 1e-300 ms missed by a real TTFT: a power of ten, not 300 digits."""
    from evalkit.fmt import times

    assert times(1.54) == "1.5×" and times(999_999.0) == "999999.0×"
    assert times(2.1e302) == "2.1e+302×" and times(float("inf")) == "infinitely"
