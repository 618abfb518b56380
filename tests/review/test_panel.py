"""Q6 against our own panel (`evalkit.review.panel`): the vendor's panel set beside the
panel we keep, pooled from the catalog and passed in as data."""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import Pct
from evalkit.review.ourpanel import OurPanel
from evalkit.review.reconcile import reconcile
from tests.review.helpers import q, typed

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


def q6(panel: OurPanel | None) -> tuple[str, str, Any]:
    j = reconcile(q(CLAIM), None, None, None, panel).judgements["Q6"]
    return j.status, j.reason, j.measured


def test_our_panel_that_agrees_verifies_the_vendors() -> None:
    status, reason, measured = q6(ours(165.0, (160.0, 172.0)))
    assert status == "ok", reason
    assert "agrees with the 165 tokens/s per stream (p50) of our own panel (8 of 8 " \
           "samples pooled, 400 requests at 16 streams, 2026-11-17 00:00 to 2026-11-24 " \
           "00:00 UTC)" in reason
    assert measured is not None
    assert measured.our_panel.stream_tokens_per_s.p50 == 165.0


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
    assert measured is None or measured.our_panel is None
    status, reason, _ = q6(None)
    assert status == "unverified" and "panel sample" not in reason


def test_panel_json_is_read_defensively() -> None:
    p = OurPanel.from_panel({"window": {"start": "a", "end": "b"}, "samples": "x",
                             "concurrency": [1, "2"], "stream_tokens_per_s": {"p50": 3,
                                                                               "n": 4}})
    assert (p.samples, p.pooled, p.concurrency, p.stream_tokens_per_s.p50) == (0, 0, (1,), 3)


def test_a_panel_without_a_median_rate_is_said_without_a_hint_to_start_one() -> None:
    claim = CLAIM.replace("output_tokens_per_s: {p50: 170}", "latency_s: {p50: 1.3}")
    j = reconcile(q(claim), None, None, None, ours(165.0, (160.0, 172.0))).judgements["Q6"]
    assert j.status == "unverified"
    assert "Our own panel: our own panel (8 of 8 samples pooled" in j.reason
    assert "the vendor's panel gives no median rate." in j.reason
    assert "panel sample" not in j.reason
    assert j.measured is not None and j.measured.our_panel is not None


def test_a_run_that_refutes_the_panel_is_not_outvoted_by_ours() -> None:
    """The vendor's median 500 tokens/s, our run 170 at the 16 streams sold: unreconciled,
    even with a panel of ours at 500 beside it (fail closed; both are said)."""
    from tests.review.helpers import PANEL_RUN, RUN

    text = (f"model: {RUN.model}\nvendor: Acme\nQ2: {{at_concurrency: 16}}\n"
            + CLAIM.split("\n", 2)[2].replace("170", "500"))
    j = reconcile(q(text), typed(PANEL_RUN), None, RUN,
                  ours(500.0, (490.0, 510.0))).judgements["Q6"]
    assert j.status == "unreconciled"
    assert "the panel's median 500 tokens/s is 2.9× above the 170 tokens/s per stream (p50) " \
           "we measured at 16 streams" in j.reason
    assert "Against our own panel: the panel's median 500 tokens/s agrees with the 500 " \
           "tokens/s per stream (p50) of our own panel" in j.reason


def test_our_panel_reads_back_from_what_the_report_attaches() -> None:
    """`verify` judges Q6 beside the panel the PDF attaches (`to_panel`): what it reads
    back must be the very panel the report judged beside, intervals and coverage too."""
    ours = OurPanel("2026-11-17T00:00:00+00:00", "2026-11-24T00:00:00+00:00", 8, 6,
                    Pct(41.5, 38.0, 30.25, 240, {"p50": (40.0, 43.0), "p99": (None, 33.5)}),
                    Pct(0.21, 0.4, 0.9, 240, {"p90": (0.35, 0.45)}), (1, 4), 1, 2)
    assert OurPanel.from_panel(ours.to_panel()) == ours
    assert OurPanel.from_panel(OurPanel("a", "b", 0, 0, Pct(), Pct()).to_panel()) == \
        OurPanel("a", "b", 0, 0, Pct(), Pct())
