"""The comparison's workload rows: per shape, goodput and TTFT p90, ★ only between runs of
the same workload file (its SHA-256), and never for a figure its scorecard left unverified."""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import Summary
from evalkit.review.compare import RunView, compare_runs, left_out_words
from evalkit.review.scorecard import Scorecard


def _card(sha: str | None, share: float, ttft: float, verified: bool = True
          ) -> dict[str, Any]:
    shape = {"name": "chat", "verified": verified, "ttft_s": {"p50": ttft / 2, "p90": ttft},
             "goodput": {"voice_agent": {"fraction": share,
                                         "status": "met" if verified else "not_verified"}}}
    return {"verdict": {"streaming_ready": True}, "run": {"validity": "valid"},
            "workload": None if sha is None else {
                "sha256": sha, "levels": [{"users": 1, "shapes": [dict(shape)]},
                                          {"users": 4, "shapes": [shape]}]}}


def _view(label: str, card: dict[str, Any]) -> RunView:
    summary = {"ramp": {"levels": [{"concurrency": 1, "requests": 10, "outcomes": {"ok": 10}}]}}
    return RunView(label, label, "2026-01-01", "1", {}, Summary.from_json(summary),
                   Scorecard.from_json(card))


def _rows(*views: RunView) -> dict[str, Any]:
    return {r.figure.key: r for r in compare_runs(list(views)).rows}


def test_the_same_workload_compares_and_stars_the_better_shape() -> None:
    rows = _rows(_view("a", _card("s" * 64, 0.9, 0.30)), _view("b", _card("s" * 64, 1.0, 0.20)))
    good = rows["workload.chat.goodput.voice_agent"]
    assert [c.value for c in good.cells] == [0.9, 1.0]
    assert [c.best for c in good.cells] == [False, True]
    assert [c.level for c in good.cells] == [4, 4]  # the highest level the reference verified
    assert good.figure.title == "Workload shape chat: share within the voice agent SLO"
    ttft = rows["workload.chat.ttft_p90_s"]
    assert [c.value for c in ttft.cells] == [0.30, 0.20] and ttft.cells[1].best


def test_different_workloads_are_left_out_and_win_no_star() -> None:
    rows = _rows(_view("a", _card("a" * 64, 0.9, 0.30)), _view("b", _card("b" * 64, 1.0, 0.2)),
                 _view("c", _card(None, 1.0, 0.1)))
    good = rows["workload.chat.goodput.voice_agent"]
    assert [c.value for c in good.cells] == [0.9, None, None]
    assert not any(c.best for c in good.cells)
    assert good.cells[1].excluded is not None and good.cells[1].excluded.startswith(
        "different workloads (SHA-256 bbbbbbbbbbbb")
    assert left_out_words(good.cells[2].excluded) == "left out: different workloads"


def test_an_unverified_shape_gives_no_value() -> None:
    rows = _rows(_view("a", _card("s" * 64, 0.9, 0.30)),
                 _view("b", _card("s" * 64, 1.0, 0.2, verified=False)))
    assert [c.value for c in rows["workload.chat.goodput.voice_agent"].cells] == [0.9, None]
    assert not any(c.best for c in rows["workload.chat.goodput.voice_agent"].cells)
