"""The buyer's workload, judged: scorecard.json's `workload` and `trace` blocks, and the
source line that says which workload every figure comes from. Pure: a summary (and what
the run probed) in, the scorecard's typed `workload`, `trace` and `sources` out
(`evalkit.review.workload_card`).

A capacity figure holds for one workload shape, so every figure the scorecard prints
names its source: the ramp's come from the suite's synthetic single-turn prompts, the
workload section's from the buyer's workload file (its name and SHA-256), the trace's
from the trace file at its speed.

Fail closed: a level the client could not keep up with measured the client, so nothing
in it is verified, whatever its goodput says; a shape whose units (sessions, tasks) were
cut short (a failure, or the level ending under it) cannot read as met, since the turns
that never ran are the ones a buyer's later users would have waited for. A miss stays a
miss: the requests that did run missed.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_levels import Goodput, Pct
from evalkit.analysis.summary_sections import Ramp
from evalkit.analysis.summary_workload import (
    Described,
    ShapeStats,
    SourceFile,
    Tasks,
    TraceSection,
    TurnStats,
    WorkloadSection,
)
from evalkit.analysis.thresholds import Tolerances
from evalkit.review.rules import RunTarget, quote
from evalkit.review.workload_card import (
    GoodputCard,
    Median90,
    Median99,
    ShapeCard,
    Sources,
    TasksCard,
    TraceCard,
    TurnCard,
    WorkloadCard,
    WorkloadLevelCard,
)

NOT_VERIFIED = "not_verified"
#: the goodput statuses the summary may state (any other reads no_data)
_GOODPUT_STATUSES = ("met", "tie", "missed", "no_data")


def _sha(source: SourceFile | None) -> str:
    sha = source.sha256 if source is not None else None
    return sha[:12] if sha else "no SHA-256"


def ramp_source(run: RunTarget | None) -> str:
    """Where the ramp's (and baseline's) figures come from."""
    if run is not None and run.prompts_file:
        return f"the buyer's prompts file {quote(run.prompts_file, 80)} (single-turn)"
    n = run.prompt_tokens if run is not None else None
    return ("the suite's synthetic single-turn prompts"
            + (f" of {n} tokens" if n is not None else ""))


def workload_source(described: Described | None) -> str:
    """`workload NAME (file name, sha256[:12])`."""
    d = described or Described()
    name = quote(d.name or "unnamed", 80)
    file = quote((d.source.name if d.source else None) or "no file", 80)
    return f"workload {name} ({file}, {_sha(d.source)})"


def trace_source(described: Described | None) -> str:
    """`trace FILE (sha256[:12]) replayed at x speed`."""
    d = described or Described()
    file = quote((d.source.name if d.source else None) or "no file", 80)
    return (f"trace {file} ({_sha(d.source)}) replayed at "
            f"{'?' if d.speed is None else f'{d.speed:g}'}x its speed")


def _p90(d: Pct) -> Median90:
    return Median90(d.p50, d.p90)


def _goodput(by_slo: Mapping[str, Goodput], why_not: str | None, cut: str | None
             ) -> dict[str, GoodputCard]:
    """Each SLO's goodput as the page states it: client-bound voids all, a cut-short unit
    voids a met (a tie or a miss stands: the requests that ran did not make it)."""
    out = {}
    for name, g in by_slo.items():
        status = g.status if g.status in _GOODPUT_STATUSES else "no_data"
        reason = None
        if why_not is not None:
            status, reason = NOT_VERIFIED, why_not
        elif cut is not None and status == "met":
            status, reason = NOT_VERIFIED, cut
        out[name] = GoodputCard(g.fraction, g.fraction_ci, g.met, g.requests, g.tokens_per_s,
                                status, reason)
    return out


def _turns(rows: tuple[TurnStats, ...], unit: str) -> tuple[TurnCard, ...]:
    return tuple(TurnCard(index, t.requests, t.prompt_tokens_p50, t.cached_prompt_tokens_p50,
                          _p90(t.ttft_s), t.tpot_s.p90, t.cold_ttft_s, t.ttft_vs_cold)
                 for t in rows if (index := t.step if unit == "step" else t.turn) is not None)


def later_turns(turns: tuple[TurnCard, ...]) -> float | None:
    """The later turns' (2 onwards) median TTFT over a cold prompt's, the median of their
    ratios; None with no later turn that has one."""
    ratios: list[float] = sorted(r for t in turns if (t.index or 0) > 1
                                 and (r := t.ttft_vs_cold) is not None)
    if not ratios:
        return None
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def _shape(name: str, s: ShapeStats, kind: str | None, bound: str | None) -> ShapeCard:
    units, complete = s.units, s.units_complete
    cut = None
    if units is None or complete is None:
        cut = "the summary does not say how many units completed"
    elif complete < units:
        cut = (f"{units - complete} of {units} units were cut short (a failure, or the "
               "level ended under them): their later turns never ran")
    unit = "step" if s.steps is not None else "turn"
    turns = _turns((s.steps if unit == "step" else s.turns) or (), unit)
    tasks = s.tasks if s.tasks != Tasks() else None
    return ShapeCard(
        name, kind, unit, s.requests, dict(s.outcomes), units, complete, _p90(s.ttft_s),
        s.tpot_s.p90, verified=bound is None and cut is None, not_verified=bound or cut,
        goodput=_goodput(s.goodput, bound, cut), turns=turns,
        later_vs_cold=later_turns(turns),
        tasks=None if tasks is None else TasksCard(
            tasks.complete, _p90(tasks.e2e_s), tasks.slowest_step_s.p90,
            tasks.slowest_step_ttft_s.p90))


def _headline(levels: list[WorkloadLevelCard], labels: Mapping[str, str]) -> str:
    """Page one's line: per shape, its highest verified level and the strictest SLO met
    there (the profiles' order), or the best share with its status; and the later turns
    against cold at the fewest users (queueing adds to every turn at more)."""
    names = list(dict.fromkeys(s.name for lv in levels for s in lv.shapes))
    parts = []
    for name in names:
        rows = [(lv.users, s) for lv in levels for s in lv.shapes if s.name == name]
        ok = [(u, s) for u, s in rows if s.verified]
        if not ok:
            parts.append(f"{quote(name, 40)}: not verified ({rows[-1][1].not_verified})")
            continue
        users, s = ok[-1]
        g = {k: v for k, v in s.goodput.items() if k in labels}
        met = next((k for k in labels if k in g and g[k].status == "met"), None)
        unit = "steps" if s.unit == "step" else "turns" if len(s.turns) > 1 else "requests"
        if met is not None:
            text = f"{fmt_share(g[met].fraction)} of {unit} within {labels[met]}"
        elif g:
            best = max(g, key=lambda k: g[k].fraction or 0.0)
            text = (f"{fmt_share(g[best].fraction)} of {unit} within {labels[best]} "
                    f"({g[best].status.replace('_', ' ')})")
        else:
            text = "no goodput measured"
        fewest = next(((u, x.later_vs_cold) for u, x in rows
                       if x.verified and x.later_vs_cold is not None), None)
        later = "" if fewest is None else (
            f"; later {unit} x{fewest[1]:.2f} of cold (at {fewest[0]} "
            f"user{'s' if fewest[0] != 1 else ''})")
        parts.append(f"{quote(name, 40)}: {users} user{'s' if users != 1 else ''}, {text}"
                     f"{later}")
    return "; ".join(parts) if parts else "no shape measured"


def fmt_share(x: float | None) -> str:
    """A share as page one says it (100 %, 97.5 %)."""
    return "—" if x is None else f"{x * 100:.3g} %"


def workload_section(summary: Summary | None) -> WorkloadSection | None:
    """The summary's workload phase; None when it ran none (an empty section says none)."""
    w = summary.sections.workload if summary is not None else None
    return w if w is not None and w != WorkloadSection() else None


def trace_section(summary: Summary | None) -> TraceSection | None:
    """The summary's trace replay; None when it replayed none (an empty section says none)."""
    t = summary.sections.trace if summary is not None else None
    return t if t is not None and t != TraceSection() else None


def workload_block(summary: Summary | None, tol: Tolerances,
                   void: str | None = None) -> WorkloadCard | None:
    """scorecard.json's `workload`: None when the run had no workload phase. `void` says
    why nothing of the run is verified (an invalid run), when it is not."""
    w = workload_section(summary)
    if w is None:
        return None
    described = w.described or Described()
    kinds = {str(s.name): s.kind for s in described.shapes}
    levels = []
    for lv in w.levels:
        users = lv.users
        if users is None:
            continue
        bound = (f"the client could not keep up at {users} users: the level measured the "
                 "client, not the vendor") if lv.client_bound is not False else void
        levels.append(WorkloadLevelCard(users, lv.client_bound is not False, tuple(
            _shape(n, s, kinds.get(n), bound) for n, s in lv.shapes.items())))
    labels = {k: p.label for k, p in tol.slo_profiles.items() if not p.throughput_only}
    source = described.source or SourceFile()
    return WorkloadCard(workload_source(described), described.name, source.name,
                        source.sha256, tuple(levels), w.cold_basis, _headline(levels, labels))


def trace_block(summary: Summary | None, void: str | None = None) -> TraceCard | None:
    """scorecard.json's `trace`: the replay's fidelity and what the vendor did under it;
    None when the run replayed no trace."""
    t = trace_section(summary)
    if t is None:
        return None
    described = t.described or Described()
    source = described.source or SourceFile()
    bound = ("the client could not keep up with the trace's schedule: the replay measured "
             "the client") if t.client_bound is not False else void
    return TraceCard(
        trace_source(described), source.name, source.sha256, described.speed, t.requests,
        dict(t.outcomes), t.client_bound is not False, bound,
        Median99(t.send_lag_s.p50, t.send_lag_s.p99), t.prompt_tokens_sent,
        t.output_tokens_asked, t.output_tokens_received, t.cached_prompt_tokens,
        _p90(t.ttft_s), t.tpot_s.p90, _goodput(t.goodput, bound, None))


def sources(summary: Summary | None, run: RunTarget | None) -> Sources:
    """Which workload each part of the scorecard's figures comes from."""
    ramped = summary is not None and (summary.sections.baseline is not None or (
        summary.sections.ramp not in (None, Ramp())))
    workload, trace = workload_section(summary), trace_section(summary)
    return Sources(ramp_source(run) if ramped else None,
                   workload_source(workload.described) if workload else None,
                   trace_source(trace.described) if trace else None)
