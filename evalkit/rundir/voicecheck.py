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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalkit.analysis.summary_voice import VoiceSection
from evalkit.analysis.voice import VoiceFacts, VoiceLimits, voice_section
from evalkit.rundir.checked import Checked
from evalkit.voice.records import TURNS_FILE, read_turns

__all__ = ["ATTACH_CAP", "TURNS_FILE", "check_voice_summary"]

#: turn records above this are not attached to a report (nor verified from it)
ATTACH_CAP = 32 << 20


def _rederived(summary: Mapping[str, Any], turns_path: Path) -> tuple[VoiceSection, int]:
    """The voice section from the turns, and how many turn records it rests on."""
    written = VoiceSection.from_json(summary.get("voice"))
    turns, _skipped = read_turns(turns_path)
    slo = written.slo
    limits = VoiceLimits(*(v if v is not None else d for v, d in (
        (slo.ttfa_p90_s, 0.5), (slo.stall_s, 0.3), (slo.underrun_share, 0.01),
        (slo.failure_rate, 0.01), (slo.ttfa_p90_ratio, 2.0))))
    facts = VoiceFacts(api=written.api or "openai-realtime",
                       detection=written.detection or "server_vad",
                       frame_ms=written.frame_ms or 20, silence_ms=written.silence_ms or 500,
                       turns_per_call=written.turns_per_call or 1, audio=written.audio)
    checks = {lv.concurrency: lv.client for lv in written.levels if lv.concurrency is not None}
    status = summary.get("run_status")
    return voice_section(turns, checks, facts, status if isinstance(status, str) else None,
                         limits), len(turns)


def check_voice_summary(summary: dict[str, Any], turns_path: Path | None,
                        raw: dict[str, bytes], notes: list[str]) -> Checked | None:
    """The voice summary to show, checked against turns.jsonl; None when there is no turn
    to check it against (the summary then has no measurement behind it). The turns'
    bytes go into `raw` (the report attaches them, `verify` reads them back) when they are
    within ATTACH_CAP; what was re-derived leads `notes` (page one's notices)."""
    if turns_path is None or not isinstance(summary.get("voice"), Mapping):
        return None
    derived, count = _rederived(summary, turns_path)
    if count == 0:
        return None
    with turns_path.open("rb") as fh:
        data = fh.read(ATTACH_CAP + 1)
    if len(data) <= ATTACH_CAP:
        raw[TURNS_FILE] = data
    if derived == VoiceSection.from_json(summary["voice"]):
        return Checked(summary, None, None, None)
    rebuilt = (f"summary.json's voice section does not agree with {TURNS_FILE}: every voice "
               f"figure was re-derived from the {count:,} turn records")
    notes.insert(0, rebuilt)
    validity = summary.get("validity")
    given = validity.get("reasons") if isinstance(validity, Mapping) else None
    reasons = [rebuilt, *derived.validity.reasons,
               *(r for r in given if isinstance(r, str))] if isinstance(given, list) else \
        [rebuilt, *derived.validity.reasons]
    doc = {**summary, "voice": derived.to_json(), "validity": {
        **(validity if isinstance(validity, Mapping) else {}),
        "status": "invalid" if derived.validity.status in (None, "invalid") else "degraded",
        "reasons": list(dict.fromkeys(reasons))}}
    return Checked(doc, rebuilt,
                   (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode(), None)
