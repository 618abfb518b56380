"""Each row's typed payloads (what was measured, what was claimed, the cost) write their
part of scorecard.json and read it back as the same value: `to_json` then `from_json`
gives an equal object, a changed field gives another document, and a hostile document
reads as not stated, never as a crash."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

import pytest

from evalkit.analysis.summary_sections import RatePeak, RetryAfter
from evalkit.questionnaire.model import (
    ConcurrencyAnswer,
    Distribution,
    ObservabilityAnswer,
    PricingAnswer,
    RateLimitsAnswer,
    ThroughputAnswer,
    TtftAnswer,
)
from evalkit.review.claimed import CLAIM_TYPES, PanelClaim, claimed_from_json
from evalkit.review.costcard import (
    BlendedRow,
    BlendedTable,
    Cost,
    LevelCost,
    SloCost,
    UnitCost,
)
from evalkit.review.measured import (
    MEASURED_TYPES,
    AtLevel,
    AtRejection,
    ConcurrencyMeasured,
    Measured,
    ObservabilityMeasured,
    OurPanelMeasured,
    PanelMeasured,
    PrefillDecodeMeasured,
    RateLimitsMeasured,
    Shown,
    ThroughputMeasured,
    TtftMeasured,
    measured_from_json,
)


def _wire(doc: Any) -> Any:
    """The document as a scorecard.json file holds it (tuples are lists, keys strings)."""
    return json.loads(json.dumps(doc))


RATE = Shown(40.5, 52.0, 60.25, 120, {"p50": (39.0, 42.0), "p90": (None, 55.0)})
#: every row's measured type, each field given (Q6 three ways: its keys are the levels)
MEASURED: dict[str, Measured] = {
    "Q1": TtftMeasured(16, 230.0, 330.5, 610.0, 700.0, 200),
    "Q2": ThroughputMeasured(16, 55.5, 888.0),
    "Q3": PrefillDecodeMeasured(4900.0, 95.2, (4000.0, None), (90.0, 99.0)),
    "Q4": ConcurrencyMeasured(16, "itl", 32, 24),
    "Q5": ObservabilityMeasured("https://m.example/metrics", "vllm",
                                {"itl": "vllm:inter_token_latency_seconds"}, True, 120, 6),
    "Q6": PanelMeasured(RATE, AtLevel(8, RATE), AtLevel(16, Shown(30.0)), Shown(0.2, n=3),
                        OurPanelMeasured("a to b", 8, 7, 1, 0, (16, 32), RATE, Shown(0.1))),
    "rate_limits": RateLimitsMeasured(2, 5.5, 60.0, AtRejection(5.5, 4.0, True, 2, 30.0),
                                      RatePeak(31.0, True, 60.0), RetryAfter(2, 1.0, 2.0, 3.0),
                                      {"requests": 30}),
}


@pytest.mark.parametrize("row", list(MEASURED))
def test_every_measured_type_reads_back_equal(row: str) -> None:
    value = MEASURED[row]
    assert isinstance(value, MEASURED_TYPES[row])
    doc = _wire(value.to_json())
    assert measured_from_json(row, doc) == value
    assert _wire(measured_from_json(row, doc).to_json()) == doc  # type: ignore[union-attr]


@pytest.mark.parametrize("row", list(MEASURED))
def test_a_changed_field_is_another_document(row: str) -> None:
    """Every field is written: change any one and the document, and what reads back, differ."""
    value = MEASURED[row]
    for f in fields(value):
        got = getattr(value, f.name)
        step = {int: lambda v: v + 1, float: lambda v: v + 0.5, str: lambda v: v + "x",
                bool: lambda v: not v, AtLevel: lambda v: AtLevel(v.concurrency * 2, v.shown),
                Shown: lambda v: replace(v, p50=(v.p50 or 0) + 1)}.get(type(got))
        if step is None:
            continue
        other: Any = step(got)
        changed = replace(value, **{f.name: other})
        doc = _wire(changed.to_json())
        assert doc != _wire(value.to_json()), (row, f.name)
        assert measured_from_json(row, doc) != value, (row, f.name)


def test_q6_keeps_its_levels_apart() -> None:
    """Q6 writes its levels into its keys' names: the sustained level and the level sold
    read back as themselves, and a sold level alone is not taken for a sustained one."""
    sold_only = PanelMeasured(None, None, AtLevel(16, RATE), Shown(0.2))
    assert list(sold_only.to_json()) == ["stream_tokens_per_s_at_16", "ttft_s_at_16"]
    assert PanelMeasured.from_json(_wire(sold_only.to_json())) == sold_only
    both = MEASURED["Q6"]
    assert list(both.to_json()) == [  # type: ignore[union-attr]
        "baseline_stream_tokens_per_s", "stream_tokens_per_s_at_8", "stream_tokens_per_s_at_16",
        "ttft_s_at_16", "our_panel"]
    assert PanelMeasured().empty and not sold_only.empty


def test_the_partial_keys_are_written_only_when_measured() -> None:
    """Q1 writes a percentile only where it was claimed and measured; Q2-Q5 write every key."""
    assert TtftMeasured(16, ttft_p90_ms=330.0).to_json() == {"concurrency": 16,
                                                              "ttft_p90_ms": 330.0}
    assert ThroughputMeasured().to_json() == {"concurrency": None,
                                              "stream_tokens_per_s_p50": None,
                                              "aggregate_tokens_per_s": None}


@pytest.mark.parametrize("doc", [
    {"concurrency": "16", "ttft_p50_ms": "fast", "reasoning_first": True},
    {"concurrency": 1e400, "ttft_p90_ms": float("nan")}, {}])
def test_a_hostile_measurement_reads_as_not_stated(doc: dict[str, Any]) -> None:
    got = measured_from_json("Q1", doc)
    assert isinstance(got, TtftMeasured) and got.ttft_p50_ms is None
    assert got.concurrency is None and got.reasoning_first is None
    assert measured_from_json("Q1", ["not", "an", "object"]) is None
    assert measured_from_json("Q7", {"concurrency": 1}) is None
    assert PanelMeasured.from_json({"stream_tokens_per_s_at_x": {}, "ttft_s_at_4": 3}) == \
        PanelMeasured()


CLAIMS = {
    "Q1": TtftAnswer(source="production", evidence=("https://x.example",), ttft_p50_ms=250,
                     ttft_p90_ms=330.5, at_concurrency=16),
    "Q2": ThroughputAnswer(output_tokens_per_s_per_gpu=80, at_concurrency=16, gpus=2,
                           distribution=Distribution(70, 90.5, window="w")),
    "Q3": PricingAnswer(input_price_per_mtok=0.1, output_price_per_mtok=2, currency="EUR"),
    "Q4": ConcurrencyAnswer(max_concurrent_streams_per_node=8, nodes=2, first_degrades="itl"),
    "Q5": ObservabilityAnswer(observability="per_stream", metrics_url="https://m.example"),
    "Q6": PanelClaim(output_tokens_per_s=Distribution(170, 520.0), window="w", headline=1107,
                     headline_unit="output_tokens_per_s"),
    "rate_limits": RateLimitsAnswer(requests_per_minute=600, scope="per_key"),
}


@pytest.mark.parametrize("row", list(CLAIMS))
def test_every_claim_reads_back_as_written(row: str) -> None:
    """A vendor's 250 stays 250 and 330.5 stays 330.5: the same bytes are written again."""
    claim = CLAIMS[row]
    assert isinstance(claim, CLAIM_TYPES[row])
    text = json.dumps(claim.to_dict())
    back = claimed_from_json(row, json.loads(text))
    assert back == claim and json.dumps(back.to_dict() if back else None) == text
    changed = replace(claim, source="lab")
    assert claimed_from_json(row, json.loads(json.dumps(changed.to_dict()))) != claim


def test_q6_claims_the_panel_under_its_alias_only_with_numbers() -> None:
    said = CLAIMS["Q6"].to_dict()
    assert list(said)[-3:] == ["headline", "headline_unit", "panel"]
    assert said["panel"] == said["output_tokens_per_s"] == {"p50": 170, "p90": 520.0}
    assert "panel" not in PanelClaim(output_tokens_per_s=Distribution(window="w")).to_dict()
    # a hostile headline is not stated; a panel under its alias only (an older scorecard)
    # is the panel
    assert claimed_from_json("Q6", {"panel": {"p50": 1}, "headline": "big"}) == PanelClaim(
        output_tokens_per_s=Distribution(p50=1))


LEVEL = LevelCost(4, 0.6, (0.5, 0.7), 2e-5, (1.9e-5, 2.1e-5), 0.08, None, 0.25,
                  {"voice_agent": 1.2, "batch": None}, {"voice_agent": (1.0, None)},
                  input_per_output=3.5)
GPU = LevelCost(8, 1.5, None, 3e-5, None, 0.5, None, None, {}, {},
                aggregate_tokens_per_s_per_gpu=400.0,
                aggregate_tokens_per_s_per_gpu_ci=(390.0, 410.0), per_gpu=True)
COSTS = {
    "costed": Cost("USD", "Q3's separate prices", "separate", LEVEL, 4,
                   (replace(LEVEL, concurrency=2), LEVEL),
                   {"voice_agent": SloCost(2, "goodput", 0.5, 1e-5, 0.05, 1.1)},
                   (UnitCost(4, "chat", 2, 2e-5, (1.8e-5, 2.2e-5), 300.0, 20.0, 1, 6e-6,
                             2.3e-5, False),),
                   BlendedTable(2, (BlendedRow("1:4", 25.0, 100.0, 2.5e-4, None),),
                                "no separate prices", 3.5, None, None)),
    "gpu_hour": Cost("EUR", "Q3's price per GPU-hour", "gpu_hour", GPU, None, (GPU,)),
    "not_costed": Cost(None, "not costed: no run", "separate",
                       workload=(UnitCost(1, "chat", 1, 1e-5),)),
    "no_prices": Cost(None, "Q3 gives no price"),
}


@pytest.mark.parametrize("name", list(COSTS))
def test_the_cost_reads_back_equal(name: str) -> None:
    cost = COSTS[name]
    text = json.dumps(cost.to_json())
    back = Cost.from_json(json.loads(text))
    assert back == cost and json.dumps(back.to_json()) == text


def test_the_cost_keeps_its_two_shapes() -> None:
    """Costed: the figures, each with its interval, then where; not costed: every figure
    null and no interval (scorecard.json's two shapes, in their own key orders)."""
    assert list(COSTS["costed"].to_json()) == [
        "currency", "per_million_output_tokens", "per_session", "per_stream_hour",
        "per_million_output_tokens_ci", "per_session_ci", "per_stream_hour_ci",
        "prefill_share", "per_million_slo_tokens", "per_million_slo_tokens_ci", "basis",
        "pricing", "concurrency", "concurrency_sold", "levels", "at_slo", "workload",
        "blended"]
    assert list(COSTS["no_prices"].to_json()) == [
        "currency", "per_million_output_tokens", "per_session", "per_stream_hour",
        "prefill_share", "per_million_slo_tokens", "basis", "pricing", "concurrency",
        "levels", "at_slo", "blended", "workload"]
    assert "aggregate_tokens_per_s_per_gpu" in GPU.to_json()
    assert "input_per_output" not in GPU.to_json()
    changed = replace(COSTS["costed"], at=replace(LEVEL, per_session=3e-5))
    assert Cost.from_json(_wire(changed.to_json())) != COSTS["costed"]
