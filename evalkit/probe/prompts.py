"""Prompts for the probe: synthetic ones of controlled length, or the user's own (JSONL).

Synthetic prompts begin with a unique nonce so no prefix cache can serve them, and are
filled with words that are one o200k_base token each, so their length is exact under
that encoding. Token counts are ours (offline, `bpe_openai` ships the encoding, nothing
downloads at run time) and therefore *estimated*: the server's usage, when reported,
replaces them in the records.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalkit.errors import InputError

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
def _encoding() -> Any:
    import bpe_openai  # imported lazily: ~0.1 s to build the encoding

    return bpe_openai.get_encoding(ENCODING)


@lru_cache(maxsize=65536)
def _count_short(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def count_tokens(text: str) -> int:
    """Tokens in `text` under o200k_base: our offline estimate, never the vendor's count."""
    if not text:
        return 0
    if len(text) <= 64:
        return _count_short(text)  # stream chunks repeat a lot: cache them
    return len(_encoding().encode_ordinary(text))


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


def synthetic(target_tokens: int, max_tokens: int, nonce: str, seed: int = 0) -> Prompt:
    """A prompt of `target_tokens` o200k tokens that begins with a unique nonce."""
    head = f"[{nonce}] Continue this list of words:"
    head_tokens = count_tokens(head)
    n = max(target_tokens - head_tokens, 0)
    rng = random.Random(f"{seed}:{nonce}")
    words = filler_words()
    text = head + "".join(" " + w for w in rng.choices(words, k=n))
    return Prompt(id=nonce, content=text, prompt_tokens=head_tokens + n, max_tokens=max_tokens)


class PromptSource:
    """Hands out prompts: fresh synthetic ones, or the user's own in round-robin order."""

    def __init__(self, run_tag: str, seed: int = 0,
                 user_prompts: list[Prompt] | None = None) -> None:
        self._tag = run_tag
        self._seed = seed
        self._n = 0
        self._user = user_prompts or []

    def next(self, prompt_tokens: int, max_tokens: int) -> Prompt:
        """The next prompt: the user's (their own lengths win) or a synthetic one."""
        self._n += 1
        if self._user:
            return self._user[(self._n - 1) % len(self._user)]
        return synthetic(prompt_tokens, max_tokens, f"{self._tag}-{self._n:06d}", self._seed)


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
            yield Prompt(pid, text, count_tokens(text), max_tokens)
        elif isinstance(obj.get("messages"), list) and all(
                isinstance(m, dict) and isinstance(m.get("content"), str) for m in obj["messages"]
        ) and obj["messages"]:
            yield Prompt(pid, obj["messages"], _messages_tokens(obj["messages"]), max_tokens)
        else:
            raise InputError(f"{path}:{i}: needs a non-empty 'prompt' string or a 'messages' "
                             "list of {role, content} objects")
