"""The scorecard's words on cost (pure): page one's line, and the "What it costs"
section's tables, from scorecard.json's `cost` (`evalkit.review.cost`). Amounts go
through `evalkit.fmt.fmt_money` in the questionnaire's currency, which is vendor text
and clipped here. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.analysis.summary import as_mapping
from evalkit.analysis.summary import as_number as _num
from evalkit.fmt import ci_text, fmt_money, fmt_pct
from evalkit.render.pdf import clip


def _currency(cost: Mapping[str, Any]) -> str | None:
    cur = cost.get("currency")
    return clip(cur, 12) if isinstance(cur, str) and cur.strip() else None


def _amount(cost: Mapping[str, Any], value: Any, ci: Any = None) -> str:
    cur = _currency(cost)
    return fmt_money(value, cur) + ci_text(ci, lambda v: fmt_money(v, cur).split(" ")[0])


def cost_line(cost: Mapping[str, Any]) -> tuple[str, str] | None:
    """Page one's one line: a session and a stream-hour at the concurrency sold; None
    when the scorecard has no cost section at all (an older scorecard)."""
    if not cost:
        return None
    c = cost.get("concurrency")
    if _num(cost.get("per_session")) is None:
        return ("Cost", f"not costed: {clip(cost.get('basis') or 'no prices', 300)}")
    sold = cost.get("concurrency_sold")
    where = (f"at the {c} streams sold" if c == sold else f"at {c} streams (not the "
             "concurrency sold, which the run did not measure)")
    return (f"Cost {where}",
            f"{_amount(cost, cost.get('per_session'), cost.get('per_session_ci'))} a session"
            f" · {_amount(cost, cost.get('per_stream_hour'), cost.get('per_stream_hour_ci'))}"
            " a stream-hour")


def cost_rows(cost: Mapping[str, Any], labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The section's small table: each cost at the concurrency it was read at, with its
    interval; then the cost per million tokens that met each use case's SLO."""
    if _num(cost.get("per_session")) is None:
        return []
    share = _num(cost.get("prefill_share"))
    rows = [
        ("Per million output tokens (input at the measured ratio)",
         _amount(cost, cost.get("per_million_output_tokens"),
                 cost.get("per_million_output_tokens_ci"))),
        ("Per session (mean cost of an ok request)",
         _amount(cost, cost.get("per_session"), cost.get("per_session_ci"))),
        ("Per stream-hour (one stream held an hour at its measured rate)",
         _amount(cost, cost.get("per_stream_hour"), cost.get("per_stream_hour_ci"))),
        ("Prefill (input) share of it",
         fmt_pct(share) if share is not None else "— (a GPU-hour price does not split it)"),
    ]
    slo = as_mapping(cost.get("per_million_slo_tokens"))
    slo_ci = as_mapping(cost.get("per_million_slo_tokens_ci"))
    for name, label in labels.items():
        value = slo.get(name)
        rows.append((f"Per million output tokens within the {label} SLO",
                     _amount(cost, value, slo_ci.get(name)) if _num(value) is not None
                     else "— (no request met it)" if name in slo else "—"))
    return rows


def slo_rows(cost: Mapping[str, Any], labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The cost at each use case's highest level within its SLO."""
    out = []
    for name, label in labels.items():
        at = as_mapping(as_mapping(cost.get("at_slo")).get(name))
        c = at.get("concurrency")
        if _num(c) is None:
            out.append((label, "no level within the SLO"))
            continue
        out.append((label, f"at {c} streams: {_amount(cost, at.get('per_session'))} a "
                    f"session · {_amount(cost, at.get('per_stream_hour'))} a stream-hour · "
                    f"{_amount(cost, at.get('per_million_slo_tokens'))} per million tokens "
                    "within it"))
    return out


def blended_rows(cost: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """A blended price's ratio table: (input:output, blended, separate) per session."""
    table = as_mapping(cost.get("blended"))
    rows = []
    for r in table.get("rows") or []:
        r = as_mapping(r)
        rows.append((str(r.get("ratio")), _amount(cost, r.get("blended")),
                     _amount(cost, r.get("separate"))))
    return rows


def workload_rows(cost: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What one unit (session, task, conversation) of the buyer's workload costs, per shape
    and level: the mean over complete units, then with the failed units' spend carried,
    since the buyer pays for the sessions that broke as well as for those that worked."""
    out = []
    for r in cost.get("workload") or []:
        r = as_mapping(r)
        n, k = r.get("units"), r.get("failed_units")
        users = r.get("users")
        label = (f"{clip(str(r.get('shape')), 60)} at {users} user"
                 f"{'' if users == 1 else 's'}: one complete "
                 f"unit (mean of {n})" + (" (client-bound level)" if r.get("client_bound")
                                          else ""))
        value = _amount(cost, r.get("per_unit"), r.get("per_unit_ci"))
        if isinstance(k, int) and k > 0 and _num(r.get("per_unit_with_failed")) is not None:
            whose = "failed unit's" if k == 1 else "failed units'"
            value += (f"; {_amount(cost, r.get('per_unit_with_failed'))} with the {k} {whose} "
                      f"served turns ({_amount(cost, r.get('spent_failed'))}) carried")
        elif k is None:
            value += " (failed units not summed: an older summary)"
        out.append((label, value))
    return out


def cost_context(cost: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """Everything the "What it costs" section shows."""
    table = as_mapping(cost.get("blended"))
    return {"basis": clip(cost.get("basis") or "", 600), "rows": cost_rows(cost, labels),
            "at_slo": slo_rows(cost, labels) if _num(cost.get("per_session")) is not None
            else [],
            "blended": blended_rows(cost), "workload": workload_rows(cost),
            "blended_basis": clip(table.get("separate_basis") or "", 300)}
