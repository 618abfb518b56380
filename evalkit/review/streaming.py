"""What makes a claim a streaming capacity at all, and what makes a first chunk a
placeholder: the rules of issue 24 that stop a vendor gaming the verdict with figures no
streaming product could use (a tiny rate, one stream) or with a reasoning chunk sent at
once to set TTFT. No I/O.
"""

from __future__ import annotations

from dataclasses import replace

from evalkit.analysis.summary import Level
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import fmt_s, number
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.review.rules import Judgement


def use_case_floors(tol: Tolerances) -> dict[str, float]:
    """The per-stream rate each streaming use case needs, in tokens/s: 1 / its TPOT limit,
    1 / its longest tolerated gap, reading speed where it asks for it. A stream slower than
    a profile's floor cannot meet that profile whatever its latency; batch sets none."""
    floors: dict[str, float] = {}
    for profile in tol.slo_profiles.values():
        if profile.throughput_only:
            continue
        need = [1 / s for s in (profile.tpot_p90_s, profile.itl_p99_s) if s]
        if profile.above_reading_speed:
            need.append(tol.reading_speed_tokens_per_s)
        if need:
            floors[profile.label] = max(need)
    return floors


def tiny_rate(per_stream: float, tol: Tolerances) -> str | None:
    """Why a claimed per-stream rate is no streaming capacity (None: it is one). Under the
    one-sided rule an under-promise always holds, so without this a claim of 0.001 tokens/s
    would be `ok`: a rate below reading speed, or below every use case's floor, serves no
    stream a reader or a voice agent can use."""
    reading = tol.reading_speed_tokens_per_s
    if per_stream < reading:
        return (f"{_rate(per_stream)} per stream is below reading speed "
                f"({number(reading)} tokens/s, reading_speed_tokens_per_s), so it is not a "
                "streaming capacity")
    floors = use_case_floors(tol)
    if floors and all(per_stream < f for f in floors.values()):
        return (f"{_rate(per_stream)} per stream is below what every streaming use case "
                f"needs (the least: {fmt_rate(min(floors.values()))}), so it is not a "
                "streaming capacity")
    return None


def _rate(x: float) -> str:
    """A claimed rate, however small (`fmt_tokens_per_s` would round 0.001 to 0.0)."""
    return fmt_rate(x) if x >= 1 else f"{number(x)} tokens/s"


def _dur(s: float) -> str:
    """A duration down to a tenth of a millisecond (`fmt_s` rounds 0.4 ms to 0)."""
    return f"{s * 1000:.1f} ms" if s < 0.01 else fmt_s(s)


def one_stream(per_node: int) -> str | None:
    """Why a concurrency limit is no streaming capacity: one stream per node is serial
    service, whatever the ramp says about it."""
    if per_node <= 1:
        return (f"a limit of {per_node} stream per node serves requests one at a time, so it "
                "is not a concurrent streaming capacity")
    return None


def with_gap(j: Judgement, why: str | None) -> Judgement:
    """`j` with the finding `gap` and why, when there is a why: the status stands (an
    honest answer may hold), but a gap never counts toward streaming-ready."""
    if why is None:
        return j
    reason = j.reason.rstrip(".")
    return replace(j, finding="gap", reason=f"{reason}; a gap: {why}.")


def placeholder(level: Level, tol: Tolerances) -> str | None:
    """Why the level's first chunk looks like a placeholder (None: it does not): reasoning
    came first, the median first chunk arrived within `placeholder_lead_s` of sending (no
    engine prefills a prompt that fast), and the answer then waited at least
    `placeholder_silence_s` in silence (the longest in-stream gap, where recorded, is that
    long too: a real reasoning stream keeps sending)."""
    ttft, ttfa = level.ttft_s.p50, level.ttfa_s.p50
    if not level.reasoning_came_first or ttft is None or ttfa is None:
        return None
    wait = ttfa - ttft
    silent = level.max_gap_s is None or level.max_gap_s >= tol.placeholder_silence_s
    if ttft > tol.placeholder_lead_s or wait < tol.placeholder_silence_s or not silent:
        return None
    gap = f", the longest gap {_dur(level.max_gap_s)}" if level.max_gap_s is not None else ""
    return (f"at {level.concurrency} stream{'s' if level.concurrency != 1 else ''} a reasoning "
            f"chunk came {_dur(ttft)} after sending (TTFT p50), too soon to have read the "
            f"prompt, and the answer {_dur(wait)} later (TTFA p50 {_dur(ttfa)}{gap}): a "
            "placeholder that sets TTFT, so latency is judged on TTFA")
