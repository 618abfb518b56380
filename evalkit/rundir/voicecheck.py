"""A voice run's summary checked against its turns: summary.json re-derived from
turns.jsonl and run.json, and trusted only where the two agree.

The text path re-derives its summary from requests.jsonl (`evalkit.rundir.checked`); a
voice run's verdict (the voice-agent fit, the most calls within the SLO) stands on its
`voice` section, so that section is held to the same rule: an edited summary.json (a
level's TTFA lowered, `max_calls_within_slo` raised, a validity turned valid) is replaced
by what the turns say, and the run is at best degraded, its reason first. The probe wrote
the summary with the same function from the same files (`voice_summary`), so a run left
as written re-derives to the same document, key for key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import read_as
from evalkit.analysis.summarize import SummaryMeta
from evalkit.analysis.summary_voice import VoiceAudio, VoiceClient
from evalkit.analysis.validity import worst
from evalkit.analysis.voice import VoiceFacts, voice_summary
from evalkit.rundir.digest import RUN_STATUSES
from evalkit.voice.records import TURNS_FILE, read_turns

#: the API a voice run's run.json names
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


@dataclass(frozen=True)
class VoiceCheck:
    """The summary to show, and what the check found (None: it agreed)."""

    summary: dict[str, Any]
    #: why the summary was replaced (for the run's notes and validity), None when not
    rebuilt: str | None


def is_voice_run(run: Mapping[str, Any], run_dir: Path) -> bool:
    """A realtime voice run: run.json names the API, or turns.jsonl is there."""
    target = run.get("target")
    api = target.get("api") if isinstance(target, Mapping) else None
    return api == VOICE_API or (run_dir / TURNS_FILE).is_file()


def derive_voice_summary(run: Mapping[str, Any], run_dir: Path) -> tuple[dict[str, Any], int]:
    """summary.json as the probe wrote it at the end of a voice run, from turns.jsonl and
    run.json (the levels' self-checks, the call's settings, the audio, how it ended),
    and how many lines of turns.jsonl were no record."""
    path = run_dir / TURNS_FILE
    records, skipped = read_turns(path) if path.is_file() else ([], 0)
    checks_doc = run.get("client_checks")
    levels = checks_doc.get("voice_levels") if isinstance(checks_doc, Mapping) else None
    checks = {int(k): read_as(VoiceClient, v) for k, v in levels.items()
              if str(k).isdigit()} if isinstance(levels, Mapping) else {}
    options = read_as(_Options, run.get("voice"))
    audio = read_as(_Audio, run.get("audio"))
    facts = VoiceFacts(api=VOICE_API,
                       detection="server_vad" if options.server_vad else "client",
                       frame_ms=options.frame_ms, silence_ms=options.silence_ms,
                       turns_per_call=options.turns,
                       audio=VoiceAudio(audio.source, len(audio.utterances), audio.public))
    status = run.get("status")
    run_status = status if status in RUN_STATUSES else "running"
    error = run.get("error") if isinstance(run.get("error"), str) else None
    summary = voice_summary(records, checks, facts,
                            SummaryMeta(run_status=run_status, run_error=error))
    summary["run_status"] = run_status
    # as the probe wrote it: through JSON (tuples become lists, keys strings)
    return json.loads(json.dumps(summary, allow_nan=False)), skipped


def check_voice_summary(written: Mapping[str, Any] | None, run: Mapping[str, Any],
                        run_dir: Path) -> VoiceCheck:
    """The written summary if it is what the turns say; else the re-derived one, its
    validity at best degraded with the reason first."""
    derived, _ = derive_voice_summary(run, run_dir)
    if written is not None and _same(written, derived):
        return VoiceCheck(dict(written), None)
    if written is None:
        why = (f"summary.json is missing: every figure was re-derived from {TURNS_FILE}")
    else:
        differ = sorted(k for k in set(written) | set(derived)
                        if written.get(k) != derived.get(k))
        shown = ", ".join(differ[:3]) + (f" (and {len(differ) - 3} more)"
                                         if len(differ) > 3 else "")
        why = (f"summary.json does not agree with {TURNS_FILE} ({shown} differ from a "
               f"re-derivation): every figure was re-derived from its turns")
    validity = dict(derived["validity"])
    validity["status"] = worst(validity.get("status") or "degraded", "degraded")
    validity["reasons"] = [why, *validity.get("reasons", [])]
    derived["validity"] = validity
    voice = derived.get("voice")
    if isinstance(voice, dict) and isinstance(voice.get("validity"), dict):
        inner = voice["validity"]
        inner["status"] = worst(inner.get("status") or "degraded", "degraded")
        inner["reasons"] = [why, *inner.get("reasons", [])]
    return VoiceCheck(derived, why)


def _same(written: Mapping[str, Any], derived: Mapping[str, Any]) -> bool:
    """The two documents hold the same JSON (key order aside)."""
    return json.dumps(written, sort_keys=True) == json.dumps(derived, sort_keys=True)
