"""Charts that never collide and always say what they show.

Every chart of a scorecard (`evalkit.render.charts.listed.CHARTS`) and of a comparison is
drawn for the report fixture and for runs at the edges: one level, no data, 20 levels
(1–20 and 1–2¹⁹), huge (10⁷) and tiny (10⁻⁴) values, a per-GPU headline, limits crowded together.
Then, from matplotlib's own extents of what was drawn: no two texts overlap, no text
covers a legend, a plot's lines, markers or boxes, every text lies inside its figure,
every legend lies outside every plot, every title names its unit (and its levels, on a
chart over concurrency levels), only greys are drawn, and no warning is raised.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from evalkit import fmt
from evalkit.analysis.summarize import summarize
from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_checks import VendorMetrics
from evalkit.analysis.thresholds import Tolerances
from evalkit.records import RequestRecord
from evalkit.render import comparison as comparison_mod
from evalkit.render.charts import figures, kit, ramp, raster
from evalkit.render.charts.listed import ChartInputs, draw_charts
from evalkit.render.keyfigures import slo_limits
from evalkit.review.compare import RunView, compare_runs
from evalkit.review.scorecard import Scorecard
from evalkit.rundir import run as rundir_run
from evalkit.rundir.digest import RecordDigest

RUN_DIR = Path(__file__).parent.parent / "data" / "report_run"
#: overlaps of up to this many pixels (at 100 dpi) are antialiasing, not a collision
SLACK_PX = 1.0

Box = tuple[float, float, float, float]


# --------------------------------------------------------------------------- runs


def _record(rid: str, phase: str, level: int, t0: float, ttft: float, gaps: Sequence[float],
            outcome: str = "ok", prompt: int = 512) -> RequestRecord:
    if outcome != "ok":
        return RequestRecord(id=rid, phase=phase, level=level, outcome="rejected", t0_s=t0,
                             http_status=429, error="429: slow down")
    arrivals = list(itertools.accumulate(gaps, initial=ttft))
    return RequestRecord(
        id=rid, phase=phase, level=level, outcome="ok", t0_s=t0, prompt_tokens=prompt,
        requested_output_tokens=len(arrivals), output_tokens=len(arrivals),
        output_tokens_estimated=False, usage_completion_tokens=len(arrivals),
        counted_output_tokens=len(arrivals), ttft_s=ttft, e2e_s=arrivals[-1],
        chunks=[(a, 1) for a in arrivals], http_status=200, finish_reason="length",
        end_s=arrivals[-1])


def records(levels: Sequence[int], ttft: float, gap: float, tokens: int = 12,
            outcome: str = "ok") -> list[RequestRecord]:
    """Baseline, ramp (TTFT and gaps growing with the level) and prefill records."""
    rng = random.Random(5)
    out: list[RequestRecord] = []
    t = 0.0
    for i in range(6):
        out.append(_record(f"b{i}", "baseline", 1, t, ttft * rng.uniform(0.95, 1.05),
                           [gap * rng.uniform(0.9, 1.1) for _ in range(tokens - 1)], outcome))
        t += ttft + gap * tokens
    for k, c in enumerate(levels):
        grow = 1 + 0.3 * k
        for i in range(3 * c):
            out.append(_record(f"r{c}-{i}", "ramp", c, t + (i // c) * grow * (ttft + gap * tokens),
                               ttft * grow * rng.uniform(0.9, 1.1),
                               [gap * grow * rng.uniform(0.8, 1.2) for _ in range(tokens - 1)],
                               outcome))
        t += 3 * grow * (ttft + gap * tokens) + 1
    for n in (128, 512, 2048):
        for j in range(2):
            out.append(_record(f"p{n}-{j}", "prefill", 1, t, ttft * (1 + n / 4096), [gap],
                               outcome, prompt=n))
            t += 1
    return out


def summary_of(recs: Sequence[RequestRecord], levels: Sequence[int]) -> dict[str, Any]:
    check = {"loop_lag_p99_s": 0.001, "cpu_fraction": 0.3, "client_bound": False}
    return summarize(recs, {"phases": {p: check for p in ("baseline", "prefill", "ramp")},
                            "levels": {str(c): check for c in levels}, "rtt_s": 0.0004})


def synthetic_summary(levels: Sequence[int], ttft: float, gap: float) -> dict[str, Any]:
    """A summary without records (so the percentile fallback draws): 2¹⁹ streams of
    records would be too many to build."""
    def dist(v: float) -> dict[str, float]:
        return {"p50": v, "p90": v * 1.3, "p99": v * 1.8, "p10": v * 0.8}

    lv = [{"concurrency": c, "ttft_s": dist(ttft * (1 + k)), "tpot_s": dist(gap * (1 + k)),
           "itl_s": dist(gap * (1 + k)), "stream_tokens_per_s": dist(1 / (gap * (1 + k))),
           "aggregate_tokens_per_s": c / (gap * (1 + k)), "failure_rate": 0.002 * k,
           "client_bound": k == len(levels) - 1} for k, c in enumerate(levels)]
    return {"schema": "evalkit.summary/1",
            "baseline": {"stream_tokens_per_s": dist(1 / gap), "ttft_s": dist(ttft)},
            "ramp": {"levels": lv, "max_sustained_concurrency": levels[len(levels) // 2],
                     "first_degraded": "itl"}}


def scorecard(headline: float | None = 1107.0, unit: str = "output_tokens_per_s",
              panel: Mapping[str, float] | None = None,
              profiles: Mapping[str, Any] | None = None) -> dict[str, Any]:
    tol = dataclasses.asdict(Tolerances())
    if profiles is not None:
        tol["slo_profiles"] = profiles
    claimed: dict[str, Any] = {"panel": dict(panel or {"p50": 170, "p90": 520, "p99": 767})}
    if headline is not None:
        claimed.update(headline=headline, headline_unit=unit)
    return {"questions": {"Q6": {"claimed": claimed}}, "tolerances": tol}


def _fixture() -> tuple[dict[str, Any], dict[str, Any], Any]:
    data = rundir_run.open_run(RUN_DIR)
    return scorecard(), data.summary, data.records


def _run(levels: Sequence[int], ttft: float, gap: float, card: dict[str, Any] | None = None,
         **kw: Any) -> tuple[dict[str, Any], dict[str, Any], list[RequestRecord]]:
    recs = records(levels, ttft, gap, **kw)
    return card or scorecard(), summary_of(recs, levels), recs


def vendor_metrics(levels: Sequence[int], running: float = 1.0, waiting: float = 0.5,
                   gauges: bool = True) -> dict[str, Any]:
    """summary.json's vendor_metrics as a scrape would leave it: per ramp level, the
    engine's running and waiting gauges growing with the level (past the batch the
    queue takes the rest); `gauges=False`: a page that exported neither."""
    out: dict[str, Any] = {}
    for c in levels:
        run = min(c, 8) * running
        wait = max(0, c - 8) * waiting
        # the mean of every sample (idle before and after included) and of those taken
        # while the level ran: the panel draws the latter
        vendor = {"running": {"mean": run * 0.6, "max": run, "samples": 5,
                              "during_mean": run * 0.9, "during_samples": 3},
                  "waiting": {"mean": wait * 0.5, "max": wait, "samples": 5,
                              "during_mean": wait * 0.8, "during_samples": 3}
                  } if gauges else {}
        out[str(c)] = {"phase": "ramp", "vendor": vendor, "ours": {}}
    return {"url": "https://vendor.example/metrics", "engine": "vllm", "levels": out}


def _scraped(levels: Sequence[int], **kw: Any) -> Any:
    card, summary, recs = _run(levels, 0.2, 0.02)
    summary["vendor_metrics"] = vendor_metrics(levels, **kw)
    return card, summary, recs


def _scraped_huge() -> Any:
    card, summary, recs = scorecard(), synthetic_summary(POW2, 0.2, 0.02), []
    summary["vendor_metrics"] = vendor_metrics(POW2, running=1e4, waiting=3e6)
    return card, summary, recs


CROWDED = {f"case_{i}": {"label": f"use case {i}", "ttft_p90_s": 0.45 + 0.01 * i,
                         "tpot_p90_s": 0.02 + 0.001 * i, "itl_p99_s": 0.03 + 0.002 * i}
           for i in range(6)}
CROWDED["mathtext"] = {"label": "$\\frac{1}{0}$ <b>", "ttft_p90_s": 0.485}  # literal text
POW2 = [2 ** k for k in range(20)]

SCENARIOS: dict[str, Any] = {
    "fixture": _fixture,
    "one level": lambda: _run([1], 0.2, 0.02),
    "no data": lambda: _run([1, 2, 4], 0.2, 0.02, outcome="rejected"),
    "no run": lambda: (scorecard(), None, []),
    "nothing at all": lambda: ({}, {}, []),
    "20 levels": lambda: _run(list(range(1, 21)), 0.2, 0.02, tokens=6),
    "20 levels to 2^19": lambda: (scorecard(), synthetic_summary(POW2, 0.2, 0.02), []),
    "huge values": lambda: _run([1, 2, 4, 8], 1e4, 1e-7,
                                card=scorecard(headline=1e7, panel={"p50": 1e4, "p90": 1e5})),
    "tiny values": lambda: _run([1, 2, 4, 8], 1e-7, 1e4, tokens=4,
                                card=scorecard(headline=1e-4, panel={"p50": 1e-4})),
    "per-GPU headline": lambda: _run([1, 2, 4], 0.2, 0.02,
                                     card=scorecard(5000, "output_tokens_per_s_per_gpu")),
    "crowded limits": lambda: _run([1, 2, 4, 8, 16], 0.4, 0.025,
                                   card=scorecard(profiles=CROWDED)),
    "vendor queue": lambda: _scraped([1, 2, 4, 8, 16, 32]),
    "vendor queue, one level": lambda: _scraped([1]),
    "vendor queue to 2^19": _scraped_huge,
    "vendor page without gauges": lambda: _scraped([1, 2, 4], gauges=False),
}


# --------------------------------------------------------------------------- capture

def chart_list(card: Scorecard, summary: Summary | None, recs: Any) -> list[tuple[str, str]]:
    """Every chart of a scorecard, as (caption, svg), drawn as the page draws them."""
    digest = recs if isinstance(recs, RecordDigest) else RecordDigest.of(recs)
    return [(c.caption, str(c.svg))
            for c in draw_charts(ChartInputs(card, summary, digest, slo_limits(card)))]


Drawn = list[tuple[str, str, Figure]]  # (caption, svg, the figure it was written from)


def _capture(make: Any) -> Drawn:
    """Run the chart code and keep every figure it writes beside its caption and SVG."""
    figs: list[Figure] = []
    real = kit.to_svg

    def keep(fig: Figure) -> str:
        figs.append(fig)
        return real(fig)

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        for module in (figures, ramp, raster, comparison_mod):
            mp.setattr(module, "to_svg", keep)
        warnings.simplefilter("error")  # a warning would leak to the terminal
        svgs = make()
    assert len(svgs) == len(figs)
    return [(caption, str(svg), fig) for (caption, svg), fig in zip(svgs, figs, strict=True)]


@pytest.fixture(scope="module")
def scorecards() -> dict[str, Drawn]:
    """Every scenario's scorecard charts, drawn once for the module."""
    def make(name: str) -> Any:
        card, summary, recs = SCENARIOS[name]()
        read = summary if summary is None or isinstance(summary, Summary) \
            else Summary.from_json(summary)  # as open_run reads it
        typed = Scorecard.from_json(card)  # a scorecard.json dict, as verify reads it back
        return lambda: chart_list(typed, read, recs)

    return {name: _capture(make(name)) for name in SCENARIOS}


def comparison_views() -> list[RunView]:
    """Three vendors (one named with mathtext), one of them run twice: every kind of chart."""
    views = []
    for label, target, started, (levels, ttft, gap) in (
            ("Steady $x$ Inference", "A", "2026-01-01", ([1, 2, 4, 8, 16], 0.2, 0.02)),
            ("Apex Hyperscale AI", "B", "2026-01-01", ([1, 2, 4, 8], 0.5, 0.01)),
            ("Blazefast Cloud", "C", "2026-01-01", (list(range(1, 21)), 0.09, 0.005)),
            ("Blazefast Cloud", "C", "2026-02-01", (list(range(1, 21)), 0.12, 0.006))):
        recs = records(levels, ttft, gap, tokens=6)
        ttft_by_level: dict[int, list[float]] = {}
        for r in recs:
            if r.phase == "ramp" and r.ttft_s is not None and r.level:
                ttft_by_level.setdefault(r.level, []).append(r.ttft_s)
        views.append(RunView(label, target, started, "1",
                             {"prompt_tokens": 512, "output_tokens": 6, "levels": levels},
                             Summary.from_json(summary_of(recs, levels)),
                             ttft_by_level=ttft_by_level))
    return views


@pytest.fixture(scope="module")
def comparison() -> Drawn:
    views = comparison_views()
    return _capture(lambda: comparison_mod._charts(compare_runs(views)))


# --------------------------------------------------------------------------- geometry


def render(fig: Figure) -> tuple[Any, list[Text]]:
    """Draw the figure as the SVG writer does and return the texts actually drawn."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    texts: dict[int, Text] = {}
    real = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        if self.get_visible() and self.get_text().strip():
            texts[id(self)] = self
        real(self, renderer)

    Text.draw = draw  # type: ignore[method-assign,assignment]
    try:
        with matplotlib.rc_context(kit._RC):
            fig.canvas.draw()
    finally:
        Text.draw = real  # type: ignore[method-assign]
    return fig.canvas.get_renderer(), list(texts.values())  # type: ignore[attr-defined]


def _box(ext: Any) -> Box:
    return (ext.x0, ext.y0, ext.x1, ext.y1)


def overlap(a: Box, b: Box) -> bool:
    """Two boxes share more than SLACK_PX in both directions."""
    return (min(a[2], b[2]) - max(a[0], b[0]) > SLACK_PX
            and min(a[3], b[3]) - max(a[1], b[1]) > SLACK_PX)


def clip(a: Box, frame: Box) -> Box | None:
    """The part of a box inside a plot's frame (lines are clipped to it), shrunk by the
    slack; None when there is none."""
    x0, y0 = max(a[0], frame[0]) + SLACK_PX, max(a[1], frame[1]) + SLACK_PX
    x1, y1 = min(a[2], frame[2]) - SLACK_PX, min(a[3], frame[3]) - SLACK_PX
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def line_paths(ax: Any) -> Iterator[tuple[Any, np.ndarray]]:
    """(artist, display-space vertices with NaN breaks) of every line drawn in a plot."""
    for line in ax.lines:
        if line.get_visible():
            yield line, line.get_transform().transform_path(line.get_path()).vertices
    for coll in ax.collections:
        if coll.get_visible():
            for path in coll.get_paths():
                yield coll, coll.get_transform().transform_path(path).vertices


def segments(vertices: np.ndarray) -> np.ndarray:
    seg = np.hstack([vertices[:-1], vertices[1:]])
    return seg[np.isfinite(seg).all(axis=1)]


def crosses(box: Box, segs: np.ndarray) -> bool:
    """Whether a segment passes through the box: sampled every half pixel."""
    for x0, y0, x1, y1 in segs:
        n = max(2, int(np.hypot(x1 - x0, y1 - y0) * 2) + 1)
        xs, ys = np.linspace(x0, x1, n), np.linspace(y0, y1, n)
        if ((xs > box[0]) & (xs < box[2]) & (ys > box[1]) & (ys < box[3])).any():
            return True
    return False


def obstacles(fig: Figure, renderer: Any) -> Iterator[tuple[Any, Box, Any]]:
    """What no text may cover, per plot: (plot, its frame, a line's segments or a marker's
    or patch's box)."""
    for ax in fig.axes:
        frame = _box(ax.bbox)
        for artist, verts in line_paths(ax):
            if not isinstance(artist, Line2D) or artist.get_linestyle() not in ("None", ""):
                yield ax, frame, segments(verts)
            if isinstance(artist, Line2D) and artist.get_marker() not in (None, "None", ""):
                half = (artist.get_markersize() / 2) * fig.dpi / 72
                for x, y in artist.get_transform().transform(artist.get_xydata()):
                    if np.isfinite([x, y]).all():
                        yield ax, frame, (x - half, y - half, x + half, y + half)
        for patch in ax.patches:
            if patch.get_visible():
                yield ax, frame, _box(patch.get_window_extent(renderer))


def collisions(fig: Figure) -> list[str]:
    """Every way the drawn figure hides something it shows, in words."""
    renderer, texts = render(fig)
    boxes = {id(t): _box(t.get_window_extent(renderer)) for t in texts}
    legends: list[Any] = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    legends = [lg for lg in legends if lg is not None]
    whose = {id(t): lg for lg in legends for t in [*lg.get_texts(), lg.get_title()]}
    frame = _box(fig.bbox)
    problems = []
    for t in texts:
        tb = boxes[id(t)]
        if (tb[0] < frame[0] - SLACK_PX or tb[1] < frame[1] - SLACK_PX
                or tb[2] > frame[2] + SLACK_PX or tb[3] > frame[3] + SLACK_PX):
            problems.append(f"{t.get_text()!r} runs off the figure")
    for a, b in itertools.combinations(texts, 2):
        if overlap(boxes[id(a)], boxes[id(b)]):
            problems.append(f"{a.get_text()!r} overlaps {b.get_text()!r}")
    for lg in legends:
        lb = _box(lg.get_window_extent(renderer))
        for t in texts:
            if whose.get(id(t)) is not lg and overlap(boxes[id(t)], lb):
                problems.append(f"{t.get_text()!r} overlaps a legend")
        for ax in fig.axes:
            if overlap(lb, _box(ax.bbox)):
                problems.append(f"a legend lies over the plot {ax.get_title()!r}")
    found = list(obstacles(fig, renderer))
    for t in texts:
        for ax, plot, thing in found:
            part = clip(boxes[id(t)], plot)
            if part is None:
                continue
            hit = (crosses(part, thing) if isinstance(thing, np.ndarray)
                   else overlap(part, thing))
            if hit:
                problems.append(f"{t.get_text()!r} covers a line, marker or box of "
                                f"{ax.get_title()!r}")
                break
    return problems


UNIT = re.compile(r"\((ms|s|%|tokens|requests|% of [a-z ]+)\)|tokens/s|% of ")


def untitled(fig: Figure) -> list[str]:
    """Plots whose title names no unit, or (over concurrency levels) no level."""
    problems = []
    whole = fig.get_suptitle()  # the figure's title, over all its panels
    titled = [ax for ax in fig.axes if ax.get_title(loc="left") or ax.get_title() or whole]
    for ax in titled:
        title = ax.get_title(loc="left") or ax.get_title() or whole
        if not UNIT.search(title):
            problems.append(f"no unit in {title!r}")
        if ax.get_xlabel() == "concurrent streams" and "stream" not in f"{title} {whole}":
            problems.append(f"no levels in {title!r}")
    if not titled:
        problems.append("no title")
    return problems


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scorecard_charts_never_collide(name: str, scorecards: dict[str, Drawn]) -> None:
    """Every chart of the scenario hides nothing it shows and says what it shows; its
    caption is words, not field names."""
    for caption, _, fig in scorecards[name]:
        assert caption and not re.search(r"\b[a-z]+_[a-z_]+\b", caption), caption
        assert collisions(fig) == [], caption
        assert untitled(fig) == [], caption


def test_comparison_charts_never_collide(comparison: Drawn) -> None:
    """The comparison's charts too: three vendors, one run twice, 20 levels."""
    assert len(comparison) == 4  # TTFT distribution, TTFT, throughput, one trend
    for caption, _, fig in comparison:
        assert collisions(fig) == [], caption
        assert untitled(fig) == [], caption


def test_every_colour_is_a_grey_and_nothing_is_rasterised(
        scorecards: dict[str, Drawn], comparison: Drawn) -> None:
    """Greyscale print: every colour any chart draws has r == g == b; vector only."""
    every = [svg for drawn in scorecards.values() for _, svg, _ in drawn]
    every += [svg for _, svg, _ in comparison]
    assert len(every) > 40
    for svg in every:
        for c in set(re.findall(r"#([0-9a-fA-F]{6})\b", svg)):
            assert c[0:2] == c[2:4] == c[4:6], c
        assert "<image" not in svg


def test_no_data_draws_nothing_and_warns_nothing(scorecards: dict[str, Drawn]) -> None:
    """A run where every request failed gives no empty frames (and, above, no warning)."""
    assert scorecards["nothing at all"] == []
    assert len(scorecards["no data"]) < len(scorecards["fixture"])


def test_the_fixture_draws_all_six_and_says_which_level(scorecards: dict[str, Drawn]) -> None:
    """The six charts; Figure 1 names the level of each of our rows, and the degradation
    is named as the methodology does (TPOT, not itl)."""
    drawn = scorecards["fixture"]
    assert len(drawn) == 6
    first = drawn[0][1]
    assert "ours, 1 stream alone (baseline)" in first
    assert "ours at 8 streams (max sustained)" in first
    assert "vs ours at 1 and 8 streams" in first
    assert "max sustained: 8 streams; above it TTFT p90 degraded first" in drawn[2][1]
    assert "whiskers: p1 to p99" in drawn[1][1] and "whiskers: p1 to p99" in drawn[1][0]
    assert "above it TPOT p90 degraded first" in scorecards["20 levels to 2^19"][2][1]


def test_a_per_gpu_headline_is_not_put_on_the_per_stream_axis(
        scorecards: dict[str, Drawn]) -> None:
    """Its row says why it is not drawn; no star is plotted."""
    _, svg, fig = scorecards["per-GPU headline"][0]
    assert "vendor headline 5,000 tokens/s per GPU" in svg and "not drawn" in svg
    assert not any(line.get_marker() == "*" for line in fig.axes[0].lines)


def _said(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.findobj(Text))


def test_every_limit_is_drawn_with_its_use_case(scorecards: dict[str, Drawn]) -> None:
    """Each SLO limit is a line, labelled on the plot or, where no label fits, in the
    legend; the voice agent's no-stall limit (ITL p99) too."""
    said = _said(scorecards["fixture"][-1][2])
    for words in ("voice agent 500 ms", "live suggestions 450 ms", "interactive chat 2,000 ms",
                  "live suggestions 40 ms", "interactive chat 200 ms", "voice agent 300 ms",
                  "reading speed 5.5 tokens/s", "every use case 1 %"):
        assert words in said, words
    said = _said(scorecards["crowded limits"][-1][2])
    for i in range(6):
        assert f"use case {i} {450 + 10 * i} ms" in said  # on the plot or in the legend
    assert "\\$\\frac{1}{0}\\$ <b>" in said  # a label from a tolerances file: never mathtext
    assert "<b>" not in scorecards["crowded limits"][-1][1]


def test_numbers_read_as_numbers() -> None:
    """No e-notation, no axis offset: thousands separated, powers of ten written out."""
    assert [fmt.chart_num(v) for v in (0, 0.5, 4.75, 13.8, 170, 1107, 20100, 1e7, 1.5e-4)] == [
        "0", "0.5", "4.75", "13.8", "170", "1,107", "20,100", "1×10⁷", "1.5×10⁻⁴"]
    assert fmt.level_span([1, 2, 64]) == "1–64 streams"
    assert fmt.level_span([1]) == "1 stream"


THROUGHPUT = "Output tokens per second at each concurrency level"


def _ramp_chart(drawn: Drawn) -> tuple[str, str, Figure]:
    return next(d for d in drawn if d[0].startswith(THROUGHPUT))


def test_the_vendor_queue_is_drawn_under_the_ramp_chart(scorecards: dict[str, Drawn]) -> None:
    """With a scrape: a panel under the ramp chart, sharing its levels, draws the mean
    running and waiting requests and a dash at the highest sample; the caption says how
    to read it."""
    caption, svg, fig = _ramp_chart(scorecards["vendor queue"])
    below = fig.axes[1]
    assert "requests running and waiting" in below.get_title(loc="left")
    lines = {ln.get_label(): ln for ln in below.lines}
    levels = [1, 2, 4, 8, 16, 32]
    running = lines["running in its engine, mean"]
    assert list(running.get_xdata()) == levels
    assert list(running.get_ydata()) == pytest.approx([0.9 * min(c, 8) for c in levels])
    waiting = lines["waiting in its queue, mean"]
    assert list(waiting.get_ydata()) == pytest.approx([0.4 * max(0, c - 8) for c in levels])
    highest = [ln for ln in below.lines if ln.get_marker() == "_"]
    assert [list(ln.get_ydata()) for ln in highest] == [
        [float(min(c, 8)) for c in levels], [0.5 * max(0, c - 8) for c in levels]]
    assert below.get_xlim() == pytest.approx(fig.axes[0].get_xlim())
    assert "waiting in its queue, mean" in svg and "dash: the highest sample" in svg
    assert "Under it, the vendor's own metrics" in caption


def test_without_a_scrape_nothing_is_drawn_and_the_caption_says_so(
        scorecards: dict[str, Drawn]) -> None:
    caption, _, fig = _ramp_chart(scorecards["fixture"])
    assert len(fig.axes) == 2  # the chart and its right-hand axis: no panel
    assert "No queue panel: the run did not scrape the vendor's metrics" in caption
    caption, _, fig = _ramp_chart(scorecards["vendor page without gauges"])
    assert len(fig.axes) == 2
    assert "exported no count of running or waiting requests" in caption
    assert ramp.vendor_queue(_as_read({"levels": {"2": {"phase": "ramp", "vendor": {
        "running": {"mean": float("nan"), "max": 3}, "waiting": {"mean": -1, "max": 2}}},
        "x": {"phase": "ramp"}, "4": "hostile", "8": {"phase": "ramp", "vendor": {
            "running": {"during_mean": 9, "mean": 1, "max": 3}}}}})) == {}
    # no sample while the level ran (a very short level): the mean of those around it
    assert ramp.vendor_queue(_as_read({"levels": {"2": {"phase": "ramp", "vendor": {
        "running": {"mean": 0.5, "max": 1, "during_mean": None}}}}})) == {
            2: {"running": (0.5, 1.0)}}
    # a soak level, or level 0, is no ramp level of the chart
    assert ramp.vendor_queue(_as_read({"levels": {"2": {"phase": "soak", "vendor": {
        "running": {"mean": 0.5, "max": 1}}}, "0": {"phase": "ramp", "vendor": {
            "running": {"mean": 0.5, "max": 1}}}}})) == {}


def _as_read(vendor_metrics: Mapping[str, Any]) -> VendorMetrics | None:
    """summary.json's `vendor_metrics` as the summary reads it."""
    return Summary.from_json({"vendor_metrics": vendor_metrics}).sections.vendor_metrics
