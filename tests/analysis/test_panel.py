"""Pooling a panel: the requests of every sample, not the samples' medians; coverage
counted, never dropped."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from evalkit.analysis.panel import (
    PanelSample,
    SampleFigures,
    gaps,
    pool_panel,
    sample_figures,
    sampling_interval,
)
from evalkit.records import RequestRecord

T0 = datetime(2026, 11, 30, 0, 0, tzinfo=UTC).timestamp()
H = 3600.0


def _sample(i: int, hours: float, ttft: list[float], failed: int = 0,
            validity: str = "valid", state: str = "present") -> PanelSample:
    figs = SampleFigures(tuple(ttft), tuple(100.0 / (1 + t) for t in ttft),
                         len(ttft) + failed, failed, tuple(8.0 for _ in ttft),
                         tuple(8.0 for _ in ttft))
    excluded = None if state == "present" else state
    return PanelSample(i, T0 + hours * H, state, validity, f"/p/{i}",
                       figs if state != "missing" else None, excluded, 1)


def test_the_panel_pools_requests_not_medians() -> None:
    """Three samples of 1, 3 and 5 requests: the pooled p50 is the 5th of the 9 requests
    (0.30 s), where the median of the three medians would be 0.20 s."""
    a = _sample(1, 0, [0.10])
    b = _sample(2, 3, [0.20, 0.20, 0.21])
    c = _sample(3, 6, [0.30, 0.31, 0.32, 0.33, 0.34], failed=1)
    doc = pool_panel([c, a, b], vendor="X", model="m", start_s=T0, end_s=T0 + 9 * H)
    pooled = [0.10, 0.20, 0.20, 0.21, 0.30, 0.31, 0.32, 0.33, 0.34]
    assert doc["ttft_s"]["p50"] == float(np.percentile(pooled, 50)) == 0.30
    assert doc["ttft_s"]["n"] == 9 and doc["samples"] == 3
    assert doc["failure_rate"]["failed"] == 1 and doc["failure_rate"]["requests"] == 10
    lo, hi = doc["failure_rate"]["ci"]
    assert lo < 0.1 < hi
    assert [h["hour"] for h in doc["by_hour"]] == [0, 3, 6]
    assert doc["by_hour"][1]["ttft_s"]["p50"] == 0.20
    assert [d["day"] for d in doc["by_day"]] == ["2026-11-30"]
    assert doc["coverage"]["interval_s"] == 3 * H and doc["coverage"]["gap_count"] == 0


def test_invalid_missing_and_edited_samples_are_counted_never_dropped() -> None:
    samples = [_sample(1, 0, [0.1]), _sample(2, 1, [], failed=3, validity="invalid"),
               _sample(3, 2, [0.5], state="missing"), _sample(4, 3, [0.9], state="edited")]
    doc = pool_panel(samples, vendor="X", model=None, start_s=T0, end_s=T0 + 4 * H)
    cov = doc["coverage"]
    assert (cov["samples"], cov["pooled"], cov["invalid"], cov["missing"], cov["edited"]) == (
        4, 2, 1, 1, 1)
    assert [s["pooled"] for s in cov["list"]] == [True, True, False, False]
    # the invalid sample's failures are the panel's; the edited sample's TTFT is not pooled
    assert doc["failure_rate"]["failed"] == 3 and doc["ttft_s"]["n"] == 1


def test_gaps_longer_than_the_interval_are_named() -> None:
    starts = [T0, T0 + 3 * H, T0 + 6 * H, T0 + 18 * H, T0 + 21 * H]
    assert sampling_interval(starts) == 3 * H
    found = gaps(starts, T0, T0 + 24 * H, 3 * H)
    assert [(g["seconds"], g["missed"]) for g in found] == [(12 * H, 3)]
    doc = pool_panel([_sample(i, (s - T0) / H, [0.1]) for i, s in enumerate(starts)],
                     vendor="X", model=None, start_s=T0 - 12 * H, end_s=T0 + 24 * H)
    assert doc["coverage"]["gap_count"] == 2  # 12 h before the first sample, and the hole
    assert sampling_interval([T0]) is None and gaps([T0], T0, T0 + H, None) == []


def test_a_samples_figures_are_its_levels_ok_requests() -> None:
    recs = [RequestRecord(id="a", phase="baseline", level=1, outcome="ok", t0_s=0.0,
                          ttft_s=0.05, e2e_s=0.2, output_tokens=8, requested_output_tokens=8,
                          chunks=[(0.05 + 0.02 * k, 1) for k in range(8)]),
            RequestRecord(id="b", phase="ramp", level=1, outcome="ok", t0_s=1.0, ttft_s=0.07,
                          e2e_s=0.21, output_tokens=6, requested_output_tokens=8,
                          chunks=[(0.07 + 0.028 * k, 1) for k in range(6)]),
            RequestRecord(id="c", phase="ramp", level=1, outcome="error", t0_s=2.0)]
    f = sample_figures(recs)
    assert f.ttft_s == (0.07,) and f.requests == 3 and f.failed == 1
    # (6 - 1) tokens after the first over e2e - ttft = 0.14 s
    assert f.stream_tokens_per_s == pytest.approx((5 / 0.14,))
    assert (f.output_tokens, f.requested_tokens) == ((6.0,), (8.0,))
