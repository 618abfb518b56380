"""Scale-out on Ray: the suite's load levels split over actors that run the ordinary prober.

`evalkit probe --ray auto` starts a private local Ray instance (one actor per CPU: several
processes on one machine); `--ray ADDRESS` joins a running cluster (`ray://head:10001`, or
the GCS address `head:6379` from inside it). Ray is the optional extra `evalkit[ray]`,
imported only here and only when asked for.

    driver (evalkit probe)                       actor i (ProbeWorker, one per CPU)
    ───────────────────────                      ──────────────────────────────────
    connect, baseline, prefill, cache            (idle: concurrency-1 phases stay here)
    per level: clock round trips  ───────────►   clock()  perf_counter_ns
               ShardTask(origin, start + off_i)► run(task): the prober in its own
               append each record batch   ◄───   asyncio loop; record batches every
               to requests.jsonl as it comes      FLUSH_S, then its self-check

Clocks: every latency is a difference on one actor's monotonic clock, so it needs no
alignment. The steady-state window and aggregate throughput put every actor's requests
on one timeline, the driver's: before each level the driver reads each actor's
`perf_counter_ns` in round trips and takes the one with the shortest round trip
(offset = actor − midpoint, uncertainty = half that round trip, as NTP does). The actor's
`ShardTask.origin_ns` and `start_at_ns` are the driver's translated by that offset, so
its records' `t0_s` come back on the driver's clock. Offsets and uncertainties are kept
per worker and level in run.json.

Lifetime: actors are not detached, so Ray ends them with the driver's job: a driver that
is killed (even SIGKILL) leaves no actor sending load. Ctrl-C asks every actor to stop
(in-flight requests are cancelled, as in one process), takes the records they completed,
then kills them. A lost actor or node ends that actor's part of the level: every record it
had sent back is kept, the level is marked with what was lost (`lost` in its check:
degraded, and no capacity conclusion from it) and later levels run on the actors left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit import __version__
from evalkit.errors import ScaleOutError, UsageError
from evalkit.records import RequestRecord

#: how often an actor sends back the records completed since its last batch (s)
FLUSH_S = 0.05
#: clock round trips per actor before each level (the shortest one is used)
CLOCK_SAMPLES = 8
#: how long actors may take to start (a cold node imports pandas-free evalkit in ~2 s)
START_TIMEOUT_S = 120.0
#: after Ctrl-C, how long actors have to send back what they completed
STOP_TIMEOUT_S = 5.0
INSTALL_HINT = "pip install 'evalkit[ray]'"


def require_ray() -> None:
    """A UsageError naming the install command when Ray is missing (nothing is imported)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise UsageError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}")


def import_ray() -> Any:
    """Ray, or a UsageError naming the install command."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # never phone home
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


# --------------------------------------------------------------------------- the actor

_DONE = object()


class ProbeWorker:
    """One Ray actor: runs `ShardTask`s with the ordinary prober and streams records back.

    The prober runs in its own thread with its own `asyncio.run`, exactly as in one
    process; the actor's other threads answer `clock` and `stop` meanwhile.
    """

    def __init__(self, driver_host: str | None = None, driver_pid: int | None = None) -> None:
        from evalkit.probe.load.shard import warm_up

        warm_up(metrics=False)  # the tokenizer loads now, not inside a timed level
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        if driver_pid is not None and driver_host == platform.node():
            threading.Thread(target=self._watch, args=(driver_pid,), daemon=True,
                             name="evalkit-driver-watch").start()

    @staticmethod
    def _watch(driver_pid: int) -> None:
        """On the driver's own machine, end this actor the moment the driver is gone.

        Ray ends a non-detached actor when its driver's job dies, but only once its
        control plane notices (seconds on a busy machine, with requests still going
        out meanwhile); a vendor must not receive load from a probe nobody runs.
        """
        while True:
            time.sleep(0.1)
            try:
                os.kill(driver_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                continue

    def hello(self) -> dict[str, Any]:
        """Who and where this actor is."""
        import ray

        return {"host": platform.node(), "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(),
                "evalkit": __version__, "python": platform.python_version(),
                "cpus": os.cpu_count()}

    def clock(self) -> int:
        """This process's monotonic clock, for the driver's offset round trips."""
        return time.perf_counter_ns()

    def run(self, task: Any) -> Iterator[tuple[str, Any]]:
        """Run one shard of a level; yield ("records", [...]) batches, then ("end", {...})."""
        from evalkit.probe.load.shard import shard_level

        done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        end: dict[str, Any] = {}

        def body() -> None:
            async def main() -> Any:
                self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
                return await shard_level(task, done.put)

            try:
                result = asyncio.run(main())
                end.update(check=result.check, late_start_s=result.late_start_s,
                           fresh=result.fresh)
            except asyncio.CancelledError:
                end["stopped"] = True
            except BaseException as exc:  # a bug in the actor: the driver says so
                end["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                self._loop = self._task = None
                done.put(_DONE)

        thread = threading.Thread(target=body, name="evalkit-prober", daemon=True)
        thread.start()
        batch: list[RequestRecord] = []
        last = time.monotonic()
        finished = False
        while not finished:
            try:
                item = done.get(timeout=FLUSH_S)
            except queue.Empty:
                item = None
            if item is _DONE:
                finished = True
            elif item is not None:
                batch.append(item)
            if batch and (finished or time.monotonic() - last >= FLUSH_S):
                yield "records", batch
                batch, last = [], time.monotonic()
        thread.join()
        yield "end", end

    def stop(self) -> None:
        """Cancel the level in progress (its completed records still come back)."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)


# --------------------------------------------------------------------------- the driver

@dataclass
class Worker:
    """The driver's view of one actor."""

    index: int
    handle: Any
    info: dict[str, Any]
    lost: str | None = None

    def describe(self) -> str:
        return f"worker {self.index} (host {self.info.get('host')}, pid {self.info.get('pid')})"


class RayPool:
    """The actors of one run and the Ray instance they live in."""

    def __init__(self, address: str, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise UsageError("--ray-workers must be at least 1")
        self.address, self.wanted = address, workers
        self.ray: Any = None
        self.workers: list[Worker] = []
        self.info: dict[str, Any] = {}

    # -- lifetime
    def start(self) -> dict[str, Any]:
        """Start (or join) Ray and one actor per worker; return what run.json keeps."""
        if self.address == "auto":
            # a private instance: every Ray port on loopback (no other machine joins it)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray = self.ray = import_ray()
        init: dict[str, Any] = {"include_dashboard": False, "logging_level": "warning",
                                "configure_logging": True}
        try:
            if self.address == "auto":
                ray.init(address="local", **init)
            else:
                ray.init(address=self.address, **init)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ScaleOutError(f"--ray {self.address}: cannot start or join Ray: {exc}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n = self.wanted or max(cpus, 1)
        actor = ray.remote(ProbeWorker).options(
            num_cpus=min(1.0, cpus / n), max_concurrency=4, scheduling_strategy="SPREAD")
        handles = [actor.remote(platform.node(), os.getpid()) for _ in range(n)]
        refs = [h.hello.remote() for h in handles]
        ready, _ = ray.wait(refs, num_returns=n, timeout=START_TIMEOUT_S)
        if len(ready) < n:
            self.close()
            raise ScaleOutError(f"only {len(ready)} of {n} Ray workers started within "
                                f"{START_TIMEOUT_S:g} s (the cluster has {cpus} CPUs; "
                                "--ray-workers sets how many)")
        try:
            infos = ray.get(refs)
        except ray.exceptions.RayError as exc:
            self.close()
            raise ScaleOutError(f"a Ray worker failed to start (is evalkit installed on every "
                                f"node? {INSTALL_HINT}): {exc}") from None
        stale = {i["host"]: i["evalkit"] for i in infos if i["evalkit"] != __version__}
        if stale:
            self.close()
            raise ScaleOutError(f"Ray workers run another evalkit than this driver "
                                f"({__version__}): {stale}; install the same version on "
                                "every node")
        self.workers = [Worker(i, h, info) for i, (h, info) in
                        enumerate(zip(handles, infos, strict=True))]
        self.info = {"backend": "ray", "address": self.address,
                     "ray_version": ray.__version__, "cluster_cpus": cpus,
                     "nodes": len({i["node_id"] for i in infos}),
                     "workers": [{"worker": w.index, **w.info} for w in self.workers]}
        return self.info

    def close(self) -> None:
        """Kill the actors and leave Ray (a local instance stops with it)."""
        if self.ray is None:
            return
        for w in self.workers:
            with contextlib.suppress(Exception):
                self.ray.kill(w.handle)
        with contextlib.suppress(Exception):
            self.ray.shutdown()
        self.ray = None

    def __enter__(self) -> RayPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.lost is None]

    # -- clocks
    async def offsets(self, workers: Sequence[Worker]) -> dict[int, dict[str, int]]:
        """Each worker's clock minus the driver's (ns), from the shortest of its round trips."""
        out: dict[int, dict[str, int]] = {}
        for w in workers:
            best: tuple[int, int] | None = None  # (round trip, offset)
            try:
                for _ in range(CLOCK_SAMPLES):
                    t1 = time.perf_counter_ns()
                    remote = await w.handle.clock.remote()
                    t2 = time.perf_counter_ns()
                    if best is None or t2 - t1 < best[0]:
                        best = (t2 - t1, remote - (t1 + t2) // 2)
            except self.ray.exceptions.RayError as exc:
                w.lost = f"{w.describe()} was lost before the level began: {_first_line(exc)}"
                continue
            assert best is not None
            out[w.index] = {"offset_ns": best[1], "uncertainty_ns": best[0] // 2,
                            "rtt_ns": best[0]}
        return out

    # -- a level
    async def run_level(self, make_task: Callable[[int, int, int, int], Any],
                        on_record: Callable[[RequestRecord], None], level: int
                        ) -> tuple[list[dict[str, Any]], list[str]]:
        """Run one level on every live actor at once; hand each record to `on_record` as it
        arrives. Returns each worker's end report and what was lost."""
        lost: list[str] = []
        workers = self.alive
        clocks = await self.offsets(workers)
        lost += [w.lost for w in workers if w.lost]
        workers = [w for w in workers if w.lost is None]
        if not workers:
            raise ScaleOutError("every Ray worker was lost: " + "; ".join(lost))
        n = len(workers)
        # every actor starts at one moment on the driver's clock, once each has opened its
        # connections (the prober opens one per stream first)
        start_ns = time.perf_counter_ns() + 300_000_000 + level * 2_000_000
        begin = time.perf_counter()
        reports: list[dict[str, Any]] = []

        async def consume(pos: int, w: Worker) -> None:
            off = clocks[w.index]["offset_ns"]
            task = make_task(pos, n, off, start_ns + off)
            report: dict[str, Any] = {"worker": w.index, "shard": pos, "host": w.info["host"],
                                      "clock": clocks[w.index], "records": 0}
            reports.append(report)
            try:
                async for ref in w.handle.run.options(num_returns="streaming").remote(task):
                    kind, payload = await ref
                    if kind == "records":
                        for rec in payload:
                            on_record(rec)
                        report["records"] += len(payload)
                    else:
                        report.update(payload)
            except self.ray.exceptions.RayError as exc:
                w.lost = (f"{w.describe()} was lost {time.perf_counter() - begin:.1f} s into "
                          f"the level ({_first_line(exc)}); its {report['records']} completed "
                          "records are kept, the requests it had in flight are not")
                report["lost"] = w.lost
                lost.append(w.lost)
                return
            if "error" in report:
                w.lost = f"{w.describe()} failed: {report['error']}"
                report["lost"] = w.lost
                lost.append(w.lost)

        tasks = [asyncio.ensure_future(consume(pos, w)) for pos, w in enumerate(workers)]
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            # Ctrl-C: stop every actor, keep what each sends back, then let the run end
            for w in workers:
                with contextlib.suppress(Exception):
                    w.handle.stop.remote()
            await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for t in tasks:
                t.cancel()
            raise
        for t in tasks:
            t.result()  # a bug in the driver's own handling shows its traceback
        return sorted(reports, key=lambda r: r["worker"]), lost


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
