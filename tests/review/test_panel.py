"""Q6 against our own panel (`evalkit.review.panel`): the vendor's panel set beside the
panel we keep, pooled from the catalog and passed in as data."""

from __future__ import annotations

from evalkit.analysis.summary import Pct
from evalkit.review.panel import OurPanel
from evalkit.review.reconcile import reconcile
from tests.review.helpers import q

#: the vendor's panel alone, no headline and no run: only our panel can verify it
CLAIM = """model: m-7b
vendor: Acme
Q6:
  output_tokens_per_s: {p50: 170}
  window: 2026-11-17 to 2026-11-23
  source: production
"""


def ours(p50: float | None, ci: tuple[float, float] | None, pooled: int = 8,
         n: int = 400) -> OurPanel:
    return OurPanel("2026-11-17T00:00:00+00:00", "2026-11-24T00:00:00+00:00", 8, pooled,
                    Pct(p50=p50, n=n, ci={"p50": ci} if ci else {}), Pct(p50=0.2, n=n),
                    (16,))


def q6(panel: OurPanel | None) -> tuple[str, str, dict | None]:  # type: ignore[type-arg]
    j = reconcile(q(CLAIM), None, None, None, panel).judgements["Q6"]
    return j.status, j.reason, j.measured


def test_our_panel_that_agrees_verifies_the_vendors() -> None:
    status, reason, measured = q6(ours(165.0, (160.0, 172.0)))
    assert status == "ok", reason
    assert "agrees with the 165 tokens/s per stream (p50) of our own panel (8 of 8 " \
           "samples pooled, 400 requests at 16 streams, 2026-11-17 00:00 to 2026-11-24 " \
           "00:00 UTC)" in reason
    assert measured is not None
    assert measured["our_panel"]["stream_tokens_per_s"]["p50"] == 165.0


def test_our_panel_far_below_is_unreconciled_with_both_figures() -> None:
    status, reason, _ = q6(ours(50.0, (48.0, 52.0)))
    assert status == "unreconciled"
    assert "the panel's median 170 tokens/s is 3.4× above the 50.0 tokens/s per stream " \
           "(p50) of our own panel" in reason


def test_an_interval_that_straddles_decides_nothing() -> None:
    status, reason, _ = q6(ours(140.0, (100.0, 190.0)))
    assert status == "unverified" and "Against our own panel: not enough evidence" in reason


def test_no_samples_say_how_to_start_a_panel_and_no_catalog_says_nothing() -> None:
    status, reason, measured = q6(ours(None, None, pooled=0, n=0))
    assert status == "unverified"
    assert "Our own panel: the catalog holds no sample of ours of this vendor and model in " \
           "2026-11-17 00:00 to 2026-11-24 00:00 UTC (8 samples, none readable); start one " \
           "with `evalkit panel sample --base-url URL --model m-7b --vendor Acme`" in reason
    assert "our_panel" not in (measured or {})
    status, reason, _ = q6(None)
    assert status == "unverified" and "panel sample" not in reason


def test_panel_json_is_read_defensively() -> None:
    p = OurPanel.from_panel({"window": {"start": "a", "end": "b"}, "samples": "x",
                             "concurrency": [1, "2"], "stream_tokens_per_s": {"p50": 3,
                                                                               "n": 4}})
    assert (p.samples, p.pooled, p.concurrency, p.stream_tokens_per_s.p50) == (0, 0, (1,), 3)
