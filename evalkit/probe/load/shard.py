"""One worker's slice of one level: plain data in (`ShardTask`), records out.

A Ray actor (`evalkit.probe.load.scaleout`) runs `shard_level` with the ordinary prober on its own
event loop; the driver sends each actor a `ShardTask` (its slice of the level's streams,
one start time and the run's clock origin, both translated to the actor's clock) and
judges the level on the records they all stream back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalkit.analysis.thresholds import ClientLimits
from evalkit.corpus.text import PromptText
from evalkit.probe.client.clients import Target
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, window_end, window_start
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.loops import closed_loop, open_loop
from evalkit.probe.plan.privacy import AnswerKey
from evalkit.probe.plan.prompts import Prompt, PromptSource
from evalkit.probe.wire.reconnect import FreshConnections, Reuse
from evalkit.records import RequestRecord


@dataclass(frozen=True)
class ShardTask:
    """One process's slice of one level: plain data, so any executor can run it."""

    target: Target
    origin_ns: int
    run_tag: str
    shard: int
    shards: int
    phase: str
    level: int
    duration_s: float
    start_at_ns: int
    prompt_tokens: int
    output_tokens: int
    client_limits: ClientLimits
    user_prompts: tuple[Prompt, ...] = ()
    seed: int = 0
    rate: float | None = None
    #: least requests this shard starts (its share of the level's floor), at most two
    #: minutes past `duration_s`
    min_requests: int = 0
    #: the run already gives every request a fresh connection, since this switch
    #: (`evalkit.probe.wire.reconnect`; None: connections are reused)
    fresh: FreshConnections | None = None
    #: the run's own prompt text (the buyer's corpus; None: the public text, which each
    #: worker makes itself) and the key its canaries' answers are digested with
    text: PromptText | None = None
    answer_key: bytes = b""


class LevelPool(Protocol):
    """Processes that share each level (`evalkit.probe.load.scaleout.RayPool`): every one
    runs a `ShardTask` and streams its records back. Named beside the task, so the phases
    hold a pool without importing Ray's."""

    async def run_level(self, make_task: Callable[[int, int, int, int], ShardTask],
                        on_record: Callable[[RequestRecord], None], level: int
                        ) -> tuple[list[dict[str, Any]], list[str]]: ...


@dataclass(frozen=True)
class ShardResult:
    """What a shard measured: its records and its own client self-check."""

    records: tuple[RequestRecord, ...]
    check: dict[str, Any] = field(default_factory=dict)
    #: how late the shard began after `start_at_ns` (s; 0 when it was ready in time)
    late_start_s: float = 0.0
    #: since when this shard gave every request a fresh connection (the task's switch,
    #: or one it saw itself; None: none)
    fresh: FreshConnections | None = None


def run_shard(task: ShardTask) -> ShardResult:
    """Run one shard of a level in this process and return what it measured."""
    return asyncio.run(shard_level(task))


async def shard_level(task: ShardTask, keep: Callable[[RequestRecord], None] | None = None
                      ) -> ShardResult:
    """One shard of a level on this process's event loop; `keep` sees each record as its
    request completes (a Ray actor streams them back from there)."""
    records: list[RequestRecord] = []

    def kept(rec: RequestRecord) -> None:
        records.append(rec)
        if keep is not None:
            keep(rec)

    workers = len(range(task.shard, task.level, task.shards))
    tag = f"{task.run_tag}-{task.phase[0]}{task.level}"
    source = PromptSource(f"{tag}s{task.shard}", task.seed, list(task.user_prompts),
                          task.text)
    reuse = Reuse(task.origin_ns, task.fresh)
    async with Prober(task.target, task.origin_ns, tag, task.shard, run_id=task.run_tag,
                      reuse=reuse, answer_key=AnswerKey(task.answer_key or None)) as prober, \
            LoopMonitor() as mon:
        await prober.clients.prepare(workers)
        delay = (task.start_at_ns - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        mark = window_start(mon, prober)
        if task.rate is not None:
            await open_loop(prober, lambda: source.next(task.prompt_tokens, task.output_tokens),
                            kept, phase=task.phase, rate=task.rate / task.shards,
                            duration_s=task.duration_s, seed=task.seed * 1000 + task.shard)
        elif workers:
            await closed_loop(prober, lambda: source.next(task.prompt_tokens, task.output_tokens),
                              kept, phase=task.phase, level=task.level,
                              workers=workers, duration_s=task.duration_s, max_requests=None,
                              min_requests=task.min_requests)
        check = judge_client(window_end(mon, prober, mark), task.client_limits)
    return ShardResult(tuple(records), check, round(max(-delay, 0.0), 4), reuse.switched)


def warm_up(metrics: bool = True) -> bool:
    """Load the tokenizer, the prompts' passages (and pandas) now, not inside a timed
    phase (they block ~0.5 s)."""
    if metrics:
        import evalkit.analysis.summarize  # noqa: F401  (imports pandas)
    from evalkit.probe.plan.prompts import count_tokens, filler_words, synthetic

    filler_words()
    synthetic(64, 1, "warm-up")  # the passages prompts are cut from
    count_tokens("warm up")
    return True
