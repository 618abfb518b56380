"""A questionnaire's fields in words on page one (`evalkit.render.words`, with
`evalkit.render.pagetext`)."""

from __future__ import annotations

from evalkit.render import pagetext, words


class TestWords:
    def test_claims_read_as_words_with_units(self) -> None:
        """A questionnaire's fields on page one: names spelled out, units after numbers,
        provenance (evidence, notes) left for the appendix, which prints every field."""
        claimed = {"source": "production", "evidence": ["https://x.example/p"],
                   "notes": "gateway", "ttft_p50_ms": 200, "ttft_p90_ms": 250,
                   "at_concurrency": 4, "prompt_tokens": 256, "gpus": 1,
                   "input_price_per_mtok": 0.05, "currency": "USD", "first_degrades": "itl",
                   "output_tokens_per_s": {"p50": 40, "p90": 52}}
        brief = pagetext.claim_text(claimed, brief=True)
        assert brief.startswith("source: production; TTFT p50 200 ms; TTFT p90 250 ms; at 4 "
                                "streams; prompts of 256 tokens; 1 GPU; input price")
        assert brief.endswith(" more characters]")  # page one is brief, and links onward
        assert "evidence" not in brief and "gateway" not in brief
        full = pagetext.claim_text(claimed, brief=False)
        assert "evidence: https://x.example/p" in full and "notes: gateway" in full
        assert full.endswith(
            "1 GPU; input price 0.05 USD per million tokens; first to degrade: "
            "TPOT p90 (per-token latency); output per stream (p50 40 · p90 52 tok/s)")

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
        assert pagetext.baseline_heading({"requests": 0}) == \
            "Baseline: one stream at a time (no request measured)"
        assert pagetext.baseline_heading({"requests": 6, "outcomes": {"ok": 4}}) == \
            "Baseline: one stream at a time, 6 requests, 4 ok"
