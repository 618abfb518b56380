"""Prompts cut from a corpus: exact lengths, unique openings, and no run of the package's
own words long enough to mark a request (issue 40)."""

from __future__ import annotations

import random
from pathlib import Path

from evalkit.corpus.public import public_index, public_text
from evalkit.corpus.store import load_text
from evalkit.corpus.tasks import MAX_PUBLIC_RUN, RUN, compose_task, longest_public_run, words
from evalkit.corpus.text import PromptText, compose
from evalkit.probe.plan.prompts import count_tokens
from evalkit.tokenizer import encoding


def _text(folder: Path) -> PromptText:
    text = load_text(folder)
    assert text is not None
    return text


def test_lengths_are_exact_even_past_the_corpus(private_corpus: Path) -> None:
    """The corpus is ~1,200 tokens: prompts of 8,000 run round it, still to the token."""
    text = _text(private_corpus)
    assert len(text.passages) < 2000
    for i, n in enumerate([1, 16, 64, 200, 1000, 2048, 8000] * 6):
        content, tokens = compose(n, f"x{i}", 3, text)
        assert tokens == n == count_tokens(content), (i, n)


def test_no_two_prompts_share_a_prefix_block(private_corpus: Path) -> None:
    """A small corpus has few places to start: the seeded detail still makes the first 16
    tokens of 1,000 prompts all differ (no prefix cache serves one from another)."""
    text = _text(private_corpus)
    enc = encoding()
    heads = {tuple(enc.encode_ordinary(compose(256, f"p{i}", 0, text)[0])[:16])
             for i in range(1000)}
    assert len(heads) == 1000


def test_a_task_never_holds_a_run_of_the_packages_words() -> None:
    """Whatever the draws, at most MAX_PUBLIC_RUN of the package's words stand in a row,
    so every RUN-word window of a corpus prompt holds words of the corpus."""
    worst = 0
    for i in range(3000):
        rng = random.Random(i)
        phrase = rng.choice((None, "heron keys", "spare heron-shaped keys", "blue tin"))
        task = compose_task(rng, phrase)
        segments = [(task, True)] if phrase is None or phrase not in task else [
            (part, True) if k % 2 == 0 else (phrase, False)
            for k, part in enumerate(_around(task, phrase))]
        worst = max(worst, longest_public_run(segments))
    assert MAX_PUBLIC_RUN < RUN
    assert worst == MAX_PUBLIC_RUN  # reached, never passed


def _around(task: str, phrase: str) -> list[str]:
    before, _, after = task.partition(phrase)
    return [before, phrase, after]


def test_the_vendors_index_marks_public_prompts_and_not_the_corpus(
        private_corpus: Path) -> None:
    """What a vendor learns from the source (the passages, a sample of the composed
    tasks) marks every public prompt and none cut from the corpus, though each of those
    opens with a task composed from the package's own parts."""
    index = public_index()
    text = _text(private_corpus)
    public = public_text()
    assert all("public-text" in index.marks(compose(300, f"q{i}", 0, public)[0])
               for i in range(50))
    assert not any(index.marks(compose(n, f"q{i}", 0, text)[0])
                   for i, n in enumerate([64, 256, 1024] * 100))
    assert words("Ticket #4821: what's 'Refund-Window' 3x?") == \
        ["ticket", "#", "what", "s", "refund", "window", "#"]
