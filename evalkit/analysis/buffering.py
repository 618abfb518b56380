"""Did the stream arrive buffered? A gateway between us and the engine (nginx's default
proxy buffering, a proxy that reads the whole answer first) can hold an answer's SSE
events and pass them on together: every event still arrives as its own chunk, so the
streaming check sees a stream, but many of them reach us in one socket read, after a
wait. TTFT then measures the buffer filling, and inter-token latency the gaps between
buffer flushes, not the engine's rhythm.

Read from the records alone. A chunk's arrival offset is its socket read's stamp (the
kernel's, on plain TCP): chunks with one identical offset came in one read. A read is a
*burst* when it carried `BURST_CHUNKS` or more content chunks and came `HELD_GAP_S` or
more after the stream's previous read (the first read: after the request was sent): the
chunks it carried were held somewhere for that long. A request arrived buffered when
half or more of its content chunks came in bursts. The run's check is flagged when more
than a share of the requests judged (`Thresholds.buffered_share`) arrived buffered, two
at least (or every one judged): a gateway that buffers holds every stream, while one
burst can be a process of the path descheduled for a few hundred ms on a busy host.

What is not a burst, by design:
- an honest engine that puts several tokens in one chunk (speculative decoding, a
  stream interval): one chunk, one read;
- an engine that writes a few chunks together now and then (llama.cpp does): fewer than
  `BURST_CHUNKS`, and never half a stream;
- a fast stream over loopback the client fell behind on: the chunks it merged waited
  for us, a few milliseconds (under `HELD_GAP_S`), and a client that falls behind is
  diagnosed client-bound where it happens, so its phases and levels are not judged here
  (`bound`): our own lateness is never charged to the endpoint.

Pure: frames in, a dict out (summary.json `checks.buffering`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.checks import STREAMED_PHASES
from evalkit.analysis.thresholds import BURST_CHUNKS, HELD_GAP_S

#: a request with fewer content chunks than this is not judged (prefill and cache ask
#: for two tokens; a short answer cannot show a buffer)
MIN_CHUNKS = 2 * BURST_CHUNKS
#: a request whose bursts carried at least this share of its chunks arrived buffered
BUFFERED_SHARE_OF_CHUNKS = 0.5


def buffering_check(req: pd.DataFrame, chunks: pd.DataFrame, tolerance: float = 0.05,
                    bound: Collection[tuple[str, int | None]] = ()) -> dict[str, Any]:
    """How many streamed requests arrived buffered, and in how many reads.

    `bound`: the (phase, level) groups where the client was the bottleneck (level None:
    the whole phase); their requests are counted in `not_judged_client_bound`, not
    judged. `chunks` and `reads` count the buffered requests' content chunks and the
    socket reads they came in: "N chunks in M reads"."""
    phase = req["phase"].to_numpy()
    level = req["level"].to_numpy(dtype=np.float64)
    ours = np.zeros(len(req), dtype=bool)
    for p, lv in bound:  # a few groups: the phases and levels the client check marked
        ours |= (phase == p) & (True if lv is None else level == lv)
    streamed = (req["ok"].to_numpy() & req["phase"].isin(STREAMED_PHASES).to_numpy()
                & (req["n_chunks"].to_numpy() >= MIN_CHUNKS))
    judged = streamed & ~ours
    rows = req.index[judged]
    per = _reads(chunks, rows)
    buffered = per[per["burst_chunks"] >= BUFFERED_SHARE_OF_CHUNKS * per["chunks"]]
    n = len(rows)
    share = len(buffered) / n if n else None
    return {"checked": n, "buffered": len(buffered),
            "buffered_fraction": share,
            "chunks": int(buffered["chunks"].sum()), "reads": int(buffered["reads"].sum()),
            "not_judged_client_bound": int((streamed & ours).sum()),
            # two at least (or all there were): one stream's stall, a process of the
            # path (ours, the proxy's) off the CPU for a few hundred ms, is not a buffer
            "flagged": (share > tolerance and (len(buffered) >= 2 or len(buffered) == n))
            if share is not None else None,
            "tolerance": tolerance, "burst_chunks": BURST_CHUNKS, "held_gap_s": HELD_GAP_S}


def _reads(chunks: pd.DataFrame, rows: pd.Index) -> pd.DataFrame:
    """Per request of `rows`: its content chunks, the socket reads they came in, and the
    chunks that came in bursts (indexed by request row).

    A read is a run of chunks of one request with one arrival offset. Found with flat
    arrays over the (request, offset) order, not a two-key groupby: over a day's run of
    millions of chunks that groupby took several times the chunk frame's own memory."""
    empty = pd.DataFrame({"chunks": [], "reads": [], "burst_chunks": []}, dtype=np.int64)
    if not len(rows):
        return empty
    rid = chunks["rid"].to_numpy()
    chosen = np.zeros(int(max(rid.max(initial=0), rows.max())) + 1, dtype=bool)
    chosen[rows.to_numpy()] = True  # a lookup, not isin's sort of every chunk's row
    mask = chosen[rid]
    if not mask.any():
        return empty
    rid, at = rid[mask], chunks["offset_s"].to_numpy()[mask]
    del mask
    step_rid, step_at = np.diff(rid), np.diff(at)
    if ((step_rid < 0) | ((step_rid == 0) & (step_at < 0))).any():
        order = np.lexsort((at, rid))  # an import's chunks out of order: sort them
        rid, at = rid[order], at[order]
        del order
        step_rid, step_at = np.diff(rid), np.diff(at)
    # one read per run of equal (request, arrival offset), its chunk count k
    starts = np.flatnonzero(np.r_[True, (step_rid != 0) | (step_at != 0)])
    del step_rid, step_at
    k = np.diff(np.r_[starts, len(rid)])
    read_rid, read_at = rid[starts], at[starts]
    del rid, at, starts
    first = np.r_[True, read_rid[1:] != read_rid[:-1]]
    gap = np.where(first, read_at, np.r_[np.nan, np.diff(read_at)])  # the first: since t0
    burst = np.where((k >= BURST_CHUNKS) & (gap >= HELD_GAP_S), k, 0)
    # per request: the reads' sums over each request's run of reads
    heads = np.flatnonzero(first)
    return pd.DataFrame({"chunks": np.add.reduceat(k, heads),
                         "reads": np.diff(np.r_[heads, len(k)]),
                         "burst_chunks": np.add.reduceat(burst, heads)},
                        index=pd.Index(read_rid[heads], name="rid"))


def buffered_words(check: Mapping[str, Any]) -> str:
    """The reason a run gives when its stream arrived buffered, for the validity, the
    terminal and the page (short enough to stand whole where a page quotes one)."""
    return (f"the stream arrived buffered: {check.get('chunks')} chunks in "
            f"{check.get('reads')} reads ({check.get('buffered')} of {check.get('checked')} "
            "requests); TTFT and inter-token latency measure the gateway's buffer, not the "
            "engine")
