"""Compare runs: vendors side by side, and one vendor across quarters.

Pure: takes loaded runs (summary, run metadata, optional scorecard) and returns the
comparison as data; the CLI and the renderer sit around it. Two runs are compared on a
figure only where the figure means the same thing in both: the same suite version
always, and for load figures the same prompt/output lengths and concurrency levels.
What is left out is listed with the reason, because a silent omission reads as a tie.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import Level, Summary
from evalkit.analysis.summary import as_number as _num
from evalkit.analysis.thresholds import default_slo_profiles
from evalkit.fmt import fmt_unit

# RunView is where a caller builds a run for `compare_runs`: named here too
from evalkit.review.compare_model import Cell, Figure, Row
from evalkit.review.compare_model import RunView as RunView
from evalkit.review.compare_voice import (
    NO_CALLS,
    VOICE_SETTING_WORDS,
    VoiceStanding,
    voice_figures,
    voice_standing,
    voice_unstarred,
)
from evalkit.review.compare_workload import DIFFERENT, different_workload, workload_rows
from evalkit.review.costcard import LevelCost
from evalkit.review.scorecard import Scorecard
from evalkit.sanitize import clean

T = TypeVar("T")
#: a text figure of a run that made realtime calls, not text streams
NO_STREAMS = "not measured: a voice run (realtime calls, no text streams)"

#: Relative worsening beyond which a later run of the same target is a regression.
DEFAULT_REGRESSION_TOLERANCE = 0.10
#: A share (underruns, refused calls, failed turns: 0 to 1) worsens in points, not
#: relatively: from 0 a relative change has no size, and a share that went from none to
#: every answer must not pass a `--fail-on regression` pipeline. A rise counts when it is
#: more than the tolerance relative to where it was, and at least this much: one point,
#: the voice SLO's own limit on noticeable underruns and on failures
SHARE_FLOOR = 0.01


def _sustained_level(measured: Summary) -> Level | None:
    """The max sustained level, or None when no level held.

    `Summary.sustained`, not `under_load`: these rows are titled "at max sustained load",
    and a run in which no level held has no such figure; its highest level (an overloaded
    one) set beside other runs' sustained levels would compare unlike things.
    """
    return measured.sustained()


def _peak_level(measured: Summary) -> Level | None:
    """The ramp level with the highest aggregate output (client-bound levels left out)."""
    levels = [lv for lv in measured.ramp
              if not lv.client_bound and lv.aggregate_tokens_per_s is not None]
    return max(levels, key=lambda lv: lv.aggregate_tokens_per_s or 0.0) if levels else None


def _at(find: Callable[[Summary], Level | None], pick: Callable[[Level], T]
        ) -> Callable[[Summary], T | None]:
    """A reader of one figure (`pick`) at the level `find` chooses; None without one."""
    def read(measured: Summary) -> T | None:
        level = find(measured)
        return pick(level) if level is not None else None
    return read


_sustained = _at(_sustained_level, lambda lv: lv.concurrency)
#: the settings a load figure needs equal in two runs
_LOAD = ("prompt_tokens", "output_tokens", "levels")


FIGURES: tuple[Figure, ...] = (
    Figure("baseline_ttft_p50_s", "TTFT p50, alone", "s", "lower",
           lambda m: m.baseline.ttft_s.p50 if m.baseline else None),
    Figure("baseline_stream_rate_p50", "Stream rate p50, alone", "tok/s", "higher",
           lambda m: m.baseline.stream_tokens_per_s.p50 if m.baseline else None),
    Figure("sustained_ttft_p90_s", "TTFT p90 at max sustained load", "s", "lower",
           _at(_sustained_level, lambda lv: lv.ttft_s.p90), _LOAD, _sustained),
    Figure("sustained_tpot_p90_s", "TPOT p90 (per-token latency) at max sustained load", "s",
           "lower", _at(_sustained_level, lambda lv: lv.tpot_s.p90), _LOAD, _sustained),
    Figure("max_sustained_concurrency", "Max sustained concurrent streams", "streams",
           "higher", lambda m: _num(m.max_sustained), _LOAD),
    Figure("peak_aggregate_tokens_per_s", "Peak aggregate output", "tok/s", "higher",
           _at(_peak_level, lambda lv: lv.aggregate_tokens_per_s), _LOAD,
           _at(_peak_level, lambda lv: lv.concurrency)),
    Figure("prefill_tokens_per_s", "Prefill rate", "tok/s", "higher",
           lambda m: m.prefill_tokens_per_s, ()),
    # goodput: the highest level at which the use case's SLO held for the target share
    # of requests (ramp.max_goodput_concurrency); the batch profile's is every request ok
    *(Figure(f"max_goodput_concurrency.{name}",
             f"Highest level within the {profile.label} SLO", "streams", "higher",
             (lambda slo: lambda m: _num(m.max_goodput.get(slo)))(name), _LOAD)
      for name, profile in default_slo_profiles().items() if not profile.throughput_only),
)


@dataclass(frozen=True)
class Regression:
    """A later run of the same target worse than the run before it beyond tolerance."""

    target: str
    figure: str
    before_label: str
    after_label: str
    before: float
    after: float
    change: float
    tolerance: float
    #: the figure's unit (s, tok/s, streams): the sentence prints it
    unit: str = ""

    @property
    def sentence(self) -> str:
        """One sentence a reviewer can read aloud, each figure in its unit (a share's
        change and tolerance in points: `change` and `tolerance` are then absolute)."""
        before, after = fmt_unit(self.before, self.unit), fmt_unit(self.after, self.unit)
        if self.unit == "share":
            return (f"{self.figure}: {before} ({self.before_label}) → {after} "
                    f"({self.after_label}), {self.change * 100:+.1f} points against a "
                    f"tolerance of {self.tolerance * 100:.1f} points.")
        return (f"{self.figure}: {before} ({self.before_label}) → {after} "
                f"({self.after_label}), {self.change:+.0%} against a tolerance of "
                f"{self.tolerance:.0%}.")


@dataclass(frozen=True)
class Comparison:
    """The whole comparison: rows of figures, trends per target, what was left out.

    A trend is *judged* when at least one key figure is comparable in two of its runs;
    `not_judged` says, per trend that is not, why (runs left out, figures not measured).
    A regression check with no judged trend has checked nothing.
    """

    runs: list[RunView]
    rows: list[Row]
    statuses: dict[str, list[str | None]]
    use_cases: dict[str, list[bool | None]]
    trends: dict[str, list[int]]
    regressions: list[Regression]
    left_out: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)
    not_judged: dict[str, str] = field(default_factory=dict)
    #: each run's realtime calls, as the voice table heads them (None: a run that made
    #: none); empty when no run made any
    voice: list[VoiceStanding | None] = field(default_factory=list)

    @property
    def voice_rows(self) -> list[Row]:
        """The rows of realtime voice calls (their own table)."""
        return [row for row in self.rows if row.figure.voice]

    def to_dict(self) -> dict[str, Json]:
        """The JSON written beside the comparison PDF (schema `evalkit.compare/1`)."""
        return {
            "schema": "evalkit.compare/1",
            "runs": [{"label": r.label, "target": r.target, "started": r.started,
                      "suite_version": r.suite_version} for r in self.runs],
            "figures": {
                row.figure.key: {
                    "title": row.figure.title, "unit": row.figure.unit,
                    "better": row.figure.better,
                    "values": [c.value for c in row.cells],
                    "best": [c.best for c in row.cells],
                    "excluded": [c.excluded for c in row.cells],
                    "levels": [c.level for c in row.cells],
                    "unstarred": [c.unstarred for c in row.cells],
                    "withheld": [c.withheld for c in row.cells],
                    "detail": [c.detail for c in row.cells],
                    "no_star": row.no_star,
                } for row in self.rows
            },
            "statuses": self.statuses,
            "use_cases": self.use_cases,
            "trends": {t: [self.runs[i].label for i in idx] for t, idx in self.trends.items()},
            "regressions": [{"target": g.target, "figure": g.figure, "before": g.before,
                             "after": g.after, "change": g.change, "tolerance": g.tolerance,
                             "before_run": g.before_label, "after_run": g.after_label,
                             "text": g.sentence} for g in self.regressions],
            "left_out": self.left_out,
            "judged_trends": self.judged,
            "not_judged": self.not_judged,
            **({"voice_runs": [None if v is None else {
                "validity": v.validity, "reasons": list(v.reasons),
                "client_bound_levels": list(v.client_bound_levels),
                "detection": v.detection, "turns_per_call": v.turns_per_call,
                "audio_source": v.audio_source} for v in self.voice]}
               if self.voice else {}),
        }


def _reference_run(runs: Sequence[RunView]) -> RunView:
    """The run others are held against for comparability: the most common suite version."""
    versions = [r.suite_version for r in runs]
    common = max(set(versions), key=lambda v: (versions.count(v), str(v)))
    return next(r for r in runs if r.suite_version == common)


def _comparable(run: RunView, ref: RunView, needs: tuple[str, ...]) -> str | None:
    """Why `run`'s figure cannot be set beside `ref`'s, or None when it can."""
    if run.suite_version != ref.suite_version:
        return (f"suite version {run.suite_version} differs from {ref.suite_version} "
                f"({ref.label})")
    for key in needs:
        if run.settings.get(key) != ref.settings.get(key):
            return (f"{SETTING_WORDS.get(key, key)} {run.settings.get(key)} differs from "
                    f"{ref.settings.get(key)} ({ref.label})")
    return None


#: The settings a figure needs equal, as the page says them.
SETTING_WORDS = {"prompt_tokens": "prompt length (tokens)",
                 "output_tokens": "output length (tokens)",
                 "levels": "concurrency levels"}


def left_out_words(reason: str | None) -> str:
    """A cell's short reason for being left out, the full one listed in the appendix."""
    if not reason:
        return "left out"
    if reason.startswith(DIFFERENT):
        return f"left out: {DIFFERENT}"
    for words in ("suite version", "currency", *SETTING_WORDS.values(),
                  *VOICE_SETTING_WORDS):
        if reason.startswith(words):
            return f"left out: other {words.split(' (')[0]}"
    return "left out"


def unstarred(run: RunView) -> str | None:
    """Why a run can win no ★ on any row, or None: a star must be earned, so a run not
    judged streaming-ready (or with no scorecard, or an invalid or degraded run) wins none,
    however good one of its figures looks."""
    card = run.scorecard
    if card is None or not card.verdict.streaming_ready:
        return "not streaming-ready"
    validity = card.run.validity if card.run else None
    if validity not in (None, "valid"):
        return f"run {validity}"
    return None


def _currency(run: RunView) -> str | None:
    card = run.scorecard
    return card.cost.currency if card is not None and card.cost is not None else None


def cost_figures(ref: RunView) -> list[Figure]:
    """The comparison's cost rows (scorecard.json's `cost`), in the reference run's
    currency: a session and a stream-hour at the concurrency sold (no ★: loads differ),
    and each latency SLO's cost per million tokens that met it at its highest level within
    it, where the cheapest earns the ★. All need the same prompt and output lengths: a
    session of another shape is another price."""
    cur = clean(str(_currency(ref) or "quote currency"), 12)  # vendor text

    def cost(pick: Callable[[LevelCost], float | None]) -> Callable[[Scorecard], float | None]:
        return lambda card: pick(card.cost.at) if card.cost and card.cost.at else None

    def at_slo(name: str) -> Callable[[Scorecard], float | None]:
        return lambda card: (slo.per_million_slo_tokens if card.cost and (
            slo := card.cost.at_slo.get(name)) else None)

    figs = [Figure(f"cost.{key}", f"{title} at the concurrency sold ({cur})", "money",
                   "lower", lambda m: None, ("prompt_tokens", "output_tokens"),
                   from_card=cost(pick), star=False)
            for key, title, pick in (
                ("per_session", "Cost per session", lambda lv: lv.per_session),
                ("per_stream_hour", "Cost per stream-hour", lambda lv: lv.per_stream_hour))]
    figs += [Figure(f"cost.at_slo.{name}", f"Cost per million tokens within the "
                    f"{profile.label} SLO, at its highest level ({cur})", "money", "lower",
                    lambda m: None, ("prompt_tokens", "output_tokens"), from_card=at_slo(name))
             for name, profile in default_slo_profiles().items() if not profile.throughput_only]
    return figs


def workload_figures(ref: RunView) -> list[Figure]:
    """The reference run's workload rows (`evalkit.review.compare_workload`), each read at
    the same users in every run of the same workload file."""
    return [Figure(key, title, unit, better, lambda m: None, (),
                   (lambda u: lambda m: u)(users), from_card=read, workload=True)
            for key, title, unit, better, users, read in workload_rows(ref.scorecard)]


def _cell(fig: Figure, run: RunView, ref: RunView) -> Cell:
    """One run's value of `fig`, or why it has none: left out (not comparable), withheld
    (not the vendor's: our client was the bottleneck, the run invalid) or not measured."""
    why = _comparable(run, ref, fig.needs)
    if why is None and fig.comparable is not None:
        why = fig.comparable(run)
    if why is None and fig.workload:
        why = different_workload(run.scorecard, ref.scorecard)
    elif why is None and fig.from_card is not None and _currency(run) != _currency(ref):
        why = f"currency {_currency(run)} differs from {_currency(ref)} ({ref.label})"
    m = run.measured
    withheld = fig.withheld(m) if why is None and fig.withheld and m is not None else None
    if fig.from_card is not None:
        value = fig.from_card(run.scorecard) if why is None and run.scorecard else None
    else:
        value = fig.read(m) if why is None and withheld is None and m is not None else None
    detail = fig.detail(m) if fig.detail and m is not None and why is None else None
    if value is None and detail is None and why is None and withheld is None:
        detail = (NO_STREAMS if run.voice is not None and not fig.voice
                  else NO_CALLS if fig.voice else "not measured")
    level = fig.level(m) if fig.level and m is not None and value is not None else None
    barred = (voice_unstarred(run) if fig.voice else None) or unstarred(run)
    sustained = fig.sustained(m) if m is not None else None
    if barred is None and level is not None and not fig.workload and (
            sustained is None or level > sustained):
        barred = (f"read at {level} {fig.load_unit}s, above its max sustained level")
    return Cell(value, excluded=why, level=level, unstarred=barred, withheld=withheld,
                detail=detail)


def _row(fig: Figure, runs: Sequence[RunView], ref: RunView) -> Row:
    """One figure across the runs; ★ on the best value only where the values compare
    (two or more, at the same load for a load figure) and only for a run that earned it."""
    cells = [_cell(fig, run, ref) for run in runs]
    known = [c for c in cells if c.value is not None]
    no_star = None
    if len(known) < 2 or not fig.star:
        return Row(fig, cells)
    levels = sorted({c.level for c in known if c.level is not None})
    if fig.level is not None and fig.key != "peak_aggregate_tokens_per_s" and len(levels) > 1:
        no_star = ("no ★: measured at different loads ("
                   + ", ".join(f"{c.level} {fig.load_unit}s" for c in known) + ")")
        return Row(fig, cells, no_star)
    values = [c.value for c in known if c.value is not None]
    best = min(values) if fig.better == "lower" else max(values)
    cells = [replace(c, best=c.value == best and c.unstarred is None) for c in cells]
    if not any(c.best for c in cells):
        no_star = "no ★: the best value is from a run that did not earn one"
    return Row(fig, cells, no_star)


def _why_not_judged(rows: Sequence[Row], runs: Sequence[RunView], idx: Sequence[int]
                    ) -> str | None:
    """None when a key figure is comparable in two of the trend's runs, else why not."""
    if any(sum(row.cells[i].value is not None for i in idx) >= 2 for row in rows):
        return None
    why = sorted({f"{runs[i].label}: {row.cells[i].excluded}" for row in rows for i in idx
                  if row.cells[i].excluded})
    if why:
        return (f"no key figure is comparable in two of its {len(idx)} runs; left out: "
                + "; ".join(why))
    return f"no key figure was measured in two of its {len(idx)} runs"


def _worse_by(fig: Figure, change: float) -> float:
    """Relative worsening (positive = worse) of a relative change, in the figure's direction."""
    return change if fig.better == "lower" else -change


def _regressions(rows: Sequence[Row], runs: Sequence[RunView], trends: dict[str, list[int]],
                 tolerance: float) -> list[Regression]:
    found = []
    for target, idx in trends.items():
        for row in rows:
            points = [(i, row.cells[i].value) for i in idx if row.cells[i].value is not None]
            for (i, a), (j, b) in itertools.pairwise(points):
                assert a is not None and b is not None
                if row.figure.unit == "share":  # in points (SHARE_FLOOR says why)
                    allowed = max(tolerance * abs(a), SHARE_FLOOR)
                    if _worse_by(row.figure, b - a) > allowed:
                        found.append(Regression(target, row.figure.title, runs[i].label,
                                                runs[j].label, a, b, b - a, allowed,
                                                row.figure.unit))
                    continue
                if a == 0:
                    continue
                change = (b - a) / abs(a)
                if _worse_by(row.figure, change) > tolerance:
                    found.append(Regression(target, row.figure.title, runs[i].label,
                                            runs[j].label, a, b, change, tolerance,
                                            row.figure.unit))
    return found


def compare_runs(runs: Sequence[RunView],
                 tolerance: float = DEFAULT_REGRESSION_TOLERANCE) -> Comparison:
    """Set runs side by side; runs of the same target become a trend, oldest first."""
    if not runs:
        raise ValueError("compare_runs needs at least one run")
    ref = _reference_run(runs)
    rows = [_row(fig, runs, ref)
            for fig in (*FIGURES, *cost_figures(ref), *workload_figures(ref),
                        *voice_figures(runs, ref))]
    left_out = sorted({f"{runs[i].label}: {c.excluded}" for row in rows
                       for i, c in enumerate(row.cells) if c.excluded})
    by_target: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        by_target.setdefault(run.target, []).append(i)
    trends = {t: sorted(idx, key=lambda i: runs[i].started)
              for t, idx in by_target.items() if len(idx) > 1}
    statuses: dict[str, list[str | None]] = {
        q: [card.questions[q].status if (card := r.scorecard) and q in card.questions
            else None for r in runs]
        for q in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")
    }
    cases = sorted({k for r in runs if r.scorecard for k in r.scorecard.use_cases})
    use_cases = {k: [uc.fit.fit if (card := r.scorecard) and (uc := card.use_cases.get(k))
                     else None for r in runs]
                 for k in cases}
    why_not = {t: _why_not_judged(rows, runs, idx) for t, idx in trends.items()}
    return Comparison(list(runs), rows, statuses, use_cases, trends,
                      _regressions(rows, runs, trends, tolerance), left_out,
                      judged=[t for t, why in why_not.items() if why is None],
                      not_judged={t: why for t, why in why_not.items() if why is not None},
                      voice=([voice_standing(r) for r in runs]
                             if any(r.voice is not None for r in runs) else []))
