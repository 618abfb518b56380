"""The utterance as a 16 kHz protocol hears it (Gemini Live): our 2:3 resampler keeps
the speech band, removes what would fold into it, keeps time, and frames at 16 kHz."""

from __future__ import annotations

import numpy as np

from evalkit.voice.audio import RATE_HZ, load_utterances
from evalkit.voice.wire import to_16k, wire_utterance
from tests.probe.realtime.helpers import tone


def spectrum_peak(pcm: bytes, rate: int) -> tuple[float, float]:
    """(the strongest frequency, the RMS) of the middle of `pcm`."""
    x = np.frombuffer(pcm, dtype="<i2").astype(float)
    mid = x[len(x) // 4: 3 * len(x) // 4]
    peak = float(np.argmax(np.abs(np.fft.rfft(mid)))) * rate / len(mid)
    return peak, float(mid.std())


def test_a_tone_in_the_speech_band_keeps_its_pitch_and_level() -> None:
    utt = tone("a", lead_s=0.0, voiced_s=0.6, tail_s=0.0, hz=1000.0)
    out = to_16k(utt.pcm)
    assert len(out) // 2 == len(utt.pcm) // 2 * 2 // 3
    pitch, level = spectrum_peak(out, 16_000)
    assert abs(pitch - 1000.0) < 5 and abs(level / spectrum_peak(utt.pcm, RATE_HZ)[1] - 1) < 0.01


def test_a_tone_above_the_new_nyquist_does_not_fold_into_the_speech_band() -> None:
    """10 kHz would fold to 6 kHz at 16 kHz: the low-pass takes it out (over 60 dB)."""
    utt = tone("a", lead_s=0.0, voiced_s=0.6, tail_s=0.0, hz=10_000.0)
    _, level = spectrum_peak(to_16k(utt.pcm), 16_000)
    assert level < spectrum_peak(utt.pcm, RATE_HZ)[1] / 1000


def test_time_is_kept_and_frames_are_16k() -> None:
    """A click at 0.3 s is at 0.3 s after resampling (the filter's delay removed), and
    the frames of 20 ms are 640 bytes, with the same voiced frames as at 24 kHz."""
    click = np.zeros(RATE_HZ, dtype="<i2")
    click[int(0.3 * RATE_HZ)] = 20_000
    out = np.frombuffer(to_16k(click.tobytes()), dtype="<i2")
    assert abs(int(np.argmax(np.abs(out))) - int(0.3 * 16_000)) <= 1
    for utt in load_utterances(None):
        at16, at24 = wire_utterance(utt.pcm, 20, 16_000), wire_utterance(utt.pcm, 20)
        assert {len(f) for f in at16.frames[:-1]} == {640}
        assert len(at16.frames) == len(at24.frames)
        assert (at16.first_voiced, at16.last_voiced) == (at24.first_voiced, at24.last_voiced)
