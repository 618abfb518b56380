"""A voice run over OTLP: each caller turn reaches the collector as a client span under its
call and level, its TTFA and the moments behind it as the turn record has them, and the
voice figures as metrics (`evalkit probe --api openai-realtime --otlp-endpoint`, and
`evalkit export otlp` of the same run directory, which sends the same trace)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.records import TURNS_FILE, read_turns
from tests.probe.realtime.test_voice_cli import SECRET, relaxed_profile, voice_args
from tests.probe.realtime.test_voice_run import write_tones
from tests.rundir.test_otlp import Receiver, attrs


def test_a_voice_run_sends_a_span_per_turn_with_its_ttfa(tmp_path: Path) -> None:
    audio = write_tones(tmp_path / "audio")
    out = tmp_path / "run"
    receiver = Receiver()
    try:
        with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.2, "audio_rate": 2.0},
                               seed=3) as ref:
            result = CliRunner().invoke(cli, voice_args(
                ref.base_url, out, audio, "--levels", "2", "--profile",
                str(relaxed_profile(tmp_path)), "--otlp-endpoint", receiver.url),
                env={"OPENAI_API_KEY": SECRET})
        assert result.exit_code == 0, result.output
        assert "otlp:" in result.output and "not exported" not in result.output
        sent = receiver.spans()
        again = Receiver()
        try:
            exported = CliRunner().invoke(cli, ["export", "otlp", str(out),
                                                "--otlp-endpoint", again.url])
            assert exported.exit_code == 0, exported.output
            resent = again.spans()
            metrics = again.metrics()
        finally:
            again.close()
    finally:
        receiver.close()
    records, _ = read_turns(out / TURNS_FILE)
    assert records and {r.level for r in records} == {0, 2}
    # the run's own probe and a later export send the same trace, span for span
    assert sorted(s.span_id for _, s in sent) == sorted(s.span_id for _, s in resent)
    spans = {s.span_id: s for _, s in sent}
    turns = [s for s in spans.values() if attrs(s).get("gen_ai.operation.name") == "realtime"]
    assert len(turns) == len(records)
    by_key = {(r.level, r.call, r.turn): r for r in records}
    for span in turns:
        a = attrs(span)
        rec = by_key[(a["evalkit.level"], a["evalkit.call"], a["evalkit.turn"])]
        assert a["evalkit.outcome"] == rec.outcome == "ok"
        assert a["evalkit.ttfa_s"] == rec.ttfa_s and a["gen_ai.provider.name"] == "openai"
        assert span.name == "realtime evalkit-realtime"
        # the first audio event sits TTFA after the last voiced frame was sent
        events = {e.name: e.time_unix_nano for e in span.events}
        assert rec.ttfa_s is not None
        assert abs(events["evalkit.first_audio"] - events["evalkit.voiced_end"]
                   - rec.ttfa_s * 1e9) < 2_000
        # the turn sits under its call, the call under its level, the level under the run
        call = spans[span.parent_span_id]
        assert attrs(call)["evalkit.call"] == rec.call
        level = spans[call.parent_span_id]
        assert attrs(level)["evalkit.level"] == rec.level
        assert not spans[level.parent_span_id].parent_span_id
    assert SECRET not in repr(sent)
    # the TTFA histogram counted every answered turn of each level; the gauges are there
    hist = metrics["evalkit.voice.time_to_first_audio"].histogram.data_points
    counted = {dict((kv.key, kv.value.int_value) for kv in p.attributes
                    if kv.key == "evalkit.level")["evalkit.level"]: p.count for p in hist}
    assert counted == {lv: sum(1 for r in records if r.level == lv and r.ttfa_s is not None)
                       for lv in (0, 2)}
    ttfa = {(a["evalkit.level"], a["evalkit.stat"]): p.as_double
            for p in metrics["evalkit.voice.ttfa"].gauge.data_points if (a := attrs(p))}
    assert 0.1 <= ttfa[(2, "p90")] < 0.2  # the reference answers 0.1 s after the turn ends
    (sustained,) = metrics["evalkit.voice.max_sustained_calls"].gauge.data_points
    assert sustained.as_double == 2
    # 4 answered turns cannot bound a p90 within the SLO: no point, never a 0 or a 2
    assert "evalkit.voice.max_calls_within_slo" not in metrics
