"""Canary prompts: the same prompts answered alone and under load, to see whether the
answers stay the same (evalkit.analysis.precision).

A vendor that has read this source must not be able to pick a canary out of the traffic,
so a canary is an ordinary prompt of the run: the same generator over the same text (a
task over the buyer's corpus, or the public prose when there is none, a seeded detail,
the run's exact lengths; or the user's own prompts), the same
headers and sampling settings, a per-run seed. What marks it is only that it comes back:
answered `alone_repeats` times one at a time during the baseline (the vendor's own
variation when nothing else runs), then again as every `every`-th request of each load
level, in turn, riding the same batches as the requests around it. A canary is a
measured request of its level like any other.

Set version 1. The set is drawn per run, not fixed: a fixed text would be a fingerprint
(`evalkit.reference.spotting` shows how little a vendor needs). What stays fixed, and is
versioned, is how it is drawn. Drawn from the public text, the canaries are as easy to
recognise as every other request of the run; from the buyer's corpus, no more than any.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence

from evalkit.corpus.text import PromptText
from evalkit.probe.prompts import Prompt, synthetic

CANARY_SET_VERSION = 1

NextPrompt = Callable[[], Prompt]


def make_canaries(run_tag: str, seed: int, count: int, prompt_tokens: int,
                  max_tokens: int, user_prompts: Sequence[Prompt] = (),
                  text: PromptText | None = None) -> tuple[Prompt, ...]:
    """The run's canaries: synthetic prompts of the run's lengths over its prompt text
    (the buyer's corpus, else the public text), or (with --prompts) the user's first
    prompts, each named `k1`, `k2`... in its record's `canary`."""
    if user_prompts:
        chosen = list(user_prompts[:count])
        return tuple(dataclasses.replace(p, canary=f"k{i + 1}") for i, p in enumerate(chosen))
    return tuple(dataclasses.replace(
        synthetic(prompt_tokens, max_tokens, f"{run_tag}-k{i + 1}", seed, text),
        canary=f"k{i + 1}")
        for i in range(count))


def alone_then(canaries: Sequence[Prompt], repeats: int, ordinary: NextPrompt,
               ordinary_n: int) -> tuple[NextPrompt, int]:
    """The baseline's prompts, canaries woven among the ordinary ones (a canary, an
    ordinary prompt, ...), and how many requests that makes."""
    order: list[Prompt | None] = []
    alone = [c for _ in range(repeats) for c in canaries]
    for i in range(max(len(alone), ordinary_n)):
        if i < len(alone):
            order.append(alone[i])
        if i < ordinary_n:
            order.append(None)
    it: Iterator[Prompt | None] = iter(order)

    def next_prompt() -> Prompt:
        chosen = next(it, None)
        return chosen if chosen is not None else ordinary()
    return next_prompt, len(order)


def in_turn(canaries: Sequence[Prompt], every: int, ordinary: NextPrompt) -> NextPrompt:
    """A level's prompts: every `every`-th is the next canary in turn (the level's first
    request is always ordinary), the rest ordinary. Each level begins again at the first
    canary, so the lower levels, which send fewer requests, share the same ones."""
    if not canaries:
        return ordinary
    sent = 0
    turn = 0

    def next_prompt() -> Prompt:
        nonlocal sent, turn
        sent += 1
        if sent % every:
            return ordinary()
        turn += 1
        return canaries[(turn - 1) % len(canaries)]
    return next_prompt
