"""Short synthetic callers and a runner for realtime calls (kept short: a turn costs its
utterance's length in real time, so the tests speak half a second, not the shipped 2.5 s)."""

from __future__ import annotations

import asyncio
import math
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit.probe.realtime.openai import session_url
from evalkit.probe.realtime.session import Call, CallPlan
from evalkit.voice.audio import RATE_HZ, Utterance
from evalkit.voice.records import TurnRecord


def tone(name: str, lead_s: float = 0.1, voiced_s: float = 0.4, tail_s: float = 0.1,
         hz: float = 220.0) -> Utterance:
    """Silence, a tone (every frame of it voiced), silence: the last voiced frame is known."""
    n_lead, n_voiced, n_tail = (round(s * RATE_HZ) for s in (lead_s, voiced_s, tail_s))
    samples = [0] * n_lead + [round(8000 * math.sin(2 * math.pi * hz * i / RATE_HZ))
                              for i in range(n_voiced)] + [0] * n_tail
    return Utterance(name, struct.pack(f"<{len(samples)}h", *samples))


def plan_for(base_url: str, **overrides: Any) -> CallPlan:
    """A fast call: two turns, short tones, no barge-in unless asked."""
    plan = CallPlan(url=session_url(base_url, "evalkit-realtime", None), headers=(),
                    utterances=(tone("a"), tone("b", hz=330.0)), turns=2, silence_ms=200,
                    barge_in_every=0, pause_s=0.05, connect_timeout_s=5.0,
                    answer_timeout_s=5.0)
    return replace(plan, **overrides)


def run_calls(plan: CallPlan, calls: int = 1, level: int = 1) -> list[TurnRecord]:
    """`calls` calls at once; every turn's record."""
    records: list[TurnRecord] = []

    async def main() -> None:
        await asyncio.gather(*(Call(plan, k, level, records.append).run()
                               for k in range(calls)))

    asyncio.run(main())
    return records


def voice_probe(folder: Path, reference: dict[str, Any], *args: str, seed: int = 0,
                audio: Path | None = None, exits: tuple[int, ...] = (0,),
                relaxed: bool = True) -> Path:
    """`evalkit probe --api openai-realtime` (short calls, client turn detection, as
    `voice_args` sets them, plus `args`) against a `RealtimeReference` playing
    `reference`; the run directory, folder/run. `audio`: the callers (default: tones
    written under folder/audio); `relaxed`: the tests' relaxed self-check profile (the
    shared host may be busy); `exits`: the exit codes the caller accepts."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.reference.realtime.process import RealtimeReference
    from tests.probe.realtime.test_voice_cli import SECRET, relaxed_profile, voice_args
    from tests.probe.realtime.test_voice_run import write_tones

    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "run"
    callers = audio if audio is not None else write_tones(folder / "audio")
    profile = ("--profile", str(relaxed_profile(folder))) if relaxed else ()
    with RealtimeReference(reference, seed=seed) as ref:
        result = CliRunner().invoke(cli, voice_args(ref.base_url, out, callers, *args,
                                                    *profile),
                                    env={"OPENAI_API_KEY": SECRET})
    assert result.exit_code in exits, result.output
    return out
