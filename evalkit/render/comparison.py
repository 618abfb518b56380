"""`evalkit compare`: load runs, compare them (`evalkit.review.compare`), render PDF + JSON.

The thin edge around the pure comparison: each run and its questionnaire go through the
same review pipeline as `evalkit report` (`evalkit.review.pipeline.review`: inputs read once,
scorecard built), overlaid charts are drawn, and `FILE.pdf` (PDF/A-3b, by the same
render kit) is written with `FILE.json` beside it. Vendors head the columns; the inputs'
bytes are attached under each vendor's name and their hashes printed, so a reviewer can
check the PDF against its data.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from markupsafe import Markup

import evalkit
from evalkit.analysis.summary import Level
from evalkit.analysis.thresholds import Tolerances
from evalkit.errors import UsageError
from evalkit.fmt import level_span
from evalkit.render.charts.kit import (
    STYLES,
    figure_title,
    legend_below,
    levels_axis,
    namespaced,
    new_figure,
    number_ticks,
    series_style,
    style,
    to_svg,
)
from evalkit.render.charts.voice import COMPARE_CAPTION, voice_overlay
from evalkit.render.comparerows import key_rows, voice_table
from evalkit.render.pagetext import claim_text, fit_badge
from evalkit.render.pdf import clip, render_html, render_pdf_box, sha256
from evalkit.render.sign import SigningKey, box_context, sign_pdf
from evalkit.review.compare import (
    DEFAULT_REGRESSION_TOLERANCE,
    Comparison,
    RunView,
    compare_runs,
)
from evalkit.review.fit import Fit
from evalkit.review.pipeline import Review, review
from evalkit.rundir.run import RunDir, open_run

MEASURED_USE_CASES = ("voice_agent", "live_suggestions", "interactive_chat", "batch")

#: Longest vendor name that groups runs (a run.json label or `--same-vendor NAME`).
VENDOR_NAME_MAX = 100
#: a use case a run's scorecard does not judge: its badge says so
NOT_JUDGED = Fit(None, "")

#: What the user can do when runs of one vendor were not grouped as one.
_HOW_TO_GROUP = (
    "Runs are one vendor when their questionnaires name the same vendor, else when they "
    "carry the same vendor label from `evalkit probe --vendor NAME`, else when model and "
    "endpoint URL are the same (a changed port or host name makes another vendor). "
    "Pair each run with its questionnaire (RUN_DIR=QUESTIONNAIRE.yaml), label the runs "
    "at probe time (evalkit probe --vendor NAME), or say that the given runs are one "
    "vendor: evalkit compare RUN_DIR... --same-vendor NAME.")


@dataclass(frozen=True)
class CompareInput:
    """One run directory, with the vendor's questionnaire when there is one."""

    run_dir: Path
    questionnaire: Path | None = None
    #: the run directory already read (`open_run`) by a caller that reviewed it (the demo,
    #: after its report): compared as read, not parsed again; None: read here
    run: RunDir | None = field(default=None, compare=False, repr=False)

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
    #: what reading the run directories found and repaired, one sentence each
    notes: tuple[str, ...] = ()


def vendor_name(value: Any) -> str | None:
    """`value` as a vendor name that groups runs, or None when it cannot be one.

    A name is a string of one line, at most VENDOR_NAME_MAX characters once white space
    is folded, with no control or format characters (terminal escapes, bidi overrides).
    """
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())
    if not name or len(name) > VENDOR_NAME_MAX or any(
            unicodedata.category(c) in ("Cc", "Cf") for c in name):
        return None
    return name


def load_view(item: CompareInput, tolerances: Tolerances | str | Path | None = None,
              same_vendor: str | None = None, done: Review | None = None,
              run: RunDir | None = None) -> RunView:
    """A run as the comparison sees it; its scorecard comes from the same review pipeline
    as reports (`evalkit.review.pipeline.review`, or `done` when the caller already reviewed it).

    Runs of the same vendor are grouped into a trend, named by the first of:
    `same_vendor` (`compare --same-vendor`), the vendor's name from its questionnaire,
    the vendor label run.json's `vendor` records (`probe --vendor`; ignored unless
    `vendor_name` accepts it), else the model at the endpoint it was probed at. `run` is
    the run directory already loaded, when `done` is not given.
    """
    done = done or review(item.run_dir, item.questionnaire, tolerances, run=run)
    run = done.run if done.run is not None else open_run(item.run_dir)
    questionnaire = done.questionnaire.parsed if done.questionnaire else None
    scorecard = done.scorecard
    meta = run.meta
    label = vendor_name(meta.vendor)
    # the questionnaire's name was checked with the questionnaire; white space is folded
    # so that it can meet the same name given as a label
    named = " ".join((questionnaire.vendor or "").split()) if questionnaire else None
    if same_vendor is not None:
        who, grouped_by = same_vendor, "--same-vendor"
    elif named:
        who, grouped_by = named, f"vendor named in questionnaire {item.questionnaire}"
    elif label:
        who, grouped_by = label, "vendor label in run.json, from probe --vendor"
    else:
        who = f"{meta.target.model or '?'} at {meta.target.base_url or '?'}"
        grouped_by = "model and endpoint URL: no questionnaire, no vendor label"
        if meta.vendor is not None:
            grouped_by += "; run.json's vendor ignored: not a short one-line string"
    started = meta.started_at or ""
    ttft_by_level = {level: run.stats.ttft_values("ramp", level)
                     for level in sorted(run.stats.levels) if run.stats.ttft.get(("ramp", level))}
    return RunView(
        label=f"{clip(who, 40)} {started[:10]}".strip(), target=who, started=started,
        suite_version=run.summary.sections.suite_version or meta.suite_version,
        settings={"prompt_tokens": meta.settings.prompt_tokens,
                  "output_tokens": meta.settings.output_tokens,
                  "levels": list(meta.settings.ramp.levels) if meta.settings.ramp else None,
                  "profile": meta.profile},
        summary=run.summary, scorecard=scorecard, ttft_by_level=ttft_by_level,
        grouped_by=grouped_by, voice_audio=meta.audio.digests if meta.audio else ())


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


#: a figure of a ramp level a chart draws (None: the level did not measure it)
Reading = Callable[[Level], float | None]


def _series(view: RunView, read: Reading) -> list[tuple[float, float]]:
    """(concurrency, figure) of each ramp level of the run that measured the figure."""
    ramp = view.measured.ramp if view.measured is not None else ()
    return [(float(lv.concurrency), number) for lv in ramp if (number := read(lv)) is not None]


def _overlay(views: Sequence[RunView], panels: Sequence[tuple[str, Reading, float]],
             ylabel: Sequence[str]) -> str | None:
    """One panel per metric, one line per run, styles that survive greyscale printing."""
    if not any(_series(v, panels[0][1]) for v in views):
        return None
    fig = new_figure(6.6, 2.6, ncols=len(panels))
    axes = fig.axes
    all_levels = sorted({c for v in views for c, _ in _series(v, panels[0][1])})
    for ax, (title, read, scale), label in zip(axes, panels, ylabel, strict=True):
        for i, view in enumerate(views):
            pts = _series(view, read)
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, [y * scale for y in ys], label=_plain(view.label),
                        **series_style(i))
        levels_axis(ax, all_levels)
        number_ticks(ax.yaxis)
        ax.set_title(title, loc="left")
        ax.set_ylabel(label)
    figure_title(fig, f"One line per run, {level_span(all_levels)}")
    legend_below(fig, *axes[0].get_legend_handles_labels())
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
    number_ticks(ax.xaxis)
    ax.set_xlabel("TTFT (ms)")
    ax.set_ylabel("share of requests")
    ax.set_title(f"TTFT (ms) of every request at {level} concurrent streams", loc="left")
    legend_below(fig, *ax.get_legend_handles_labels())
    return (f"TTFT of every request at {level} concurrent streams (the highest level every run "
            "measured), one line per run: the share of requests (up) that had their first token "
            "within a time (across). Further left is faster; a long flat step is a gap between "
            "requests served quickly and requests that waited."), to_svg(fig)


def _trend_chart(cmp: Comparison, target: str, idx: Sequence[int]) -> str | None:
    """Each key figure relative to the vendor's first run: a regression is a line going bad."""
    fig = new_figure(6.6, 2.4)
    ax = fig.axes[0]
    drawn = 0
    for row in cmp.rows:
        if row.figure.workload:  # the suite's key figures; a workload's shapes are rows
            continue
        pts = [(k, row.cells[i].value) for k, i in enumerate(idx)]
        known = [(k, v) for k, v in pts if v is not None]
        if len(known) < 2 or not known[0][1]:
            continue
        base = known[0][1]
        ax.plot([k for k, _ in known], [100 * v / base for _, v in known], label=row.figure.title,
                **series_style(drawn))
        drawn += 1
    if not drawn:
        return None
    ax.set_xticks(range(len(idx)), [cmp.runs[i].started[:10] or str(k) for k, i in
                                     enumerate(idx)])
    number_ticks(ax.yaxis)
    ax.set_ylabel("% of the first run")
    ax.set_title(_plain(f"{clip(target, 60)}: key figures (% of the first run)"), loc="left")
    legend_below(fig, *ax.get_legend_handles_labels())
    return to_svg(fig)


def _charts(cmp: Comparison) -> list[tuple[str, Markup]]:
    with style():  # the scorecard's fonts and sizes
        return _drawn_charts(cmp)


def _drawn_charts(cmp: Comparison) -> list[tuple[str, Markup]]:
    views = cmp.runs
    dist = _ttft_distribution(views)
    charts: list[tuple[str, str | None]] = [dist] if dist else []
    charts += [
        ("TTFT p50 and p90 at each concurrency level, one line per run; lower is better. A "
         "line turning up steeply is a queue filling at that level.",
         _overlay(views, [("TTFT p50 (ms)", lambda lv: lv.ttft_s.p50, 1000.0),
                          ("TTFT p90 (ms)", lambda lv: lv.ttft_s.p90, 1000.0)], ["ms", "ms"])),
        ("Output tokens per second at each concurrency level, one line per run: per stream "
         "p50 (left; higher is better) and all streams together (right), which rises until "
         "the endpoint is saturated.", _overlay(
            views, [("per stream p50 (tokens/s)", lambda lv: lv.stream_tokens_per_s.p50, 1.0),
                    ("all streams (tokens/s)", lambda lv: lv.aggregate_tokens_per_s, 1.0)],
            ["tokens/s per stream", "tokens/s, all streams"])),
    ]
    charts.append((COMPARE_CAPTION, voice_overlay([(v.label, v.voice) for v in views])))
    for target, idx in cmp.trends.items():
        charts.append((f"Trend: {target}: each key figure as a percentage of its value in the "
                       "vendor's first run, oldest run first; a figure moving the bad way is a "
                       "regression.", _trend_chart(cmp, target, idx)))
    # Markup: drawn by matplotlib; the run labels in legends are XML-escaped by its SVG
    # writer and kept out of mathtext by _plain
    return [(title, Markup(namespaced(svg, f"c{i}"))) for i, (title, svg) in enumerate(charts)
            if svg]


# --------------------------------------------------------------------------- document


def vendor_heads(views: Sequence[RunView]) -> list[dict[str, str]]:
    """Each run's column head: the vendor's name, and the run's date where one vendor has
    several runs (a trend) or the same name appears twice."""
    names = [clip(v.target, 40) for v in views]
    return [{"vendor": name, "date": v.started[:10] if names.count(name) > 1 else "",
             "label": v.label}
            for name, v in zip(names, views, strict=True)]


def _slug(text: str) -> str:
    """A vendor's name as part of a file name: lower-case ASCII words joined by dashes."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:40].strip("-")


def attachment_names(views: Sequence[RunView]) -> list[str]:
    """Each run's attachment prefix, named by vendor (and date), unique in the document."""
    out: list[str] = []
    for v in views:
        base = "-".join(filter(None, (_slug(v.target), _slug(v.started[:10])))) or "run"
        name, k = base, 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out.append(name)
    return out


def document_title(views: Sequence[RunView]) -> str:
    """The comparison's title: the vendors it compares, by name."""
    names = list(dict.fromkeys(clip(v.target, 40) for v in views))
    who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    what = "over time" if len(names) == 1 and len(views) > 1 else "compared"
    return f"Streaming capacity {what}: {who}"


def _changed_answers(cmp: Comparison) -> list[dict[str, str]]:
    """Questionnaire answers that changed between consecutive runs of one vendor."""
    changes = []
    for target, idx in cmp.trends.items():
        for a, b in itertools.pairwise(idx):
            card_a, card_b = cmp.runs[a].scorecard, cmp.runs[b].scorecard
            qa = card_a.questions if card_a is not None else {}
            qb = card_b.questions if card_b is not None else {}
            for q in sorted(set(qa) | set(qb)):
                before = qa[q].claimed if q in qa else None
                after = qb[q].claimed if q in qb else None
                if before != after:
                    changes.append({"target": target, "question": q,
                                    "before_run": cmp.runs[a].label,
                                    "after_run": cmp.runs[b].label,
                                    "before": claim_text(before, brief=True),
                                    "after": claim_text(after, brief=True)})
    return changes


def _fits(cmp: Comparison) -> list[tuple[str, list[str]]]:
    """For each use case, the vendors that fit it: the sentence procurement asks for."""
    names = [" ".join(filter(None, (h["vendor"], h["date"]))) for h in vendor_heads(cmp.runs)]
    return [(case.replace("_", " ").capitalize(),
             [names[i] for i, fit in enumerate(fits) if fit])
            for case, fits in cmp.use_cases.items()]


def build_context(cmp: Comparison, inputs: Sequence[CompareInput],
                  hashes: Mapping[str, str]) -> dict[str, Any]:
    """Everything the template shows, as plain strings and lists."""
    heads = vendor_heads(cmp.runs)
    dates = sorted(v.started[:10] for v in cmp.runs if v.started)
    return {
        "title": document_title(cmp.runs),
        "date": (dates[0] if dates and dates[0] == dates[-1]
                 else f"{dates[0]} to {dates[-1]}" if dates else ""),
        "heads": heads,
        "vendors": ", ".join(dict.fromkeys(h["vendor"] for h in heads)),
        "tool_version": evalkit.__version__,
        "runs": [{"label": v.label, "target": v.target, "started": v.started,
                  "suite": v.suite_version, "profile": v.settings.get("profile"),
                  "dir": str(item.run_dir), "questionnaire": str(item.questionnaire or "—"),
                  "verdict": v.scorecard.verdict.text if v.scorecard is not None else ""}
                 for v, item in zip(cmp.runs, inputs, strict=True)],
        "rows": key_rows(cmp.rows),
        "voice": voice_table(cmp),
        "statuses": sorted(cmp.statuses.items()),
        # each fit as the scorecard words it: how far it was tried ("fits up to 8 streams")
        "use_cases": [(k.replace("_", " ").capitalize(),
                       [fit_badge(uc.fit if v.scorecard is not None and (
                           uc := v.scorecard.use_cases.get(k)) else NOT_JUDGED)[1]
                        for v in cmp.runs])
                      for k in sorted(cmp.use_cases)],
        "fits": _fits(cmp),
        "trends": [(t, [cmp.runs[i].label for i in idx]) for t, idx in cmp.trends.items()],
        "judged": cmp.judged,
        "not_judged": [(clip(t, 80), clip(why, 600)) for t, why in sorted(cmp.not_judged.items())],
        "regressions": [g.sentence for g in cmp.regressions],
        "regression_targets": [g.target for g in cmp.regressions],
        "changes": _changed_answers(cmp),
        "left_out": cmp.left_out,
        "charts": _charts(cmp),
        "hashes": sorted(hashes.items()),
    }


def _quoted(name: str) -> str:
    """A vendor or endpoint name for a terminal message: quoted, clipped, escapes shown."""
    return repr(name if len(name) <= 80 else name[:80] + "…")


def require_judged_trend(cmp: Comparison, inputs: Sequence[CompareInput]) -> None:
    """A regression check (`--fail-on regression`) must have judged some vendor's trend.

    Raises UsageError, saying how each run was grouped and what to do, when no two runs
    are of one vendor, or when no vendor's runs have a key figure comparable in two of
    them. When some trends are judged and some not, it passes: `cmp.not_judged` says
    which were not.
    """
    if cmp.judged:
        return
    if not cmp.trends:
        grouping = "\n".join(
            f"  run {i + 1} ({item.run_dir}): {_quoted(v.target)} ({v.grouped_by})"
            for i, (v, item) in enumerate(zip(cmp.runs, inputs, strict=True)))
        n = len(cmp.runs)
        which = f"no two of the {n} runs given are" if n > 1 else "the one run given is not"
        raise UsageError(
            f"--fail-on regression has no trend to judge: {which} of one vendor, so no "
            f"regression could be found. Runs grouped as:\n{grouping}\n{_HOW_TO_GROUP}")
    runs = "\n".join(
        f"  {_quoted(t)} (runs {', '.join(str(i + 1) for i in cmp.trends[t])}): {why}"
        for t, why in cmp.not_judged.items())
    raise UsageError(
        "--fail-on regression has nothing to judge: no vendor has two runs with a key "
        f"figure that can be compared, so no regression could be found.\n{runs}\n"
        "Figures are compared only within one suite version, and load figures only with "
        "the same prompt and output lengths and ramp levels: probe again with the "
        "settings of the earlier run, or compare runs that match.")


def render_comparison(inputs: Sequence[CompareInput], out_pdf: Path,
                      tolerance: float = DEFAULT_REGRESSION_TOLERANCE,
                      tolerances: Tolerances | str | Path | None = None, html: bool = False,
                      same_vendor: str | None = None, require_trend: bool = False,
                      signing: SigningKey | None = None) -> CompareResult:
    """Compare runs and write `out_pdf` with `out_pdf.json` beside it (and HTML if asked).

    `same_vendor` names all runs as one vendor (`compare --same-vendor`). With
    `require_trend` (`--fail-on regression`) a comparison that judged no vendor's trend
    is a UsageError (see `require_judged_trend`), raised before anything is written.
    """
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise UsageError(f"--out {out_pdf}: the comparison file must end in .pdf")
    if not inputs:
        raise UsageError("give at least one run directory to compare")
    one_vendor = None
    if same_vendor is not None:
        one_vendor = vendor_name(same_vendor)
        if one_vendor is None:
            raise UsageError(f"--same-vendor {_quoted(same_vendor)}: give a vendor name of "
                             f"one line, at most {VENDOR_NAME_MAX} characters")
    reviews = [review(item.run_dir, item.questionnaire, tolerances, run=item.run)
               for item in inputs]
    runs = [done.run or open_run(item.run_dir) for done, item in zip(reviews, inputs,
                                                                      strict=True)]
    views = _unique_labels([load_view(item, tolerances, one_vendor, done)
                            for item, done in zip(inputs, reviews, strict=True)])
    # what reading each run directory found and repaired: on page one and the terminal
    notes = [f"run {i + 1} ({item.run_dir}): {note}"
             for i, (item, run) in enumerate(zip(inputs, runs, strict=True))
             for note in run.notes]
    cmp = compare_runs(views, tolerance)
    if require_trend:
        require_judged_trend(cmp, inputs)
    data = json.dumps(cmp.to_dict(), indent=2, allow_nan=False).encode() + b"\n"
    attachments = {"compare.json": data}
    # the bytes read and checked (from inside each run dir), named by vendor
    for prefix, run in zip(attachment_names(views), runs, strict=True):
        for name in ("summary.json", "summary.rebuilt.json"):
            if name in run.raw:
                attachments[f"{prefix}-{name}"] = run.raw[name]
    hashes = {name: sha256(blob) for name, blob in attachments.items()}
    context = {**build_context(cmp, inputs, hashes), **box_context(signing),
               "input_notes": [clip(n, 800) for n in notes]}
    html_text = render_html(context, "compare.html.j2")
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(data)
    if html:
        out_pdf.with_suffix(".html").write_text(html_text, encoding="utf-8")
    pdf, box = render_pdf_box(html_text, attachments)
    out_pdf.write_bytes(sign_pdf(pdf, signing, box) if signing else pdf)
    return CompareResult(out_pdf, json_path, cmp, tuple(notes))
