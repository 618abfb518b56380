"""Page one's key figures in order (`evalkit.render.keyfigures`)."""

from __future__ import annotations

from pathlib import Path

from evalkit.render.keyfigures import key_figures, slo_limits
from evalkit.review.pipeline import review

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
QUESTIONNAIRE = Path(__file__).resolve().parents[2] / "questionnaires" / "headline.yaml"


def test_the_lead_comes_first_and_the_workload_before_reading_speed() -> None:
    done = review(RUN, QUESTIONNAIRE, None)
    rows = key_figures(done.card, done.run.summary if done.run else None,
                       [("Run validity", "valid")], ("Your workload", "not measured"))
    labels = [label for label, _ in rows]
    assert labels[0] == "Run validity"
    assert labels.index("Your workload") < labels.index("Streams at reading speed")
    assert "Your workload" not in [label for label, _ in key_figures(
        done.card, done.run.summary if done.run else None, [], None)]


def test_claims_only_has_no_figure_of_a_run() -> None:
    card = review(None, QUESTIONNAIRE, None).card
    assert all(label != "Streams at reading speed" for label, _ in
               key_figures(card, None, [], None))
    assert set(slo_limits(card)) >= set(card.use_cases)
