"""A voice run's summary checked against its turn records (turns.jsonl), as a text run's
is against requests.jsonl (`evalkit.rundir.checked`).

A voice run (`evalkit probe --api openai-realtime`) writes no request record: its
evidence is turns.jsonl. Its `voice` section is derived again from those turns (with the
client's self-check per level and the plan the section states: neither is in a turn
record) and must be what was written; where it is not, the re-derived section is the one
judged, the run is at best degraded, and the page says so. A voice run without a readable
turn is no voice run to show: the caller falls back to the no-record path (nothing shown).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceSection
from evalkit.analysis.voice import VoiceFacts, VoiceLimits, voice_section
from evalkit.rundir.audit import summary_problems
from evalkit.rundir.checked import Checked
from evalkit.voice.records import TURNS_FILE, read_turns

__all__ = ["ATTACH_CAP", "TURNS_FILE", "check_voice_summary"]

#: turn records above this are not attached to a report (nor verified from it)
ATTACH_CAP = 32 << 20


def _rederived(typed: Summary, voice: VoiceSection, turns_path: Path
               ) -> tuple[VoiceSection, int]:
    """The voice section from the turns, and how many turn records it rests on."""
    turns, _skipped = read_turns(turns_path)
    slo = voice.slo
    limits = VoiceLimits(*(v if v is not None else d for v, d in (
        (slo.ttfa_p90_s, 0.5), (slo.stall_s, 0.3), (slo.underrun_share, 0.01),
        (slo.failure_rate, 0.01), (slo.ttfa_p90_ratio, 2.0))))
    facts = VoiceFacts(api=voice.api or "openai-realtime",
                       detection=voice.detection or "server_vad",
                       frame_ms=voice.frame_ms or 20, silence_ms=voice.silence_ms or 500,
                       turns_per_call=voice.turns_per_call or 1, audio=voice.audio)
    checks = {lv.concurrency: lv.client for lv in voice.levels if lv.concurrency is not None}
    return voice_section(turns, checks, facts, typed.sections.run_status, limits), len(turns)


def check_voice_summary(summary: dict[str, Any], turns_path: Path | None,
                        raw: dict[str, bytes], notes: list[str]) -> Checked | None:
    """The voice summary to show, checked against turns.jsonl; None when there is no turn
    to check it against, or when the summary is malformed or states text figures a voice
    run has no request record for (the summary then has no measurement behind it). The turns'
    bytes go into `raw` (the report attaches them, `verify` reads them back) when they are
    within ATTACH_CAP; what was re-derived leads `notes` (page one's notices)."""
    typed = Summary.from_json(summary)
    voice = typed.voice
    if turns_path is None or voice is None or summary_problems(summary):
        return None
    if typed.levels or typed.prefill_tokens_per_s is not None:
        return None  # text figures with no request record behind them: none is shown
    derived, count = _rederived(typed, voice, turns_path)
    if count == 0:
        return None
    with turns_path.open("rb") as fh:
        data = fh.read(ATTACH_CAP + 1)
    if len(data) <= ATTACH_CAP:
        raw[TURNS_FILE] = data
    if derived == voice:
        return Checked(summary, None, None, None)
    rebuilt = (f"summary.json's voice section does not agree with {TURNS_FILE}: every voice "
               f"figure was re-derived from the {count:,} turn records")
    notes.insert(0, rebuilt)
    # a voice run's validity is its calls' (`evalkit.analysis.voice.voice_summary`)
    reasons = [rebuilt, *derived.validity.reasons, *typed.validity_reasons]
    doc = {**summary, "voice": derived.to_json(), "validity": {
        "status": "invalid" if derived.validity.status in (None, "invalid") else "degraded",
        "reasons": list(dict.fromkeys(reasons)), "phases": {}, "levels": {}}}
    return Checked(doc, rebuilt,
                   (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode(), None)
