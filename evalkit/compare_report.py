"""`evalkit compare`: load runs, compare them (`evalkit.compare`), render PDF + JSON.

The thin edge around the pure comparison: it reads run directories and questionnaires,
builds each run's scorecard with the same engine as `evalkit report`, draws overlaid
charts, and writes `FILE.pdf` with `FILE.json` beside it. The inputs' hashes are printed
and the JSON is attached, so a reviewer can check the PDF against its data.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from markupsafe import Markup

from evalkit.charts import STYLES, levels_axis, namespaced, new_figure, to_svg
from evalkit.compare import DEFAULT_REGRESSION_TOLERANCE, Comparison, RunView, compare_runs
from evalkit.errors import UsageError
from evalkit.report import clip, fmt_value, load_run, render_html, render_pdf, sha256

MEASURED_USE_CASES = ("voice_agent", "live_suggestions", "interactive_chat", "batch")


@dataclass(frozen=True)
class CompareInput:
    """One run directory, with the vendor's questionnaire when there is one."""

    run_dir: Path
    questionnaire: Path | None = None

    @classmethod
    def parse(cls, text: str) -> CompareInput:
        """`RUN_DIR` or `RUN_DIR=QUESTIONNAIRE.yaml`, as the command line gives them."""
        run, _, questionnaire = text.partition("=")
        return cls(Path(run), Path(questionnaire) if questionnaire else None)


@dataclass(frozen=True)
class CompareResult:
    """What `render_comparison` wrote, and the comparison it drew."""

    pdf: Path
    json: Path
    comparison: Comparison


def load_view(item: CompareInput, tolerances: Any = None) -> RunView:
    """A run as the comparison sees it; its scorecard comes from the same engine as reports.

    Runs of the same vendor are grouped into a trend: the vendor's name from its
    questionnaire when there is one, else the model at the endpoint it was probed at.
    """
    from evalkit.questionnaire import load_questionnaire
    from evalkit.scorecard import build_scorecard
    from evalkit.tolerances import Tolerances, load_tolerances

    tol = tolerances if isinstance(tolerances, Tolerances) else load_tolerances(tolerances)
    run = load_run(item.run_dir)
    questionnaire = load_questionnaire(item.questionnaire) if item.questionnaire else None
    scorecard = build_scorecard(questionnaire, run.summary, tol)
    target = run.run.get("target") or {}
    who = (questionnaire.vendor if questionnaire and questionnaire.vendor else
           f"{target.get('model', '?')} at {target.get('base_url', '?')}")
    started = str(run.run.get("started_at") or "")
    ttft_by_level: dict[int, list[float]] = {}
    for rec in run.records:
        if rec.phase == "ramp" and rec.outcome == "ok" and rec.level and rec.ttft_s is not None:
            ttft_by_level.setdefault(int(rec.level), []).append(rec.ttft_s)
    settings = run.run.get("settings") or {}
    return RunView(
        label=f"{clip(who, 40)} {started[:10]}".strip(), target=who, started=started,
        suite_version=run.summary.get("suite_version") or run.run.get("suite_version"),
        settings={"prompt_tokens": settings.get("prompt_tokens"),
                  "output_tokens": settings.get("output_tokens"),
                  "levels": (settings.get("ramp") or {}).get("levels"),
                  "profile": run.run.get("profile")},
        summary=run.summary, scorecard=scorecard, ttft_by_level=ttft_by_level)


def _unique_labels(views: list[RunView]) -> list[RunView]:
    """Two runs with the same vendor and day get a number each, in the order given."""
    seen: dict[str, int] = {}
    for v in views:
        seen[v.label] = seen.get(v.label, 0) + 1
    return [replace(v, label=f"{v.label} #{i + 1}") if seen[v.label] > 1 else v
            for i, v in enumerate(views)]


# --------------------------------------------------------------------------- charts


def _plain(text: str) -> str:
    """A vendor's name as literal chart text: matplotlib would read `$…$` as mathtext."""
    return text.replace("$", r"\$")


def _levels(view: RunView) -> list[Mapping[str, Any]]:
    return [lv for lv in (view.summary.get("ramp") or {}).get("levels") or []
            if isinstance(lv, Mapping) and lv.get("concurrency")]


def _series(view: RunView, *path: str) -> list[tuple[float, float]]:
    points = []
    for lv in _levels(view):
        value: Any = lv
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            points.append((float(lv["concurrency"]), float(value)))
    return points


def _overlay(views: Sequence[RunView], panels: Sequence[tuple[str, tuple[str, ...], float]],
             ylabel: Sequence[str]) -> str | None:
    """One panel per metric, one line per run, styles that survive greyscale printing."""
    if not any(_series(v, *panels[0][1]) for v in views):
        return None
    fig = new_figure(6.6, 2.6, ncols=len(panels))
    axes = fig.axes
    all_levels = sorted({c for v in views for c, _ in _series(v, *panels[0][1])})
    for ax, (title, path, scale), label in zip(axes, panels, ylabel, strict=True):
        for i, view in enumerate(views):
            pts = _series(view, *path)
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, [y * scale for y in ys], label=_plain(view.label),
                        **STYLES[i % len(STYLES)])
        levels_axis(ax, all_levels)
        ax.set_title(title)
        ax.set_ylabel(label)
    axes[0].legend(fontsize=6)
    return to_svg(fig)


def _ttft_distribution(views: Sequence[RunView]) -> tuple[str, str] | None:
    """TTFT ECDF per run at the highest level every run measured: like against like."""
    common = set.intersection(*(set(v.ttft_by_level) for v in views)) if views else set()
    if not common:
        return None
    level = max(common)
    fig = new_figure(6.6, 2.6)
    ax = fig.axes[0]
    for i, view in enumerate(views):
        xs = sorted(view.ttft_by_level[level])
        ys = [(k + 1) / len(xs) for k in range(len(xs))]
        style = {**STYLES[i % len(STYLES)], "marker": None}
        ax.step([x * 1000 for x in xs], ys, where="post",
                label=_plain(f"{view.label} (n={len(xs)})"), **style)
    ax.set_xlabel("TTFT (ms)")
    ax.set_ylabel("share of requests")
    ax.legend(fontsize=6)
    return f"TTFT distribution at {level} concurrent streams (every run measured it)", to_svg(fig)


def _trend_chart(cmp: Comparison, target: str, idx: Sequence[int]) -> str | None:
    """Each key figure relative to the vendor's first run: a regression is a line going bad."""
    fig = new_figure(6.6, 2.4)
    ax = fig.axes[0]
    drawn = 0
    for row in cmp.rows:
        pts = [(k, row.cells[i].value) for k, i in enumerate(idx)]
        known = [(k, v) for k, v in pts if v is not None]
        if len(known) < 2 or not known[0][1]:
            continue
        base = known[0][1]
        ax.plot([k for k, _ in known], [100 * v / base for _, v in known], label=row.figure.title,
                **STYLES[drawn % len(STYLES)])
        drawn += 1
    if not drawn:
        return None
    ax.set_xticks(range(len(idx)), [cmp.runs[i].started[:10] or str(k) for k, i in
                                     enumerate(idx)])
    ax.set_ylabel("% of first run")
    ax.set_title(_plain(clip(target, 60)))
    ax.legend(fontsize=6)
    return to_svg(fig)


def _charts(cmp: Comparison) -> list[tuple[str, Markup]]:
    views = cmp.runs
    dist = _ttft_distribution(views)
    charts: list[tuple[str, str | None]] = [dist] if dist else []
    charts += [
        ("TTFT under load", _overlay(views, [("TTFT p50", ("ttft_s", "p50"), 1000.0),
                                             ("TTFT p90", ("ttft_s", "p90"), 1000.0)],
                                     ["ms", "ms"])),
        ("Throughput vs concurrency", _overlay(
            views, [("per stream p50", ("stream_tokens_per_s", "p50"), 1.0),
                    ("aggregate", ("aggregate_tokens_per_s",), 1.0)],
            ["tokens/s", "tokens/s"])),
    ]
    for target, idx in cmp.trends.items():
        charts.append((f"Trend: {target}", _trend_chart(cmp, target, idx)))
    # Markup: drawn by matplotlib; the run labels in legends are XML-escaped by its SVG
    # writer and kept out of mathtext by _plain
    return [(title, Markup(namespaced(svg, f"c{i}"))) for i, (title, svg) in enumerate(charts)
            if svg]


# --------------------------------------------------------------------------- document


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "s":
        return f"{value * 1000:,.0f} ms"
    if unit == "streams":
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _changed_answers(cmp: Comparison) -> list[dict[str, str]]:
    """Questionnaire answers that changed between consecutive runs of one vendor."""
    changes = []
    for target, idx in cmp.trends.items():
        for a, b in itertools.pairwise(idx):
            qa = (cmp.runs[a].scorecard or {}).get("questions") or {}
            qb = (cmp.runs[b].scorecard or {}).get("questions") or {}
            for q in sorted(set(qa) | set(qb)):
                before = (qa.get(q) or {}).get("claimed")
                after = (qb.get(q) or {}).get("claimed")
                if before != after:
                    changes.append({"target": target, "question": q,
                                    "before_run": cmp.runs[a].label,
                                    "after_run": cmp.runs[b].label,
                                    "before": fmt_value(before, 300, brief=True),
                                    "after": fmt_value(after, 300, brief=True)})
    return changes


def _fits(cmp: Comparison) -> list[tuple[str, list[str]]]:
    """For each use case, the runs that fit it: the sentence procurement asks for."""
    return [(case.replace("_", " "), [cmp.runs[i].label for i, fit in enumerate(fits) if fit])
            for case, fits in cmp.use_cases.items()]


def build_context(cmp: Comparison, inputs: Sequence[CompareInput],
                  hashes: Mapping[str, str]) -> dict[str, Any]:
    """Everything the template shows, as plain strings and lists."""
    return {
        "runs": [{"label": v.label, "target": v.target, "started": v.started,
                  "suite": v.suite_version, "profile": v.settings.get("profile"),
                  "dir": str(item.run_dir), "questionnaire": str(item.questionnaire or "—"),
                  "verdict": ((v.scorecard or {}).get("verdict") or {}).get("text", "")}
                 for v, item in zip(cmp.runs, inputs, strict=True)],
        "rows": [{"title": r.figure.title, "better": r.figure.better,
                  "cells": [{"text": _fmt(c.value, r.figure.unit), "best": c.best,
                             "excluded": c.excluded} for c in r.cells]}
                 for r in cmp.rows],
        "statuses": sorted(cmp.statuses.items()),
        "use_cases": [(k.replace("_", " "), v) for k, v in sorted(cmp.use_cases.items())],
        "fits": _fits(cmp),
        "trends": [(t, [cmp.runs[i].label for i in idx]) for t, idx in cmp.trends.items()],
        "regressions": [g.sentence for g in cmp.regressions],
        "regression_targets": [g.target for g in cmp.regressions],
        "changes": _changed_answers(cmp),
        "left_out": cmp.left_out,
        "charts": _charts(cmp),
        "hashes": sorted(hashes.items()),
    }


def render_comparison(inputs: Sequence[CompareInput], out_pdf: Path,
                      tolerance: float = DEFAULT_REGRESSION_TOLERANCE,
                      tolerances: Any = None, html: bool = False) -> CompareResult:
    """Compare runs and write `out_pdf` with `out_pdf.json` beside it (and HTML if asked)."""
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise UsageError(f"--out {out_pdf}: the comparison file must end in .pdf")
    if not inputs:
        raise UsageError("give at least one run directory to compare")
    views = _unique_labels([load_view(item, tolerances) for item in inputs])
    cmp = compare_runs(views, tolerance)
    data = json.dumps(cmp.to_dict(), indent=2, allow_nan=False).encode() + b"\n"
    attachments = {"compare.json": data}
    for i, item in enumerate(inputs):
        attachments[f"run{i + 1}-summary.json"] = (item.run_dir / "summary.json").read_bytes()
    hashes = {name: sha256(blob) for name, blob in attachments.items()}
    html_text = render_html(build_context(cmp, inputs, hashes), "compare.html.j2")
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(data)
    if html:
        out_pdf.with_suffix(".html").write_text(html_text, encoding="utf-8")
    out_pdf.write_bytes(render_pdf(html_text, attachments))
    return CompareResult(out_pdf, json_path, cmp)
