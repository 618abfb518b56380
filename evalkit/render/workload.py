"""The scorecard's "Your workload" section and page one's lines on it, as plain strings
(no I/O): a table per level and shape, the turns (or steps) beside a cold prompt, agent
tasks end to end, the trace's fidelity, and where every figure comes from.

Every name here (shapes, the workload, its files) came from a file the buyer or a vendor
wrote: each is clipped and made printable here, and the template escapes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from evalkit.analysis.summary import as_count, as_mapping, as_number
from evalkit.fmt import fmt_count, fmt_ms, fmt_num, fmt_pct
from evalkit.render.charts import kit
from evalkit.render.charts.workload import WORKLOAD_CAPTION, turns_chart
from evalkit.render.pdf import clip
from evalkit.render.precision import share_ci

NOT_MEASURED = "not measured (no --workload, --conversations or --trace)"
STATUS_WORDS = {"met": "met", "tie": "tie", "missed": "MISSED", "no_data": "no data",
                "not_verified": "not verified"}


def goodput_text(g: Mapping[str, Any]) -> str:
    """One SLO's goodput: share [interval] of n, and its status."""
    frac = as_number(g.get("fraction"))
    status = STATUS_WORDS.get(str(g.get("status")), "not verified")
    share = (f"{fmt_pct(frac)}{share_ci(g, 'fraction_ci')} of "
             f"{as_count(g.get('requests')) or 0}"
             if frac is not None else "—")
    return f"{share}: {status}"


def _labels(profiles: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {str(k): clip(str(p.get("label") or k).replace("_", " "), 40)
            for k, p in profiles.items()}


def _shape_row(s: Mapping[str, Any], slos: list[str]) -> dict[str, Any]:
    ttft = as_mapping(s.get("ttft_s"))
    units, done = as_count(s.get("units")), as_count(s.get("units_complete"))
    goodput = as_mapping(s.get("goodput"))
    return {"name": clip(str(s.get("name") or "?"), 40),
            "kind": clip(str(s.get("kind") or s.get("unit") or ""), 20),
            "units": f"{fmt_count(done)} of {fmt_count(units)}",
            "ttft": f"{fmt_ms(ttft.get('p50'))} / {fmt_ms(ttft.get('p90'))}",
            "tpot": fmt_ms(s.get("tpot_p90_s")),
            "goodput": [goodput_text(as_mapping(goodput.get(k))) if k in goodput else "—"
                        for k in slos],
            "not_verified": clip(str(s["not_verified"]), 300) if s.get("not_verified")
            else None}


def _turn_rows(s: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for t in s.get("turns") or []:
        t = as_mapping(t)
        ratio = as_number(t.get("ttft_vs_cold"))
        rows.append({"index": fmt_count(t.get("index")),
                     "requests": fmt_count(t.get("requests")),
                     "prompt": fmt_num(t.get("prompt_tokens_p50")),
                     "ttft": fmt_ms(as_mapping(t.get("ttft_s")).get("p50")),
                     "cold": fmt_ms(t.get("cold_ttft_s")),
                     "ratio": f"x{ratio:.2f}" if ratio is not None else "—",
                     "cached": fmt_num(t.get("cached_prompt_tokens_p50"))})
    return rows


def _task_row(s: Mapping[str, Any]) -> dict[str, str]:
    tasks = as_mapping(s.get("tasks"))
    e2e = as_mapping(tasks.get("e2e_s"))
    return {"name": clip(str(s.get("name") or "?"), 40),
            "complete": fmt_count(tasks.get("complete")),
            "e2e": f"{fmt_ms(e2e.get('p50'))} / {fmt_ms(e2e.get('p90'))}",
            "slowest": fmt_ms(tasks.get("slowest_step_p90_s")),
            "slowest_ttft": fmt_ms(tasks.get("slowest_step_ttft_p90_s"))}


def _trace(t: Mapping[str, Any], slos: list[str], labels: Mapping[str, str]
           ) -> dict[str, Any]:
    lag = as_mapping(t.get("send_lag_s"))
    ttft = as_mapping(t.get("ttft_s"))
    outcomes = as_mapping(t.get("outcomes"))
    goodput = as_mapping(t.get("goodput"))
    return {"source": clip(str(t.get("source") or ""), 300),
            "not_verified": clip(str(t["not_verified"]), 300) if t.get("not_verified")
            else None,
            "rows": [
                ("Requests", f"{fmt_count(t.get('requests'))} ("
                 + ", ".join(f"{clip(str(k), 20)} {fmt_count(v)}" for k, v in outcomes.items()
                             if as_number(v)) + ")"),
                ("Send lag behind the schedule, p50 / p99",
                 f"{fmt_ms(lag.get('p50'))} / {fmt_ms(lag.get('p99'))}"),
                ("Prompt tokens sent", fmt_count(t.get("prompt_tokens_sent"))),
                ("Output tokens asked / received",
                 f"{fmt_count(t.get('output_tokens_asked'))} / "
                 f"{fmt_count(t.get('output_tokens_received'))}"),
                ("Cached prompt tokens (vendor's count)",
                 fmt_count(t.get("cached_prompt_tokens"))),
                ("TTFT p50 / p90", f"{fmt_ms(ttft.get('p50'))} / {fmt_ms(ttft.get('p90'))}"),
                ("TPOT p90", fmt_ms(t.get("tpot_p90_s"))),
                *[(f"Goodput: {labels.get(k, k)}", goodput_text(as_mapping(goodput[k])))
                  for k in slos if k in goodput]]}


def workload_context(workload: Mapping[str, Any] | None, trace: Mapping[str, Any] | None,
                     sources: Mapping[str, Any], profiles: Mapping[str, Mapping[str, Any]],
                     charts: bool = True) -> dict[str, Any]:
    """Everything "Your workload" and page one show of it, from scorecard.json's blocks."""
    labels = _labels(profiles)
    slos = [k for k in labels if not as_mapping(profiles.get(k)).get("throughput_only")]
    w = as_mapping(workload)
    levels = []
    for lv in w.get("levels") or []:
        lv = as_mapping(lv)
        shapes = [as_mapping(s) for s in lv.get("shapes") or []]
        levels.append({
            "users": fmt_count(lv.get("users")),
            "rows": [_shape_row(s, slos) for s in shapes],
            "turns": [{"name": clip(str(s.get("name") or "?"), 40),
                       "unit": "step" if s.get("unit") == "step" else "turn",
                       "rows": _turn_rows(s),
                       "cached": any(as_number(as_mapping(t).get("cached_prompt_tokens_p50"))
                                     for t in s.get("turns") or [])}
                      for s in shapes if len(s.get("turns") or []) > 1],
            "tasks": [_task_row(s) for s in shapes if isinstance(s.get("tasks"), Mapping)]})
    svg = turns_chart(w.get("levels") or []) if charts and w else None
    if w:
        line = (f"{clip(str(w.get('headline') or ''), 600)}. "
                f"From {clip(str(w.get('source') or ''), 200)}")
    elif trace:
        line = f"trace replayed: see Your workload. From {clip(str(trace.get('source')), 200)}"
    else:
        line = NOT_MEASURED
    named = {"ramp": "Baseline, prefill and ramp figures", "workload": "Your workload's figures",
             "trace": "The trace's figures"}
    return {
        "workload_line": ("Your workload", line),
        "figure_sources": [(label, clip(str(sources[k]), 300)) for k, label in named.items()
                           if sources.get(k)],
        "workload": {"source": clip(str(w.get("source") or ""), 300),
                     "cold_basis": clip(str(w.get("cold_basis") or ""), 600),
                     "slos": [labels[k] for k in slos], "levels": levels} if w else None,
        "trace": _trace(as_mapping(trace), slos, labels) if trace else None,
        "workload_chart": Markup(kit.namespaced(svg, "workload")) if svg else None,
        "workload_caption": WORKLOAD_CAPTION,
    }
