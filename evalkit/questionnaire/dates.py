"""Dates that can be true: a questionnaire's dates checked against the calendar, each other
and today.

The schema only says a date is written YYYY-MM-DD. A vendor can still write a day that
does not exist (2026-02-30), date its answers in the future (a typo, or answers meant to
look fresher than they are), cite a headline published after the answers that quote it,
or give a measurement window that ends before it starts or after the answers were written.
Any of these is a number nobody measured, so each is a problem at its field's line, like
the schema's: every date is on or before the questionnaire's own date (`date`), which is
on or before today; without a `date`, today is the bound.

Measurement windows are free text ("hourly averages, 2026-11-16 to 2026-11-22"): the
full dates written in them are checked (each a real day, in order, none after the bound);
words and months ("load test, 2026-11") are left as written.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterator
from typing import Any

from evalkit.questionnaire.reader import FieldPath, dotted
from evalkit.questionnaire.schema import DATE_PATTERN

#: fields that hold a date (DATE_PATTERN in the schema; here, that the day exists)
DATE_FIELDS: tuple[FieldPath, ...] = (("date",), ("headline", "published"))
#: free-text fields that say when a figure was measured
WINDOW_FIELDS: tuple[FieldPath, ...] = (
    ("Q1", "window"), ("Q2", "window"), ("Q2", "distribution", "window"), ("Q4", "window"),
    ("Q6", "window"), ("Q6", "output_tokens_per_s", "window"), ("Q6", "latency_s", "window"))
#: a full date inside text: not part of a longer run of digits or dashes
_IN_TEXT = re.compile(r"(?<![0-9-])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9-])")

Problem = tuple[int, str]


def date_problems(data: dict[str, Any], lines: dict[FieldPath, int],
                  today: dt.date | None = None) -> Iterator[Problem]:
    """Every date of `data` that cannot be true, as (line, "field.path: message").

    `today` is for tests; it defaults to the local calendar day."""
    today = today or dt.date.today()
    own = _day(_value(data, ("date",)))
    if own is not None and own > today:
        yield lines[("date",)], (f"date: {own} is after today ({today}): a questionnaire "
                                 "cannot be dated in the future")
    bound = ("the questionnaire's date", own) if own is not None else ("today", today)
    for path in DATE_FIELDS:
        value = _value(data, path)
        if isinstance(value, str) and re.fullmatch(DATE_PATTERN, value):
            yield from _one_date(path, value, lines[path], bound if path != ("date",) else None)
    for path in WINDOW_FIELDS:
        value = _value(data, path)
        if isinstance(value, str):
            yield from _window(path, value, lines[path], bound)


def _value(data: dict[str, Any], path: FieldPath) -> Any:
    value: Any = data
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _day(value: Any) -> dt.date | None:
    """The calendar day a well-formed date names; None for anything else."""
    if not (isinstance(value, str) and re.fullmatch(DATE_PATTERN, value)):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None


def _one_date(path: FieldPath, value: str, line: int,
              bound: tuple[str, dt.date] | None) -> Iterator[Problem]:
    day = _day(value)
    if day is None:
        yield line, f"{dotted(path)}: {value!r} is not a calendar date"
    elif bound is not None and day > bound[1]:
        yield line, f"{dotted(path)}: {day} is after {bound[0]} ({bound[1]})"


def _window(path: FieldPath, text: str, line: int,
            bound: tuple[str, dt.date]) -> Iterator[Problem]:
    """The full dates in a window's text: real days, in order (a one-day window may
    repeat its day), none after the bound."""
    days: list[dt.date] = []
    for written in _IN_TEXT.findall(text):
        day = _day(written)
        if day is None:
            yield line, f"{dotted(path)}: {written!r} is not a calendar date"
        else:
            days.append(day)
    for start, end in itertools.pairwise(days):
        if end < start:
            yield line, f"{dotted(path)}: the window ends ({end}) before it starts ({start})"
    late = [d for d in days if d > bound[1]]
    if late:
        yield line, f"{dotted(path)}: {max(late)} is after {bound[0]} ({bound[1]})"


def window_days(text: str | None) -> tuple[dt.date, dt.date] | None:
    """The first and last calendar day a window's text names ("2026-11-17 to 2026-11-23":
    both inclusive; one date: that day); None when it names no full date, or names them
    out of order (a window that cannot be read is not guessed at)."""
    days = [d for d in (_day(w) for w in _IN_TEXT.findall(text or "")) if d is not None]
    if not days or days != sorted(days):
        return None
    return days[0], days[-1]
