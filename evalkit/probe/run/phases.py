"""The suite's phases, run in order on one event loop: connect, baseline, prefill, cache,
ramp, soak, rate.

`SuiteRun` holds one run's state while its phases execute: every record goes to the run
store as its request completes (so an interrupted run keeps what it had), each phase and
level gets the client's self-check, and the ramp decides where to stop from the levels it
has judged so far (`RampWatch`: each level summarised once, as it ends, not the whole run
re-read after every level).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import statistics
from typing import TYPE_CHECKING, Any

import httpx

from evalkit import SUITE_VERSION, __version__
from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.vendor_metrics import SCRAPES_FILE
from evalkit.corpus.text import PromptText
from evalkit.errors import EndpointError
from evalkit.probe.apis.sampling import Sampling
from evalkit.probe.client.clients import Target, make_client
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, merge_checks, window_end, window_start
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.loops import closed_loop, open_loop
from evalkit.probe.load.shard import LevelPool, ShardTask
from evalkit.probe.plan.canaries import (
    CANARY_SET_VERSION,
    InTurn,
    alone_then,
    in_turn,
    make_canaries,
)
from evalkit.probe.plan.canarywatch import CanaryWatch
from evalkit.probe.plan.claims import estimate
from evalkit.probe.plan.privacy import AnswerKey
from evalkit.probe.plan.prompts import Prompt, PromptSource, synthetic
from evalkit.probe.plan.settings import ProbeConfig, SuiteSettings
from evalkit.probe.plan.workloads import workload_meta
from evalkit.probe.run.connect import check_endpoint, explain_failure, measure_rtt
from evalkit.probe.run.rampwatch import RampWatch
from evalkit.probe.run.scrape import VendorScraper
from evalkit.probe.wire.reconnect import Reuse
from evalkit.records import ALONE_PHASES, RequestRecord
from evalkit.rundir.store import RunStore

if TYPE_CHECKING:  # the display loads rich: the CLI's, not every run's
    from evalkit.probe.run.progress import Progress

_FORCE_WORDS = ("ignore_eos", "min_tokens")
#: the sampling fields a vendor may refuse, by the word its 400 would name
_SAMPLING_WORDS = ("temperature", "seed", "logprobs")


def _rejected_sampling(rec: RequestRecord, sampling: Sampling) -> list[str]:
    """The sampling fields a connect stream's 400 names, of those sent."""
    if rec.http_status != 400:
        return []
    text = f"{rec.error or ''} {rec.error_body or ''}".lower()
    sent = {"temperature": sampling.temperature is not None, "seed": sampling.seed is not None,
            "logprobs": sampling.logprobs}
    return [w for w in _SAMPLING_WORDS if sent[w] and w in text]


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f} ms"


def load_metrics() -> None:
    """Import pandas and the metrics now (~0.5 s of CPU that blocks the loop): called
    between two phases' self-check windows, before the first phase that judges what it
    measured. Not at start-up: the connect phase's first request (and `--help`, and a
    dry run) need none of it."""
    import evalkit.analysis.summarize  # noqa: F401


class SuiteRun:
    """State of one run while the phases execute."""

    def __init__(self, config: ProbeConfig, settings: SuiteSettings, target: Target,
                 store: RunStore, progress: Progress | None, origin_ns: int, run_tag: str,
                 user_prompts: list[Prompt], text: PromptText | None = None) -> None:
        self.config, self.s, self.target = config, settings, target
        self.store, self.progress = store, progress
        self.origin_ns, self.run_tag = origin_ns, run_tag
        self.user_prompts = user_prompts
        #: the run's own prompt text (the buyer's corpus; None: the public text), and the
        #: key its canaries' answers are digested with (in memory only)
        self.text = text
        self.answer_key = AnswerKey()
        self.prompts = PromptSource(f"{run_tag}s0", config.seed, user_prompts, text)
        k = settings.canaries
        self.canaries = make_canaries(run_tag, config.seed, k.count, settings.prompt_tokens,
                                      settings.output_tokens, user_prompts, text)
        self.phase_checks: dict[str, dict[str, Any]] = {}
        self.level_checks: dict[int, dict[str, Any]] = {}
        #: the client's self-check of each workload level (users in flight -> check)
        self.workload_checks: dict[int, dict[str, Any]] = {}
        self.rtt_samples: list[float] = []
        self.connect_info: dict[str, Any] = {}
        self.ramp_levels_run: list[int] = []
        self.watch = RampWatch()
        #: the answers alone, and each ramp level's canaries: a tie at its end runs on
        self.canary_watch = CanaryWatch(self.watch.thresholds, k.level_budget)
        #: records of the phase under way that the ramp's judgement needs (baseline, the
        #: current ramp level); emptied once summarised
        self._held: list[RequestRecord] = []
        self._holding = False
        self.vendor = (VendorScraper(config.metrics_url, log=store.dir / SCRAPES_FILE)
                       if config.metrics_url else None)
        #: the Ray actors that share each level (None: every level runs in this process)
        self.pool: LevelPool | None = None
        #: Ctrl-C was pressed (`evalkit.probe.suite.run_probe`): no phase, level or request
        #: starts after it, even if an await swallowed the cancellation it also sent
        self.interrupted = False
        #: what the run knows of the server's closes: every stream's client shares it, and
        #: each Ray shard takes it and gives back what it saw (run.json `connections`)
        self.reuse = Reuse(origin_ns)

    # -- plumbing
    def on_record(self, rec: RequestRecord) -> None:
        self.store.append(rec)
        if rec.phase in ALONE_PHASES:
            self.watch.add_alone(rec)
        if self._holding:
            self._held.append(rec)
        if self.progress is not None:
            self.progress.record(rec)

    @contextlib.contextmanager
    def _holding_records(self) -> Any:
        """Keep this block's records in memory too (yielded list), then let them go."""
        self._held, self._holding = [], True
        try:
            yield self._held
        finally:
            self._held, self._holding = [], False

    def _settled(self) -> bool:
        """The level's failures already confirm an admission breach (the 95 % interval of
        their share lies wholly above its limit): more requests (a floor, the canaries)
        would only cost a failing vendor's time, they could not change its status."""
        failed = sum(r.outcome != "ok" for r in self._held)
        share = proportion_interval(failed, len(self._held)) if failed else None
        return share is not None and share[0] > self.watch.thresholds.admission_failure_rate

    def _announce(self, phase: str, level: int | None = None, detail: str = "") -> None:
        if self.progress is not None:
            self.progress.phase(phase, level, detail)

    def _prompt(self, tokens: int | None = None, out: int | None = None) -> Prompt:
        return self.prompts.next(int(tokens or self.s.prompt_tokens),
                                 int(out or self.s.output_tokens))

    def _turns(self, phase: str, level: int | None) -> InTurn:
        """A load level's prompts, the canaries at places drawn for this run and level."""
        return in_turn(self.canaries, self.s.canaries.every, self._prompt,
                       f"canary-slots:{self.run_tag}:{phase}:{level}")

    def _judge_check(self, check: dict[str, Any]) -> dict[str, Any]:
        return judge_client(check, self.s.client_check)

    def _note(self, text: str) -> None:
        self.store.add_note(text)
        if self.progress is not None:
            self.progress.note(text)

    # -- phases
    async def run(self) -> None:
        async with make_client(self.target) as client, \
                Prober(self.target, self.origin_ns, self.run_tag,
                       reuse=self.reuse, answer_key=self.answer_key) as prober, \
                LoopMonitor() as mon, self.vendor or contextlib.nullcontext():
            for phase in self.s.phases:
                self._stop_if_interrupted()
                if phase != "connect":
                    load_metrics()
                mark = window_start(mon, prober)
                async with self._scraping(phase):
                    await getattr(self, f"_phase_{phase}")(client, prober, mon)
                # a sharded phase already stored its shards' merged check
                self.phase_checks.setdefault(
                    phase, self._judge_check(window_end(mon, prober, mark)))

    def _stop_if_interrupted(self) -> None:
        if self.interrupted:
            raise asyncio.CancelledError

    def _scraping(self, phase: str, level: int | None = None, periodic: bool = False) -> Any:
        """The vendor's metrics scraped around a phase or level (--metrics-url), else nothing."""
        if self.vendor is None:
            return contextlib.nullcontext()
        return self.vendor.around(phase, level, periodic)

    async def _scraped_level(self, prober: Prober, mon: LoopMonitor, phase: str, level: int,
                             duration_s: float) -> dict[str, Any]:
        """`_level`, with the vendor's queue and batch sampled before, during and after it."""
        async with self._scraping(phase, level, periodic=True):
            return await self._level(prober, mon, phase, level, duration_s)

    async def _phase_connect(self, client: httpx.AsyncClient, prober: Prober,
                             mon: LoopMonitor) -> None:
        self._announce("connect", 1, "list models, one stream, round trip")
        self.connect_info = await check_endpoint(client, self.target, self.config.api_key_env)
        facts: dict[str, Any] = {}
        rec = await prober.stream(self._prompt(), "connect", 1, facts=facts)
        if rec.http_status == 400 and prober.force_length and any(
                w in (rec.error or "") for w in _FORCE_WORDS):
            # the vendor rejects the length-forcing extensions: say so and go on without
            prober.force_length = False
            self.connect_info["force_length_rejected"] = rec.error
            rec = await prober.stream(self._prompt(), "connect", 1, facts=facts)
        dropped = _rejected_sampling(rec, prober.sampling)
        if dropped:
            # e.g. a reasoning model refuses a temperature: the run goes on at the vendor's
            # defaults, and the precision section says its answers may vary for that alone
            was = prober.sampling
            prober.sampling = Sampling(
                temperature=None if "temperature" in dropped else was.temperature,
                seed=None if "seed" in dropped else was.seed,
                logprobs=was.logprobs and "logprobs" not in dropped)
            self.connect_info["sampling_rejected"] = {"fields": dropped, "error": rec.error}
            rec = await prober.stream(self._prompt(), "connect", 1, facts=facts)
        self.connect_info["sampling"] = dataclasses.asdict(prober.sampling)
        self.connect_info["format"] = facts
        self.on_record(rec)  # kept as evidence even when it fails the gate
        if rec.outcome != "ok":
            raise EndpointError(explain_failure(rec, self.target, prober.adapter.path,
                                                self.config.api_key_env))
        self.connect_info["force_length"] = prober.force_length
        self.rtt_samples = await measure_rtt(client, self.s.connect.rtt_samples,
                                             self.target.timeout_s)

    async def _phase_baseline(self, client: httpx.AsyncClient, prober: Prober,
                              mon: LoopMonitor) -> None:
        next_prompt, n = alone_then(self.canaries, self.s.canaries.alone_repeats, self._prompt,
                                    self.s.baseline.requests)
        self._announce("baseline", 1, f"{n} requests one at a time")
        with self._holding_records() as held:
            await closed_loop(prober, next_prompt, self.on_record, phase="baseline", level=1,
                              workers=1, duration_s=None, max_requests=n, on_note=self._note)
            self.watch.add_baseline(held)
            self.canary_watch.learn_alone(held)
            e2e = sorted(r.e2e_s for r in held if r.outcome == "ok" and r.e2e_s)
        ramp = self.s.ramp
        floors = {c: ramp.floor(c) for c in ramp.levels if ramp.floor(c)}
        if floors and "ramp" in self.s.phases:
            est = estimate(list(ramp.levels), floors, ramp.level_duration_s,
                           e2e[len(e2e) // 2] if e2e else None)
            if est["seconds"] is not None:
                self._note(f"plan at the baseline's pace: the ramp, if every level runs, "
                           f"sends about {est['requests']} requests in about "
                           f"{est['seconds']} s")

    async def _phase_prefill(self, client: httpx.AsyncClient, prober: Prober,
                             mon: LoopMonitor) -> None:
        p = self.s.prefill
        self._announce("prefill", 1, f"prompt lengths {list(p.prompt_tokens)}")
        for _ in range(p.repeats):
            for tokens in p.prompt_tokens:  # interleaved, so a slow drift cannot tilt the fit
                prompt = synthetic(tokens, p.output_tokens,
                                   f"{self.run_tag}-p{tokens}-{secrets.token_hex(3)}",
                                   self.config.seed, self.text)
                self.on_record(await prober.stream(prompt, "prefill", 1))

    async def _phase_cache(self, client: httpx.AsyncClient, prober: Prober,
                           mon: LoopMonitor) -> None:
        c = self.s.cache
        self._announce("cache", 1, "the same prompt twice")
        for i in range(c.pairs):
            prompt = synthetic(c.prompt_tokens, c.output_tokens,
                               f"{self.run_tag}-c{i}-{secrets.token_hex(3)}", self.config.seed,
                               self.text)
            for _ in range(2):
                self.on_record(await prober.stream(prompt, "cache", 1))

    async def _level(self, prober: Prober, mon: LoopMonitor, phase: str, level: int,
                     duration_s: float) -> dict[str, Any]:
        """Hold `level` streams for `duration_s`, here or split over the Ray actors."""
        floor = self.s.ramp.floor(level) if phase == "ramp" else 0
        self._announce(phase, level, f"{level} streams for {duration_s:g} s"
                       + (f", at least {floor} requests" if floor else ""))
        if self.pool is None:
            await prober.clients.prepare(level)
            turns = self._turns(phase, level)
            tally = self.canary_watch.level(self._held, turns) if phase == "ramp" else None
            mark = window_start(mon, prober)
            await closed_loop(prober, turns, self.on_record, phase=phase, level=level,
                              workers=level, duration_s=duration_s,
                              max_requests=self.s.ramp.level_max_requests
                              if phase == "ramp" else None,
                              on_note=self._note, min_requests=floor, settled=self._settled,
                              stop=lambda: self.interrupted,
                              undecided=tally.wants_more if tally else None)
            check = self._judge_check(window_end(mon, prober, mark))
            if tally is not None and (said := tally.finish(level)) is not None:
                self._note(said)
            return check
        return await self._sharded(phase, level, duration_s, None)

    async def _sharded(self, phase: str, level: int, duration_s: float,
                       rate: float | None) -> dict[str, Any]:
        """One level split over the Ray actors, records appended as they stream back."""
        assert self.pool is not None
        floor = self.s.ramp.floor(level) if phase == "ramp" else 0

        def task(shard: int, shards: int, offset_ns: int, start_ns: int) -> ShardTask:
            # the actor's clock reads the driver's + offset: its t0_s land on our timeline
            return ShardTask(target=self.target, origin_ns=self.origin_ns + offset_ns,
                             run_tag=self.run_tag, shard=shard, shards=shards, phase=phase,
                             level=level, duration_s=duration_s, start_at_ns=start_ns,
                             prompt_tokens=self.s.prompt_tokens,
                             output_tokens=self.s.output_tokens,
                             client_limits=self.s.client_check,
                             user_prompts=tuple(self.user_prompts), seed=self.config.seed,
                             # the public text each worker makes itself: only a corpus travels
                             text=self.text if self.text and self.text.private else None,
                             answer_key=self.answer_key.key,
                             rate=rate, min_requests=-(-floor * len(range(shard, level, shards))
                                                       // level) if level else 0,
                             fresh=self.reuse.switched)

        reports, lost = await self.pool.run_level(task, self.on_record, level)
        for report in reports:  # a shard that saw the server close after a stream
            self.reuse.adopt(report.pop("fresh", None))  # (run.json says it once)
        where = f"{phase}{f' level {level}' if level else ''}"
        for why in lost:
            self._note(f"{where}: {why}")
        late = max((r.get("late_start_s") or 0.0 for r in reports), default=0.0)
        if late > 0.05:
            self._note(f"{where}: a worker began {late:.2f} s after the common start "
                       "(opening its connections took longer): the workers overlapped that "
                       "much less")
        check = merge_checks([r["check"] for r in reports if r.get("check")])
        check["workers"] = reports
        if lost:  # the level did not hold what it was to offer: no capacity conclusion
            check["lost"] = lost
            check["client_bound"] = True
            check["client_bound_reasons"] = sorted({*check["client_bound_reasons"],
                                                    "lost_worker"})
        return check

    async def _phase_ramp(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        r = self.s.ramp
        claimed = set(r.claimed)
        breached_at: int | None = None
        done = False
        for level in r.levels:
            if done and level not in claimed:
                continue  # past the confirmed breach, only levels a claim names still run
            self._stop_if_interrupted()
            with self._holding_records() as held:
                check = await self._scraped_level(prober, mon, "ramp", level,
                                                  r.level_duration_s)
                ramp = self.watch.add_level(level, held, bool(check["client_bound"]))
            self.level_checks[level] = check
            self.ramp_levels_run.append(level)
            if check["client_bound"]:
                self._note(f"level {level}: the client was the bottleneck "
                           f"({', '.join(check.get('client_bound_reasons') or [])}: loop lag "
                           f"p99 {_ms(check.get('loop_lag_p99_s'))}, CPU "
                           f"{check.get('cpu_fraction')}, send lag "
                           f"{check.get('send_lag_fraction')} of the load, late reads "
                           f"{check.get('coalesced_fraction')}); stopping the ramp")
                break
            if breached_at is None and ramp.get("first_breach_concurrency") == level:
                breached_at = level
            if breached_at is not None and (
                    r.levels.index(level) - r.levels.index(breached_at) >= r.confirm_levels):
                done = True
                if not any(c > level for c in claimed):
                    break
        if self.pool is not None and self.level_checks:
            self.phase_checks["ramp"] = merge_checks(list(self.level_checks.values()))

    async def _phase_workload(self, client: httpx.AsyncClient, prober: Prober,
                              mon: LoopMonitor) -> None:
        """The buyer's workload, level by level (`evalkit.probe.load.sessions`); each level gets
        the client's self-check, like a ramp level."""
        from evalkit.probe.load.sessions import WorkloadRunner

        w = self.config.workload
        assert w is not None, "the workload phase is planned only with a workload"
        runner = WorkloadRunner(w, self.run_tag, self.config.seed, text=self.text)
        for users in self.config.users or w.concurrency:
            self._stop_if_interrupted()
            self._announce("workload", users, f"{users} users of {w.name}"
                           + (f" for {w.duration_s:g} s" if w.duration_s else "")
                           + (f", {w.units} units" if w.units else ""))
            await prober.clients.prepare(users)
            mark = window_start(mon, prober)
            await runner.level(prober, self.on_record, users, duration_s=w.duration_s,
                               units=w.units, stop=lambda: self.interrupted)
            self.workload_checks[users] = self._judge_check(window_end(mon, prober, mark))
        for text in runner.notes:
            self._note(text)

    async def _phase_trace(self, client: httpx.AsyncClient, prober: Prober,
                           mon: LoopMonitor) -> None:
        from evalkit.probe.load.replay import replay

        t = self.config.trace
        assert t is not None, "the trace phase is planned only with a trace"
        span = t.offsets_s()[-1] if t.entries else 0.0
        self._announce("trace", None, f"{len(t.entries)} requests at the trace's times "
                       f"over {span:.1f} s (speed {t.speed:g})")
        await replay(prober, t, self.on_record, run_tag=self.run_tag, seed=self.config.seed,
                     max_in_flight=self.s.ramp.max_concurrency * 16, text=self.text,
                     stop=lambda: self.interrupted)

    async def _phase_soak(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        s = self.s.soak
        level = s.concurrency
        if level is None:
            level = (self.watch.conclusion().get("max_sustained_concurrency")
                     or max(self.ramp_levels_run or [1]))
        check = await self._scraped_level(prober, mon, "soak", int(level), s.duration_s)
        if self.pool is not None:
            self.phase_checks["soak"] = check

    async def _phase_rate(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        rate, duration = float(self.s.rate.rate or 0), self.s.rate.duration_s
        self._announce("rate", None, f"Poisson arrivals at {rate:g}/s for {duration:g} s")
        if self.pool is not None:
            self.phase_checks["rate"] = await self._sharded("rate", 0, duration, rate)
            return
        await open_loop(prober, self._turns("rate", None), self.on_record, phase="rate",
                        rate=rate, duration_s=duration, seed=self.config.seed * 1000,
                        max_in_flight=self.s.ramp.max_concurrency * 16)

    # -- summary
    def meta(self) -> dict[str, Any]:
        """What summarize needs beyond the records (plain data, as stored in run.json)."""
        return {"tool_version": __version__, "suite_version": SUITE_VERSION,
                "canaries": {"set_version": CANARY_SET_VERSION, "count": len(self.canaries),
                             "alone_repeats": self.s.canaries.alone_repeats,
                             "every": self.s.canaries.every,
                             "level_budget": self.s.canaries.level_budget,
                             "ended": self.canary_watch.ended(),
                             "sharded_levels": self.pool is not None},
                "phases": self.phase_checks,
                "levels": {str(k): v for k, v in self.level_checks.items()},
                "workload_levels": {str(k): v for k, v in self.workload_checks.items()},
                "workload": workload_meta(self.config),
                "corpus": dict(self.text.facts) if self.text and self.text.facts else None,
                "rtt_s": statistics.median(self.rtt_samples) if self.rtt_samples else None}
