"""The scorecard's pages as one typed value: `build_page(card, run)` -> a frozen `Page`.

    build_page(card, run, evidence, stamp, manifest)   -> Page (pure but for the charts'
                                                          drawing; no file is read)
    page_fields(page)                                   the template's names: Page's fields

The template (templates/scorecard.html.j2) reads the Page's fields and nothing else;
`report` draws a Page and `verify` draws the same Page again from the evidence
(`evalkit.verify.redraw`), so what a page prints is this value. Each section is built by
a module of its own: the questions (`evalkit.render.questions`), the key figures
(`evalkit.render.keyfigures`), the charts (`evalkit.render.charts.listed`), precision
(`evalkit.render.precision`), the workload and cost (`evalkit.render.workload`,
`evalkit.render.costtext`), the appendices (`evalkit.render.appendix`,
`evalkit.render.rawtables`). Vendor text is only ever escaped text (the template
autoescapes); only the charts' SVGs, drawn from numbers, are Markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from markupsafe import Markup

from evalkit.analysis.jsonread import Json
from evalkit.render.appendix import Appendix, appendix
from evalkit.render.charts import cost as cost_chart
from evalkit.render.charts import kit
from evalkit.render.charts.listed import Chart, ChartInputs, draw_charts
from evalkit.render.costtext import CostSection, cost_context
from evalkit.render.drawn import PageStamp
from evalkit.render.evidence import records_note
from evalkit.render.keyfigures import key_figures, slo_limits
from evalkit.render.pagetext import LONG_TEXT, SHORT_TEXT, fmt_value, rules, stopped_at
from evalkit.render.pdf import SIGNATURE_ANCHOR, SIGNATURE_BOX_MM, clip
from evalkit.render.precision import PrecisionSection, precision_section
from evalkit.render.prompttext import PromptTextBox, prompt_text_box
from evalkit.render.questions import (
    QuestionRow,
    UseCaseRow,
    not_verified,
    question_rows,
    rate_limits_row,
    use_case_rows,
)
from evalkit.render.rawtables import RawTables, raw_tables
from evalkit.render.voice import VoicePage, voice_page, voice_rules
from evalkit.render.workload import TraceTable, WorkloadTables, workload_context
from evalkit.review.scorecard import Scorecard
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.run import RunDir

Rows = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Page:
    """Everything a scorecard's pages print, as the template reads it."""

    # page one's head, the PDF's properties and every footer
    vendor: str
    model: str
    endpoint: str
    date: str
    title_date: str
    streaming_ready: bool
    verdict: str
    run_invalid: bool
    #: page one's notices: what reading the run repaired, a demonstration, a swap, ...
    notices: tuple[str, ...]
    prompt_text: PromptTextBox | None
    rules: Rows
    key_figures: Rows
    questions: tuple[QuestionRow, ...]
    rate_limits: QuestionRow | None
    not_verified: Rows
    use_cases: tuple[UseCaseRow, ...]
    #: "What it costs" (`evalkit.render.costtext.cost_context`; None without costs)
    cost: CostSection | None
    cost_chart: Markup | None
    cost_caption: str
    #: "Your workload" (`evalkit.render.workload.workload_context`'s sections)
    figure_sources: Rows
    workload: WorkloadTables | None
    trace: TraceTable | None
    workload_chart: Markup | None
    workload_caption: str
    charts: tuple[Chart, ...]
    precision: PrecisionSection | None
    #: "Realtime voice calls" (`evalkit.render.voice`; None: no voice run)
    voice: VoicePage | None
    appendix: Appendix
    raw_tables: RawTables
    #: page one's reserved signature box (mm), None on a page that will not be signed
    signature_box: tuple[float, float] | None
    signature_anchor: str


def page_fields(page: Page) -> dict[str, object]:
    """The template's context: the Page's fields by name."""
    return {f.name: getattr(page, f.name) for f in fields(page)}


def _suite_words(version: str | None) -> str:
    """The suite a run followed, as page one says it; an imported run followed none of ours."""
    text = clip(version or "?", 20)
    tool = text.removeprefix("import:")
    if tool != text:
        return f" (imported from {tool}: not evalkit's suite)"
    return f" (suite v{text})"


def _run_lead(card: Scorecard, run: RunDir, when: str | None) -> list[tuple[str, str]]:
    """Page one's first key figures: the run's validity, status and profile."""
    from evalkit.render.pagetext import validity_text

    meta, digest = run.meta, run.stats
    lead = [("Run validity", validity_text(card.run))]
    if meta.status == "running":
        top = f"; the last level it reached ({max(digest.levels)} streams) may be " \
            "incomplete" if digest.levels else ""
        lead.append(("Run status", f"CUT{' ' + when if when else ''}: the probe stopped "
                     "without writing the run up (killed, or still running when this report "
                     f"was made); the figures cover only the {digest.n:,} requests it "
                     f"recorded{top}"))
    elif meta.status not in (None, "complete", "merged"):
        lead.append(("Run status", f"{clip(meta.status, 30).upper()}"
                     f"{' ' + when if when else ''}: the figures cover only "
                     "what was measured before the run stopped"))
    lead.append(("Suite profile", fmt_value(meta.profile) + _suite_words(meta.suite_version)))
    return lead


def _notices(card: Scorecard, run: RunDir | None, records: Json) -> tuple[str, ...]:
    """Page one's notices: what reading the run directory repaired comes first (the
    figures rest on it), then a demonstration, a swapped model, a mismatched target, and
    where the records live when they are not attached."""
    notices = [clip(note, 600) for note in (run.notes if run else ())]
    stand = card.run.stands_in_for if card.run else None  # from run.json
    if stand:
        notices.append(f"A demonstration: evalkit's built-in reference endpoint played this "
                       f"vendor's endpoint ({clip(stand.model or '—', 60)} at "
                       f"{clip(stand.endpoint or '—', 80)}). Every figure was measured "
                       "on the reference endpoint, not on the vendor's.")
    if card.swap:  # named on page one, wherever it happened
        notices.append(clip(card.swap, 600))
    if card.run and card.run.target_mismatch:
        notices.append("The run does not match the questionnaire: "
                       f"{clip(card.run.target_mismatch, 300)}. Claims that need a "
                       "measurement are unverified.")
    if note := records_note(records):  # page one says where the records live
        notices.append(note)
    return tuple(notices)


def build_page(card: Scorecard, run: RunDir | None,
               evidence: Mapping[str, str] | None = None, stamp: PageStamp | None = None,
               manifest: Mapping[str, Json] | None = None, charts: bool = True) -> Page:
    """The pages of `card` judged on `run` (None: a claims-only review). `evidence`: the
    attachments' SHA-256 by name; `stamp`: what the page prints that is not evidence (None:
    drawn now, by this evalkit, unsigned); `manifest`: manifest.json, which says where the
    records live; without `charts` none is drawn (the costly part)."""
    stamp = stamp or PageStamp.now(signed=False)
    meta = run.meta if run else RunMeta()
    summary = run.summary if run else None
    digest = run.stats if run else RecordDigest()
    when = stopped_at(meta.started_at, digest) if run is not None else None
    questions = question_rows(card, summary)
    limits = rate_limits_row(card)
    profiles = slo_limits(card)
    work = workload_context(card.workload, card.trace, card.sources, profiles, charts)
    lead = _run_lead(card, run, when) if run is not None else []
    if run is None:  # claims-only: the vendor's own words for what was reviewed
        model = fmt_value(card.model) + " (as stated by the vendor)"
        endpoint = fmt_value(card.endpoint) + " (as stated by the vendor)"
    else:
        model = clip(meta.target.model or "—", SHORT_TEXT)
        endpoint = clip(meta.target.base_url or "—", SHORT_TEXT)
    labels = {name: p.shown_as(name) for name, p in profiles.items() if not p.throughput_only}
    svg = cost_chart.cost_vs_concurrency(card.cost, labels) if card.cost else None
    records = (manifest or {}).get("records")
    attached = records.get("attached_as") if isinstance(records, Mapping) else None
    date = clip(meta.started_at or stamp.drawn_at, 40)
    return Page(
        vendor=clip(card.vendor, SHORT_TEXT), model=model, endpoint=endpoint,
        date=date, title_date=date[:10],
        streaming_ready=card.verdict.streaming_ready,
        verdict=clip(card.verdict.text or "No verdict was drawn.", LONG_TEXT),
        run_invalid=card.run is not None and card.run.validity == "invalid",
        notices=_notices(card, run, records),
        prompt_text=prompt_text_box(summary.sections.prompt_text) if summary else None,
        rules=(rules(summary)[0], *voice_rules(summary.voice)) if summary and summary.voice
        else tuple(rules(summary)),
        key_figures=key_figures(card, summary, lead, work.line if run else None),
        questions=questions, rate_limits=limits,
        not_verified=not_verified(questions, limits),
        use_cases=use_case_rows(card),
        cost=cost_context(card.cost, labels) if card.cost else None,
        cost_chart=Markup(kit.namespaced(svg, "cost")) if svg else None,
        cost_caption=cost_chart.COST_CAPTION,
        figure_sources=work.figure_sources, workload=work.workload, trace=work.trace,
        workload_chart=work.chart, workload_caption=work.caption,
        charts=draw_charts(ChartInputs(card, summary, digest, profiles)) if charts else (),
        precision=precision_section(summary.sections.precision) if summary else None,
        voice=voice_page(summary.voice) if summary else None,
        appendix=appendix(card, run, evidence or {}, stamp, when, attached),
        raw_tables=raw_tables(summary),
        signature_box=SIGNATURE_BOX_MM if stamp.signature_box else None,
        signature_anchor=SIGNATURE_ANCHOR)
