"""Scale-out on Ray over real HTTP against the reference endpoint, checked against its truth
log: a local instance, a simulated two-node cluster, a killed actor, a killed driver.

Ray takes seconds to start, so each test starts it once and runs only what it checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# before Ray is imported: every Ray port on loopback, no usage report
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
ray = pytest.importorskip("ray")

from evalkit.probe.plan.settings import ProbeConfig  # noqa: E402
from evalkit.probe.suite import run_probe  # noqa: E402
from evalkit.records import RequestRecord  # noqa: E402
from evalkit.rundir.run import open_run  # noqa: E402
from evalkit.rundir.store import read_run_files  # noqa: E402

#: two short levels after a short baseline
SHORT: dict[str, Any] = {"output_tokens": 12, "baseline": {"requests": 2},
                         "ramp": {"level_duration_s": 1.5}, "connect": {"rtt_samples": 3}}


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _errors(records: list[RequestRecord], origin_ns: int, truth: dict[str, Any]
            ) -> tuple[list[float], list[float]]:
    """Per chunk, our arrival on the driver's timeline minus the server's write (ms); per
    request, our TPOT minus the one the server's writes give (ms)."""
    chunk_err: list[float] = []
    tpot_err: list[float] = []
    for r in records:
        assert r.outcome == "ok", r.error
        writes = [w for w in truth[r.id]["writes"] if w[3] == "content"]
        t0_ns = origin_ns + r.t0_s * 1e9
        chunk_err += [(t0_ns + off * 1e9 - w[0]) / 1e6
                      for (off, _), w in zip(r.chunks, writes, strict=True)]
        if r.ttft_s is not None and r.e2e_s is not None and len(writes) > 1:
            ours = (r.e2e_s - r.ttft_s) / (len(writes) - 1)
            theirs = (writes[-1][0] - writes[0][0]) / 1e9 / (len(writes) - 1)
            tpot_err.append((ours - theirs) * 1e3)
    return chunk_err, tpot_err


def _within_truth_accuracy(chunk_err: list[float], tpot_err: list[float]) -> None:
    # the prober's own bounds (tests/probe/client/test_stream.py): |error| p50 2 ms,
    # lateness p99 10 ms
    assert _pct([abs(e) for e in chunk_err], 0.5) <= 2.0, sorted(chunk_err)[-10:]
    assert _pct(chunk_err, 0.99) <= 10.0, sorted(chunk_err)[-10:]
    assert _pct([abs(e) for e in tpot_err], 0.5) <= 1.0, sorted(tpot_err)


def _clock_checks(meta: dict[str, Any], level: str) -> list[dict[str, Any]]:
    workers = meta["client_checks"]["levels"][level]["workers"]
    for w in workers:
        clock = w["clock"]
        # one machine shares CLOCK_MONOTONIC: the true offset is 0, so the measured one
        # must be within its stated uncertainty (plus the round trip's own jitter)
        assert abs(clock["offset_ns"]) <= clock["uncertainty_ns"] + 1_000_000, clock
        assert 0 < clock["uncertainty_ns"] < 50_000_000, clock
    return list(workers)


@pytest.mark.slow
def test_two_workers_measure_what_one_process_does(reference: Any, private_corpus: Path,
                                                   tmp_path: Path) -> None:
    """`--ray auto` with 2 workers: TTFT and TPOT as accurate against the truth log as one
    process, both actors at every level, each actor's clock offset and uncertainty kept;
    and the actors cut their prompts from the buyer's corpus, as the driver does (the
    endpoint spots evalkit's public text, as a vendor that read our source would)."""
    srv = reference("gpu", spot_probes=True)
    runs = {}
    for name, ray_address in (("one", None), ("ray", "auto")):
        res = run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                                    phases=("baseline", "ramp"),
                                    levels=(4, 8), ray=ray_address,
                                    ray_workers=2 if ray_address else None, overrides=SHORT,
                                    corpus_dir=private_corpus),
                        tmp_path / name)
        assert res.status == "complete" and res.validity == "valid", res.summary
        runs[name] = read_run_files(tmp_path / name)
        # one timeline: the steady-state window holds the level's concurrency
        level8 = next(lv for lv in res.summary["ramp"]["levels"] if lv["concurrency"] == 8)
        assert level8["steady_state"]["max_inflight"] == 8, (name, level8["steady_state"])
    truth = {t["request_id"]: t for t in srv.truth()}
    for name, (meta, records) in runs.items():
        ramp = [r for r in records if r.phase == "ramp"]
        _within_truth_accuracy(*_errors(ramp, meta["clock"]["origin_ns"], truth))
        # --tag-requests' X-Request-ID is a mark; evalkit's own text must not be one
        text_marks = [(r.shard, truth[r.id].get("spotted")) for r in ramp
                      if {"public-text", "task-text"} & set(truth[r.id].get("spotted") or ())]
        assert not text_marks, (name, text_marks[:4])
        assert meta["prompt_text"]["source"] == "corpus", meta["prompt_text"]
        if name == "ray":
            assert {r.shard for r in ramp if r.level == 8} == {0, 1}
            # every actor's records carry the run's id, and all are evidence of it
            assert {r.run_id for r in records} == {meta["run_id"]}
            evidence = open_run(tmp_path / name).evidence
            assert evidence is not None and evidence.total == 0, evidence.to_json()
            assert meta["scaleout"]["address"] == "auto"
            assert len(meta["scaleout"]["workers"]) == 2
            assert [w["records"] for w in _clock_checks(meta, "8")] == [
                sum(r.level == 8 and r.shard == i for r in ramp) for i in (0, 1)]
            # the server had both actors' streams at once: 8 in flight at level 8
            spans = [(truth[r.id]["received_ns"], truth[r.id]["end_ns"]) for r in ramp
                     if r.level == 8]
            assert max(sum(a <= s < b for a, b in spans) for s, _ in spans) == 8


@pytest.mark.slow
def test_a_level_split_over_two_nodes(reference: Any, tmp_path: Path) -> None:
    """A simulated two-node cluster (ray.cluster_utils.Cluster): one actor per node, the
    level's streams split over both, the merged summary as the truth log has it."""
    from ray.cluster_utils import Cluster

    srv = reference("gpu")
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        res = run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                                    phases=("ramp",), levels=(6,),
                                    ray=cluster.address, overrides=SHORT), tmp_path / "run")
    finally:
        cluster.shutdown()
    assert res.status == "complete" and res.summary is not None
    meta, records = read_run_files(tmp_path / "run")
    assert meta["scaleout"]["nodes"] == 2
    workers = _clock_checks(meta, "6")
    assert len({meta["scaleout"]["workers"][w["worker"]]["node_id"] for w in workers}) == 2
    assert {r.shard for r in records} == {0, 1}
    truth = {t["request_id"]: t for t in srv.truth()}
    _within_truth_accuracy(*_errors(records, meta["clock"]["origin_ns"], truth))
    # the merged level's figures are the truth log's: same requests, tokens and TTFT
    level = res.summary["ramp"]["levels"][0]
    assert level["requests"] == len(records) == len(truth)
    # the summary's TTFT p50 against the truth log's: the first write on the server, from
    # each request's t0 put on the driver's timeline
    theirs = sorted((truth[r.id]["first_write_ns"] - meta["clock"]["origin_ns"]) / 1e9 - r.t0_s
                    for r in records)
    # the same percentile rule on both sides (numpy's linear interpolation): with an even
    # count and a level's first wave far from its later requests, the upper middle value
    # alone can sit tens of ms from the p50
    assert level["ttft_s"]["p50"] == pytest.approx(float(np.percentile(theirs, 50)), abs=0.005)
    assert level["steady_state"]["max_inflight"] == 6
    assert sum(r.output_tokens or 0 for r in records) == sum(
        t["completion_tokens"] for t in truth.values())


def _probe_cmd(srv: Any, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "evalkit.cli", "probe", "--base-url", srv.base_url,
            "--model", srv.model, "--out", str(out), "--phases", "ramp", "--output-tokens",
            "16", "--quiet", "--ray", "auto", "--ray-workers", "2", *extra]


def _wait_for(what: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def _worker_pids(out: Path) -> list[int]:
    try:
        meta = json.loads((out / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return [w["pid"] for w in (meta.get("scaleout") or {}).get("workers") or []]


def _records(out: Path) -> list[dict[str, Any]]:
    path = out / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.endswith("}")]


@pytest.mark.slow
def test_a_killed_actor_keeps_the_others_records(reference: Any, tmp_path: Path) -> None:
    """SIGKILL one actor mid-level: the other's records and the dead one's completed ones
    are kept, the level and the run say what was lost, the next level runs on one actor."""
    srv = reference("gpu")
    out = tmp_path / "run"
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"extends": "quick", "ramp": {"level_duration_s": 4.0}}))
    proc = subprocess.Popen(_probe_cmd(srv, out, "--levels", "4,8", "--profile", str(profile)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = _wait_for(lambda: _worker_pids(out))
    _wait_for(lambda: sum(r["shard"] == 1 for r in _records(out)) >= 2)
    os.kill(pids[1], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    meta, records = read_run_files(out)
    summary = json.loads((out / "summary.json").read_text())
    level4 = meta["client_checks"]["levels"]["4"]
    assert len(level4["lost"]) == 1 and "worker 1" in level4["lost"][0]
    kept = next(w for w in level4["workers"] if w["worker"] == 1)["records"]
    assert kept >= 2 and sum(r.level == 4 and r.shard == 1 for r in records) == kept
    assert sum(r.level == 4 and r.shard == 0 for r in records) >= 2
    # the level is degraded, names the loss, and supports no capacity conclusion
    validity = summary["validity"]
    assert validity["levels"]["4"]["status"] == "degraded"
    assert any("worker 1" in why for why in validity["levels"]["4"]["reasons"])
    assert validity["status"] == "degraded" and any(
        "a client worker was lost" in why for why in validity["reasons"])
    assert summary["ramp"]["levels"][0]["status"] == "client_bound"
    assert meta["scaleout"]["lost"] == level4["lost"]
    # the ramp went on without it: level 8 on the one actor left, all 8 streams
    assert {r.shard for r in records if r.level == 8} <= {0}


@pytest.mark.slow
def test_a_killed_driver_leaves_no_load(reference: Any, tmp_path: Path) -> None:
    """SIGKILL the driver mid-level: Ray ends its actors with it, so the endpoint stops
    receiving requests within seconds and no actor process is left."""
    srv = reference("gpu")
    out = tmp_path / "run"
    proc = subprocess.Popen(_probe_cmd(srv, out, "--levels", "8", "--profile", "standard"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = _wait_for(lambda: _worker_pids(out))
    _wait_for(lambda: len(_records(out)) >= 8)
    proc.kill()
    proc.wait()
    killed_ns = time.perf_counter_ns()
    _wait_for(lambda: not any(_alive(pid) for pid in pids), timeout=30)
    time.sleep(2.0)
    late = [t for t in srv.truth() if t["received_ns"] > killed_ns + 2e9]
    assert late == [], f"{len(late)} requests reached the endpoint after the driver died"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie no longer runs
        return fh.read().split(") ")[-1][:1] != "Z"
