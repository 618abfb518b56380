"""The panel report: our own production panel of a vendor as a PDF/A-3b, with
`panel.json` beside it and attached. The figures are `evalkit.analysis.panel`'s, read
from the catalog by the CLI; this module only sets them on a page and draws them (TTFT
and per-stream rate by hour of day and by day, each point with its 95 % interval)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

import evalkit
from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.panel_doc import PanelDoc, PanelGroup
from evalkit.analysis.summary import Pct
from evalkit.errors import UsageError
from evalkit.fmt import fmt_count, fmt_ms, fmt_num, fmt_pct, fmt_rate
from evalkit.render.charts.kit import (
    legend_below,
    namespaced,
    new_figure,
    number_ticks,
    plain,
    series_style,
    style,
    to_svg,
)
from evalkit.render.pagetext import pct_text
from evalkit.render.pdf import clip, render_html, sha256, write_document


@dataclass(frozen=True)
class PanelResult:
    """What `render_panel` wrote."""

    pdf: Path
    json: Path


def _points(rows: Sequence[PanelGroup], figure: Callable[[PanelGroup], Pct], pct: str, scale: float
            ) -> list[tuple[int, float, float, float]]:
    """(x, value, down, up) of each row that has the percentile; an open interval end is
    drawn as no error bar on that side."""
    out = []
    for i, row in enumerate(rows):
        p = figure(row)
        v = p.get(pct)
        if v is None:
            continue
        lo, hi = p.interval(pct) or (None, None)
        out.append((i, v * scale, (v - lo) * scale if lo is not None else 0.0,
                    (hi - v) * scale if hi is not None else 0.0))
    return out


def _by_chart(rows: Sequence[PanelGroup], labels: Sequence[str], what: str) -> str | None:
    """TTFT p50/p90 (left) and per-stream rate p50 (right) per hour or per day."""
    if not rows:
        return None
    fig = new_figure(6.6, 2.5, ncols=2)
    left, right = fig.axes
    drawn = 0
    for k, (pct, ax, ttft, scale, unit) in enumerate((
            ("p50", left, True, 1000.0, "ms"), ("p90", left, True, 1000.0, "ms"),
            ("p50", right, False, 1.0, "tokens/s"))):
        pts = _points(rows, (lambda g: g.ttft_s) if ttft else (lambda g: g.stream_tokens_per_s),
                      pct, scale)
        if not pts:
            continue
        st = series_style(k)
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=[[p[2] for p in pts], [p[3] for p in pts]], capsize=2,
                    label=f"{'TTFT' if ttft else 'per stream'} {pct} ({unit})",
                    color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                    markersize=3)
        drawn += 1
    if not drawn:
        return None
    step = max(1, len(labels) // 8)
    for ax, title in ((left, f"TTFT by {what} (ms)"), (right, f"per-stream rate by {what}")):
        ax.set_xticks(range(0, len(labels), step), [labels[i] for i in
                                                   range(0, len(labels), step)])
        number_ticks(ax.yaxis)
        ax.set_title(plain(title), loc="left")
    handles, names = [], []
    for ax in (left, right):
        h, n = ax.get_legend_handles_labels()
        handles += h
        names += n
    legend_below(fig, handles, names)
    return to_svg(fig)


def charts(doc: PanelDoc) -> list[tuple[str, Markup]]:
    """The panel's charts: by hour of day (UTC) and by day, each point pooled over the
    samples in it, bars its 95 % interval (none drawn where n cannot bound an end)."""
    hours, days = doc.by_hour, doc.by_day
    with style():
        drawn = [
            ("By hour of day (UTC): TTFT p50 and p90 and the per-stream rate p50 of the "
             "requests of every sample started in that hour; bars are 95 % intervals. An "
             "hour with no sample has no point.",
             _by_chart(hours, [f"{r.hour or 0:02d}h" for r in hours], "hour")),
            ("By day (UTC): the same, pooled over each day's samples.",
             _by_chart(days, [(r.day or "")[5:] for r in days], "day")),
        ]
    return [(c, Markup(namespaced(svg, f"p{i}"))) for i, (c, svg) in enumerate(drawn) if svg]


def _rows(doc: PanelDoc) -> list[tuple[str, str]]:
    ttft, rate = doc.ttft_s, doc.stream_tokens_per_s
    fail, length = doc.failure_rate, doc.achieved_length
    ci = fail.ci
    return [
        ("TTFT", "; ".join(pct_text(ttft, p, fmt_ms, n=False) for p in ("p50", "p90", "p99"))
         + f" (n={fmt_count(ttft.n)})"),
        ("Per-stream rate", "; ".join(pct_text(rate, p, fmt_rate, n=False)
                                      for p in ("p50", "p90"))
         + f" (n={fmt_count(rate.n)})"),
        ("Failure rate", f"{fmt_pct(fail.value)} of {fmt_count(fail.requests)} "
         f"requests" + (f" [95 %: {fmt_pct(ci[0])}–{fmt_pct(ci[1])}]" if ci else "")),
        ("Achieved length", f"p50 {fmt_num(length.output_tokens.p50)}"
         f" of {fmt_num(length.requested_tokens_p50)} tokens asked for; "
         f"{fmt_pct(length.short_share)} of ok requests more than 5 % short"),
    ]


def build_context(doc: Mapping[str, Any], hashes: Mapping[str, str]) -> dict[str, Any]:
    """What the panel page shows; vendor text clipped (autoescape does the rest)."""
    d = read_as(PanelDoc, doc)
    cov, window = d.coverage, d.window
    vendor = clip(d.vendor or "", 80)
    interval = cov.interval_s
    return {
        "title": f"{vendor}: our production panel",
        "vendor": vendor, "model": clip(d.model or "every model", 120),
        "window": f"{window.start or ''} to {window.end or ''}",
        "date": (window.end or "")[:10], "tool_version": evalkit.__version__,
        "figures": _rows(d), "charts": charts(d),
        "coverage": [
            ("Samples in the window", fmt_count(cov.samples)),
            ("Pooled", fmt_count(cov.pooled)),
            ("Valid / degraded / invalid", " / ".join(fmt_count(n) for n in
                                                      (cov.valid, cov.degraded, cov.invalid))),
            ("Missing / edited (not pooled)", f"{fmt_count(cov.missing)} / "
                                              f"{fmt_count(cov.edited)}"),
            ("Sampling interval", (f"{fmt_num(interval / 3600)} h ({cov.interval_basis})"
                                   if interval else "not known (fewer than two samples)")),
            ("Gaps (over 1.5 intervals)", fmt_count(cov.gap_count)),
        ],
        "gaps": list(cov.gaps),
        "samples": list(cov.list),
        "hashes": sorted(hashes.items()),
        "empty": not d.samples,
    }


def render_panel(doc: Mapping[str, Json], out_pdf: Path, html: bool = False) -> PanelResult:
    """Write `out_pdf` and FILE.json beside it (panel.json for panel.pdf; the same bytes
    are attached to the PDF as panel.json)."""
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise UsageError(f"--out {out_pdf}: the panel report must end in .pdf")
    data = json.dumps(doc, indent=2, allow_nan=False).encode() + b"\n"
    attachments = {"panel.json": data}
    html_text = render_html(build_context(doc, {n: sha256(b) for n, b in attachments.items()}),
                            "panel.html.j2")
    return PanelResult(out_pdf, write_document(out_pdf, data, html_text, attachments, html))
