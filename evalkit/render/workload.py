"""The scorecard's "Your workload" section and page one's lines on it, as plain strings
(no I/O): a table per level and shape, the turns (or steps) beside a cold prompt, agent
tasks end to end, the trace's fidelity, and where every figure comes from.

Every name here (shapes, the workload, its files) came from a file the buyer or a vendor
wrote: each is clipped and made printable here, and the template escapes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from markupsafe import Markup

from evalkit.analysis.jsonread import Interval
from evalkit.analysis.thresholds import SloProfile
from evalkit.fmt import fmt_count, fmt_ms, fmt_num, fmt_pct
from evalkit.render.charts import kit
from evalkit.render.charts.workload import WORKLOAD_CAPTION, turns_chart
from evalkit.render.pdf import clip
from evalkit.review.workload_card import (
    GoodputCard,
    ShapeCard,
    Sources,
    TraceCard,
    WorkloadCard,
    WorkloadLevelCard,
)

NOT_MEASURED = "not measured (no --workload, --conversations or --trace)"
STATUS_WORDS = {"met": "met", "tie": "tie", "missed": "MISSED", "no_data": "no data",
                "not_verified": "not verified"}


def _ci(ci: Interval | None) -> str:
    """A share's 95 % interval as " [lo–hi]" after it ("" when it has none)."""
    return "" if ci is None else f" [{fmt_pct(ci[0])}–{fmt_pct(ci[1])}]"


def goodput_text(g: GoodputCard) -> str:
    """One SLO's goodput: share [interval] of n, and its status."""
    status = STATUS_WORDS.get(g.status, "not verified")
    share = (f"{fmt_pct(g.fraction)}{_ci(g.fraction_ci)} of {g.requests or 0}"
             if g.fraction is not None else "—")
    return f"{share}: {status}"


@dataclass(frozen=True)
class ShapeRow:
    """One shape at one level: its units, latency and goodput against each SLO."""

    name: str
    kind: str
    units: str
    ttft: str
    tpot: str
    #: one cell per SLO in `WorkloadTables.slos`' order
    goodput: tuple[str, ...]
    not_verified: str | None


@dataclass(frozen=True)
class TurnRow:
    """One turn (or step) of a shape: its requests, prompt, TTFT beside a cold prompt's."""

    index: str
    requests: str
    prompt: str
    ttft: str
    cold: str
    ratio: str
    cached: str


@dataclass(frozen=True)
class TurnTable:
    """A shape's turns (or steps) at one level."""

    name: str
    #: "turn" or "step"
    unit: str
    rows: tuple[TurnRow, ...]
    #: the vendor counted cached prompt tokens on some turn (the column is shown)
    cached: bool


@dataclass(frozen=True)
class TaskRow:
    """An agent shape's tasks end to end at one level."""

    name: str
    complete: str
    e2e: str
    slowest: str
    slowest_ttft: str


@dataclass(frozen=True)
class LevelTables:
    """One level of users in flight: its shapes, their turns and agent tasks."""

    users: str
    rows: tuple[ShapeRow, ...]
    turns: tuple[TurnTable, ...]
    tasks: tuple[TaskRow, ...]


@dataclass(frozen=True)
class WorkloadTables:
    """The workload's tables: where it came from, the SLOs judged, level by level."""

    source: str
    cold_basis: str
    slos: tuple[str, ...]
    levels: tuple[LevelTables, ...]


@dataclass(frozen=True)
class TraceTable:
    """The trace replay's figures."""

    source: str
    not_verified: str | None
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class WorkloadSection:
    """What "Your workload" and page one show of it (`workload_context`)."""

    #: page one's key-figure row
    line: tuple[str, str]
    #: which workload each part's figures come from (label, source)
    figure_sources: tuple[tuple[str, str], ...]
    workload: WorkloadTables | None
    trace: TraceTable | None
    chart: Markup | None
    caption: str


def _labels(profiles: Mapping[str, SloProfile]) -> dict[str, str]:
    # the label's own underscores read as spaces here too (as the table always said it)
    return {str(k): clip((p.label or str(k)).replace("_", " "), 40)
            for k, p in profiles.items()}


def _shape_row(s: ShapeCard, slos: list[str]) -> ShapeRow:
    return ShapeRow(
        name=clip(s.name or "?", 40), kind=clip(s.kind or s.unit or "", 20),
        units=f"{fmt_count(s.units_complete)} of {fmt_count(s.units)}",
        ttft=f"{fmt_ms(s.ttft_s.p50)} / {fmt_ms(s.ttft_s.p90)}",
        tpot=fmt_ms(s.tpot_p90_s),
        goodput=tuple(goodput_text(s.goodput[k]) if k in s.goodput else "—" for k in slos),
        not_verified=clip(s.not_verified, 300) if s.not_verified else None)


def _turn_rows(s: ShapeCard) -> tuple[TurnRow, ...]:
    return tuple(TurnRow(
        index=fmt_count(t.index), requests=fmt_count(t.requests),
        prompt=fmt_num(t.prompt_tokens_p50), ttft=fmt_ms(t.ttft_s.p50),
        cold=fmt_ms(t.cold_ttft_s),
        ratio=f"x{t.ttft_vs_cold:.2f}" if t.ttft_vs_cold is not None else "—",
        cached=fmt_num(t.cached_prompt_tokens_p50)) for t in s.turns)


def _task_row(s: ShapeCard) -> TaskRow:
    tasks = s.tasks
    assert tasks is not None  # only shapes with tasks have a row
    return TaskRow(name=clip(s.name or "?", 40), complete=fmt_count(tasks.complete),
                   e2e=f"{fmt_ms(tasks.e2e_s.p50)} / {fmt_ms(tasks.e2e_s.p90)}",
                   slowest=fmt_ms(tasks.slowest_step_p90_s),
                   slowest_ttft=fmt_ms(tasks.slowest_step_ttft_p90_s))


def _trace(t: TraceCard, slos: list[str], labels: Mapping[str, str]) -> TraceTable:
    return TraceTable(
        source=clip(t.source, 300),
        not_verified=clip(t.not_verified, 300) if t.not_verified else None,
        rows=(
            ("Requests", f"{fmt_count(t.requests)} ("
             + ", ".join(f"{clip(k, 20)} {fmt_count(v)}" for k, v in t.outcomes.items()
                         if v) + ")"),
            ("Send lag behind the schedule, p50 / p99",
             f"{fmt_ms(t.send_lag_s.p50)} / {fmt_ms(t.send_lag_s.p99)}"),
            ("Prompt tokens sent", fmt_count(t.prompt_tokens_sent)),
            ("Output tokens asked / received",
             f"{fmt_count(t.output_tokens_asked)} / {fmt_count(t.output_tokens_received)}"),
            ("Cached prompt tokens (vendor's count)", fmt_count(t.cached_prompt_tokens)),
            ("TTFT p50 / p90", f"{fmt_ms(t.ttft_s.p50)} / {fmt_ms(t.ttft_s.p90)}"),
            ("TPOT p90", fmt_ms(t.tpot_p90_s)),
            *[(f"Goodput: {labels.get(k, k)}", goodput_text(t.goodput[k]))
              for k in slos if k in t.goodput]))


def _level(lv: WorkloadLevelCard, slos: list[str]) -> LevelTables:
    return LevelTables(
        users=fmt_count(lv.users),
        rows=tuple(_shape_row(s, slos) for s in lv.shapes),
        turns=tuple(TurnTable(name=clip(s.name or "?", 40),
                              unit="step" if s.unit == "step" else "turn",
                              rows=_turn_rows(s),
                              cached=any(t.cached_prompt_tokens_p50 for t in s.turns))
                    for s in lv.shapes if len(s.turns) > 1),
        tasks=tuple(_task_row(s) for s in lv.shapes if s.tasks is not None))


def workload_context(workload: WorkloadCard | None, trace: TraceCard | None,
                     sources: Sources, profiles: Mapping[str, SloProfile],
                     charts: bool = True) -> WorkloadSection:
    """Everything "Your workload" and page one show of it, from the scorecard's blocks."""
    labels = _labels(profiles)
    slos = [k for k in labels if not profiles[k].throughput_only]
    w = workload
    svg = turns_chart(w.levels) if charts and w else None
    if w:
        line = f"{clip(w.headline, 600)}. From {clip(w.source, 200)}"
    elif trace:
        line = f"trace replayed: see Your workload. From {clip(trace.source, 200)}"
    else:
        line = NOT_MEASURED
    named = (("Baseline, prefill and ramp figures", sources.ramp),
             ("Your workload's figures", sources.workload),
             ("The trace's figures", sources.trace))
    return WorkloadSection(
        line=("Your workload", line),
        figure_sources=tuple((label, clip(said, 300)) for label, said in named if said),
        workload=WorkloadTables(
            source=clip(w.source, 300), cold_basis=clip(w.cold_basis or "", 600),
            slos=tuple(labels[k] for k in slos),
            levels=tuple(_level(lv, slos) for lv in w.levels)) if w else None,
        trace=_trace(trace, slos, labels) if trace else None,
        chart=Markup(kit.namespaced(svg, "workload")) if svg else None,
        caption=WORKLOAD_CAPTION)
