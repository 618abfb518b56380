"""A realtime call against the reference endpoint's realtime mode, over real sockets,
judged by its truth log: TTFA from the last voiced frame we sent, the vendor's silence
window as its own term, the 1x player's underruns."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.reference.realtime.process import RealtimeReference
from tests.probe.realtime.helpers import plan_for, run_calls


def responses(truth: list[dict]) -> list[dict]:
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
