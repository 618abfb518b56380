"""summary.json's `voice` section from turn records (pure): typed and read back equal,
the SLO's rule, the vendor's VAD window kept apart from its delay, a noticeable underrun,
and a validity that fails closed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from evalkit.analysis.summarize import SummaryMeta, summarize
from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceAudio, VoiceClient, VoiceSection
from evalkit.analysis.voice import VoiceFacts, judged_ttfa, voice_section, voice_summary
from evalkit.voice.records import TurnRecord

CLIENT = VoiceFacts(detection="client", audio=VoiceAudio("buyer", 2, False))


def turns(level: int, n: int, ttfa: float = 0.3, first_call: int = 0, **fields: Any
          ) -> list[TurnRecord]:
    """n answered turns at a level, `level` calls in flight throughout (one turn each)."""
    out = []
    for k in range(n):
        call = first_call + k
        start = (k // level) * 2.0  # each slot's calls back to back
        out.append(TurnRecord(
            run_id="r", level=level, call=call, turn=0, utterance="u", detection="client",
            outcome="ok", t0_s=start, voiced_end_s=start + 0.5, ttfa_s=ttfa,
            answer_audio_s=1.0, audio_deltas=10, underruns=0, underrun_s=0.0,
            ahead_ratio=1.5, end_s=start + 1.8, response_id=f"resp{call}", status="completed",
            pace_late_max_s=0.001, **fields))
    return out


def section(records: list[TurnRecord], facts: VoiceFacts = CLIENT,
            checks: dict[int, VoiceClient] | None = None, status: str = "complete"
            ) -> VoiceSection:
    return voice_section(records, checks or {}, facts, status)


def test_the_section_is_typed_and_read_back_equal() -> None:
    records = turns(1, 40) + turns(4, 40, ttfa=0.9, first_call=40)
    doc = voice_summary(records, {4: VoiceClient(0.002, 0.3, reasons=())}, CLIENT,
                        SummaryMeta(run_status="complete"))
    read = Summary.from_json(doc)
    assert read.voice is not None
    assert read.voice == VoiceSection.from_json(doc["voice"])
    assert read.voice.to_json() == doc["voice"]
    assert read.voice.level(4) is not None and read.voice.level(4).client.cpu_per_call == 0.075
    assert read.validity == read.voice.validity.status == "valid"
    assert read.measured


def test_a_text_summary_has_no_voice_key() -> None:
    assert "voice" not in summarize([], {"run_status": "complete"})
    assert Summary.from_json(summarize([], {})).voice is None


def test_within_the_slo_needs_the_p90_bounded_under_half_a_second() -> None:
    """40 answered turns at 0.3 s: within (the p90's interval has both ends from 36);
    then 2 levels on, 0.9 s: outside, a TTFA breach against 2x the base level; with 20
    turns the first level is a tie (no upper end): no level is within."""
    s = section(turns(1, 40) + turns(4, 40, ttfa=0.35, first_call=40)
                + turns(8, 40, ttfa=0.9, first_call=80))
    assert [lv.slo for lv in s.levels] == ["within", "within", "outside"]
    assert s.max_calls_within_slo == 4 and not s.within_slo_lower_bound
    assert (s.first_degraded, s.first_degraded_level) == ("ttfa", 8)
    assert s.max_sustained_calls == 4
    few = section(turns(1, 20))
    assert few.levels[0].slo == "tie" and few.max_calls_within_slo is None
    assert "fewer than 36" in (few.note or "")
    top = section(turns(2, 40))
    assert top.max_calls_within_slo == 2 and top.within_slo_lower_bound


def test_the_vendor_is_not_charged_the_window_we_asked_for() -> None:
    """Server VAD with 0.5 s asked: a turn answered 0.7 s after its last voiced frame,
    its speech_stopped saying 0.52 s of silence, is judged 0.2 s; a vendor that says it
    waited 0.9 s gains no more than the 0.5 s we asked; one that says nothing gains
    nothing."""
    vad = VoiceFacts(detection="server_vad", silence_ms=500)
    (t,) = turns(1, 1, ttfa=0.7, vad_window_s=0.52)
    assert judged_ttfa(t, 0.5) == pytest.approx(0.2)
    assert judged_ttfa(replace(t, vad_window_s=0.9), 0.5) == pytest.approx(0.2)
    assert judged_ttfa(replace(t, vad_window_s=0.3), 0.5) == pytest.approx(0.4)
    assert judged_ttfa(replace(t, vad_window_s=None), 0.5) == pytest.approx(0.7)
    assert judged_ttfa(t, None) == pytest.approx(0.7)
    s = section(turns(1, 40, ttfa=0.7, vad_window_s=0.5), vad)
    (lv,) = s.levels
    assert lv.ttfa_s.p50 == pytest.approx(0.7) and lv.ttfa_judged_s.p50 == pytest.approx(0.2)
    assert lv.vad_window_s.p50 == pytest.approx(0.5) and lv.slo == "within"
    assert s.silence_ms == 500


def test_a_noticeable_underrun_is_more_than_0_3_s_of_silence_in_an_answer() -> None:
    heard = turns(1, 40)
    quiet = [replace(t, underruns=3, underrun_s=0.29) for t in heard[:20]] + heard[20:]
    (lv,) = section(quiet).levels
    assert (lv.with_underrun.count, lv.noticeable_underrun.count) == (20, 0)
    assert lv.underruns == 60 and lv.underrun_s == pytest.approx(5.8)
    assert lv.slo == "within"
    loud = [replace(t, underruns=1, underrun_s=0.31) for t in heard[:20]] + heard[20:]
    (lv,) = section(loud).levels
    assert lv.noticeable_underrun.count == 20 and lv.noticeable_underrun.call == "breach"
    assert lv.status == "breached" and lv.breaches == ("underruns",) and lv.slo == "outside"


def test_refusals_are_admission_and_failures_are_failures() -> None:
    refused = [replace(t, outcome="rejected", ttfa_s=None, voiced_end_s=None, underruns=None,
                       underrun_s=None, t0_s=t.end_s or 0, error="HTTP 429")
               for t in turns(4, 12, first_call=40)]
    s = section(turns(1, 40) + turns(4, 12, first_call=60) + refused)
    lv = s.level(4)
    assert lv is not None and lv.admission.count == 12 and lv.admission.of == 24
    assert lv.failure_kinds["rejected"] == 12 and lv.top_error == "HTTP 429"
    assert s.first_degraded == "admission" and s.first_degraded_level == 4
    # a client that was the bottleneck there slowed what it timed, not the vendor's 429s
    bound = section(turns(1, 40) + turns(4, 12, first_call=60) + refused,
                    checks={4: VoiceClient(client_bound=True, reasons=("lag",))})
    assert bound.level(4).status == "breached"  # type: ignore[union-attr]
    assert bound.first_degraded == "admission"
    failed = [replace(t, outcome="timeout", ttfa_s=None, underruns=None, underrun_s=None)
              for t in turns(1, 40)]
    s = section(failed)
    assert s.levels[0].status == "failed" and s.levels[0].breaches == ("failures",)
    assert s.validity.status == "invalid"


@pytest.mark.parametrize(("records", "checks", "status", "why"), [
    ([], {}, "complete", "no turn of any level was answered"),
    (turns(1, 40), {1: VoiceClient(client_bound=True, reasons=("CPU 99% of a core",))},
     "complete", "no level of calls could be judged"),
    (turns(1, 40), {}, "failed", "the connect gate's call failed"),
], ids=["nothing", "client-bound", "gate"])
def test_a_run_with_no_judged_level_is_invalid(records: list[TurnRecord],
                                              checks: dict[int, VoiceClient], status: str,
                                              why: str) -> None:
    s = section(records, checks=checks, status=status)
    assert s.validity.status == "invalid"
    assert any(why in r for r in s.validity.reasons), s.validity.reasons
    doc = voice_summary(records, checks, CLIENT, SummaryMeta(run_status=status))
    assert Summary.from_json(doc).validity == "invalid"


def test_a_run_cut_short_or_bound_where_it_is_judged_is_degraded() -> None:
    s = section(turns(1, 40), status="interrupted")
    assert s.validity.status == "degraded"
    both = turns(1, 40) + turns(4, 40, first_call=40)
    s = section(both, checks={4: VoiceClient(client_bound=True, reasons=("lag",))})
    assert s.validity.status == "degraded" and s.client_bound_levels == (4,)
    assert s.level(4) is not None and s.level(4).slo == "not_judged"  # type: ignore[union-attr]
    doc = voice_summary(both, {4: VoiceClient(client_bound=True)}, CLIENT, SummaryMeta())
    assert doc["client"]["capacity_judgement_affected"] is True


def test_public_audio_is_said_where_the_text_path_says_public_prompts() -> None:
    shipped = replace(CLIENT, audio=VoiceAudio("shipped", 3, True))
    doc = voice_summary(turns(1, 3), {}, shipped, SummaryMeta())
    assert doc["prompt_text"]["recognisable"] is True
    assert doc["prompt_text"]["recognisable_phases"] == ["voice"]
    assert "shipped with evalkit" in doc["prompt_text"]["note"]
    assert Summary.from_json(doc).voice.audio.public is True  # type: ignore[union-attr]


def test_the_gate_call_is_no_level() -> None:
    gate = [replace(t, level=0) for t in turns(1, 1, ttfa=5.0)]
    s = section(gate + turns(1, 40, first_call=1))
    assert [lv.concurrency for lv in s.levels] == [1]
    assert s.levels[0].ttfa_s.max == pytest.approx(0.3)
