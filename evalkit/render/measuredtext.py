"""Each question's measured figures in words, for page one (pure): each measured type
(`evalkit.review.measured`) says its own, registered on `_words` by its type, with the 95 %
interval and n of each figure where the summary has them; the appendix prints every field
(`measured_long`). A new measured type is one function here, registered by its type.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.fmt import ci_text, fmt_rate
from evalkit.render import words
from evalkit.render.pagetext import LONG_TEXT, fmt_value, n_text, pct_text
from evalkit.render.pdf import clip
from evalkit.review.measured import (
    ConcurrencyMeasured,
    Measured,
    ObservabilityMeasured,
    PanelMeasured,
    PrefillDecodeMeasured,
    Shown,
    ThroughputMeasured,
    TtftMeasured,
)


def _short(text: Any) -> str:
    return clip(text, 60)


def _long(text: Any) -> str:
    return clip(text, LONG_TEXT)


def measured_text(measured: Measured | None, summary: Summary | None) -> str:
    """A question's measured figures in words, with the 95 % interval and n of each where
    the summary has them (the appendix prints every field): each measured type says its
    own (`_words`)."""
    if measured is None:
        return "—"
    ramp = summary.ramp if summary is not None and summary.measured else ()
    return _words(measured, ramp, summary)


def measured_long(measured: Measured | None) -> str:
    """A question's measured figures for the appendix: every field, by its name."""
    return words.mapping(measured.to_json(), _long) if measured is not None else "—"


def _at(c: int | None) -> str:
    return f" at {fmt_value(c)} streams"


def _level(ramp: tuple[Level, ...], c: int | None) -> Level | None:
    return next((lv for lv in ramp if lv.concurrency == c), None)


@singledispatch
def _words(measured: Measured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    """Any measured figures without words of their own: every field, by its name."""
    return words.mapping(measured.to_json(), _short)


def _voice_ttfa(m: TtftMeasured, summary: Summary | None) -> str | None:
    """A voice claim's figures: the calls' judged TTFA at the level judged, with its
    intervals, and the turn detection the calls used (None: no voice claim judged)."""
    if m.voice_turn_detection is None:
        return None
    how = (f"server VAD, {m.voice_silence_ms} ms window asked"
           if m.voice_turn_detection == "server_vad" else "client turn detection")
    voice = summary.voice if summary is not None else None
    lv = voice.level(m.voice_calls) if voice is not None and m.voice_calls else None
    if lv is None:
        return f"realtime calls ({_short(how)}): no level judged the claim"
    ttfa = lv.ttfa_judged_s
    return (f"judged time to first audio {pct_text(ttfa, 'p50', n=False)} · "
            f"{pct_text(ttfa, 'p90', n=False)} at {fmt_value(m.voice_calls)} calls"
            f"{n_text(ttfa)} ({_short(how)})")


@_words.register
def _(m: TtftMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    voice = _voice_ttfa(m, summary)
    if voice is not None and m.concurrency is None:
        return voice
    text = _ttft(m, ramp)
    return text if voice is None else f"{text}; {voice}"


def _ttft(m: TtftMeasured, ramp: tuple[Level, ...]) -> str:
    lv = _level(ramp, m.concurrency)
    if lv is None:
        return words.mapping(m.to_json(), _short)
    at = _at(m.concurrency) if m.concurrency is not None else ""
    ttft = lv.ttft_s
    said = (f"TTFT {pct_text(ttft, 'p50', n=False)} · {pct_text(ttft, 'p90', n=False)}{at}"
            f"{n_text(ttft)}")
    if m.reasoning_first is None:
        return said
    ttfa = lv.ttfa_s
    return (f"TTFA (judged: reasoning came first) {pct_text(ttfa, 'p50', n=False)} · "
            f"{pct_text(ttfa, 'p90', n=False)}{n_text(ttfa)}; {said}")


@_words.register
def _(m: ThroughputMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    lv = _level(ramp, m.concurrency)
    if lv is None:
        return words.mapping(m.to_json(), _short)
    rate = lv.stream_tokens_per_s
    return (f"per stream {pct_text(rate, 'p50', fmt_rate, n=False)}; all streams "
            f"{fmt_rate(lv.aggregate_tokens_per_s)}{ci_text(lv.aggregate_ci, fmt_rate)}"
            f"{_at(m.concurrency)}{n_text(rate)}")


@_words.register
def _(m: PrefillDecodeMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    base = summary.sections.baseline if summary is not None else None
    alone = base.stream_tokens_per_s if base is not None else Pct()
    return (f"prefill {fmt_rate(m.prefill_tokens_per_s)}"
            f"{ci_text(m.prefill_tokens_per_s_ci, fmt_rate)}; decode one stream alone p50 "
            f"{fmt_rate(m.decode_tokens_per_s_per_stream_p50)}"
            f"{ci_text(m.decode_tokens_per_s_per_stream_p50_ci, fmt_rate)}{n_text(alone)}")


@_words.register
def _(m: ConcurrencyMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    shown = [words.field(k, v, _short) for k, v in (
        ("max_sustained_concurrency", m.max_sustained_concurrency),
        ("breaking_concurrency", m.breaking_concurrency),
        ("first_tie_concurrency", m.first_tie_concurrency)) if v is not None]
    text = "; ".join(shown) or "—"
    if m.max_sustained_concurrency is None:
        text = "max sustained: not established; " + text
    if m.first_degraded:
        ramp_section = summary.sections.ramp if summary is not None else None
        tied = ramp_section.first_degraded_tied if ramp_section is not None else ()
        text += f"; first to degrade: {words.degraded(m.first_degraded, tied)}"
    if m.voice_first_degraded is not None or m.voice_max_sustained_calls is not None:
        calls = (f"realtime calls: most sustained {fmt_value(m.voice_max_sustained_calls)}"
                 + (f"; broke at {fmt_value(m.voice_breaking_calls)} calls on "
                    f"{_short(m.voice_first_degraded)}" if m.voice_first_degraded else
                    "; nothing degraded"))
        text = calls if m.max_sustained_concurrency is None and m.first_degraded is None \
            else f"{text}; {calls}"
    return text


@_words.register
def _(m: ObservabilityMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    has = "a per-stream inter-token histogram" if m.per_stream_itl else \
        "no per-stream inter-token histogram"
    return (f"{has} in the endpoint's metrics ({_short(m.engine or 'unknown')} "
            f"names): {fmt_value(m.itl_observations)} observations over "
            f"{fmt_value(m.scrapes_ok)} scrapes")


@_words.register
def _(m: PanelMeasured, ramp: tuple[Level, ...], summary: Summary | None) -> str:
    parts = []
    if m.baseline is not None:
        parts.append(words.stream_distribution(m.baseline, "alone"))
    for at in (m.sustained, m.sold):
        if at is not None:
            parts.append(words.stream_distribution(at.shown, f"at {at.concurrency} streams"))
    if m.sold is not None:  # the TTFT at the level sold, in ms with its intervals and n
        t = m.sold_ttft or Shown()
        parts.append(f"TTFT at {m.sold.concurrency} streams: "
                     f"{words.percentile(t.p50, t.ci.get('p50'), 'p50', 'ms')} · "
                     f"{words.percentile(t.p90, t.ci.get('p90'), 'p90', 'ms')}"
                     f"{words.sample_count(t.n)}")
    if m.our_panel is not None:
        parts.append(words.our_panel(m.our_panel))
    return "; ".join(parts)
