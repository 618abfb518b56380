"""The page's precision words (`evalkit.render.precision`): each level says how many
answers its call rests on, a level that ran on to decide says so, and a tie that spent
its budget is said to be undecided, never held."""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import Sections
from evalkit.analysis.summary_sections import Precision
from evalkit.render.precision import answers_figure, precision_intro, precision_rows


def _level(c: int, status: str, compared: int, matches: int, grew: str | None = None,
           undecided: bool = False, kind: str | None = None) -> dict[str, Any]:
    return {"concurrency": c, "status": status, "compared": compared, "matches": matches,
            "match_rate": matches / compared, "match_rate_ci": [0.1, 0.99], "kind": kind,
            "models_seen": ["m"], "budget": 16, "grew": grew, "undecided": undecided}


def _summary(*levels: dict[str, Any]) -> Precision | None:
    """The typed precision section of a summary.json holding these levels."""
    return Sections.from_json({"precision": {"canaries": 4, "budget": 16, "levels": list(levels),
                          "alone": {"answers": 8, "match_rate": 1.0, "distinct": 4,
                                    "models_seen": ["m"]},
                          "rule": "a level breaches precision when ...",
                          "degraded_at": None}}).precision


def test_each_call_says_what_it_rests_on() -> None:
    s = _summary(_level(2, "held", 4, 4),
                 _level(4, "breach", 12, 6, grew="decided", kind="diverged_at_start"),
                 _level(8, "tie", 16, 12, grew="budget", undecided=True, kind="varied"),
                 _level(16, "tie", 9, 7, grew="time", undecided=True, kind="varied"))
    rows = {r.level: r for r in precision_rows(s)}
    assert rows["2"].status == "held" and rows["2"].match.endswith("of 4")
    assert rows["4"].status == ("BREACH: differed from the first tokens, same model name "
                                   "(it ran on to decide: 12 answers, of the 16 a tie may "
                                   "grow to)")
    assert rows["8"].status == ("tie (its interval straddles the floor): answers varied, "
                                   "same model reported; undecided: 16 answers could not "
                                   "decide it (its budget spent)")
    assert rows["16"].status.endswith("undecided: 9 answers could not decide it (the level "
                                         "stopped before its budget)")
    assert "the match column gives the answers each call rests on" in \
        (precision_intro(s) or "").lower()


def test_page_one_says_an_undecided_tie_with_its_answers() -> None:
    s = _summary(_level(2, "held", 4, 4),
                 _level(4, "tie", 16, 12, grew="budget", undecided=True, kind="varied"))
    assert answers_figure(s, None, None) == (
        "Answers under load", "held: canaries matched their answers alone at 1 of 2 levels; "
        "a tie at 4 streams (undecided on 16 answers), the same model named throughout")
