"""Write the synthetic run directory the report tests render (deterministic; re-run to refresh).

The records are built, not measured, so tests can assert exact figures: baseline TTFT
200 ms and 20 ms per token; TTFT grows with concurrency and breaches 2x baseline at 16
streams (one request of 64 is turned away there too, a smaller excess), so max sustained
concurrency is 8 and TTFT degrades first. summary.json is derived from the records by
`evalkit.analysis.summarize.summarize`, never written by hand; tests/render/test_report.py checks
that the files on disk are what this script writes.
Usage: .venv/bin/python tests/data/make_report_fixture.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord

OUT = Path(__file__).resolve().parent / "report_run"
LEVELS = (1, 2, 4, 8, 16)
TTFT_P50 = {1: 0.200, 2: 0.210, 4: 0.230, 8: 0.300, 16: 1.200}
GAP = {1: 0.020, 2: 0.021, 4: 0.023, 8: 0.026, 16: 0.031}
TOKENS = 24
#: the run's id, carried by run.json and every record (a run tag: six hex digits)
RUN_ID = "f1c7e0"


def _stream(rid: str, phase: str, level: int, t0: float, ttft: float, gaps: list[float],
            prompt_id: str | None = None, requested: int = TOKENS) -> RequestRecord:
    arrivals = [ttft]
    for gap in gaps:
        arrivals.append(arrivals[-1] + gap)
    return RequestRecord(
        id=rid, phase=phase, level=level, outcome="ok", t0_s=round(t0, 6), prompt_tokens=512,
        requested_output_tokens=requested, output_tokens=len(arrivals),
        output_tokens_estimated=False, usage_completion_tokens=len(arrivals),
        counted_output_tokens=len(arrivals), ttft_s=round(ttft, 6),
        e2e_s=round(arrivals[-1], 6), chunks=[(round(a, 6), 1) for a in arrivals],
        http_status=200, finish_reason="length", end_s=round(arrivals[-1], 6),
        prompt_id=prompt_id, run_id=RUN_ID)


def records() -> list[RequestRecord]:
    """Baseline, ramp and prefill records whose arrivals follow the constants above."""
    rng = random.Random(7)
    out: list[RequestRecord] = []
    t = 0.0
    for i in range(8):  # the baseline: one stream at a time
        ttft = TTFT_P50[1] * rng.uniform(0.95, 1.05)
        gaps = [GAP[1] * rng.uniform(0.9, 1.1) for _ in range(TOKENS - 1)]
        out.append(_stream(f"b-{i}", "baseline", 1, t, ttft, gaps))
        t += 0.8
    for level in LEVELS:
        # at least 40 requests a level: a p90 from fewer than 36 has no upper bound, and a
        # level whose interval is open is a tie, never sustained (evalkit.analysis.summarize)
        count = max(40, level * 4)
        # a closed loop: each of the level's streams sends its next request as its last
        # one ends, so the level holds its concurrency (what achieved_concurrency checks)
        free = [t + rng.uniform(0, 0.02) for _ in range(level)]
        for i in range(count):
            ttft = TTFT_P50[level] * rng.uniform(0.9, 1.1)
            if level == 16 and i == 5:
                out.append(RequestRecord(id=f"r{level}-{i}", phase="ramp", level=level,
                                         outcome="rejected", t0_s=round(free[i % level], 6),
                                         http_status=429, error="429: <b>slow down</b>",
                                         end_s=0.004, run_id=RUN_ID))
                free[i % level] += 0.004
                continue
            gaps = [GAP[level] * rng.uniform(0.8, 1.2) for _ in range(TOKENS - 1)]
            if level == 16 and i == 3:
                gaps[10] = 1.4  # one stall, so the raster has something to show
            if level == 4 and i < 3:
                gaps = gaps[:19]  # three outputs 20 of 24 tokens: the length check flags them
            rec = _stream(f"r{level}-{i}", "ramp", level, free[i % level], ttft, gaps)
            out.append(rec)
            free[i % level] = rec.t0_s + (rec.e2e_s or 0.0) + 0.001
        t = max(t + 8.0, max(free) + 1.0)
    for pair in range(2):  # the cache check: a repeat at about a fifth of the cold TTFT
        for ttft in (0.5, 0.105):
            out.append(_stream(f"c{pair}-{ttft}", "cache", 1, t, ttft, [GAP[1]],
                               prompt_id=f"cache-{pair}", requested=2))
            t += 0.7
    for n in (128, 512, 1024, 2048, 4096):
        for j in range(2):
            ttft = 0.150 + n / 20000 + rng.uniform(-0.003, 0.003)
            out.append(RequestRecord(
                id=f"p{n}-{j}", phase="prefill", level=1, outcome="ok", t0_s=t,
                prompt_tokens=n, ttft_s=round(ttft, 6), e2e_s=round(ttft + 0.02, 6),
                chunks=[(round(ttft, 6), 1), (round(ttft + 0.02, 6), 1)], http_status=200,
                finish_reason="length", output_tokens=2, run_id=RUN_ID))
            t += 0.5
    return out


#: the client's self-check per phase and level, as the prober records it
_QUIET = {"loop_lag_p99_s": 0.0012, "cpu_fraction": 0.31, "send_lag_p99_s": 0.0021,
          "send_lag_fraction": 0.0035, "client_bound": False, "client_bound_reasons": []}
CHECKS = {"phases": {p: _QUIET for p in ("baseline", "cache", "prefill", "ramp")},
          "levels": {str(c): _QUIET for c in LEVELS}}


def summary() -> dict[str, object]:
    """summary.json as evalkit derives it from the records (nothing written by hand)."""
    out = summarize(records(), {**CHECKS, "rtt_s": 0.0004, "run_status": "complete"})
    out["run_status"] = "complete"
    return out


def run_doc() -> dict[str, object]:
    """A run.json: what was run, never a secret."""
    return {"schema": "evalkit.run/1", "tool": "evalkit", "tool_version": "0.1.0",
            "suite_version": "1", "run_id": RUN_ID, "status": "complete", "profile": "quick",
            "target": {"base_url": "http://127.0.0.1:8011/v1", "model": "ref-model-7b"},
            "config": {"profile": "quick", "levels": list(LEVELS)},
            "client": {"host": "fixture-host", "python": "3.11"},
            "client_checks": CHECKS, "rtt_samples_s": [0.0004],
            "started_at": "2026-11-30T07:00:00Z", "ended_at": "2026-11-30T07:01:10Z"}


def files() -> dict[str, str]:
    """The fixture's files and their exact text."""
    return {"run.json": json.dumps(run_doc(), indent=2) + "\n",
            "summary.json": json.dumps(summary(), indent=2) + "\n",
            "requests.jsonl": "".join(r.to_json() + "\n" for r in records())}


def main() -> None:
    """Write the fixture run directory."""
    OUT.mkdir(exist_ok=True)
    for name, text in files().items():
        (OUT / name).write_text(text)


if __name__ == "__main__":
    main()
