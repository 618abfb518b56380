"""A questionnaire's fields in words on page one (`evalkit.render.words`, with
`evalkit.render.pagetext`)."""

from __future__ import annotations

from evalkit.analysis.summary import read_level
from evalkit.questionnaire.model import (
    ConcurrencyAnswer,
    Distribution,
    PricingAnswer,
    TtftAnswer,
)
from evalkit.render import pagetext, words
from evalkit.review.claimed import PanelClaim


class TestWords:
    def test_claims_read_as_words_with_units(self) -> None:
        """A questionnaire's fields on page one: names spelled out, units after numbers,
        provenance (evidence, notes) left for the appendix, which prints every field."""
        claimed = TtftAnswer(source="production", evidence=("https://x.example/p",),
                             notes="gateway", ttft_p50_ms=200, ttft_p90_ms=250,
                             at_concurrency=4, prompt_tokens=256,
                             window="the seven days before the questionnaire was filled in")
        brief = pagetext.claim_text(claimed, brief=True)
        assert brief.startswith("source: production; TTFT p50 200 ms; TTFT p90 250 ms; at 4 "
                                "streams; prompts of 256 tokens; window: the seven")
        assert brief.endswith(" more characters]")  # page one is brief, and links onward
        assert "evidence" not in brief and "gateway" not in brief
        full = pagetext.claim_text(claimed, brief=False)
        assert "evidence: https://x.example/p" in full and "notes: gateway" in full
        assert pagetext.claim_text(PricingAnswer(input_price_per_mtok=0.05, currency="USD"),
                                   brief=False) == "input price 0.05 USD per million tokens"
        assert pagetext.claim_text(ConcurrencyAnswer(first_degrades="itl", nodes=1),
                                   brief=True) == (
            "1 node; first to degrade: TPOT p90 (per-token latency)")
        panel = PanelClaim(output_tokens_per_s=Distribution(40, 52))
        assert pagetext.claim_text(panel, brief=False) == (
            "output per stream (p50 40 · p90 52 tok/s); panel (p50 40 · p90 52 tok/s)")
        # page one says the panel once, not again under its alias
        assert pagetext.claim_text(panel, brief=True) == (
            "output per stream (p50 40 · p90 52 tok/s)")
        assert pagetext.claim_text(None, brief=True) == "—"

    def test_names_tolerances_and_hosts(self) -> None:
        """The judge's tolerance names its setting in words; the client host reads as one
        line, not `host: host: vm`."""

        assert words.tolerance("one-sided: measured ≤ claimed × 1.25 (ttft_rel 25%)") == \
            "one-sided: measured ≤ claimed × 1.25 (TTFT tolerance 25%)"
        assert words.client_host({"host": "vm", "python": "3.11.7", "platform": "Linux",
                                  "cpus": 2, "ray": None}) == "vm, Python 3.11.7, Linux, 2 CPUs"
        assert words.field("above_reading_speed", False) == "not above reading speed"
        assert words.name("stream_tokens_per_s_at_4") == "per stream at 4 streams"

    def test_a_baseline_of_no_requests_says_so(self) -> None:
        """'Baseline (concurrency 1, 6 requests)' when none succeeded misled: the heading
        says how many were measured and how many were ok."""
        assert pagetext.baseline_heading(read_level({"requests": 0}, 1)) == \
            "Baseline: one stream at a time (no request measured)"
        assert pagetext.baseline_heading(read_level({"requests": 6, "outcomes": {"ok": 4}},
                                                    1)) == \
            "Baseline: one stream at a time, 6 requests, 4 ok"


def test_our_panel_is_said_with_its_samples_window_and_intervals() -> None:
    from evalkit.render.words import our_panel
    from evalkit.review.measured import OurPanelMeasured

    text = our_panel(OurPanelMeasured.from_json({
        "window": "2026-12-01 00:00 to 2026-12-02 00:00 UTC", "samples": 3, "pooled": 2,
        "stream_tokens_per_s": {"p50": 63.4, "p90": 70.0, "n": 27, "ci": {"p50": [60.0, 66.0]}},
        "ttft_s": {"p50": 0.0754, "n": 27, "ci": {"p50": [0.07, 0.08]}}}))
    assert text == ("our own panel (2 of 3 samples, 2026-12-01 00:00 to 2026-12-02 00:00 "
                    "UTC): p50 63.4 tok/s [95 %: 60.0 tok/s–66.0 tok/s] · p90 70.0 tok/s "
                    "(n=27, low confidence); TTFT p50 75.4 ms [95 %: 70.0 ms–80.0 ms]")
    assert our_panel(None).startswith("our own panel (— of — samples, window not stated)")
