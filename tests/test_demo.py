"""The demo's wiring: real probe runs of the sample vendors become their scorecards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from evalkit.demo import VENDORS, run_demo
from evalkit.render.report import scorecard_bytes
from evalkit.review.scorecard import Scorecard


@pytest.mark.slow
def test_demo_writes_each_vendors_story_and_their_comparison(tmp_path: Path) -> None:
    """Forthright holds up on the well-sized profile; headline's panel is unreconciled."""
    vendors = tuple(v for v in VENDORS if v.name in ("forthright", "headline"))
    written: list[Path] = []
    # levels of 12 requests, not the quick profile's 36: the plan still gives the level
    # each claim is judged at the requests its percentile needs (36 at forthright's 4
    # streams); Q3 is judged on the baseline and prefill, which keep their requests.
    # Levels 2, 4 and 8, the ones the plan brackets forthright's claim at 4 with (and
    # headline's 64 joins them): levels 1 and 16 judged no claim, and without them every
    # question of both scorecards read the same (measured 2026-12-05), ~14 s sooner
    result = run_demo(tmp_path, vendors=vendors, on_written=written.append,
                      suite_overrides={"ramp": {"levels": [2, 4, 8],
                                                "level_duration_s": 1.5,
                                                "level_min_requests": 12}})
    assert set(result.reports) == {"forthright", "headline"}
    assert result.comparison == tmp_path / "comparison.pdf"
    assert written == [result.reports["forthright"], result.reports["headline"],
                       result.comparison]
    for name, pdf in result.reports.items():
        written = pdf.with_suffix(".json").read_bytes()
        card = json.loads(written)
        assert card["schema"] == "evalkit.scorecard/1"
        # scorecard.json is a contract: the typed Scorecard reads it back byte for byte
        assert scorecard_bytes(Scorecard.from_json(card)) == written
        assert (result.runs[name] / "requests.jsonl").stat().st_size > 0
        assert len(PdfReader(pdf).pages) >= 2
    headline = json.loads(result.reports["headline"].with_suffix(".json").read_text())
    assert headline["questions"]["Q6"]["status"] == "unreconciled"
    assert headline["verdict"]["streaming_ready"] is False
    forthright = json.loads(result.reports["forthright"].with_suffix(".json").read_text())
    assert forthright["questions"]["Q3"]["status"] == "ok"
    # its rate limits are claimed, and the reference endpoint (no limit) never rejected
    assert forthright["rate_limits"]["status"] == "unverified"
    assert "never rejected with 429" in forthright["rate_limits"]["reason"]
    assert "Steadystream Inference" in PdfReader(result.comparison).pages[0].extract_text()
