"""scorecard.json is a contract (schema evalkit.scorecard/1): the typed `Scorecard` writes
it, and reads it back, byte for byte. Over the review's own scorecards: a GPU-like run, one
client-bound, one with the buyer's workload (sessions: met, client-bound, cut short) and a
trace, an invalid one, one that measured nothing, and tests/data's report run, each
against the three sample questionnaires and none (tests/test_demo.py does the same for the
demo's real runs)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.questionnaire.load import load_questionnaire
from evalkit.render.report import scorecard_bytes
from evalkit.review.rules import RunTarget
from evalkit.review.scorecard import Scorecard, build_card
from tests.review import test_workload as wl
from tests.review.helpers import RUN, SAMPLES, make_summary, typed

REPORT_RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
TRACE = {"described": {"speed": 2.0, "source": {"name": "mooncake.jsonl", "sha256": "f" * 64}},
         "requests": 40, "outcomes": {"ok": 40}, "client_bound": False,
         "send_lag_s": {"p50": 0.001, "p99": 0.02}, "ttft_s": {"p50": 0.2, "p90": 0.3},
         "goodput": {"voice_agent": wl._goodput(1.0, 40, "met")}}
WORKLOAD = wl._summary((1, False, wl._shape()), (4, True, wl._shape()),
                       (8, False, wl._shape(units=4, complete=3, status="missed", share=0.5)))


def _summaries() -> dict[str, tuple[dict[str, Any] | None, RunTarget | None]]:
    invalid = make_summary()
    invalid["validity"] = {"status": "invalid", "reasons": ["every request failed"]}
    return {
        "gpu": (make_summary(), RUN),
        "client_bound": (make_summary(client_bound=True), RUN),
        "workload_and_trace": ({**make_summary(), **WORKLOAD, "trace": TRACE}, RUN),
        "invalid": ({**invalid, **WORKLOAD}, RUN),
        "nothing_measured": ({"schema": "evalkit.summary/1",
                              "validity": {"status": "degraded", "reasons": ["cut"]}}, None),
        "report_run": (json.loads((REPORT_RUN / "summary.json").read_text()),
                       RunTarget.from_run(json.loads((REPORT_RUN / "run.json").read_text()))),
        "claims_only": (None, None),
    }


@pytest.mark.parametrize("name", list(_summaries()))
def test_every_scorecard_reads_back_byte_for_byte(name: str) -> None:
    doc, run = _summaries()[name]
    for vendor in ("forthright", "evasive", "headline", None):
        q = load_questionnaire(SAMPLES / f"{vendor}.yaml") if vendor else None
        card = build_card(q, typed(copy.deepcopy(doc)), None, run)
        written = scorecard_bytes(card)
        back = Scorecard.from_json(json.loads(written))
        assert scorecard_bytes(back) == written, (name, vendor)
        assert back == card, (name, vendor)


def test_the_workload_trace_and_sources_keep_their_keys_in_order() -> None:
    doc, run = _summaries()["workload_and_trace"]
    card = build_card(None, typed(doc), None, run).to_json()
    assert list(card)[-4:] == ["cost", "sources", "workload", "trace"]
    assert list(card["sources"]) == ["ramp", "workload", "trace"]
    assert list(card["workload"]) == ["source", "name", "file", "sha256", "levels",
                                      "cold_basis", "headline"]
    shape = card["workload"]["levels"][0]["shapes"][0]
    assert list(shape) == ["name", "kind", "unit", "requests", "outcomes", "units",
                           "units_complete", "ttft_s", "tpot_p90_s", "verified",
                           "not_verified", "goodput", "turns", "later_vs_cold", "tasks"]
    assert list(shape["goodput"]["voice_agent"]) == ["fraction", "fraction_ci", "met",
                                                     "requests", "tokens_per_s", "status",
                                                     "reason"]
    assert shape["goodput"]["voice_agent"]["fraction_ci"] == [0.8, 1.0]
    assert list(shape["turns"][0]) == ["index", "requests", "prompt_tokens_p50",
                                       "cached_prompt_tokens_p50", "ttft_s", "tpot_p90_s",
                                       "cold_ttft_s", "ttft_vs_cold"]
    assert list(card["trace"]) == [
        "source", "file", "sha256", "speed", "requests", "outcomes", "client_bound",
        "not_verified", "send_lag_s", "prompt_tokens_sent", "output_tokens_asked",
        "output_tokens_received", "cached_prompt_tokens", "ttft_s", "tpot_p90_s", "goodput"]
    assert card["trace"]["send_lag_s"] == {"p50": 0.001, "p99": 0.02}
