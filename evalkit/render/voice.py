"""The scorecard's "Realtime voice calls" section, as plain strings (no I/O), from the
summary's typed `voice` section (`evalkit.analysis.summary_voice.VoiceSection`): a row a
level of concurrent calls (TTFA p50 and p90 with their 95 % intervals, the judged TTFA,
the vendor's VAD window, underruns, failures, whether our client was the bottleneck,
the level against the voice SLO), which degraded first and at what level, and the most
calls held within the SLO. Vendor words (the top error) are clipped; the template
escapes them."""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.analysis.summary_levels import Pct
from evalkit.analysis.summary_voice import VOICE_METRIC_WORDS, Share, VoiceLevel, VoiceSection
from evalkit.fmt import ci_text, fmt_ms
from evalkit.render.pdf import clip
from evalkit.review.scorecard import Scorecard
from evalkit.review.voicefit import VOICE_USE_CASE

Row = tuple[str, str]

#: a level against the voice SLO, as the page says it
SLO_WORDS = {"within": "within", "outside": "OUTSIDE", "tie": "tie (an interval straddles "
             "a limit)", "not_judged": "not judged"}


@dataclass(frozen=True)
class VoiceRow:
    """One level of concurrent calls as the table prints it."""

    calls: str
    turns: str
    ttfa_p50: str
    ttfa_p90: str
    judged_p90: str
    vad_window: str
    underruns: str
    failures: str
    client_bound: str
    slo: str


@dataclass(frozen=True)
class VoicePage:
    """The section: what was sent, a row a level, and what the ramp concluded."""

    intro: str
    rows: tuple[VoiceRow, ...]
    first_degraded: str
    within_slo: str
    validity: str
    note: str


def pct_ci(p: Pct, name: str) -> str:
    """A percentile in ms with its 95 % interval ('—' when not measured)."""
    value = p.get(name)
    if value is None:
        return "—"
    ci = p.interval(name)
    return f"{fmt_ms(value)}{ci_text(list(ci) if ci else None, fmt_ms)}"


def _share(s: Share) -> str:
    if s.of is None:
        return "—"
    return f"{s.count if s.count is not None else '?'} of {s.of}"


def _row(lv: VoiceLevel) -> VoiceRow:
    under = (f"{_share(lv.with_underrun)} answers ran dry; noticeably "
             f"{_share(lv.noticeable_underrun)}")
    fails = f"{_share(lv.failures)} turns; refused {_share(lv.admission)} calls"
    if lv.top_error:
        fails += f" ({clip(lv.top_error, 80)})"
    bound = lv.client.client_bound
    return VoiceRow(
        calls=str(lv.concurrency if lv.concurrency is not None else "?"),
        turns=f"{lv.turns if lv.turns is not None else '—'}",
        ttfa_p50=pct_ci(lv.ttfa_s, "p50"), ttfa_p90=pct_ci(lv.ttfa_s, "p90"),
        judged_p90=pct_ci(lv.ttfa_judged_s, "p90"),
        vad_window=(fmt_ms(lv.vad_window_s.p50) if lv.vad_window_s.p50 is not None
                    else "none (client turn detection)" if lv.vad_window_s.n in (None, 0)
                    else "—"),
        underruns=under, failures=fails,
        client_bound="unknown" if bound is None else "YES" if bound else "no",
        slo=SLO_WORDS.get(str(lv.slo), "—"))


def _first(voice: VoiceSection) -> str:
    if voice.first_degraded_level is None:
        return "Nothing degraded at the levels measured: the highest level is a lower bound."
    what = VOICE_METRIC_WORDS.get(str(voice.first_degraded), clip(str(voice.first_degraded), 30))
    together = [VOICE_METRIC_WORDS.get(m, m) for m in voice.degraded_together
                if m != voice.first_degraded]
    also = f" (with {', '.join(together)})" if together else ""
    return f"First degraded: {what}{also} at {voice.first_degraded_level} concurrent calls."


def _within(voice: VoiceSection) -> str:
    slo = voice.slo
    limits = (f"judged TTFA p90 at most {fmt_ms(slo.ttfa_p90_s)}, no answer's playback dry "
              f"for more than {fmt_ms(slo.stall_s)}")
    n = voice.max_calls_within_slo
    if n is None:
        return f"Most concurrent calls within the voice SLO ({limits}): none established."
    bound = " (the highest level measured: a lower bound)" if voice.within_slo_lower_bound \
        else ""
    return f"Most concurrent calls within the voice SLO ({limits}): {n}{bound}."


def voice_page(voice: VoiceSection | None) -> VoicePage | None:
    """The section of a voice run (None: the run made no realtime call)."""
    if voice is None:
        return None
    detection = ("the vendor's server VAD, asked to wait "
                 f"{voice.silence_ms if voice.silence_ms is not None else '?'} ms of silence"
                 if voice.detection == "server_vad" else "the client committing each turn")
    intro = (f"Calls of {voice.turns_per_call or '?'} turn(s) over "
             f"{clip(voice.api or '?', 40)}, utterances sent at real-time pace in "
             f"{voice.frame_ms or '?'} ms frames; turn detection: {detection}. TTFA is "
             "timed from the last voiced frame we sent to the first answer audio byte; the "
             "judged TTFA leaves out the silence window we asked for. "
             f"{clip(voice.audio.note or '', 300)}")
    status = voice.validity.status or "not stated"
    why = "; ".join(clip(r, 200) for r in voice.validity.reasons)
    return VoicePage(intro=intro.strip(), rows=tuple(_row(lv) for lv in voice.levels),
                     first_degraded=_first(voice), within_slo=_within(voice),
                     validity=f"Voice run validity: {status}{': ' + why if why else ''}.",
                     note=clip(voice.note or "", 600))


def _level_rows(lv: VoiceLevel, top: bool) -> list[Row]:
    """Page one's rows of one level of calls: judged TTFA, underruns, failures; a level
    where our client was the bottleneck says so instead of a figure of the vendor's."""
    at = f"{lv.concurrency} call{'s' if lv.concurrency != 1 else ''}"
    at += " (the highest level measured)" if top else ""
    row = _row(lv)
    if lv.client.client_bound is not False:
        why = ("our client was the bottleneck" if lv.client.client_bound
               else "the client's self-check is missing")
        return [(f"Calls at {at}", f"not judged: {why}; calls refused "
                 f"{_share(lv.admission)} (the vendor's word, whatever our pace)")]
    return [(f"Time to first audio (judged), {at}",
             f"{pct_ci(lv.ttfa_judged_s, 'p50')} p50 · {pct_ci(lv.ttfa_judged_s, 'p90')} p90 "
             f"(n={lv.ttfa_judged_s.n if lv.ttfa_judged_s.n is not None else 0})"),
            (f"Underruns and failures, {at}", f"{row.underruns}; {row.failures}")]


#: page one's row that stands where a text run's TTFT, stream rate and throughput go
TEXT_STREAMS_ROW = ("Text streams", "none: a voice run (realtime calls over WebSocket). "
                    "TTFT, stream rate and throughput do not apply; its calls are judged "
                    "on what a caller hears, above and under \"Realtime voice calls\"")


def voice_key_figures(card: Scorecard, voice: VoiceSection | None) -> tuple[Row, ...]:
    """Page one's rows for a voice run (none for a text run): the voice-agent fit and
    what it was judged on, the base level's TTFA, the highest level's judged TTFA,
    underruns and failures, what degraded first, the most calls within the voice SLO,
    and a row saying the run measured calls, not text streams (in place of the text
    figures, whose dashes would read as nothing measured)."""
    if voice is None:
        return ()
    uc = card.use_cases.get(VOICE_USE_CASE)
    rows: list[Row] = []
    if uc is not None:
        f = uc.fit
        word = (("not verified" if f.reason.startswith("Not verified") else "not decided")
                if f.fit is None else "does not fit" if f.fit is False else
                f"fits {'at least' if f.lower_bound else 'up to'} {f.max_concurrency} "
                "concurrent calls")
        rows.append(("Voice-agent fit", clip(f"{word}. {f.reason}", 900)))
    base = voice.level(voice.base_concurrency) if voice.base_concurrency else None
    if base is not None:
        rows.append((f"Time to first audio, {base.concurrency} call"
                     f"{'s' if base.concurrency != 1 else ''}",
                     f"{pct_ci(base.ttfa_s, 'p50')} p50 · "
                     f"{pct_ci(base.ttfa_s, 'p90')} p90 (n={base.ttfa_s.n})"))
    top = voice.levels[-1] if voice.levels else None
    if top is not None:
        rows += _level_rows(top, top is not base and len(voice.levels) > 1)
    else:
        rows.append(("Calls", "not measured: no level of calls"))
    rows.append(("First degraded", _first(voice).removeprefix("First degraded: ")))
    rows.append(("Most calls within the voice SLO", _within(voice).split(": ", 1)[-1]))
    rows.append(TEXT_STREAMS_ROW)
    return tuple(rows)


def voice_rules(voice: VoiceSection) -> tuple[Row, Row]:
    """Page one's degradation rule and the voice SLO for a voice run, in place of the
    text ramp's (TTFT and TPOT, which a voice run does not measure)."""
    slo = voice.slo
    ratio = f"{slo.ttfa_p90_ratio:g}" if slo.ttfa_p90_ratio is not None else "?"
    share = f"{slo.underrun_share * 100:g}%" if slo.underrun_share is not None else "?"
    fail = f"{slo.failure_rate * 100:g}%" if slo.failure_rate is not None else "?"
    return (("Degradation rule",
             "A level of concurrent calls is degraded when the 95 % interval of its judged "
             f"time to first audio p90 lies wholly above {ratio}× the base level's p90, or "
             "that of its share of answers whose playback ran dry for more than "
             f"{fmt_ms(slo.stall_s)} wholly above {share}, or of its calls refused or turns "
             f"failed wholly above {fail}; an interval that straddles a limit is a tie. A "
             "level where our client was the bottleneck is judged on refusals only."),
            ("Voice SLO", f"A level is within it when its judged TTFA p90's interval lies "
             f"wholly at or under {fmt_ms(slo.ttfa_p90_s)} and those shares are within their "
             "limits; the most calls within it is the top of the unbroken run of such "
             "levels from the lowest."))
