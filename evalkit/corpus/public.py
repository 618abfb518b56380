"""The text that ships with evalkit, and the marks a vendor learns from it.

Without a corpus the probe's passages are the prose of Python's own language reference
(`pydoc_data.topics`, part of the standard library: nothing is downloaded). Any vendor can
read it, and so can recognise it: `PublicIndex` is what one that read evalkit's source
would learn, every `RUN`-word sequence of those passages and of a large sample of the tasks
the package composes. The reference endpoint's `spot_probes` matches requests against it,
and `evalkit corpus check` counts how many of the prompts a probe would send share such a
sequence with it: every one for the public text, none for a private corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from evalkit.corpus.tasks import RUN, compose_task, words
from evalkit.corpus.text import Passages, PromptText, compose

#: tasks composed from the package's parts that the index learns (a vendor could compose
#: more; a task never holds `RUN` of them in a row, so more would not find more)
SAMPLED_TASKS = 2000
#: how much of a request's text is compared (characters): the head and a long passage
COMPARED_CHARS = 64_000
#: the marks, as the truth log and `corpus check` name them
PASSAGE_MARK, TASK_MARK = "public-text", "task-text"


def public_paragraphs() -> list[str]:
    """The prose of Python's language reference: headings, grammar, code and notes left
    out, each paragraph on one line."""
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        for block in topics[name].split("\n\n"):
            lines = block.splitlines()
            if lines and not lines[0][:1].isspace() and lines[0][:1] != "[" and not any(
                    set(ln.strip()) <= set("*=-~^") for ln in lines):
                out.append(" ".join(block.split()))
    return out


@lru_cache(maxsize=1)
def public_text() -> PromptText:
    """What the probe's prompts are made of when the buyer has no corpus."""
    return PromptText(Passages.of(public_paragraphs()), "public")


def _shingles(ws: Sequence[str]) -> set[int]:
    return {hash(tuple(ws[i:i + RUN])) for i in range(len(ws) - RUN + 1)}


def sample_tasks(n: int, text: PromptText) -> list[str]:
    """`n` tasks the package composes over `text`, each seeded by its index."""
    out = []
    for i in range(n):
        rng = random.Random(f"tasks:{i}")
        start = text.passages.start(rng)
        out.append(compose_task(rng, text.passages.phrase(rng, start)))
    return out


class PublicIndex:
    """Every `RUN`-word sequence a vendor reading evalkit's source could list: of the
    shipped passages, and of the tasks the package composes."""

    def __init__(self, paragraphs: Sequence[str], tasks: Iterable[str]) -> None:
        self.passages = _shingles(words(" ".join(paragraphs)))
        self.tasks: set[int] = set()
        for task in tasks:
            self.tasks |= _shingles(words(task))

    def marks(self, text: str) -> list[str]:
        """The marks `text` carries: `public-text` (a run of the shipped passages),
        `task-text` (a run of a task the package composes)."""
        ws = words(text[:COMPARED_CHARS])
        found = []
        seen = [hash(tuple(ws[i:i + RUN])) for i in range(len(ws) - RUN + 1)]
        if not self.passages.isdisjoint(seen):
            found.append(PASSAGE_MARK)
        if not self.tasks.isdisjoint(seen):
            found.append(TASK_MARK)
        return found


@lru_cache(maxsize=1)
def public_index() -> PublicIndex:
    """The index, built once a process (about a second)."""
    text = public_text()
    return PublicIndex(public_paragraphs(), sample_tasks(SAMPLED_TASKS, text))


@dataclass(frozen=True)
class Check:
    """What `evalkit corpus check` found: of `sampled` prompts the probe would send,
    `marked` share a `RUN`-word sequence with the text that ships with evalkit."""

    source: str
    sampled: int
    marked: int
    by_mark: dict[str, int]
    lengths: tuple[int, ...]


def check(text: PromptText, sample: int, lengths: Sequence[int], seed: int = 0) -> Check:
    """Make `sample` prompts as a probe would (its lengths in turn, seeded nonces) and
    count those a vendor that read evalkit's source would recognise."""
    index = public_index()
    marked = 0
    by_mark: dict[str, int] = {}
    for i in range(sample):
        content, _ = compose(lengths[i % len(lengths)], f"check-{i:05d}", seed, text)
        found = index.marks(content)
        marked += bool(found)
        for mark in found:
            by_mark[mark] = by_mark.get(mark, 0) + 1
    return Check(text.source, sample, marked, by_mark, tuple(lengths))
