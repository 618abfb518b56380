"""Trace replay: a Mooncake trace's requests sent open-loop at its offsets.

Each request leaves at its trace time (scaled by the trace's speed) whatever the ones
before it are doing, and its `t0` is that *scheduled* time: a vendor that queues, or a
client that sends late, shows in the figures instead of hiding (coordinated omission).
The send lag of every request is recorded, so the replay's own fidelity is judged too.

A prompt is made of the trace's prefix blocks: equal `hash_ids` give equal text (seeded
per run, so a vendor cannot have it ready), and a request's last block, usually partial,
begins as the whole block does. Lengths past the blocks are unique prose. What a request
cannot share is never made to look shared.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from evalkit.corpus.text import PromptText
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import Prompt, count_tokens, passage, synthetic
from evalkit.records import RequestRecord
from evalkit.workload.model import Trace, TraceEntry

OnRecord = Callable[[RequestRecord], None]
#: prefix blocks kept made (a trace reuses a few hot prefixes; the bound caps the rest)
MAX_BLOCKS = 4096
#: the schedule begins this long after the call, so the first prompts are made in time
LEAD_S = 0.05
#: each request is handed to the prober this long before its time and held at the socket
#: until it (`Prober.stream(hold_ns=)`): httpx's own ~1 ms of work per request (more
#: when other streams are busy) is done before the moment, not counted against it
EARLY_NS = 5_000_000
#: prompts made ahead of their time, and how far the next send must be for one more
AHEAD = 256
MAKE_MARGIN_NS = 3_000_000
#: connections opened before the replay at most
MAX_OPEN = 512


class TracePrompts:
    """Makes a trace entry's prompt from its prefix blocks, blocks made once per run."""

    def __init__(self, run_tag: str, seed: int, block_tokens: int,
                 text: PromptText | None = None) -> None:
        self.tag, self.seed, self.block = run_tag, seed, block_tokens
        self.text = text
        self.source = text.source if text is not None else "public"
        self._blocks: OrderedDict[tuple[int, int], str] = OrderedDict()

    def _text(self, hash_id: int, tokens: int) -> str:
        key = (hash_id, tokens)
        text = self._blocks.get(key)
        if text is None:
            text = passage(self.block, f"{self.tag}-block{hash_id}", self.seed, upto=tokens,
                           text=self.text)
            self._blocks[key] = text
            if len(self._blocks) > MAX_BLOCKS:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end(key)
        return text

    def prompt(self, entry: TraceEntry, index: int) -> Prompt:
        """The entry's prompt: its blocks' text, then unique prose to its input length."""
        nonce = f"{self.tag}-trace-line{entry.line or index + 1}"
        if not entry.hash_ids:
            p = synthetic(entry.input_length, entry.output_length, nonce, self.seed, self.text)
            return Prompt(p.id, p.content, p.prompt_tokens, p.max_tokens, shape="trace",
                          source=p.source)
        parts, left = [], entry.input_length
        for h in entry.hash_ids:
            if left <= 0:
                break
            take = min(self.block, left)
            parts.append(self._text(h, take))
            left -= take
        if left > 0:
            parts.append(passage(left, nonce, self.seed, text=self.text))
        text = "".join(parts)
        return Prompt(nonce, text, count_tokens(text), entry.output_length, shape="trace",
                      source=self.source)


def peak_arrivals(offsets: list[float], window_s: float = 1.0) -> int:
    """The most requests the trace sends inside any `window_s`: the connections to have
    open before it starts (a handshake inside a burst would land in that burst's lag)."""
    best, lo = 0, 0
    for hi, t in enumerate(offsets):
        while t - offsets[lo] > window_s:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


async def replay(prober: Prober, trace: Trace, on_record: OnRecord, *, run_tag: str,
                 seed: int = 0, phase: str = "trace", max_in_flight: int = 10_000,
                 text: PromptText | None = None,
                 stop: Callable[[], bool] = lambda: False) -> None:
    """Send every entry at its scheduled time; wait for all to end.

    Prompts are made ahead (up to `AHEAD`), in the gaps between sends, so making one is
    never what delays a send; the connections a burst needs are opened first. At most
    `max_in_flight` are in flight; one due while none is free waits for a slot, its
    prompt made again once it has one, so waiting requests hold no text."""
    offsets = trace.offsets_s()
    await prober.clients.prepare(min(peak_arrivals(offsets) * 2, max_in_flight, MAX_OPEN))
    prompts = TracePrompts(run_tag, seed, trace.block_tokens, text)
    entries = list(enumerate(trace.entries))
    made: deque[tuple[int, TraceEntry, Prompt | None]] = deque(
        (i, e, prompts.prompt(e, i)) for i, e in entries[:AHEAD])
    todo = iter(entries[AHEAD:])
    tasks: set[asyncio.Task[None]] = set()
    sem = asyncio.Semaphore(max_in_flight)
    start = time.perf_counter_ns() + int(LEAD_S * 1e9)

    async def one(at: int, prompt: Prompt | None, i: int, entry: TraceEntry) -> None:
        async with sem:
            if prompt is None:  # it waited for a slot: made now, late anyway
                prompt = prompts.prompt(entry, i)
            on_record(await prober.stream(prompt, phase, None, scheduled_ns=at, hold_ns=at))

    for offset in offsets:
        if stop():
            break
        at = start + int(offset * 1e9)
        leave = at - EARLY_NS
        # top the made prompts up while the next send is more than a margin away
        while len(made) < AHEAD and leave - time.perf_counter_ns() > MAKE_MARGIN_NS:
            nxt = next(todo, None)
            if nxt is None:
                break
            made.append((nxt[0], nxt[1], prompts.prompt(nxt[1], nxt[0])))
        full = len(tasks) >= max_in_flight
        if not made:  # the gaps were too short to make ahead: make it now (late is recorded)
            nxt = next(todo)
            made.append((nxt[0], nxt[1], None if full else prompts.prompt(nxt[1], nxt[0])))
        delay = (leave - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        i, entry, prompt = made.popleft()
        # no slot free: the request waits, and holds its entry, not its text (a dense
        # trace against a stalled vendor would otherwise hold every prompt it has made)
        full = len(tasks) >= max_in_flight
        task = asyncio.create_task(one(at, None if full else prompt, i, entry))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
