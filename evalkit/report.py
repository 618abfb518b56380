"""The PDF scorecard: a run and a questionnaire in, a PDF with its evidence attached out.

    review(run_dir, questionnaire, tolerances)   evalkit.review: inputs read once, scorecard
    build_context(scorecard, run, evidence)      pure: the numbers and words the page shows
    render_html / render_pdf                     evalkit.render: escaped HTML, PDF/A-3b

Vendor text is untrusted: it is only ever escaped text (see evalkit.render). The PDF
carries run.json, summary.json, scorecard.json and the questionnaire as attachments,
the very bytes that were judged, and prints their SHA-256, so a reviewer can check the
PDF against its data. Numbers are formatted by evalkit.fmt, field names put into words
by evalkit.words; raw names appear only in the appendix's exact tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from markupsafe import Markup

import evalkit
from evalkit import charts, words
from evalkit.errors import UsageError
from evalkit.fmt import (
    ci_text,
    fmt_ms,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pct_ci,
    fmt_rate,
    n_mark,
)
from evalkit.fmt import num as _num
from evalkit.questionnaire import QUESTION_IDS, QUESTION_TITLES
from evalkit.reconcile import STATUSES
from evalkit.records import RequestRecord
from evalkit.render import (
    TEMPLATES_DIR,
    AssetFetcher,
    clip,
    printable,
    render_html,
    render_pdf,
    sha256,
)
from evalkit.review import RecordFile, Review, RunData, load_run, review
from evalkit.runcheck import RecordDigest

#: Names other modules and tests reach through `evalkit.report` (they moved to the render
#: kit, the review pipeline and fmt): kept, so `report.X` keeps working.
__all__ = ["TEMPLATES_DIR", "AssetFetcher", "RecordFile", "ReportResult", "RunData",
           "ci_text", "clip", "fmt_ms", "fmt_num", "fmt_p", "fmt_pct", "fmt_rate", "load_run",
           "printable", "render_html", "render_pdf", "render_report", "sha256", "write_scorecard"]

#: Badge glyphs: a shape and a word per status, so greyscale print still tells them apart.
BADGES = {"ok": "✓", "unverified": "◐", "unanswered": "○", "unanswerable": "?",
          "unreconciled": "✗"}
#: Page one shows this much of any vendor string; the appendix shows up to the long limit.
SHORT_TEXT, LONG_TEXT = 110, 4000
RASTER_STREAMS = 40


@dataclass(frozen=True)
class ReportResult:
    """What `render_report` wrote, and what the renderer fetched while writing it."""

    pdf: Path
    scorecard_json: Path
    html: Path | None
    scorecard: dict[str, Any]
    sha256: dict[str, str]
    fetched: tuple[str, ...]
    refused: tuple[str, ...]
    #: what reading the run directory found and repaired, one sentence each
    notes: tuple[str, ...] = ()


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


def nothing_to_judge(scorecard: Mapping[str, Any]) -> str | None:
    """Why a `--fail-on` gate would have nothing to judge (it must not pass silently)."""
    run = _map(scorecard.get("run"))
    if scorecard.get("review") == "claims_only":
        return None  # claims are judged (every measured claim is unverified, and says so)
    if scorecard.get("review") in ("measurements_only", "empty"):
        return "no questionnaire was given, so there are no claims to judge"
    if not run:
        return "no run was given"
    if run.get("validity") == "invalid":
        reasons = run.get("validity_reasons") or []
        return "the run is invalid" + (f" ({clip(reasons[0], 200)})" if reasons else "")
    if run.get("validity") not in ("valid", "degraded"):
        return "the run states no validity (an older evalkit wrote it)"
    return None


def flagged(scorecard: Mapping[str, Any], statuses: Sequence[str]) -> list[str]:
    """The questions whose status is one of `statuses`, e.g. ['Q2', 'Q6']."""
    qs = scorecard.get("questions") or {}
    return [q for q in QUESTION_IDS if (qs.get(q) or {}).get("status") in statuses]


# --------------------------------------------------------------------------- formatting


def _map(x: Any) -> Mapping[str, Any]:
    """x if it is a mapping, else an empty one: input JSON may hold anything anywhere."""
    return x if isinstance(x, Mapping) else {}


def fmt_outcomes(outcomes: Any) -> str:
    """Outcome counts without the zeros: 'ok 12 · rejected 3'."""
    parts = [f"{k} {fmt_value(v)}" for k, v in _map(outcomes).items() if v]
    return " · ".join(parts) or "—"


#: Left out of page one's short form (they stay in the appendix): provenance detail.
BRIEF_SKIP = frozenset({"evidence", "notes", "panel_url", "metrics_url", "source_url",
                        "reconciliation", "capacity_model", "export", "headline_unit"})


def _brief_key(key: Any) -> str:
    """A field name as words that wrap in a narrow column (`ttft_p50_ms` → `ttft p50 ms`);
    the appendix and scorecard.json keep the exact names."""
    return str(key).replace("tokens_per_s", "tok/s").replace("_", " ")


def fmt_value(value: Any, limit: int = SHORT_TEXT, brief: bool = False) -> str:
    """A claimed or measured value (any JSON) as one line of plain text.

    `brief` (page one) leaves out provenance detail, duplicate aliases and cuts each
    string short; the appendix prints the long form.
    """
    if value is None or value == "" or value == {} or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        v = _num(value)
        if v is not None and v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return fmt_num(value)
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items() if v is not None and v != ""]
        if brief:
            items = [(k, v) for k, v in items if k not in BRIEF_SKIP
                     and not (k == "panel" and "output_tokens_per_s" in value)]
        parts = []
        for k, v in items:
            inner = fmt_value(v, 60 if brief else limit, brief)
            k = _brief_key(k) if brief else k
            parts.append(f"{k} ({inner})" if isinstance(v, Mapping) else f"{k}: {inner}")
        return clip("; ".join(parts) or "—", limit)
    if isinstance(value, list | tuple):
        return clip(", ".join(fmt_value(v, limit, brief) for v in value), limit)
    return clip(str(value), 60 if brief else limit)


# --------------------------------------------------------------------------- context


def _levels(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    levels = _map(summary.get("ramp")).get("levels")
    return [lv for lv in levels if isinstance(lv, dict)] if isinstance(levels, list) else []


def _load_level(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The level the 'under load' figures come from: max sustained, else the highest."""
    levels = _levels(summary)
    if not levels:
        return None
    best = _map(summary.get("ramp")).get("max_sustained_concurrency")
    for lv in levels:
        if lv.get("concurrency") == best:
            return lv
    return max(levels, key=lambda lv: _num(lv.get("concurrency")) or 0)


def key_figures(summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Page one's key figures, each a (label, value) pair with its 95 % interval and n
    where the summary carries them; unmeasured ones say so."""
    if not summary:
        return [("Measurement", "none: this is a claims-only review")]
    base = _map(summary.get("baseline"))
    pre = _map(summary.get("prefill"))
    lv = _load_level(summary) or {}
    conc = lv.get("concurrency")
    at = f" at {fmt_value(conc)} streams" if conc is not None else ""
    ttft = _map(lv.get("ttft_s"))
    rate = _map(lv.get("stream_tokens_per_s"))
    r2 = f" (fit r² {fmt_num(pre.get('r2'))})" if _num(pre.get("r2")) is not None else ""
    client = _map(summary.get("client"))
    # SPEC: tokens we counted ourselves (no server usage) are marked wherever they show
    est = " (tokens estimated)" if lv.get("output_tokens_estimated") is True else ""
    base_est = " (tokens estimated)" if base.get("output_tokens_estimated") is True else ""
    alone = _map(base.get("stream_tokens_per_s"))
    figs = [
        (f"TTFT under load{at}",
         f"{fmt_pct_ci(ttft, 'p50', n=False)} · {fmt_pct_ci(ttft, 'p90')}"),
        (f"Stream rate{at}",
         f"{fmt_pct_ci(rate, 'p50', fmt_rate, n=False)} · {fmt_pct_ci(rate, 'p90', fmt_rate)}"
         + est),
        ("Aggregate throughput" + at, fmt_rate(lv.get("aggregate_tokens_per_s"))
         + ci_text(lv.get("aggregate_tokens_per_s_ci"), fmt_rate) + est),
        ("Max sustained concurrency", max_sustained_text(summary)),
        ("Prefill rate", prefill_text(pre, r2)),
        ("Decode rate, one stream alone (1 ÷ TPOT)",
         fmt_pct_ci(alone, "p50", fmt_rate).removeprefix("p50 ") + base_est),
    ]
    if client.get("client_bound"):
        figs.append(("Client check", client_verdict(client)))
    return figs


def max_sustained_text(summary: Mapping[str, Any]) -> str:
    """The ramp's answer in words: the level, where it broke and on what (TPOT, not `itl`)."""
    ramp = _map(summary.get("ramp"))
    best = ramp.get("max_sustained_concurrency")
    first = words.degraded(ramp.get("first_degraded"), ramp.get("first_degraded_tied"))
    broke = ramp.get("first_breach_concurrency")
    where = f" at {fmt_value(broke)} streams" if _num(broke) is not None else ""
    tie = tie_text(summary)
    if best is None:
        return "not established by this run" + (
            f"; {first} degraded first{where}" if ramp.get("first_degraded") else "") + tie
    if ramp.get("max_sustained_is_lower_bound"):
        stopped = summary.get("run_status") not in (None, "complete", "merged")
        return (f"≥ {fmt_value(best)} streams (a lower bound: no level tried breached, "
                + ("the run stopped before any level above)" if stopped
                   else "none above was tried)") + tie)
    return f"{fmt_value(best)} streams; {first} degraded first{where}{tie}"


def tie_text(summary: Mapping[str, Any]) -> str:
    """A ramp level whose 95 % interval straddled a limit (neither held nor breached),
    in words, with about how many requests there would decide it; "" when none."""
    ramp = _map(summary.get("ramp"))
    at = ramp.get("first_tie_concurrency")
    if _num(at) is None:
        return ""
    level = next((lv for lv in _levels(summary) if lv.get("concurrency") == at), {})
    ties = [t for t in level.get("ties") or [] if isinstance(t, str)]
    on = f" on {' and '.join(words.DEGRADED.get(t, words.name(t)) for t in ties)}" if ties \
        else ""
    n = level.get("tie_requests")
    more = f"; about {n:,} requests there would decide it" if isinstance(n, int) else ""
    return (f"; at {fmt_value(at)} streams a tie{on} (its 95 % interval straddles the limit, "
            f"so the max sustained level may be higher{more})")


def rules(summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The two rules a reader needs to check page one: how a level is judged degraded
    (with this run's thresholds) and when a vendor is streaming-ready."""
    th = _map(_map(_map(summary).get("ramp")).get("thresholds"))
    ttft = words.plain(th["ttft_p90_ratio"]) if _num(th.get("ttft_p90_ratio")) else "2"
    tpot = words.plain(th["tpot_p90_ratio"]) if _num(th.get("tpot_p90_ratio")) else "2"
    fail = fmt_pct(th.get("admission_failure_rate")) if _num(
        th.get("admission_failure_rate")) is not None else "1%"
    return [
        ("Verdict rule", "Streaming-ready only when Q2 (throughput per stream), Q4 (max "
         "concurrent streams) and Q6 (production figures) are all ok, meaning verified by "
         "this run with the whole 95 % interval within tolerance, and the run is valid."),
        ("Degradation rule", (
            f"A concurrency level is degraded when the 95 % interval of its TTFT p90 lies "
            f"wholly above {ttft}× the baseline's p90, that of its TPOT p90 (per-token "
            f"latency) wholly above {tpot}× the baseline's, or that of its failure rate "
            f"wholly above {fail}; an interval that straddles a limit is a tie, neither "
            "held nor degraded. The highest level held below the first degraded one is the "
            "max sustained concurrency.") if _map(_map(summary).get("ramp")).get("breach_rule")
         else (f"A concurrency level is degraded when its TTFT p90 exceeds {ttft}× the "
               f"baseline's, its TPOT p90 (per-token latency) exceeds {tpot}× the "
               f"baseline's, or more than {fail} of its requests fail. The highest level "
               "below the first degraded one is the max sustained concurrency.")),
    ]


def measured_text(qid: str, measured: Any, summary: Mapping[str, Any] | None) -> str:
    """A question's measured figures in words, with the 95 % interval and n of each where
    the summary has them (the appendix prints every field)."""
    m = _map(measured)
    if not m:
        return fmt_value(measured, SHORT_TEXT)
    levels = {lv.get("concurrency"): lv for lv in _levels(summary or {})}
    lv = _map(levels.get(m.get("concurrency")))
    at = f" at {fmt_value(m.get('concurrency'))} streams" if "concurrency" in m else ""
    if qid == "Q1" and lv:
        ttft = _map(lv.get("ttft_s"))
        return (f"TTFT {fmt_pct_ci(ttft, 'p50', n=False)} · "
                f"{fmt_pct_ci(ttft, 'p90', n=False)}{at}{n_mark(ttft)}")
    if qid == "Q2" and lv:
        rate = _map(lv.get("stream_tokens_per_s"))
        return (f"per stream {fmt_pct_ci(rate, 'p50', fmt_rate, n=False)}; all streams "
                f"{fmt_rate(lv.get('aggregate_tokens_per_s'))}"
                f"{ci_text(lv.get('aggregate_tokens_per_s_ci'), fmt_rate)}{at}{n_mark(rate)}")
    if qid == "Q3":
        pre = _map(_map(summary).get("prefill"))
        alone = _map(_map(_map(summary).get("baseline")).get("stream_tokens_per_s"))
        parts = []
        if "prefill_tokens_per_s" in m:
            ci = m.get("prefill_tokens_per_s_ci", pre.get("tokens_per_s_ci"))
            parts.append(f"prefill {fmt_rate(m['prefill_tokens_per_s'])}{ci_text(ci, fmt_rate)}")
        if "decode_tokens_per_s_per_stream_p50" in m:
            ci = m.get("decode_tokens_per_s_per_stream_p50_ci", alone.get("p50_ci"))
            parts.append(f"decode one stream alone p50 "
                         f"{fmt_rate(m['decode_tokens_per_s_per_stream_p50'])}"
                         f"{ci_text(ci, fmt_rate)}{n_mark(alone)}")
        rest = {k: v for k, v in m.items() if not k.startswith(
            ("prefill_tokens_per_s", "decode_tokens_per_s_per_stream_p50"))}
        return "; ".join(parts + ([words.mapping(rest, _short)] if rest else [])) or "—"
    if qid == "Q4":
        ramp = _map(_map(summary).get("ramp"))
        text = words.mapping({k: v for k, v in m.items() if k != "first_degraded"}, _short)
        if "max_sustained_concurrency" in m and m["max_sustained_concurrency"] is None:
            text = "max sustained: not established; " + text
        if m.get("first_degraded"):
            text += (f"; first to degrade: "
                     f"{words.degraded(m['first_degraded'], ramp.get('first_degraded_tied'))}")
        return text
    if qid == "Q5" and "per_stream_itl" in m:
        has = "a per-stream inter-token histogram" if m.get("per_stream_itl") else \
            "no per-stream inter-token histogram"
        return (f"{has} in the endpoint's metrics ({_short(m.get('engine') or 'unknown')} "
                f"names): {fmt_value(m.get('itl_observations'))} observations over "
                f"{fmt_value(m.get('scrapes_ok'))} scrapes")
    if qid == "Q6":
        parts = []
        for key, value in m.items():
            if key == "baseline_stream_tokens_per_s":
                parts.append(words.stream_distribution(value, "alone"))
            elif words.at_level(key):
                parts.append(words.stream_distribution(value, str(words.at_level(key))))
            else:
                parts.append(words.field(key, value, _short, m))
        return "; ".join(parts)
    return words.mapping(m, _short)


def _short(text: Any) -> str:
    return clip(text, 60)


def _long(text: Any) -> str:
    return clip(text, LONG_TEXT)


def claim_text(claimed: Any, brief: bool) -> str:
    """A vendor's answer in words: page one's brief form leaves out provenance detail
    (evidence, notes, links) and cuts each string short; the appendix prints it all."""
    if not isinstance(claimed, Mapping):
        return fmt_value(claimed, SHORT_TEXT if brief else LONG_TEXT)
    skip = BRIEF_SKIP if brief else frozenset()
    if brief and "output_tokens_per_s" in claimed:
        skip = skip | {"panel"}  # the same panel under its alias
    text = words.mapping(claimed, _short if brief else _long, skip=skip)
    return clip(text, SHORT_TEXT if brief else LONG_TEXT) if brief else text


def prefill_text(pre: Mapping[str, Any], r2: str = "") -> str:
    """The prefill rate as a reader may lean on it: a rate with its interval, or only a
    lower bound when the fit's slope could be zero, or why it was not measured."""
    at_least = _num(pre.get("tokens_per_s_at_least"))
    if at_least is not None:
        return (f"≥ {fmt_rate(at_least)} (a lower bound: no measurable prefill cost, the "
                "fit's slope could be zero)")
    ci = pre.get("tokens_per_s_ci")
    span = (f" [95 %: {fmt_num(ci[0])}–{fmt_num(ci[1])}]" if isinstance(ci, list)
            and len(ci) == 2 and all(_num(v) is not None for v in ci) else "")
    why = (f" ({clip(pre['reason'], 90)})" if _num(pre.get("tokens_per_s")) is None
           and isinstance(pre.get("reason"), str) else "")
    return fmt_rate(pre.get("tokens_per_s")) + span + r2 + why


def validity_text(run: Mapping[str, Any] | None) -> str:
    """The run's validity in words for page one: the status and its first reasons."""
    run = _map(run)
    status = run.get("validity")
    reasons = [clip(r, 160) for r in run.get("validity_reasons") or [] if isinstance(r, str)]
    label = {"valid": "valid", "degraded": "DEGRADED", "invalid": "RUN INVALID"}.get(
        str(status), "not assessed (summary from an older evalkit): treated as unverified")
    return label + (": " + "; ".join(reasons[:3]) if reasons else "")


def client_verdict(client: Mapping[str, Any]) -> str:
    """Whether the client set the pace, and whether that voids the capacity judgement.

    A bound confined to a phase or level the judgement does not rest on is named, not
    shouted: `capacity_judgement_affected` says which (older runs lack it: assume so).
    """
    bound = client.get("client_bound")
    if client.get("capacity_judgement_affected", bound):
        return "CLIENT-BOUND: no capacity judgement is drawn from this run"
    if bound:
        where = ", ".join([str(p) for p in client.get("client_bound_phases") or []]
                          + [f"level {c}" for c in client.get("client_bound_levels") or []])
        return f"client-bound in {where} only; the capacity judgement is unaffected"
    return "the client was not the bottleneck" if bound is False else "not checked"


def _flag(flagged: Any) -> str:
    return "FLAGGED" if flagged is True else ("ok" if flagged is False else "not checked")


def check_rows(summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The run's self-checks (client, network, cache, output length, usage) as table rows."""
    if not summary:
        return []
    checks, client = _map(summary.get("checks")), _map(summary.get("client"))
    rows = []
    if client:
        rows.append(("Client self-check",
                     f"event-loop lag p99 {fmt_ms(client.get('loop_lag_p99_s'))}, CPU max "
                     f"{fmt_pct(client.get('cpu_fraction_max'))}; {client_verdict(client)}"))
    net = _map(checks.get("network"))
    if net:
        rows.append(("Network round trip", f"{fmt_ms(net.get('rtt_s'))}, "
                     f"{fmt_pct(net.get('share_of_ttft'))} of baseline TTFT p50"))
    cache = _map(checks.get("cache"))
    if cache:
        seen = cache.get("prefix_cache")
        rows.append(("Prefix-cache check",
                     f"repeat/first TTFT {fmt_num(cache.get('repeat_over_first'))} over "
                     f"{fmt_value(cache.get('pairs'))} pairs: "
                     + ("a prefix cache serves repeats" if seen is True
                        else "no prefix cache seen" if seen is False else "not measured")))
    length = _map(checks.get("output_length"))
    if length:
        rows.append(("Output length check",
                     f"{fmt_value(length.get('short'))} of {fmt_value(length.get('checked'))} "
                     f"requests short by > {fmt_pct(length.get('tolerance'))}: "
                     f"{_flag(length.get('flagged'))}"))
    usage = _map(checks.get("usage_honesty"))
    if usage:
        rows.append(("Usage honesty (billed vs streamed tokens)",
                     f"{fmt_value(usage.get('disagreeing'))} of {fmt_value(usage.get('checked'))}"
                     f" disagree by > {fmt_pct(usage.get('tolerance'))}: "
                     f"{_flag(usage.get('flagged'))}"))
    return rows


def chart_svgs(scorecard: Mapping[str, Any], summary: Mapping[str, Any] | None,
               records: Iterable[RequestRecord] | RecordDigest,
               slo_limits: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Markup]]:
    """Every chart there is data for, as (caption, inline svg); `records` may be given as
    their digest (what `load_run` keeps)."""
    digest = records if isinstance(records, RecordDigest) else RecordDigest.of(records)
    out: list[tuple[str, str | None]] = []
    q6 = _map(_map(scorecard.get("questions")).get("Q6"))
    claimed = _map(q6.get("claimed"))
    panel = _map(claimed.get("panel")) or claimed
    summary = summary or {}
    out.append((charts.CLAIMS_CAPTION,
                charts.claims_vs_measured(_num(claimed.get("headline")), panel,
                                          charts.measured_rows(summary),
                                          headline_unit=claimed.get("headline_unit"))))
    samples = {level: {"ttft": digest.ttft_values("ramp", level),
                       "itl": digest.itl.get(level, [])} for level in digest.levels}
    levels = _levels(summary)
    dist = charts.latency_distributions(samples)
    tpc = _map(_map(summary.get("connect")).get("tokens_per_chunk")).get("p50")
    out.append((charts.distributions_caption(fmt_num(tpc), boxes=dist is not None),
                dist or charts.latency_percentiles(levels)))
    ramp = _map(summary.get("ramp"))
    vendor = _map(summary.get("vendor_metrics")) or None  # the queue panel, if scraped
    out.append((charts.throughput_caption(_map(ramp.get("thresholds")), vendor),
                charts.throughput_vs_concurrency(levels, ramp.get("max_sustained_concurrency"),
                                                 ramp.get("first_degraded"), vendor)))
    pre = _map(summary.get("prefill"))
    points = list(digest.prefill_points)
    if not points:
        for p in pre.get("points") or []:
            if isinstance(p, Mapping) and _num(p.get("prompt_tokens")) and _num(p.get("ttft_s")):
                points.append((float(p["prompt_tokens"]), float(p["ttft_s"])))
    out.append((charts.PREFILL_CAPTION,
                charts.prefill_fit(points, _num(pre.get("overhead_s")),
                                   _num(pre.get("tokens_per_s")), _num(pre.get("r2")))))
    if digest.raster:
        top = max(digest.raster)
        streams = [charts.Stream(t0, times, outcome, top)
                   for t0, times, outcome in digest.raster_streams(top)]
        out.append((charts.raster_caption(len(streams), top), charts.stream_raster(streams)))
    out.append((charts.USE_CASE_CAPTION,
                charts.use_case_fit(levels, slo_limits, _map(scorecard.get("tolerances")))))
    return [(caption, Markup(charts.namespaced(svg, f"fig{i}")))
            for i, (caption, svg) in enumerate(out) if svg]


def _status(s: Any) -> str:
    """A status name safe to use as a CSS class: one of the four, else 'unknown'."""
    return s if s in STATUSES else "unknown"


def slo_limits(scorecard: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each use case's SLO profile as the scorecard was judged with it."""
    profiles = _map(_map(scorecard.get("tolerances")).get("slo_profiles"))
    out: dict[str, Mapping[str, Any]] = {str(n): _map(p) for n, p in profiles.items()}
    for name, uc in _map(scorecard.get("use_cases")).items():
        if _map(_map(uc).get("profile")):
            out[str(name)] = _map(_map(uc).get("profile"))
    return out


def fit_badge(uc: Mapping[str, Any]) -> tuple[str, str]:
    """(css class, label) for a use-case fit, qualified by how far it was tried."""
    fit, top = uc.get("fit"), uc.get("max_concurrency")
    if fit is True:
        if not isinstance(top, int):
            return "ok", "✓ fits"
        return "ok", (f"✓ fits ≥ {top} streams" if uc.get("lower_bound")
                      else f"✓ fits up to {top} streams")
    if fit is False:
        return "unreconciled", "✗ does not fit"
    return "unanswered", "○ not judged"


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def stopped_at(run_doc: Mapping[str, Any], digest: RecordDigest) -> str | None:
    """When the run's last recorded request ended, in words: on the run's clock, and as a
    time of day from run.json's started_at (the clock's origin, to the second)."""
    last = digest.last_end_s
    if last is None:
        return None
    text = f"{_duration(last)} into the run"
    started = run_doc.get("started_at")
    try:
        t0 = datetime.fromisoformat(started) if isinstance(started, str) else None
        if t0 is not None:
            t = t0 + timedelta(seconds=last)
            text += (f", about {t.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if t.tzinfo
                     else f", about {t:%Y-%m-%d %H:%M:%S}")
    except (ValueError, OverflowError):
        pass
    return text


def build_context(scorecard: Mapping[str, Any], run: RunData | None,
                  evidence: Mapping[str, str]) -> dict[str, Any]:
    """Everything the template shows, as plain strings and lists (no I/O)."""
    run_doc = run.run if run else {}
    summary = run.summary if run else None
    digest = run.stats if run else RecordDigest()
    target = _map(run_doc.get("target"))
    questions = []
    for qid in QUESTION_IDS:
        q = _map(_map(scorecard.get("questions")).get(qid))
        status = _status(q.get("status"))
        questions.append({
            "id": qid, "title": clip(q.get("title") or QUESTION_TITLES[qid], 80),
            "status": status, "badge": BADGES.get(status, "!"),
            "gap": q.get("finding") == "gap",
            "claimed": claim_text(q.get("claimed"), brief=True),
            "measured": measured_text(qid, q.get("measured"), summary),
            "reason": clip(q.get("reason") or "", 3 * SHORT_TEXT),
            "claimed_long": claim_text(q.get("claimed"), brief=False),
            "measured_long": (words.mapping(q["measured"], _long)
                              if isinstance(q.get("measured"), Mapping)
                              else fmt_value(q.get("measured"), LONG_TEXT)),
            "reason_long": clip(q.get("reason") or "", LONG_TEXT),
            "tolerance": words.tolerance(clip(q["tolerance"], SHORT_TEXT))
                         if q.get("tolerance") else "",
        })
    use_cases = []
    for name, uc in _map(scorecard.get("use_cases")).items():
        uc = _map(uc)
        css, label = fit_badge(uc)
        use_cases.append({"name": clip(uc.get("label") or str(name).replace("_", " "), 60),
                          "css": css, "label": label,
                          "reason": clip(uc.get("reason") or "", 4 * SHORT_TEXT)})
    verdict = _map(scorecard.get("verdict"))
    tolerances = dict(_map(scorecard.get("tolerances")))
    slo_profiles = _map(tolerances.pop("slo_profiles", None))
    figures = key_figures(summary)
    run_card = _map(scorecard.get("run"))
    lead: list[tuple[str, str]] = []
    if run is not None:
        lead.append(("Run validity", validity_text(run_card)))
    run_status = run_doc.get("status")
    when = stopped_at(run_doc, digest) if run is not None else None
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
        lead.append(("Suite profile", fmt_value(run_doc.get("profile"))
                     + f" (suite v{clip(run_doc.get('suite_version') or '?', 10)})"))
    figures = lead + figures
    reading = _map(scorecard.get("streams_at_reading_speed"))
    if summary and reading:
        pct, speed = reading.get("percentile") or "p90", reading.get("reading_speed_tokens_per_s")
        value = fmt_value(reading.get("value"))
        if reading.get("lower_bound") and reading.get("value") is not None:
            value = f"≥ {value} (the highest level tried)"
        elif reading.get("fit") is None:
            value = "not judged"
        share = f"{pct[1:]} % of" if pct[1:].isdigit() else "most"
        known = _num(speed)
        rate = f"{words.plain(known)} tok/s" if known is not None else fmt_rate(speed)
        figures.append(("Streams at reading speed",
                        f"{value}; judged on whether {share} streams receive at least {rate}"))
    if run is None:  # claims-only: the vendor's own words for what was reviewed
        model = fmt_value(scorecard.get("model")) + " (as stated by the vendor)"
        endpoint = fmt_value(scorecard.get("endpoint")) + " (as stated by the vendor)"
    else:
        model = clip(target.get("model") or "—", SHORT_TEXT)
        endpoint = clip(target.get("base_url") or "—", SHORT_TEXT)
    started, ended = run_doc.get("started_at"), run_doc.get("ended_at")
    stand = _map(run_card.get("stands_in_for"))
    # what reading the run directory repaired comes first: the figures rest on it
    notices = [clip(note, 600) for note in (run.notes if run else ())]
    if stand:
        notices.append(f"A demonstration: evalkit's built-in reference endpoint played this "
                       f"vendor's endpoint ({clip(stand.get('model') or '—', 60)} at "
                       f"{clip(stand.get('endpoint') or '—', 80)}). Every figure was measured "
                       "on the reference endpoint, not on the vendor's.")
    if run_card.get("target_mismatch"):
        notices.append("The run does not match the questionnaire: "
                       f"{clip(run_card['target_mismatch'], 300)}. Claims that need a "
                       "measurement are unverified.")
    return {
        "vendor": clip(scorecard.get("vendor") or "(vendor not named)", SHORT_TEXT),
        "model": model, "endpoint": endpoint,
        "run_invalid": run_card.get("validity") == "invalid",
        "notices": notices,
        # page one's "what this run did not verify": each with the run that would
        "not_verified": [(q["id"], q["reason"]) for q in questions
                         if q["status"] == "unverified"],
        "date": clip(started or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), 40),
        "streaming_ready": bool(verdict.get("streaming_ready")),
        "verdict": clip(verdict.get("text") or "No verdict was drawn.", LONG_TEXT),
        "questions": questions,
        "use_cases": use_cases,
        "key_figures": figures,
        "charts": chart_svgs(scorecard, summary, digest, slo_limits(scorecard)),
        "tool_version": evalkit.__version__,
        "suite_version": clip(run_doc.get("suite_version") or evalkit.SUITE_VERSION, 20),
        "run_tool_version": clip(run_doc.get("tool_version") or "—", 20),
        "profile": fmt_value(run_doc.get("profile") or _map(run_doc.get("config")).get("profile")),
        "client_host": clip(words.client_host(run_doc.get("client")), SHORT_TEXT),
        "run_times": f"{fmt_value(started)} to {fmt_value(ended)}"
                     + (f" ({fmt_value(run_doc['status'])})" if run_doc.get("status") else "")
                     + (f"; last request ended {when}" if when else ""),
        "summary": summary or {},
        "levels": _levels(summary or {}),
        "fmt_p": fmt_p, "fmt_rate": fmt_rate, "fmt_ms": fmt_ms, "fmt_num": fmt_num,
        "in_ms": lambda s: fmt_num(s * 1000) if _num(s) is not None else "—",
        # the ramp's metric keys (ttft, itl, admission) as the methodology names them
        "metric_names": lambda ms: ", ".join(
            {"ttft": "TTFT", "itl": "TPOT", "tpot": "TPOT", "admission": "failures"}.get(
                str(m), clip(m, 20)) for m in (ms if isinstance(ms, list) else [])),
        "fmt_value": fmt_value, "fmt_outcomes": fmt_outcomes,
        "outcomes": sorted(digest.outcomes.items()),
        "n_records": digest.n,
        "skipped_lines": run.skipped_lines if run else 0,
        "summary_source": (clip(run.rebuilt, 600) if run and run.rebuilt
                           else "summary.json, as the probe wrote it, checked against the "
                                "records" if run else ""),
        "checks": check_rows(summary),
        "errors": [(clip(msg, 200), n) for msg, n in digest.errors.most_common(10)],
        "evidence": sorted(evidence.items()),
        "requests_sha256": run.requests_sha256 if run else None,
        "tolerances": sorted(tolerances.items()),
        "slo_profiles": sorted(slo_profiles.items()),
        "has_run": run is not None,
        "rules": rules(summary),
        "prefill_line": prefill_text(_map(_map(summary).get("prefill"))),
        "baseline_heading": baseline_heading(_map(_map(summary).get("baseline"))),
        "title_date": clip(started or datetime.now(UTC).strftime("%Y-%m-%d"), 40)[:10],
    }


def baseline_heading(base: Mapping[str, Any]) -> str:
    """The appendix's baseline heading: how many requests, and how many succeeded (a
    baseline of 0 requests says so rather than "6 requests")."""
    total = base.get("requests")
    ok = _map(base.get("outcomes")).get("ok")
    if not isinstance(total, int) or total == 0:
        return "Baseline: one stream at a time (no request measured)"
    done = f", {ok:,} ok" if isinstance(ok, int) and ok != total else ""
    return f"Baseline: one stream at a time, {total:,} requests{done}"


# --------------------------------------------------------------------------- render


def scorecard_bytes(scorecard: Mapping[str, Any]) -> bytes:
    """The exact bytes written beside the PDF and attached inside it."""
    return (json.dumps(scorecard, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode()


def write_scorecard(scorecard: Mapping[str, Any], run: RunData | None,
                    questionnaire: tuple[str, bytes] | None, out_pdf: Path,
                    html: bool = False) -> ReportResult:
    """Write PDF, FILE.json beside it and optionally FILE.html, from a built scorecard."""
    attachments: dict[str, bytes] = dict(run.raw) if run else {}
    sc_bytes = scorecard_bytes(scorecard)
    attachments["scorecard.json"] = sc_bytes
    if questionnaire:
        attachments[questionnaire[0]] = questionnaire[1]
    evidence = {name: sha256(data) for name, data in attachments.items()}
    text = render_html(build_context(scorecard, run, evidence))
    fetcher = AssetFetcher()
    pdf = render_pdf(text, attachments, fetcher)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    out_pdf.write_bytes(pdf)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(sc_bytes)
    html_path = None
    if html:
        html_path = out_pdf.with_suffix(".html")
        html_path.write_text(text, encoding="utf-8")
    return ReportResult(out_pdf, json_path, html_path, dict(scorecard), evidence,
                        tuple(fetcher.calls), tuple(fetcher.refused), run.notes if run else ())


def render_report(run_dir: Path | None, questionnaire_path: Path | None, out_pdf: Path,
                  html: bool = False, tolerances: Any = None) -> ReportResult:
    """The whole report: read the inputs, reconcile them, write PDF + FILE.json (+ HTML).

    Either input may be omitted (a claims-only or a measurement-only review), not both.
    `tolerances` is a `Tolerances`, a path to an override file, or None for the defaults.
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
                  tolerances)
    return write_review(done, out_pdf, html)


def write_review(done: Review, out_pdf: Path, html: bool = False) -> ReportResult:
    """Write a review's PDF and FILE.json, attaching the inputs' bytes as they were read."""
    q = done.questionnaire
    return write_scorecard(done.scorecard, done.run, (q.name, q.data) if q else None,
                           out_pdf, html)
