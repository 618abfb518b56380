"""The PDF scorecard: a run and a questionnaire in, a PDF with its evidence attached out.

    review(run_dir, questionnaire, tolerances)  evalkit.review.pipeline: inputs read once
    build_context(card, run, evidence)          pure: the page, from render.pagetext's words
    page_context (evalkit.render.drawn)         the template's context: report and verify
    render_html / render_drawn                  evalkit.render.pdf: escaped HTML, PDF/A-3b

Vendor text is untrusted: it is only ever escaped text (see evalkit.render.pdf). The PDF
carries run.json, summary.json, scorecard.json, the questionnaire and the records
(requests.jsonl.gz) as attachments, the very bytes that were judged, with a manifest
(`evalkit.render.evidence`), and prints their SHA-256, so a reviewer can check the
PDF against its data. The page reads the typed `Scorecard` (evalkit.review.scorecard),
so a renamed field is a type error, not a blank (a scorecard.json read back, as `verify`
does, is read once by `Scorecard.from_json`). Numbers are formatted by evalkit.fmt, field
names put into words by evalkit.render.words; raw names appear only in the appendix's
exact tables.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

import evalkit
from evalkit.analysis.summary import Sections, Summary, as_mapping, ramp_levels
from evalkit.analysis.summary import as_number as _num
from evalkit.analysis.summary_sections import Prefill, Ramp
from evalkit.errors import UsageError
from evalkit.fmt import fmt_ms, fmt_num, fmt_p, fmt_rate
from evalkit.provenance import short
from evalkit.questionnaire.schema import QUESTION_IDS
from evalkit.records import RequestRecord
from evalkit.render import words
from evalkit.render.charts import captions, kit, raster
from evalkit.render.charts import cost as cost_chart
from evalkit.render.charts import figures as figures_mod
from evalkit.render.charts import ramp as ramp_mod
from evalkit.render.charts.precision import precision_chart
from evalkit.render.connections import connection_text
from evalkit.render.costtext import cost_context, cost_line
from evalkit.render.drawn import PageStamp, page_context
from evalkit.render.evidence import evidence_files
from evalkit.render.findings import beside_outcomes, configuration_figures
from evalkit.render.measuredtext import measured_long, measured_text
from evalkit.render.pagetext import (
    LONG_TEXT,
    SHORT_TEXT,
    baseline_heading,
    check_rows,
    claim_text,
    command_text,
    fit_badge,
    fmt_outcomes,
    fmt_value,
    key_figures,
    prefill_text,
    provenance_text,
    rules,
    stopped_at,
    validity_text,
)
from evalkit.render.pdf import (
    AssetFetcher,
    clip,
    render_drawn,
    render_html,
    sha256,
)
from evalkit.render.precision import answers_figure, precision_intro, precision_rows
from evalkit.render.prompttext import prompt_text_box
from evalkit.render.ratelimits import rate_limits_text
from evalkit.render.sign import SigningKey, sign_pdf
from evalkit.render.workload import workload_context
from evalkit.review.measured import RateLimitsMeasured
from evalkit.review.pipeline import Review, review
from evalkit.review.rules import STATUSES
from evalkit.review.scorecard import QuestionCard, Scorecard
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.run import RunDir

#: Badge glyphs: a shape and a word per status, so greyscale print still tells them apart.
BADGES = {"ok": "✓", "unverified": "◐", "unanswered": "○", "unanswerable": "?",
          "unreconciled": "✗"}
RASTER_STREAMS = 40


@dataclass(frozen=True)
class ReportResult:
    """What `render_report` wrote, and what the renderer fetched while writing it."""

    pdf: Path
    scorecard_json: Path
    html: Path | None
    #: the scorecard, as written beside the PDF (`Scorecard.to_json`)
    scorecard: Scorecard
    sha256: dict[str, str]
    fetched: tuple[str, ...]
    refused: tuple[str, ...]
    #: what reading the run directory found and repaired, one sentence each
    notes: tuple[str, ...] = ()
    #: the signer's subject, when the PDF was signed
    signed_by: str | None = None


# --------------------------------------------------------------------------- input


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """Split `--fail-on a,b`; an unknown status is a UsageError (exit 2)."""
    if not text:
        return ()
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in names if s not in STATUSES]
    if unknown:
        raise UsageError(f"--fail-on: unknown status {', '.join(unknown)}; "
                         f"choose from {', '.join(STATUSES)}")
    return names


def nothing_to_judge(card: Scorecard) -> str | None:
    """Why a `--fail-on` gate would have nothing to judge (it must not pass silently)."""
    if card.review == "claims_only":
        return None  # claims are judged (every measured claim is unverified, and says so)
    if card.review in ("measurements_only", "empty"):
        return "no questionnaire was given, so there are no claims to judge"
    if card.run is None:
        return "no run was given"
    if card.run.validity == "invalid":
        reasons = card.run.validity_reasons
        return "the run is invalid" + (f" ({clip(reasons[0], 200)})" if reasons else "")
    if card.run.validity not in ("valid", "degraded"):
        return "the run states no validity (an older evalkit wrote it)"
    return None


def flagged(card: Scorecard, statuses: Sequence[str]) -> list[str]:
    """The questions whose status is one of `statuses`, e.g. ['Q2', 'Q6'], and
    'rate_limits' when the rate limits' row has one (other than unanswered)."""
    limits = card.rate_limits  # outside the verdict; an optional section unanswered is no flag
    return [q for q in QUESTION_IDS if card.question(q).status in statuses] + (
        ["rate_limits"] if limits and limits.status in statuses
        and limits.status != "unanswered" else [])


def chart_svgs(card: Scorecard, summary: Summary | None,
               records: Iterable[RequestRecord] | RecordDigest,
               slo_limits: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Markup]]:
    """Every chart there is data for, as (caption, inline svg); `records` may be given as
    their digest (what `open_run` keeps)."""
    digest = records if isinstance(records, RecordDigest) else RecordDigest.of(records)
    out: list[tuple[str, str | None]] = []
    q6 = card.question("Q6").claimed  # the vendor's Q6 answer, as scorecard.json says it
    claimed = q6.to_dict() if q6 is not None else {}
    panel = as_mapping(claimed.get("panel")) or claimed
    sections = summary.sections if summary is not None else Sections()
    out.append((captions.CLAIMS_CAPTION,
                figures_mod.claims_vs_measured(_num(claimed.get("headline")), panel,
                                          figures_mod.measured_rows(summary),
                                          headline_unit=claimed.get("headline_unit"))))
    samples = {level: {"ttft": digest.ttft_values("ramp", level),
                       "itl": digest.itl.get(level, [])} for level in digest.levels}
    levels = ramp_levels(summary)
    dist = ramp_mod.latency_distributions(samples)
    tpc = sections.connect.tokens_per_chunk.p50 if sections.connect else None
    out.append((captions.distributions_caption(fmt_num(tpc), boxes=dist is not None),
                dist or ramp_mod.latency_percentiles(levels)))
    ramp = sections.ramp or Ramp()
    vendor = summary.vendor_metrics if summary is not None else None  # the queue panel
    out.append((captions.throughput_caption(ramp.thresholds if sections.ramp else None, vendor),
                ramp_mod.throughput_vs_concurrency(levels, ramp.max_sustained_concurrency,
                                                 ramp.first_degraded, vendor)))
    pre = sections.prefill or Prefill()
    points = list(digest.prefill_points)
    if pre.lengths_from == "counted_prompt_tokens":  # the fit's lengths are ours
        points = [(c, t) for c, (_, t) in zip(digest.prefill_counted, points, strict=True)
                  if math.isfinite(c)]
    if not points:
        points = [(p.prompt_tokens, p.ttft_s) for p in pre.points
                  if p.prompt_tokens and p.ttft_s]
    out.append((captions.PREFILL_CAPTION,
                figures_mod.prefill_fit(points, pre.overhead_s, pre.tokens_per_s, pre.r2)))
    if digest.raster:
        top = max(digest.raster)
        streams = [raster.Stream(t0, times, outcome, top)
                   for t0, times, outcome in digest.raster_streams(top)]
        out.append((captions.raster_caption(len(streams), top), raster.stream_raster(streams)))
    out.append((captions.USE_CASE_CAPTION,
                figures_mod.use_case_fit(levels, slo_limits, card.tolerances)))
    out.append((captions.PRECISION_CAPTION,
                precision_chart(summary.precision if summary is not None else None)))
    return [(caption, Markup(kit.namespaced(svg, f"fig{i}")))
            for i, (caption, svg) in enumerate(out) if svg]


def slo_limits(card: Scorecard) -> dict[str, Mapping[str, Any]]:
    """Each use case's SLO profile as the scorecard was judged with it."""
    out = card.slo_profiles
    for name, uc in card.use_cases.items():
        if uc.profile:
            out[name] = uc.profile
    return out


def _cost_section(card: Scorecard) -> dict[str, Any]:
    """The "What it costs" section: its tables, and its chart (None without costs)."""
    labels = {name: str(p.get("label") or name.replace("_", " "))
              for name, p in slo_limits(card).items() if not p.get("throughput_only")}
    svg = cost_chart.cost_vs_concurrency(card.cost.to_json(), labels) if card.cost else None
    return {"cost": cost_context(card.cost, labels) if card.cost else None,
            "cost_chart": Markup(kit.namespaced(svg, "cost")) if svg else None,
            "cost_caption": cost_chart.COST_CAPTION}


def _suite_words(version: Any) -> str:
    """The suite a run followed, as page one says it; an imported run followed none of ours."""
    text = clip(version or "?", 20)
    tool = text.removeprefix("import:")
    if tool != text:
        return f" (imported from {tool}: not evalkit's suite)"
    return f" (suite v{text})"


def _row(qid: str, q: QuestionCard, measured: str) -> dict[str, Any]:
    """One row of page one's questions table (and its answer in Appendix E)."""
    return {
        "id": qid, "title": clip(q.title, 80),
        "status": q.status, "badge": BADGES.get(q.status, "!"),
        "gap": q.finding == "gap",
        "claimed": claim_text(q.claimed, brief=True),
        "measured": measured,
        "reason": clip(q.reason, 3 * SHORT_TEXT),
        "claimed_long": claim_text(q.claimed, brief=False),
        "measured_long": measured_long(q.measured),
        "reason_long": clip(q.reason, LONG_TEXT),
        "tolerance": words.tolerance(clip(q.tolerance, SHORT_TEXT)) if q.tolerance else "",
    }


def build_context(card: Scorecard, run: RunDir | None,
                  evidence: Mapping[str, str], charts: bool = True,
                  stamp: PageStamp | None = None) -> dict[str, Any]:
    """Everything the template shows, as plain strings and lists (no I/O); without
    `charts` none is drawn, the costly part. `stamp`: what the page prints that is not
    evidence (`evalkit.render.drawn`; None: drawn now, by this evalkit)."""
    stamp = stamp or PageStamp.now(signed=False)
    meta = run.meta if run else RunMeta()
    summary = run.summary if run else None
    digest = run.stats if run else RecordDigest()
    questions = [_row(qid, card.question(qid), measured_text(
        card.question(qid).measured, summary)) for qid in QUESTION_IDS]
    limits = card.rate_limits  # shown when claimed or met: no claim and no 429 is no news
    rate_limits = None if limits is None or not (
        limits.status != "unanswered" or (isinstance(limits.measured, RateLimitsMeasured)
                                          and limits.measured.rejected_429)
    ) else _row("rate-limits", limits, rate_limits_text(limits.measured))
    use_cases = []
    for name, uc in card.use_cases.items():
        css, label = fit_badge(uc.fit)
        use_cases.append({"name": clip(uc.label or name.replace("_", " "), 60),
                          "css": css, "label": label,
                          "reason": clip(uc.fit.reason, 4 * SHORT_TEXT)})
    figures = key_figures(summary)
    lead: list[tuple[str, str]] = []
    if run is not None:
        lead.append(("Run validity", validity_text(card.run)))
    run_status = meta.status
    when = stopped_at(meta.started_at, digest) if run is not None else None
    if run is not None and run_status == "running":
        top = f"; the last level it reached ({max(digest.levels)} streams) may be " \
            "incomplete" if digest.levels else ""
        lead.append(("Run status", f"CUT{' ' + when if when else ''}: the probe stopped "
                     "without writing the run up (killed, or still running when this report "
                     f"was made); the figures cover only the {digest.n:,} requests it "
                     f"recorded{top}"))
    elif run is not None and run_status not in (None, "complete", "merged"):
        lead.append(("Run status", f"{clip(run_status, 30).upper()}"
                     f"{' ' + when if when else ''}: the figures cover only "
                     "what was measured before the run stopped"))
    if run is not None:
        lead.append(("Suite profile", fmt_value(meta.profile)
                     + _suite_words(meta.suite_version)))
    figures = lead + figures + configuration_figures(summary)
    if (row := answers_figure(summary, card.answers, card.swap)) is not None:
        figures.append(row)
    if summary and (line := cost_line(card.cost)) is not None:
        figures.append(line)
    work = workload_context(card.workload, card.trace, card.sources, slo_limits(card), charts)
    if run is not None:
        figures.append(work["workload_line"])
    reading = card.reading_speed
    if summary and reading:
        pct, speed = reading.percentile, reading.reading_speed_tokens_per_s
        value = fmt_value(reading.value)
        if reading.fit.lower_bound and reading.value is not None:
            value = f"≥ {value} (the highest level tried)"
        elif reading.fit.fit is None:
            value = "not judged"
        share = f"{pct[1:]} % of" if pct[1:].isdigit() else "most"
        known = _num(speed)  # plain() says an int and a float differently: as before
        rate = f"{words.plain(known)} tok/s" if known is not None else fmt_rate(speed)
        figures.append(("Streams at reading speed",
                        f"{value}; judged on whether {share} streams receive at least {rate}"))
    if run is None:  # claims-only: the vendor's own words for what was reviewed
        model = fmt_value(card.model) + " (as stated by the vendor)"
        endpoint = fmt_value(card.endpoint) + " (as stated by the vendor)"
    else:
        model = clip(meta.target.model or "—", SHORT_TEXT)
        endpoint = clip(meta.target.base_url or "—", SHORT_TEXT)
    started, ended = meta.started_at, meta.ended_at
    stand = card.run.stands_in_for if card.run else None  # free-form, from run.json
    # what reading the run directory repaired comes first: the figures rest on it
    notices = [clip(note, 600) for note in (run.notes if run else ())]
    if stand:
        notices.append(f"A demonstration: evalkit's built-in reference endpoint played this "
                       f"vendor's endpoint ({clip(stand.get('model') or '—', 60)} at "
                       f"{clip(stand.get('endpoint') or '—', 80)}). Every figure was measured "
                       "on the reference endpoint, not on the vendor's.")
    if card.swap:  # named on page one, wherever it happened
        notices.append(clip(card.swap, 600))
    if card.run and card.run.target_mismatch:
        notices.append("The run does not match the questionnaire: "
                       f"{clip(card.run.target_mismatch, 300)}. Claims that need a "
                       "measurement are unverified.")
    return {
        "vendor": clip(card.vendor, SHORT_TEXT),
        "model": model, "endpoint": endpoint,
        "run_invalid": card.run is not None and card.run.validity == "invalid",
        "notices": notices,
        "prompt_text": prompt_text_box(summary) if run is not None else None,
        # page one's "what this run did not verify": each with the run that would
        "not_verified": [(q["id"], q["reason"]) for q in questions
                         if q["status"] == "unverified"]
        + ([("Rate limits", rate_limits["reason"])]
           if rate_limits and rate_limits["status"] == "unverified" else []),
        "date": clip(started or stamp.drawn_at, 40),
        "streaming_ready": card.verdict.streaming_ready,
        "verdict": clip(card.verdict.text or "No verdict was drawn.", LONG_TEXT),
        "questions": questions,
        "rate_limits": rate_limits,
        "use_cases": use_cases,
        "key_figures": figures,
        "charts": chart_svgs(card, summary, digest, slo_limits(card)) if charts else [],
        **_cost_section(card), **work,
        "tool_version": clip(stamp.tool_version, 40),
        "suite_version": clip(meta.suite_version or evalkit.SUITE_VERSION, 20),
        "run_tool_version": clip(meta.tool_version or "—", 20),
        "tool_digest": short(stamp.tool_sha256),
        "run_provenance": provenance_text(meta.provenance),
        "run_command": command_text(meta.provenance),
        "profile": fmt_value(meta.profile or meta.config.profile),
        "client_host": clip(words.client_host(meta.client), SHORT_TEXT),
        "run_times": f"{fmt_value(started)} to {fmt_value(ended)}"
                     + (f" ({fmt_value(meta.status)})" if meta.status else "")
                     + (f"; last request ended {when}" if when else ""),
        # the document as written: the template reads its keys (`summary.baseline` of a
        # Summary would be the typed level, and the page must not change)
        "summary": summary.to_json() if summary else {},
        "levels": ramp_levels(summary),
        "fmt_p": fmt_p, "fmt_rate": fmt_rate, "fmt_ms": fmt_ms, "fmt_num": fmt_num,
        "in_ms": lambda s: fmt_num(s * 1000) if _num(s) is not None else "—",
        # the ramp's metric keys (ttft, itl, admission) as the methodology names them
        "metric_names": lambda ms: ", ".join(
            {"ttft": "TTFT", "itl": "TPOT", "tpot": "TPOT", "admission": "rejections",
             "incomplete": "cut streams", "timeout": "timeouts", "error": "errors"}.get(
                str(m), clip(m, 20)) for m in (ms if isinstance(ms, list) else [])),
        "fmt_value": fmt_value, "fmt_outcomes": fmt_outcomes, "beside": beside_outcomes,
        "connection_text": connection_text,
        "outcomes": sorted(digest.outcomes.items()),
        "n_records": digest.n,
        "skipped_lines": run.skipped_lines if run else 0,
        # records read but no evidence of this run (foreign, repeated, impossible)
        "left_out": (run.evidence.total - run.evidence.counts.get("not-a-record", 0)
                     if run and run.evidence else 0),
        "summary_source": (clip(run.rebuilt, 600) if run and run.rebuilt
                           else "summary.json, as the probe wrote it, checked against the "
                                "records" if run else ""),
        "checks": check_rows(summary),
        "errors": [(clip(msg, 200), n) for msg, n in digest.errors.most_common(10)],
        "evidence": sorted(evidence.items()),
        "requests_sha256": run.requests_sha256 if run else None,
        "tolerances": sorted((k, v) for k, v in card.tolerances.items() if k != "slo_profiles"),
        "slo_profiles": sorted(card.slo_profiles.items()),
        "has_run": run is not None,
        "rules": rules(summary),
        "precision_rows": precision_rows(summary),
        "precision_intro": precision_intro(summary),
        "prefill_line": prefill_text(summary.sections.prefill if summary else None),
        "baseline_heading": baseline_heading(summary.sections.baseline if summary else None),
        "title_date": clip(started or stamp.drawn_at, 40)[:10],
    }


# --------------------------------------------------------------------------- render


def scorecard_bytes(card: Scorecard) -> bytes:
    """The exact bytes written beside the PDF and attached inside it."""
    return (json.dumps(card.to_json(), indent=2, ensure_ascii=False, sort_keys=False)
            + "\n").encode()


def write_scorecard(card: Scorecard, run: RunDir | None,
                    questionnaire: tuple[str, bytes] | None, out_pdf: Path,
                    html: bool = False, signing: SigningKey | None = None,
                    source_name: str | None = None,
                    panel: Mapping[str, Any] | None = None) -> ReportResult:
    """Write PDF, FILE.json beside it and optionally FILE.html, from a built scorecard.

    The PDF attaches the evidence and its manifest (`evalkit.render.evidence`); with
    `signing` it is signed (`evalkit.render.sign`) before anything is written. `panel` is
    our own panel Q6 was judged beside, attached for `verify` (`OurPanel.to_panel`).
    """
    sc_bytes = scorecard_bytes(card)
    stamp = PageStamp.now(signed=signing is not None)
    files = evidence_files(run, sc_bytes, questionnaire, source_name=source_name, panel=panel,
                           page=stamp.to_manifest())
    evidence = {name: sha256(data) for name, data in files.files.items()}
    text = render_html(page_context(card, run, evidence, stamp, files.manifest))
    fetcher = AssetFetcher()
    drawn = render_drawn(text, files.files, fetcher)
    pdf = drawn.pdf
    if signing is not None:
        pdf = sign_pdf(pdf, signing, drawn.signature_box)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    out_pdf.write_bytes(pdf)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(sc_bytes)
    html_path = None
    if html:
        html_path = out_pdf.with_suffix(".html")
        html_path.write_text(text, encoding="utf-8")
    return ReportResult(out_pdf, json_path, html_path, card, evidence,
                        tuple(fetcher.calls), tuple(fetcher.refused), run.notes if run else (),
                        signing.subject if signing else None)


def render_report(run_dir: Path | None, questionnaire_path: Path | None, out_pdf: Path,
                  html: bool = False, tolerances: Any = None,
                  signing: SigningKey | None = None, panel: Any = None) -> ReportResult:
    """The whole report: read the inputs, reconcile them, write PDF + FILE.json (+ HTML).

    Either input may be omitted (a claims-only or a measurement-only review), not both.
    `tolerances` is a `Tolerances`, a path to an override file, or None for the defaults.
    `panel` finds our own production panel for a questionnaire (`review`'s).
    """
    if run_dir is None and questionnaire_path is None:
        raise UsageError("give --run DIR, --questionnaire FILE, or both")
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise UsageError(f"--out {out_pdf}: the report file must end in .pdf "
                         "(its scorecard.json is written beside it as FILE.json)")
    inputs = [Path(p).resolve() for p in (questionnaire_path, tolerances) if
              isinstance(p, str | Path)]
    if run_dir is not None:
        inputs += [(Path(run_dir) / n).resolve() for n in ("run.json", "summary.json")]
    for written in (out_pdf, out_pdf.with_suffix(".json"), out_pdf.with_suffix(".html")):
        if written.resolve() in inputs:
            raise UsageError(f"--out {out_pdf} would overwrite the input {written}; "
                             "write the report somewhere else")
    done = review(Path(run_dir) if run_dir is not None else None,
                  Path(questionnaire_path) if questionnaire_path is not None else None,
                  tolerances, panel=panel)
    return write_review(done, out_pdf, html, signing)


def write_review(done: Review, out_pdf: Path, html: bool = False,
                 signing: SigningKey | None = None) -> ReportResult:
    """Write a review's PDF and FILE.json, attaching the inputs' bytes as they were read."""
    q = done.questionnaire
    return write_scorecard(done.card, done.run, (q.name, q.data) if q else None,
                           out_pdf, html, signing, q.path.name if q else None,
                           done.panel.to_panel() if done.panel is not None else None)
