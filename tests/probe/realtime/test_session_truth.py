"""A realtime call against the reference endpoint's realtime mode, over real sockets,
judged by its truth log: TTFA from the last voiced frame we sent, the vendor's silence
window as its own term, the 1x player's underruns."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.realtime.session import Call
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.audio import audio_seconds, load_utterances
from evalkit.voice.player import play
from tests.probe.realtime.helpers import plan_for, run_calls


def responses(truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((t for t in truth if "response" in t), key=lambda t: t["decided_ns"])


@pytest.mark.parametrize("server_vad", [True, False], ids=["server-vad", "client-commit"])
def test_ttfa_is_the_truth_logs_within_a_few_ms(tmp_path: Path, server_vad: bool) -> None:
    truth_log = tmp_path / "truth.jsonl"
    with RealtimeReference({"ttfa_s": 0.15, "answer_s": 0.5, "audio_rate": 2.0},
                           truth_log=truth_log, seed=3) as ref:
        records = run_calls(plan_for(ref.base_url, server_vad=server_vad))
        truth = responses(ref.truth())
    assert [r.outcome for r in records] == ["ok", "ok"]
    assert len(truth) == 2
    for rec, tr in zip(sorted(records, key=lambda r: r.turn), truth, strict=True):
        true_ttfa = (tr["first_audio_ns"] - tr["voiced_end_ns"]) / 1e9
        assert rec.ttfa_s is not None
        assert abs(rec.ttfa_s - true_ttfa) < 0.005, (rec.ttfa_s, true_ttfa)
        if server_vad:
            # the window the vendor waited is its own term: 200 ms of audio past the
            # last voiced frame, and TTFA holds it (plus the drawn 0.1-0.2 s)
            assert rec.vad_window_s == pytest.approx(tr["silence_ms"] / 1000, abs=0.021)
            assert tr["silence_ms"] == 200
            assert true_ttfa > 0.2 + 0.1
        else:
            assert rec.vad_window_s is None and tr["silence_ms"] is None
            assert tr["commit_ns"] is not None
            assert true_ttfa < 0.2 + 0.02
        assert rec.answer_audio_s == pytest.approx(0.5)
        assert rec.underruns == 0 and rec.ahead_ratio is not None and rec.ahead_ratio > 1.5


def test_a_stall_mid_answer_is_one_underrun_of_its_length(tmp_path: Path) -> None:
    """Audio at 2x, then held 0.5 s after 0.3 s of it: the player had 0.3 - 0.15 s in
    hand, so it runs dry once, for 0.35 s; the truth log's sends say the same."""
    with RealtimeReference({"ttfa_s": 0.1, "ttfa_jitter_s": 0.0, "answer_s": 0.6,
                            "audio_rate": 2.0, "stall_after_s": 0.3, "stall_s": 0.5},
                           truth_log=tmp_path / "truth.jsonl") as ref:
        records = run_calls(plan_for(ref.base_url, turns=1, server_vad=False))
        truth = responses(ref.truth())
    (rec,) = records
    sent = play([at / 1e9 for at, _ in truth[0]["audio"]], [0.1] * 6)
    assert (rec.outcome, rec.underruns, sent.underruns) == ("ok", 1, 1)
    assert rec.underrun_s == pytest.approx(0.35, abs=0.02)  # as configured, give or take
    # the server's punctuality; exactly what its own sends say:
    assert rec.underrun_s == pytest.approx(sent.underrun_s, abs=0.003)


def test_audio_slower_than_real_time_runs_dry_after_every_delta(tmp_path: Path) -> None:
    """0.1 s of audio every 0.125 s (0.8x): four dry spells of 25 ms after the first.

    Counted exactly against what the server really sent (its truth log's send stamps,
    played at 1x as our player plays them): on a loaded machine the reference's own
    sends drift from its schedule, and a late first delta moves the play-out so that
    a later one arrives in time. The configured shape is held loosely beside it."""
    with RealtimeReference({"ttfa_s": 0.1, "ttfa_jitter_s": 0.0, "answer_s": 0.5,
                            "audio_rate": 0.8}, truth_log=tmp_path / "truth.jsonl") as ref:
        (rec,) = run_calls(plan_for(ref.base_url, turns=1, server_vad=False))
        truth = responses(ref.truth())
    audio = truth[0]["audio"]
    sent = play([at / 1e9 for at, _ in audio], [audio_seconds(n) for _, n in audio])
    assert (rec.outcome, rec.underruns) == ("ok", sent.underruns)
    assert rec.underrun_s == pytest.approx(sent.underrun_s, abs=0.003)
    assert 3 <= sent.underruns <= 5 and sent.underrun_s == pytest.approx(0.1, abs=0.03)
    assert rec.ahead_ratio == pytest.approx(0.8, abs=0.05)


@pytest.mark.parametrize("server_vad", [True, False], ids=["speech-over", "cancel"])
def test_barge_in_time_is_the_truth_logs(tmp_path: Path, server_vad: bool) -> None:
    """The caller talks over the first answer (its next utterance under server VAD,
    response.cancel when it commits itself): the time until answer audio stops is the
    server's cancel delay, within 10 ms of the truth log."""
    with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.8, "audio_rate": 1.0,
                            "cancel_delay_s": 0.12}, truth_log=tmp_path / "t.jsonl") as ref:
        records = run_calls(plan_for(ref.base_url, server_vad=server_vad, barge_in_every=1,
                                     barge_after_s=0.2))
        truth = responses(ref.truth())
    first = min(records, key=lambda r: r.turn)
    assert [r.outcome for r in sorted(records, key=lambda r: r.turn)] == ["ok", "ok"]
    assert first.interrupted_by == ("speech" if server_vad else "cancel")
    assert truth[0]["status"] == "cancelled"
    assert truth[0]["interrupted_by"] == ("speech" if server_vad else "cancel")
    true_barge = (truth[0]["last_audio_ns"] - truth[0]["interrupt_ns"]) / 1e9
    assert first.barge_in_s is not None
    assert abs(first.barge_in_s - true_barge) < 0.010, (first.barge_in_s, true_barge)
    assert 0.0 < true_barge <= 0.12
    assert first.answer_audio_s is not None and first.answer_audio_s < 0.6


@pytest.mark.parametrize("frame_ms", [20, 40])
def test_frames_go_at_real_time_pace(tmp_path: Path, frame_ms: int) -> None:
    """Each frame leaves on its own tick, as a phone's do: the server sees the k-th
    append of an utterance k frames after the first (never a burst, never drifting)."""
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2}, truth_log=tmp_path / "t") as ref:
        (rec,) = run_calls(plan_for(ref.base_url, turns=1, server_vad=False,
                                    frame_ms=frame_ms))
        (session,) = [t for t in ref.truth(sessions=1) if "appends_ns" in t]
    arrivals = session["appends_ns"]
    assert len(arrivals) == -(-500 // frame_ms)  # up to the last voiced frame of 0.5 s
    # judged by the server's arrival stamps, robust to one stall of a loaded machine
    # (a late frame and the next arrive in one read): each frame on its own tick (the
    # median gap is the frame), at most two caught up, and the utterance spans its length
    # (a burst spans nothing, a sender that sleeps a frame after each send drifts long)
    gaps = sorted((b - a) / 1e6 for a, b in itertools.pairwise(arrivals))
    assert abs(gaps[len(gaps) // 2] - frame_ms) < 2.0, gaps
    assert sum(g < frame_ms / 2 for g in gaps) <= 2, gaps
    span = (arrivals[-1] - arrivals[0]) / 1e6
    assert abs(span - (len(arrivals) - 1) * frame_ms) < frame_ms, (span, gaps)
    assert rec.pace_late_max_s is not None


def test_ttfa_holds_to_the_truth_at_16_concurrent_calls(tmp_path: Path) -> None:
    """Sixteen calls at once on one event loop: each turn's TTFA within 2 ms of the truth
    log's (the issue asks 5). Both ends are the kernel's: our send stamp as the bytes go
    to the socket and the reader's SO_TIMESTAMPNS, the server's arrival stamp likewise, so
    neither loop's lateness on a loaded machine is in either figure (measured 0.03-0.11 ms
    with two busy processes beside; with the server stamping in `data_received` it was
    up to 5.2 ms in CI, the server's own lateness charged to us)."""
    with RealtimeReference({"ttfa_s": 0.15, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl", seed=5) as ref:
        records = run_calls(plan_for(ref.base_url, turns=1, server_vad=False), calls=16,
                            level=16)
        truth = {t["response"]: t for t in ref.truth() if "response" in t}
    assert sorted(r.outcome for r in records) == ["ok"] * 16 and len(truth) == 16
    errors = []
    for rec in records:  # paired by the vendor's response id
        assert rec.response_id is not None and rec.ttfa_s is not None
        tr = truth[rec.response_id]
        errors.append(abs(rec.ttfa_s - (tr["first_audio_ns"] - tr["voiced_end_ns"]) / 1e9))
    assert max(errors) < 0.002, errors


def test_a_shipped_utterance_ends_where_the_reference_vad_hears_it_end(
        tmp_path: Path) -> None:
    """Real speech (the shipped espeak-ng recording), the vendor's VAD deciding with its
    default 500 ms window: our last voiced frame is the one the server's VAD heard last,
    so TTFA agrees with the truth log and the window reads 0.5 s."""
    (utterance,) = [u for u in load_utterances(None) if u.name == "2-number"]
    assert not utterance.private
    with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl") as ref:
        (rec,) = run_calls(plan_for(ref.base_url, turns=1, utterances=(utterance,),
                                    silence_ms=500))
        (truth,) = responses(ref.truth())
    assert rec.outcome == "ok" and rec.ttfa_s is not None
    assert abs(rec.ttfa_s - (truth["first_audio_ns"] - truth["voiced_end_ns"]) / 1e9) < 0.005
    assert rec.vad_window_s == pytest.approx(0.5, abs=0.021)


def test_each_turn_leaves_as_it_is_measured() -> None:
    """A record is handed on when its answer ends, not when the call does: a call cut
    short, or a run stopped, keeps what it measured."""
    handed: list[tuple[float, int]] = []
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2, "audio_rate": 2.0}) as ref:
        plan = plan_for(ref.base_url, turns=3, server_vad=False)

        async def call() -> float:
            await Call(plan, 0, 1, lambda r: handed.append((time.monotonic(), r.turn))).run()
            return time.monotonic()

        ended = asyncio.run(call())
    assert [turn for _, turn in handed] == [0, 1, 2]
    assert handed[0][0] < ended - 1.0  # two more turns of ~0.8 s each came after it
