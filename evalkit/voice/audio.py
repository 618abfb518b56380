"""A caller's utterances: 16-bit mono PCM at 24 kHz, cut into the frames a phone sends.

The realtime APIs take `pcm16` at 24 kHz (OpenAI's and Azure's default input format), so
that is the one format read: a WAV file of another rate, width or channel count is refused
with the `sox` line that converts it, never resampled on reading (a resampler of ours would
be one more thing between the buyer's recording and what the vendor hears). Only a
protocol whose input is another rate (Gemini Live: 16 kHz) has its frames resampled, by
`evalkit.voice.wire`.

Each utterance knows its **last voiced frame**: the last frame whose level is within
`VOICED_DB` of the utterance's loudest. TTFA is timed from the moment that frame is sent
(docs/probing.md, "Realtime voice sessions"), so the end of speech is a property of the
audio, fixed before the call starts, and never the vendor's word (`speech_stopped`).

The utterances shipped in `evalkit/voice/utterances/` were made with espeak-ng
(`tools/make_utterances.py`); they are public, like the shipped text, so a vendor that
reads evalkit's source can recognise them, and a run on them says so.
"""

from __future__ import annotations

import functools
import math
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evalkit.errors import UsageError

#: the wire format: signed 16-bit little-endian mono at this rate
RATE_HZ = 24_000
SAMPLE_BYTES = 2
#: a frame's level within this many dB of the utterance's loudest frame counts as voiced,
#: if it is above the speech floor too (a phone line's noise sits below -60 dBFS)
VOICED_DB = 35.0
SPEECH_FLOOR_DB = -50.0
#: the buyer's recordings read from a folder: at most this many, each at most this long
#: (a folder is a file list from a stranger too)
MAX_UTTERANCES = 64
MAX_UTTERANCE_S = 30.0
#: the shipped utterances
SHIPPED_DIR = Path(__file__).parent / "utterances"


@dataclass(frozen=True)
class Utterance:
    """One caller turn's audio, and where its speech ends."""

    name: str
    pcm: bytes
    #: the buyer's own recording (False: shipped with evalkit, so recognisable)
    private: bool = False

    @property
    def duration_s(self) -> float:
        """Length of the audio."""
        return len(self.pcm) / (RATE_HZ * SAMPLE_BYTES)

    def frames(self, frame_ms: int) -> list[bytes]:
        """The audio in frames of `frame_ms` (the last one may be shorter)."""
        size = frame_bytes(frame_ms)
        return [self.pcm[i:i + size] for i in range(0, len(self.pcm), size)]

    def last_voiced(self, frame_ms: int) -> int:
        """Index of the last voiced frame (-1: none is)."""
        voiced = self._voiced(frame_ms)
        return voiced[-1] if voiced else -1

    def first_voiced(self, frame_ms: int) -> int:
        """Index of the first voiced frame: where the caller starts speaking (-1: never)."""
        voiced = self._voiced(frame_ms)
        return voiced[0] if voiced else -1

    def _voiced(self, frame_ms: int) -> tuple[int, ...]:
        return voiced_frames(self.pcm, frame_ms)


@functools.lru_cache(maxsize=256)
def voiced_frames(pcm: bytes, frame_ms: int) -> tuple[int, ...]:
    """Indexes of the voiced frames of `pcm` (computed once per utterance and frame
    length: every call of a level starts its turns together, and 64 calls each reading
    their utterance's levels at once held the event loop ~300 ms, their frames late)."""
    size = frame_bytes(frame_ms)
    levels = [level_db(pcm[i:i + size]) for i in range(0, len(pcm), size)]
    loudest = max(levels, default=-math.inf)
    return tuple(i for i, db in enumerate(levels) if is_voiced(db, loudest))


def is_voiced(level: float, loudest: float) -> bool:
    """The one rule for a voiced frame, the prober's and the reference VAD's: within
    VOICED_DB of the loudest frame (so far, for a VAD that cannot see ahead), and above
    the speech floor."""
    return level >= max(loudest - VOICED_DB, SPEECH_FLOOR_DB)


def frame_bytes(frame_ms: int) -> int:
    """Bytes in one frame of `frame_ms` at the wire format."""
    return RATE_HZ * SAMPLE_BYTES * frame_ms // 1000


def silence(frame_ms: int) -> bytes:
    """One frame of digital silence."""
    return bytes(frame_bytes(frame_ms))


def audio_seconds(n_bytes: int) -> float:
    """Seconds of audio in `n_bytes` of the wire format."""
    return n_bytes / (RATE_HZ * SAMPLE_BYTES)


def level_db(frame: bytes) -> float:
    """RMS level of a frame in dB full scale (-inf for digital silence)."""
    n = len(frame) // SAMPLE_BYTES
    if not n:
        return -math.inf
    samples = np.frombuffer(frame, dtype="<i2", count=n).astype(np.float64)
    power = float(np.dot(samples, samples)) / n
    return -math.inf if power <= 0 else 10 * math.log10(power / 32768.0 ** 2)


def read_wav(path: Path, private: bool) -> Utterance:
    """One WAV file as an utterance; a file of another format is a usage error that
    says how to convert it."""
    try:
        with wave.open(str(path), "rb") as w:
            shape = (w.getframerate(), w.getsampwidth(), w.getnchannels())
            if shape != (RATE_HZ, SAMPLE_BYTES, 1):
                raise UsageError(
                    f"{path}: {shape[0]} Hz, {shape[1] * 8}-bit, {shape[2]} channel(s); the "
                    f"realtime APIs take {RATE_HZ} Hz 16-bit mono: convert it with "
                    f"`sox IN.wav -r {RATE_HZ} -b 16 -c 1 OUT.wav`")
            if w.getnframes() > MAX_UTTERANCE_S * RATE_HZ:
                raise UsageError(f"{path}: longer than {MAX_UTTERANCE_S:g} s; a caller's turn "
                                 "is a sentence or two: cut it")
            pcm = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise UsageError(f"{path}: not a readable WAV file ({exc})") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    utt = Utterance(path.stem, pcm, private)
    if utt.last_voiced(20) < 0:
        raise UsageError(f"{path}: holds only silence: nothing for a vendor to answer")
    return utt


def load_utterances(folder: Path | None) -> list[Utterance]:
    """The buyer's recordings (`--audio DIR`: its *.wav files, in name order), else the
    utterances shipped with evalkit."""
    private = folder is not None
    where = folder if folder is not None else SHIPPED_DIR
    if not where.is_dir():
        raise UsageError(f"--audio {where}: not a folder")
    paths = sorted(where.glob("*.wav"))[:MAX_UTTERANCES + 1]
    if not paths:
        raise UsageError(f"--audio {where}: no .wav files in it")
    if len(paths) > MAX_UTTERANCES:
        raise UsageError(f"--audio {where}: more than {MAX_UTTERANCES} .wav files; a call "
                         "needs a few turns: pick them")
    for path in paths:  # a FIFO or a device named *.wav would hold the read forever
        if not path.is_file():
            raise UsageError(f"{path}: not a regular file")
    return [read_wav(p, private) for p in paths]
