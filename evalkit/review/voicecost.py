"""What a realtime call costs: Q3's audio prices set against the audio a voice run's calls
sent and heard (summary.json's `voice` levels' `audio_totals`). Pure. No I/O.

Audio is priced per minute of audio, or per million audio tokens; a per-token price is
costed only at the audio tokens per second Q3 states beside it (evalkit does not read the
vendor's token counts of a call), and a side with neither is not costed: an unstated
price is never taken as zero. At each level of concurrent calls:

- **per call-minute**: (the caller's audio sent × the input price + the answer audio
  heard × the output price) over the admitted calls' minutes on the line, each from its
  first frame sent to its last answer byte: what one minute of a call of the measured
  shape costs;
- **per call**: the same over the calls.

Input is the caller's utterances as sent (every frame, the silence inside them
included). What a vendor bills beyond that is not in it: text tokens (instructions,
transcripts), and, under server VAD, the silence a phone line streams between turns
where the vendor bills the open line. `basis` says so.
"""

from __future__ import annotations

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceLevel, VoiceSection
from evalkit.questionnaire.model import PricingAnswer
from evalkit.review.costcard import VoiceCost, VoiceLevelCost
from evalkit.review.rules import run_blocker

#: the audio prices Q3 may state (any one of them makes a call costable, or says why not)
AUDIO_PRICE_FIELDS = ("audio_input_price_per_minute", "audio_output_price_per_minute",
                      "audio_input_price_per_mtok", "audio_output_price_per_mtok")


def _per_minute(per_minute: float | None, per_mtok: float | None,
                tokens_per_s: float | None, side: str) -> tuple[float | None, str | None]:
    """A side's price per minute of audio, or why there is none."""
    if per_minute is not None:
        return per_minute, None
    if per_mtok is not None and tokens_per_s is not None:
        return per_mtok / 1e6 * tokens_per_s * 60, None
    if per_mtok is not None:
        return None, (f"Q3 prices {side} audio per million tokens but does not state the "
                      f"audio tokens a second of audio counts as (audio_{side}_tokens_per_s)")
    return None, f"Q3 states no {side} audio price"


def level_call_cost(lv: VoiceLevel, input_per_min: float, output_per_min: float
                    ) -> VoiceLevelCost | None:
    """One level's call costs (None: its calls' audio was not kept, or no call was on the
    line)."""
    t = lv.audio_totals
    if not t.calls or not t.call_s or t.input_audio_s is None or t.output_audio_s is None:
        return None
    spent = (t.input_audio_s * input_per_min + t.output_audio_s * output_per_min) / 60
    return VoiceLevelCost(lv.concurrency, round(spent / (t.call_s / 60), 6),
                          round(spent / t.calls, 6), round(t.call_s / t.calls, 3),
                          round(t.input_audio_s / t.calls, 3),
                          round(t.output_audio_s / t.calls, 3))


def _costed_at(voice: VoiceSection, costs: dict[int, VoiceLevelCost]) -> tuple[int, str]:
    """The level costed: the most calls within the voice SLO, else the most sustained,
    else the highest costed; and why."""
    for c, why in ((voice.max_calls_within_slo, "the most calls within the voice SLO"),
                   (voice.max_sustained_calls, "the most calls sustained")):
        if c is not None and c in costs:
            return c, why
    return max(costs), "the highest level costed (none held within the voice SLO)"


def call_cost(m: Summary | None, q3: PricingAnswer) -> VoiceCost | None:
    """scorecard.json's `cost.voice`: None for a text run with no audio price (nothing
    to say); else the cost of a call-minute, or why it was not computed."""
    stated = any(getattr(q3, f) is not None for f in AUDIO_PRICE_FIELDS)
    voice = m.voice if m is not None else None
    if not stated and voice is None:
        return None
    cur = q3.currency
    if not stated:
        return VoiceCost(cur, "not computed: Q3 states no audio price (per minute of audio "
                         "or per million audio tokens), so a call's cost does not follow")
    inp, why_in = _per_minute(q3.audio_input_price_per_minute, q3.audio_input_price_per_mtok,
                              q3.audio_input_tokens_per_s, "input")
    out, why_out = _per_minute(q3.audio_output_price_per_minute,
                               q3.audio_output_price_per_mtok, q3.audio_output_tokens_per_s,
                               "output")
    if inp is None or out is None:
        missing = "; ".join(w for w in (why_in, why_out) if w)
        return VoiceCost(cur, f"not computed: {missing}", inp, out)
    blocker = run_blocker(m)
    if m is None or blocker:
        return VoiceCost(cur, f"not computed: {blocker}", inp, out)
    if voice is None:
        return VoiceCost(cur, "not computed: the run has no realtime calls (a text run); "
                         "probe them with `evalkit probe --api openai-realtime`", inp, out)
    costs = {lv.concurrency: c for lv in voice.levels if lv.concurrency is not None
             and (c := level_call_cost(lv, inp, out)) is not None}
    if not costs:
        return VoiceCost(cur, "not computed: the run's calls did not keep the caller's audio "
                         "sent (turn records written before evalkit did); re-run the probe",
                         inp, out)
    at, why = _costed_at(voice, costs)
    converted = [f"{side} at {q3_tps:g} audio tokens a second" for side, q3_tps, per_min in (
        ("input", q3.audio_input_tokens_per_s, q3.audio_input_price_per_minute),
        ("output", q3.audio_output_tokens_per_s, q3.audio_output_price_per_minute))
        if per_min is None and q3_tps is not None]
    basis = ("Q3's audio prices per minute"
             + (f" (per million audio tokens converted: {', '.join(converted)}, as Q3 "
                "states)" if converted else "")
             + f", in {cur or 'the quote currency (Q3 names none)'}, never converted; at "
             f"{at} calls ({why}); input is the caller's utterances as sent, output the "
             "answer audio heard, over the calls' minutes on the line; text tokens, and "
             "silence streamed between turns where a vendor bills the open line, are not "
             "included")
    return VoiceCost(cur, basis, inp, out, costs[at], tuple(costs[c] for c in sorted(costs)))
