"""Benchmark: how often the canaries call a level, by the share of answers another model
gives there, under a profile's canary settings and the real stop rule.

Why: issue 45 asks that a level where half the answers come from another model be called
at that level in the standard profile, that the quick profile say when its sample could
not decide, and that batch noise within the tolerance not be called. The stop rule
(`evalkit.probe.plan.canarywatch.LevelTally`) decides when a tied level has enough answers;
this feeds it answers that differ from the answers alone with probability `q`, each
independently, as many as a level's request floor gives at its planned end (36 requests,
one canary in `every`), then more, one at a time, while it asks for more, and counts the
summary's call on them (`precision_call`: the rule, its floor at 90 %). Nothing in flight:
the answers come back as they are sent.

Run: `.venv/bin/python bench/bench_canary_power.py [levels]`, default 2000 a row.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections import Counter

from evalkit.analysis.thresholds import Thresholds
from evalkit.probe.plan.canarywatch import CanaryWatch, LevelTally
from evalkit.probe.plan.settings import profile_settings
from evalkit.records import RequestRecord

FLOOR_REQUESTS = 36


def _answer(i: int, canary: str, text: str) -> RequestRecord:
    return RequestRecord(id=f"r{i}", phase="ramp", level=4, outcome="ok", t0_s=0.0,
                         canary=canary, answer_text=text, model="m",
                         output_sha256=hashlib.sha256(text.encode()).hexdigest())


def one_level(watch: CanaryWatch, names: list[str], every: int, q: float,
              rng: random.Random) -> tuple[str, int]:
    """One level's call and the answers it rests on."""
    held: list[RequestRecord] = []
    tally = LevelTally(watch, held, lambda: len(held))

    def back() -> None:
        k = names[len(held) % len(names)]
        held.append(_answer(len(held), k, f"other {k}" if rng.random() < q else f"alone {k}"))

    for _ in range(FLOOR_REQUESTS // every):
        back()
    while tally.wants_more():
        back()
    return tally.status(), tally.compared


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rng = random.Random(45)
    print(f"{'profile':9} {'differing':>9} {'breach':>7} {'tie':>6} {'held':>6} "
          f"{'answers':>7}")
    for name in ("quick", "standard"):
        k = profile_settings(name).canaries
        names = [f"k{i + 1}" for i in range(k.count)]
        watch = CanaryWatch(Thresholds(), k.level_budget)
        watch.learn_alone([_answer(i, c, f"alone {c}") for i, c in enumerate(names * 2)])
        for q in (0.5, 0.25, 0.1, 0.05, 0.0):
            calls: Counter[str] = Counter()
            answers = 0
            for _ in range(n):
                call, compared = one_level(watch, names, k.every, q, rng)
                calls[call] += 1
                answers += compared
            print(f"{name:9} {q:>9.0%} {calls['breach'] / n:>7.1%} {calls['tie'] / n:>6.1%} "
                  f"{calls['held'] / n:>6.1%} {answers / n:>7.1f}")


if __name__ == "__main__":
    main()
