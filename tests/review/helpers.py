"""A summary, a questionnaire and a judge shared by the review's tests (from the former
tests/test_reconcile.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import Summary
from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.model import Questionnaire
from evalkit.review.reconcile import Reconciliation, reconcile
from evalkit.review.rules import RunTarget

SAMPLES = Path(__file__).resolve().parents[2] / "questionnaires"


LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _level(c: int) -> dict[str, Any]:
    tpot = (10 + 0.5 * c) / 1000
    requests = 200
    rejected = 4 if c == 512 else 0
    return {
        "concurrency": c, "requests": requests,
        "outcomes": {"ok": requests - rejected, "rejected": rejected},
        "ttft_s": {"p50": 0.15 + 0.005 * c, "p90": 0.17 + 0.01 * c, "p99": 0.2 + 0.012 * c,
                   "n": 200},
        "tpot_s": {"p50": tpot, "p90": 1.2 * tpot, "p99": 1.4 * tpot, "n": 200},
        "itl_s": {"p50": tpot, "p90": 1.3 * tpot, "p99": 1.5 * tpot, "n": 20000},
        "stream_tokens_per_s": {"p50": 1 / tpot, "p90": 1.1 / tpot, "p99": 1.15 / tpot,
                                "n": 200},
        "aggregate_tokens_per_s": 0.95 * c / tpot,
        "stalls": 0,
    }


def make_summary(**client: Any) -> dict[str, Any]:
    """A GPU-like endpoint: itl degrades first, past 16 streams (TPOT p90 2× baseline)."""
    base = _level(1)
    return {
        "schema": "evalkit.summary/1",
        "connect": {"usage_reported": True, "tokens_per_chunk": {"p50": 1}, "rtt_s": 0.001},
        "baseline": {k: base[k] for k in ("ttft_s", "tpot_s", "itl_s", "stream_tokens_per_s")}
        | {"requests": 20},
        "prefill": {"tokens_per_s": 4900.0, "overhead_s": 0.09, "r2": 0.99, "points": []},
        "ramp": {"levels": [_level(c) for c in LEVELS], "max_sustained_concurrency": 16,
                 "first_degraded": "itl"},
        "client": {"loop_lag_p99_s": 0.001, "client_bound": False, **client},
        "validity": {"status": "valid", "reasons": []},
    }


SUMMARY = make_summary()


def typed(doc: Any) -> Summary | None:
    """A summary.json document read as the typed `Summary` the review takes (None stays
    None: a claims-only review)."""
    return None if doc is None else Summary.from_json(doc)


#: what the synthetic run probed; q() names the same unless a fragment says otherwise
RUN = RunTarget(model="m-7b", endpoint="https://api.vendor.example/v1")


def q(text: str) -> Questionnaire:
    """A questionnaire from a YAML fragment (schema, and RUN's model/endpoint, added)."""
    head = "schema: evalkit.questionnaire/1\n"
    if not text.startswith("model:"):
        head += f"model: {RUN.model}\n"
    if "endpoint:" not in text:
        head += f"endpoint: {RUN.endpoint}\n"
    return parse_questionnaire((head + text).encode(), "t.yaml")


def judge(text: str, summary: Any = SUMMARY, tol: Tolerances | None = None) -> Reconciliation:
    """The review of a questionnaire fragment against the synthetic run."""
    return reconcile(q(text), typed(summary), tol, RUN)


def sample(name: str, summary: Any = SUMMARY) -> Reconciliation:
    """A sample questionnaire against a run of the model and endpoint it names."""
    questionnaire = load_questionnaire(SAMPLES / f"{name}.yaml")
    run = RunTarget(model=questionnaire.model, endpoint=questionnaire.endpoint)
    return reconcile(questionnaire, typed(summary), None, run)


#: Q6 is judged beside our run at the concurrency Q2 sells (16 here: PANEL_RUN measured
#: 170 tokens/s per stream there, the panel's median)
PANEL = """
Q2: {at_concurrency: 16}
Q6:
  output_tokens_per_s: {p50: 170, p90: 520, p99: 767}
  window: last 7 days
  source: production
"""


WRITTEN = ("  reconciliation: The headline is one stream on an idle node with a cached "
           "prefix; production runs 64 streams per node.\n")


def _tied(first_tie: int | None, ties: tuple[str, ...] = ("ttft",),
          breach: int | None = 32, first: str | None = "itl") -> dict[str, Any]:
    """SUMMARY whose ramp has a tie at `first_tie` (about 400 requests would decide it)."""
    s = json.loads(json.dumps(SUMMARY))
    for lv in s["ramp"]["levels"]:
        if lv["concurrency"] == first_tie:
            lv |= {"status": "tie", "ties": list(ties), "tie_requests": 400}
    s["ramp"] |= {"first_tie_concurrency": first_tie, "first_breach_concurrency": breach,
                  "first_degraded": first,
                  "max_sustained_concurrency": 8 if first_tie == 16 else 16}
    return s


def _at(c: int, **fields: Any) -> dict[str, Any]:
    """SUMMARY with level `c` changed (a dict value updates the level's own dict)."""
    s = json.loads(json.dumps(SUMMARY))
    for lv in s["ramp"]["levels"]:
        if lv["concurrency"] == c:
            for k, v in fields.items():
                lv[k] = lv[k] | v if isinstance(v, dict) else v
    return s


#: SUMMARY with 170 tokens/s per stream (p50) at the 16 streams PANEL's Q2 sells
PANEL_RUN = _at(16, stream_tokens_per_s={"p50": 170.0, "p90": 187.0, "p99": 196.0})


def forthright_run() -> dict[str, Any]:
    """SUMMARY where the 4 streams forthright.yaml sells run at its panel's median, 40
    tokens/s per stream (as the reference `gpu` profile does: 1 / (12 + 3.5 × 4) ms), its
    canaries answering at every level as they did alone."""
    s = _at(4, stream_tokens_per_s={"p50": 40.0, "p90": 44.0, "p99": 46.0})
    s["precision"] = {"alone": {"match_rate": 1.0, "models_seen": ["m-large"]},
                      "levels": [{"concurrency": lv["concurrency"], "match_rate": 1.0,
                                  "compared": 4, "matches": 4, "status": "ok",
                                  "kind": None, "models_not_seen_alone": []}
                                 for lv in s["ramp"]["levels"]]}
    return s
