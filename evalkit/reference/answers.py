"""What the reference endpoint's "model" says: words that follow from the prompt.

A request's words are a pure function of (the prompt's text, which model answers, the
token's position): the same prompt answered by the same model gives the same text, token
for token, whatever else runs, and another prompt gives another text. The sequence is
drawn once per request (SHAKE-128 of model and prompt, a byte per word), so the writer's
hot path only slices a list. Two models answer here: `primary` (the one named)
and `swap` (the cheaper one a vendor might route to under load, `swap_above`).

Logprobs, when asked, are deterministic per (prompt, model, position) too, in [-2, 0).
`batch_variance` adds honest nondeterminism: per token a flip with probability
min(`FLIP_CAP`, batch_variance x (decode batch - 1)); a flip changes that word and,
like real divergence, everything after it (the rest comes from a sequence seeded by the
flip's position). Only the first flip is drawn: after it the answer already differs. The
logprobs also get a uniform noise of +-`LOGPROB_NOISE` x that probability per token.
"""

from __future__ import annotations

import hashlib
import random
import struct

PRIMARY, SWAP = "primary", "swap"
#: each model's `system_fingerprint` (the swap's is sent only under `swap_fingerprint`)
FINGERPRINTS = {PRIMARY: "fp_e1a0f7c3d2", SWAP: "fp_5b9c04e6a1"}
#: generated text: each word (with its leading space) is one o200k_base token, and needs
#: no JSON escaping (the writer puts it on the wire as is)
_WORD_TEXT = (
    "the of and to in is was for on that with as by at from his her they this which are "
    "be had not but have one were all their can said there use an each she do how if will "
    "up other about out many then them these so some would make like him into time has"
)
WORDS = tuple(_WORD_TEXT.split())
_SPACED = tuple(" " + w for w in WORDS)
#: each spaced word's UTF-8 bytes as a JSON list body, for chat logprobs' `bytes`
WORD_BYTES = {w: ",".join(str(b) for b in w.encode()) for w in _SPACED}
#: a flip's probability per token never exceeds this, however large the batch
FLIP_CAP = 0.5
#: logprob noise per token: uniform in +-(this x the token's flip probability)
LOGPROB_NOISE = 0.05


#: a byte of the stream picks a word (the small bias of 256 mod 75 does not matter here)
_BY_BYTE = tuple(_SPACED[i % len(_SPACED)] for i in range(256))


def _stream(n: int, *parts: str) -> bytes:
    """n bytes of SHAKE-128 over the parts: prefix-stable (byte i does not depend on n) and
    far cheaper per request than seeding a Mersenne Twister."""
    return hashlib.shake_128("\x00".join(parts).encode()).digest(n)


def _words(n: int, *parts: str) -> list[str]:
    by_byte = _BY_BYTE
    return [by_byte[b] for b in _stream(n, "words", *parts)]


def _logprobs(n: int, *parts: str) -> list[float]:
    """Values in [-2, 0) on a 1e-4 grid (short on the wire: -1.4801, not 17 digits)."""
    raw = struct.unpack(f">{n}H", _stream(2 * n, "logprobs", *parts))
    return [(v % 20000 - 20000) / 10000 for v in raw]


def answer_text(prompt: str, served_by: str = PRIMARY, tokens: int = 16) -> str:
    """The first `tokens` words model `served_by` answers to `prompt` without a flip, as
    the client sees them (each with its leading space): what tests compare against."""
    return "".join(_words(tokens, served_by, prompt))


class Answer:
    """One request's words (and logprobs if asked), drawn once; a flip redraws the rest."""

    __slots__ = ("first_flip_at", "flip_rng", "lp", "noise", "noise_rng", "prompt",
                 "served_by", "variance", "words")

    def __init__(self, prompt: str, served_by: str, tokens: int, logprobs: bool = False,
                 variance: float = 0.0, flip_seed: str = "") -> None:
        self.prompt, self.served_by = prompt, served_by
        self.words = _words(tokens, served_by, prompt)
        self.lp = _logprobs(tokens, served_by, prompt) if logprobs else None
        self.variance = variance
        #: seeded by the server's seed and the request's order, not by the prompt: whether
        #: a batch flips a token is the engine's doing, not the model's
        self.flip_rng = random.Random(f"flip:{flip_seed}") if variance > 0 else None
        #: apart from the flips' draws, so asking for logprobs leaves the flips the same
        self.noise_rng = (random.Random(f"noise:{flip_seed}")
                          if variance > 0 and logprobs else None)
        self.noise: dict[int, float] = {}
        #: the 0-based position of the first flipped token (None: no flip)
        self.first_flip_at: int | None = None

    def text(self, start: int, n: int) -> str:
        """Tokens start..start+n as text (each word with its leading space)."""
        return "".join(self.words[start:start + n])

    def generated(self, i: int, batch: int) -> None:
        """Token `i` was generated in a decode batch of `batch` streams: maybe flip it."""
        rng = self.flip_rng
        if rng is None or batch <= 1:
            return
        p = min(FLIP_CAP, self.variance * (batch - 1))
        if self.first_flip_at is None and rng.random() < p and i < len(self.words):
            self._flip(i)
        if self.noise_rng is not None:
            self.noise[i] = self.noise_rng.uniform(-1.0, 1.0) * LOGPROB_NOISE * p

    def _flip(self, i: int) -> None:
        rest = len(self.words) - i
        words = _words(rest, "flip", str(i), self.served_by, self.prompt)
        if words[0] == self.words[i]:  # a flip changes the word itself
            words[0] = _SPACED[(_SPACED.index(words[0]) + 1) % len(_SPACED)]
        self.words[i:] = words
        if self.lp is not None:
            self.lp[i:] = _logprobs(rest, "flip", str(i), self.served_by, self.prompt)
        self.first_flip_at = i

    def logprob(self, i: int) -> float:
        """Token i's logprob as sent: the model's value plus any batch noise, below 0."""
        assert self.lp is not None
        noise = self.noise.get(i) if self.noise else None
        if noise is None:
            return self.lp[i]
        return round(min(self.lp[i] + noise, -1e-6), 6)

    def sha(self, start: int, end: int) -> str:
        """SHA-256 (hex) of the text of tokens start..end: what a client hashes."""
        return hashlib.sha256("".join(self.words[start:end]).encode()).hexdigest()
