"""The scorecard's words: every figure, claim and check as the page says it (pure).

`evalkit.render.report` builds its page from these: key figures with their 95 % intervals and n,
the two rules a reader checks page one against, each question's claim and measurement in
words (`evalkit.render.words`), the run's self-checks, use-case badges. Numbers go through
`evalkit.fmt`, vendor text through `evalkit.render.pdf.clip`. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.analysis.summary import as_number as _num
from evalkit.analysis.summary_checks import CacheCheck, Checks, Client, HonestyCheck, NetworkCheck
from evalkit.analysis.summary_levels import OutputLength
from evalkit.analysis.summary_sections import Prefill, Ramp
from evalkit.fmt import ci_text, fmt_ms, fmt_num, fmt_pct, fmt_rate
from evalkit.provenance import short
from evalkit.questionnaire.model import Answer, PricingAnswer
from evalkit.render import words
from evalkit.render.pdf import clip
from evalkit.review.claimed import PanelClaim
from evalkit.review.fit import Fit
from evalkit.review.scorecard import RunCard, fit_from_json
from evalkit.rundir.digest import RecordDigest

#: Page one shows this much of any vendor string; the appendix shows up to the long limit.
SHORT_TEXT, LONG_TEXT = 110, 4000


def fmt_outcomes(outcomes: Mapping[str, Any] | None) -> str:
    """Outcome counts without the zeros: 'ok 12 · rejected 3'."""
    parts = [f"{k} {fmt_value(v)}" for k, v in (outcomes or {}).items() if v]
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


def pct_text(p: Pct, pct: str, fmt: Callable[[Any], str] = fmt_ms, n: bool = True) -> str:
    """One percentile of a distribution with its 95 % interval and n: 'p90 324 ms
    [95 %: 300–350 ms] (n=32, low confidence)'; the interval is left out when the
    summary carries none (an older run), the figure reads '—' when it is missing; `n`
    False leaves the count to a figure printed beside it."""
    return f"{pct} {fmt(p.get(pct))}{ci_text(p.interval(pct), fmt)}{n_text(p) if n else ''}"


def n_text(p: Pct) -> str:
    """The sample count behind a distribution, marked when too few to lean on."""
    if p.n is None:
        return ""
    return f" (n={p.n}, low confidence)" if p.n < 100 else f" (n={p.n})"


def key_figures(summary: Summary | None) -> list[tuple[str, str]]:
    """Page one's key figures, each a (label, value) pair with its 95 % interval and n
    where the summary carries them; unmeasured ones say so."""
    if summary is None:
        return [("Measurement", "none: this is a claims-only review")]
    sections = summary.sections
    base, pre = sections.baseline, sections.prefill or Prefill()
    load = summary.under_load() if summary.measured else None
    lv = load[0] if load else None
    at = f" at {fmt_value(lv.concurrency)} streams" if lv is not None else ""
    ttft = lv.ttft_s if lv is not None else Pct()
    rate = lv.stream_tokens_per_s if lv is not None else Pct()
    r2 = f" (fit r² {fmt_num(pre.r2)})" if pre.r2 is not None else ""
    # SPEC: tokens we counted ourselves (no server usage) are marked wherever they show
    est = " (tokens estimated)" if lv is not None and lv.output_tokens_estimated else ""
    base_est = " (tokens estimated)" if base is not None and base.output_tokens_estimated \
        else ""
    alone = base.stream_tokens_per_s if base is not None else Pct()
    figs = [
        (f"TTFT under load{at}", f"{pct_text(ttft, 'p50', n=False)} · {pct_text(ttft, 'p90')}"),
        (f"Stream rate{at}",
         f"{pct_text(rate, 'p50', fmt_rate, n=False)} · {pct_text(rate, 'p90', fmt_rate)}"
         + est),
        ("Aggregate throughput" + at,
         fmt_rate(lv.aggregate_tokens_per_s if lv is not None else None)
         + ci_text(lv.aggregate_ci if lv is not None else None, fmt_rate) + est),
        ("Max sustained concurrency", max_sustained_text(summary)),
        (goodput_label(summary), goodput_text(summary)),
        ("Prefill rate", prefill_text(pre, r2)),
        ("Decode rate, one stream alone (1 ÷ TPOT)",
         pct_text(alone, "p50", fmt_rate).removeprefix("p50 ") + base_est),
    ]
    answer = answer_first_text(lv) if lv is not None else None
    if answer is not None:
        figs.insert(1, (f"TTFA under load{at} (first answer token)", answer))
    client = sections.client
    if client is not None and client.client_bound:
        figs.append(("Client check", client_verdict(client)))
    return figs


def answer_first_text(lv: Level) -> str | None:
    """TTFA beside TTFT, and why it is what latency is judged on, when reasoning came
    before the answer at this level (None otherwise): TTFT then times a reasoning chunk,
    which a vendor can send at once, so Q1 and the latency fits use TTFA."""
    first = lv.reasoning_first
    if not first:
        return None
    n = lv.ttft_s.n
    of = f" of {fmt_value(n)}" if n else ""
    return (f"{pct_text(lv.ttfa_s, 'p50', n=False)} · {pct_text(lv.ttfa_s, 'p90')}; "
            f"reasoning came first in {fmt_value(first)}{of} requests, so Q1 and the use-case "
            "fits judge TTFA (the answer's time), not TTFT (a reasoning chunk's)")


def _ramp(summary: Summary | None) -> Ramp:
    """The summary's ramp section (an empty one when it has none)."""
    ramp = summary.sections.ramp if summary is not None else None
    return ramp or Ramp()


def _levels(summary: Summary) -> tuple[Level, ...]:
    """The ramp's levels, lowest first, of a summary that measured anything."""
    return summary.ramp if summary.measured else ()


def max_sustained_text(summary: Summary) -> str:
    """The ramp's answer in words: the level, where it broke and on what (TPOT, not `itl`)."""
    ramp = _ramp(summary)
    best = ramp.max_sustained_concurrency
    first = words.degraded(ramp.first_degraded, ramp.first_degraded_tied)
    broke = ramp.first_breach_concurrency
    where = f" at {fmt_value(broke)} streams" if broke is not None else ""
    tie = tie_text(summary) + underload_text(summary)
    if best is None:
        return "not established by this run" + (
            f"; {first} degraded first{where}" if ramp.first_degraded else "") + tie
    if ramp.max_sustained_is_lower_bound:
        stopped = summary.sections.run_status not in (None, "complete", "merged")
        return (f"≥ {fmt_value(best)} streams (a lower bound: no level tried breached, "
                + ("the run stopped before any level above)" if stopped
                   else "none above was tried)") + tie)
    return f"{fmt_value(best)} streams; {first} degraded first{where}{tie}"


def goodput_label(summary: Summary) -> str:
    """The goodput row's label, with the run's target share."""
    target = _ramp(summary).goodput_target
    return f"Highest level within each SLO (≥ {fmt_pct(target if target else 0.99)} of " \
        "requests meeting it)"


def goodput_text(summary: Summary) -> str:
    """The highest ramp level within each latency SLO, beside max sustained concurrency:
    "voice agent 4 · live suggestions none · interactive chat ≥ 16 streams"; a summary
    without goodput says it was not measured."""
    ramp = _ramp(summary)
    best = ramp.max_goodput_concurrency
    if not best:
        return "not measured (no ramp, or a summary written before goodput)"
    parts = []
    for name, level in best.items():
        limits = ramp.goodput_limits.get(name)
        if limits is None or not limits.any:
            continue  # batch: no latency limit, its goodput is the ok share
        label = words.name(name)
        if level is None:
            parts.append(f"{label}: none (not even the lowest level)")
        else:
            bound = "≥ " if ramp.max_goodput_is_lower_bound.get(name) is True else ""
            parts.append(f"{label}: {bound}{fmt_value(level)} stream"
                         + ("s" if level != 1 else ""))
    return " · ".join(parts) if parts else "not measured"


def underload_text(summary: Summary) -> str:
    """Ramp levels that held fewer streams in flight than their name, in words: which
    were not judged, and which breached all the same (a breach under less load stands);
    "" when every level held its load."""
    parts = []
    for lv in _levels(summary):
        mean, c = lv.achieved_mean, lv.concurrency
        if not lv.underloaded or mean is None:
            continue
        held = f"level {fmt_value(c)} held a mean of {mean:.1f} streams in flight"
        parts.append(f"{held}: not judged at {fmt_value(c)}"
                     if lv.status == "underloaded" else
                     f"{held} and breached all the same, so it is judged at its breach")
    return "".join(f"; {p}" for p in parts)


def tie_text(summary: Summary) -> str:
    """A ramp level whose 95 % interval straddled a limit (neither held nor breached),
    in words, with about how many requests there would decide it; "" when none."""
    at = _ramp(summary).first_tie_concurrency
    if at is None:
        return ""
    level = next((lv for lv in _levels(summary) if lv.concurrency == at), None)
    ties = level.ties if level is not None else ()
    on = f" on {' and '.join(words.DEGRADED.get(t, words.name(t)) for t in ties)}" if ties \
        else ""
    n = level.tie_requests if level is not None else None
    more = f"; about {n:,} requests there would decide it" if n is not None else ""
    return (f"; at {fmt_value(at)} streams a tie{on} (its 95 % interval straddles the limit, "
            f"so the max sustained level may be higher{more})")


def rules(summary: Summary | None) -> list[tuple[str, str]]:
    """The two rules a reader needs to check page one: how a level is judged degraded
    (with this run's thresholds) and when a vendor is streaming-ready."""
    ramp = _ramp(summary)
    th = ramp.thresholds
    ttft = words.plain(th.ttft_p90_ratio) if th.ttft_p90_ratio else "2"
    tpot = words.plain(th.tpot_p90_ratio) if th.tpot_p90_ratio else "2"
    fail = fmt_pct(th.admission_failure_rate) if th.admission_failure_rate is not None \
        else "1%"
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
            "max sustained concurrency.") if ramp.breach_rule
         else (f"A concurrency level is degraded when its TTFT p90 exceeds {ttft}× the "
               f"baseline's, its TPOT p90 (per-token latency) exceeds {tpot}× the "
               f"baseline's, or more than {fail} of its requests fail. The highest level "
               "below the first degraded one is the max sustained concurrency.")),
    ]


def _short(text: Any) -> str:
    return clip(text, 60)


def _long(text: Any) -> str:
    return clip(text, LONG_TEXT)


def claim_text(claimed: Answer | None, brief: bool) -> str:
    """A vendor's answer in words, every field it filled in by its name: page one's brief
    form leaves out provenance detail (evidence, notes, links) and cuts each string
    short; the appendix prints it all."""
    if claimed is None:
        return "—"
    said = claimed.to_dict()
    skip = BRIEF_SKIP if brief else frozenset()
    if brief and isinstance(claimed, PanelClaim) and claimed.panel_numbers:
        skip = skip | {"panel"}  # the same panel under its alias
    text = words.mapping(said, _short if brief else _long, skip=skip,
                         currency=claimed.currency if isinstance(claimed, PricingAnswer)
                         else None,
                         headline_unit=claimed.headline_unit if isinstance(claimed, PanelClaim)
                         else None)
    return clip(text, SHORT_TEXT if brief else LONG_TEXT) if brief else text


def prefill_text(pre: Prefill | None, r2: str = "") -> str:
    """The prefill rate as a reader may lean on it: a rate with its interval, or only a
    lower bound when the fit's slope could be zero, or why it was not measured."""
    pre = pre or Prefill()
    if pre.tokens_per_s_at_least is not None:
        return (f"≥ {fmt_rate(pre.tokens_per_s_at_least)} (a lower bound: no measurable "
                "prefill cost, the fit's slope could be zero)")
    ci = pre.tokens_per_s_ci
    span = (f" [95 %: {fmt_num(ci[0])}–{fmt_num(ci[1])}]" if ci is not None
            and ci[0] is not None and ci[1] is not None else "")
    why = (f" ({clip(pre.reason, 90)})" if pre.tokens_per_s is None and pre.reason is not None
           else "")
    return fmt_rate(pre.tokens_per_s) + span + r2 + why


def validity_text(run: RunCard | None) -> str:
    """The run's validity in words for page one: the status and its first reasons."""
    reasons = [clip(r, 160) for r in run.validity_reasons] if run else []
    label = {"valid": "valid", "degraded": "DEGRADED", "invalid": "RUN INVALID"}.get(
        str(run.validity if run else None),
        "not assessed (summary from an older evalkit): treated as unverified")
    return label + (": " + "; ".join(reasons[:3]) if reasons else "")


@dataclass(frozen=True)
class _Git:
    commit: str | None = None
    dirty: bool = False


@dataclass(frozen=True)
class _Prompts:
    seed: float | None = None


@dataclass(frozen=True)
class _Platform:
    cpu_model: str | None = None


@dataclass(frozen=True)
class _Provenance:
    """The parts of run.json's `provenance` the page prints (free-form JSON as written:
    `evalkit.provenance`), read field by field."""

    package_sha256: Json | None = None
    git: _Git = field(default_factory=_Git)
    prompts: _Prompts = field(default_factory=_Prompts)
    platform: _Platform = field(default_factory=_Platform)
    command_line: tuple[Json, ...] = ()


def provenance_text(prov: Json | None) -> str:
    """run.json's `provenance` in a line: the measuring evalkit's package digest, its
    checkout, the prompt seed (run.json is editable: every part is clipped)."""
    if not isinstance(prov, Mapping):
        return "not recorded (a run from before the suite recorded its provenance)"
    p = read_as(_Provenance, prov)
    parts = [f"package {short(p.package_sha256)}"]
    if p.git.commit is not None:
        parts.append(f"git {clip(p.git.commit, 12)}" + (" (dirty tree)" if p.git.dirty else ""))
    if p.prompts.seed is not None:
        parts.append(f"prompt seed {fmt_value(p.prompts.seed)}")
    if p.platform.cpu_model:
        parts.append(clip(p.platform.cpu_model, 60))
    return "; ".join(parts)


def command_text(prov: Json | None) -> str:
    """The command line the run was probed with (secrets removed when it was recorded)."""
    argv = read_as(_Provenance, prov).command_line
    if not argv:
        return "—"
    return clip(" ".join(str(a) for a in argv), 600)


def client_verdict(client: Client) -> str:
    """Whether the client set the pace, and whether that voids the capacity judgement.

    A bound confined to a phase or level the judgement does not rest on is named, not
    shouted: `capacity_judgement_affected` says which (older runs lack it: assume so).
    """
    bound = client.client_bound
    if client.judgement_affected:
        return "CLIENT-BOUND: no capacity judgement is drawn from this run"
    if bound:
        where = ", ".join([*client.client_bound_phases,
                           *(f"level {c}" for c in client.client_bound_levels)])
        return f"client-bound in {where} only; the capacity judgement is unaffected"
    return "the client was not the bottleneck" if bound is False else "not checked"


def _flag(flagged: bool | None) -> str:
    return "FLAGGED" if flagged is True else ("ok" if flagged is False else "not checked")


def check_rows(summary: Summary | None) -> list[tuple[str, str]]:
    """The run's self-checks (client, network, cache, output length, usage) as table rows."""
    if summary is None:
        return []
    checks, client = summary.sections.checks or Checks(), summary.sections.client
    rows = []
    if client is not None and client != Client():
        rows.append(("Client self-check",
                     f"event-loop lag p99 {fmt_ms(client.loop_lag_p99_s)}, CPU max "
                     f"{fmt_pct(client.cpu_fraction_max)}; {client_verdict(client)}"))
    net = checks.network
    if net is not None and net != NetworkCheck():
        rows.append(("Network round trip", f"{fmt_ms(net.rtt_s)}, "
                     f"{fmt_pct(net.share_of_ttft)} of baseline TTFT p50"))
    cache = checks.cache
    if cache is not None and cache != CacheCheck():
        seen = cache.prefix_cache
        rows.append(("Prefix-cache check",
                     f"repeat/first TTFT {fmt_num(cache.repeat_over_first)} over "
                     f"{fmt_value(cache.pairs)} pairs: "
                     + ("a prefix cache serves repeats" if seen is True
                        else "no prefix cache seen" if seen is False else "not measured")))
    length = checks.output_length
    if length is not None and length != OutputLength():
        rows.append(("Output length check", f"{fmt_value(length.short)} of "
                     f"{fmt_value(length.checked)} requests short by > "
                     f"{fmt_pct(length.tolerance)}: {_flag(length.flagged)}"))
    for check, label in ((checks.usage_honesty, "Usage honesty (billed vs streamed tokens)"),
                         (checks.prompt_honesty,
                          "Prompt honesty (billed vs sent prompt tokens)")):
        if check is not None and check != HonestyCheck():
            rows.append((label, f"{fmt_value(check.disagreeing)} of "
                         f"{fmt_value(check.checked)} disagree by > "
                         f"{fmt_pct(check.tolerance)}: {_flag(check.flagged)}"))
    return rows


def fit_badge(uc: Fit | Mapping[str, Any]) -> tuple[str, str]:
    """(css class, label) for a use-case fit, qualified by how far it was tried; a
    scorecard.json entry (as the comparison holds it) is read back first."""
    f = uc if isinstance(uc, Fit) else fit_from_json(uc)
    top = f.max_concurrency
    if f.fit is True:
        if top is None:
            return "ok", "✓ fits"
        noun = f.unit.removesuffix("s") if top == 1 else f.unit  # 1 call, 2 calls
        return "ok", (f"✓ fits ≥ {top} {noun}" if f.lower_bound
                      else f"✓ fits up to {top} {noun}")
    if f.fit is False:
        return "unreconciled", "✗ does not fit"
    return "unanswered", "○ not judged"


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def stopped_at(started: str | None, digest: RecordDigest) -> str | None:
    """When the run's last recorded request ended, in words: on the run's clock, and as a
    time of day from run.json's started_at (the clock's origin, to the second)."""
    last = digest.last_end_s
    if last is None:
        return None
    text = f"{_duration(last)} into the run"
    try:
        t0 = datetime.fromisoformat(started) if started is not None else None
        if t0 is not None:
            t = t0 + timedelta(seconds=last)
            text += (f", about {t.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if t.tzinfo
                     else f", about {t:%Y-%m-%d %H:%M:%S}")
    except (ValueError, OverflowError):
        pass
    return text



def baseline_heading(base: Level | None) -> str:
    """The appendix's baseline heading: how many requests, and how many succeeded (a
    baseline of 0 requests says so rather than "6 requests")."""
    total = base.requests if base is not None else None
    if total is None or total == 0:
        return "Baseline: one stream at a time (no request measured)"
    ok = base.ok if base is not None else None
    done = f", {ok:,} ok" if ok is not None and ok != total else ""
    return f"Baseline: one stream at a time, {total:,} requests{done}"
