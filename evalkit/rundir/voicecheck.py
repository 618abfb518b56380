"""A voice run's summary checked against its turn records (turns.jsonl), as a text run's
is against requests.jsonl (`evalkit.rundir.checked`).

A voice run (`evalkit probe --api openai-realtime`) writes no request record: its
evidence is turns.jsonl. Its summary is derived again, whole, as the probe wrote it
(`evalkit.analysis.voice.voice_summary`), from those turns and run.json (the levels' client
self-checks, the call's settings, the audio, how the run ended), with the voice SLO's
limits as evalkit sets them: never from the summary being checked, so an edited
summary.json (a level's TTFA lowered, `max_calls_within_slo` raised, the SLO's limits
loosened, a validity turned valid) cannot vouch for itself. Where the two differ the
re-derived summary is the one judged, the run is at best degraded, and page one says so.
A voice run without a readable turn is no voice run to show: the caller falls back to the
no-record path (nothing shown).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evalkit
from evalkit.analysis.jsonread import read_as
from evalkit.analysis.summarize import SummaryMeta
from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceAudio, VoiceClient
from evalkit.analysis.validity import worst
from evalkit.analysis.voice import VoiceFacts, voice_summary
from evalkit.rundir.audit import summary_problems
from evalkit.rundir.checked import Checked
from evalkit.rundir.digest import RUN_STATUSES
from evalkit.voice.records import TURNS_FILE, VOICE_APIS, read_turns

__all__ = ["ATTACH_CAP", "TURNS_FILE", "check_voice_summary", "derive_voice_summary"]

#: turn records above this are not attached to a report (nor verified from it)
ATTACH_CAP = 32 << 20
#: the API a voice run's run.json names when it names none we know (runs before Gemini
#: Live was spoken)
VOICE_API = "openai-realtime"


@dataclass(frozen=True)
class _Options:
    """run.json's `voice` block: the call's settings the summary was judged with."""

    server_vad: bool = True
    turns: int = 3
    silence_ms: int = 500
    frame_ms: int = 20


@dataclass(frozen=True)
class _Audio:
    """run.json's `audio` block."""

    source: str | None = None
    public: bool | None = None
    utterances: tuple[Any, ...] = ()


def derive_voice_summary(run: Mapping[str, Any], turns_path: Path | None
                         ) -> tuple[dict[str, Any], int]:
    """summary.json as the probe wrote it at the end of a voice run, from turns.jsonl and
    run.json, and how many turn records it rests on."""
    records, _skipped = read_turns(turns_path) if turns_path is not None else ([], 0)
    checks_doc = run.get("client_checks")
    levels = checks_doc.get("voice_levels") if isinstance(checks_doc, Mapping) else None
    checks = {int(k): read_as(VoiceClient, v) for k, v in levels.items()
              if str(k).isdigit()} if isinstance(levels, Mapping) else {}
    options = read_as(_Options, run.get("voice"))
    audio = read_as(_Audio, run.get("audio"))
    target = run.get("target")
    named = target.get("api") if isinstance(target, Mapping) else None
    facts = VoiceFacts(api=named if named in VOICE_APIS else VOICE_API,
                       detection="server_vad" if options.server_vad else "client",
                       frame_ms=options.frame_ms, silence_ms=options.silence_ms,
                       turns_per_call=options.turns,
                       audio=VoiceAudio(audio.source, len(audio.utterances), audio.public))
    status = run.get("status")
    run_status = status if status in RUN_STATUSES else "running"
    error = run.get("error")
    meta = SummaryMeta(
        tool_version=str(run.get("tool_version") or evalkit.__version__),
        suite_version=str(run.get("suite_version") or evalkit.SUITE_VERSION),
        run_status=run_status, run_error=error if isinstance(error, str) else None)
    summary = voice_summary(records, checks, facts, meta)
    summary["run_status"] = run_status
    # as the probe wrote it: through JSON (tuples become lists, level keys strings)
    return json.loads(json.dumps(summary, allow_nan=False)), len(records)


def check_voice_summary(summary: dict[str, Any] | None, run: Mapping[str, Any],
                        turns_path: Path | None, raw: dict[str, bytes],
                        notes: list[str]) -> Checked | None:
    """The voice summary to show, checked against turns.jsonl; None when there is no turn
    to check it against, or when the summary is malformed or states text figures a voice
    run has no request record for (the summary then has no measurement behind it). A
    voice run killed before its write-up (no summary.json) has it derived from its turns.
    The turns' bytes go into `raw` (the report attaches them, `verify` reads them back)
    when they are within ATTACH_CAP; what was re-derived leads `notes` (page one's
    notices)."""
    if turns_path is None:
        return None
    if summary is not None:
        typed = Summary.from_json(summary)
        if typed.voice is None or summary_problems(summary):
            return None
        if typed.levels or typed.prefill_tokens_per_s is not None:
            return None  # text figures with no request record behind them: none is shown
    derived, count = derive_voice_summary(run, turns_path)
    if count == 0:
        return None
    with turns_path.open("rb") as fh:
        data = fh.read(ATTACH_CAP + 1)
    if len(data) <= ATTACH_CAP:
        raw[TURNS_FILE] = data
    if summary is None:
        rebuilt = (f"summary.json is missing (the probe stopped before writing it): every "
                   f"figure was derived from the {count:,} turn records and run.json")
    elif _same(summary, _as_old_as(summary, derived)):
        return Checked(summary, None, None, None, typed)
    else:
        differ = sorted(k for k in set(summary) | set(derived)
                        if summary.get(k) != derived.get(k))
        shown = ", ".join(differ[:3]) + (f" (and {len(differ) - 3} more)"
                                         if len(differ) > 3 else "")
        rebuilt = (f"summary.json does not agree with {TURNS_FILE} ({shown} differ): every "
                   f"figure was re-derived from the {count:,} turn records and run.json")
    notes.insert(0, rebuilt)
    for part in (derived, derived.get("voice")):  # the run's validity, and its calls'
        if isinstance(part, dict) and isinstance(part.get("validity"), dict):
            validity = part["validity"]
            given = validity.get("status")
            validity["status"] = worst(given if given in ("valid", "degraded", "invalid")
                                       else "invalid", "degraded")
            validity["reasons"] = list(dict.fromkeys([rebuilt, *validity.get("reasons", [])]))
    return Checked(derived, rebuilt,
                   (json.dumps(derived, indent=2, allow_nan=False) + "\n").encode(), None)


#: a voice level's keys newer than some summaries: one written before a key existed
#: agrees without it (it only leaves a judge less evidence: a call's cost not computed,
#: never a green mark); a summary that has the key must agree on it
_NEWER_LEVEL_KEYS = ("audio_totals",)


def _as_old_as(written: Mapping[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    """`derived` without the newer level keys the written summary's levels all lack."""
    voice, mine = written.get("voice"), derived.get("voice")
    if not isinstance(voice, Mapping) or not isinstance(mine, dict):
        return derived
    levels = voice.get("levels")
    if not isinstance(levels, list) or not isinstance(mine.get("levels"), list):
        return derived
    lacking = [k for k in _NEWER_LEVEL_KEYS
               if not any(isinstance(lv, Mapping) and k in lv for lv in levels)]
    if not lacking:
        return derived
    trimmed = [{k: v for k, v in lv.items() if k not in lacking}
               if isinstance(lv, dict) else lv for lv in mine["levels"]]
    return {**derived, "voice": {**mine, "levels": trimmed}}


def _same(written: Mapping[str, Any], derived: Mapping[str, Any]) -> bool:
    """The two documents hold the same JSON (key order aside)."""
    return json.dumps(written, sort_keys=True) == json.dumps(derived, sort_keys=True)
