"""A voice run's turns as a trace and its figures as metrics. Pure: run.json's facts,
the turn records and the typed voice section in, `RunTrace` and `RunMetrics` out.

A voice run (`evalkit probe --api openai-realtime`) writes no request record: its
evidence is turns.jsonl, one record a caller's turn. The trace is the run's span, a span
per level of concurrent calls (level 0: the connect gate's one call), a span per call,
and a CLIENT span per turn from its first audio frame sent to its last answer byte,
named "realtime {model}". The GenAI conventions (v1.41) name no operation for a
realtime speech turn, so `gen_ai.operation.name` is "realtime", a custom value as they
allow, rather than "chat" for what is not a chat completion. A turn's moments are its
events: the last voiced frame sent (TTFA's start), speech_stopped (the vendor's VAD
deciding), the first text, the first answer audio (its TTFA), the caller's interruption.

The metrics: per level, histograms of TTFA and of the judged TTFA (less the silence
window we asked the vendor's VAD to wait: `evalkit.analysis.voice.judged_ttfa`, the
figure the voice SLO judges), the turns' durations by outcome, and the summary's voice
figures as gauges: what a dashboard sets beside its own voice latency panels. Every
figure is the run's own; the same run sent twice is the same trace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from evalkit.analysis.summary_voice import VoiceLevel, VoiceSection
from evalkit.analysis.voice import judged_ttfa
from evalkit.rundir.otlp.figures import (
    SECONDS_BOUNDS,
    Counted,
    GaugePoint,
    MetricFamily,
    RunMetrics,
    pct_stats,
)
from evalkit.rundir.otlp.trace import (
    AttrValue,
    PlannedSpan,
    RunFacts,
    RunTrace,
    SpanEvent,
    group_span,
    stable_id,
)
from evalkit.sanitize import clean
from evalkit.voice.records import TurnRecord


def asked_window_s(voice: VoiceSection | None) -> float | None:
    """The silence window we asked the vendor's VAD to wait (None: the client ended each
    turn itself), as the summary's analysis reads it."""
    if voice is None or voice.detection != "server_vad" or voice.silence_ms is None:
        return None
    return voice.silence_ms / 1000


def _level_name(level: int) -> str:
    return "evalkit voice gate" if level == 0 else f"evalkit voice level {level}"


def build_voice_trace(facts: RunFacts, turns: Iterable[TurnRecord],
                      voice: VoiceSection | None) -> RunTrace:
    """The voice run's trace: run, levels, calls, turns (`RunTrace.requests` counts the
    turn spans)."""
    if facts.wall_origin_ns is None:
        raise ValueError("run.json places the run at no time (no clock.wall_ns, no "
                         "started_at): its spans cannot be put on a timeline")
    origin, ident = facts.wall_origin_ns, facts.identity
    window = asked_window_s(voice)
    level_status = {lv.concurrency: lv.status for lv in (voice.levels if voice else ())
                    if lv.concurrency is not None and lv.status}
    turn_spans: list[PlannedSpan] = []
    calls: dict[tuple[int, int], list[PlannedSpan]] = defaultdict(list)
    for i, rec in enumerate(turns):
        parent = stable_id(ident, f"call:{rec.level}:{rec.call}", 64)
        span = turn_span(facts, rec, origin, window,
                         stable_id(ident, f"turn:{i}:{rec.call}:{rec.turn}", 64), parent)
        turn_spans.append(span)
        calls[(rec.level, rec.call)].append(span)
    call_spans = [group_span(
        facts, f"evalkit call {call}", stable_id(ident, f"call:{level}:{call}", 64),
        stable_id(ident, f"vlevel:{level}", 64), children,
        {"evalkit.level": level, "evalkit.call": call, "evalkit.turns": len(children)})
        for (level, call), children in sorted(calls.items())]
    by_level: dict[int, list[PlannedSpan]] = defaultdict(list)
    for (level, _call), span in zip(sorted(calls), call_spans, strict=True):
        by_level[level].append(span)
    run_span = stable_id(ident, "run", 64)
    level_spans = [group_span(
        facts, _level_name(level), stable_id(ident, f"vlevel:{level}", 64), run_span,
        children, {"evalkit.phase": "connect" if level == 0 else "ramp",
                   "evalkit.level": level, "evalkit.calls": len(children),
                   **({"evalkit.validity": clean(level_status[level], 40)}
                      if level in level_status else {})})
        for level, children in sorted(by_level.items())]
    run_attrs: dict[str, AttrValue] = {
        "evalkit.run.kind": "probe", "evalkit.voice.turns": len(turn_spans),
        "evalkit.voice.calls": len(call_spans), **facts.server()}
    validity = voice.validity.status if voice else None
    for key, value in (("evalkit.run.id", facts.run_id), ("evalkit.run.status", facts.status),
                       ("evalkit.profile", facts.profile), ("evalkit.vendor", facts.vendor),
                       ("evalkit.validity", clean(validity, 40) if validity else None),
                       ("gen_ai.request.model", facts.model)):
        if value is not None:
            run_attrs[key] = value
    top = group_span(facts, f"evalkit voice probe {facts.model or ''}".strip(), run_span,
                     None, level_spans, run_attrs)
    return RunTrace(stable_id(ident, "trace", 128),
                    (top, *level_spans, *call_spans, *turn_spans), len(turn_spans))


def turn_span(facts: RunFacts, rec: TurnRecord, origin_ns: int, window_s: float | None,
              span_id: int, parent_id: int) -> PlannedSpan:
    """One caller turn as a client span, its moments as events."""
    op, provider = facts.operation
    start = origin_ns + round(rec.t0_s * 1e9)
    end_s = rec.end_s if rec.end_s is not None else rec.t0_s
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": op, "gen_ai.provider.name": provider,
        "gen_ai.system": provider, **facts.server(),
        "evalkit.level": rec.level, "evalkit.call": rec.call, "evalkit.turn": rec.turn,
        "evalkit.utterance": clean(rec.utterance, 80), "evalkit.detection": rec.detection,
        "evalkit.outcome": rec.outcome, "evalkit.audio_deltas": rec.audio_deltas}
    optional: tuple[tuple[str, AttrValue | None], ...] = (
        ("gen_ai.request.model", facts.model),
        ("gen_ai.response.id", clean(rec.response_id, 120) if rec.response_id else None),
        ("error.type", None if rec.outcome == "ok" else rec.outcome),
        ("evalkit.ttfa_s", rec.ttfa_s),
        ("evalkit.ttfa_judged_s", judged_ttfa(rec, window_s)),
        ("evalkit.vad_wait_s", rec.vad_wait_s), ("evalkit.vad_window_s", rec.vad_window_s),
        ("evalkit.text_ttft_s", rec.text_ttft_s),
        ("evalkit.answer_audio_s", rec.answer_audio_s),
        ("evalkit.underruns", rec.underruns), ("evalkit.underrun_s", rec.underrun_s),
        ("evalkit.ahead_ratio", rec.ahead_ratio),
        ("evalkit.interrupted_by", clean(rec.interrupted_by, 20)
         if rec.interrupted_by else None),
        ("evalkit.barge_in_s", rec.barge_in_s),
        ("evalkit.response_status", clean(rec.status, 40) if rec.status else None),
        ("evalkit.pace_late_max_s", rec.pace_late_max_s),
        ("evalkit.intake_blocked_max_s", rec.intake_blocked_max_s))
    attrs.update({k: v for k, v in optional if v is not None})
    return PlannedSpan(
        name=f"{op} {facts.model}" if facts.model else op, span_id=span_id,
        parent_id=parent_id, start_ns=start,
        end_ns=start + max(round((end_s - rec.t0_s) * 1e9), 0), kind="client",
        attributes=attrs, events=_moments(rec, origin_ns),
        error=None if rec.outcome == "ok" else clean(
            f"{rec.outcome}: {rec.error}" if rec.error else rec.outcome, 200))


def _moments(rec: TurnRecord, origin_ns: int) -> tuple[SpanEvent, ...]:
    """The last voiced frame sent, then what the vendor did after it, in time order."""
    if rec.voiced_end_s is None:
        return ()
    began = rec.voiced_end_s

    def at(offset_s: float) -> int:
        return origin_ns + round((began + offset_s) * 1e9)

    events = [SpanEvent("evalkit.voiced_end", at(0.0))]
    for name, offset, key in (("evalkit.speech_stopped", rec.vad_wait_s, "evalkit.vad_wait_s"),
                              ("evalkit.first_text", rec.text_ttft_s, "evalkit.text_ttft_s"),
                              ("evalkit.first_audio", rec.ttfa_s, "evalkit.ttfa_s")):
        if offset is not None:
            events.append(SpanEvent(name, at(offset), {key: offset}))
    return tuple(sorted(events, key=lambda e: e.time_ns))


def build_voice_metrics(facts: RunFacts, turns: Iterable[TurnRecord],
                        voice: VoiceSection | None, start_ns: int, end_ns: int) -> RunMetrics:
    """Per level: TTFA and judged TTFA histograms (answered turns), turn durations (every
    outcome); the summary's voice figures as gauges."""
    op, provider = facts.operation
    base: dict[str, AttrValue] = {"gen_ai.operation.name": op, "gen_ai.provider.name": provider,
                                  **facts.server()}
    if facts.model:
        base["gen_ai.request.model"] = facts.model
    window = asked_window_s(voice)
    ttfa, judged, duration = Counted(SECONDS_BOUNDS), Counted(SECONDS_BOUNDS), \
        Counted(SECONDS_BOUNDS)
    for rec in turns:
        attrs = {**base, "evalkit.level": rec.level}
        if rec.end_s is not None:
            failed = {"error.type": rec.outcome} if rec.outcome != "ok" else {}
            duration.add({**attrs, **failed}, max(rec.end_s - rec.t0_s, 0.0))
        if rec.outcome != "ok" or rec.ttfa_s is None:
            continue
        ttfa.add(attrs, rec.ttfa_s)
        judged_s = judged_ttfa(rec, window)
        if judged_s is not None:
            judged.add(attrs, judged_s)
    families = [
        MetricFamily("gen_ai.client.operation.duration", "s",
                     "Each caller turn, from its first audio frame sent until the answer "
                     "ended, whatever its outcome", "histogram", duration.points(),
                     SECONDS_BOUNDS),
        MetricFamily("evalkit.voice.time_to_first_audio", "s",
                     "From the last voiced frame sent to the first answer audio (TTFA)",
                     "histogram", ttfa.points(), SECONDS_BOUNDS),
        MetricFamily("evalkit.voice.time_to_first_audio_judged", "s",
                     "TTFA less the silence window evalkit asked the vendor's VAD to wait "
                     "(the figure the voice SLO judges)", "histogram", judged.points(),
                     SECONDS_BOUNDS),
        *_voice_gauges(facts, voice, base)]
    return RunMetrics(start_ns, end_ns, tuple(f for f in families if f.points))


#: (metric name, unit, description, the level's distribution)
_DISTRIBUTIONS = (
    ("evalkit.voice.ttfa", "s", "TTFA percentiles of the level (summary.json)", "ttfa_s"),
    ("evalkit.voice.ttfa_judged", "s", "Judged TTFA percentiles of the level (summary.json)",
     "ttfa_judged_s"),
    ("evalkit.voice.ahead_ratio", "1",
     "Answer audio seconds received per wall second (summary.json)", "ahead_ratio"),
)


def _voice_gauges(facts: RunFacts, voice: VoiceSection | None,
                  base: dict[str, AttrValue]) -> list[MetricFamily]:
    """The voice section's figures as gauges; nothing for a figure it does not have."""
    if voice is None:
        return []
    run: dict[str, AttrValue] = {**base}
    for key, value in (("evalkit.run.id", facts.run_id), ("evalkit.vendor", facts.vendor)):
        if value is not None:
            run[key] = value
    levels: Sequence[tuple[dict[str, AttrValue], VoiceLevel]] = [
        ({**run, "evalkit.level": lv.concurrency}, lv) for lv in voice.levels
        if lv.concurrency is not None]
    out = [MetricFamily(name, unit, what, "gauge", tuple(
        GaugePoint({**g, "evalkit.stat": stat}, value)
        for g, lv in levels for stat, value in pct_stats(getattr(lv, attr))))
        for name, unit, what, attr in _DISTRIBUTIONS]
    shares = (("evalkit.voice.noticeable_underrun_share", "noticeable_underrun",
               "Share of answered turns with a noticeable underrun"),
              ("evalkit.voice.failure_share", "failures", "Share of turns that failed"),
              ("evalkit.voice.refusal_share", "admission", "Share of calls refused"))
    for name, attr, what in shares:
        out.append(MetricFamily(name, "1", what, "gauge", tuple(
            GaugePoint(g, share) for g, lv in levels
            if (share := getattr(lv, attr).share) is not None)))
    out.append(MetricFamily("evalkit.voice.underruns", "{underrun}",
                            "Moments a player at 1x would have run dry", "gauge", tuple(
                                GaugePoint(g, float(lv.underruns)) for g, lv in levels
                                if lv.underruns is not None)))
    if voice.max_sustained_calls is not None:
        out.append(MetricFamily("evalkit.voice.max_sustained_calls", "{call}",
                                "The highest level of concurrent calls before one degraded",
                                "gauge", (GaugePoint(run, float(voice.max_sustained_calls)),)))
    if voice.max_calls_within_slo is not None:  # none verified: no point, never a 0
        out.append(MetricFamily("evalkit.voice.max_calls_within_slo", "{call}",
                                "The most concurrent calls within the voice SLO", "gauge",
                                (GaugePoint(run, float(voice.max_calls_within_slo)),)))
    if voice.validity.status:
        out.append(MetricFamily("evalkit.validity", "1",
                                "The run's validity (the point's evalkit.validity names it)",
                                "gauge", (GaugePoint({**run, "evalkit.validity": clean(
                                    voice.validity.status, 40)}, 1.0),)))
    return out
