"""Prefill priced apart from decode (`evalkit.analysis.prefill`): the fit over prompt lengths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalkit.analysis.frames import records_frame
from evalkit.analysis.prefill import prefill_fit
from evalkit.records import RequestRecord
from tests.analysis.helpers import stream


class TestPrefillFit:
    LENGTHS = (128, 512, 1024, 2048, 4096)

    def _records(self, ttfts: dict[int, list[float]]) -> list[RequestRecord]:
        return [stream(f"p{p}-{i}", "prefill", 1, t0=i, ttft=t, n=2, prompt_tokens=p)
                for p, ts in ttfts.items() for i, t in enumerate(ts)]

    def test_noiseless_points_recover_a_and_b(self) -> None:
        """TTFT = 0.05 + 0.0002·p exactly: overhead 0.05 s, 5000 tokens/s, r² = 1."""
        fit = prefill_fit(records_frame(self._records(
            {p: [0.05 + 0.0002 * p] for p in self.LENGTHS})))
        assert fit["overhead_s"] == pytest.approx(0.05)
        assert fit["tokens_per_s"] == pytest.approx(5000.0)
        assert fit["r2"] == pytest.approx(1.0)
        assert [pt["prompt_tokens"] for pt in fit["points"]] == list(self.LENGTHS)

    def test_noisy_points_with_an_outlier(self) -> None:
        """±3 % noise and one 10× outlier per length: medians keep b within 5 %."""
        rng = np.random.default_rng(7)
        data = {}
        for p in self.LENGTHS:
            true = 0.05 + 0.0002 * p
            ts = list(true * (1 + rng.uniform(-0.03, 0.03, 9)))
            data[p] = [*ts, true * 10]
        fit = prefill_fit(records_frame(self._records(data)))
        assert fit["tokens_per_s"] == pytest.approx(5000.0, rel=0.05)
        assert fit["overhead_s"] == pytest.approx(0.05, abs=0.01)
        assert fit["r2"] > 0.99
        assert fit["points"][0]["n"] == 10

    @pytest.mark.parametrize("ttfts", [
        {512: [0.1, 0.11]},                   # one length only
        {128: [0.3], 4096: [0.2]},            # TTFT falls with length: b ≤ 0
        {},                                   # nothing at all
    ])
    def test_cannot_fit(self, ttfts: dict[int, list[float]]) -> None:
        """No honest line: the rate and overhead are None, and the reason is given."""
        fit = prefill_fit(records_frame(self._records(ttfts) or [stream("b")]))
        assert fit["tokens_per_s"] is None and fit["overhead_s"] is None
        assert fit["reason"]

    def test_a_slope_interval_reaching_exactly_zero_gives_only_a_lower_bound(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A slope whose 95 % interval starts at 0.0 exactly: zero is inside it, so there is
        no rate, only "faster than 1/high". No three real TTFTs land on 0.0 exactly under
        the fit's exact sums, so the fit's answer is set to that edge."""
        import evalkit.analysis.prefill as prefill

        def edge(x: Any, y: Any) -> dict[str, Any]:
            return {"slope": 5e-5, "intercept": 0.09, "slope_ci": [0.0, 1e-4],
                    "intercept_ci": [0.0, 0.2], "dof": 1}

        monkeypatch.setattr(prefill, "ols", edge)
        fit = prefill_fit(records_frame(self._records(
            {100: [0.1], 200: [0.14], 300: [0.19]})))
        assert fit["slope_ci"][0] == 0.0
        assert fit["tokens_per_s"] is None and fit["tokens_per_s_ci"] is None
        assert fit["tokens_per_s_at_least"] == pytest.approx(1 / fit["slope_ci"][1])
