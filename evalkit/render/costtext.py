"""The scorecard's words on cost (pure): page one's line, and the "What it costs"
section's tables, from the scorecard's typed `Cost` (`evalkit.review.costcard`). Amounts
go through `evalkit.fmt.fmt_money` in the questionnaire's currency, which is vendor text
and clipped here. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalkit.analysis.jsonread import Interval
from evalkit.fmt import ci_text, fmt_money, fmt_pct
from evalkit.render.pdf import clip
from evalkit.review.costcard import Cost, LevelCost


def _currency(cost: Cost) -> str | None:
    cur = cost.currency
    return clip(cur, 12) if isinstance(cur, str) and cur.strip() else None


def _amount(cost: Cost, value: float | None, ci: Interval | None = None) -> str:
    cur = _currency(cost)
    return fmt_money(value, cur) + ci_text(ci, lambda v: fmt_money(v, cur).split(" ")[0])


def _costed(cost: Cost) -> LevelCost | None:
    """The level costed, when a session was costed there (None: not costed)."""
    return cost.at if cost.at is not None and cost.at.per_session is not None else None


def cost_line(cost: Cost | None) -> tuple[str, str] | None:
    """Page one's one line: a session and a stream-hour at the concurrency sold; None
    when the scorecard has no cost section at all (an older scorecard)."""
    if cost is None:
        return None
    at = _costed(cost)
    if at is None:
        return ("Cost", f"not costed: {clip(cost.basis or 'no prices', 300)}")
    c, sold = at.concurrency, cost.concurrency_sold
    where = (f"at the {c} streams sold" if c == sold else f"at {c} streams (not the "
             "concurrency sold, which the run did not measure)")
    return (f"Cost {where}",
            f"{_amount(cost, at.per_session, at.per_session_ci)} a session"
            f" · {_amount(cost, at.per_stream_hour, at.per_stream_hour_ci)} a stream-hour")


def call_cost_line(cost: Cost | None) -> tuple[str, str] | None:
    """Page one's line for a realtime call at Q3's audio prices (None: the scorecard says
    nothing of calls: a text run with no audio price)."""
    voice = cost.voice if cost is not None else None
    if cost is None or voice is None:
        return None
    at = voice.at
    if at is None or at.per_call_minute is None:
        return ("Cost of a call", f"{clip(voice.basis or 'not computed', 300)}")
    return (f"Cost of a call at {at.calls} concurrent calls",
            f"{_amount(cost, at.per_call_minute)} a call-minute"
            f" · {_amount(cost, at.per_call)} a call of the measured shape")


def cost_rows(cost: Cost, labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The section's small table: each cost at the concurrency it was read at, with its
    interval; then the cost per million tokens that met each use case's SLO."""
    at = _costed(cost)
    if at is None:
        return []
    share = at.prefill_share
    rows = [
        ("Per million output tokens (input at the measured ratio)",
         _amount(cost, at.per_million_output_tokens, at.per_million_output_tokens_ci)),
        ("Per session (mean cost of an ok request)",
         _amount(cost, at.per_session, at.per_session_ci)),
        ("Per stream-hour (one stream held an hour at its measured rate)",
         _amount(cost, at.per_stream_hour, at.per_stream_hour_ci)),
        ("Prefill (input) share of it",
         fmt_pct(share) if share is not None else "— (a GPU-hour price does not split it)"),
    ]
    slo, slo_ci = at.per_million_slo_tokens, at.per_million_slo_tokens_ci
    for name, label in labels.items():
        value = slo.get(name)
        rows.append((f"Per million output tokens within the {label} SLO",
                     _amount(cost, value, slo_ci.get(name)) if value is not None
                     else "— (no request met it)" if name in slo else "—"))
    return rows


def slo_rows(cost: Cost, labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The cost at each use case's highest level within its SLO."""
    out = []
    for name, label in labels.items():
        at = cost.at_slo.get(name)
        c = at.concurrency if at is not None else None
        if at is None or c is None:
            out.append((label, "no level within the SLO"))
            continue
        out.append((label, f"at {c} streams: {_amount(cost, at.per_session)} a "
                    f"session · {_amount(cost, at.per_stream_hour)} a stream-hour · "
                    f"{_amount(cost, at.per_million_slo_tokens)} per million tokens "
                    "within it"))
    return out


def blended_rows(cost: Cost) -> list[tuple[str, str, str]]:
    """A blended price's ratio table: (input:output, blended, separate) per session."""
    rows = cost.blended.rows if cost.blended is not None else ()
    return [(str(r.ratio), _amount(cost, r.blended), _amount(cost, r.separate)) for r in rows]


def workload_rows(cost: Cost) -> list[tuple[str, str]]:
    """What one unit (session, task, conversation) of the buyer's workload costs, per shape
    and level: the mean over complete units, then with the failed units' spend carried,
    since the buyer pays for the sessions that broke as well as for those that worked."""
    out = []
    for r in cost.workload:
        n, k, users = r.units, r.failed_units, r.users
        label = (f"{clip(str(r.shape), 60)} at {users} user"
                 f"{'' if users == 1 else 's'}: one complete "
                 f"unit (mean of {n})" + (" (client-bound level)" if r.client_bound else ""))
        value = _amount(cost, r.per_unit, r.per_unit_ci)
        if k is not None and k > 0 and r.per_unit_with_failed is not None:
            whose = "failed unit's" if k == 1 else "failed units'"
            value += (f"; {_amount(cost, r.per_unit_with_failed)} with the {k} {whose} "
                      f"served turns ({_amount(cost, r.spent_failed)}) carried")
        elif k is None:
            value += " (failed units not summed: an older summary)"
        out.append((label, value))
    return out


@dataclass(frozen=True)
class CostSection:
    """Everything the "What it costs" section shows, as (label, value) rows."""

    basis: str
    rows: tuple[tuple[str, str], ...]
    at_slo: tuple[tuple[str, str], ...]
    #: a blended price's ratio table: (input:output, blended, separate)
    blended: tuple[tuple[str, str, str], ...]
    workload: tuple[tuple[str, str], ...]
    blended_basis: str


def cost_context(cost: Cost, labels: Mapping[str, str]) -> CostSection:
    """Everything the "What it costs" section shows."""
    table = cost.blended
    return CostSection(
        basis=clip(cost.basis or "", 600), rows=tuple(cost_rows(cost, labels)),
        at_slo=tuple(slo_rows(cost, labels)) if _costed(cost) is not None else (),
        blended=tuple(blended_rows(cost)), workload=tuple(workload_rows(cost)),
        blended_basis=clip((table.separate_basis or "") if table else "", 300))
