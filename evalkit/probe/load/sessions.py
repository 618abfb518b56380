"""A workload's units, run by simulated users: single requests, chat sessions, agent tool
loops and the buyer's own conversations (`evalkit.workload.model`).

A level holds `users` in flight. Each runs one unit of a shape drawn by weight (a
request, a whole session, a whole agent task, the next conversation), then the next,
until the level's time or unit count is spent. A unit's requests go one after another:
each turn carries the history so far, with the vendor's **own** answers in it (never a
file's), so what a later turn costs is what this vendor's product would pay. A turn that
fails ends its unit: its history would have nothing to carry.

Every request is a `Prompt` like any other, stamped and recorded by the `Prober`; its
record names the shape, the unit, the turn or step and the turns planned, so a unit cut
short (by a failure or the level's end) shows as fewer records than planned. The text is
the run's prompt text (the buyer's corpus, else the public prose: `evalkit.probe.plan.prompts`),
seeded per run: a system prompt is shared by every session of its shape in a run (as a
product's is), nothing else repeats. Answers to corpus text are sent back as history and
never kept in a record (`evalkit.probe.plan.privacy`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalkit.corpus.text import PromptText
from evalkit.probe.client.stream import Prober
from evalkit.probe.client.streamstate import ANSWER_MAX
from evalkit.probe.plan.prompts import Prompt, count_tokens, passage, synthetic
from evalkit.records import RequestRecord
from evalkit.workload.model import Agent, Conversations, Session, Shape, Single, Workload

OnRecord = Callable[[RequestRecord], None]
#: the longest pause a turned-away unit waits before the next (a Retry-After, bounded)
MAX_PAUSE_S = 2.0
#: what a tool's result is introduced by: an agent without tool definitions sends it as
#: the user's next message (a `tool` message would need a tool call to answer)
TOOL_RESULT_HEAD = "Tool result:\n"
#: what a turn's record keeps of the answer sent back as history (its digest covers the
#: whole): a vendor streaming megabytes into every turn would otherwise put
#: `HISTORY_MAX` characters in each line of requests.jsonl, and in the summary's frame
RECORD_ANSWER_MAX = ANSWER_MAX


@dataclass
class _Level:
    """One level's running state: where it stops and what it has started."""

    prober: Prober
    on_record: OnRecord
    level: int
    deadline_ns: int | None
    hard_ns: int | None
    units: int | None
    stop: Callable[[], bool]
    started: int = 0
    silent: bool = False

    def more_units(self) -> bool:
        if self.silent or self.stop() or (self.units is not None and self.started >= self.units):
            return False
        return self.deadline_ns is None or time.perf_counter_ns() < self.deadline_ns

    def more_requests(self) -> bool:
        """A unit under way may finish past the level's time, up to its hard end."""
        return not (self.silent or self.stop()) and (
            self.hard_ns is None or time.perf_counter_ns() < self.hard_ns)


class WorkloadRunner:
    """Runs one workload's levels for one run (its draws seeded by the run)."""

    def __init__(self, workload: Workload, run_tag: str, seed: int = 0,
                 phase: str = "workload", text: PromptText | None = None) -> None:
        self.w = workload
        self.tag, self.seed, self.phase = run_tag, seed, phase
        self.text = text
        self.rng = random.Random(f"{seed}:{run_tag}:workload")
        self._systems: dict[str, tuple[str, int]] = {}
        self._next_conversation: dict[str, int] = {}
        self._units = 0
        self.notes: list[str] = []

    async def level(self, prober: Prober, on_record: OnRecord, users: int, *,
                    duration_s: float | None, units: int | None, overtime_s: float = 120.0,
                    stop: Callable[[], bool] = lambda: False, stagger_s: float = 0.0005
                    ) -> None:
        """`users` in flight, each running unit after unit, until `duration_s` passed or
        `units` units started (no unit starts after that); units under way finish, for at
        most `overtime_s` more (no request starts after it)."""
        now = time.perf_counter_ns()
        deadline = None if duration_s is None else now + int(duration_s * 1e9)
        hard = None if deadline is None else deadline + int(overtime_s * 1e9)
        lv = _Level(prober, on_record, users, deadline, hard, units, stop)

        async def user(i: int) -> None:
            if i and stagger_s > 0:
                await asyncio.sleep(i * stagger_s)
            due: int | None = None
            while lv.more_units():
                lv.started += 1
                shape = self.w.pick(self.rng)
                due = await self._unit(lv, shape, due)

        await asyncio.gather(*(user(i) for i in range(users)))

    # -- units
    async def _unit(self, lv: _Level, shape: Shape, due: int | None) -> int | None:
        """Run one unit; returns when the user's next unit is due (None: now)."""
        self._units += 1
        unit = f"{self.tag}-{shape.name}-{self._units:05d}"
        if isinstance(shape, Single):
            plan = [(None, shape.prompt_tokens.draw(self.rng), 0.0)]
            return await self._turns(lv, shape, unit, plan, due)
        if isinstance(shape, Session):
            return await self._session(lv, shape, unit, due)
        if isinstance(shape, Agent):
            return await self._agent(lv, shape, unit, due)
        return await self._conversation(lv, shape, unit, due)

    def _system(self, shape: Session) -> tuple[str, int]:
        """The shape's system prompt: one text for every session of it in this run."""
        if shape.name not in self._systems:
            text = passage(shape.system_prompt_tokens, f"{self.tag}-{shape.name}-system",
                           self.seed, text=self.text)
            self._systems[shape.name] = (text, count_tokens(text))
        return self._systems[shape.name]

    async def _session(self, lv: _Level, shape: Session, unit: str, due: int | None
                       ) -> int | None:
        turns = max(1, shape.turns.draw(self.rng))
        history: list[dict[str, Any]] = []
        tokens = 0
        if shape.system_prompt_tokens > 0:
            text, tokens = self._system(shape)
            history.append({"role": "system", "content": text})
        plan = []
        for k in range(1, turns + 1):
            user = synthetic(max(1, shape.user_tokens.draw(self.rng)), 0,
                             f"{unit}-u{k}", self.seed, self.text)
            plan.append((str(user.content), user.prompt_tokens,
                         shape.think_time_s.sample(self.rng) if k > 1 else 0.0))
        return await self._turns(lv, shape, unit, plan, due, history, tokens)

    async def _agent(self, lv: _Level, shape: Agent, unit: str, due: int | None
                     ) -> int | None:
        steps = max(1, shape.steps.draw(self.rng))
        task = synthetic(max(1, shape.prompt_tokens.draw(self.rng)), 0, f"{unit}-task",
                         self.seed, self.text)
        plan = [(str(task.content), task.prompt_tokens, 0.0)]
        for k in range(2, steps + 1):
            result = TOOL_RESULT_HEAD + passage(max(1, shape.tool_result_tokens.draw(self.rng)),
                                                f"{unit}-tool{k}", self.seed, text=self.text)
            plan.append((result, count_tokens(result), shape.tool_latency_s.sample(self.rng)))
        return await self._turns(lv, shape, unit, plan, due)

    async def _conversation(self, lv: _Level, shape: Conversations, unit: str,
                            due: int | None) -> int | None:
        i = self._next_conversation.get(shape.name, 0)
        self._next_conversation[shape.name] = i + 1
        conv = shape.conversations[i % len(shape.conversations)]
        history: list[dict[str, Any]] = []
        tokens = 0
        plan: list[tuple[str | None, int, float]] = []
        for m in conv.messages:
            role, text = m.get("role"), str(m.get("content") or "")
            if role == "system" and not plan:
                history.append({"role": "system", "content": text})
                tokens += count_tokens(text)
            elif role == "user":
                plan.append((text, count_tokens(text),
                             shape.think_time_s.sample(self.rng) if plan else 0.0))
            # the file's assistant messages are not sent: the vendor's own answers stand in
        return await self._turns(lv, shape, f"{unit}-{conv.id}", plan, due, history, tokens)

    async def _turns(self, lv: _Level, shape: Shape, unit: str,
                     plan: Sequence[tuple[str | None, int, float]], due: int | None,
                     history: list[dict[str, Any]] | None = None, tokens: int = 0
                     ) -> int | None:
        """Send a unit's turns in order, each with the history so far (the vendor's
        answers in it); `plan` holds each turn's new message (None: a single request's
        own prompt), its tokens and the pause before it. Returns when the next unit is
        due."""
        history = list(history or [])
        single = isinstance(shape, Single)
        for k, (text, n, pause_s) in enumerate(plan, start=1):
            if not lv.more_requests():
                break
            if pause_s > 0:
                due = (due or time.perf_counter_ns()) + int(pause_s * 1e9)
                await _sleep_until(due)
                if not lv.more_requests():
                    break
            prompt = self._prompt(shape, unit, k, len(plan), text, n, history, tokens)
            rec = await lv.prober.stream(prompt, self.phase, lv.level, intended_ns=due)
            answer = rec.answer_text or ""
            lv.on_record(replace(rec, answer_text=None) if prompt.private
                         else rec if len(answer) <= RECORD_ANSWER_MAX
                         else replace(rec, answer_text=answer[:RECORD_ANSWER_MAX]))
            due = lv.prober.ended_ns(rec)
            if rec.outcome != "ok":
                return await self._after_failure(lv, rec, due)
            if not single:
                history += [{"role": "user", "content": text},
                            {"role": "assistant", "content": answer}]
                tokens += n + count_tokens(answer)
        return due

    def _prompt(self, shape: Shape, unit: str, k: int, planned: int, text: str | None,
                n: int, history: list[dict[str, Any]], tokens: int) -> Prompt:
        out = max(1, shape.output_tokens.draw(self.rng))
        agent = isinstance(shape, Agent)
        if text is None:  # a single request: the suite's own kind of prompt
            p = synthetic(n, out, f"{unit}-r", self.seed, self.text)
            return replace(p, shape=shape.name, session=unit, turn=1, planned_turns=1)
        source = "conversations" if isinstance(shape, Conversations) else \
            (self.text.source if self.text is not None else "public")
        return Prompt(f"{unit}-{'s' if agent else 't'}{k}",
                      [*history, {"role": "user", "content": text}], tokens + n, out,
                      shape=shape.name, session=unit, turn=None if agent else k,
                      step=k if agent else None, planned_turns=planned, keep_answer=True,
                      source=source)

    async def _after_failure(self, lv: _Level, rec: RequestRecord, due: int | None
                             ) -> int | None:
        """A failed turn ends its unit; a 429/503 pauses the user as it asked (bounded); a
        timeout without content ends the level (each further one would cost the same)."""
        if rec.outcome == "timeout" and not rec.chunks and not lv.silent:
            lv.silent = True
            self.notes.append(f"{self.phase} level {lv.level}: a request timed out without "
                              f"any content ({rec.error}); no more are sent at this level")
        wait = min(rec.retry_after_s if rec.retry_after_s is not None else 0.05, MAX_PAUSE_S)
        lv.prober.paused_s += wait
        await asyncio.sleep(wait)
        return None


async def _sleep_until(ns: int) -> None:
    delay = (ns - time.perf_counter_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)
