"""What a caller hears of an answer's audio: a simulated player, pure arithmetic.

The player starts at the first answer byte's arrival and plays at 1x real time, with no
jitter buffer of its own (SPEC: "a simulated player starting at the first byte"). Whenever
it has played everything that arrived, it runs dry until the next delta: an **underrun**.
A dry spell shorter than `MIN_UNDERRUN_S` is not counted: it is below one 10 ms audio
frame, which a playout device's own buffer covers, and it is the size of the read jitter
of a stream that arrives at exactly 1x (counting it would make the count a coin toss).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

#: dry spells shorter than this are not underruns (one 10 ms playout frame)
MIN_UNDERRUN_S = 0.010


class Playback(NamedTuple):
    """How an answer played out."""

    #: times the player ran dry (spells ≥ MIN_UNDERRUN_S), and their total length
    underruns: int
    underrun_s: float
    #: audio seconds received per wall second between the first and the last delta's
    #: arrival (the audio that came before the last one, over that span: deltas of 0.1 s
    #: every 0.125 s read 0.8; None: one delta, no span); above 1: it keeps ahead
    ahead_ratio: float | None
    #: when playback ends, seconds after the first byte (dry spells included)
    ends_s: float


def play(arrivals_s: Sequence[float], seconds: Sequence[float],
         min_underrun_s: float = MIN_UNDERRUN_S) -> Playback:
    """Play deltas that arrived at `arrivals_s` (ascending, any origin) holding `seconds`
    of audio each."""
    if not arrivals_s:
        return Playback(0, 0.0, None, 0.0)
    first = arrivals_s[0]
    playing_until = first  # the moment the audio received so far runs out
    count, dry = 0, 0.0
    for at, length in zip(arrivals_s, seconds, strict=True):
        gap = at - playing_until
        if gap > 0:
            if gap >= min_underrun_s:
                count += 1
                dry += gap
            playing_until = at
        playing_until += length
    span = arrivals_s[-1] - first
    ahead = None if span <= 0 else (sum(seconds) - seconds[-1]) / span
    return Playback(count, dry, ahead, playing_until - first)
