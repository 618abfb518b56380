"""The buffering check: a stream whose chunks a gateway held and passed on together."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from evalkit.analysis.buffering import buffering_check
from evalkit.analysis.frames import frames
from evalkit.analysis.summarize import summarize
from evalkit.analysis.summary import Summary
from evalkit.records import RequestRecord
from evalkit.review.rules import run_blocker
from tests.analysis.helpers import stream


def _arrived(rid: str, reads: list[tuple[float, int]], phase: str = "baseline",
             level: int | None = 1) -> RequestRecord:
    """A 1-token-a-chunk request whose chunks came in these reads: (offset s, chunks)."""
    chunks = [(at, 1) for at, k in reads for _ in range(k)]
    n = len(chunks)
    return replace(stream(rid, phase, level, n=n), chunks=chunks, ttft_s=chunks[0][0],
                   e2e_s=chunks[-1][0])


def _honest(rid: str, n: int = 32, phase: str = "baseline", level: int | None = 1
            ) -> RequestRecord:
    """One chunk a read, 20 ms apart: an engine streaming straight to us."""
    return stream(rid, phase, level, n=n, ttft=0.2, gap=0.02)


def _check(recs: list[RequestRecord], **kw: object) -> dict[str, object]:
    return buffering_check(*frames(recs), **kw)  # type: ignore[arg-type]


class TestBufferingCheck:
    def test_a_whole_answer_in_one_read_is_buffered(self) -> None:
        """32 chunks at one instant, 0.84 s after the request: what a proxy that reads the
        whole answer first passes on. It is named with its chunks and reads."""
        recs = [_arrived(f"b{i}", [(0.84, 32)]) for i in range(3)] + \
               [_honest(f"h{i}") for i in range(7)]
        assert _check(recs) == {
            "checked": 10, "buffered": 3, "buffered_fraction": 0.3, "chunks": 96,
            "reads": 3, "not_judged_client_bound": 0, "flagged": True, "tolerance": 0.05,
            "burst_chunks": 8, "held_gap_s": 0.01}

    def test_nginx_sized_buffers_are_buffered(self) -> None:
        """20 chunks a 4 KB buffer, flushed every 0.4 s, the rest at the end."""
        rec = _arrived("n", [(0.6, 20), (1.0, 20), (1.4, 20), (1.5, 4)])
        check = _check([rec])
        assert (check["buffered"], check["chunks"], check["reads"]) == (1, 64, 4)

    def test_several_tokens_in_one_chunk_are_a_stream(self) -> None:
        """An engine that bundles 4 tokens a chunk (speculative decoding): one chunk, one
        read, every 80 ms."""
        recs = [stream(f"s{i}", n=16, tpc=4, gap=0.08) for i in range(10)]
        check = _check(recs)
        assert (check["checked"], check["buffered"], check["flagged"]) == (10, 0, False)

    def test_an_engine_writing_a_few_chunks_at_once_is_a_stream(self) -> None:
        """Up to 7 chunks in one write now and then (fewer than a burst), and 8 together
        once: most of the stream still came read by read."""
        rec = _arrived("w", [(0.2, 7), (0.3, 1), (0.32, 2), (0.5, 8), *[
            (0.52 + 0.02 * i, 1) for i in range(14)]])
        assert _check([rec])["buffered"] == 0

    def test_a_client_behind_a_fast_stream_merged_what_waited_for_it(self) -> None:
        """256 tokens at 10,000 a second: the client, parsing, finds 40 chunks waiting at
        each read. They waited for us 4 ms, under the held gap: not a buffer."""
        reads = [(0.17, 1)] + [(0.17 + 0.004 * (i + 1), 40) for i in range(6)] + \
                [(0.2, 15)]
        assert _check([_arrived("f", reads)])["buffered"] == 0

    def test_our_lateness_is_never_the_endpoint_s(self) -> None:
        """A phase or level where the client set the pace is not judged (counted apart)."""
        recs = [_arrived("b", [(0.84, 32)]), _arrived("r", [(0.84, 32)], "ramp", 4),
                _arrived("r8", [(0.84, 32)], "ramp", 8), _honest("h", phase="ramp", level=2)]
        check = _check(recs, bound={("baseline", None), ("ramp", 4)})
        assert (check["checked"], check["buffered"], check["not_judged_client_bound"]) == \
            (2, 1, 2)

    def test_short_answers_and_other_phases_are_not_judged(self) -> None:
        """Prefill asks for 2 tokens; 15 chunks are too few to show a buffer; a failed
        stream is no answer. Nothing judged says so (None), it does not read fine."""
        recs = [_arrived("p", [(0.5, 32)], phase="prefill"), _arrived("s", [(0.5, 15)]),
                replace(_arrived("x", [(0.5, 32)]), outcome="incomplete")]
        check = _check(recs)
        assert (check["checked"], check["flagged"], check["buffered_fraction"]) == \
            (0, None, None)

    def test_one_stall_is_not_a_buffer(self) -> None:
        """One request in 14 with a burst (on a loaded host a proxy's worker was off the
        CPU for 300 ms, and then sent what it had): over 5 %, but one is no gateway's
        habit. Every request of a one-request run buffered is."""
        recs = [_arrived("b", [(0.36, 1), (0.7, 21), *[(0.72 + 0.02 * i, 1)
                                                        for i in range(10)]])]
        honest = [_honest(f"h{i}") for i in range(13)]
        assert (_check(recs + honest)["buffered"], _check(recs + honest)["flagged"]) == \
            (1, False)
        assert _check([*recs, *honest[:1], _arrived("b2", [(0.8, 32)])])["flagged"] is True
        assert _check(recs)["flagged"] is True

    def test_the_tolerance_itself_is_not_over_it(self) -> None:
        recs = [_arrived("b", [(0.84, 32)])] + [_honest(f"h{i}") for i in range(19)]
        check = _check(recs)
        assert (check["buffered_fraction"], check["flagged"]) == (0.05, False)


class TestABufferedRunJudgesNoTiming:
    """Through summarize and the review's blocker: the check, the validity's reason and
    every measured judgement unverified (none reads ok from a gateway's buffer)."""

    @staticmethod
    def _summary(buffered: int) -> dict[str, object]:
        recs = [_arrived(f"b{i}", [(0.84, 32)]) for i in range(buffered)] + \
               [_honest(f"h{i}") for i in range(10 - buffered)]
        return summarize(recs, {"run_status": "complete"})

    def test_the_run_says_so_and_no_judgement_rests_on_it(self) -> None:
        s = self._summary(10)
        words = ("the stream arrived buffered: 320 chunks in 10 reads (10 of 10 requests); "
                 "TTFT and inter-token latency measure the gateway's buffer, not the engine")
        assert s["checks"]["buffering"]["flagged"] is True  # type: ignore[index]
        assert s["validity"]["status"] == "degraded"  # type: ignore[index]
        assert words in s["validity"]["reasons"]  # type: ignore[index]
        m = Summary.from_json(s)
        assert m is not None and m.buffered == words
        blocker = run_blocker(m)
        assert blocker is not None and blocker.startswith(words)

    def test_a_stream_that_came_as_sent_blocks_nothing(self) -> None:
        s = self._summary(0)
        assert s["checks"]["buffering"]["flagged"] is False  # type: ignore[index]
        assert s["validity"]["status"] == "valid"  # type: ignore[index]
        m = Summary.from_json(s)
        assert m is not None and m.buffered is None and run_blocker(m) is None

    def test_the_run_s_own_threshold_applies(self) -> None:
        recs = [_arrived("b", [(0.84, 32)])] + [_honest(f"h{i}") for i in range(9)]
        lenient = summarize(recs, {"run_status": "complete",
                                   "thresholds": {"buffered_share": 0.2}})
        assert lenient["checks"]["buffering"]["flagged"] is False
        assert lenient["validity"]["status"] == "valid"


def _reads_by_groupby(chunks: pd.DataFrame, rows: pd.Index) -> pd.DataFrame:
    """The reads counted the plain way (a two-key groupby), as `_reads` did before it
    went to flat arrays to save a long run's memory: the two must agree."""
    import numpy as np

    from evalkit.analysis.thresholds import BURST_CHUNKS, HELD_GAP_S

    sub = chunks[chunks["rid"].isin(rows)][["rid", "offset_s"]].rename(columns={"offset_s": "at"})
    reads = sub.groupby(["rid", "at"], sort=True).size().rename("k").reset_index()
    at = reads["at"].to_numpy()
    first = np.r_[True, reads["rid"].to_numpy()[1:] != reads["rid"].to_numpy()[:-1]]
    gap = np.where(first, at, np.r_[np.nan, np.diff(at)])
    k = reads["k"].to_numpy()
    burst = (k >= BURST_CHUNKS) & (gap >= HELD_GAP_S)
    return pd.DataFrame({"rid": reads["rid"], "k": k, "burst": np.where(burst, k, 0)}
                        ).groupby("rid").agg(chunks=("k", "sum"), reads=("k", "size"),
                                             burst_chunks=("burst", "sum"))


def test_the_reads_agree_with_a_groupby_in_any_order() -> None:
    """Random requests of bursts and single reads (some chunks out of order, as an import
    may hold them, some requests left out): per request the same chunks, reads and burst
    chunks as the two-key groupby counts."""
    import random

    import numpy as np

    from evalkit.analysis.buffering import _reads

    rng = random.Random(7)
    for trial in range(30):
        recs = []
        for i in range(rng.randint(1, 12)):
            reads, at = [], rng.uniform(0.05, 0.9)
            for _ in range(rng.randint(1, 12)):
                reads.append((round(at, 3), rng.choice([1, 1, 1, 2, 5, 9, 16])))
                at += rng.choice([0.0, 0.001, 0.02, 0.3, 0.6])
            rec = _arrived(f"r{trial}-{i}", reads)
            if rng.random() < 0.3:  # out of arrival order
                rec = replace(rec, chunks=rng.sample(rec.chunks, len(rec.chunks)))
            recs.append(rec)
        req, chunks = frames(recs)
        rows = req.index[np.array([rng.random() < 0.8 for _ in range(len(req))])]
        ours, plain = _reads(chunks, rows), _reads_by_groupby(chunks, rows)
        assert ours.index.tolist() == plain.index.tolist(), trial
        for column in ("chunks", "reads", "burst_chunks"):
            assert ours[column].tolist() == plain[column].tolist(), (trial, column)
