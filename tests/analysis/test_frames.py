"""Records as two frames, one row a request and one a chunk (`evalkit.analysis.frames`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from evalkit.analysis.frames import chunks_frame, frames, records_frame
from evalkit.analysis.stats import (
    percentiles,
)
from evalkit.analysis.summarize import summarize
from evalkit.records import Chunks, RequestRecord
from tests.analysis.helpers import stream


def test_a_request_that_hung_until_its_timeout_counts_as_in_flight() -> None:
    """A failed request without content holds its connection until it ended (`end_s`)."""
    from evalkit.analysis.frames import records_frame

    hung = RequestRecord(id="h", phase="ramp", level=2, outcome="timeout", t0_s=10.0,
                         end_s=30.0)
    old = RequestRecord(id="o", phase="ramp", level=2, outcome="timeout", t0_s=10.0)
    ends = records_frame([hung, old])["end_s"].tolist()
    assert ends == [40.0, 10.0]


class TestFrames:
    """The request and chunk frames every metric is computed from."""

    def test_columns(self) -> None:
        req, chunks = frames([stream("a")])
        assert {"output_tokens", "output_tokens_estimated", "n_chunks", "chunk_tokens",
                "tpot_s", "stream_tokens_per_s", "end_s", "ok", "served",
                "admission_failure"} <= set(req.columns)
        assert set(chunks.columns) == {"rid", "id", "phase", "level", "t_s", "offset_s",
                                       "tokens", "scaled_tokens", "gap_s"}
        assert list(chunks["phase"]) == ["baseline"] * 10 and list(chunks["level"]) == [1] * 10
        assert list(chunks["offset_s"]) == pytest.approx([0.1 + 0.02 * i for i in range(10)])

    def test_output_tokens_fall_back_to_our_count_then_the_chunks(self) -> None:
        counted = stream("a", n=4, usage=None, counted=7)
        chunked = RequestRecord(id="b", phase="baseline", level=1, outcome="ok", t0_s=1.0,
                                chunks=[(0.1, 2), (0.2, 2), (0.3, 2)])
        single = RequestRecord(id="c", phase="baseline", level=1, outcome="ok", t0_s=2.0,
                               chunks=[(0.1, 3)])
        req = records_frame([counted, chunked, single])
        assert list(req["output_tokens"]) == [7, 6, 3]
        assert list(req["output_tokens_estimated"]) == [True, True, True]
        assert list(req["e2e_s"]) == pytest.approx([0.16, 0.3, 0.1])  # the last chunk's

    def test_tpot_needs_two_tokens_after_the_first_chunk_or_one(self) -> None:
        req = records_frame([stream("two", n=2, gap=0.05),
                             stream("bundle", n=1, tpc=2, t0=1.0)])
        assert req["tpot_s"].iloc[0] == pytest.approx(0.05)
        assert math.isnan(req["tpot_s"].iloc[1])  # nothing came after the first chunk

    def test_chunk_tokens_scale_to_usage(self) -> None:
        one = summarize([stream("a", n=1, tpc=1, usage=5)])["baseline"]
        assert one["tokens_per_chunk"]["p50"] == 5.0
        # chunks our tokenizer reads as empty still carry the server's tokens: usage over
        # the content chunks, 5 / 3 each
        blank = summarize([stream(f"b{i}", "ramp", 1, t0=i, n=3, tpc=0, usage=5)
                           for i in range(2)])["ramp"]["levels"][0]
        assert blank["tokens_per_chunk"]["p50"] == pytest.approx(5 / 3)
        assert blank["aggregate_tokens_per_s"] > 0
        unknown = summarize([stream(f"b{i}", "ramp", 1, t0=i, n=3, tpc=0, usage=None)
                             for i in range(2)])["ramp"]["levels"][0]
        assert unknown["aggregate_tokens_per_s"] == 0.0  # nothing we could count, not NaN

    def test_a_timeout_that_streamed_was_served(self) -> None:
        late = RequestRecord(id="t", phase="baseline", level=1, outcome="timeout", t0_s=0.0,
                             chunks=[(0.2, 1)])
        assert summarize([late, stream("a", t0=1)])["baseline"]["admission_failure_rate"] == 0

    def test_records_may_be_any_iterable(self) -> None:
        assert summarize(iter([stream("a")]))["requests"] == 1

    def test_an_outcome_we_do_not_know_is_counted(self) -> None:
        weird = RequestRecord(id="w", phase="baseline", level=1, outcome="weird",  # type: ignore[arg-type]
                              t0_s=0.0)
        assert summarize([weird, stream("a", t0=1)])["outcomes"]["weird"] == 1

    def test_duplicate_ids_keep_their_chunks(self) -> None:
        chunks = chunks_frame([stream("x", n=2), stream("x", n=1, t0=1)])
        assert list(chunks["id"]) == ["x", "x", "x"]

    def test_an_overflowing_mean_is_no_number(self) -> None:
        assert percentiles([1e308, 1e308])["mean"] is None


def test_records_read_back_give_the_frames_and_summary_the_probe_did(tmp_path: Path) -> None:
    """A record read back holds its chunks as flat arrays (`Chunks`, a third of the
    memory); it must equal the prober's record of lists, and give the same frames and
    the same summary, chunk for chunk."""
    from dataclasses import replace

    from evalkit.rundir.store import read_records
    from tests.analysis.helpers import closed_loop, failed

    made = [*closed_loop("ramp", 4, 6, ttft=0.2, gap=0.03), *closed_loop("ramp", 8, 5),
            failed("f1", "timeout", "ramp", 8), stream("b1", n=3)]
    # a chunk's time is written to 7 digits (`RequestRecord.to_json`)
    made = [replace(r, chunks=[(round(t, 7), n) for t, n in r.chunks]) for r in made]
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in made))
    back = read_records(path)
    assert all(isinstance(r.chunks, Chunks) for r in back)
    assert back == made and [list(r.chunks) for r in back] == [r.chunks for r in made]
    assert back[0].chunks[1:] == made[0].chunks[1:] and back[0].chunks[-1] == made[0].chunks[-1]
    (req_a, ch_a), (req_b, ch_b) = frames(made), frames(back)
    pd.testing.assert_frame_equal(ch_a, ch_b)
    pd.testing.assert_frame_equal(req_a, req_b)
    assert summarize(back) == summarize(made)
    # one read back beside one made (a run's records and a workload's, say): pair by pair
    pd.testing.assert_frame_equal(frames([back[0], made[1]])[1], frames(made[:2])[1])
