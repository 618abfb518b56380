"""The realtime reference endpoint's behaviour: one frozen set of parameters, each with
its unit, so a test can make it answer fast or slow, keep ahead of playback or fall
behind past a concurrency limit, and refuse sessions past another."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from evalkit.errors import UsageError


@dataclass(frozen=True)
class RealtimeParams:
    """How the realtime reference endpoint answers a turn."""

    #: from the turn's end (server VAD's decision, or response.create) to the first
    #: audio: a draw uniform in [ttfa_s - ttfa_jitter_s, ttfa_s + ttfa_jitter_s]
    ttfa_s: float = 0.25
    ttfa_jitter_s: float = 0.05
    #: answer length (audio seconds), audio per delta, and the pace deltas are sent at
    #: (audio seconds per wall second: 2.0 sends ahead of playback, 0.8 falls behind)
    answer_s: float = 2.4
    chunk_s: float = 0.1
    audio_rate: float = 1.5
    #: sessions in flight beyond which the engine is overloaded: each one more adds
    #: `over_ttfa_s` to TTFA, and the audio goes at `over_rate`
    limit: int = 1_000_000
    over_ttfa_s: float = 0.0
    over_rate: float = 1.5
    #: sessions in flight beyond which a new one is refused (HTTP 429 on the upgrade)
    max_sessions: int = 1_000_000
    #: a stall mid-answer: after `stall_after_s` audio seconds of an answer, no audio for
    #: `stall_s` wall seconds (0: never), as an engine that loses its slot does
    stall_after_s: float = 0.0
    stall_s: float = 0.0
    #: how long audio keeps coming after a cancel, or speech over the answer
    cancel_delay_s: float = 0.12
    #: the server VAD's silence window when the session asks for none
    silence_ms: int = 500

    @classmethod
    def of(cls, overrides: Mapping[str, Any] | None) -> RealtimeParams:
        """Defaults with `overrides` (names as the fields; strings are converted)."""
        params = cls()
        kinds = {f.name: type(getattr(params, f.name)) for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in (overrides or {}).items():
            if name not in kinds:
                raise UsageError(f"unknown realtime reference parameter {name!r}; known: "
                                 + ", ".join(kinds))
            try:
                values[name] = kinds[name](value)
            except (TypeError, ValueError):
                raise UsageError(f"{name}: {value!r} is not a {kinds[name].__name__}") from None
        params = replace(params, **values)
        if params.chunk_s <= 0 or params.audio_rate <= 0 or params.over_rate <= 0:
            raise UsageError("chunk_s, audio_rate and over_rate must be positive")
        if min(params.ttfa_s, params.ttfa_jitter_s, params.answer_s, params.stall_after_s,
               params.stall_s, params.cancel_delay_s, params.over_ttfa_s) < 0 \
                or params.silence_ms <= 0:
            raise UsageError("times must not be negative, silence_ms must be positive")
        return params
