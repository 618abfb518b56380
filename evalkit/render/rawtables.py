"""Appendix D, the raw tables: connect, the baseline, every ramp level, the engine's own
timings beside ours, the prefill fit. Pure: the run's typed `Summary` in, strings out.

The words some rows share with page one come from `evalkit.render.pagetext`,
`evalkit.render.findings` and `evalkit.render.connections`; the last two still take a
level's connections and outcomes as written (`asdict`, `Level.raw`): the places to change
when they take the typed sections too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_levels import Connections, EngineTimings, Level, Pct
from evalkit.analysis.summary_sections import Connect, Prefill
from evalkit.fmt import fmt_ms, fmt_num, fmt_rate
from evalkit.render.connections import connection_text
from evalkit.render.findings import beside_outcomes
from evalkit.render.pagetext import baseline_heading, fmt_outcomes, fmt_value, prefill_text
from evalkit.render.pdf import clip

Rows = tuple[tuple[str, str], ...]
#: the ramp's metric keys (ttft, itl, admission) as the methodology names them
METRIC_NAMES = {"ttft": "TTFT", "itl": "TPOT", "tpot": "TPOT", "admission": "rejections",
                "incomplete": "cut streams", "timeout": "timeouts", "error": "errors"}


@dataclass(frozen=True)
class LevelRow:
    """One ramp level's row (and, under it, its new connections when it opened any)."""

    concurrency: str
    requests: str
    outcomes: str
    ttft_ms: str
    tpot_ms: str
    itl_ms: str
    tokens_per_chunk: str
    stream_rate: str
    aggregate: str
    stalls: str
    status: str
    connections: str | None


@dataclass(frozen=True)
class EngineRow:
    """The engine's own timings at one level beside our TTFT."""

    concurrency: str
    requests: str
    ttft_ms: str
    prompt_ms: str
    beyond_prompt_ms: str
    tpot_ms: str


@dataclass(frozen=True)
class RawTables:
    """Appendix D's tables; an empty one is not printed."""

    connect: Rows = ()
    baseline_heading: str = ""
    baseline: Rows = ()
    levels: tuple[LevelRow, ...] = ()
    engine: tuple[EngineRow, ...] = ()
    #: "Prefill …" sentence of the fit ("" without one)
    prefill: str = ""
    #: the ramp judged levels by their intervals (else point estimates: an older evalkit)
    breach_rule: bool = False


def in_ms(seconds: float | None) -> str:
    """Seconds as a bare number of ms (the table's header names the unit)."""
    return fmt_num(seconds * 1000) if seconds is not None else "—"


def pct_text(p: Pct, fmt: Callable[[Any], str] = fmt_ms) -> str:
    """p50 / p90 / p99 with the sample count; a p99 from fewer than 100 samples is marked
    (`evalkit.fmt.fmt_p`'s words, from the typed distribution)."""
    if p == Pct():
        return "—"
    low = p.n is not None and p.n < 100
    p99 = fmt(p.p99) + (" (low confidence)" if low and p.p99 else "")
    return (f"p50 {fmt(p.p50)} · p90 {fmt(p.p90)} · p99 {p99} · "
            f"n={p.n if p.n is not None else '—'}")


def _pair(p: Pct, *names: str) -> str:
    return " / ".join(in_ms(p.get(name)) for name in names)


def _connections(c: Connections | None) -> str | None:
    return connection_text(asdict(c)) if c is not None else None


def metric_names(metrics: tuple[str, ...]) -> str:
    """The metrics a tie straddled, in the methodology's names."""
    return ", ".join(METRIC_NAMES.get(m, clip(m, 20)) for m in metrics)


def _connect_rows(connect: Connect) -> Rows:
    rows = [("Usage reported", fmt_value(connect.usage_reported)),
            ("Tokens per chunk p50", fmt_num(connect.tokens_per_chunk.p50)),
            ("Network round trip", fmt_ms(connect.rtt_s))]
    if said := _connections(connect.connections):
        rows.append(("New connection", said))
    return tuple(rows)


def _baseline_rows(base: Level) -> Rows:
    rows = [("TTFT", pct_text(base.ttft_s)), ("TPOT", pct_text(base.tpot_s)),
            ("ITL", pct_text(base.itl_s)),
            ("Tokens per chunk", pct_text(base.tokens_per_chunk, fmt_num))]
    if base.ttfa_s != Pct() and base.reasoning_first:
        rows.append(("TTFA (first answer token)", pct_text(base.ttfa_s)))
    rows.append(("Stream rate", pct_text(base.stream_tokens_per_s, fmt_rate)))
    if said := _connections(base.connections):
        rows.append(("New connections", said))
    return tuple(rows)


def level_row(lv: Level) -> LevelRow:
    """One ramp level's row of Appendix D."""
    status = (lv.status or "—") + (f" ({metric_names(lv.ties)})" if lv.ties else "")
    return LevelRow(
        str(lv.concurrency), "" if lv.requests is None else str(lv.requests),
        fmt_outcomes(lv.outcomes) + beside_outcomes(lv.raw),
        _pair(lv.ttft_s, "p50", "p90", "p99"), _pair(lv.tpot_s, "p50", "p90"),
        _pair(lv.itl_s, "p50", "p90"), fmt_num(lv.tokens_per_chunk.p50),
        fmt_num(lv.stream_tokens_per_s.p50), fmt_num(lv.aggregate_tokens_per_s),
        str(lv.stalls) if lv.has_stalls else "—", status, _connections(lv.connections))


def _engine_row(lv: Level, e: EngineTimings) -> EngineRow:
    return EngineRow(str(lv.concurrency), fmt_value(e.requests), _pair(e.ttft_s, "p50", "p90"),
                     _pair(e.prompt_s, "p50", "p90"),
                     _pair(e.ttft_beyond_prompt_s, "p50", "p90"), _pair(e.tpot_s, "p50", "p90"))


def raw_tables(summary: Summary | None) -> RawTables:
    """Appendix D of a run (empty without one)."""
    if summary is None:
        return RawTables()
    s = summary.sections
    base, pre = s.baseline, s.prefill
    prefill = (f"Prefill {prefill_text(pre)}, overhead "
               f"{fmt_ms(pre.overhead_s)}, r² {fmt_num(pre.r2)}."
               if pre is not None and pre != Prefill() else "")
    return RawTables(
        connect=_connect_rows(s.connect) if s.connect and s.connect != Connect() else (),
        baseline_heading=baseline_heading(base) if base else "",
        baseline=_baseline_rows(base) if base else (),
        levels=tuple(level_row(lv) for lv in summary.ramp),
        engine=tuple(_engine_row(lv, lv.engine_timings) for lv in summary.ramp
                     if lv.engine_timings is not None and lv.engine_timings != EngineTimings()),
        prefill=prefill,
        breach_rule=bool(s.ramp and s.ramp.breach_rule))
