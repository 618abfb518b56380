"""`window_days`: the days a measurement window's text names (Q6's, to find our panel)."""

from __future__ import annotations

import datetime as dt

from evalkit.questionnaire.dates import window_days


def test_the_first_and_last_full_dates_of_a_window() -> None:
    d = dt.date
    assert window_days("2026-11-17 to 2026-11-23") == (d(2026, 11, 17), d(2026, 11, 23))
    assert window_days("hourly averages, 2026-11-16") == (d(2026, 11, 16), d(2026, 11, 16))
    assert window_days("last 7 days") is None and window_days(None) is None
    assert window_days("load test, 2026-11") is None
    assert window_days("2026-11-23 to 2026-11-17") is None  # out of order: not guessed
    assert window_days("2026-02-30 to 2026-03-02") == (d(2026, 3, 2), d(2026, 3, 2))
