"""The buyer's workload, measured: per level, per shape, per turn or step, and per agent
task; and the trace replay's fidelity and figures. Pure: frames in, figures out.

A later turn of a session carries more prompt than the first (the history grows), so
its TTFT alone says little: beside it stands the TTFT a *cold* prompt of the same length
would have had, from the prefill fit (`prefill.overhead_s + slope × tokens`, measured at
concurrency 1 on prompts no cache could serve). A turn faster than its cold prompt was
served from a cache, or the fit does not reach its length; the vendor's own count of
cached tokens, where it reports one, stands beside both. The comparison means most at
one user: with more users in flight, queueing adds to every turn.

Fail closed, as everywhere: every request of a group is in its denominators, a unit cut
short (a failure, the level's end) counts as not complete, and goodput counts a failure
as a miss (`evalkit.analysis.goodput`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.goodput import level_goodput
from evalkit.analysis.stats import outcome_counts, percentiles, token_sums
from evalkit.analysis.thresholds import SloProfile

COLD_BASIS = ("cold_ttft_s is the TTFT a prompt of the turn's median length would have had "
              "with nothing cached, from the prefill fit (overhead + slope x tokens, at "
              "concurrency 1); ttft_vs_cold is the turn's median TTFT over it (below 1: "
              "faster than cold, as a prefix cache makes it). Most meaningful at one user: "
              "at more, queueing adds to every turn")


def _median(values: Any) -> float | None:
    a = np.asarray(values, dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else None


def _span(sub: pd.DataFrame) -> dict[str, float] | None:
    """The group's own window, first send to last end: its goodput's tokens/s are over it."""
    start = sub["t0_s"].to_numpy(dtype=np.float64)
    end = sub["end_s"].to_numpy(dtype=np.float64)  # the frame's end is on the run's clock
    if not np.isfinite(end).any():
        return None
    lo, hi = float(np.nanmin(start)), float(np.nanmax(end))
    return {"start_s": lo, "end_s": hi} if hi > lo else None


def _cold(prefill: Mapping[str, Any] | None, tokens: float | None) -> float | None:
    if prefill is None or tokens is None:
        return None
    a, b = prefill.get("overhead_s"), prefill.get("slope_s_per_token")
    if a is None or b is None or b <= 0:
        return None
    return float(a + b * tokens)


def _turns(sub: pd.DataFrame, column: str, prefill: Mapping[str, Any] | None
           ) -> list[dict[str, Any]]:
    """One row per turn (or step) index: its latency beside a cold prompt's."""
    out = []
    for k, grp in sub.groupby(column, sort=True):
        ok = grp[grp["ok"]]
        tokens = _median(ok["counted_prompt_tokens"])
        ttft: dict[str, Any] = percentiles(ok["ttft_s"])
        cold = _cold(prefill, tokens)
        out.append({column: int(k), "requests": len(grp),
                    "outcomes": outcome_counts(grp["outcome"]),
                    "prompt_tokens_p50": tokens,
                    "cached_prompt_tokens_p50": _median(ok["cached_prompt_tokens"]),
                    "ttft_s": ttft, "tpot_s": percentiles(ok["tpot_s"]),
                    "cold_ttft_s": cold,
                    "ttft_vs_cold": ttft["p50"] / cold if cold and ttft["p50"] is not None
                    else None})
    return out


def _units(sub: pd.DataFrame) -> tuple[int, int]:
    """Units begun, and those whose every planned turn or step ended ok."""
    begun = complete = 0
    for _, grp in sub.groupby("session", sort=False):
        begun += 1
        planned = grp["planned_turns"].max()
        complete += int(bool(grp["ok"].all()) and np.isfinite(planned)
                        and len(grp) == int(planned))
    return begun, complete


def _unit_tokens(sub: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """The units' prompt and output tokens, each unit summed over its turns, as
    `token_sums` gives them for requests: what a price per token turns into a cost per
    session or task, with its interval (`evalkit.review.cost.unit_costs`).

    Two sums: the complete units, and the failed ones (a turn or step not ok), whose
    turns the vendor served, and billed, before the unit broke. A cost over complete units
    alone is a survivor's: the buyer pays for the failed ones too. A unit cut short with
    every turn ok (the level's time ran out) is in neither: it was not let finish."""
    complete, failed = [], []
    for _, grp in sub.groupby("session", sort=False):
        planned = grp["planned_turns"].max()
        ok = bool(grp["ok"].all())
        if ok and np.isfinite(planned) and len(grp) == int(planned):
            complete.append((float(grp["prompt_tokens"].sum()),
                             float(grp["output_tokens"].sum())))
        elif not ok:  # what its records say was served: usage where a turn reported it
            failed.append((float(np.nansum(grp["prompt_tokens"].to_numpy(np.float64))),
                           float(np.nansum(grp["output_tokens"].to_numpy(np.float64)))))

    def sums(rows: list[tuple[float, float]]) -> dict[str, Any]:
        units = pd.DataFrame(rows, columns=["prompt_tokens", "output_tokens"]).assign(ok=True)
        return token_sums(units)

    return sums(complete), sums(failed)


def _tasks(sub: pd.DataFrame) -> dict[str, Any]:
    """An agent task end to end (its first step's send to its last step's end, tool time
    included) and its slowest step, over the tasks that completed."""
    e2e, slowest, slowest_ttft = [], [], []
    for _, grp in sub.groupby("session", sort=False):
        planned = grp["planned_turns"].max()
        if not (grp["ok"].all() and np.isfinite(planned) and len(grp) == int(planned)):
            continue
        t0 = grp["t0_s"].to_numpy(dtype=np.float64)
        ends = grp["end_s"].to_numpy(dtype=np.float64)  # on the run's clock, like t0
        e2e.append(float(np.nanmax(ends) - np.nanmin(t0)))
        slowest.append(float(np.nanmax(grp["e2e_s"].to_numpy(dtype=np.float64))))
        slowest_ttft.append(float(np.nanmax(grp["ttft_s"].to_numpy(dtype=np.float64))))
    return {"complete": len(e2e), "e2e_s": percentiles(e2e),
            "slowest_step_s": percentiles(slowest),
            "slowest_step_ttft_s": percentiles(slowest_ttft)}


def _shape(sub: pd.DataFrame, chunks: pd.DataFrame, prefill: Mapping[str, Any] | None,
           goodput: Mapping[str, Any]) -> dict[str, Any]:
    ok = sub[sub["ok"]]
    steps = sub["step"].notna().any()
    begun, complete = _units(sub)
    d: dict[str, Any] = {
        "requests": len(sub), "outcomes": outcome_counts(sub["outcome"]),
        "units": begun, "units_complete": complete,
        "prompt_tokens": percentiles(ok["counted_prompt_tokens"]),
        "output_tokens": percentiles(ok["output_tokens"]),
        "ttft_s": percentiles(ok["ttft_s"]), "tpot_s": percentiles(ok["tpot_s"]),
        "e2e_s": percentiles(ok["e2e_s"]),
        "stream_tokens_per_s": percentiles(ok["stream_tokens_per_s"]),
        "goodput": level_goodput(sub, chunks, _span(sub), **goodput),
    }
    d["unit_tokens"], d["unit_tokens_failed"] = _unit_tokens(sub)
    if steps:
        d["steps"] = _turns(sub, "step", prefill)
        d["tasks"] = _tasks(sub)
    else:
        d["turns"] = _turns(sub, "turn", prefill)
    return d


def workload_section(req: pd.DataFrame, chunks: pd.DataFrame, *,
                     prefill: Mapping[str, Any] | None,
                     client_bound: Mapping[int, bool],
                     profiles: Mapping[str, SloProfile], reading_speed: float,
                     target: float, described: Mapping[str, Any] | None = None
                     ) -> dict[str, Any] | None:
    """summary.json's `workload`: each level (users in flight) and, in it, each shape;
    None when the run had no workload phase."""
    rows = req[req["phase"].to_numpy() == "workload"]
    if not len(rows):
        return None
    goodput = {"profiles": profiles, "reading_speed": reading_speed, "target": target}
    levels = []
    for users, sub in rows.groupby("level", sort=True):
        shapes = {str(name): _shape(grp, chunks, prefill, goodput)
                  for name, grp in sub.groupby("shape", sort=True)}
        levels.append({"users": int(users), "requests": len(sub),
                       "outcomes": outcome_counts(sub["outcome"]),
                       "client_bound": bool(client_bound.get(int(users), False)),
                       "shapes": shapes})
    return {"described": dict(described) if described else None, "levels": levels,
            "cold_basis": COLD_BASIS if prefill is not None else
            "no prefill fit in this run: later turns have no cold prompt to stand beside"}


def trace_section(req: pd.DataFrame, chunks: pd.DataFrame, *, client_bound: bool,
                  profiles: Mapping[str, SloProfile], reading_speed: float, target: float,
                  described: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """summary.json's `trace`: how closely the replay kept the trace's times (send lag:
    sent minus scheduled), its lengths, and what the vendor did under it; `complete` only
    when every entry `described` counts was sent (no description: not complete)."""
    rows = req[req["phase"].to_numpy() == "trace"]
    if not len(rows):
        return None
    ok = rows[rows["ok"]]
    requested = rows["requested_output_tokens"].to_numpy(dtype=np.float64)
    got = ok["output_tokens"].to_numpy(dtype=np.float64)
    planned = (described or {}).get("entries")
    return {"described": dict(described) if described else None,
            "requests": len(rows), "outcomes": outcome_counts(rows["outcome"]),
            # a replay cut short (Ctrl-C, a crash) sent fewer than its trace holds: its
            # figures are of the part sent, and never read as the whole trace's
            "planned": planned if isinstance(planned, int) else None,
            "complete": isinstance(planned, int) and len(rows) == planned,
            "client_bound": client_bound,
            "send_lag_s": percentiles(rows["send_lag_s"]),
            "prompt_tokens_sent": float(np.nansum(rows["counted_prompt_tokens"])),
            "output_tokens_asked": float(np.nansum(requested)),
            "output_tokens_received": float(np.nansum(got)),
            "ttft_s": percentiles(ok["ttft_s"]), "tpot_s": percentiles(ok["tpot_s"]),
            "e2e_s": percentiles(ok["e2e_s"]),
            "cached_prompt_tokens": float(np.nansum(rows["cached_prompt_tokens"])),
            "goodput": level_goodput(rows, chunks, _span(rows), profiles=profiles,
                                     reading_speed=reading_speed, target=target)}
