"""Canary prompts: the same prompts answered alone and under load, to see whether the
answers stay the same (evalkit.analysis.precision).

A vendor that has read this source must not be able to pick a canary out of the traffic,
so a canary is an ordinary prompt of the run: the same generator over the same text (a
task over the buyer's corpus, or the public prose when there is none, a seeded detail,
the run's exact lengths; or the user's own prompts), the same
headers and sampling settings, a per-run seed. What marks it is only that it comes back:
answered `alone_repeats` times one at a time during the baseline (the vendor's own
variation when nothing else runs), then again as one request in `every` of each load
level, in turn, riding the same batches as the requests around it. A canary is a
measured request of its level like any other.

Which request of each block of `every` is the canary is drawn per run and level, not
fixed: a closed loop's streams run in waves, and a fixed period that divides by the
level (every 12th at 4 streams) would put every canary at the same place in its wave,
where a vendor swapping only its wave's late arrivals is never, or always, seen. A level
that runs longer to decide a tie (`evalkit.probe.plan.canarywatch`) goes on in the same mix:
no request tells a vendor that the sample is growing.

Set version 1. The set is drawn per run, not fixed: a fixed text would be a fingerprint
(`evalkit.reference.spotting` shows how little a vendor needs). What stays fixed, and is
versioned, is how it is drawn. Drawn from the public text, the canaries are as easy to
recognise as every other request of the run; from the buyer's corpus, no more than any.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator, Sequence

from evalkit.corpus.text import PromptText
from evalkit.probe.plan.prompts import Prompt, synthetic

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


class InTurn:
    """A level's prompts: one in each block of `every` is the next canary in turn, at a
    place in the block drawn from a generator seeded by `slots` (never the block's first,
    so the level's first request is always ordinary; without `slots`, the block's last),
    the rest ordinary. Each level begins again at the first canary, so the lower levels,
    which send fewer requests, share the same ones. `canaries_sent`: those given out."""

    def __init__(self, canaries: Sequence[Prompt], every: int, ordinary: NextPrompt,
                 slots: str | None = None) -> None:
        self._canaries, self._every, self._ordinary = canaries, every, ordinary
        self._slots = random.Random(slots) if slots is not None else None
        self._sent = 0
        self._slot = every - 1
        self.canaries_sent = 0

    def __call__(self) -> Prompt:
        at = self._sent % self._every
        self._sent += 1
        if at == 0 and self._slots is not None:
            self._slot = self._slots.randrange(1, self._every)
        if at != self._slot or not self._canaries:
            return self._ordinary()
        self.canaries_sent += 1
        return self._canaries[(self.canaries_sent - 1) % len(self._canaries)]


def in_turn(canaries: Sequence[Prompt], every: int, ordinary: NextPrompt,
            slots: str | None = None) -> InTurn:
    """A level's prompts, the canaries taking their turns among them (`InTurn`)."""
    return InTurn(canaries, every, ordinary, slots)
