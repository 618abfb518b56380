"""Realtime calls under load: turn records in, summary.json's typed `voice` section out.
Pure: no I/O.

Each level's figures come from its steady-state window (the turns that began while all
its calls were in flight), with the text ramp's statistics: percentiles with their exact
95 % intervals (`evalkit.analysis.intervals`), shares with Clopper-Pearson intervals.

**Which degrades first.** Each level is judged against the base level (the lowest one
judged: the calls alone, as the baseline is for text) on what a caller hears or suffers:

- `ttfa`: its judged TTFA p90's interval lies wholly above `ttfa_p90_ratio` (2) times the
  base level's p90 (judged TTFA: less the silence window *we* asked the vendor's VAD to
  wait, at most what its speech_stopped says it waited: our setting is not the vendor's
  delay, though the caller hears both; `judged_ttfa`);
- `underruns`: the share of answered turns with a **noticeable underrun** (the 1x player
  ran dry for more than `stall_s`, 0.3 s, in all over the answer: SPEC's voice-agent "no
  stall above 0.3 s", summed, so ten 40 ms gaps count as the one 0.4 s gap they sound
  like) has its interval wholly above `underrun_share` (1 %);
- `admission`: calls refused (the session not admitted; over every call the level
  dialled, as a refusal is never in flight), likewise above `failure_rate`;
- `failures`: turns of admitted calls that failed (an error event, a cut, no answer in
  time), likewise.

An interval that straddles its limit is a tie, which decides nothing; a share at or below
its limit is clear. A level where the client was the bottleneck (its event loop, CPU or
frame pace) is judged on nothing but refusals (a 429 is the vendor's word, whatever our
pace).

**The voice SLO.** A level is within it when its judged TTFA p90's interval lies wholly at
or under 0.5 s (SPEC's voice-agent profile; its upper end needs 36 answered turns) and its
noticeable-underrun, refusal and failure shares are clear. The most concurrent calls
within it is the top of the unbroken run of levels within it from the lowest.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.jsonread import Json
from evalkit.analysis.stats import percentiles, steady_state_window
from evalkit.analysis.summarize import SummaryMeta, summarize
from evalkit.analysis.summary_levels import Pct, read_pct
from evalkit.analysis.summary_voice import (
    VOICE_METRICS,
    Share,
    VoiceAudio,
    VoiceAudioTotals,
    VoiceClient,
    VoiceLevel,
    VoiceSection,
    VoiceSlo,
    VoiceValidity,
    VoiceWindow,
)
from evalkit.analysis.thresholds import Thresholds, default_slo_profiles
from evalkit.analysis.validity import MOSTLY_FAILED_OK_SHARE
from evalkit.voice.records import TurnRecord

#: the turn outcomes that are a failure of an admitted call
FAILED = ("error", "incomplete", "timeout")

RULES = {
    "ttfa": "TTFA is timed from the moment the last voiced frame of the caller's "
            "utterance went to the socket to the arrival of the first answer audio byte; "
            "never from the vendor's speech_stopped, whose audio_end_ms holds its own "
            "silence window (vad_window_s, reported beside it)",
    "ttfa_judged": "the vendor is judged on TTFA less the silence window we asked its VAD "
                   "to wait (our setting, --silence-ms), never more than its "
                   "speech_stopped says it waited; with client turn detection, TTFA whole",
    "noticeable_underrun": "an answer's playback (a player starting at its first byte at "
                           "1x, no jitter buffer) ran dry for more than stall_s in all",
    "degradation": "a level degrades on ttfa when the 95 % interval of its judged TTFA p90 lies "
                   "wholly above ttfa_p90_ratio times the base level's p90, on underruns, "
                   "admission or failures when the interval of its share (answers with a "
                   "noticeable underrun, calls refused, turns of admitted calls failed) "
                   "lies wholly above its limit; a straddling interval is a tie; a "
                   "client-bound level is not judged, but on calls refused (the vendor's "
                   "word, not our client's pace)",
    "slo": "a level is within the voice SLO when its judged TTFA p90's 95 % interval lies wholly "
           "at or under ttfa_p90_s and its noticeable-underrun, refusal and failure shares "
           "are at or under their limits; the most calls within it is the top of the "
           "unbroken run of levels within it from the lowest",
}


@dataclass(frozen=True)
class VoiceLimits:
    """The voice SLO and the degradation limits (defaults: SPEC's voice-agent profile
    and the text ramp's thresholds)."""

    ttfa_p90_s: float = 0.5
    stall_s: float = 0.3
    underrun_share: float = 0.01
    failure_rate: float = 0.01
    ttfa_p90_ratio: float = 2.0

    @classmethod
    def defaults(cls, thresholds: Thresholds | None = None) -> VoiceLimits:
        """From the voice-agent SLO profile and the run's thresholds."""
        th = thresholds or Thresholds()
        voice = default_slo_profiles()["voice_agent"]
        return cls(ttfa_p90_s=voice.ttft_p90_s or 0.5, stall_s=voice.itl_p99_s or 0.3,
                   underrun_share=th.admission_failure_rate,
                   failure_rate=th.admission_failure_rate, ttfa_p90_ratio=th.ttft_p90_ratio)


@dataclass(frozen=True)
class VoiceFacts:
    """What the run did, beyond the records (the probe's plan)."""

    api: str = "openai-realtime"
    detection: str = "server_vad"
    frame_ms: int = 20
    silence_ms: int = 500
    turns_per_call: int = 3
    audio: VoiceAudio = field(default_factory=VoiceAudio)


def _pct(values: Sequence[float | None]) -> Pct:
    return read_pct(percentiles([v for v in values if v is not None]))


def _share(count: int, of: int, limit: float | None = None) -> Share:
    """A share with its exact interval; with a limit, the call: breach (the interval
    wholly above), tie (the share above, the interval reaching below), clear."""
    if of <= 0:
        return Share(count, of)
    ci = proportion_interval(count, of)
    share = count / of
    call = None
    if limit is not None:
        call = ("breach" if ci is not None and ci[0] > limit else
                "tie" if share > limit else "clear")
    return Share(count, of, round(share, 6), None if ci is None else (ci[0], ci[1]), call)


def _waited(turn: TurnRecord) -> tuple[float, float]:
    """When the turn waited for its answer and heard it: from its last voiced frame (or
    its start, if it never spoke) to its end."""
    began = turn.voiced_end_s if turn.voiced_end_s is not None else turn.t0_s
    return began, max(turn.end_s if turn.end_s is not None else began, began)


def _window(turns: Sequence[TurnRecord], level: int
            ) -> tuple[list[TurnRecord], VoiceWindow | None]:
    """The turns answered (in part) while the level's calls were all in flight: a call
    of one turn starts with the level, so a turn's start says nothing; its answer's
    span against the window does (the drain's turns, after the first call ended, and
    a slow start's, before the last one began, are left out)."""
    calls: dict[int, list[TurnRecord]] = {}
    for t in turns:
        calls.setdefault(t.call, []).append(t)
    starts = [min(t.t0_s for t in ts) for ts in calls.values()]
    ends = [max(max(t.end_s or t.t0_s, t.t0_s) for t in ts) for ts in calls.values()]
    win = steady_state_window(starts, ends, level)
    if win is None:
        return list(turns), None
    inside = [t for t in turns if _waited(t)[0] <= win.end_s and _waited(t)[1] >= win.start_s]
    window = VoiceWindow(round(win.start_s, 6), round(win.end_s, 6), win.basis,
                         None if win.mean_inflight is None else round(win.mean_inflight, 3))
    return (inside, window) if inside else (list(turns), replace(window, basis="whole"))


def audio_totals(by_call: Mapping[int, Sequence[TurnRecord]]) -> VoiceAudioTotals:
    """What the admitted calls (those not refused outright) sent and heard in all their
    turns, and their time on the line; the caller's audio is None where no turn kept it
    (records written before evalkit did)."""
    admitted = [ts for ts in by_call.values() if not all(t.outcome == "rejected" for t in ts)]
    line = sum(max(max(t.end_s or t.t0_s, t.t0_s) for t in ts) - min(t.t0_s for t in ts)
               for ts in admitted)
    sent = [t.input_audio_s for ts in admitted for t in ts if t.input_audio_s is not None]
    heard = sum(t.answer_audio_s or 0.0 for ts in admitted for t in ts)
    return VoiceAudioTotals(len(admitted), round(line, 6), round(sum(sent), 6) if sent
                            else None, round(heard, 6))


def judged_ttfa(turn: TurnRecord, asked_window_s: float | None) -> float | None:
    """The vendor's part of a turn's TTFA: less the silence window we asked its VAD to
    wait (our setting, not its delay), but never more than its speech_stopped says it
    waited (a vendor that waits less gains nothing; one that says nothing is charged
    the whole TTFA)."""
    if turn.ttfa_s is None:
        return None
    if asked_window_s is None:
        return turn.ttfa_s
    waited = max(0.0, min(asked_window_s, turn.vad_window_s or 0.0))
    return round(turn.ttfa_s - waited, 6)


def level_figures(level: int, turns: Sequence[TurnRecord], check: VoiceClient | None,
                  limits: VoiceLimits, asked_window_s: float | None = None) -> VoiceLevel:
    """One level's figures, before it is judged against the base level (`asked_window_s`:
    the silence window asked of the vendor's VAD; None: the client ended each turn)."""
    inside, window = _window(turns, level)
    ok = [t for t in inside if t.outcome == "ok"]
    heard = [t for t in ok if t.underruns is not None]
    by_call: dict[int, list[TurnRecord]] = {}
    for t in turns:  # admission is judged over every call the level dialled
        by_call.setdefault(t.call, []).append(t)
    refused = sum(1 for ts in by_call.values() if all(t.outcome == "rejected" for t in ts))
    admitted = [t for t in inside if t.outcome != "rejected"]
    failed = [t for t in admitted if t.outcome in FAILED]
    errors = Counter(t.error for t in inside if t.outcome != "ok" and t.error)
    check = check or VoiceClient()
    cpu = check.cpu_fraction
    return VoiceLevel(
        concurrency=level, calls=len({t.call for t in turns}), turns=len(inside),
        turns_in_level=len(turns), window=window,
        outcomes={o: n for o, n in Counter(t.outcome for t in inside).items()},
        ttfa_s=_pct([t.ttfa_s for t in ok]),
        ttfa_judged_s=_pct([judged_ttfa(t, asked_window_s) for t in ok]),
        vad_window_s=_pct([t.vad_window_s for t in ok]),
        vad_wait_s=_pct([t.vad_wait_s for t in ok]),
        text_ttft_s=_pct([t.text_ttft_s for t in ok]),
        answer_audio_s=_pct([t.answer_audio_s for t in ok]),
        ahead_ratio=_pct([t.ahead_ratio for t in ok]),
        barge_in_s=_pct([t.barge_in_s for t in inside]),
        underruns=sum(t.underruns or 0 for t in heard),
        underrun_s=round(sum(t.underrun_s or 0.0 for t in heard), 6),
        with_underrun=_share(sum(1 for t in heard if (t.underruns or 0) > 0), len(heard)),
        noticeable_underrun=_share(sum(1 for t in heard if (t.underrun_s or 0.0)
                                       > limits.stall_s), len(heard), limits.underrun_share),
        admission=_share(refused, len(by_call), limits.failure_rate),
        failures=_share(len(failed), len(admitted), limits.failure_rate),
        failure_kinds={o: sum(1 for t in inside if t.outcome == o)
                       for o in ("rejected", *FAILED)},
        top_error=errors.most_common(1)[0][0] if errors else None,
        client=replace(check, cpu_per_call=None if cpu is None else round(cpu / level, 5),
                       client_bound=bool(check.client_bound)),
        audio_totals=audio_totals(by_call))


def _ttfa_against(lvl: VoiceLevel, base_p90: float | None, limit: float
                  ) -> tuple[float | None, tuple[float | None, float | None] | None,
                             str | None]:
    p90 = lvl.ttfa_judged_s.p90
    if p90 is None or base_p90 is None or base_p90 <= 0:
        return None, None, None
    lo, hi = lvl.ttfa_judged_s.ci.get("p90") or (None, None)
    ci = (None if lo is None else round(lo / base_p90, 4),
          None if hi is None else round(hi / base_p90, 4))
    call = ("breach" if ci[0] is not None and ci[0] > limit else
            "clear" if ci[1] is not None and ci[1] <= limit else "tie")
    return round(p90 / base_p90, 4), ci, call


def _excess(lvl: VoiceLevel, metric: str, limits: VoiceLimits) -> float:
    if metric == "ttfa":
        return (lvl.ttfa_p90_ratio or 0.0) / limits.ttfa_p90_ratio
    share = {"underruns": lvl.noticeable_underrun, "admission": lvl.admission,
             "failures": lvl.failures}[metric]
    limit = limits.underrun_share if metric == "underruns" else limits.failure_rate
    return (share.share or 0.0) / limit


def judge_level(lvl: VoiceLevel, base: VoiceLevel | None, limits: VoiceLimits
                ) -> VoiceLevel:
    """The level against the base level and against the voice SLO."""
    base_p90 = None if base is None or base is lvl else base.ttfa_judged_s.p90
    ratio, ratio_ci, ttfa_call = _ttfa_against(lvl, base_p90, limits.ttfa_p90_ratio)
    calls = {"ttfa": ttfa_call, "underruns": lvl.noticeable_underrun.call,
             "admission": lvl.admission.call, "failures": lvl.failures.call}
    lvl = replace(lvl, ttfa_p90_ratio=ratio, ttfa_p90_ratio_ci=ratio_ci, ttfa_call=ttfa_call)
    breaches = tuple(sorted((m for m in VOICE_METRICS if calls[m] == "breach"),
                            key=lambda m: (-_excess(lvl, m, limits), VOICE_METRICS.index(m))))
    ties = tuple(m for m in VOICE_METRICS if calls[m] == "tie")
    ok = lvl.outcomes.get("ok", 0)
    if not lvl.turns:
        status = "no_data"
    elif lvl.client.client_bound and "admission" in breaches:
        # a busy client slows what it times, never what the vendor says: calls refused
        # at this load are a breach all the same (as the text ramp keeps its answers')
        status, breaches, ties = "breached", ("admission",), ()
    elif lvl.client.client_bound:
        status, breaches, ties = "client_bound", (), ()
    elif ok < MOSTLY_FAILED_OK_SHARE * lvl.turns:
        status = "failed"
        if not breaches:  # what failed most names it
            breaches = (("admission",) if (lvl.admission.count or 0)
                        >= (lvl.failures.count or 0) else ("failures",))
    elif breaches:
        status = "breached"
    elif ties:
        status = "tie"
    else:
        status = "sustained"
    slo, why = _slo(lvl, status, limits)
    return replace(lvl, breaches=breaches, ties=ties, status=status, slo=slo,
                   slo_reasons=why)


def _slo(lvl: VoiceLevel, status: str, limits: VoiceLimits) -> tuple[str, tuple[str, ...]]:
    """The level against the voice SLO: within, outside, tie or not_judged, and why."""
    if status in ("no_data", "client_bound"):
        return "not_judged", ("the client was the bottleneck" if status == "client_bound"
                              else "nothing was measured",)
    out: list[str] = []
    tie: list[str] = []
    p90 = lvl.ttfa_judged_s.p90
    lo, hi = lvl.ttfa_judged_s.ci.get("p90") or (None, None)
    if p90 is None:
        out.append("no turn was answered")
    elif lo is not None and lo > limits.ttfa_p90_s:
        out.append(f"judged TTFA p90 {p90:.3f} s: its interval lies above {limits.ttfa_p90_s:g} s")
    elif hi is None or hi > limits.ttfa_p90_s:
        tie.append(f"judged TTFA p90 {p90:.3f} s: its interval reaches above "
                   f"{limits.ttfa_p90_s:g} s" + (" (fewer than 36 answered turns cannot "
                                                  "bound a p90 from above)" if hi is None
                                                  else ""))
    for name, share in (("answers with a noticeable underrun", lvl.noticeable_underrun),
                        ("calls refused", lvl.admission), ("turns failed", lvl.failures)):
        said = f"{name}: {share.count} of {share.of}"
        if share.call == "breach":
            out.append(said)
        elif share.call == "tie":
            tie.append(f"{said} (its interval straddles the limit)")
    if out:
        return "outside", tuple(out + tie)
    return ("tie", tuple(tie)) if tie else ("within", ())


def _conclusion(judged: Sequence[VoiceLevel]) -> dict[str, Any]:
    first = next((lv for lv in judged if lv.status in ("breached", "failed")), None)
    cap = first.concurrency if first is not None and first.concurrency else 10**9
    held = [lv.concurrency for lv in judged
            if lv.status == "sustained" and lv.concurrency is not None and lv.concurrency < cap]
    within: int | None = None
    for lv in judged:
        if lv.slo != "within":
            break
        within = lv.concurrency
    top = judged[-1].concurrency if judged else None
    return {"first_degraded": first.breaches[0] if first and first.breaches else None,
            "first_degraded_level": None if first is None else first.concurrency,
            "degraded_together": first.breaches if first else (),
            "max_sustained_calls": max(held) if held else None,
            "max_calls_within_slo": within,
            "within_slo_lower_bound": within is not None and within == top}


def voice_section(turns: Sequence[TurnRecord], checks: Mapping[int, VoiceClient],
                  facts: VoiceFacts, run_status: str | None = None,
                  limits: VoiceLimits | None = None) -> VoiceSection:
    """summary.json's `voice` section from a run's turn records (level 0, the connect
    gate's call, is no level) and each level's client self-check."""
    limits = limits or VoiceLimits.defaults()
    by_level: dict[int, list[TurnRecord]] = {}
    for t in turns:
        if t.level >= 1:
            by_level.setdefault(t.level, []).append(t)
    asked = facts.silence_ms / 1000 if facts.detection == "server_vad" else None
    figures = [level_figures(c, ts, checks.get(c), limits, asked)
               for c, ts in sorted(by_level.items())]
    base = next((lv for lv in figures if not lv.client.client_bound
                 and lv.ttfa_judged_s.p90 is not None), None)
    judged = [judge_level(lv, base, limits) for lv in figures]
    cpu = [lv.client.cpu_per_call for lv in judged if lv.client.cpu_per_call is not None]
    section = VoiceSection(
        api=facts.api, detection=facts.detection, frame_ms=facts.frame_ms,
        silence_ms=facts.silence_ms if facts.detection == "server_vad" else None,
        turns_per_call=facts.turns_per_call, audio=facts.audio, levels=tuple(judged),
        base_concurrency=None if base is None else base.concurrency,
        **_conclusion(judged),
        client_bound_levels=tuple(lv.concurrency for lv in judged
                                  if lv.client.client_bound and lv.concurrency is not None),
        cpu_per_call=round(statistics.median(cpu), 5) if cpu else None,
        slo=VoiceSlo(limits.ttfa_p90_s, limits.stall_s, limits.underrun_share,
                     limits.failure_rate, limits.ttfa_p90_ratio),
        rules=RULES)
    return replace(section, validity=voice_validity(section, run_status),
                   note=_note(section))


def voice_validity(section: VoiceSection, run_status: str | None) -> VoiceValidity:
    """Fail closed: a run with no judged level, or no answered turn, is invalid; one cut
    short, or whose base level failed, or whose client was the bottleneck at or below
    the first degradation, is degraded."""
    reasons: list[str] = []
    status = "valid"

    def mark(level: str, why: str) -> None:
        nonlocal status
        rank = ("valid", "degraded", "invalid")
        status = max(status, level, key=rank.index)
        reasons.append(why)

    if run_status == "failed":
        mark("invalid", "the connect gate's call failed")
    elif run_status in ("interrupted", "crashed", "running"):
        mark("degraded", f"the run was {run_status}: figures cover only what was measured "
                         "before it stopped")
    judged = [lv for lv in section.levels if lv.status not in ("no_data", "client_bound")]
    if not any(lv.ttfa_s.measured for lv in section.levels):
        mark("invalid", "no turn of any level was answered with audio")
    elif not judged:
        mark("invalid", "no level of calls could be judged: each was client-bound or "
                        "measured nothing")
    base = section.level(section.base_concurrency) if section.base_concurrency else None
    if base is not None and base.status == "failed":
        mark("invalid", f"the base level ({base.concurrency} call"
                        f"{'s' if base.concurrency != 1 else ''}) mostly failed"
                        + (f": {base.top_error}" if base.top_error else ""))
    elif base is not None and base.failures.call in ("breach", "tie"):
        mark("degraded", f"the base level's turns failed: {base.failures.count} of "
                         f"{base.failures.of}")
    cap = section.first_degraded_level or 10**9
    bound = [c for c in section.client_bound_levels if c <= cap]
    if bound:
        mark("degraded", "the client was the bottleneck at level"
                         f"{'s' if len(bound) > 1 else ''} {', '.join(map(str, bound))}, "
                         "where the capacity judgement is drawn")
    return VoiceValidity(status, tuple(reasons))


def _note(section: VoiceSection) -> str | None:
    """What keeps the answer open, in words."""
    said: list[str] = []
    if section.first_degraded_level is None and section.levels:
        said.append("no level degraded: the highest level measured is a lower bound")
    if section.max_calls_within_slo is None and section.levels:
        first = next((lv for lv in section.levels if lv.slo != "within"), None)
        if first is not None and first.slo_reasons:
            said.append(f"level {first.concurrency} is not within the voice SLO: "
                        + "; ".join(first.slo_reasons))
    return "; ".join(said) or None


def audio_note(audio: VoiceAudio) -> str:
    """What the caller's audio means for the run, in words."""
    if audio.public:
        return ("The caller's audio is the utterances shipped with evalkit: a vendor that "
                "reads its source can recognise them and route them apart; --audio DIR "
                "sends your own callers' recordings.")
    return "The caller's audio is the buyer's own recordings (--audio DIR)."


def voice_summary(turns: Sequence[TurnRecord], checks: Mapping[int, VoiceClient],
                  facts: VoiceFacts, meta: SummaryMeta) -> dict[str, Json]:
    """The whole summary.json of a voice run: the text sections as a run of no request
    writes them, the `voice` section, and the run's validity, client and prompt-text
    verdicts taken from the calls (a reader of `validity` or `prompt_text` alone reads
    the voice run's, never "no request succeeded" or "unknown")."""
    doc: dict[str, Any] = summarize([], meta)  # the text sections, completed here
    audio = replace(facts.audio, note=audio_note(facts.audio))
    section = voice_section(turns, checks, replace(facts, audio=audio), meta.run_status,
                            VoiceLimits.defaults(meta.thresholds))
    doc["voice"] = section.to_json()
    doc["validity"] = {"status": section.validity.status,
                       "reasons": list(section.validity.reasons), "phases": {}, "levels": {}}
    cap = section.first_degraded_level or 10**9
    doc["client"].update(
        client_bound=bool(section.client_bound_levels),
        client_bound_levels=list(section.client_bound_levels),
        capacity_judgement_affected=any(c <= cap for c in section.client_bound_levels))
    doc["prompt_text"].update(recognisable=bool(audio.public),
                              recognisable_phases=["voice"] if audio.public else [],
                              note=audio.note)
    return doc
