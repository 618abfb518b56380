"""Write the synthetic run directory the report tests render (deterministic; re-run to refresh).

The numbers are built, not measured, so tests can assert exact figures: baseline TTFT
200 ms and 20 ms per token; TTFT grows with concurrency and breaches 2x baseline at 16
streams, so max sustained concurrency is 8 and TTFT degrades first.
Usage: .venv/bin/python tests/data/make_report_fixture.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalkit.records import RequestRecord

OUT = Path(__file__).resolve().parent / "report_run"
LEVELS = (1, 2, 4, 8, 16)
TTFT_P50 = {1: 0.200, 2: 0.210, 4: 0.230, 8: 0.300, 16: 0.650}
GAP = {1: 0.020, 2: 0.021, 4: 0.023, 8: 0.026, 16: 0.031}
TOKENS = 24


def _p(p50: float, p90: float, p99: float, n: int) -> dict[str, float | int]:
    return {"p50": p50, "p90": p90, "p99": p99, "n": n}


def records() -> list[RequestRecord]:
    """Ramp and prefill records whose arrivals follow the constants above."""
    rng = random.Random(7)
    out: list[RequestRecord] = []
    t = 0.0
    for level in LEVELS:
        for i in range(level * 4):
            ttft = TTFT_P50[level] * rng.uniform(0.9, 1.1)
            if level == 16 and i % 8 == 0:
                out.append(RequestRecord(id=f"r{level}-{i}", phase="ramp", level=level,
                                         outcome="rejected", t0_s=t + i * 0.05,
                                         http_status=429, error="429: <b>slow down</b>"))
                continue
            arrivals = [ttft]
            for k in range(TOKENS - 1):
                gap = GAP[level] * rng.uniform(0.8, 1.2)
                if level == 16 and i == 3 and k == 10:
                    gap = 1.4  # one stall, so the raster has something to show
                arrivals.append(arrivals[-1] + gap)
            out.append(RequestRecord(
                id=f"r{level}-{i}", phase="ramp", level=level, outcome="ok",
                t0_s=round(t + (i // level) * 0.7 + rng.uniform(0, 0.02), 6),
                prompt_tokens=512, requested_output_tokens=TOKENS, output_tokens=TOKENS,
                output_tokens_estimated=False, usage_completion_tokens=TOKENS,
                ttft_s=round(ttft, 6), e2e_s=round(arrivals[-1], 6),
                chunks=[(round(a, 6), 1) for a in arrivals], http_status=200,
                finish_reason="length"))
        t += 4.0
    for n in (128, 512, 1024, 2048, 4096):
        for j in range(2):
            ttft = 0.150 + n / 20000 + rng.uniform(-0.003, 0.003)
            out.append(RequestRecord(
                id=f"p{n}-{j}", phase="prefill", level=1, outcome="ok", t0_s=t,
                prompt_tokens=n, ttft_s=round(ttft, 6), e2e_s=round(ttft + 0.02, 6),
                chunks=[(round(ttft, 6), 1), (round(ttft + 0.02, 6), 1)], http_status=200,
                finish_reason="length", output_tokens=2))
            t += 0.5
    return out


def summary() -> dict[str, object]:
    """A summary.json following the SPEC contract, consistent with the records."""
    levels = []
    for c in LEVELS:
        n = c * 4
        ok = n - (n // 8 if c == 16 else 0)
        levels.append({
            "concurrency": c, "requests": n,
            "outcomes": {"ok": ok, "rejected": n - ok, "error": 0, "incomplete": 0, "timeout": 0},
            "ttft_s": _p(TTFT_P50[c], TTFT_P50[c] * 1.08, TTFT_P50[c] * 1.1, ok),
            "tpot_s": _p(GAP[c], GAP[c] * 1.1, GAP[c] * 1.2, ok),
            "itl_s": _p(GAP[c], GAP[c] * 1.15, GAP[c] * 1.2, ok * (TOKENS - 1)),
            "stream_tokens_per_s": _p(1 / GAP[c], 1 / (GAP[c] * 1.1), 1 / (GAP[c] * 1.2), ok),
            "aggregate_tokens_per_s": round(c / GAP[c] * 0.9, 1),
            "stalls": 1 if c == 16 else 0,
        })
    return {
        "schema": "evalkit.summary/1",
        "connect": {"usage_reported": True, "tokens_per_chunk": {"p50": 1.0}, "rtt_s": 0.0004},
        "baseline": {"ttft_s": _p(0.2, 0.216, 0.22, 8), "tpot_s": _p(0.02, 0.022, 0.024, 8),
                     "itl_s": _p(0.02, 0.023, 0.024, 184),
                     "stream_tokens_per_s": _p(50.0, 45.5, 41.7, 8), "requests": 8},
        "prefill": {"tokens_per_s": 20000.0, "overhead_s": 0.15, "r2": 0.998,
                    "points": [{"prompt_tokens": n, "ttft_s": 0.15 + n / 20000}
                               for n in (128, 512, 1024, 2048, 4096)]},
        "ramp": {"levels": levels, "max_sustained_concurrency": 8, "first_degraded": "ttft"},
        "client": {"loop_lag_p99_s": 0.0012, "cpu_fraction_max": 0.31, "client_bound": False},
        "checks": {
            "cache": {"pairs": 2, "repeat_over_first": 0.21, "prefix_cache": True},
            "network": {"rtt_s": 0.0004, "share_of_ttft": 0.002},
            "output_length": {"checked": 126, "short": 9, "tolerance": 0.05, "flagged": True},
            "usage_honesty": {"checked": 126, "disagreeing": 0, "tolerance": 0.25,
                              "flagged": False},
        },
    }


def run_doc() -> dict[str, object]:
    """A run.json: what was run, never a secret."""
    return {"tool": "evalkit", "tool_version": "0.1.0", "suite_version": "1",
            "target": {"base_url": "http://127.0.0.1:8011/v1", "model": "ref-model-7b"},
            "config": {"profile": "quick", "levels": list(LEVELS)},
            "client": {"host": "fixture-host", "python": "3.11"},
            "started_at": "2026-11-30T07:00:00Z", "finished_at": "2026-11-30T07:01:10Z"}


def main() -> None:
    """Write the fixture run directory."""
    OUT.mkdir(exist_ok=True)
    (OUT / "run.json").write_text(json.dumps(run_doc(), indent=2) + "\n")
    (OUT / "summary.json").write_text(json.dumps(summary(), indent=2) + "\n")
    (OUT / "requests.jsonl").write_text("".join(r.to_json() + "\n" for r in records()))


if __name__ == "__main__":
    main()
