"""The standard probe suite v1: connect, baseline, prefill, cache, ramp, soak, open loop.

`run_probe(config, out_dir)` is the library entry point (a notebook calls it; the CLI is a
thin shell over it). It is synchronous: `asyncio.run` lives only here, at the edge.

Suite settings come from a profile (`evalkit/profiles/quick.json`, `standard.json`, or a
JSON file of the same shape); the fields of `ProbeConfig` override them. Every record is
appended to `requests.jsonl` as its request completes; whatever happens (Ctrl-C, a
crash, an endpoint error) `summary.json` is then written from the records that exist, and
`run.json` says how the run ended.

Scaling out (`ProbeConfig(ray="auto" | ADDRESS)`, `evalkit.scaleout`): each ramp, soak
and rate level is split over Ray actors, one per CPU of the cluster. The driver sends each
actor a `ShardTask` (its slice of the level's streams, one start time and the run's clock
origin, both translated to the actor's clock), appends the records the actors stream back
as they complete (they carry `shard`, the actor's place in the level), and judges the
level on them all; a level is client-bound when any actor was. The concurrency-1 phases
run in the driver. A `ShardTask` is plain data and `run_shard` a plain function.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from evalkit import SUITE_VERSION, __version__
from evalkit.errors import EndpointError, ScaleOutError, UsageError
from evalkit.plan import Plan, estimate, plan_probe
from evalkit.prober import (
    LoopMonitor,
    Prober,
    Target,
    check_endpoint,
    closed_loop,
    explain_failure,
    make_client,
    measure_rtt,
    open_loop,
)
from evalkit.prompts import Prompt, PromptSource, load_prompts, synthetic
from evalkit.records import RequestRecord
from evalkit.runstore import RunStore
from evalkit.sanitize import clean
from evalkit.vendor_metrics import VendorScraper

if TYPE_CHECKING:
    from evalkit.scaleout import RayPool

#: Phases in the order the suite runs them; `rate` replaces `ramp` when --rate is given.
PHASES = ("connect", "baseline", "prefill", "cache", "ramp", "soak", "rate")
_SERIAL = ("connect", "baseline", "prefill", "cache")
_FORCE_WORDS = ("ignore_eos", "min_tokens")


@dataclass(frozen=True)
class ProbeConfig:
    """What to probe and how; every field left None takes the profile's value."""

    base_url: str
    model: str
    profile: str = "quick"
    phases: tuple[str, ...] | None = None
    levels: tuple[int, ...] | None = None
    max_concurrency: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    prompts_file: Path | None = None
    api: str = "openai-chat"
    api_key_env: str = "OPENAI_API_KEY"
    headers: tuple[tuple[str, str], ...] = ()
    extra_body: dict[str, Any] = field(default_factory=dict)
    rate: float | None = None
    timeout_s: float | None = None
    #: the longest one request may take in all (None: the read timeout plus 0.5 s per
    #: requested token, `Target.request_deadline`)
    deadline_s: float | None = None
    #: how the API key is sent (a key of evalkit.api.AUTH_STYLES; None: the API's own style)
    #: and Azure OpenAI's api-version query parameter (None: not sent)
    auth: str | None = None
    api_version: str | None = None
    #: the vendor's Prometheus metrics page, scraped around each phase and during each
    #: level (evalkit.vendor_metrics); summary.json gets `vendor_metrics` (None: no scrape)
    metrics_url: str | None = None
    #: run the ramp, soak and rate levels on Ray (`evalkit.scaleout`): "auto" starts a local
    #: instance, an address ("ray://head:10001", "head:6379") joins a cluster; None: all in
    #: this process, no Ray
    ray: str | None = None
    #: Ray actors that share each level (None: one per CPU of the cluster)
    ray_workers: int | None = None
    seed: int = 0
    #: who the endpoint belongs to, as the user names it: `compare` groups runs by it
    vendor: str | None = None
    #: the model and endpoint this run stands in for (the demo: the reference endpoint plays
    #: a sample vendor); every scorecard from the run says so on page one
    stands_in_for: dict[str, str] | None = None
    #: the vendor's questionnaire, read as the test plan (evalkit.plan): ramp levels that
    #: bracket every claimed concurrency, request floors for the percentiles claimed
    questionnaire: Path | None = None
    #: the most requests the ramp may plan (a paying user's budget); levels beyond it go
    budget_requests: int | None = None
    #: deep-merged over the profile (e.g. {"ramp": {"level_duration_s": 1}}): for tests/notebooks
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    """Where a run went and how it ended."""

    out_dir: Path
    status: str
    requests: int
    summary: dict[str, Any] | None

    @property
    def validity(self) -> str:
        """valid | degraded | invalid; a run without a summary measured nothing."""
        return str(((self.summary or {}).get("validity") or {}).get("status", "invalid"))


# --------------------------------------------------------------------------- settings

def profile_names() -> list[str]:
    """The built-in profiles."""
    folder = resources.files("evalkit") / "profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_path: str) -> dict[str, Any]:
    """A built-in profile by name, or a JSON file of the same shape."""
    if name_or_path in profile_names():
        text = (resources.files("evalkit") / "profiles" / f"{name_or_path}.json").read_text()
        return dict(json.loads(text))
    path = Path(name_or_path)
    if not path.is_file():
        raise UsageError(f"unknown profile {name_or_path!r}: use one of "
                         f"{', '.join(profile_names())} or a JSON file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a JSON profile: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a profile is a JSON object")
    base = load_profile(str(data.get("extends", "standard")))
    return _deep_merge(base, data)


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(
            out.get(k), dict) else v
    return out


def _powers_up_to(n: int) -> list[int]:
    levels, c = [], 1
    while c < n:
        levels.append(c)
        c *= 2
    return [*levels, n]


def resolve_settings(config: ProbeConfig) -> dict[str, Any]:
    """The profile with the config's flags applied: what the run actually does."""
    s = _deep_merge(load_profile(config.profile), config.overrides)
    if config.phases is not None:
        unknown = [p for p in config.phases if p not in PHASES]
        if unknown:
            raise UsageError(f"unknown phase(s) {', '.join(unknown)}; known: {', '.join(PHASES)}")
        s["phases"] = list(config.phases)
    if config.rate is not None:
        if config.rate <= 0:
            raise UsageError("--rate must be a positive number of requests per second")
        s["phases"] = [p if p != "ramp" else "rate" for p in s["phases"]]
        if "rate" not in s["phases"]:
            s["phases"].append("rate")
        s["rate"] = {**s.get("rate", {}), "rate": config.rate}
    for key, value in (("prompt_tokens", config.prompt_tokens),
                       ("output_tokens", config.output_tokens),
                       ("timeout_s", config.timeout_s), ("deadline_s", config.deadline_s)):
        if value is not None:
            if value <= 0:
                raise UsageError(f"--{key.replace('_', '-').replace('-s', '')} must be positive")
            s[key] = value
    ramp = dict(s["ramp"])
    if config.max_concurrency is not None:
        if config.max_concurrency < 1:
            raise UsageError("--max-concurrency must be at least 1")
        ramp["max_concurrency"] = config.max_concurrency
        if config.levels is None:
            ramp["levels"] = _powers_up_to(config.max_concurrency)
    if config.levels is not None:
        if not config.levels or min(config.levels) < 1:
            raise UsageError("--levels must be positive integers, e.g. 1,2,4,8")
        ramp["levels"] = sorted(set(config.levels))
        if config.max_concurrency is None:  # levels asked for by name are not capped
            ramp["max_concurrency"] = max(int(ramp["max_concurrency"]), max(config.levels))
    ramp["levels"] = [c for c in ramp["levels"] if c <= int(ramp["max_concurrency"])]
    s["ramp"] = ramp
    if config.vendor is not None and not (
            0 < len(config.vendor) <= 100 and clean(config.vendor, 100) == config.vendor):
        raise UsageError("--vendor takes a name of one line, at most 100 characters, with no "
                         "control characters")
    if config.ray is not None and not config.ray.strip():
        raise UsageError("--ray takes auto or a cluster address, e.g. ray://head:10001")
    if config.ray_workers is not None and (config.ray is None or config.ray_workers < 1):
        raise UsageError("--ray-workers takes a positive number of actors, with --ray")
    s["phases"] = [p for p in PHASES if p in s["phases"]]  # the suite's own order
    return s


# --------------------------------------------------------------------------- self-check

def window_start(mon: LoopMonitor, prober: Prober) -> tuple[Any, int, int, float, int]:
    """Begin a self-check window over the loop and the prober's chunk counters."""
    return (mon.start_window(), prober.content_chunks, prober.coalesced_chunks,
            prober.paused_s, prober.sends)


def window_end(mon: LoopMonitor, prober: Prober, mark: tuple[Any, int, int, float, int]
               ) -> dict[str, Any]:
    """Loop lag, CPU, the client's send lag and the share of chunks whose read was late
    (coalesced) in the window, and how long workers waited after rejections and
    failures (backoff, Retry-After)."""
    loop_mark, chunks0, coalesced0, paused0, sends0 = mark
    check = mon.end_window(loop_mark)
    check.update(prober.send_check(sends0))
    check["backoff_s"] = round(prober.paused_s - paused0, 3)
    chunks = prober.content_chunks - chunks0
    coalesced = prober.coalesced_chunks - coalesced0
    check["content_chunks"] = chunks
    check["coalesced_chunks"] = coalesced
    check["coalesced_fraction"] = round(coalesced / chunks, 5) if chunks else None
    return check


def judge_client(check: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
    """Was the client the bottleneck? Then no capacity conclusion may be drawn.

    Bound when the client's CPU is saturated (it set the pace), when its event loop lags
    so much that closed-loop workers send late, when its own send lag held back more than
    a small share of the load it was to offer (`send_lag_fraction`; judged when the
    limits name it), or when more than a small share of chunks were read late enough to
    merge with the next one (their stamps would be late).
    """
    lag, cpu = check.get("loop_lag_p99_s"), check.get("cpu_fraction")
    held = check.get("send_lag_fraction")
    merged = check.get("coalesced_fraction")
    # A share needs a count behind it: one merged read among a short phase's 30 chunks is
    # two server writes closer together than a read, not a client falling behind.
    enough = int(check.get("coalesced_chunks") or 0) >= int(limits.get("coalesced_min", 5))
    reasons = [why for why, hit in (
        ("cpu", cpu is not None and cpu > float(limits["cpu_fraction"])),
        ("loop_lag", lag is not None and lag > float(limits["loop_lag_p99_s"])),
        ("send_lag", held is not None and "send_lag_fraction" in limits
         and held > float(limits["send_lag_fraction"])),
        ("late_reads", enough and merged is not None
         and merged > float(limits["coalesced_fraction"])),
    ) if hit]
    return {**check, "client_bound": bool(reasons), "client_bound_reasons": reasons}


# --------------------------------------------------------------------------- shards

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
    user_prompts: tuple[Prompt, ...] = ()
    seed: int = 0
    rate: float | None = None
    client_limits: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardResult:
    """What a shard measured: its records and its own client self-check."""

    records: tuple[RequestRecord, ...]
    check: dict[str, Any]
    #: how late the shard began after `start_at_ns` (s; 0 when it was ready in time)
    late_start_s: float = 0.0


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
    source = PromptSource(f"{tag}s{task.shard}", task.seed, list(task.user_prompts))
    async with Prober(task.target, task.origin_ns, tag, task.shard) as prober, \
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
                              workers=workers, duration_s=task.duration_s, max_requests=None)
        check = judge_client(window_end(mon, prober, mark), task.client_limits)
    return ShardResult(tuple(records), check, round(max(-delay, 0.0), 4))


# --------------------------------------------------------------------------- the run

class _Suite:
    """State of one run while the phases execute."""

    def __init__(self, config: ProbeConfig, settings: dict[str, Any], target: Target,
                 store: RunStore, progress: Any, origin_ns: int, run_tag: str,
                 user_prompts: list[Prompt]) -> None:
        self.config, self.s, self.target = config, settings, target
        self.store, self.progress = store, progress
        self.origin_ns, self.run_tag = origin_ns, run_tag
        self.user_prompts = user_prompts
        self.prompts = PromptSource(f"{run_tag}s0", config.seed, user_prompts)
        self.phase_checks: dict[str, dict[str, Any]] = {}
        self.level_checks: dict[int, dict[str, Any]] = {}
        self.rtt_samples: list[float] = []
        self.connect_info: dict[str, Any] = {}
        self.ramp_levels_run: list[int] = []
        self.vendor = (VendorScraper(config.metrics_url) if config.metrics_url else None)
        #: the Ray actors that share each level (None: every level runs in this process)
        self.pool: RayPool | None = None

    # -- plumbing
    def on_record(self, rec: RequestRecord) -> None:
        self.store.append(rec)
        if self.progress is not None:
            self.progress.record(rec)

    def _announce(self, phase: str, level: int | None = None, detail: str = "") -> None:
        if self.progress is not None:
            self.progress.phase(phase, level, detail)

    def _prompt(self, tokens: int | None = None, out: int | None = None) -> Prompt:
        return self.prompts.next(int(tokens or self.s["prompt_tokens"]),
                                 int(out or self.s["output_tokens"]))

    def _judge_check(self, check: dict[str, Any]) -> dict[str, Any]:
        return judge_client(check, self.s["client_check"])

    # -- phases
    async def run(self) -> None:
        async with make_client(self.target) as client, \
                Prober(self.target, self.origin_ns, self.run_tag) as prober, \
                LoopMonitor() as mon:
            for phase in self.s["phases"]:
                mark = window_start(mon, prober)
                async with self._scraping(phase):
                    await getattr(self, f"_phase_{phase}")(client, prober, mon)
                # a sharded phase already stored its shards' merged check
                self.phase_checks.setdefault(
                    phase, self._judge_check(window_end(mon, prober, mark)))

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
        self.connect_info["format"] = facts
        self.on_record(rec)  # kept as evidence even when it fails the gate
        if rec.outcome != "ok":
            raise EndpointError(explain_failure(rec, self.target, prober.adapter.path,
                                                self.config.api_key_env))
        self.connect_info["force_length"] = prober.force_length
        self.rtt_samples = await measure_rtt(client, int(self.s["connect"]["rtt_samples"]))

    async def _phase_baseline(self, client: httpx.AsyncClient, prober: Prober,
                              mon: LoopMonitor) -> None:
        n = int(self.s["baseline"]["requests"])
        self._announce("baseline", 1, f"{n} requests one at a time")
        await closed_loop(prober, self._prompt, self.on_record, phase="baseline", level=1,
                          workers=1, duration_s=None, max_requests=n, on_note=self._note)
        floors = {int(c): int(v) for c, v in (self.s["ramp"].get("min_requests") or {}).items()}
        if floors and "ramp" in self.s["phases"]:
            e2e = sorted(r.e2e_s for r in self.store.records
                         if r.phase == "baseline" and r.outcome == "ok" and r.e2e_s)
            est = estimate(self.s["ramp"]["levels"], floors,
                           float(self.s["ramp"]["level_duration_s"]),
                           e2e[len(e2e) // 2] if e2e else None)
            if est["seconds"] is not None:
                self._note(f"plan at the baseline's pace: the ramp, if every level runs, "
                           f"sends about {est['requests']} requests in about "
                           f"{est['seconds']} s")

    async def _phase_prefill(self, client: httpx.AsyncClient, prober: Prober,
                             mon: LoopMonitor) -> None:
        p = self.s["prefill"]
        lengths = [int(x) for x in p["prompt_tokens"]]
        self._announce("prefill", 1, f"prompt lengths {lengths}")
        for _ in range(int(p["repeats"])):
            for tokens in lengths:  # interleaved, so a slow drift cannot tilt the fit
                prompt = synthetic(tokens, int(p["output_tokens"]),
                                   f"{self.run_tag}-p{tokens}-{secrets.token_hex(3)}",
                                   self.config.seed)
                self.on_record(await prober.stream(prompt, "prefill", 1))

    async def _phase_cache(self, client: httpx.AsyncClient, prober: Prober,
                           mon: LoopMonitor) -> None:
        c = self.s["cache"]
        self._announce("cache", 1, "the same prompt twice")
        for i in range(int(c["pairs"])):
            prompt = synthetic(int(c["prompt_tokens"]), int(c["output_tokens"]),
                               f"{self.run_tag}-c{i}-{secrets.token_hex(3)}", self.config.seed)
            for _ in range(2):
                self.on_record(await prober.stream(prompt, "cache", 1))

    async def _level(self, prober: Prober, mon: LoopMonitor, phase: str, level: int,
                     duration_s: float) -> dict[str, Any]:
        """Hold `level` streams for `duration_s`, here or split over the Ray actors."""
        floor = int((self.s["ramp"].get("min_requests") or {}).get(str(level), 0)
                    ) if phase == "ramp" else 0
        self._announce(phase, level, f"{level} streams for {duration_s:g} s"
                       + (f", at least {floor} requests" if floor else ""))
        if self.pool is None:
            await prober.clients.prepare(level)
            mark = window_start(mon, prober)
            await closed_loop(prober, self._prompt, self.on_record, phase=phase, level=level,
                              workers=level, duration_s=duration_s, max_requests=None,
                              on_note=self._note, min_requests=floor)
            return self._judge_check(window_end(mon, prober, mark))
        return await self._sharded(phase, level, duration_s, None)

    async def _sharded(self, phase: str, level: int, duration_s: float,
                       rate: float | None) -> dict[str, Any]:
        """One level split over the Ray actors, records appended as they stream back."""
        assert self.pool is not None

        def task(shard: int, shards: int, offset_ns: int, start_ns: int) -> ShardTask:
            # the actor's clock reads the driver's + offset: its t0_s land on our timeline
            return ShardTask(self.target, self.origin_ns + offset_ns, self.run_tag, shard,
                             shards, phase, level, duration_s, start_ns,
                             int(self.s["prompt_tokens"]), int(self.s["output_tokens"]),
                             tuple(self.user_prompts), self.config.seed, rate,
                             dict(self.s["client_check"]))

        reports, lost = await self.pool.run_level(task, self.on_record, level)
        for why in lost:
            self._note(f"{phase}{f' level {level}' if level else ''}: {why}")
        late = max((r.get("late_start_s") or 0.0 for r in reports), default=0.0)
        if late > 0.05:
            self._note(f"{phase}{f' level {level}' if level else ''}: a worker began "
                       f"{late:.2f} s after the common start (opening its connections took "
                       "longer): the workers overlapped that much less")
        check = self._merge_checks([r["check"] for r in reports if r.get("check")])
        check["workers"] = reports
        if lost:  # the level did not hold what it was to offer: no capacity conclusion
            check["lost"] = lost
            check["client_bound"] = True
            check["client_bound_reasons"] = sorted({*check["client_bound_reasons"],
                                                    "lost_worker"})
        return check

    @staticmethod
    def _merge_checks(checks: Sequence[dict[str, Any]]) -> dict[str, Any]:
        def worst(key: str) -> Any:
            vals = [c[key] for c in checks if c.get(key) is not None]
            return max(vals) if vals else None
        return {"loop_lag_p50_s": worst("loop_lag_p50_s"), "loop_lag_p99_s":
                worst("loop_lag_p99_s"), "loop_lag_max_s": worst("loop_lag_max_s"),
                "cpu_fraction": worst("cpu_fraction"),
                "send_lag_p99_s": worst("send_lag_p99_s"),
                "send_lag_fraction": worst("send_lag_fraction"),
                "coalesced_fraction": worst("coalesced_fraction"), "shards": len(checks),
                "client_bound": any(c.get("client_bound") for c in checks),
                "client_bound_reasons": sorted({r for c in checks
                                                for r in c.get("client_bound_reasons") or []}),
                "lost": sorted({w for c in checks for w in c.get("lost") or []})}

    async def _phase_ramp(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        r = self.s["ramp"]
        confirm = int(r.get("confirm_levels", 1))
        claimed = {int(c) for c in r.get("min_requests") or {}}
        breached_at: int | None = None
        done = False
        for level in r["levels"]:
            if done and level not in claimed:
                continue  # past the confirmed breach, only levels a claim names still run
            check = await self._scraped_level(prober, mon, "ramp", level,
                                              float(r["level_duration_s"]))
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
            if breached_at is None and self._breached(level):
                breached_at = level
            if breached_at is not None and (
                    r["levels"].index(level) - r["levels"].index(breached_at) >= confirm):
                done = True
                if not any(c > level for c in claimed):
                    break
        if self.pool is not None and self.level_checks:
            self.phase_checks["ramp"] = self._merge_checks(list(self.level_checks.values()))

    def _breached(self, level: int) -> bool:
        ramp = self.summary().get("ramp") or {}
        return ramp.get("first_breach_concurrency") == level

    async def _phase_soak(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        s = self.s["soak"]
        level = s.get("concurrency")
        if level is None:
            ramp = self.summary().get("ramp") or {}
            level = ramp.get("max_sustained_concurrency") or max(self.ramp_levels_run or [1])
        check = await self._scraped_level(prober, mon, "soak", int(level),
                                          float(s["duration_s"]))
        if self.pool is not None:
            self.phase_checks["soak"] = check

    async def _phase_rate(self, client: httpx.AsyncClient, prober: Prober,
                          mon: LoopMonitor) -> None:
        r = self.s["rate"]
        rate, duration = float(r["rate"]), float(r["duration_s"])
        self._announce("rate", None, f"Poisson arrivals at {rate:g}/s for {duration:g} s")
        if self.pool is not None:
            self.phase_checks["rate"] = await self._sharded("rate", 0, duration, rate)
            return
        await open_loop(prober, self._prompt, self.on_record, phase="rate",
                        rate=rate, duration_s=duration, seed=self.config.seed * 1000,
                        max_in_flight=int(self.s["ramp"]["max_concurrency"]) * 16)

    def _note(self, text: str) -> None:
        self.store.meta.setdefault("notes", []).append(text)
        if self.progress is not None:
            self.progress.note(text)

    # -- summary
    def meta(self) -> dict[str, Any]:
        """What summarize needs beyond the records (plain data, as stored in run.json)."""
        return {"tool_version": __version__, "suite_version": SUITE_VERSION,
                "phases": self.phase_checks,
                "levels": {str(k): v for k, v in self.level_checks.items()},
                "rtt_s": statistics.median(self.rtt_samples) if self.rtt_samples else None}

    def summary(self, status: str | None = None, error: str | None = None) -> dict[str, Any]:
        return summarize_run(self.store.records,
                             {**self.meta(), "run_status": status, "run_error": error})


def summarize_run(records: Sequence[RequestRecord], meta: dict[str, Any]) -> dict[str, Any]:
    """summary.json from records and the run's self-check data (metrics does the maths)."""
    from evalkit.metrics import SummaryMeta, summarize

    return dict(summarize(list(records), SummaryMeta.from_dict(meta)))


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f} ms"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def plan_run(config: ProbeConfig) -> tuple[dict[str, Any], Plan | None]:
    """The settings the run will use and, with a questionnaire, the plan behind them.

    Nothing is sent: `evalkit probe --dry-run` prints this and stops.
    """
    settings = resolve_settings(config)
    if config.questionnaire is None:
        if config.budget_requests is not None:
            raise UsageError("--budget plans the ramp from a questionnaire: give "
                             "--questionnaire FILE too")
        return settings, None
    if config.budget_requests is not None and config.budget_requests < 1:
        raise UsageError("--budget must be a positive number of requests")
    from evalkit.questionnaire import load_questionnaire

    q = load_questionnaire(config.questionnaire)
    ramp = settings["ramp"]
    per_level = max(1, round(float(ramp["level_duration_s"])))  # a floor for the estimate
    plan = plan_probe(q, ramp["levels"], max_concurrency=config.max_concurrency,
                      levels_given=config.levels is not None,
                      processes=_planned_workers(config),
                      prompt_given=config.prompt_tokens is not None,
                      budget_requests=config.budget_requests, default_requests=per_level)
    settings["ramp"] = {**ramp, "levels": list(plan.levels),
                        "max_concurrency": plan.max_concurrency,
                        "min_requests": {str(c): n for c, n in plan.min_requests.items()}}
    if plan.prompt_tokens:
        settings["prompt_tokens"] = plan.prompt_tokens
    if plan.soak_concurrency and settings.get("soak", {}).get("concurrency") is None:
        settings["soak"] = {**settings.get("soak", {}), "concurrency": plan.soak_concurrency}
    return settings, plan


def _planned_workers(config: ProbeConfig) -> int:
    """Client processes the plan may count on before Ray is asked: --ray-workers, else a
    local instance's CPUs; a cluster's size is known only once joined (1 until then)."""
    if config.ray is None:
        return 1
    if config.ray_workers is not None:
        return config.ray_workers
    return (os.cpu_count() or 1) if config.ray == "auto" else 1


def run_probe(config: ProbeConfig, out_dir: Path, progress: Any = None) -> RunResult:
    """Run the suite against `config.base_url`; write the run directory; return how it ended.

    Raises EndpointError when the endpoint cannot be probed at all (unreachable, 401,
    unknown model) and UsageError for settings that do not fit; KeyboardInterrupt passes
    through after the run directory was completed with what was measured.
    """
    settings, plan = plan_run(config)
    user_prompts = (load_prompts(config.prompts_file, int(settings["output_tokens"]))
                    if config.prompts_file else [])
    secret = os.environ.get(config.api_key_env) or None
    target = Target(base_url=config.base_url, model=config.model, api=config.api,
                    headers=config.headers, extra_body=dict(config.extra_body),
                    timeout_s=float(settings["timeout_s"]),
                    deadline_s=(float(settings["deadline_s"])
                                if settings.get("deadline_s") is not None else None),
                    force_length=bool(settings.get("force_output_length", True)), secret=secret,
                    auth=config.auth, params=(("api-version", config.api_version),)
                    if config.api_version else ())
    from evalkit.api import get_adapter

    get_adapter(config.api)  # an unknown --api is a usage error before anything starts
    run_tag = secrets.token_hex(3)
    origin_ns = time.perf_counter_ns()
    meta = {
        "schema": "evalkit.run/1", "tool": "evalkit", "tool_version": __version__,
        "suite_version": SUITE_VERSION, "run_tag": run_tag, "status": "running",
        "started_at": _now_iso(), "ended_at": None,
        "clock": {"origin_ns": origin_ns, "source": "time.perf_counter_ns (CLOCK_MONOTONIC)",
                  "note": "t0_s in requests.jsonl are offsets from origin_ns"},
        "target": target.describe(), "api_key_env": config.api_key_env,
        "vendor": config.vendor,
        "stands_in_for": config.stands_in_for,
        "profile": config.profile, "settings": settings,
        "plan": None if plan is None else {
            **plan.to_dict(), "questionnaire": str(config.questionnaire)},
        "config": _config_for_file(config),
        "client": {"host": platform.node(), "python": platform.python_version(),
                   "platform": platform.platform(), "cpus": os.cpu_count(),
                   "ray": config.ray},
        "scaleout": None,
    }
    if config.ray is not None:
        from evalkit.scaleout import require_ray

        require_ray()  # a missing extra is a usage error before the run directory exists
    _warm_up()
    store = RunStore(Path(out_dir), meta)
    suite = _Suite(config, settings, target, store, progress, origin_ns, run_tag, user_prompts)
    status = "crashed"
    error: str | None = None
    try:
        with _scaleout(config, store) as pool:
            suite.pool = pool
            asyncio.run(suite.run())
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except EndpointError as exc:
        status, error = "failed", target.redact(str(exc))
        raise
    except ScaleOutError as exc:
        status, error = "crashed", str(exc)
        raise
    finally:
        try:
            summary = _finish(suite, store, status, error)
        except KeyboardInterrupt:
            # Ctrl-C while the run was being written up (the summary takes a second):
            # finish writing it up as interrupted, then stop, so run.json never says running
            status = "interrupted"
            _finish(suite, store, status, error)
            raise
        finally:
            if progress is not None:
                progress.close()
    return RunResult(Path(out_dir), status, store.count, summary)


def _finish(suite: _Suite, store: RunStore, status: str,
            error: str | None) -> dict[str, Any] | None:
    """Write the run up: close the records, summary, final run.json.

    Safe to call twice (a second call after an interrupted first rewrites the same files).
    """
    store.close()
    summary = _final_summary(suite, store, status, error)
    _write_parquet(store)
    store.update_meta(status=status, ended_at=_now_iso(), error=error,
                      client_checks={"phases": suite.phase_checks,
                                     "levels": {str(k): v for k, v in
                                                suite.level_checks.items()}},
                      connect=suite.connect_info, rtt_samples_s=suite.rtt_samples,
                      requests=store.count)
    return summary


def _write_parquet(store: RunStore) -> None:
    """requests.parquet beside the JSONL, for pandas; a failure here loses nothing (the
    JSONL is the evidence) and is said in run.json."""
    from evalkit.export import write_parquet

    try:
        write_parquet(store.dir)
    except Exception as exc:  # an export must not hide how the run itself ended
        store.update_meta(parquet_error=f"{type(exc).__name__}: {exc}"[:300])


def _warm_up(metrics: bool = True) -> bool:
    """Load the tokenizer (and pandas) now, not inside a timed phase (they block ~0.5 s)."""
    if metrics:
        import evalkit.metrics  # noqa: F401  (imports pandas)
    from evalkit.prompts import count_tokens, filler_words

    filler_words()
    count_tokens("warm up")
    return True


def _final_summary(suite: _Suite, store: RunStore, status: str,
                   error: str | None = None) -> dict[str, Any] | None:
    """Summarise whatever exists; a failure here must not hide the run's own error."""
    try:
        summary = suite.summary(status, error)
    except Exception as exc:  # a summary bug must not lose the records' story
        store.update_meta(summary_error=f"{type(exc).__name__}: {exc}")
        if status == "complete":
            raise
        return None
    summary["run_status"] = status
    if suite.vendor is not None:
        try:
            summary["vendor_metrics"] = suite.vendor.summary(store.records)
        except Exception as exc:  # the vendor's page must not cost the run its summary
            summary["vendor_metrics"] = {"url": suite.vendor.url,
                                         "error": f"{type(exc).__name__}: {exc}"[:300]}
    store.write_summary(summary)
    return summary


@contextlib.contextmanager
def _scaleout(config: ProbeConfig, store: RunStore) -> Any:
    """The Ray actors for the run's levels (None: every level runs in this process).

    They die with this process whatever ends it: Ray ends a job's non-detached actors
    when its driver goes, and a local instance (`auto`) stops with its driver.
    """
    if config.ray is None:
        yield None
        return
    from evalkit.scaleout import RayPool

    pool = RayPool(config.ray, config.ray_workers)
    try:
        store.update_meta(scaleout=pool.start())
        yield pool
    finally:
        pool.close()
        if pool.info:
            store.update_meta(scaleout={**pool.info, "lost": [
                w.lost for w in pool.workers if w.lost]})


def _config_for_file(config: ProbeConfig) -> dict[str, Any]:
    """The config as run.json may show it: header values are never written."""
    d = asdict(config)
    d["headers"] = [k for k, _ in config.headers]
    d["prompts_file"] = str(config.prompts_file) if config.prompts_file else None
    return d


# --------------------------------------------------------------------------- CLI parsing

def parse_header(text: str) -> tuple[str, str]:
    """'Name: value' from --header; the value may hold secrets, so it is never echoed."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--header must look like 'Name: value' (got a value for "
                         f"{name.strip()!r})" if sep else "--header must look like 'Name: value'")
    return name.strip(), value.strip()


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """'1,2,4,8' → (1, 2, 4, 8); anything else is a usage error naming the option."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, e.g. 1,2,4,8") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """--extra-body: a JSON object merged into every request body."""
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not valid JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise UsageError("--extra-body must be a JSON object, e.g. '{\"top_k\": 1}'")
    return obj
