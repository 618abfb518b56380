"""Appendix D from the typed summary (`evalkit.render.rawtables`): the words summary.json
gave the template before, and nothing printed for a section the run did not measure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import Summary
from evalkit.render.rawtables import RawTables, pct_text, raw_tables

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"


def _summary(**over: Any) -> Summary:
    doc = json.loads((RUN / "summary.json").read_text())
    doc.update(over)
    return Summary.from_json(doc)


def test_the_fixtures_tables() -> None:
    raw = raw_tables(_summary())
    assert dict(raw.baseline)["TTFT"] == "p50 198 ms · p90 203 ms · p99 204 ms (low " \
        "confidence) · n=8"
    assert raw.baseline_heading == "Baseline: one stream at a time, 8 requests"
    assert [lv.concurrency for lv in raw.levels] == ["1", "2", "4", "8", "16"]
    assert raw.levels[0].ttft_ms.count(" / ") == 2 and raw.levels[0].stalls != "—"
    assert raw.prefill.startswith("Prefill ") and raw.breach_rule


def test_a_section_not_measured_prints_nothing() -> None:
    raw = raw_tables(_summary(connect={}, prefill={}, baseline=None))
    assert raw.connect == () and raw.prefill == "" and raw.baseline == ()
    assert raw_tables(None) == RawTables()


def test_a_tie_names_its_metrics_and_a_missing_stall_count_is_a_dash() -> None:
    doc = json.loads((RUN / "summary.json").read_text())
    level = doc["ramp"]["levels"][-1]
    level.update(status="tie", ties=["ttft", "admission"])
    level.pop("stalls", None)
    row = raw_tables(Summary.from_json(doc)).levels[-1]
    assert row.status == "tie (TTFT, rejections)" and row.stalls == "—"


def test_a_distribution_in_words() -> None:
    from evalkit.analysis.summary_levels import Pct

    assert pct_text(Pct()) == "—"
    assert pct_text(Pct(p50=0.1, p90=0.2, p99=0.3, n=150)) == \
        "p50 100 ms · p90 200 ms · p99 300 ms · n=150"
