"""Vector charts for the scorecard: data in, an inline `<svg>` string out.

Every chart is drawn for print and greyscale: black and greys only, and every series is
told apart by line style, marker or hatch, never by colour alone. Matplotlib's own SVG
writer keeps the text as text (`svg.fonttype: none`, DejaVu Sans), so the PDF's labels
are searchable and nothing is fetched. A chart whose data is missing is `None`, never an
empty frame.

Every chart says what it shows and hides nothing it shows: units and levels in each
title, legends below the plot (never over the data), tick labels thinned when drawn so
no two touch, and the few labels drawn inside a plot (each use case's limit) placed by
measuring them against the plot's lines, its markers and each other; a label that fits
nowhere goes to the legend instead. tests/test_charts.py checks every chart from
matplotlib's own text extents.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import matplotlib

matplotlib.use("Agg")  # no display, ever; must precede any pyplot import elsewhere

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, Locator, MaxNLocator, NullLocator

from evalkit.summary import Summary

#: Greyscale-safe styles, in the order series are drawn.
STYLES: tuple[dict[str, Any], ...] = (
    {"color": "black", "linestyle": "-", "marker": "o"},
    {"color": "0.35", "linestyle": "--", "marker": "s"},
    {"color": "0.55", "linestyle": ":", "marker": "^"},
    {"color": "0.2", "linestyle": "-.", "marker": "D"},
)
#: More markers, for a chart with more series than STYLES has styles.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def series_style(i: int) -> dict[str, Any]:
    """The ith series' style: the first four are STYLES; after that no two of the first
    28 share both their line style and their marker, so each stays told apart in grey."""
    base = STYLES[i % len(STYLES)]
    return {**base, "marker": _MARKERS[i % len(_MARKERS)]} if i >= len(STYLES) else dict(base)


#: Styles of limit lines (no markers: a limit is a line, not a measurement).
LIMIT_STYLES: tuple[dict[str, Any], ...] = (
    {"color": "0.3", "linestyle": "--"},
    {"color": "0.3", "linestyle": ":"},
    {"color": "0.3", "linestyle": "-."},
    {"color": "0.5", "linestyle": (0, (5, 1, 1, 1, 1, 1))},
    {"color": "0.5", "linestyle": (0, (1, 3))},
)
_HATCHES = ("", "///", "...", "xx")
#: Tick steps a reader counts in: 1, 2, 2.5, 5 × 10^k (never 1.5 or 8).
ROUND_STEPS = (1, 2, 2.5, 5, 10)
FONT_PT = 8.0
SMALL_PT = 7.0
TAG_PT = 6.5
_RC: Any = {  # Any: matplotlib types rcParams keys as a Literal union
    "font.family": "DejaVu Sans",  # bundled with matplotlib: local, never downloaded
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.edgecolor": "black",
    "axes.grid": True,
    "grid.color": "0.85",
    "grid.linewidth": 0.5,
    "svg.fonttype": "none",  # text stays text: smaller, faster, searchable in the PDF
    "svg.hashsalt": "evalkit",  # stable ids: the same data gives the same SVG
}
#: What each `first_degraded` of the ramp names, in the words the methodology uses.
DEGRADED_WORDS = {"ttft": "TTFT p90", "itl": "TPOT p90", "tpot": "TPOT p90",
                  "admission": "failed requests"}
#: How each headline unit the questionnaire allows is said; only the first is per stream.
HEADLINE_UNITS = {"output_tokens_per_s": "per stream", "output_tokens_per_s_per_gpu": "per GPU",
                  "output_tokens_per_s_per_node": "per node"}


@dataclass(frozen=True)
class Stream:
    """One request as the raster draws it: when it was sent and when its chunks came."""

    t0_s: float
    arrivals_s: tuple[float, ...]  # offsets from t0
    outcome: str = "ok"
    level: int | None = None


# --------------------------------------------------------------------------- words


def plain(text: str) -> str:
    """Literal chart text: matplotlib would read `$…$` as mathtext."""
    return text.replace("$", r"\$")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def num(v: float) -> str:
    """A number as a chart prints it: about three significant figures, thousands
    separated, a power of ten (`1.5×10⁷`) instead of e-notation or an axis offset."""
    if not math.isfinite(v):
        return "—"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        exp = math.floor(math.log10(a))
        mant = float(f"{v / 10 ** exp:.3g}")
        if abs(mant) >= 10:
            mant, exp = mant / 10, exp + 1
        return f"{mant:g}×10{str(exp).translate(_SUPERSCRIPT)}"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}".removesuffix(".0")
    if a >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.2g}"


def whole(v: float) -> str:
    """A figure a vendor quotes (ms, tokens/s): whole units when it has any, else `num`."""
    return f"{v:,.0f}" if 1 <= abs(v) < 1e6 else num(v)


def level_span(levels: Sequence[float]) -> str:
    """'1 stream', '8 streams', '1–64 streams': the levels a chart covers, for its title."""
    vals = sorted({int(c) for c in levels if _finite(c)})
    if not vals:
        return "no level"
    if len(vals) == 1:
        return f"{vals[0]} stream{'s' if vals[0] != 1 else ''}"
    return f"{vals[0]}–{vals[-1]:,} streams"


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _positive(x: Any) -> TypeGuard[float]:
    return _finite(x) and x > 0


# --------------------------------------------------------------------------- axes


def new_figure(width_in: float = 6.6, height_in: float = 2.6, ncols: int = 1,
               nrows: int = 1) -> Figure:
    """A page-width figure of panels; pyplot-free, so no global state leaks. It has an
    Agg canvas, so text can be measured before the figure is written."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    fig.subplots(nrows, ncols)
    return fig


class _Spaced(Locator):
    """Ticks that never touch: at chosen values (thinned when drawn, the first and the
    last kept) or, without values, at round numbers (1, 2, 2.5, 5 × 10^k) as many as fit.
    `fallbacks` are sparser sets of values tried in turn before thinning the last."""

    def __init__(self, values: Sequence[float] | None = None,
                 label: Callable[[float], str] = num,
                 fallbacks: Sequence[Sequence[float]] = ()) -> None:
        self.values = (None if values is None else
                       sorted({float(v) for v in values if math.isfinite(v)}))
        self.fallbacks = [sorted({float(v) for v in f if math.isfinite(v)}) for f in fallbacks]
        self.label = label

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        lo, hi = sorted((vmin, vmax))
        if self.values is None:
            return list(MaxNLocator(nbins="auto", steps=ROUND_STEPS).tick_values(lo, hi))
        return [v for v in self.values if lo <= v <= hi]

    def _apart(self, vals: Sequence[float]) -> Callable[[int, int], bool]:
        """Whether the labels of the ith and jth value stay clear of each other."""
        axis: Any = self.axis
        ax = axis.axes
        across = axis.axis_name == "x"
        pts = ax.transData.transform([(v, 1.0) if across else (1.0, v) for v in vals])
        pos = pts[:, 0 if across else 1]
        rc: Any = matplotlib.rcParams
        size = FontProperties(size=rc[f"{axis.axis_name}tick.labelsize"]
                              ).get_size_in_points() * ax.figure.dpi / 72
        # DejaVu Sans digits are 0.64 em wide; a label's extent along the axis plus a gap
        extent = [(0.66 * size * len(self.label(v)) if across else 1.25 * size) + 0.5 * size
                  for v in vals]
        return lambda i, j: bool(abs(pos[j] - pos[i]) >= (extent[i] + extent[j]) / 2)

    def __call__(self) -> Sequence[float]:
        return self._inside(self._choose())

    def _inside(self, vals: Sequence[float]) -> list[float]:
        """The values whose label stays inside the figure: constrained layout makes room
        for the labels it laid out, but thinning may pick others once the plot has its
        final size (a log axis' last tick at its very end ran off the page)."""
        axis: Any = self.axis
        if axis.axis_name != "x" or not vals:
            return list(vals)
        ax = axis.axes
        pos = ax.transData.transform([(v, 1.0) for v in vals])[:, 0]
        rc: Any = matplotlib.rcParams
        size = FontProperties(size=rc["xtick.labelsize"]).get_size_in_points(
        ) * ax.figure.dpi / 72
        right = ax.figure.bbox.x1
        return [v for v, p in zip(vals, pos, strict=True)
                if p - 0.33 * size * len(self.label(v)) >= 0
                and p + 0.33 * size * len(self.label(v)) <= right]

    def _choose(self) -> Sequence[float]:
        axis: Any = self.axis
        lo, hi = sorted(axis.get_view_interval())
        slack = (hi - lo) * 1e-9
        if self.values is None:
            vals: list[float] = []
            for nbins in range(max(2, min(axis.get_tick_space(), 9)), 0, -1):
                ticks = MaxNLocator(nbins=nbins, steps=ROUND_STEPS).tick_values(lo, hi)
                vals = [v for v in ticks if lo - slack <= v <= hi + slack]
                apart = self._apart(vals)
                if all(apart(i, i + 1) for i in range(len(vals) - 1)):
                    break
            return vals
        vals = [v for v in self.values if lo <= v <= hi]
        for values in [self.values, *self.fallbacks]:
            sparser = [v for v in values if lo <= v <= hi]
            if len(sparser) < 2:
                break
            vals = sparser
            apart = self._apart(vals)
            if all(apart(i, i + 1) for i in range(len(vals) - 1)):
                return vals
        if len(vals) < 2:
            return vals
        apart = self._apart(vals)
        keep = [0]
        for j in range(1, len(vals)):
            if apart(keep[-1], j):
                keep.append(j)
        last = len(vals) - 1
        if keep[-1] != last:
            while len(keep) > 1 and not apart(keep[-1], last):
                keep.pop()
            if apart(keep[-1], last):
                keep.append(last)
        return [vals[i] for i in keep]


def number_ticks(axis: Any) -> None:
    """Plain numbers on an axis (no offset text, no e-notation), as many as fit."""
    axis.set_major_locator(_Spaced())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: num(v)))


def _log_numbers(axis: Any, lo: float, hi: float) -> None:
    """A log axis ticked at 1, 2, 5 × 10^k between lo and hi, else at every power of ten,
    else at every second or third: as many as fit."""
    powers = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
    values = [m * 10.0 ** k for k in powers for m in (1, 2, 5)]
    sparser = [[10.0 ** k for k in powers if k % step == 0] for step in (1, 2, 3)]
    axis.set_major_locator(_Spaced(values, fallbacks=sparser))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: num(v)))
    axis.set_minor_locator(NullLocator())


def _lookup(names: Mapping[float, str]) -> Callable[[float], str]:
    """A tick's label by its position (blank between positions)."""
    return lambda v: names.get(v, "")


def _level_text(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else num(v)


def levels_axis(ax: Any, levels: Sequence[float]) -> None:
    """Log-2 concurrency axis labelled with the levels themselves (1, 2, 4 ... not 2^k),
    as many as fit without touching (the lowest and the highest always)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(_Spaced(levels, _level_text))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _level_text(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    distinct = sorted({float(c) for c in levels if _positive(c)})
    if distinct:
        ax.set_xlim(distinct[0] / 1.4, distinct[-1] * 1.4)
    ax.set_xlabel("concurrent streams")


def figure_title(fig: Figure, text: str) -> None:
    """A title over all of a figure's panels, from its left edge: where the levels go
    when the panels' own titles are narrow."""
    fig.suptitle(text, x=0.01, ha="left", fontsize=FONT_PT)


def style() -> Any:
    """The charts' fonts, sizes and grid, for a figure drawn outside this module."""
    return matplotlib.rc_context(_RC)


def legend_below(fig: Figure, handles: Sequence[Any], labels: Sequence[str],
                 ncols: int | None = None) -> Legend | None:
    """The figure's legend under its panels, outside every plot: it never covers data.
    Columns as many as the longest label allows across the page."""
    pairs: dict[str, Any] = {}
    for handle, label in zip(handles, labels, strict=True):
        if label and not label.startswith("_"):
            pairs.setdefault(label, handle)
    if not pairs:
        return None
    if ncols is None:
        longest = max(len(line) for label in pairs for line in label.split("\n"))
        per = 0.62 * SMALL_PT * longest + 3.4 * SMALL_PT  # text, handle and column gap
        ncols = max(1, min(len(pairs), int(fig.get_figwidth() * 72 // per)))
    return fig.legend(list(pairs.values()), list(pairs), loc="outside lower center",
                      ncols=ncols, fontsize=SMALL_PT, frameon=False, handlelength=2.4,
                      columnspacing=1.6)


def _handles(*axes: Any) -> tuple[list[Any], list[str]]:
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    return handles, labels


def to_svg(fig: Figure) -> str:
    """Serialise a figure to an `<svg>` element ready to inline in HTML."""
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def namespaced(svg: str, prefix: str) -> str:
    """Prefix every id (and every reference to one) so several SVGs can share one page.

    Matplotlib numbers its ids per figure; inlined side by side, two charts would both
    define `#m0b35…` and the second would draw the first one's markers.
    """
    ids = set(re.findall(r'\bid="([^"]+)"', svg))

    def ref(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}-{name}" if name in ids else m.group(0)

    svg = re.sub(r'(\bid=")([^"]+)', ref, svg)
    return re.sub(r'((?:href="|url\()#)([^")]+)', ref, svg)


# --------------------------------------------------------------------------- placement


def _segments(ax: Any) -> np.ndarray:
    """Every drawn line of a plot as display-space segments (x0, y0, x1, y1)."""
    out = []
    for line in ax.lines:
        if not line.get_visible() or line.get_linestyle() in ("None", "none", "", " "):
            continue
        xy = line.get_transform().transform_path(line.get_path()).vertices
        if len(xy) > 1:
            seg = np.hstack([xy[:-1], xy[1:]])
            out.append(seg[np.isfinite(seg).all(axis=1)])
    return np.vstack(out) if out else np.empty((0, 4))


def _marker_boxes(ax: Any) -> np.ndarray:
    """Every drawn marker of a plot as a display-space box (x0, y0, x1, y1)."""
    out = []
    for line in ax.lines:
        if not line.get_visible() or line.get_marker() in (None, "None", "none", "", " "):
            continue
        xy = line.get_transform().transform(line.get_xydata())
        xy = xy[np.isfinite(xy).all(axis=1)]
        half = (line.get_markersize() + line.get_markeredgewidth()) / 2 * ax.figure.dpi / 72
        out.append(np.hstack([xy - half, xy + half]))
    return np.vstack(out) if out else np.empty((0, 4))


def crosses(box: tuple[float, float, float, float], segs: np.ndarray) -> bool:
    """Whether any segment passes through the box (separating-axis test, exact)."""
    if not len(segs):
        return False
    x0, y0, x1, y1 = box
    a, b, c, d = segs.T
    near = ~((np.maximum(a, c) < x0) | (np.minimum(a, c) > x1)
             | (np.maximum(b, d) < y0) | (np.minimum(b, d) > y1))
    if not near.any():
        return False
    a, b, c, d = a[near], b[near], c[near], d[near]
    nx, ny = d - b, a - c  # the segment's normal
    side = np.stack([nx * (px - a) + ny * (py - b)
                     for px, py in ((x0, y0), (x0, y1), (x1, y0), (x1, y1))])
    return bool(((side.min(axis=0) <= 0) & (side.max(axis=0) >= 0)).any())


def _overlaps(box: tuple[float, float, float, float], boxes: np.ndarray) -> bool:
    if not len(boxes):
        return False
    x0, y0, x1, y1 = box
    return bool(((boxes[:, 0] < x1) & (boxes[:, 2] > x0)
                 & (boxes[:, 1] < y1) & (boxes[:, 3] > y0)).any())


@dataclass(frozen=True)
class _Tag:
    """A label for a horizontal line (a limit) inside a plot."""

    ax: Any
    text: str  # literal: `plain` already applied
    y: float
    style: Mapping[str, Any]


#: Where a tag may go, in order of preference: (ha, axes x, offset points).
_TAG_SPOTS = (("right", 1.0, -3), ("left", 0.0, 3), ("center", 0.5, 0),
              ("right", 0.75, 0), ("left", 0.25, 0))


def _place_tags(fig: Figure, tags: Sequence[_Tag], handles: list[Any],
                labels: list[str]) -> None:
    """Label each line just above or below it where the label covers no line, no marker,
    no other label and stays inside its plot; a tag that fits nowhere becomes a legend
    entry instead. The legend is drawn last (it moves the plots), so placement repeats
    until every tag is either placed on the final layout or in the legend."""
    exiled: set[int] = set()
    placed: list[Any] = []
    legend: Legend | None = None
    pad = 1.5 * fig.dpi / 72
    height = fig.get_figheight()
    for _ in range(len(tags) + 1):
        for text in placed:
            text.remove()
        placed = []
        if legend is not None:
            legend.remove()
        fig.set_figheight(height + 1.5 * SMALL_PT / 72 * len(exiled))  # room for the legend
        extra = [(Line2D([], [], linewidth=1, **tags[i].style), tags[i].text)
                 for i in sorted(exiled)]
        legend = legend_below(fig, handles + [h for h, _ in extra],
                              labels + [t for _, t in extra])
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        boxes: dict[int, list[tuple[float, float, float, float]]] = {}
        failed = set()
        for i, tag in enumerate(tags):
            if i in exiled:
                continue
            ax = tag.ax
            frame = ax.bbox
            segs, marks = _segments(ax), _marker_boxes(ax)
            mine = boxes.setdefault(id(ax), [])
            for (ha, x, dx), above in itertools.product(_TAG_SPOTS, (True, False)):
                text = ax.annotate(tag.text, (x, tag.y),
                                   xycoords=("axes fraction", "data"),
                                   xytext=(dx, 2.5 if above else -2.5),
                                   textcoords="offset points", ha=ha,
                                   va="bottom" if above else "top", fontsize=TAG_PT,
                                   annotation_clip=False)
                text.set_in_layout(False)
                ext = text.get_window_extent(renderer)
                box = (ext.x0 - pad, ext.y0 - pad, ext.x1 + pad, ext.y1 + pad)
                if (ext.x0 >= frame.x0 + pad and ext.x1 <= frame.x1 - pad
                        and ext.y0 >= frame.y0 + pad and ext.y1 <= frame.y1 - pad
                        and not crosses(box, segs) and not _overlaps(box, marks)
                        and not _overlaps(box, np.array(mine).reshape(-1, 4))):
                    mine.append(box)
                    placed.append(text)
                    break
                text.remove()
            else:
                failed.add(i)
        if not failed:
            return
        exiled |= failed


# --------------------------------------------------------------------------- charts


def measured_rows(summary: Mapping[str, Any] | None
                  ) -> list[tuple[str, Mapping[str, Any], int | None]]:
    """Our per-stream rates for the claims chart, each with the level it was measured at:
    one stream alone (the baseline, which the Q6 text quotes) and the max sustained level
    (else the highest measured: `Summary.under_load`, the level page one quotes)."""
    summary = summary or {}
    rows: list[tuple[str, Mapping[str, Any], int | None]] = []
    base = summary.get("baseline")
    dist = base.get("stream_tokens_per_s") if isinstance(base, Mapping) else None
    if isinstance(dist, Mapping):
        rows.append(("ours, 1 stream alone (baseline)", dist, 1))
    measured = Summary.from_json(summary)
    load = measured.under_load() if measured else None
    if load is not None:
        level, why = load
        c, dist = level.concurrency, level.raw.get("stream_tokens_per_s")
        if isinstance(dist, Mapping):
            rows.append((f"ours at {c} stream{'s' if c != 1 else ''} ({why})", dist, c))
    return rows


def claims_vs_measured(headline: float | None, panel: Mapping[str, Any] | None,
                       measured: Mapping[str, Any] | Sequence[tuple[str, Mapping[str, Any],
                                                                     int | None]] | None,
                       unit: str = "tokens/s", headline_unit: str | None = None) -> str | None:
    """The vendor's headline and production panel beside our per-stream rates, one row
    each, every row naming its figures and (ours) the level they were measured at.

    `measured` is `measured_rows(summary)` (or one distribution, labelled "ours"). A
    headline that is not per stream (per GPU, per node) cannot share the axis: its row
    says so and draws nothing.
    """
    marks = {"headline": ("*", "black", 10), "p50": ("o", "black", 6),
             "p90": ("s", "white", 6), "p99": ("^", "black", 6)}
    rows: list[tuple[str, list[tuple[str, float]]]] = []
    if _finite(headline):
        per = HEADLINE_UNITS.get(headline_unit or "output_tokens_per_s",
                                 plain(str(headline_unit)))
        if per == "per stream":
            rows.append((f"vendor headline\n{whole(headline)} {unit}",
                         [("headline", float(headline))]))
        else:
            rows.append((f"vendor headline {whole(headline)} {unit} {per}\n"
                         f"(not per stream: not drawn)", []))
    ours = ([("ours", measured, None)] if isinstance(measured, Mapping)
            else list(measured or []))
    levels = []
    for label, dist, level in [("vendor production panel", panel, None), *ours]:
        vals = [(q, float(dist[q])) for q in ("p50", "p90", "p99")
                if isinstance(dist, Mapping) and _finite(dist.get(q))]
        if vals:
            rows.append((f"{label}\n" + " · ".join(f"{q} {whole(v)}" for q, v in vals), vals))
            levels += [level] if level else []
        elif dist is not None and dist is not panel:
            rows.append((f"{label}\nnot measured: no request succeeded", []))
    if not any(vals for _, vals in rows):
        return None
    values = [v for _, vals in rows for _, v in vals]
    log = min(values) > 0 and max(values) / min(values) > 100
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=0.5 * len(rows) + 1.1)
        ax = fig.axes[0]
        n = len(rows)
        for y, (_label, vals) in zip(range(n - 1, -1, -1), rows, strict=True):
            if not vals:
                continue
            xs = [v for _, v in vals]
            if len(xs) > 1:
                ax.plot([min(xs), max(xs)], [y, y], color="0.75", linewidth=3,
                        solid_capstyle="butt")
            for q, v in vals:
                marker, face, size = marks[q]
                ax.plot([v], [y], marker=marker, color="black", markerfacecolor=face,
                        markersize=size, linestyle="none")
        ax.set_yticks(range(n), [label for label, _ in reversed(rows)])
        ax.tick_params(axis="y", length=0)
        ax.grid(False, axis="y")
        ax.set_ylim(-0.6, n - 0.4)
        if log:
            ax.set_xscale("log")
            _log_numbers(ax.xaxis, min(values), max(values))
            ax.set_xlim(min(values) / 2, max(values) * 2)
        else:
            number_ticks(ax.xaxis)
            ax.set_xlim(0, max(values) * 1.08)
        ax.set_xlabel(f"output {unit} per stream{' (log scale)' if log else ''}")
        at = (f" at {' and '.join(f'{c:,}' for c in dict.fromkeys(levels))} "
              f"stream{'s' if levels[-1] != 1 else ''}") if levels else ""
        # the figure's title: the row labels leave the plot too narrow for it
        figure_title(fig, f"Output {unit} per stream: the vendor's figures vs ours{at}")
        shown = {q for _, vals in rows for q, _ in vals}
        keys = [(q, Line2D([], [], marker=marks[q][0], color="black", linestyle="none",
                           markerfacecolor=marks[q][1], markersize=marks[q][2]))
                for q in ("p50", "p90", "p99", "headline") if q in shown]
        legend_below(fig, [h for _, h in keys],
                     ["the vendor's headline" if q == "headline" else q for q, _ in keys])
        return to_svg(fig)


YLABELS = {"TTFT": "ms to the first token", "ITL": "ms between chunks"}
TITLES = {"TTFT": "TTFT (ms)", "ITL": "ITL, gap between chunks (ms)"}
BOX_KEY = ("box: the middle half of requests (p25–p75)", "line in the box: the median (p50)",
           "whiskers: p1 to p99 (slower outliers not drawn)")


def latency_distributions(samples: Mapping[int, Mapping[str, Sequence[float]]]) -> str | None:
    """TTFT and the gaps between chunks (ITL) per concurrency level, as box plots (box
    p25–p75, line p50, whiskers p1–p99), in ms; a panel only for what was measured."""
    levels = sorted(c for c, s in samples.items() if s.get("ttft") or s.get("itl"))
    if not levels:
        return None
    panels = []
    for key, what in (("ttft", "TTFT"), ("itl", "ITL")):
        keep = [(c, [v * 1000 for v in samples[c].get(key, [])]) for c in levels]
        keep = [(c, d) for c, d in keep if d]
        if keep:
            panels.append((keep, what))
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.9, ncols=len(panels))
        for ax, (keep, what) in zip(fig.axes, panels, strict=True):
            positions = list(range(1, len(keep) + 1))
            ax.boxplot([d for _, d in keep], positions=positions, whis=(1, 99),
                       showfliers=False, patch_artist=True, widths=0.6,
                       boxprops={"facecolor": "0.85", "edgecolor": "black"},
                       medianprops={"color": "black", "linewidth": 1.5})
            names = {float(p): f"{c:,}" for p, (c, _) in zip(positions, keep, strict=True)}
            name_of = _lookup(names)
            ax.xaxis.set_major_locator(_Spaced(positions, name_of))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos, n=name_of: n(v)))
            number_ticks(ax.yaxis)
            ax.set_xlabel("concurrent streams")
            ax.set_ylabel(YLABELS[what])
            ax.set_title(TITLES[what], loc="left")
        figure_title(fig, f"TTFT and ITL per level, {level_span(levels)}")
        legend_below(fig, [Patch(facecolor="0.85", edgecolor="black"),
                           Line2D([], [], color="black", linewidth=1.5),
                           Line2D([], [], color="black", linewidth=0.8, marker="_",
                                  markersize=8)], list(BOX_KEY))
        return to_svg(fig)


def latency_percentiles(levels: Sequence[Mapping[str, Any]]) -> str | None:
    """Fallback when per-request records are absent: p50/p90/p99 of TTFT and of the gaps
    between chunks (ITL) per level, in ms."""
    conc = [lv.get("concurrency") for lv in levels]
    if not levels or not all(_finite(c) for c in conc):
        return None
    panels = []
    for key, what in (("ttft_s", "TTFT"), ("itl_s", "ITL")):
        series = []
        for style, q in zip(STYLES, ("p50", "p90", "p99"), strict=False):
            pts = [(c, lv[key][q] * 1000) for c, lv in zip(conc, levels, strict=True)
                   if isinstance(lv.get(key), Mapping) and _finite(lv[key].get(q))]
            if pts:
                series.append((q, style, pts))
        if series:
            panels.append((what, series))
    if not panels:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.8, ncols=len(panels))
        for ax, (what, series) in zip(fig.axes, panels, strict=True):
            for q, style, pts in series:
                ax.plot(*zip(*pts, strict=True), label=q, **style)
            levels_axis(ax, [float(c) for c in conc])  # type: ignore[arg-type]
            number_ticks(ax.yaxis)
            ax.set_ylabel(YLABELS[what])
            ax.set_title(f"{TITLES[what]}: p50, p90, p99", loc="left")
        figure_title(fig, f"TTFT and ITL per level, {level_span(conc)}")  # type: ignore[arg-type]
        legend_below(fig, *_handles(fig.axes[0]))
        return to_svg(fig)


def _hollow(ax: Any, pts: Sequence[tuple[float, float]], marker: str) -> None:
    """White-faced markers over points the client was the bottleneck at (not judged)."""
    if pts:
        ax.plot(*zip(*pts, strict=True), linestyle="none", marker=marker, color="black",
                markerfacecolor="white", zorder=3)


BOUND_LABEL = "hollow marker: the client was the bottleneck (not judged)"
#: the vendor's gauges drawn under the ramp chart, each with its words and style
QUEUE_GAUGES = (("running", "running in its engine", 0), ("waiting", "waiting in its queue", 1))


def vendor_queue(vendor: Mapping[str, Any] | None) -> dict[int, dict[str, tuple[float, float]]]:
    """Per ramp level, the vendor's running and waiting gauges as (mean, max): the mean
    of the samples the probe scraped while the level ran (before and after it, which see
    an idle engine, only when none was taken during it), the highest of all of them
    (`vendor_metrics`); empty when the run scraped nothing or the page exported neither
    gauge."""
    out: dict[int, dict[str, tuple[float, float]]] = {}
    levels = vendor.get("levels") if isinstance(vendor, Mapping) else None
    for key, d in (levels.items() if isinstance(levels, Mapping) else ()):
        if not (isinstance(d, Mapping) and d.get("phase") == "ramp" and str(key).isdigit()
                and isinstance(d.get("vendor"), Mapping)):
            continue
        for gauge, _, _ in QUEUE_GAUGES:
            g = d["vendor"].get(gauge)
            if not isinstance(g, Mapping):
                continue
            # the samples taken while the level ran; before and after it, if none was
            mean = g.get("during_mean") if _finite(g.get("during_mean")) else g.get("mean")
            if _finite(mean) and _finite(g.get("max")) and 0 <= mean <= g["max"]:
                out.setdefault(int(key), {})[gauge] = (float(mean), float(g["max"]))
    return {c: out[c] for c in sorted(out) if c > 0}


def _queue_panel(ax: Any, queue: Mapping[int, Mapping[str, tuple[float, float]]],
                 levels: Sequence[float]) -> None:
    """Requests the vendor's engine ran and queued at each level: the mean of the
    samples (line) and the highest sample (a dash above it)."""
    for gauge, words, k in QUEUE_GAUGES:
        pts = [(c, *g[gauge]) for c, g in queue.items() if gauge in g]
        if not pts:
            continue
        style = STYLES[k]
        ax.plot([c for c, _, _ in pts], [m for _, m, _ in pts], label=f"{words}, mean",
                **style)
        ax.plot([c for c, _, _ in pts], [h for _, _, h in pts], linestyle="none",
                marker="_", markersize=11, markeredgewidth=1.4, color=style["color"],
                label="dash: the highest sample" if k == 0 else "_")
    levels_axis(ax, levels)
    number_ticks(ax.yaxis)
    ax.set_ylim(bottom=0, top=max(1.0, max(h for g in queue.values() for _, h in g.values())
                                  * 1.15))
    ax.set_ylabel("requests")
    ax.set_title(f"The vendor's own metrics at each level, {level_span(levels)}: "
                 "requests running and waiting (requests)", loc="left")


def throughput_vs_concurrency(levels: Sequence[Mapping[str, Any]], max_sustained: int | None,
                              first_degraded: str | None,
                              vendor: Mapping[str, Any] | None = None) -> str | None:
    """Output tokens/s per level: per stream (p50 and p10, left axis) and all streams
    together (right axis), the max sustained level marked; under it, when the run scraped
    the vendor's metrics (`vendor`, summary.json's vendor_metrics), the requests the
    vendor's engine was running and queueing at each level: why a figure degraded."""
    pts = [(lv["concurrency"], lv.get("stream_tokens_per_s") or {},
            lv.get("aggregate_tokens_per_s"), bool(lv.get("client_bound")))
           for lv in levels if _finite(lv.get("concurrency"))]
    if not any(_positive(a) or _positive(s.get("p50")) for _, s, a, _ in pts):
        return None  # nothing streamed: the failures are in the use-case chart
    run_levels = {float(c) for c, *_ in pts}
    queue = {c: g for c, g in vendor_queue(vendor).items() if float(c) in run_levels}
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=4.6 if queue else 3.0, nrows=2 if queue else 1)
        ax = fig.axes[0]
        below = fig.axes[1] if queue else None
        grid = ax.get_gridspec()
        if below is not None and grid is not None:
            grid.set_height_ratios([2.0, 1.0])
        per: list[tuple[float, float, bool]] = [
            (c, s["p50"], b) for c, s, _, b in pts if _finite(s.get("p50"))]
        per10: list[tuple[float, float, bool]] = [
            (c, s["p10"], b) for c, s, _, b in pts if _finite(s.get("p10"))]
        agg: list[tuple[float, float, bool]] = [(c, a, b) for c, _, a, b in pts if _finite(a)]
        for series, style, label in ((per, STYLES[0], "per stream p50 (left axis)"),
                                     (per10, STYLES[2], "per stream p10: 90 % of streams "
                                                        "were faster (left axis)")):
            if series:
                ax.plot([c for c, _, _ in series], [v for _, v, _ in series], label=label,
                        **style)
                _hollow(ax, [(c, v) for c, v, b in series if b], style["marker"])
        levels_axis(ax, [c for c, _, _, _ in pts])
        number_ticks(ax.yaxis)
        ax.set_ylabel("tokens/s per stream")
        ax2 = ax.twinx()
        ax2.grid(False)
        if agg:
            ax2.plot([c for c, _, _ in agg], [v for _, v, _ in agg],
                     label="all streams together (right axis)", **STYLES[1])
            _hollow(ax2, [(c, v) for c, v, b in agg if b], STYLES[1]["marker"])
        number_ticks(ax2.yaxis)
        ax2.set_ylabel("tokens/s, all streams")
        if below is not None:
            _queue_panel(below, queue, [c for c, _, _, _ in pts])
            ax.set_xlabel("")  # the panel under it names the axis they share
        handles, labels = _handles(ax, ax2, *([below] if below is not None else []))
        if _finite(max_sustained):
            ax.axvline(float(max_sustained), color="black", linewidth=1.2,
                       linestyle=(0, (6, 2, 1, 2)))
            what = DEGRADED_WORDS.get(str(first_degraded), plain(str(first_degraded)))
            above = f"; above it {what} degraded first" if first_degraded else ""
            handles.append(Line2D([], [], color="black", linewidth=1.2,
                                  linestyle=(0, (6, 2, 1, 2))))
            labels.append(f"max sustained: {max_sustained} streams{above}")
        if any(b for _, _, _, b in pts):
            handles.append(Line2D([], [], marker="o", color="black", markerfacecolor="white",
                                  linestyle="none"))
            labels.append(BOUND_LABEL)
        legend_below(fig, handles, labels, ncols=2)
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.set_title(f"Output tokens/s per level, {level_span([c for c, *_ in pts])}",
                     loc="left")
        return to_svg(fig)


def prefill_fit(points: Sequence[tuple[float, float]], overhead_s: float | None,
                tokens_per_s: float | None, r2: float | None) -> str | None:
    """TTFT against prompt length with the fitted line TTFT = a + n / rate."""
    pts = [(n, t) for n, t in points if _finite(n) and _finite(t)]
    if not pts:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.7)
        ax = fig.axes[0]
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, [y * 1000 for y in ys], linestyle="none", marker="o", color="black",
                markerfacecolor="white", label="measured TTFT, one request at a time")
        if _finite(overhead_s) and _finite(tokens_per_s) and tokens_per_s:
            lo, hi = 0.0, max(xs) * 1.05
            fit = [(overhead_s + x / tokens_per_s) * 1000 for x in (lo, hi)]
            quality = f", r² {r2:.3f}" if _finite(r2) else ""
            ax.plot([lo, hi], fit, color="0.35", linestyle="--",
                    label=f"fit: {whole(overhead_s * 1000)} ms + n / "
                          f"{whole(tokens_per_s)} tok/s{quality}")
        number_ticks(ax.xaxis)
        number_ticks(ax.yaxis)
        ax.set_xlabel("prompt tokens (n)")
        ax.set_ylabel("TTFT (ms)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        legend_below(fig, *_handles(ax))
        ax.set_title("TTFT (ms) vs prompt length (tokens), at 1 stream", loc="left")
        return to_svg(fig)


def stream_raster(streams: Sequence[Stream], stall_s: float = 1.0) -> str | None:
    """Token arrivals of sample streams over time: waiting shows as a thin line, stalls bold."""
    rows = sorted(streams, key=lambda s: s.t0_s)
    if not rows:
        return None
    origin = rows[0].t0_s
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=min(0.1 * len(rows) + 1.6, 4.4))
        ax = fig.axes[0]
        stalls = 0
        # One path per layer (not one per tick) keeps the SVG small and the PDF fast.
        tick_x: list[float] = []
        tick_y: list[float] = []
        wait_x: list[float] = []
        wait_y: list[float] = []
        stall_x: list[float] = []
        stall_y: list[float] = []
        fail_x: list[float] = []
        fail_y: list[float] = []
        for y, s in enumerate(rows):
            start = s.t0_s - origin
            times = [start + a for a in s.arrivals_s]
            end = times[0] if times else start
            wait_x += [start, end, math.nan]  # sent, waiting for the first token
            wait_y += [y, y, math.nan]
            for t in times:
                tick_x += [t, t, math.nan]
                tick_y += [y - 0.35, y + 0.35, math.nan]
            for a, b in itertools.pairwise(times):
                if b - a > stall_s:
                    stalls += 1
                    stall_x += [a, b, math.nan]
                    stall_y += [y, y, math.nan]
            if s.outcome != "ok":
                fail_x.append(times[-1] if times else end)
                fail_y.append(y)
        ax.plot(wait_x, wait_y, color="0.6", linewidth=0.8)
        ax.plot(tick_x, tick_y, color="black", linewidth=0.4)
        if stall_x:
            ax.plot(stall_x, stall_y, color="black", linewidth=2.5)
        if fail_x:
            ax.plot(fail_x, fail_y, marker="x", color="black", markersize=5, linestyle="none")
        ax.set_ylim(-1, len(rows))
        ax.invert_yaxis()
        ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))
        number_ticks(ax.xaxis)
        ax.set_xlabel("seconds since the first of these requests was sent")
        ax.set_ylabel("request, in send order")
        found = f"{stalls} in these streams" if stalls else "none in these streams"
        handles: list[Any] = [Line2D([], [], color="0.6", linewidth=0.8),
                              Line2D([], [], color="black", marker="|", markersize=7,
                                     linestyle="none"),
                              Line2D([], [], color="black", linewidth=2.5)]
        labels = ["waiting for the first token", "a chunk arrives",
                  f"stall: a gap over {stall_s:g} s ({found})"]
        if fail_x:
            handles.append(Line2D([], [], marker="x", color="black", linestyle="none"))
            labels.append("× request not ok (failed or cut short)")
        legend_below(fig, handles, labels, ncols=2)
        levels = {s.level for s in rows}
        only = levels.pop() if len(levels) == 1 else None
        at = f" at {level_span([only])}" if only is not None else ""
        ax.set_title(f"Token arrivals (s) of {len(rows)} requests{at}", loc="left")
        return to_svg(fig)


#: The use-case chart's panels: summary metric, percentile, SLO profile key, label.
FIT_PANELS = (("ttft_s", "p90", "ttft_p90_s", "TTFT p90"),
              ("tpot_s", "p90", "tpot_p90_s", "TPOT p90"),
              ("itl_s", "p99", "itl_p99_s", "ITL p99, gap between chunks"))


def _limit_lines(limits: Mapping[str, Mapping[str, Any]], limit_key: str,
                 tolerances: Mapping[str, Any]) -> list[tuple[str, float, Mapping[str, Any]]]:
    """(label, ms, line style) of each limit a panel draws, highest first; use cases that
    share a limit share a line, and a use case has one style in every panel."""
    by_value: dict[float, list[tuple[int, str]]] = {}
    for i, (name, profile) in enumerate(limits.items()):
        value = profile.get(limit_key)
        if _positive(value):
            label = plain(str(profile.get("label") or str(name).replace("_", " ")))
            by_value.setdefault(float(value) * 1000, []).append((i, label))
    out = [(f"{', '.join(n for _, n in names)} {whole(v)} ms", v,
            LIMIT_STYLES[names[0][0] % (len(LIMIT_STYLES) - 2)])
           for v, names in by_value.items()]
    if limit_key == "tpot_p90_s":
        speed = tolerances.get("reading_speed_tokens_per_s", 5.5)
        if (_positive(speed) and tolerances.get("reading_speed_percentile", "p90") == "p90"):
            readers = [plain(str(p.get("label") or str(n).replace("_", " ")))
                       for n, p in limits.items() if p.get("above_reading_speed")]
            if readers:
                out.append((f"{', '.join(readers)}: reading speed {num(speed)} tokens/s = "
                            f"{whole(1000 / speed)} ms", 1000 / speed, LIMIT_STYLES[-2]))
    return sorted(out, key=lambda t: -t[1])


def use_case_fit(levels: Sequence[Mapping[str, Any]],
                 limits: Mapping[str, Mapping[str, Any]],
                 tolerances: Mapping[str, Any] | None = None) -> str | None:
    """Every limit a use case sets, per level: TTFT p90, TPOT p90 (and the reading
    speed), ITL p99 (the voice agent's no-stall limit) and the share of failed requests.

    `limits` maps a use case to its SLO profile (`ttft_p90_s`, `tpot_p90_s`,
    `itl_p99_s`, `above_reading_speed`, `label`); `tolerances` gives the reading speed
    and the failure limit (the defaults otherwise). A level fits a use case where the
    measured line stays under every one of that use case's lines.
    """
    from evalkit.tolerances import Tolerances

    tol = tolerances or {}
    panels: list[tuple[list[tuple[float, float, bool]],
                       list[tuple[str, float, Mapping[str, Any]]], str, bool]] = []
    conc = [lv["concurrency"] for lv in levels if _finite(lv.get("concurrency"))]
    for key, q, limit_key, label in FIT_PANELS:
        pts = [(lv["concurrency"], lv[key][q] * 1000, bool(lv.get("client_bound")))
               for lv in levels
               if _finite(lv.get("concurrency")) and isinstance(lv.get(key), Mapping)
               and _positive(lv[key].get(q))]
        if pts:
            panels.append((pts, _limit_lines(limits, limit_key, tol), label, True))
    failed = [(lv["concurrency"], lv["failure_rate"] * 100, bool(lv.get("client_bound")))
              for lv in levels
              if _finite(lv.get("concurrency")) and _finite(lv.get("failure_rate"))]
    if failed:
        limit = tol.get("max_failure_rate")
        limit = float(limit) if _finite(limit) else Tolerances().max_failure_rate
        panels.append((failed, [(f"every use case {num(limit * 100)} %", limit * 100,
                                 LIMIT_STYLES[-1])], "Failed requests", False))
    if not panels:
        return None
    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.3 * nrows + 0.5, ncols=ncols, nrows=nrows)
        for extra in fig.axes[len(panels):]:
            extra.remove()
        tags: list[_Tag] = []
        for ax, (pts, lims, label, log) in zip(fig.axes, panels, strict=False):
            xs = [c for c, _, _ in pts]
            ys = [v for _, v, _ in pts]
            ax.plot(xs, ys, label="measured at each level", **STYLES[0])
            _hollow(ax, [(c, v) for c, v, b in pts if b], STYLES[0]["marker"])
            for name, limit, style in lims:
                ax.axhline(limit, linewidth=1, **style)
                tags.append(_Tag(ax, name, limit, style))
            levels_axis(ax, conc)
            values = ys + [v for _, v, _ in lims]
            if log:
                ax.set_yscale("log")
                lo, hi = min(values), max(values)
                decades = max(math.log10(hi / lo), 1.0)
                ax.set_ylim(lo / 10 ** (0.1 * decades), hi * 10 ** (0.3 * decades))
                _log_numbers(ax.yaxis, lo, hi)
                ax.set_ylabel("ms (log scale)")
                ax.set_title(f"{label} (ms)", loc="left")
            else:
                top = max(values) * 1.35
                ax.set_ylim(-0.03 * top, top)
                number_ticks(ax.yaxis)
                ax.set_ylabel("% of requests")
                ax.set_title(f"{label} (% of requests)", loc="left")
        figure_title(fig, f"Each use case's limits per level, {level_span(conc)}")
        handles: list[Any] = [Line2D([], [], **STYLES[0])]
        labels = ["measured at each level; a use case's limits are the labelled lines"]
        if any(b for pts, *_ in panels for _, _, b in pts):
            handles.append(Line2D([], [], marker="o", color="black", markerfacecolor="white",
                                  linestyle="none"))
            labels.append(BOUND_LABEL)
        _place_tags(fig, tags, handles, labels)
        return to_svg(fig)


# --------------------------------------------------------------------------- captions
# How to read each chart, printed under it: kept here, beside what the chart draws.

CLAIMS_CAPTION = (
    "The vendor's figures beside ours, in output tokens per second per stream (further "
    "right is faster). One row per source, its figures written under its name: the "
    "vendor's headline (★), its production panel, and ours at the level named: one stream "
    "alone (the figure the Q6 answer is set against) and the max sustained level (what a "
    "stream gets under load). Dot p50, hollow square p90, triangle p99.")


def distributions_caption(tokens_per_chunk: str, boxes: bool = True) -> str:
    """Figure 2's caption: what its boxes (or, without records, its lines) are."""
    shape = ("Box: the middle half of requests (p25 to p75); line in the box: the median; "
             "whiskers: p1 to p99 (slower outliers are not drawn)." if boxes else
             "Lines: p50, p90 and p99 per level (the run's per-request records were not at "
             "hand for the whole distribution).")
    return ("How long a stream waits for its first token (TTFT, left) and between chunks "
            "(ITL, right) at each concurrency level, in ms; lower is better. " + shape +
            f" ITL is per gap between chunks (tokens per chunk p50: {tokens_per_chunk}); the "
            "per-token figure, TPOT, is in the use-case chart.")


def throughput_caption(thresholds: Mapping[str, Any] | None = None,
                       vendor: Mapping[str, Any] | None = None) -> str:
    """Figure 3's caption, with the degradation rule the max sustained level rests on, and
    what the queue panel under it shows, or why there is none (`vendor`: summary.json's
    vendor_metrics, None when the run scraped nothing)."""
    return _throughput_words(thresholds) + " " + queue_caption(vendor)


def queue_caption(vendor: Mapping[str, Any] | None) -> str:
    """The queue panel's sentence: what it draws, or why nothing is drawn."""
    if vendor_queue(vendor):
        return ("Under it, the vendor's own metrics (its metrics page, scraped about every "
                "second while each level ran): requests its engine was running (the batch) "
                "and waiting in its queue, the mean of those samples and a dash at the "
                "highest. A "
                "queue that grows where a figure degraded says the engine was full; no queue "
                "there points to what lies in front of it, the network or a gateway.")
    if not isinstance(vendor, Mapping):
        return ("No queue panel: the run did not scrape the vendor's metrics (probe "
                "--metrics-url), so why a figure degraded is not shown.")
    return ("No queue panel: the run scraped the vendor's metrics page, but it exported no "
            "count of running or waiting requests for a ramp level.")


def _throughput_words(thresholds: Mapping[str, Any] | None = None) -> str:
    th = thresholds or {}

    def ratio(key: str) -> str:
        return num(th[key]) if _finite(th.get(key)) else "2"

    fail = num(th["admission_failure_rate"] * 100) if _finite(
        th.get("admission_failure_rate")) else "1"
    return ("Output tokens per second at each concurrency level: per stream (left axis; p50, "
            "and p10, which 90 % of streams beat), falling as streams share the endpoint, and "
            "for all streams together (right axis), rising until the endpoint is saturated. "
            "The vertical line is the max sustained concurrency: the highest level whose TTFT "
            f"p90 stayed within {ratio('ttft_p90_ratio')}× the baseline's, TPOT p90 within "
            f"{ratio('tpot_p90_ratio')}× and failures at most {fail} %, each judged on its "
            "95 % interval: a level breaches only when the whole interval lies beyond a limit, "
            "and one whose interval straddles a limit is a tie, neither held nor breached.")


PREFILL_CAPTION = (
    "TTFT of one request at a time against its prompt length (hollow dots), and the straight "
    "line fitted through them, TTFT = overhead + n / prefill rate (dashed): the steeper the "
    "line, the slower the prefill; dots off the line (a low r²) make the rate less certain.")


def raster_caption(n: int, level: int | None, stall_s: float = 1.0) -> str:
    """Figure 5's caption: how to read a row of the raster."""
    at = f" at {level} concurrent streams" if level else ""
    return (f"{n} requests{at}, one row each in send order, against time: the grey line is "
            "the wait from sending to the first token (queueing and prefill), each tick a "
            f"chunk arriving; a bold segment is a stall (a gap over {stall_s:g} s), × a "
            "request that did not finish. Ticks spreading apart mean slower decoding.")


USE_CASE_CAPTION = (
    "Each panel is one kind of limit: the measured figure at each concurrency level (line "
    "with dots) against every use case's limit on it (the labelled lines). TTFT p90; TPOT "
    "p90, per output token, the figure degradation is judged on (interactive chat also needs "
    "90 % of streams at reading speed); ITL p99, per gap between chunks: the voice agent's "
    "no-stall limit; and the share of failed requests. A use case fits up to the highest "
    "level where the measured line stays under every one of its lines.")
