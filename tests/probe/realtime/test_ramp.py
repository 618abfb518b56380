"""Levels of concurrent calls against the reference endpoint's realtime mode, judged by
its truth log: each level keeps its calls in flight, its records leave as they are
measured, TTFA grows past the endpoint's limit as the truth says, and the client's
self-check is there to judge each level by."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from evalkit.probe.realtime.ramp import VoiceClientLimits, run_ramp
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.records import TurnRecord
from tests.probe.realtime.helpers import plan_for


def test_a_ramp_keeps_its_calls_in_flight_and_ttfa_grows_past_the_limit(
        tmp_path: Path) -> None:
    emitted: list[tuple[float, TurnRecord]] = []
    with RealtimeReference({"ttfa_s": 0.1, "ttfa_jitter_s": 0.0, "answer_s": 0.2,
                            "audio_rate": 2.0, "limit": 1, "over_ttfa_s": 0.2},
                           truth_log=tmp_path / "t.jsonl") as ref:
        plan = plan_for(ref.base_url, turns=1, server_vad=False)
        runs = asyncio.run(run_ramp(plan, (1, 3), duration_s=1.0, min_turns=2,
                                    emit=lambda r: emitted.append((time.monotonic(), r)),
                                    limits=VoiceClientLimits(cpu_fraction=0.0)))
        ended = time.monotonic()
        truth = {t["response"]: t for t in ref.truth() if "response" in t}
    one, three = runs
    assert (one.concurrency, three.concurrency) == (1, 3)
    assert {r.level for r in one.records} == {1} and {r.level for r in three.records} == {3}
    assert one.calls >= 2 and three.calls >= 3 and len(three.records) >= 3
    # every record left as its call ended: the first long before the ramp did
    assert [r for _, r in emitted] == [*one.records, *three.records]
    assert emitted[0][0] < ended - three.wall_s
    # call numbers run on across levels
    assert len({r.call for r in [*one.records, *three.records]}) == one.calls + three.calls
    for record in [*one.records, *three.records]:
        assert record.outcome == "ok" and record.ttfa_s is not None
        tr = truth[record.response_id or ""]
        assert abs(record.ttfa_s - (tr["first_audio_ns"] - tr["voiced_end_ns"]) / 1e9) < 0.005
    alone = max(r.ttfa_s or 0 for r in one.records)
    crowded = sorted(r.ttfa_s or 0 for r in three.records)
    assert crowded[len(crowded) // 2] > alone + 0.15  # one or two calls over the limit
    # the self-check is measured, and a level past its limits says why
    for run in runs:
        assert run.loop_lag_p99_s is not None and run.cpu_fraction is not None
        assert any(reason.startswith("CPU") for reason in run.client_bound)
        assert run.cpu_per_call is not None


def test_a_refusing_vendor_is_redialled_not_hammered() -> None:
    with RealtimeReference({"max_sessions": 0}) as ref:
        (run,) = asyncio.run(run_ramp(plan_for(ref.base_url, turns=1), (2,),
                                      duration_s=1.0, min_turns=0, emit=lambda r: None))
    assert {r.outcome for r in run.records} == {"rejected"}
    assert 2 <= len(run.records) <= 6  # two slots redialling once a second, not hundreds
