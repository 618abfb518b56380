"""Prompts for the probe: ones of controlled length that read like user traffic, or the
user's own (JSONL).

A vendor under evaluation has read this file, so a prompt carries none of the cheap marks
of a benchmark: no fixed opening, no bracketed nonce, no list of filler words. Each one is
a task a customer might send (summarise, explain, draft, extract, answer from a passage),
composed from varied parts with a seeded detail a real message would carry (a ticket, an
order, a name), over a passage of text cut to the token (`evalkit.corpus`). The text is
the buyer's corpus when there is one (`evalkit corpus add`): text a vendor has never seen.
Without one it is prose that ships with Python itself, which a vendor that reads evalkit's
source can recognise, and the run says so. Two prompts share at most their task's few
opening words, so no prefix cache serves one from another.

Token counts are ours (offline: `bpe_openai` ships the encoding, `evalkit.tokenizer` loads
it) and therefore *estimated*: the server's usage, when reported, is kept beside them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.corpus.public import public_text
from evalkit.corpus.text import PromptText, compose
from evalkit.corpus.text import passage as cut_passage
from evalkit.errors import InputError

if TYPE_CHECKING:
    from evalkit.tokenizer import Encoding

ENCODING = "o200k_base"

# Common words; those that are not a single token (with their leading space) are dropped
# at first use, so a prompt of N filler words is N tokens exactly.
_WORD_TEXT = (
    "the of and to in is was for on that with as by at from his her they this which are "
    "be had not but have one were all their can said there use an each she do how if will "
    "up other about out many then them these so some would make like him into time has look "
    "two more write go see number no way could people my than first water been call who oil "
    "now find long down day did get come made may part over new sound take only little work "
    "know place year live me back give most very after thing our just name good sentence "
    "man think say great where help through much before line right too mean old any same "
    "tell boy follow came want show also around form three small set put end does another "
    "well large must big even such because turn here why ask went men read need land "
    "different home us move try kind hand picture again change off play spell air away "
    "animal house point page letter mother answer found study still learn should world"
)
_WORDS = tuple(_WORD_TEXT.split())


@lru_cache(maxsize=1)
def _encoding() -> Encoding:
    from evalkit.tokenizer import encoding  # imported lazily: ~0.1 s to build the encoding

    return encoding()


#: stream chunks counted recently: a vendor's chunks are a few thousand distinct short
#: texts most of the time, and a soak of the working day meets ever rarer ones, so the
#: cache is what bounds it (~150 bytes an entry with its text: 16,384 entries ~2.4 MB,
#: where 65,536 let a long soak grow by ~10 MB as it filled)
SHORT_COUNTS_KEPT = 16_384


@lru_cache(maxsize=SHORT_COUNTS_KEPT)
def _count_short(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def count_tokens(text: str) -> int:
    """Tokens in `text` under o200k_base: our offline estimate, never the vendor's count."""
    if not text:
        return 0
    if len(text) <= 64:
        return _count_short(text)  # stream chunks repeat a lot: cache them
    if len(text) > _SLICE:
        # the tokenizer raises past its bounds (a million characters, 200,000 tokens): a
        # vendor's 600 KB delta crashed the stream. Counted a slice at a time (at most
        # 4 tokens a character: within the bound), off by a token or so per slice.
        return sum(len(_encoding().encode_ordinary(text[i:i + _SLICE]))
                   for i in range(0, len(text), _SLICE))
    return len(_encoding().encode_ordinary(text))


#: the longest text counted in one piece (see `count_tokens`)
_SLICE = 40_000


@lru_cache(maxsize=1)
def filler_words() -> tuple[str, ...]:
    """The filler vocabulary: words that are exactly one token with a leading space."""
    return tuple(w for w in _WORDS if count_tokens(" " + w) == 1)


@dataclass(frozen=True)
class Prompt:
    """One prompt to send: its text (or chat messages), our token count, output to ask for."""

    id: str
    content: str | list[dict[str, Any]]
    prompt_tokens: int
    max_tokens: int
    #: the canary this prompt is (evalkit.probe.plan.canaries), None for an ordinary prompt;
    #: never sent: the vendor sees the prompt alone
    canary: str | None = None
    #: where it sits in a workload (`evalkit.probe.load.sessions`): shape, unit, turn or step,
    #: turns planned; copied to its record, never sent
    shape: str | None = None
    session: str | None = None
    turn: int | None = None
    step: int | None = None
    planned_turns: int | None = None
    #: keep the answer's text (bounded): a session's next turn sends it back as history
    keep_answer: bool = False
    #: where its text came from: `public` (ships with evalkit), `generated` (a corpus
    #: evalkit made), `corpus` (the buyer's), `prompts`, `conversations` (the buyer's
    #: files); copied to its record, never sent
    source: str | None = None

    @property
    def private(self) -> bool:
        """Drawn from a corpus: its answers are kept as digests and its text is kept out
        of every error kept or printed (`evalkit.probe.plan.privacy`)."""
        return self.source in ("corpus", "generated")


def _text(text: PromptText | None) -> PromptText:
    return public_text() if text is None else text


def prompt_words(n: int) -> list[str]:
    """The n commonest words of the public prompts' prose, commonest first (a test
    engine's vocabulary is built from them, so our prompts are not spelt out letter by
    letter)."""
    import collections
    import re

    pas = public_text().passages
    text = pas.decode(0, len(pas))
    return [w for w, _ in collections.Counter(re.findall(r"[A-Za-z]+", text)).most_common(n)]


def synthetic(target_tokens: int, max_tokens: int, nonce: str, seed: int = 0,
              text: PromptText | None = None) -> Prompt:
    """A prompt of exactly `target_tokens` o200k tokens that reads like a user's request
    (`evalkit.corpus.text.compose`) over `text` (None: the public text that ships with
    evalkit); `nonce` seeds it and names it, and is never sent."""
    made = _text(text)
    content, tokens = compose(target_tokens, nonce, seed, made)
    return Prompt(id=nonce, content=content, prompt_tokens=tokens, max_tokens=max_tokens,
                  source=made.source)


def passage(tokens: int, nonce: str, seed: int = 0, upto: int | None = None,
            text: PromptText | None = None) -> str:
    """`tokens` tokens of `text` (None: the public text) from a place `nonce` seeds, no
    task before it (`evalkit.corpus.text.passage`)."""
    return cut_passage(tokens, nonce, seed, _text(text), upto)


class PromptSource:
    """Hands out prompts: fresh synthetic ones, or the user's own in round-robin order."""

    def __init__(self, run_tag: str, seed: int = 0,
                 user_prompts: list[Prompt] | None = None,
                 text: PromptText | None = None) -> None:
        self._tag = run_tag
        self._seed = seed
        self._n = 0
        self._user = user_prompts or []
        self._text = text

    def next(self, prompt_tokens: int, max_tokens: int) -> Prompt:
        """The next prompt: the user's (their own lengths win) or a synthetic one."""
        self._n += 1
        if self._user:
            return self._user[(self._n - 1) % len(self._user)]
        return synthetic(prompt_tokens, max_tokens, f"{self._tag}-{self._n:06d}", self._seed,
                         self._text)


def prompt_provenance(seed: int, prompts_file: Path | None = None,
                      text: PromptText | None = None) -> dict[str, Any]:
    """How this run's prompts can be made again, bit for bit (run.json
    `provenance.prompts`): a synthetic prompt is `synthetic(counted_prompt_tokens,
    requested_output_tokens, prompt_id, seed, text)` of its record, over the prose of
    this Python's `pydoc_data`, or over the corpus `text` names by its digest (its
    holder can make them again; nobody else can), under this encoding; a user's prompts
    file is named by its hash."""
    from importlib import metadata

    try:
        bpe = metadata.version("bpe-openai")
    except metadata.PackageNotFoundError:
        bpe = None
    out: dict[str, Any] = {
        "seed": seed, "generator": "evalkit.probe.plan.prompts.synthetic",
        "remake": "synthetic(counted_prompt_tokens, requested_output_tokens, prompt_id, "
                  "seed, text) of each record, text the public text or the corpus "
                  "prompt_text.corpus names",
        "text": _text(text).source,
        "encoding": ENCODING, "bpe_openai": bpe, "file": None}
    if prompts_file is not None:
        import hashlib

        try:
            digest: str | None = hashlib.sha256(Path(prompts_file).read_bytes()).hexdigest()
        except OSError:
            digest = None
        out["file"] = {"name": Path(prompts_file).name, "sha256": digest}
    return out


def _messages_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(count_tokens(str(m.get("content", ""))) for m in messages)


def load_prompts(path: Path, default_max_tokens: int) -> list[Prompt]:
    """Read a JSONL prompt file: `{"prompt": str}` or `{"messages": [...]}` per line.

    Optional per line: `"id"`, `"max_tokens"`. Errors name the file and line.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read prompts: {exc}") from None
    prompts = list(_parse_lines(path, lines, default_max_tokens))
    if not prompts:
        raise InputError(f"{path}: no prompts (expected one JSON object per line)")
    return prompts


def _parse_lines(path: Path, lines: list[str], default_max: int) -> Iterator[Prompt]:
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{i}: not JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{i}: expected a JSON object")
        max_tokens = obj.get("max_tokens", default_max)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise InputError(f"{path}:{i}: field 'max_tokens' must be a positive integer")
        pid = str(obj.get("id", f"line{i}"))
        if isinstance(obj.get("prompt"), str) and obj["prompt"]:
            text = obj["prompt"]
            yield Prompt(pid, text, count_tokens(text), max_tokens, source="prompts")
        elif isinstance(obj.get("messages"), list) and all(
                isinstance(m, dict) and isinstance(m.get("content"), str) for m in obj["messages"]
        ) and obj["messages"]:
            yield Prompt(pid, obj["messages"], _messages_tokens(obj["messages"]), max_tokens,
                         source="prompts")
        else:
            raise InputError(f"{path}:{i}: needs a non-empty 'prompt' string or a 'messages' "
                             "list of {role, content} objects")
