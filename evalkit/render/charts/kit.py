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
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, Locator, MaxNLocator, NullLocator

from evalkit.fmt import chart_num

matplotlib.use("Agg")  # no display, ever; must precede any pyplot import elsewhere

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
                  "admission": "rejected requests", "incomplete": "cut streams",
                  "timeout": "timed-out streams", "error": "errors"}
#: How each headline unit the questionnaire allows is said; only the first is per stream.
HEADLINE_UNITS = {"output_tokens_per_s": "per stream", "output_tokens_per_s_per_gpu": "per GPU",
                  "output_tokens_per_s_per_node": "per node"}


# --------------------------------------------------------------------------- words


def plain(text: str) -> str:
    """Literal chart text: matplotlib would read `$…$` as mathtext."""
    return text.replace("$", r"\$")


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
                 label: Callable[[float], str] = chart_num,
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
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: chart_num(v)))


def _log_numbers(axis: Any, lo: float, hi: float) -> None:
    """A log axis ticked at 1, 2, 5 × 10^k between lo and hi, else at every power of ten,
    else at every second or third: as many as fit."""
    powers = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
    values = [m * 10.0 ** k for k in powers for m in (1, 2, 5)]
    sparser = [[10.0 ** k for k in powers if k % step == 0] for step in (1, 2, 3)]
    axis.set_major_locator(_Spaced(values, fallbacks=sparser))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: chart_num(v)))
    axis.set_minor_locator(NullLocator())


def _lookup(names: Mapping[float, str]) -> Callable[[float], str]:
    """A tick's label by its position (blank between positions)."""
    return lambda v: names.get(v, "")


def _level_text(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else chart_num(v)


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
