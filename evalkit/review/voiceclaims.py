"""Q1 and Q4 for a voice product: the questionnaire's voice claims (time to first audio,
concurrent calls and what a caller suffers first) set against the realtime calls of a
voice run (summary.json's `voice` section). No I/O.

A voice claim is checked only against realtime calls, and a text claim only against text
streams: a text run never verifies a voice claim, nor a voice run a text one. With both
kinds of claim, each part is judged on its own and the question takes the worse status
(one part unchecked leaves the question unverified, never green).

**Q1, time to first audio.** The claim is from the end of the caller's speech to the
first answer audio, *less* the silence window the vendor's VAD waits (the template says
so), which is what evalkit judges too (`evalkit.analysis.voice.judged_ttfa`: TTFA less
the window we asked for, never more than the vendor's speech_stopped says it waited).
The two are compared only where they assume the same thing: the same turn detection
(server VAD, or the client committing the turn) and, under server VAD, the same silence
window. Where they differ the claim is `unverified` and the reason names the run that
would check it (`--turn-detection`, `--silence-ms`): a vendor's figure at a 200 ms window
beside our run at 500 ms is unlike things, and comparing them would charge (or credit)
the vendor for our setting. Intervals decide, as for text TTFT (`rules.decide`).

**Q4, what a caller suffers first.** The voice run's signals are `ttfa`, `underruns`
(the 1x player ran dry), `admission` (calls refused) and `failures` (turns of admitted
calls that failed). A voice answer (`voice_first_degrades`) names one of them and is
compared directly. Without one, the text answer (`first_degrades`) is read for calls only
where it means the same thing under the same rule:

- `admission` -> `admission`: a session refused is refused whatever it carries, and both
  ramps count refusals against the same failure-rate limit;
- `ttft` -> `ttfa`: the wait before the answer starts; judged TTFA is degraded by the same
  rule as TTFT (p90's interval wholly above 2x the base level's), and the voice-agent SLO
  is the text one's TTFT limit applied to judged TTFA;
- `itl` -> nothing. Inter-token latency degrades (2x the per-token time) long before
  audio falls behind playback (an answer generated at 3x real time still plays smoothly
  at 1.5x), and a cascade's speech synthesis paces audio whatever the model's token
  rhythm: reading `itl` as underruns would charge a vendor whose ITL honestly degrades
  first with a mismatch, or credit it with one it never claimed. It is `unverified`, and
  the reason asks for `voice_first_degrades`.

A mapped text answer can only be found wrong where the voice run's first signal is one
a text answer can name (ttfa, admission): calls that first ran dry or failed are
`unverified` against a text answer (its three words have none for them), never
`unreconciled`. The claimed number of calls is a voice claim in its own right
(`voice_max_calls_per_node`); Q4's streams are not calls (a call holds audio both ways
for minutes) and are never read as them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceLevel, VoiceSection
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import fmt_s, times
from evalkit.questionnaire.model import ConcurrencyAnswer, Questionnaire, TtftAnswer
from evalkit.review.measured import ConcurrencyMeasured, TtftMeasured
from evalkit.review.rules import (
    QUANTILES,
    SOURCE_WORDS,
    Decision,
    Evidence,
    Judgement,
    Status,
    at_levels,
    decide,
    join,
    latency_claim,
    quote,
    tolerance_words,
    tolerated,
    within,
)

#: Q4's text answers that mean the same thing for calls (the module docstring says why
#: `itl` is not among them)
MAPPED_FIRST = {"ttft": "ttfa", "admission": "admission"}
#: the voice signals as the page says them
SIGNAL_WORDS = {"ttfa": "time to first audio", "underruns": "underruns (audio behind "
                "playback)", "admission": "admission (calls refused)",
                "failures": "failures (turns of admitted calls failed)"}
#: the worse of two parts' statuses wins (a question is no better than its worst part)
_SEVERITY: tuple[Status, ...] = ("unreconciled", "unanswerable", "unverified", "ok",
                                 "unanswered")


def voice_command(q: Questionnaire | None, detection: str | None = None,
                  silence_ms: int | None = None, calls: int | None = None,
                  api: str | None = None) -> str:
    """The voice run that would check a claim: its API (the run's, else OpenAI's
    Realtime), endpoint and model, its turn detection and silence window, levels below,
    at and above its calls."""
    endpoint = quote(q.endpoint, 80) if q is not None and q.endpoint else "URL"
    model = quote(q.model, 60) if q is not None and q.model else "MODEL"
    # the run's own word, read from summary.json (a file that may be edited): only a
    # name that is an --api value is repeated
    api = api if api is not None and re.fullmatch(r"[a-z][a-z-]{0,30}", api) \
        else "openai-realtime"
    parts = [f"evalkit probe --api {api} --base-url {endpoint} --model {model}"]
    if detection == "client":
        parts.append("--turn-detection client")
    elif detection == "server_vad":
        parts.append("--turn-detection server-vad")
        if silence_ms is not None:
            parts.append(f"--silence-ms {silence_ms}")
    if calls is not None:
        parts.append("--levels " + ",".join(str(x) for x in sorted(
            {max(1, calls // 2), calls, 2 * calls})))
    return " ".join([*parts, "--out DIR"])


def _no_voice_run(ev: Evidence, command: str) -> str | None:
    """Why no voice measurement may be used (None: the run's calls may be)."""
    m = ev.m
    if m is None:
        return (f"this is a claims-only review: no voice run was given (run `{command}` and "
                "report with --run DIR)")
    if m.voice is None:
        return (f"the run is a text run, and a text TTFT or ramp never verifies a voice "
                f"claim: probe the realtime calls (`{command}`)")
    if ev.blocker:
        return ev.blocker.replace(f"`{ev.command}", f"`{command.removesuffix(' --out DIR')}")
    if m.voice.validity.status not in ("valid", "degraded"):
        why = m.voice.validity.reasons[0] if m.voice.validity.reasons else "no validity stated"
        return f"the realtime calls are not valid ({quote(why, 160)}); re-run `{command}`"
    return None


def _voice_section(ev: Evidence) -> VoiceSection | None:
    return ev.m.voice if ev.m is not None else None


def _api(ev: Evidence) -> str | None:
    """The voice run's API (None: no voice run)."""
    voice = _voice_section(ev)
    return voice.api if voice is not None else None


# ------------------------------------------------------------------------------ Q1


def _detection(a: TtftAnswer) -> str | None:
    """The claim's turn detection: as stated, else server VAD where a window is stated."""
    if a.voice_turn_detection is not None:
        return a.voice_turn_detection
    return "server_vad" if a.voice_silence_ms is not None else None


def _assumes(detection: str, silence_ms: int | None) -> str:
    return (f"server VAD with a {silence_ms} ms silence window" if detection == "server_vad"
            else "the client committing each turn (no VAD window)")


def judge_q1_voice(a: TtftAnswer, ev: Evidence, tol: Tolerances,
                   q: Questionnaire | None = None) -> Judgement:
    """A voice TTFA claim against the realtime calls' judged TTFA at the claimed calls."""
    tolerance = tolerance_words(tol.ttft_rel, "ttft_rel", at_most=True)

    def j(status: Status, reason: str, measured: TtftMeasured | None = None) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance)

    opened = latency_claim("time to first audio", a.voice_ttfa_p50_ms, a.voice_ttfa_p90_ms,
                           a.source, a.voice_at_calls, none_given="The voice claim gives no "
                           "time to first audio (p50/p90 in ms), so nothing can be checked.",
                           alone="one call", unstated="number of calls")
    if isinstance(opened, str):
        return j("unanswerable", opened)
    claims, said, c = opened.claims, opened.said, opened.at
    detection = _detection(a)
    if detection is None:
        return j("unanswerable", f"Time to first audio {said} at {c} calls does not say who "
                 "ends the caller's turn (voice_turn_detection) nor the VAD's silence "
                 "window (voice_silence_ms), so it cannot be set beside a measurement.")
    window = a.voice_silence_ms if detection == "server_vad" else None
    if detection == "server_vad" and window is None:
        return j("unanswerable", f"Time to first audio {said} at {c} calls under server VAD "
                 "does not state the silence window it assumes (voice_silence_ms), so it "
                 "cannot be set beside a measurement.")
    if (contradiction := opened.contradiction()) is not None:
        return j("unreconciled", contradiction)
    claim = f"Claimed time to first audio {said} at {c} calls, {_assumes(detection, window)}"
    command = voice_command(q, detection, window, c, _api(ev))
    blocked = _no_voice_run(ev, command)
    voice = _voice_section(ev)
    if blocked is not None or voice is None:
        return j("unverified", f"{claim}; not verified: {blocked}.")
    ran = voice.detection or "an unstated turn detection"
    run_window = voice.silence_ms if voice.detection == "server_vad" else None
    if ran != detection or run_window != window:
        run_said = (_assumes(voice.detection, run_window)
                    if voice.detection in ("server_vad", "client") else ran)
        return j("unverified", f"{claim}; not verified: the run's calls used {run_said}, "
                 "so the two time unlike things and are not compared; re-run "
                 f"`{command}`.", TtftMeasured(voice_turn_detection=voice.detection,
                                                voice_silence_ms=run_window))

    def check(lv: VoiceLevel) -> tuple[Decision | None, str, str]:
        if lv.status == "failed":
            return "fails", "a level where most turns failed", "it does not hold"
        pct = lv.ttfa_judged_s
        pairs = {k: (claims[k], v) for k in claims if (v := pct.get(k)) is not None}
        if not pairs:
            return None, "", ""
        decided = {k: decide(v, pct.interval(k), tolerated(cl / 1000, tol.ttft_rel,
                                                           at_most=True),
                             at_most=True, n=pct.n, q=QUANTILES[k], fmt=fmt_s)
                   for k, (cl, v) in pairs.items()}
        order = {"fails": 0, "undecided": 1, "holds": 2}
        key = min(pairs, key=lambda k: (order[decided[k][0]], -pairs[k][1] / pairs[k][0]))
        claimed_ms, got = pairs[key]
        state, why = decided[key]
        outcome = {"holds": "holds", "undecided": why.replace(" requests ", " answered turns "),
                   "fails": f"{times(got * 1000 / claimed_ms)} slower"}[state]
        return state, f"measured judged TTFA {key} {fmt_s(got)}", outcome

    status, level, text = _in_regime(voice, c, check, command)

    def ms(k: str) -> float | None:
        v = level.ttfa_judged_s.get(k) if level is not None and k in claims else None
        return round(v * 1000, 1) if v is not None else None

    shown = TtftMeasured(voice_calls=level.concurrency if level is not None else None,
                         voice_ttfa_judged_p50_ms=ms("p50"), voice_ttfa_judged_p90_ms=ms("p90"),
                         voice_turn_detection=voice.detection, voice_silence_ms=run_window)
    return j(status, f"{claim} {text}.", shown)


def _refused(lv: VoiceLevel) -> str | None:
    """Why a level of calls measured a lighter load than it names: calls were refused, so
    fewer were in flight (None: none was)."""
    if (lv.admission.count or 0) <= 0:
        return None
    return (f"{lv.admission.count} of {lv.admission.of} calls were refused there, so fewer "
            f"than {lv.concurrency} were in flight")


def _in_regime(voice: VoiceSection, c: int,
               check: Callable[[VoiceLevel], tuple[Decision | None, str, str]],
               command: str) -> tuple[Status, VoiceLevel | None, str]:
    """`rules.at_levels` on the calls' levels that were judged: the level claimed, else a
    level below that already fails, else one above that holds (or, undecided, stands in
    for an absent claimed level); a level that refused calls can show a claim fail but
    never hold."""
    usable = [lv for lv in voice.levels if lv.concurrency is not None
              and lv.status not in ("client_bound", "no_data", None)]
    top = max((lv.concurrency or 0 for lv in voice.levels), default=0)
    reached = (f"the run's calls stop at {top}" if top and top < c
               else f"the run measured no level of calls that decides {c}")
    return at_levels(usable, c, check, _refused, unit="calls", at_claimed=f"at {c} calls",
                     unreached=f"{reached}; re-run `{command}`",
                     rerun=f"; re-run `{command}`", undecided_above=True)


# ------------------------------------------------------------------------------ Q4


def _signal(name: str | None) -> str:
    return SIGNAL_WORDS.get(name or "", str(name))


def judge_q4_voice(a: ConcurrencyAnswer, ev: Evidence, tol: Tolerances,
                   q: Questionnaire | None = None) -> Judgement:
    """Concurrent calls per node and what a caller suffers first vs the calls' ramp."""
    tolerance = tolerance_words(tol.concurrency_rel, "concurrency_rel", at_most=True,
                                value="claimed", reference="breaking level")

    def j(status: Status, reason: str, measured: ConcurrencyMeasured | None = None
          ) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance)

    n = a.voice_max_calls_per_node
    if n is None:
        return j("unanswerable", "The voice claim gives no maximum of concurrent calls per "
                 "node (voice_max_calls_per_node; Q4's streams are not calls), so nothing "
                 "can be checked.")
    said_first, mapped = a.voice_first_degrades, False
    if said_first is None and a.first_degrades in MAPPED_FIRST:
        said_first, mapped = MAPPED_FIRST[a.first_degrades], True
    if said_first is None and a.first_degrades is None:
        return j("unanswerable", f"The voice claim gives {n} calls per node but not what a "
                 "caller suffers first (voice_first_degrades: ttfa, underruns, admission or "
                 "failures).")
    if a.source not in ("production", "lab"):
        return j("unanswerable", f"{n} calls per node is given {SOURCE_WORDS[a.source]}, "
                 "not from a measurement.")
    nodes = a.nodes or 1
    claimed = n * nodes
    first_words = (f"{_signal(said_first)} first" + (
        f" (Q4's {a.first_degrades} read for calls)" if mapped else "")
        if said_first is not None else
        f"{a.first_degrades} first (not read for calls)")
    said = (f"{n} calls per node × {a.nodes} node{'s' if nodes > 1 else ''} = {claimed}, "
            f"{first_words}" if a.nodes else f"{n} calls per node, {first_words}")
    command = voice_command(q, calls=claimed, api=_api(ev))
    blocked = _no_voice_run(ev, command)
    voice = _voice_section(ev)
    if blocked is not None or voice is None:
        return j("unverified", f"Claimed {said}; not verified: {blocked}.")
    breaking, seen = voice.first_degraded_level, voice.first_degraded
    shown = ConcurrencyMeasured(voice_max_sustained_calls=voice.max_sustained_calls,
                                voice_first_degraded=seen, voice_breaking_calls=breaking)
    if seen is None or breaking is None:
        held = voice.max_sustained_calls
        return j("unverified", f"Claimed {said}; not verified: the calls' ramp "
                 + (f"held up to {held} calls and nothing degraded, so what degrades first "
                    f"was not seen" if held is not None else "judged no level")
                 + f"; re-run `{voice_command(q, calls=max(claimed, held or 1), api=_api(ev))}`.",
                 shown)
    head = (f"Claimed {said} vs the calls' ramp, which sustained "
            f"{voice.max_sustained_calls if voice.max_sustained_calls is not None else 'no level'}"
            f" and broke at {breaking} calls on {_signal(seen)}")
    problems: list[str] = []
    open_: list[str] = []
    if not within(claimed, breaking, tol.concurrency_rel, at_most=True):
        problems.append(f"the claim is {times(claimed / breaking)} the level at which it broke")
    together = {seen, *voice.degraded_together}
    tied = {t for lv in voice.levels if (lv.concurrency or 0) < breaking for t in lv.ties}
    if said_first is None:
        open_.append(f"Q4's {a.first_degrades} (inter-token latency) has no counterpart a "
                     "caller hears that it reliably maps to, so what degrades first is not "
                     "checked; answer voice_first_degrades")
    elif said_first not in together | tied:
        if mapped and seen not in MAPPED_FIRST.values():
            open_.append(f"{_signal(seen)} came first, which Q4's text answer (itl, ttft or "
                         "admission) has no word for; answer voice_first_degrades")
        else:
            problems.append(f"{_signal(seen)}, not {_signal(said_first)}, degraded first")
    elif said_first not in together or tied - {said_first}:
        open_.append(f"{join([_signal(t) for t in sorted(tied)])} tied below {breaking} "
                     "calls (an interval straddling its limit), so "
                     f"{'it' if len(tied) == 1 else 'either'} may have come first")
    if problems:
        return j("unreconciled", f"{head}: {join(problems + open_)}.", shown)
    if open_:
        return j("unverified", f"{head}; not decided: {join(open_)} (re-run `{command}`).",
                 shown)
    return j("ok", f"{head}: holds.", shown)


# ------------------------------------------------------------------- both parts


def _text_on_voice_run(judged: Judgement, m: Summary | None, command: str) -> Judgement:
    """A text claim against a voice run's calls (no text level) is not verified, and the
    reason says why: the calls time audio, not tokens."""
    if m is None or m.voice is None or m.levels or judged.status not in (
            "ok", "unreconciled", "unverified"):
        return judged
    head = judged.reason.split("; not verified:", 1)[0].rstrip(".")
    return replace(judged, status="unverified", finding=None, reason=(
        f"{head}; not verified: the run is a voice run, and its realtime calls never verify "
        f"a text claim; probe the text endpoint (`{command} --out DIR`)."))


def combine(text: Judgement | None, voice: Judgement | None) -> Judgement:
    """One question's judgement from its text part, its voice part, or both (the worse
    status; both reasons; the text part's measured figures with the voice part's in)."""
    if voice is None:
        assert text is not None
        return text
    if text is None:
        return voice
    status = min(text.status, voice.status, key=_SEVERITY.index)
    measured = text.measured
    if voice.measured is not None:
        extra = {k: v for k, v in vars(voice.measured).items() if v is not None}
        measured = replace(text.measured, **extra) if isinstance(
            text.measured, type(voice.measured)) else voice.measured
    return replace(text, status=status, reason=f"{text.reason} Voice: {voice.reason}",
                   measured=measured, finding=text.finding or voice.finding,
                   tolerance=text.tolerance)


def judge_q1_with_voice(text: Callable[[], Judgement], a: TtftAnswer, ev: Evidence,
                        tol: Tolerances, q: Questionnaire | None) -> Judgement:
    """Q1: the text claim where one is made (or nothing at all is), the voice claim where
    one is, each against its own kind of run."""
    said_text = a.ttft_p50_ms is not None or a.ttft_p90_ms is not None or not a.voice
    return combine(_text_on_voice_run(text(), ev.m, ev.command) if said_text else None,
                   judge_q1_voice(a, ev, tol, q) if a.voice else None)


def judge_q4_with_voice(text: Callable[[], Judgement], a: ConcurrencyAnswer,
                        ev: Evidence, tol: Tolerances, q: Questionnaire | None) -> Judgement:
    """Q4: the streams claim where one is made (or nothing at all is), the calls claim
    where one is (`voice_max_calls_per_node` or `voice_first_degrades`)."""
    said_text = a.max_concurrent_streams_per_node is not None or not a.voice
    return combine(_text_on_voice_run(text(), ev.m, ev.command) if said_text else None,
                   judge_q4_voice(a, ev, tol, q) if a.voice else None)
