"""The client's self-check: was evalkit, not the vendor, the bottleneck?

A capacity figure measured by a client that could not keep up describes the client. Each
phase and ramp level is therefore watched through a window over the event loop's lag,
the process's CPU, the prober's own send lag and the share of chunks read late enough to
merge with the next one; `judge_client` turns a window into "client-bound" or not, by
the limits of the profile (`tolerances.ClientLimits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from evalkit.analysis.thresholds import ClientLimits
from evalkit.probe.client.loopmonitor import LoopMonitor


class Counted(Protocol):
    """What a window reads of the prober (`evalkit.probe.client.stream.Prober`): its
    counters and its send lag since a mark. Named here, so the judge of the client sits
    below the stream it watches and the load shapes can use both."""

    @property
    def content_chunks(self) -> int: ...
    @property
    def coalesced_chunks(self) -> int: ...
    @property
    def paused_s(self) -> float: ...
    @property
    def sends(self) -> int: ...
    def send_check(self, since: int = 0) -> dict[str, Any]: ...


#: What `window_start` marks: the loop's window and the prober's counters at the start.
Mark = tuple[Any, int, int, float, int]


def window_start(mon: LoopMonitor, prober: Counted) -> Mark:
    """Begin a self-check window over the loop and the prober's chunk counters."""
    return (mon.start_window(), prober.content_chunks, prober.coalesced_chunks,
            prober.paused_s, prober.sends)


def window_end(mon: LoopMonitor, prober: Counted, mark: Mark) -> dict[str, Any]:
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


def judge_client(check: dict[str, Any], limits: ClientLimits) -> dict[str, Any]:
    """Was the client the bottleneck? Then no capacity conclusion may be drawn.

    Bound when the client's CPU is saturated (it set the pace), when its event loop lags
    so much that closed-loop workers send late, when its own send lag held back more than
    a small share of the load it was to offer (judged when the limits name a share), or
    when more than a small share of chunks were read late enough to merge with the next
    one (their stamps would be late).
    """
    lag, cpu = check.get("loop_lag_p99_s"), check.get("cpu_fraction")
    held = check.get("send_lag_fraction")
    merged = check.get("coalesced_fraction")
    # A share needs a count behind it: one merged read among a short phase's 30 chunks is
    # two server writes closer together than a read, not a client falling behind.
    enough = int(check.get("coalesced_chunks") or 0) >= limits.coalesced_min
    reasons = [why for why, hit in (
        ("cpu", cpu is not None and cpu > limits.cpu_fraction),
        ("loop_lag", lag is not None and lag > limits.loop_lag_p99_s),
        ("send_lag", held is not None and limits.send_lag_fraction is not None
         and held > limits.send_lag_fraction),
        ("late_reads", enough and merged is not None and merged > limits.coalesced_fraction),
    ) if hit]
    return {**check, "client_bound": bool(reasons), "client_bound_reasons": reasons}


def merge_checks(checks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One check for a level shared by several workers: the worst of each figure, bound
    when any worker was."""
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
