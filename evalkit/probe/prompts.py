"""Prompts for the probe: ones of controlled length that read like user traffic, or the
user's own (JSONL).

A vendor under evaluation has read this file, so a prompt carries none of the cheap marks
of a benchmark: no fixed opening, no bracketed nonce, no list of filler words. Each one is
a task a customer might send (summarise, draft, explain, write code, extract, answer from
a passage) over a passage of English prose that ships with Python itself (the language
reference's topics in `pydoc_data`, nothing downloaded), taken from a seeded place, with a
seeded detail a real message would carry (a ticket, an order, a name, a date). Two
prompts share at most their task's few opening words, so no prefix cache serves one from
another, and the length is exact under o200k_base: the passage is cut to the token.

Token counts are ours (offline: `bpe_openai` ships the encoding, `evalkit.tokenizer` loads
it) and therefore *estimated*: the server's usage, when reported, is kept beside them.
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
    from evalkit.tokenizer import encoding  # imported lazily: ~0.1 s to build the encoding

    return encoding()


@lru_cache(maxsize=65536)
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
    #: the canary this prompt is (evalkit.probe.canaries), None for an ordinary prompt;
    #: never sent: the vendor sees the prompt alone
    canary: str | None = None
    #: where it sits in a workload (`evalkit.probe.sessions`): shape, unit, turn or step,
    #: turns planned; copied to its record, never sent
    shape: str | None = None
    session: str | None = None
    turn: int | None = None
    step: int | None = None
    planned_turns: int | None = None
    #: keep the answer's text (bounded): a session's next turn sends it back as history
    keep_answer: bool = False


#: what a customer asks of a passage; {detail}, the seeded detail a real message carries,
#: comes within a task's first few words, so two prompts share less than one prefix-cache
#: block (16 tokens)
_TASKS = (
    "Summarise this{detail} in a few short paragraphs for a colleague.",
    "Can you summarize this{detail} in plain words? Keep the key points.",
    "Please summarise the following{detail}, with its main claims as bullets.",
    "Explain this{detail} to someone who is new to programming:",
    "I don't understand this part{detail}. Could you explain it step by step?",
    "Explain the following{detail} as if you were teaching a class, with an example.",
    "Draft an email{detail} to my team that explains the change described below.",
    "Write a short announcement{detail} based on these notes, friendly but precise.",
    "Turn the text below{detail} into a how-to guide with numbered steps.",
    "Write a Python function{detail} that does what this section describes, with tests.",
    "Based on the text below{detail}, write example code and explain each line.",
    "Extract every defined term{detail} from this passage and define each in one line.",
    "List the rules{detail} stated in the following text as a checklist.",
    "Read the passage{detail} and answer: what are the exceptions to the main rule, and why?",
    "From the text below only{detail}, answer: when does this apply and what does it change?",
    "Review this documentation{detail}: what is unclear, and how would you rewrite it?",
)
_NAMES = ("Dana", "Ravi", "Mei", "Tomasz", "Aisha", "Jonas", "Lucía", "Kenji", "Omar",
          "Priya", "Ines", "Felix", "Noor", "Mateo", "Sanne", "Yusuf")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


def _detail(rng: random.Random) -> str:
    """The unique part of a prompt, in a form a real message might have."""
    n = rng.randrange(10_000, 10_000_000)
    form = rng.randrange(6)
    if form == 0:
        return f" (ticket #{n})"
    if form == 1:
        return f" for {rng.choice(_NAMES)}, ref {n:x}"
    if form == 2:
        return f" before the {rng.choice(_MONTHS)} {rng.randrange(1, 29)} review, case {n}"
    if form == 3:
        return f" (order {n % 100_000}-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{n % 97})"
    if form == 4:
        return f", as {rng.choice(_NAMES)} asked in thread {n}"
    return f" for project {rng.choice(_NAMES).lower()}-{n % 10_000}"


@dataclass(frozen=True)
class _Passages:
    """The prose as one token sequence, with where its paragraphs start and which tokens
    begin a word (a cut before such a token re-encodes to exactly the tokens before it)."""

    tokens: tuple[int, ...]
    paragraph_starts: tuple[int, ...]
    word_start: bytes  # 1 where a token begins with a space or a line break


@lru_cache(maxsize=1)
def _passages() -> _Passages:
    """The prose of Python's own language reference (`pydoc_data.topics`, part of the
    standard library), as o200k tokens: headings, grammar and code examples dropped."""
    from pydoc_data.topics import topics

    paragraphs = []
    for name in sorted(topics):
        for block in topics[name].split("\n\n"):
            lines = block.splitlines()
            if lines and not lines[0][:1].isspace() and lines[0][:1] != "[" and not any(
                    set(ln.strip()) <= set("*=-~^") for ln in lines):
                paragraphs.append(" ".join(block.split()))  # no code, grammar, heading or note
    enc = _encoding()
    tokens = enc.encode_ordinary("\n\n".join(paragraphs))
    text = {t: enc.decode_single_token_bytes(t) for t in set(tokens)}
    starts = [0] + [i + 1 for i in range(len(tokens) - 1) if text[tokens[i]].endswith(b"\n")]
    # a cut before a token that begins with a space, after one that is no line break
    word = bytes(i > 0 and text[t][:1] == b" " and b"\n" not in text[tokens[i - 1]]
                 for i, t in enumerate(tokens))
    return _Passages(tuple(tokens), tuple(starts), word)


def prompt_words(n: int) -> list[str]:
    """The n commonest words of the prompts' prose, commonest first (a test engine's
    vocabulary is built from them, so our prompts are not spelt out letter by letter)."""
    import collections
    import re

    text = _decode(_passages().tokens)
    return [w for w, _ in collections.Counter(re.findall(r"[A-Za-z]+", text)).most_common(n)]


def _decode(tokens: tuple[int, ...]) -> str:
    return str(_encoding().decode(list(tokens)))


def synthetic(target_tokens: int, max_tokens: int, nonce: str, seed: int = 0) -> Prompt:
    """A prompt of exactly `target_tokens` o200k tokens that reads like a user's request:
    a task with a seeded detail that makes it unique, then a passage cut to length
    (`nonce` seeds it and names it; it is never sent). A prompt too short for a task is
    a passage alone, begun at a seeded place."""
    rng = random.Random(f"{seed}:{nonce}")
    head = rng.choice(_TASKS).format(detail=_detail(rng)) + "\n\n"
    head_tokens = count_tokens(head)
    if head_tokens * 2 > target_tokens:
        head, head_tokens = "", 0
    body = _cut(rng, target_tokens - head_tokens)
    return Prompt(id=nonce, content=head + body, prompt_tokens=max(target_tokens, head_tokens),
                  max_tokens=max_tokens)


def _cut(rng: random.Random, k: int) -> str:
    """k tokens of prose, begun at a seeded paragraph and cut before a token
    that begins a word, so the text is exactly k tokens, counted by arithmetic: a recount
    of a long prompt costs milliseconds, once per request."""
    if k <= 0:
        return ""
    start = _cut_start(rng, k)
    return _decode(_passages().tokens[start:start + k])


def _cut_start(rng: random.Random, k: int) -> int:
    pas = _passages()
    n = len(pas.tokens)
    if k >= n - 1:
        raise InputError(f"a prompt of {k:,} tokens is longer than the prose the prompts are "
                         f"cut from ({n - 2:,} tokens): bring your own (--prompts) or ask for "
                         "fewer")
    for _ in range(64):
        start = min(rng.choice(pas.paragraph_starts), n - k - 1)
        if pas.word_start[start + k]:
            return start
    raise AssertionError("no cut of the passages fits")  # pragma: no cover


def passage(tokens: int, nonce: str, seed: int = 0, upto: int | None = None) -> str:
    """`tokens` tokens of prose from a place `nonce` seeds, with no task before it: a
    session's system prompt, a tool's result, a trace's prefix block. With `upto`, only
    its first `upto` tokens: equal nonces give equal prefixes, so a trace's partial last
    block begins as the whole block does."""
    if tokens <= 0:
        return ""
    rng = random.Random(f"{seed}:{nonce}:passage")
    start = _cut_start(rng, tokens)
    end = start + (tokens if upto is None else max(0, min(upto, tokens)))
    return _decode(_passages().tokens[start:end])


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


def prompt_provenance(seed: int, prompts_file: Path | None = None) -> dict[str, Any]:
    """How this run's prompts can be made again, bit for bit (run.json
    `provenance.prompts`): a synthetic prompt is `synthetic(counted_prompt_tokens,
    requested_output_tokens, prompt_id, seed)` of its record, over the prose of this
    Python's `pydoc_data` under this encoding; a user's prompts file is named by its hash."""
    from importlib import metadata

    try:
        bpe = metadata.version("bpe-openai")
    except metadata.PackageNotFoundError:
        bpe = None
    out: dict[str, Any] = {
        "seed": seed, "generator": "evalkit.probe.prompts.synthetic",
        "remake": "synthetic(counted_prompt_tokens, requested_output_tokens, prompt_id, "
                  "seed) of each record",
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
            yield Prompt(pid, text, count_tokens(text), max_tokens)
        elif isinstance(obj.get("messages"), list) and all(
                isinstance(m, dict) and isinstance(m.get("content"), str) for m in obj["messages"]
        ) and obj["messages"]:
            yield Prompt(pid, obj["messages"], _messages_tokens(obj["messages"]), max_tokens)
        else:
            raise InputError(f"{path}:{i}: needs a non-empty 'prompt' string or a 'messages' "
                             "list of {role, content} objects")
