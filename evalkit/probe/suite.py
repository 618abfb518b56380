"""The standard probe suite v1: connect, baseline, prefill, cache, ramp, soak, open loop.

`run_probe(config, out_dir)` is the library entry point (the CLI is a thin shell over it);
`await arun_probe(config, out_dir)` is the same run for code that already has an event
loop (a notebook). Every record is appended to `requests.jsonl` as its request completes;
whatever happens (Ctrl-C, a crash, an endpoint error) `summary.json` is then written from
the records that exist, and `run.json` says how the run ended.

The parts live beside this module: what a run does (`evalkit.probe.plan.settings`: `ProbeConfig`
over a profile, checked into `SuiteSettings`), the phases themselves (`evalkit.probe.run.phases`),
the client's self-check (`evalkit.probe.client.selfcheck`) and one worker's slice of a level
(`evalkit.probe.load.shard`, which Ray actors run when `ProbeConfig(ray=...)` scales out:
`evalkit.probe.load.scaleout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalkit import SUITE_VERSION, __version__
from evalkit.errors import EndpointError, ScaleOutError, UsageError
from evalkit.probe.apis.base import default_auth, key_env
from evalkit.probe.apis.sampling import Sampling
from evalkit.probe.client.clients import CREDENTIAL_HEADERS, Target, ready_target
from evalkit.probe.client.cloudauth import CLOUD_AUTHS
from evalkit.probe.client.loopmonitor import frozen_heap
from evalkit.probe.load.shard import warm_up
from evalkit.probe.plan.prompts import load_prompts, prompt_provenance
from evalkit.probe.plan.prompttext import public_phases, run_text, text_meta
from evalkit.probe.plan.runplan import ProbePlan, plan_run
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.plan.workloads import workload_meta
from evalkit.probe.run.phases import SuiteRun
from evalkit.probe.wire.framing import SENDABLE
from evalkit.provenance import provenance, url_as_written
from evalkit.rundir.store import RunStore
from evalkit.rundir.writeup import RunEnd, now_iso, write_up
from evalkit.voice.records import VOICE_APIS

if TYPE_CHECKING:  # the analysis (pandas) loads after the connect gate's first stream
    from evalkit.analysis.summary import Summary
    from evalkit.probe.run.progress import ProgressArg


@dataclass(frozen=True)
class RunResult:
    """Where a run went and how it ended.

    `summary` is the typed reading of the summary.json the run wrote (None: none could
    be made): the caller reads its fields, and summary.json itself is the contract.
    """

    out_dir: Path
    status: str
    requests: int
    summary: Summary | None

    @property
    def validity(self) -> str:
        """valid | degraded | invalid; a run without a summary, or whose summary states no
        validity it knows, measured nothing a judgement may rest on (fail closed)."""
        status = self.summary.sections.validity.status if self.summary is not None else None
        return status if status in ("valid", "degraded") else "invalid"


def run_probe(config: ProbeConfig | ProbePlan, out_dir: Path, progress: ProgressArg = None
              ) -> RunResult:
    """Run the suite against `config.base_url`; write the run directory; return how it ended.

    `config` may be planned already (`plan_run`: what the CLI printed is then what runs).

    Raises EndpointError when the endpoint cannot be probed at all (unreachable, 401,
    unknown model) and UsageError for settings that do not fit; KeyboardInterrupt passes
    through after the run directory was completed with what was measured (SIGTERM, a
    scheduler's or `kill`'s stop, ends the run the same way as Ctrl-C).
    """
    with frozen_heap():  # no full collection walks the caller's heap mid-measurement
        if (voice := _voice_plan(config)) is not None:
            return _run_voice(voice, Path(out_dir),
                              progress if callable(progress) else None)
        with _terminate_as_interrupt():
            suite = _prepare(config, Path(out_dir), progress)
            with _recording(suite) as ended, _scaleout(suite.config, suite.store) as pool:
                suite.pool = pool
                _run_until_interrupted(suite)
            return ended.result()


def _voice_plan(config: ProbeConfig | ProbePlan) -> ProbePlan | None:
    """The plan of a voice run (`--api openai-realtime|gemini-live`), None for any other
    run."""
    if isinstance(config, ProbePlan):
        return config if config.voice is not None else None
    return plan_run(config) if config.api in VOICE_APIS else None


def _run_voice(planned: ProbePlan, out_dir: Path, say: Any) -> RunResult:
    """A voice run (`evalkit.probe.realtime.voicerun`), ended as the suite's are: Ctrl-C
    and SIGTERM end it as interrupted, its summary written from what was measured."""
    from evalkit.probe.realtime.voicerun import prepare_voice

    with _terminate_as_interrupt():
        run = prepare_voice(planned, out_dir, say)
        with _voice_ending(run):
            _run_until_interrupted(run)
        return RunResult(run.store.dir, run.status, run.turns.count, run.summary)


@contextlib.contextmanager
def _voice_ending(run: Any) -> Iterator[None]:
    """Whatever ends a voice run, its summary and run.json's end are written with what
    was measured; errors and interrupts then go on to the caller."""
    status, error = "crashed", None
    try:
        yield
        status = "complete"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    except EndpointError as exc:
        status, error = "failed", run.redact(str(exc))
        raise
    finally:
        try:
            run.finish(status, error)
        except KeyboardInterrupt:  # Ctrl-C while it was written up: finish it
            run.finish("interrupted", error)
            raise


class _Runs(Protocol):
    """What `_until_interrupted` runs: the suite, or a voice run."""

    interrupted: bool

    async def run(self) -> None: ...


#: the signals that end a run as interrupted, written up with what it measured
_STOPS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt for the run's whole span, the write-up included.

    Its default kills the process where it stands: run.json then said "running" forever
    and the summary was never written (a run read back as cut, but with nothing of what
    it measured summarised). Only the main thread may set a handler; elsewhere (a
    notebook's worker thread) the default stays.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_until_interrupted(suite: _Runs) -> None:
    """`suite.run()` on its own event loop; KeyboardInterrupt once it ended interrupted.

    Raised here, after the loop closed, not inside its task: a task that ends in
    KeyboardInterrupt leaves its exception unretrieved, and asyncio then printed "Task
    exception was never retrieved" and a traceback under the run's last words."""
    asyncio.run(_until_interrupted(suite))
    if suite.interrupted:
        raise KeyboardInterrupt


async def _until_interrupted(suite: _Runs) -> None:
    """`suite.run()`, ended by Ctrl-C (or SIGTERM) whatever it was awaiting at the time.

    asyncio.run turns SIGINT into one cancellation of the main task, and an await that
    swallows a cancellation (one racing a timeout, in our code or a library's) loses it:
    the run then went on to its end and exited 0 (seen on a loaded CI host). Here either
    signal also raises a flag that the phases and the ramp's workers read between
    requests, so the run stops and ends as interrupted either way.
    """
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    def on_stop() -> None:
        suite.interrupted = True
        if main is not None:
            main.cancel()

    previous = {s: signal.getsignal(s) for s in _STOPS}
    try:
        for s in _STOPS:
            loop.add_signal_handler(s, on_stop)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
        await suite.run()
        return
    try:
        await suite.run()
    except asyncio.CancelledError:
        if not suite.interrupted:
            raise  # (the caller raises KeyboardInterrupt for a stop: `_run_until_interrupted`)
    finally:
        for s in _STOPS:
            loop.remove_signal_handler(s)  # leaves SIG_DFL: hand back what was there
            if callable(previous[s]) or previous[s] in (signal.SIG_IGN, signal.SIG_DFL):
                signal.signal(s, previous[s])


async def arun_probe(config: ProbeConfig | ProbePlan, out_dir: Path,
                     progress: ProgressArg = None
                     ) -> RunResult:
    """`run_probe` on the caller's event loop (a notebook, an async service).

    Cancelling the task ends the run as `interrupted`, its directory completed with what
    was measured, like Ctrl-C does for `run_probe`. The write-up (summary, Parquet) is
    blocking work of about a second and runs on this loop's thread. The caller's heap is
    frozen while it measures, as `run_probe` freezes it: a notebook's is the heap that
    needs it most.
    """
    with frozen_heap():
        if (voice := _voice_plan(config)) is not None:
            from evalkit.probe.realtime.voicerun import prepare_voice

            run = prepare_voice(voice, Path(out_dir),
                                progress if callable(progress) else None)
            with _voice_ending(run):
                await run.run()
            return RunResult(run.store.dir, run.status, run.turns.count, run.summary)
        suite = _prepare(config, Path(out_dir), progress)
        with _recording(suite) as ended, _scaleout(suite.config, suite.store) as pool:
            suite.pool = pool
            await suite.run()
        return ended.result()


def _prepare(config: ProbeConfig | ProbePlan, out_dir: Path, progress: ProgressArg
             ) -> SuiteRun:
    """Everything before the first request: the plan (unless given), target, run.json
    'running'.

    Bad settings fail here, before the run directory exists.
    """
    planned = config if isinstance(config, ProbePlan) else plan_run(config)
    config, settings, plan = planned.config, planned.settings, planned.plan
    if not config.api_key_env:  # the API's own variable: no vendor is sent another's key
        config = replace(config, api_key_env=key_env(config.api, config.api_version))
    user_prompts = (load_prompts(config.prompts_file, settings.output_tokens)
                    if config.prompts_file else [])
    text = run_text(config)  # chosen by the plan: the buyer's corpus, else the public text
    # its adapter resolved here: an unknown --api is a usage error before anything starts
    target = Target(base_url=config.base_url, model=config.model, api=config.api,
                    headers=config.headers, extra_body=dict(config.extra_body),
                    timeout_s=settings.timeout_s, deadline_s=settings.deadline_s,
                    force_length=(settings.force_output_length if config.force_length is None
                                  else config.force_length),
                    user_agent=config.user_agent, tag_requests=config.tag_requests,
                    sampling=Sampling(temperature=config.temperature, seed=config.request_seed,
                                      logprobs=config.logprobs),
                    auth=config.auth or default_auth(config.api, config.api_version),
                    params=(("api-version", config.api_version),)
                    if config.api_version else ())
    # a cloud's signer authenticates (the AWS chain, Google's ADC): no key variable is
    # read, so another vendor's key set in the shell is neither checked nor carried
    key_read = target.auth_style not in CLOUD_AUTHS
    secret = os.environ.get(config.api_key_env) or None if key_read else None
    if secret is not None:
        sent = not any(k.lower() in CREDENTIAL_HEADERS for k, _ in config.headers)
        if sent and SENDABLE.fullmatch(secret) is None:  # Target's rule, said without it
            raise UsageError(f"${config.api_key_env} must be printable ASCII (no control "
                             "character, no accented letter or smart quote pasted with "
                             "it); its value is not shown")
        target = replace(target, secret=secret)
    # a cloud's credentials and region, and a model ARN of another region: usage errors
    # before anything starts (its signer, not the environment's key, authenticates)
    target = ready_target(target)
    run_tag = secrets.token_hex(3)
    origin_ns = time.perf_counter_ns()
    wall_ns = time.time_ns()  # beside the origin: places the records on the calendar (OTLP)
    meta = {
        "schema": "evalkit.run/1", "tool": "evalkit", "tool_version": __version__,
        "suite_version": SUITE_VERSION, "run_tag": run_tag,
        # every record carries it: one appended from another run is named as foreign
        "run_id": run_tag, "status": "running",
        "started_at": now_iso(), "ended_at": None,
        "clock": {"origin_ns": origin_ns, "wall_ns": wall_ns,
                  "source": "time.perf_counter_ns (CLOCK_MONOTONIC)",
                  "note": "t0_s in requests.jsonl are offsets from origin_ns"},
        "target": target.describe(), "api_key_env": config.api_key_env if key_read else None,
        "vendor": config.vendor,
        "stands_in_for": config.stands_in_for,
        "profile": config.profile, "settings": settings.to_dict(),
        "plan": None if plan is None else {
            **plan.to_dict(), "questionnaire": str(config.questionnaire)},
        "config": _config_for_file(config),
        "client": {"host": platform.node(), "python": platform.python_version(),
                   "platform": platform.platform(), "cpus": os.cpu_count(),
                   "ray": config.ray},
        "scaleout": None,
        "provenance": provenance(redact=target.redact, prompts=prompt_provenance(
            config.seed, config.prompts_file, text)),
        "workload": workload_meta(config),
        # where the run's own prompts came from: the corpus's digest and size, not its text
        "prompt_text": text_meta(text, public_phases(config, settings)),
    }
    if config.ray is not None:
        from evalkit.probe.load.scaleout import require_ray

        require_ray()  # a missing extra is a usage error before the run directory exists
    warm_up(metrics=False)  # pandas waits for the first phase after connect (load_metrics)
    store = RunStore(out_dir, meta)
    # a voice run's line-sayer has no display's methods: this run goes silent with it
    display = None if callable(progress) else progress
    return SuiteRun(config, settings, target, store, display, origin_ns, run_tag,
                    user_prompts, text)


class _Ended:
    """How the run ended, filled in by `_recording` as it leaves."""

    def __init__(self, suite: SuiteRun) -> None:
        self.suite = suite
        self.status = "crashed"
        self.error: str | None = None
        self.summary: Summary | None = None

    def result(self) -> RunResult:
        return RunResult(self.suite.store.dir, self.status, self.suite.store.count,
                         self.summary)


@contextlib.contextmanager
def _recording(suite: SuiteRun) -> Iterator[_Ended]:
    """Whatever ends the phases, complete the run directory with what was measured and
    say how it ended; errors and interrupts then go on to the caller."""
    ended = _Ended(suite)
    try:
        yield ended
        ended.status = "complete"
    except (KeyboardInterrupt, asyncio.CancelledError):
        ended.status = "interrupted"
        raise
    except EndpointError as exc:
        ended.status, ended.error = "failed", suite.target.redact(str(exc))
        raise
    except ScaleOutError as exc:
        ended.status, ended.error = "crashed", str(exc)
        raise
    finally:
        try:
            ended.summary = _finish(suite, ended.status, ended.error)
        except KeyboardInterrupt:
            # Ctrl-C while the run was being written up (the summary takes a second):
            # finish writing it up as interrupted, then stop, so run.json never says running
            ended.status = "interrupted"
            _finish(suite, ended.status, ended.error)
            raise
        finally:
            if suite.progress is not None:
                suite.progress.close()


def _finish(suite: SuiteRun, status: str, error: str | None) -> Summary | None:
    """Write the run up (`evalkit.rundir.writeup`): the records closed, the summary, the
    Parquet file, the final run.json with what the run's own checks measured; the
    summary comes back typed.

    Safe to call twice (a second call after an interrupted first rewrites the same files).
    """
    meta = suite.meta()
    return write_up(suite.store, RunEnd(
        status, error, summary_meta=meta, vendor=suite.vendor,
        run_meta={"client_checks": {"phases": meta["phases"], "levels": meta["levels"],
                                    "workload_levels": meta["workload_levels"]},
                  "connect": suite.connect_info, "rtt_samples_s": suite.rtt_samples,
                  # the canaries' settings, and why each ramp level that ran on for them
                  # stopped: the summary is re-derived with them
                  "canaries": meta["canaries"], "connections": suite.reuse.describe()}))


@contextlib.contextmanager
def _scaleout(config: ProbeConfig, store: RunStore) -> Iterator[Any]:
    """The Ray actors for the run's levels (None: every level runs in this process).

    They die with this process whatever ends it: Ray ends a job's non-detached actors
    when its driver goes, and a local instance (`auto`) stops with its driver.
    """
    if config.ray is None:
        yield None
        return
    from evalkit.probe.load.scaleout import RayPool

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
    """The config as run.json may show it: header values and the metrics URL's query
    values are never written; the workload
    and trace are run.json's `workload` (described, not copied), the prompt text its
    `prompt_text` (the corpus's digest and size)."""
    # the prompt text is never written: run.json's `prompt_text` names it by its digest
    d = asdict(replace(config, workload=None, trace=None, prompt_text=None))
    del d["prompt_text"]
    for name in ("workload_file", "conversations_file", "trace_file"):
        d[name] = str(d[name]) if d[name] else None
    d["headers"] = [k for k, _ in config.headers]
    # a metrics page's token rides in its query (the scraper sends no header)
    d["metrics_url"] = url_as_written(config.metrics_url) if config.metrics_url else None
    d["prompts_file"] = str(config.prompts_file) if config.prompts_file else None
    d["corpus_dir"] = str(config.corpus_dir) if config.corpus_dir else None
    return d
