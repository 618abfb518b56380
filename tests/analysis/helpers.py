"""Request records built to order, shared by the analysis tests (from the former
tests/test_metrics.py)."""

from __future__ import annotations

from evalkit.records import RequestRecord


def stream(rid: str, phase: str = "baseline", level: int | None = 1, *, t0: float = 0.0,
           ttft: float = 0.1, gap: float = 0.02, n: int = 10, tpc: int = 1,
           outcome: str = "ok", usage: int | None = -1, counted: int | None = -1,
           **kw: object) -> RequestRecord:
    """One streamed request: n chunks of tpc tokens, the first at ttft, then every gap s."""
    chunks = [(ttft + i * gap, tpc) for i in range(n)]
    tokens = n * tpc
    usage = tokens if usage == -1 else usage
    counted = tokens if counted == -1 else counted
    fields: dict[str, object] = {
        "ttft_s": chunks[0][0] if chunks else None,
        "e2e_s": chunks[-1][0] if chunks else None,
        "output_tokens": usage if usage is not None else counted,
        "output_tokens_estimated": usage is None,
        "usage_completion_tokens": usage,
        "counted_output_tokens": counted,
        "finish_reason": "length" if outcome == "ok" else None,
    }
    fields.update(kw)
    return RequestRecord(id=rid, phase=phase, level=level, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=t0, chunks=chunks, **fields)  # type: ignore[arg-type]


def failed(rid: str, outcome: str, phase: str = "baseline", level: int | None = 1,
           t0: float = 0.0, status: int | None = None) -> RequestRecord:
    """A request that delivered no content at all."""
    return RequestRecord(id=rid, phase=phase, level=level, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=t0, http_status=status)


def closed_loop(phase: str, level: int, per_worker: int, *, ttft: float = 0.1,
                gap: float = 0.02, n: int = 10, tpc: int = 1, stagger: float | None = None,
                t_start: float = 0.0) -> list[RequestRecord]:
    """`level` workers, each sending the next request the moment the last one ends."""
    e2e = ttft + (n - 1) * gap
    stagger = e2e / level if stagger is None else stagger
    out = []
    for w in range(level):
        t = t_start + w * stagger
        for k in range(per_worker):
            out.append(stream(f"{phase}-{level}-{w}-{k}", phase, level, t0=t, ttft=ttft,
                              gap=gap, n=n, tpc=tpc))
            t += e2e
    return out


def _level(c: int, ttft_p90: float | None, tpot_p90: float | None, admission: float = 0.0,
           requests: int = 100) -> dict:
    ok = round(requests * (1 - admission))
    return {"concurrency": c, "requests": requests,
            "outcomes": {"ok": ok, "rejected": requests - ok},
            "ttft_s": {"p90": ttft_p90}, "tpot_s": {"p90": tpot_p90},
            "admission_failure_rate": admission, "failure_rate": 1 - ok / requests}


BASE = {"ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
