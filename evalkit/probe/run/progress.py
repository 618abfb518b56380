"""Live progress for `evalkit probe`: phase, level, requests, current TTFT and tokens/s.

The suite calls three methods (`phase`, `record`, `note`) and `close`; anything with
those methods can stand in (a notebook may pass its own, or None for silence). The rich
display redraws at most 4 times a second, from the caller's thread only (no refresh
thread competing with the event loop for the GIL while streams are being timed).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from evalkit.analysis.intervals import quantile_ranks
from evalkit.records import RequestRecord
from evalkit.sanitize import clean

if TYPE_CHECKING:  # the typed summary's modules load pandas: not before the first stream
    from evalkit.analysis.summary import Level, Sections, Summary
    from evalkit.analysis.summary_checks import Client, Validity
    from evalkit.analysis.summary_sections import Prefill, Ramp


class Progress(Protocol):
    """What the suite asks of a progress display (`LiveProgress`, `NullProgress`, a
    notebook's own): told of each phase, record and note, then closed."""

    def phase(self, name: str, level: int | None, detail: str = "") -> None: ...

    def record(self, rec: RequestRecord) -> None: ...

    def note(self, text: str) -> None: ...

    def close(self) -> None: ...


#: what `run_probe` takes as progress: a display, or (a voice run) a function handed each
#: line to say; None for silence
ProgressArg = Progress | Callable[[str], None] | None


class LiveProgress:
    """A rich live panel on stderr; plain lines when stderr is not a terminal."""

    def __init__(self, console: Console | None = None, refresh_s: float = 0.25) -> None:
        self.console = console or Console(stderr=True)
        self.refresh_s = refresh_s
        self._live: Live | None = None
        if self.console.is_terminal:
            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()
        self._phase, self._detail = "", ""
        self._level: int | None = None
        self._outcomes: Counter[str] = Counter()
        self._reconnects = 0  # this phase's requests sent again on a fresh connection
        self._recent: deque[RequestRecord] = deque(maxlen=50)
        self._total = 0
        self._last_draw = 0.0

    def phase(self, name: str, level: int | None, detail: str = "") -> None:
        """A phase (or a ramp level) starts."""
        self._phase, self._level, self._detail = name, level, detail
        self._outcomes.clear()
        self._reconnects = 0
        self._recent.clear()
        if self._live is None:
            lvl = f" level {level}" if level is not None else ""
            self.console.print(escape(f"[{name}{lvl}] {detail}"))
        self._draw(force=True)

    def record(self, rec: RequestRecord) -> None:
        """A request completed."""
        self._total += 1
        self._outcomes[rec.outcome] += 1
        self._reconnects += rec.reconnects
        self._recent.append(rec)
        self._draw()

    def note(self, text: str) -> None:
        """Something the user should know now (e.g. the client became the bottleneck)."""
        self.console.print(escape(f"note: {text}"))

    def close(self) -> None:
        """Final redraw and stop."""
        if self._live is not None:
            self._draw(force=True)
            self._live.stop()
            self._live = None

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._live is None or (not force and now - self._last_draw < self.refresh_s):
            return
        self._last_draw = now
        self._live.update(self._table(), refresh=True)

    def _table(self) -> Table:
        ok = [r for r in self._recent if r.outcome == "ok"]
        ttfts = sorted(r.ttft_s for r in ok if r.ttft_s is not None)
        rates = sorted(
            (r.output_tokens - 1) / (r.e2e_s - r.ttft_s) for r in ok
            if r.output_tokens and r.output_tokens > 1 and r.e2e_s and r.ttft_s is not None
            and r.e2e_s > r.ttft_s)
        table = Table.grid(padding=(0, 2))
        level = "" if self._level is None else f"  level {self._level}"
        table.add_row("[bold]phase[/]", f"{self._phase}{level}  {self._detail}")
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self._outcomes.items())) or "-"
        if self._reconnects:
            outcomes += f"; reconnects {self._reconnects}"
        table.add_row("[bold]requests[/]", f"{sum(self._outcomes.values())} in this phase "
                      f"({outcomes}); {self._total} in the run")
        table.add_row("[bold]TTFT p50[/]", _median_ms(ttfts))
        table.add_row("[bold]stream tok/s p50[/]",
                      f"{rates[len(rates) // 2]:.1f}" if rates else "-")
        return table


def _median_ms(values: list[float]) -> str:
    return f"{values[len(values) // 2] * 1000:.1f} ms (last {len(values)})" if values else "-"


class NullProgress:
    """Silence (tests, notebooks)."""

    def phase(self, name: str, level: int | None, detail: str = "") -> None:
        """Ignored."""

    def record(self, rec: RequestRecord) -> None:
        """Ignored."""

    def note(self, text: str) -> None:
        """Ignored."""

    def close(self) -> None:
        """Ignored."""


def summary_lines(summary: Summary | None) -> list[str]:
    """The short human summary printed at the end of a probe, read from the typed
    `Summary` the write-up gave back (`evalkit.rundir.writeup`): the same words the
    summary's dict gave, from fields mypy follows when a figure is renamed."""
    if summary is None:
        return ["no summary (no request completed)"]
    sections = summary.sections
    out: list[str] = []
    base = sections.baseline
    if base is not None:
        out.append(f"baseline: TTFT p50 {_ms(base.ttft_s.p50)}, p90 {_ms(base.ttft_s.p90)}; "
                   f"TPOT p50 {_ms(base.tpot_s.p50)}; ITL p50 {_ms(base.itl_s.p50)}")
    out += prefill_lines(sections.prefill)
    ramp = sections.ramp
    for lvl in ramp.levels if ramp is not None else ():
        agg = lvl.aggregate_tokens_per_s
        bound = {"client_bound": "  [client-bound]", "failed": "  [FAILED]",
                 "breached": "  [breached]", "no_data": "  [no data]",
                 "tie": f"  [tie: {', '.join(lvl.ties)}]"}.get(lvl.status or "", "")
        out.append(f"  c={lvl.concurrency:>4}: TTFT p90 {_ms(lvl.ttft_s.p90)}, "
                   f"TPOT p90 {_ms(lvl.tpot_s.p90)}, aggregate "
                   f"{'-' if agg is None else f'{agg:.0f}'} tok/s, outcomes "
                   f"{_outcomes(lvl.outcomes)}{_beside(lvl)}{bound}")
    out += interval_lines(ramp)
    out += configuration_lines(sections)
    out += ramp_lines(ramp)
    out += workload_lines(sections)
    out += client_lines(sections.client)
    out += validity_lines(sections.validity)
    return out


def prefill_lines(pre: Prefill | None) -> list[str]:
    """The prefill rate with its interval, or why only a floor under it is known."""
    if pre is None:
        return []
    if pre.tokens_per_s:
        ci = pre.tokens_per_s_ci
        within = (f", 95 % interval {ci[0]:,.0f}–{ci[1]:,.0f}"
                  if ci is not None and ci[0] is not None and ci[1] is not None
                  else ", no interval: too few prompt lengths")
        return [f"prefill: {pre.tokens_per_s:,.0f} prompt tokens/s{within} "
                f"(r² {pre.r2 or 0:.2f})"]
    if pre.tokens_per_s_at_least:
        return [f"prefill: {clean(str(pre.reason), 200)}"]
    return []


def ramp_lines(ramp: Ramp | None) -> list[str]:
    """The ramp's verdict: what degraded first and where, or that no level breached (the
    max sustained level then a lower bound), or why there is no conclusion; and the
    lowest tie's note beside a verdict."""
    if ramp is None:
        return []
    out = []
    if ramp.first_degraded:
        out.append(f"ramp: max sustained concurrency {ramp.max_sustained_concurrency}, "
                   f"first degraded: {ramp.first_degraded} (at concurrency "
                   f"{ramp.first_breach_concurrency})")
    elif ramp.max_sustained_concurrency is not None:
        out.append(f"ramp: no level breached; max sustained concurrency "
                   f"{ramp.max_sustained_concurrency} is a lower bound")
    else:
        out.append(f"ramp: no capacity conclusion: {ramp.note or 'no level was judged'}")
    if ramp.first_tie_concurrency is not None and (
            ramp.first_degraded or ramp.max_sustained_concurrency is not None):
        # (with neither, the note was the line above)
        out.append(f"ramp: {clean(str(ramp.note), 300)}")
    return out


def client_lines(client: Client | None) -> list[str]:
    """Whether the client was the bottleneck, and whether that voids the capacity
    judgement (it does where the judgement is drawn)."""
    if client is None:
        return []
    if client.capacity_judgement_affected:
        return ["client: the client was the bottleneck where the capacity judgement is "
                "drawn; no capacity conclusion comes from this run"]
    if client.client_bound:
        return ["client: the client was the bottleneck in "
                + ", ".join([*client.client_bound_phases,
                             *(f"level {c}" for c in client.client_bound_levels)])
                + " only; the capacity judgement is unaffected"]
    return []


def _beside(group: Level) -> str:
    """What stands beside a group's outcomes: requests sent again after a close that was
    ours to repair, and those refused as a configuration finding (neither is load)."""
    said = [f"{n} {what}" for n, what in ((group.reconnects, "reconnects"),
                                          (group.configuration_failures, "configuration"))
            if n > 0]
    return f"; {', '.join(said)}" if said else ""


def configuration_lines(sections: Sections) -> list[str]:
    """Each configuration finding (a shape refused alone as under load), what to change,
    and the requests sent again on a fresh connection: the probe's own word that
    neither was counted as load."""
    out = []
    findings = sections.configuration.findings if sections.configuration is not None else ()
    for f in findings[:5]:
        phases = ", ".join(f"{clean(str(p), 20)} {n}" for p, n in f.phases.items())
        out.append(f"configuration: HTTP {f.status} "
                   f"\"{clean(str(f.message), 160)}\" for {f.requests} requests "
                   f"({phases}), alone as under load: not counted as load; "
                   f"{clean(str(f.change), 400)}")
    n = sections.reconnects
    if n is not None and n > 0:
        out.append(f"reconnects: {n} requests went out again on a fresh connection (the "
                   "server had closed the reused one as they reached it, unanswered): "
                   "timed from their first send, not counted as errors")
    return out


#: the use case whose goodput a workload line shows: an SLO profile's name, a key of the
#: typed `ShapeStats.goodput` (the profiles are the run's data, not summary.json's schema)
CHAT = "interactive_chat"


def workload_lines(sections: Sections) -> list[str]:
    """One line per workload level and shape (units complete, TTFT p90, goodput for chat),
    and the trace's fidelity: what the buyer's own traffic met."""
    out = []
    for lv in sections.workload.levels if sections.workload is not None else ():
        for name, sh in lv.shapes.items():
            good = sh.goodput.get(CHAT)
            share = None if good is None else good.fraction
            out.append(f"  workload {clean(name, 40)} at {lv.users} users: "
                       f"{sh.units_complete} of {sh.units} units complete, TTFT "
                       f"p90 {_ms(sh.ttft_s.p90)}, interactive chat goodput "
                       f"{'-' if share is None else f'{share:.0%}'}"
                       + ("  [client-bound]" if lv.client_bound else ""))
    tr = sections.trace
    if tr is not None:
        of = "" if tr.complete or tr.planned is None else f" of {tr.planned} (cut short)"
        out.append(f"trace: {tr.requests}{of} requests, outcomes "
                   f"{_outcomes(tr.outcomes)}; sent behind schedule p99 "
                   f"{_ms(tr.send_lag_s.p99)}; TTFT p90 {_ms(tr.ttft_s.p90)}"
                   + ("  [client-bound]" if tr.client_bound else ""))
    return out


def interval_lines(ramp: Ramp | None) -> list[str]:
    """The width each ramp level achieved on the p90 it is judged on: in ms, and in
    quantile terms (the order statistics that bound it), so a reader sees what
    `--interval-width` would buy."""
    levels = ramp.levels if ramp is not None else ()
    if not levels:
        return []
    out = ["intervals: each level's TTFT p90 with its 95 % interval (n; the interval's "
           "ends as percentiles of what was measured)"]
    for lvl in levels:
        n, ci = lvl.ttft_s.n or 0, lvl.ttft_s.interval("p90") or (None, None)
        lo, hi = quantile_ranks(n, 0.9)
        ends = "–".join("open" if v is None else f"{v * 1000:.0f}" for v in ci)
        ranks = ("an end open: 36 requests bound a p90" if lo is None or hi is None else
                 f"p{100 * lo / n:.0f}–p{100 * hi / n:.0f}, {100 * (hi - lo) / n:.1f} "
                 "points wide")
        out.append(f"  c={lvl.concurrency:>4}: {ends} ms (n {n}; {ranks})")
    return out


def validity_lines(validity: Validity) -> list[str]:
    """The run's validity as the probe's last word: a measured-nothing run must say so,
    and one that states no validity (an older summary) is not read as valid."""
    if validity.status == "unknown":
        return ["validity: not assessed (a summary from an older evalkit)"]
    reasons = [clean(r, 300) for r in validity.reasons]
    if validity.status == "valid":
        return ["validity: valid"]
    head = "RUN INVALID" if validity.invalid else "validity: degraded"
    return [f"{head}: {reasons[0] if reasons else validity.status}",
            *(f"  also: {r}" for r in reasons[1:])]


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def _outcomes(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "-"
