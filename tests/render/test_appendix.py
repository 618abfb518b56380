"""Appendices A to C (`evalkit.render.appendix`)."""

from __future__ import annotations

from pathlib import Path

from evalkit.render.appendix import appendix
from evalkit.render.drawn import PageStamp
from evalkit.review.pipeline import review

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
STAMP = PageStamp("2026-12-05 08:00 UTC", "9.9.9", None, signature_box=False)


def test_a_run_gives_its_records_outcomes_and_provenance() -> None:
    done = review(RUN, None, None)
    a = appendix(done.card, done.run, {"b": "2", "a": "1"}, STAMP, "at 07:01", None)
    assert a.has_run and a.n_records == 246 and sum(n for _, n in a.outcomes) == 246
    assert a.evidence == (("a", "1"), ("b", "2")) and a.tool_digest == "—"
    assert a.run_times.endswith("; last request ended at 07:01")
    assert a.summary_source.startswith("summary.json, as the probe wrote it")
    assert all(k != "slo_profiles" for k, _ in a.tolerances) and a.slo_profiles


def test_claims_only_has_no_run() -> None:
    card = review(None, Path(__file__).resolve().parents[2] / "questionnaires" /
                  "forthright.yaml", None).card
    a = appendix(card, None, {}, STAMP, None, None)
    assert not a.has_run and a.n_records == 0 and a.outcomes == () and a.summary_source == ""
