"""An utterance as a protocol sends it: frames of `frame_ms` at the protocol's input rate,
and which of them are voiced.

OpenAI's and Azure's Realtime APIs take the utterance as it is (24 kHz, `audio.RATE_HZ`).
Google's Gemini Live takes 16 kHz PCM in (its documented input format, each blob's MIME
type `audio/pcm;rate=16000`; answers come at 24 kHz), so for it the 24 kHz utterance is
resampled 2:3 here, once per utterance: a windowed-sinc low-pass at 7.2 kHz (below the
new Nyquist of 8 kHz, so nothing folds back into the speech band), then every third
sample of the twice-upsampled signal. The buyer's recordings are still read at 24 kHz
only (`audio.read_wav`): one resampler, ours, exact and tested, between the file and
either vendor.

The voiced frames are found on the frames sent, by the one rule (`audio.is_voiced`): the
last voiced frame is a frame of what the vendor heard, and the reference endpoint's VAD
judges the same bytes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from evalkit.voice.audio import RATE_HZ, SAMPLE_BYTES, is_voiced, level_db

#: the input rates a protocol may take
RATES_HZ = (24_000, 16_000)
#: the low-pass's taps per phase of the 2x upsampled signal (48 kHz): 96 taps, 2 ms
_TAPS = 96
_CUTOFF_HZ = 7_200.0


@dataclass(frozen=True)
class WireUtterance:
    """An utterance's frames at the wire rate and where its voice is."""

    frames: tuple[bytes, ...]
    rate_hz: int
    #: index of the first and last voiced frame (-1: none)
    first_voiced: int
    last_voiced: int

    def seconds(self, index: int) -> float:
        """The audio length of one frame (the last may be short)."""
        return len(self.frames[index]) / (self.rate_hz * SAMPLE_BYTES)


def frame_size(rate_hz: int, frame_ms: int) -> int:
    """Bytes in one frame of `frame_ms` at `rate_hz`."""
    return rate_hz * SAMPLE_BYTES * frame_ms // 1000


def silent_frame(rate_hz: int, frame_ms: int) -> bytes:
    """One frame of digital silence at `rate_hz`."""
    return bytes(frame_size(rate_hz, frame_ms))


@functools.lru_cache(maxsize=256)
def wire_utterance(pcm: bytes, frame_ms: int, rate_hz: int = RATE_HZ) -> WireUtterance:
    """The 24 kHz `pcm` as frames at `rate_hz` (cached: a level's calls share their
    utterances, and resampling one per call would cost each its frames' pace)."""
    if rate_hz not in RATES_HZ:
        raise ValueError(f"no resampling to {rate_hz} Hz")
    audio = pcm if rate_hz == RATE_HZ else to_16k(pcm)
    size = frame_size(rate_hz, frame_ms)
    frames = tuple(audio[i:i + size] for i in range(0, len(audio), size))
    levels = [level_db(f) for f in frames]
    loudest = max(levels, default=-math.inf)
    voiced = [i for i, db in enumerate(levels) if is_voiced(db, loudest)]
    return WireUtterance(frames, rate_hz, voiced[0] if voiced else -1,
                         voiced[-1] if voiced else -1)


@functools.lru_cache(maxsize=1)
def _low_pass() -> np.ndarray:
    """The windowed-sinc (Blackman) low-pass at 48 kHz, gain 2 (the zeros upsampling
    inserts halve the level)."""
    n = np.arange(2 * _TAPS) - (2 * _TAPS - 1) / 2
    fc = _CUTOFF_HZ / (2 * RATE_HZ)
    taps = 2 * fc * np.sinc(2 * fc * n) * np.blackman(2 * _TAPS)
    out: np.ndarray = 2 * taps / taps.sum()
    return out


def to_16k(pcm: bytes) -> bytes:
    """16-bit mono PCM at 24 kHz as 16 kHz (2:3), its length 2/3 of the input's samples
    (rounded up), aligned in time (the filter's delay removed)."""
    samples = np.frombuffer(pcm, dtype="<i2", count=len(pcm) // SAMPLE_BYTES)
    if not len(samples):
        return b""
    up = np.zeros(2 * len(samples), dtype=np.float64)
    up[::2] = samples
    filtered = np.convolve(up, _low_pass())
    delay = (2 * _TAPS - 1) // 2
    out = filtered[delay:delay + len(up):3]
    return np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes()
