"""The buyer's workload, judged: scorecard.json's `workload` and `trace` blocks, and the
source line that says which workload every figure comes from. Pure: a summary (and what
the run probed) in, plain JSON-able data out.

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
from typing import Any

from evalkit.analysis.summary import as_count, as_mapping, as_number
from evalkit.analysis.thresholds import Tolerances
from evalkit.review.rules import RunTarget, quote

NOT_VERIFIED = "not_verified"


def _sha(source: Mapping[str, Any]) -> str:
    sha = source.get("sha256")
    return sha[:12] if isinstance(sha, str) and sha else "no SHA-256"


def ramp_source(run: RunTarget | None) -> str:
    """Where the ramp's (and baseline's) figures come from."""
    if run is not None and run.prompts_file:
        return f"the buyer's prompts file {quote(run.prompts_file, 80)} (single-turn)"
    n = run.prompt_tokens if run is not None else None
    return ("the suite's synthetic single-turn prompts"
            + (f" of {n} tokens" if n is not None else ""))


def workload_source(described: Mapping[str, Any] | None) -> str:
    """`workload NAME (file name, sha256[:12])`."""
    d = as_mapping(described)
    source = as_mapping(d.get("source"))
    name = quote(str(d.get("name") or "unnamed"), 80)
    file = quote(str(source.get("name") or "no file"), 80)
    return f"workload {name} ({file}, {_sha(source)})"


def trace_source(described: Mapping[str, Any] | None) -> str:
    """`trace FILE (sha256[:12]) replayed at x speed`."""
    d = as_mapping(described)
    source = as_mapping(d.get("source"))
    speed = as_number(d.get("speed"))
    file = quote(str(source.get("name") or "no file"), 80)
    return (f"trace {file} ({_sha(source)}) replayed at "
            f"{'?' if speed is None else f'{speed:g}'}x its speed")


def _pct(d: Any, *keys: str) -> dict[str, float | None]:
    m = as_mapping(d)
    return {k: as_number(m.get(k)) for k in keys}


def _goodput(raw: Any, why_not: str | None, cut: str | None) -> dict[str, Any]:
    """Each SLO's goodput as the page states it: client-bound voids all, a cut-short unit
    voids a met (a tie or a miss stands: the requests that ran did not make it)."""
    out = {}
    for name, g in as_mapping(raw).items():
        g = as_mapping(g)
        status = g.get("status") if g.get("status") in ("met", "tie", "missed", "no_data") \
            else "no_data"
        reason = None
        if why_not is not None:
            status, reason = NOT_VERIFIED, why_not
        elif cut is not None and status == "met":
            status, reason = NOT_VERIFIED, cut
        ci = g.get("fraction_ci")
        out[str(name)] = {"fraction": as_number(g.get("fraction")),
                          "fraction_ci": [as_number(v) for v in ci]
                          if isinstance(ci, list) and len(ci) == 2 else None,
                          "met": as_count(g.get("met")), "requests": as_count(g.get("requests")),
                          "tokens_per_s": as_number(g.get("tokens_per_s")),
                          "status": status, "reason": reason}
    return out


def _turns(rows: Any, key: str) -> list[dict[str, Any]]:
    out = []
    for t in rows if isinstance(rows, list) else []:
        t = as_mapping(t)
        if as_count(t.get(key)) is None:
            continue
        out.append({"index": as_count(t.get(key)), "requests": as_count(t.get("requests")),
                    "prompt_tokens_p50": as_number(t.get("prompt_tokens_p50")),
                    "cached_prompt_tokens_p50": as_number(t.get("cached_prompt_tokens_p50")),
                    "ttft_s": _pct(t.get("ttft_s"), "p50", "p90"),
                    "tpot_p90_s": as_number(as_mapping(t.get("tpot_s")).get("p90")),
                    "cold_ttft_s": as_number(t.get("cold_ttft_s")),
                    "ttft_vs_cold": as_number(t.get("ttft_vs_cold"))})
    return out


def later_turns(turns: list[dict[str, Any]]) -> float | None:
    """The later turns' (2 onwards) median TTFT over a cold prompt's, the median of their
    ratios; None with no later turn that has one."""
    ratios: list[float] = sorted(r for t in turns if (t["index"] or 0) > 1
                                 and (r := as_number(t["ttft_vs_cold"])) is not None)
    if not ratios:
        return None
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def _shape(name: str, s: Mapping[str, Any], kind: str | None, bound: str | None
           ) -> dict[str, Any]:
    units, complete = as_count(s.get("units")), as_count(s.get("units_complete"))
    cut = None
    if units is None or complete is None:
        cut = "the summary does not say how many units completed"
    elif complete < units:
        cut = (f"{units - complete} of {units} units were cut short (a failure, or the "
               "level ended under them): their later turns never ran")
    key = "step" if isinstance(s.get("steps"), list) else "turn"
    turns = _turns(s.get("steps") if key == "step" else s.get("turns"), key)
    tasks = as_mapping(s.get("tasks"))
    return {
        "name": name, "kind": kind, "unit": key,
        "requests": as_count(s.get("requests")), "outcomes": dict(as_mapping(s.get("outcomes"))),
        "units": units, "units_complete": complete,
        "ttft_s": _pct(s.get("ttft_s"), "p50", "p90"),
        "tpot_p90_s": as_number(as_mapping(s.get("tpot_s")).get("p90")),
        "verified": bound is None and cut is None, "not_verified": bound or cut,
        "goodput": _goodput(s.get("goodput"), bound, cut),
        "turns": turns, "later_vs_cold": later_turns(turns),
        "tasks": None if not tasks else {
            "complete": as_count(tasks.get("complete")),
            "e2e_s": _pct(tasks.get("e2e_s"), "p50", "p90"),
            "slowest_step_p90_s": as_number(as_mapping(tasks.get("slowest_step_s")).get("p90")),
            "slowest_step_ttft_p90_s": as_number(
                as_mapping(tasks.get("slowest_step_ttft_s")).get("p90"))},
    }


def _headline(levels: list[dict[str, Any]], labels: Mapping[str, str]) -> str:
    """Page one's line: per shape, its highest verified level and the strictest SLO met
    there (the profiles' order), or the best share with its status; and the later turns
    against cold at the fewest users (queueing adds to every turn at more)."""
    names = list(dict.fromkeys(s["name"] for lv in levels for s in lv["shapes"]))
    parts = []
    for name in names:
        rows = [(lv["users"], s) for lv in levels for s in lv["shapes"] if s["name"] == name]
        ok = [(u, s) for u, s in rows if s["verified"]]
        if not ok:
            parts.append(f"{quote(name, 40)}: not verified ({rows[-1][1]['not_verified']})")
            continue
        users, s = ok[-1]
        g = {k: v for k, v in s["goodput"].items() if k in labels}
        met = next((k for k in labels if g.get(k, {}).get("status") == "met"), None)
        unit = "steps" if s["unit"] == "step" else "turns" if s["turns"] and len(
            s["turns"]) > 1 else "requests"
        if met is not None:
            text = f"{fmt_share(g[met]['fraction'])} of {unit} within {labels[met]}"
        elif g:
            best = max(g, key=lambda k: g[k]["fraction"] or 0.0)
            text = (f"{fmt_share(g[best]['fraction'])} of {unit} within {labels[best]} "
                    f"({g[best]['status'].replace('_', ' ')})")
        else:
            text = "no goodput measured"
        fewest = next(((u, x) for u, x in rows
                       if x["verified"] and x["later_vs_cold"] is not None), None)
        later = "" if fewest is None else (
            f"; later {unit} x{fewest[1]['later_vs_cold']:.2f} of cold (at {fewest[0]} "
            f"user{'s' if fewest[0] != 1 else ''})")
        parts.append(f"{quote(name, 40)}: {users} user{'s' if users != 1 else ''}, {text}"
                     f"{later}")
    return "; ".join(parts) if parts else "no shape measured"


def fmt_share(x: float | None) -> str:
    """A share as page one says it (100 %, 97.5 %)."""
    return "—" if x is None else f"{x * 100:.3g} %"


def workload_block(summary: Mapping[str, Any] | None, tol: Tolerances,
                   void: str | None = None) -> dict[str, Any] | None:
    """scorecard.json's `workload`: None when the run had no workload phase. `void` says
    why nothing of the run is verified (an invalid run), when it is not."""
    w = as_mapping(as_mapping(summary).get("workload"))
    if not w:
        return None
    described = as_mapping(w.get("described"))
    kinds = {str(s.get("name")): s.get("kind") for s in described.get("shapes") or []
             if isinstance(s, Mapping)}
    levels = []
    for lv in w.get("levels") or []:
        lv = as_mapping(lv)
        users = as_count(lv.get("users"))
        if users is None:
            continue
        bound = (f"the client could not keep up at {users} users: the level measured the "
                 "client, not the vendor") if lv.get("client_bound") is not False else void
        levels.append({"users": users, "client_bound": lv.get("client_bound") is not False,
                       "shapes": [_shape(str(n), as_mapping(s), kinds.get(str(n)), bound)
                                  for n, s in as_mapping(lv.get("shapes")).items()]})
    labels = {k: p.label for k, p in tol.slo_profiles.items() if not p.throughput_only}
    return {"source": workload_source(described), "name": described.get("name"),
            "file": as_mapping(described.get("source")).get("name"),
            "sha256": as_mapping(described.get("source")).get("sha256"),
            "levels": levels, "cold_basis": w.get("cold_basis"),
            "headline": _headline(levels, labels)}


def trace_block(summary: Mapping[str, Any] | None, void: str | None = None
                ) -> dict[str, Any] | None:
    """scorecard.json's `trace`: the replay's fidelity and what the vendor did under it;
    None when the run replayed no trace."""
    t = as_mapping(as_mapping(summary).get("trace"))
    if not t:
        return None
    described = as_mapping(t.get("described"))
    bound = ("the client could not keep up with the trace's schedule: the replay measured "
             "the client") if t.get("client_bound") is not False else void
    return {"source": trace_source(described),
            "file": as_mapping(described.get("source")).get("name"),
            "sha256": as_mapping(described.get("source")).get("sha256"),
            "speed": as_number(described.get("speed")),
            "requests": as_count(t.get("requests")),
            "outcomes": dict(as_mapping(t.get("outcomes"))),
            "client_bound": t.get("client_bound") is not False, "not_verified": bound,
            "send_lag_s": _pct(t.get("send_lag_s"), "p50", "p99"),
            "prompt_tokens_sent": as_number(t.get("prompt_tokens_sent")),
            "output_tokens_asked": as_number(t.get("output_tokens_asked")),
            "output_tokens_received": as_number(t.get("output_tokens_received")),
            "cached_prompt_tokens": as_number(t.get("cached_prompt_tokens")),
            "ttft_s": _pct(t.get("ttft_s"), "p50", "p90"),
            "tpot_p90_s": as_number(as_mapping(t.get("tpot_s")).get("p90")),
            "goodput": _goodput(t.get("goodput"), bound, None)}


def sources(summary: Mapping[str, Any] | None, run: RunTarget | None) -> dict[str, Any]:
    """Which workload each part of the scorecard's figures comes from."""
    s = as_mapping(summary)
    return {"ramp": ramp_source(run) if s.get("ramp") or s.get("baseline") else None,
            "workload": workload_source(as_mapping(s["workload"]).get("described"))
            if as_mapping(s.get("workload")) else None,
            "trace": trace_source(as_mapping(s["trace"]).get("described"))
            if as_mapping(s.get("trace")) else None}
