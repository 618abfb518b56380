"""The voice-agent fit of a run that measured realtime calls: judged on what a caller
hears (time to first audio and underruns of the calls, summary.json's `voice` section),
not on a text stream's TTFT (SPEC: "The voice-agent fit is judged on TTFA and underruns
when a run has them"). No I/O.

Fail closed: a voice section that is invalid, of no stated validity, or answered no turn
is "not verified", never fit; the fit is the most concurrent calls the section found
within the voice SLO (`evalkit.analysis.voice`: judged TTFA p90's interval wholly at or
under 0.5 s, noticeable underruns, refusals and failures clear), and every reason says
what it was judged on, so page one does.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceLevel, VoiceSection
from evalkit.fmt import fmt_s
from evalkit.review.fit import Fit
from evalkit.review.rules import join, quote

#: the use case a voice section judges (`Tolerances.slo_profiles`' name)
VOICE_USE_CASE = "voice_agent"
#: what every voice-judged reason starts with: page one says which figures judged it
JUDGED_ON = "Judged on time to first audio and underruns of realtime calls, not text TTFT"


def _calls(n: int | None) -> str:
    return f"{n if n is not None else '?'} call{'s' if n != 1 else ''}"


def _limits(voice: VoiceSection) -> str:
    """The voice SLO as the section held the levels to it."""
    slo = voice.slo
    share = f"{slo.underrun_share * 100:g}%" if slo.underrun_share is not None else "?"
    fail = f"{slo.failure_rate * 100:g}%" if slo.failure_rate is not None else "?"
    return (f"judged TTFA p90 ≤ {fmt_s(slo.ttfa_p90_s)}, answers with playback dry for more "
            f"than {fmt_s(slo.stall_s)} ≤ {share}, calls refused and turns failed ≤ {fail}")


def _held(level: VoiceLevel) -> str:
    """What a level within the SLO measured."""
    under = level.noticeable_underrun
    return (f"judged TTFA p90 {fmt_s(level.ttfa_judged_s.p90)}, "
            f"{under.count if under.count is not None else '?'} of "
            f"{under.of if under.of is not None else '?'} answers with a noticeable underrun")


def voice_fit(voice: VoiceSection) -> Fit:
    """The voice-agent fit from a run's realtime calls (fit None: not verified)."""
    status = voice.validity.status
    if status not in ("valid", "degraded"):
        why = (quote(voice.validity.reasons[0], 200) if voice.validity.reasons
               else "it states no validity")
        word = "invalid" if status == "invalid" else "of no stated validity"
        return Fit(None, f"Not verified: the realtime calls are {word} ({why}). {JUDGED_ON}.")
    if not voice.measured:
        return Fit(None, f"Not verified: no realtime call was answered with audio. {JUDGED_ON}.")
    first_out = next((lv for lv in voice.levels if lv.slo != "within"), None)
    within = voice.max_calls_within_slo
    held = voice.level(within) if within is not None else None
    limits = _limits(voice)
    if held is None or within is None:
        lv = first_out
        reasons = join([quote(r, 200) for r in lv.slo_reasons]) if lv else ""
        at = _calls(lv.concurrency if lv else None)
        if lv is not None and lv.slo == "outside":
            return Fit(False, f"{JUDGED_ON}: fails the voice-agent limits ({limits}) even at "
                       f"{at}: {reasons}.")
        return Fit(None, f"{JUDGED_ON}: not decided at {at}: {reasons or 'not judged'}.")
    if first_out is None or voice.within_slo_lower_bound:
        return Fit(True, f"{JUDGED_ON}: holds the voice-agent limits ({limits}) at every level "
                   f"tried, up to {_calls(within)} ({_held(held)}); not tried above {within}, "
                   "so that is a lower bound.", within, lower_bound=True, unit="calls")
    return Fit(True, f"{JUDGED_ON}: holds the voice-agent limits ({limits}) up to "
               f"{_calls(within)} ({_held(held)}); at {first_out.concurrency}: "
               f"{join([quote(r, 200) for r in first_out.slo_reasons]) or 'not judged'}.",
               within, unit="calls")


def with_voice_fit(fits: Mapping[str, Fit], summary: Summary | None) -> dict[str, Fit]:
    """`fits` with the voice agent's judged on the run's realtime calls where it has them;
    a run without a voice section keeps its text-judged fits unchanged."""
    out = dict(fits)
    voice = summary.voice if summary is not None else None
    if voice is not None and VOICE_USE_CASE in out:
        out[VOICE_USE_CASE] = voice_fit(voice)
    return out
