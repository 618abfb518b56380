"""A workload file's values checked one at a time (numbers, text, distributions), each
problem said with the line it is on and the field's dotted path.

The readers (`load`, `conversations`, `trace`) share this so that every file the buyer
gives says its problems the same way, all at once: `file:line: field.path: message`.
A value that is wrong is reported and dropped (the checker returns None), so one bad
field never hides the next.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.errors import WorkloadError
from evalkit.questionnaire.reader import Document, FieldPath, clip, dotted
from evalkit.workload.model import Dist, fixed

#: how many problems one error lists; a hostile 100,000-line file must not print them all
MAX_SHOWN = 100
#: an empirical distribution's values (a buyer's sample of their lengths)
MAX_EMPIRICAL = 10_000
#: bad values of one list reported one by one; the rest are counted
_SHOWN_PER_LIST = 3


@dataclass(frozen=True)
class Bounds:
    """Where a value may lie: a token count, a number of turns, a pause in seconds."""

    low: float
    high: float
    integer: bool
    what: str


#: a prompt or answer length: one token up to a long-context model's window
TOKENS = Bounds(1, 131_072, True, "tokens")
#: a shared system prompt may be absent
SYSTEM_TOKENS = Bounds(0, 131_072, True, "tokens")
#: a session's turns, an agent's steps
STEPS = Bounds(1, 64, True, "steps")
#: think time, tool latency: a pause longer than ten minutes is not one user's
SECONDS = Bounds(0, 600, False, "seconds")

_TYPE_WORDS = {True: "a whole number", False: "a number"}
#: text the buyer meant as a number (YAML 1.1 read `1_000` as 1000; 1.2 reads text)
_NUMBERISH = re.compile(r"[-+]?[0-9][0-9_:,.]*")
DIST_FORMS = ("fixed", "uniform", "lognormal", "empirical")
_DIST_HINT = ("a number, {fixed: x}, {uniform: [lo, hi]}, "
              "{lognormal: {median: m, p90: p}} or {empirical: [...]}")


def num(x: float) -> str:
    """A bound as a person writes it: 131,072 and 0.5, never 1.31072e+05."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def got(value: Any, text: str | None = None) -> str:
    """A value as the buyer wrote it, for a message (never more than a line)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if text is not None:
        return clip(text)[1:-1]
    return clip(value)


def problems_error(file: str, found: Sequence[tuple[int, str]], what: str,
                   extra: Sequence[str] = ()) -> WorkloadError:
    """One WorkloadError for every problem, sorted by line, each `file:line: message`;
    `extra` are problems already formatted (another file's, e.g. a workload's
    conversations). At most MAX_SHOWN are listed, the rest counted."""
    ordered = [f"{file}:{line}: {msg}" for line, msg in sorted(found, key=lambda p: p[0])]
    ordered.extend(extra)
    count = len(ordered)
    shown = ordered[:MAX_SHOWN]
    if count > MAX_SHOWN:
        shown.append(f"{file}: ... and {count - MAX_SHOWN:,} more problems not shown")
    return WorkloadError(f"{file}: {count:,} problem{'s' if count != 1 else ''} in the {what}",
                         shown)


class Checker:
    """Collects (line, "field.path: message") for a document, or for a part of one at
    `prefix` (a workload written inside a questionnaire, named by its own lines)."""

    def __init__(self, lines: dict[FieldPath, int], texts: dict[FieldPath, str] | None = None,
                 prefix: FieldPath = (), line: int = 1) -> None:
        self.lines = lines
        self.texts = texts or {}
        self.prefix = prefix
        #: the line for a path the document has no line for (a JSONL line's)
        self.default_line = line
        self.found: list[tuple[int, str]] = []

    @classmethod
    def of(cls, doc: Document, prefix: FieldPath = ()) -> Checker:
        return cls(doc.lines, doc.texts, prefix)

    def line(self, path: FieldPath) -> int:
        """The line of `path`, or of its nearest parent that has one (a missing field is
        reported on the mapping that lacks it)."""
        full = (*self.prefix, *path)
        while full:
            if full in self.lines:
                return self.lines[full]
            full = full[:-1]
        return self.lines.get((), self.default_line)

    def problem(self, path: FieldPath, message: str) -> None:
        self.found.append((self.line(path), f"{dotted((*self.prefix, *path))}: {message}"))

    def shown(self, value: Any, path: FieldPath) -> str:
        return got(value, self.texts.get((*self.prefix, *path)))

    def number(self, value: Any, path: FieldPath, bounds: Bounds,
               integer: bool | None = None, above: float | None = None) -> float | None:
        """A number within `bounds` (greater than `above` when set), or None and a
        problem. Booleans are refused: YAML's `true` is not 1."""
        whole = bounds.integer if integer is None else integer
        wanted = _TYPE_WORDS[whole]
        if isinstance(value, bool):
            self.problem(path, f"expected {wanted}, got {got(value)} (true and false are "
                         "not numbers)")
            return None
        if not isinstance(value, int | float):
            hint = ""
            if isinstance(value, str) and _NUMBERISH.fullmatch(value) and set(value) & set("_:,"):
                hint = " (write the number as plain digits, without ',', '_' or ':')"
            self.problem(path, f"expected {wanted}, got {self.shown(value, path)}{hint}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(path, f"expected a finite number, got {self.shown(value, path)}")
            return None
        if whole and not isinstance(value, int):
            self.problem(path, f"expected {wanted}, got {self.shown(value, path)} (a count is "
                         "written without a decimal point or exponent)")
            return None
        if above is not None and value <= above:
            self.problem(path, f"must be greater than {num(above)}, got {self.shown(value, path)}")
            return None
        if value < bounds.low:
            self.problem(path, f"must be at least {num(bounds.low)}, got {self.shown(value, path)}")
            return None
        if value > bounds.high:
            unit = f" {bounds.what}" if bounds.what else ""
            self.problem(path, f"must be at most {num(bounds.high)}{unit}, got "
                         f"{self.shown(value, path)}")
            return None
        return float(value)

    def text(self, value: Any, path: FieldPath, limit: int = 64) -> str | None:
        """Short printable text (a name: it reaches the scorecard and the records)."""
        if not isinstance(value, str):
            self.problem(path, f"expected text, got {self.shown(value, path)}")
            return None
        if not value.strip():
            self.problem(path, "must not be empty")
            return None
        if len(value) > limit:
            self.problem(path, f"text longer than {limit} characters")
            return None
        if not value.isprintable() or value.strip() != value:
            self.problem(path, f"must be printable text on one line, without leading or "
                         f"trailing spaces; got {clip(value)}")
            return None
        return value

    def sized_list(self, value: Any, path: FieldPath, most: int, noun: str) -> bool:
        """True when `value` is a list of 1 to `most` items; otherwise a problem."""
        if not isinstance(value, list) or not value:
            shown = "an empty list" if value == [] else self.shown(value, path)
            self.problem(path, f"expected a list of 1 to {most:,} {noun}, got {shown}")
            return False
        if len(value) > most:
            self.problem(path, f"{len(value):,} {noun}; at most {most:,}")
            return False
        return True

    def keys(self, value: dict[str, Any], path: FieldPath, allowed: Sequence[str],
             elsewhere: dict[str, str] | None = None) -> None:
        """Every key of `value` not in `allowed` is a problem (a typo must not pass
        silently); `elsewhere` says where a misplaced one belongs."""
        for key in value:
            if key not in allowed:
                where = (elsewhere or {}).get(key)
                if where is None and isinstance(key, str):
                    near = difflib.get_close_matches(key, allowed, n=1)
                    where = f"did you mean {near[0]}?" if near else None
                self.problem((*path, key), f"unknown field{f' ({where})' if where else ''}")

    def required(self, value: dict[str, Any], path: FieldPath, names: Sequence[str]) -> bool:
        """A problem for each of `names` missing from `value`; True when none is."""
        missing = [n for n in names if n not in value]
        for name in missing:
            self.found.append((self.line(path),
                               f"{dotted((*self.prefix, *path, name))}: required field missing"))
        return not missing

    def dist(self, value: Any, path: FieldPath, bounds: Bounds) -> Dist | None:
        """A distribution in any of its forms, or None and a problem (see docs/workloads.md)."""
        if not isinstance(value, dict):
            if isinstance(value, int | float) and not isinstance(value, bool):
                x = self.number(value, path, bounds)
                return None if x is None else fixed(x, bounds.integer)
            if isinstance(value, bool):
                self.number(value, path, bounds)
                return None
            self.problem(path, f"expected a distribution ({_DIST_HINT}), got "
                         f"{self.shown(value, path)}")
            return None
        if len(value) != 1 or next(iter(value)) not in DIST_FORMS:
            unknown = [k for k in value if k not in DIST_FORMS]
            if unknown:
                self.problem((*path, unknown[0]), f"unknown distribution "
                             f"{clip(unknown[0])}; expected {', '.join(DIST_FORMS)}")
            else:
                self.problem(path, f"a distribution has one form, got {len(value)} "
                             f"({', '.join(value) or 'none'}); write {_DIST_HINT}")
            return None
        form, arg = next(iter(value.items()))
        here = (*path, form)
        if form == "fixed":
            x = self.number(arg, here, bounds)
            return None if x is None else fixed(x, bounds.integer)
        if form == "uniform":
            return self._uniform(arg, here, bounds)
        if form == "lognormal":
            return self._lognormal(arg, here, bounds)
        return self._empirical(arg, here, bounds)

    def _uniform(self, arg: Any, here: FieldPath, bounds: Bounds) -> Dist | None:
        if not isinstance(arg, list) or len(arg) != 2:
            self.problem(here, f"expected a list of two numbers [low, high], got "
                         f"{self.shown(arg, here)}"
                         f"{f' of {len(arg)}' if isinstance(arg, list) else ''}")
            return None
        lo, hi = (self.number(x, (*here, i), bounds) for i, x in enumerate(arg))
        if lo is None or hi is None:
            return None
        if lo > hi:
            self.problem(here, f"low {lo:g} is above high {hi:g}")
            return None
        return Dist("uniform", low=lo, high=hi, integer=bounds.integer)

    def _lognormal(self, arg: Any, here: FieldPath, bounds: Bounds) -> Dist | None:
        if not isinstance(arg, dict):
            self.problem(here, f"expected a mapping {{median: m, p90: p}}, got "
                         f"{self.shown(arg, here)}")
            return None
        self.keys(arg, here, ("median", "p90", "max"))
        if not self.required(arg, here, ("median", "p90")):
            return None
        med = self.number(arg["median"], (*here, "median"), bounds, integer=False, above=0)
        p90 = self.number(arg["p90"], (*here, "p90"), bounds, integer=False)
        top = (self.number(arg["max"], (*here, "max"), bounds, integer=False)
               if "max" in arg else bounds.high)
        if med is None or p90 is None or top is None:
            return None
        if p90 <= med:
            self.problem((*here, "p90"), f"must be greater than the median ({med:g}), got "
                         f"{self.shown(arg['p90'], (*here, 'p90'))}")
            return None
        if top <= med:
            self.problem((*here, "max"), f"must be greater than the median ({med:g}), got "
                         f"{self.shown(arg['max'], (*here, 'max'))}")
            return None
        return Dist("lognormal", median=med, p90=p90, low=float(bounds.low), high=top,
                    integer=bounds.integer)

    def _empirical(self, arg: Any, here: FieldPath, bounds: Bounds) -> Dist | None:
        if not self.sized_list(arg, here, MAX_EMPIRICAL, "values"):
            return None
        before = len(self.found)
        values = [self.number(x, (*here, i), bounds) for i, x in enumerate(arg)]
        bad = len(self.found) - before
        if bad > _SHOWN_PER_LIST:
            del self.found[before + _SHOWN_PER_LIST:]
            self.problem(here, f"... and {bad - _SHOWN_PER_LIST:,} more values like these")
        if bad:
            return None
        return Dist("empirical", values=tuple(v for v in values if v is not None),
                    integer=bounds.integer)
