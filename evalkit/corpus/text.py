"""A body of text as tokens, and one prompt's text cut from it to an exact length.

`Passages` holds text as o200k tokens with where its paragraphs start and which tokens
begin a word: a cut that starts at a paragraph and ends before a word's first token
re-encodes to exactly the tokens cut, so a prompt's length is known by arithmetic, to the
token, without counting it again. The text is read as a loop (its end runs on into its
start, after a paragraph break), so a small corpus still gives prompts of any length.

`PromptText` is what one run's own prompts are made of: passages, the buyer's task
templates, and where they came from (the corpus's facts for run.json: never its text).
`compose` makes one prompt: a task (`evalkit.corpus.tasks`) quoting a few words of the
passage that follows, then the passage, `target_tokens` long in all.
"""

from __future__ import annotations

import random
import re
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from evalkit.corpus.tasks import compose_task

if TYPE_CHECKING:
    from evalkit.tokenizer import Encoding

#: where a run's prompt text came from: the text that ships with evalkit, a corpus
#: evalkit generated (the demo's), or the buyer's own corpus
SOURCES = ("public", "generated", "corpus")
#: the longest text encoded in one call (the tokenizer's own bound is a million chars)
_ENCODE_CHARS = 400_000
#: how far into a passage its quoted phrase is looked for (tokens)
_PHRASE_SPAN = 48
_STOP_WORDS = (
    "the a an and or of to in on at for with by from as is are was were be been this that "
    "these those it its not but if then than so such can may must will would should which "
    "who whom what when where how why all any each some no yes also into onto over under "
    "there here their they them you your our we he she his her")
_STOP = frozenset(_STOP_WORDS.split())


@lru_cache(maxsize=1)
def _encoding() -> Encoding:
    from evalkit.tokenizer import encoding  # ~0.1 s to build: not at import

    return encoding()


def count(text: str) -> int:
    """o200k tokens in `text` (short texts: a task's head)."""
    return len(_encoding().encode_ordinary(text)) if text else 0


@dataclass(frozen=True, eq=False)
class Passages:
    """Text as one loop of tokens: where paragraphs start, and where a cut is exact."""

    tokens: array[int]
    paragraph_starts: array[int]
    #: 1 where a cut before this token re-encodes exactly (it begins a word, and the token
    #: before it is no line break); at 0, the loop's end, a paragraph break
    word_start: bytes

    @classmethod
    def of(cls, paragraphs: Iterable[str]) -> Passages:
        """Passages of these paragraphs (each one line or several, no blank line inside),
        in order; each ends with a paragraph break, the last one too, so the text runs
        on into its start as it would into its next paragraph."""
        enc = _encoding()
        tokens: array[int] = array("I")
        batch: list[str] = []
        size = 0
        for par in paragraphs:
            batch.append(par + "\n\n")
            size += len(par) + 2
            if size >= _ENCODE_CHARS:
                tokens.extend(enc.encode_ordinary("".join(batch)))
                batch, size = [], 0
        if batch:
            tokens.extend(enc.encode_ordinary("".join(batch)))
        if not tokens:
            raise ValueError("no text to make passages of")
        text = {t: enc.decode_single_token_bytes(t) for t in set(tokens)}
        newline = {t for t, b in text.items() if b.endswith(b"\n")}
        spaced = {t for t, b in text.items() if b[:1] == b" "}
        breaks = {t for t, b in text.items() if b"\n" in b}
        starts = array("I", [0])
        starts.extend(i + 1 for i in range(len(tokens) - 1) if tokens[i] in newline)
        word = bytearray(len(tokens))
        word[0] = 1
        for i in range(1, len(tokens)):
            if tokens[i] in spaced and tokens[i - 1] not in breaks:
                word[i] = 1
        return cls(tokens, starts, bytes(word))

    def __len__(self) -> int:
        return len(self.tokens)

    def window(self, start: int, k: int) -> list[int]:
        """`k` tokens from `start`, round the loop as often as it takes."""
        n = len(self.tokens)
        out: list[int] = []
        while k > 0:
            take = min(k, n - start)
            out.extend(self.tokens[start:start + take])
            k -= take
            start = 0
        return out

    def decode(self, start: int, k: int) -> str:
        """The text of `window(start, k)`."""
        return str(_encoding().decode(self.window(start, k))) if k > 0 else ""

    def start(self, rng: random.Random) -> int:
        """A seeded paragraph start."""
        return int(self.paragraph_starts[rng.randrange(len(self.paragraph_starts))])

    def exact_end(self, start: int, k: int) -> bool:
        """Whether `k` tokens from `start` re-encode to exactly those tokens."""
        return k <= 0 or bool(self.word_start[(start + k) % len(self.tokens)])

    def phrase(self, rng: random.Random, start: int, span: int = _PHRASE_SPAN) -> str | None:
        """Two to four words from the start of the passage at `start`, as a reader would
        quote them (no stop word at either end, no punctuation inside); None: none.
        Looked for from a seeded word on: cheap, as it is made for every request."""
        ws = self.decode(start, max(1, min(span, _PHRASE_SPAN))).split()
        if not ws:
            return None
        first = rng.randrange(len(ws))
        size = rng.choice((2, 3, 3, 4))
        for off in range(len(ws)):
            i = (first + off) % len(ws)
            j = i + size
            if j <= len(ws) and _quotable(ws[i]) and _quotable(ws[j - 1]) and all(
                    _inner.fullmatch(w) for w in ws[i + 1:j - 1]):
                return " ".join(ws[i:j])
        return None

_inner = re.compile(r"[^\W_]+(['’-][^\W_]+)*")


def _quotable(word: str) -> bool:
    return len(word) >= 4 and word.isalpha() and word.lower() not in _STOP


@dataclass(frozen=True, eq=False)
class PromptText:
    """What one run's own prompts are made of. Only `facts` is ever written (run.json):
    the corpus's digest and size, never a word of its text."""

    passages: Passages
    #: one of SOURCES
    source: str
    #: the buyer's task templates (`evalkit.corpus.tasks`); () the package's own parts
    tasks: tuple[str, ...] = ()
    #: what run.json records of the corpus: digest, files, tokens, templates (None: the
    #: public text, named by the package's own digest)
    facts: Mapping[str, object] | None = field(default=None)

    @property
    def private(self) -> bool:
        """Drawn from a corpus: the answers to it are kept as digests, its text never."""
        return self.source != "public"


def compose(target_tokens: int, nonce: str, seed: int, text: PromptText) -> tuple[str, int]:
    """A prompt's text, exactly `target_tokens` o200k tokens, and its token count: a task
    quoting a few words of the passage that follows, then the passage, begun at a
    paragraph `nonce` seeds. A prompt too short for a task is a passage alone (its count
    is then the target; a task longer than the target is never cut)."""
    rng = random.Random(f"{seed}:{nonce}")
    pas = text.passages
    for _ in range(64):
        start = pas.start(rng)
        # quoted from what the passage will hold, whatever the task's length
        head = compose_task(rng, pas.phrase(rng, start, target_tokens - 40),
                            text.tasks) + "\n\n"
        head_tokens = count(head)
        if head_tokens * 2 > target_tokens:
            head, head_tokens = "", 0
        k = target_tokens - head_tokens
        if pas.exact_end(start, k):
            return head + pas.decode(start, k), max(target_tokens, head_tokens)
    raise AssertionError("no cut of the passages fits")  # pragma: no cover


def passage(tokens: int, nonce: str, seed: int, text: PromptText,
            upto: int | None = None) -> str:
    """`tokens` tokens of the text from a place `nonce` seeds, with no task before it: a
    session's system prompt, a tool's result, a trace's prefix block. With `upto`, only
    its first `upto` tokens: equal nonces give equal prefixes, so a trace's partial last
    block begins as the whole block does."""
    if tokens <= 0:
        return ""
    rng = random.Random(f"{seed}:{nonce}:passage")
    pas = text.passages
    start = pas.start(rng)
    for _ in range(64):
        if pas.exact_end(start, tokens):
            break
        start = pas.start(rng)
    return pas.decode(start, tokens if upto is None else max(0, min(upto, tokens)))


def paragraphs(text: str) -> list[str]:
    """A document's paragraphs: blocks between blank lines, each line's white space
    folded, empty lines dropped (the form a corpus document is stored in)."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [" ".join(line.split()) for line in block.splitlines()]
        joined = "\n".join(line for line in lines if line)
        if joined:
            out.append(joined)
    return out


def normalised(text: str) -> str:
    """A document as stored: its paragraphs, one blank line between them."""
    return "\n\n".join(paragraphs(text))

