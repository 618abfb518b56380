"""What a session costs: Q3's prices against a measured run, computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.summarize import summarize
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.records import RequestRecord
from evalkit.review.rules import RunTarget
from evalkit.review.scorecard import Scorecard, build_card
from tests.analysis.helpers import stream
from tests.review.helpers import typed

RUN = RunTarget(model="m-7b", endpoint="https://api.vendor.example/v1")


def _q(q3: str, q2: str = "Q2: {at_concurrency: 2, gpus: 2}\n",
       model: str = "m-7b", endpoint: str = "https://api.vendor.example/v1") -> Any:
    text = (f"schema: evalkit.questionnaire/1\nvendor: V\nmodel: {model}\n"
            f"endpoint: {endpoint}\n{q2}{q3}")
    return parse_questionnaire(text.encode(), "q.yaml")


def _records() -> list[RequestRecord]:
    """Levels 1, 2 and 4; prompts of 100 tokens and outputs of 10, but for level 2's
    prompts of 300 on every other request; level 4's half too slow for live suggestions
    (a first token at 0.48 s)."""
    recs = [stream(f"b{i}", t0=i, prompt_tokens=100) for i in range(10)]
    # a prefill scan at 10,000 tokens/s (0.1 ms a token)
    recs += [stream(f"p{p}", "prefill", t0=50 + i, ttft=0.05 + 0.0001 * p, n=2,
                    prompt_tokens=p) for i, p in enumerate((100, 1000, 2000, 4000))]
    t = 100.0
    for c in (1, 2, 4):
        for w in range(c):
            at = t + w * 0.05  # a closed loop: the next request as the last one ends
            for k in range(12):
                slow = c == 4 and k % 2 == 1
                ttft = 0.48 if slow else 0.1
                recs.append(stream(f"r{c}-{w}-{k}", "ramp", c, t0=at, ttft=ttft,
                                   prompt_tokens=300 if c == 2 and k % 2 else 100))
                at += ttft + 9 * 0.02
        t += 20
    return recs


def _card(q3: str, **kw: Any) -> Scorecard:
    return build_card(_q(q3, **kw), typed(summarize(_records())), run=RUN)


SEPARATE = "Q3: {input_price_per_mtok: 0.05, output_price_per_mtok: 0.20, currency: EUR}\n"


class TestSeparatePrices:
    def test_costs_at_the_concurrency_sold_by_hand(self) -> None:
        cost = _card(SEPARATE).to_json()["cost"]
        assert cost["currency"] == "EUR" and cost["pricing"] == "separate"
        assert cost["concurrency"] == 2 and "at the 2 streams Q2 sells" in cost["basis"]
        # level 2: 12 requests of 100 + 12 of 300 prompt tokens, 24 × 10 output tokens
        spent = (12 * 100 + 12 * 300) * 0.05 + 240 * 0.20
        assert cost["per_million_output_tokens"] == pytest.approx(spent / 240)
        assert cost["per_session"] == pytest.approx(spent / 24 / 1e6)
        lo, hi = cost["per_session_ci"]
        assert lo < cost["per_session"] < hi  # the prompts differ: the mean has a spread
        assert cost["prefill_share"] == pytest.approx(4800 * 0.05 / spent)
        # one stream at 50 tokens/s (20 ms a token) for an hour, input at the ratio
        assert cost["per_stream_hour"] == pytest.approx(50 * 3600 * spent / 240 / 1e6)
        assert cost["per_million_slo_tokens"]["voice_agent"] == pytest.approx(spent / 240)

    def test_slo_tokens_cost_more_where_requests_missed(self) -> None:
        """At level 4 half the requests miss live suggestions' 0.45 s: each token that met
        it costs twice the average one."""
        cost = _card(SEPARATE).to_json()["cost"]
        four = next(lv for lv in cost["levels"] if lv["concurrency"] == 4)
        per_m = (100 * 0.05 + 10 * 0.20) / 10
        assert four["per_million_output_tokens"] == pytest.approx(per_m)
        assert four["per_million_slo_tokens"]["live_suggestions"] == pytest.approx(2 * per_m)
        assert four["per_million_slo_tokens"]["voice_agent"] == pytest.approx(per_m)
        # the highest level within live suggestions' SLO is 2, and costed there
        assert cost["at_slo"]["live_suggestions"]["concurrency"] == 2
        assert cost["at_slo"]["live_suggestions"]["source"] == "goodput"

    def test_the_scorecard_reads_cost_back(self) -> None:
        card = _card(SEPARATE)
        again = Scorecard.from_json(card.to_json())
        assert again.cost == card.cost and again.to_json()["cost"] == card.to_json()["cost"]
        assert Scorecard.from_json({}).cost is None and Scorecard.from_json({}).to_json()[
            "cost"] == {}


class TestBlended:
    def test_a_blended_price_gives_the_ratio_table(self) -> None:
        cost = _card("Q3: {blended_price_per_mtok: 0.10, currency: USD}\n").to_json()["cost"]
        assert cost["pricing"] == "blended"
        table = cost["blended"]
        assert [r["ratio"] for r in table["rows"]] == [
            "1:4", "1:2", "1:1", "2:1", "4:1", "8:1", "16:1"]
        one = next(r for r in table["rows"] if r["ratio"] == "16:1")
        assert one["output_tokens"] == pytest.approx(10)
        assert one["input_tokens"] == pytest.approx(160)
        assert one["blended"] == pytest.approx(0.10 * 170 / 1e6)
        # no separate prices: derived from the measured rates, so that the measured
        # session costs what the blended price charges (20 input tokens per output token)
        assert "measured time per token" in table["separate_basis"]
        a, b = table["separate_input_per_mtok"], table["separate_output_per_mtok"]
        assert table["measured_ratio"] == pytest.approx(20)
        assert a * 4800 + b * 240 == pytest.approx(0.10 * 5040)
        # an output token takes 20 ms alone, an input one 0.1 ms: 200 times the price
        assert b / a == pytest.approx(200, rel=0.05)
        # the measured sessions are 20:1: every ratio in the table is more decode-heavy,
        # and the blended price undercharges it, most at 1:4 (by about 200 / 21)
        assert all(r["separate"] > r["blended"] for r in table["rows"])
        decode_heavy = next(r for r in table["rows"] if r["ratio"] == "1:4")
        assert decode_heavy["separate"] / decode_heavy["blended"] == pytest.approx(
            (2.5 * a + 10 * b) / (0.10 * 12.5), rel=1e-9)
        assert decode_heavy["separate"] / decode_heavy["blended"] > 8

    def test_beside_separate_prices_the_table_uses_them(self) -> None:
        q3 = ("Q3: {input_price_per_mtok: 0.05, output_price_per_mtok: 0.20, "
              "blended_price_per_mtok: 0.10, currency: USD}\n")
        table = _card(q3).to_json()["cost"]["blended"]
        row = next(r for r in table["rows"] if r["ratio"] == "1:4")
        assert row["separate"] == pytest.approx((2.5 * 0.05 + 10 * 0.20) / 1e6)
        assert table["separate_basis"] == "the questionnaire's separate prices"


class TestGpuHour:
    def test_a_gpu_hour_price_follows_the_measured_aggregate_rate(self) -> None:
        card = _card("Q3: {price_per_gpu_hour: 2.0, currency: USD}\n")
        cost = card.to_json()["cost"]
        s = summarize(_records())
        two = next(lv for lv in s["ramp"]["levels"] if lv["concurrency"] == 2)
        rate = two["aggregate_tokens_per_s"]
        assert cost["per_million_output_tokens"] == pytest.approx(4.0 / (rate * 3600) * 1e6)
        assert cost["per_stream_hour"] == pytest.approx(2.0)  # two GPUs' hour, two streams
        lo, hi = cost["per_million_output_tokens_ci"]
        assert lo < cost["per_million_output_tokens"] < hi
        assert cost["prefill_share"] is None
        level = next(lv for lv in cost["levels"] if lv["concurrency"] == 2)
        assert level["aggregate_tokens_per_s_per_gpu"] == pytest.approx(rate / 2)

    def test_without_gpus_there_is_no_cost(self) -> None:
        cost = _card("Q3: {price_per_gpu_hour: 2.0}\n", q2="Q2: {at_concurrency: 2}\n"
                     ).to_json()["cost"]
        assert cost["per_session"] is None and "names no number of GPUs" in cost["basis"]


class TestNothingToCost:
    @pytest.mark.parametrize("q3", ["Q3: {currency: USD, capacity_model: words}\n", ""])
    def test_no_prices_give_nulls_and_say_why(self, q3: str) -> None:
        cost = _card(q3).to_json()["cost"]
        assert {k: cost[k] for k in ("per_million_output_tokens", "per_session",
                                     "per_stream_hour", "prefill_share")} == dict.fromkeys(
            ("per_million_output_tokens", "per_session", "per_stream_hour",
             "prefill_share"))
        assert cost["per_million_slo_tokens"] == {}
        assert "no price per million input and output tokens" in cost["basis"]

    def test_a_claims_only_review_costs_nothing(self) -> None:
        cost = build_card(_q(SEPARATE), None).to_json()["cost"]
        assert cost["per_session"] is None and "claims-only" in cost["basis"]
        assert cost["currency"] == "EUR"

    def test_a_run_of_another_endpoint_costs_nothing(self) -> None:
        cost = build_card(_q(SEPARATE, endpoint="https://other.example/v1"),
                          typed(summarize(_records())), run=RUN).to_json()["cost"]
        assert cost["per_session"] is None and cost["basis"].startswith("not costed: ")


class TestAgainstTruth:
    def test_costs_equal_the_truth_logs_token_counts(self, reference: Any,
                                                     tmp_path: Path) -> None:
        """A run against the reference endpoint priced at 0.05 input and 0.20 output per
        million: cost per million output tokens and per session equal what the server's
        own token counts (its truth log) give, within 1 %."""
        from evalkit.probe.plan.settings import ProbeConfig
        from evalkit.probe.suite import run_probe
        from evalkit.rundir.store import read_run_files

        srv = reference("gpu", mode="thread", request_overhead_ms=10)
        out = tmp_path / "run"
        run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                              phases=("baseline", "ramp"),
                              overrides={"output_tokens": 24, "prompt_tokens": 200,
                                         "baseline": {"requests": 4},
                                         # level 2 is the one priced: it keeps the
                                         # quick profile's 36 requests, level 1 needs 8
                                         "ramp": {"levels": [1, 2],
                                                  "level_duration_s": 1.0,
                                                  "level_min_requests": 8,
                                                  "min_requests": {"2": 36}}}), out)
        _, records = read_run_files(out)
        truth = {t["request_id"]: t for t in srv.truth()}
        q = _q("Q3: {input_price_per_mtok: 0.05, output_price_per_mtok: 0.20, "
               "currency: USD}\n", model=srv.model, endpoint=srv.base_url)
        run = RunTarget(model=srv.model, endpoint=srv.base_url)
        cost = build_card(q, typed(summarize(records)), run=run).to_json()["cost"]
        ok = [truth[r.id] for r in records if r.phase == "ramp" and r.level == 2
              and r.outcome == "ok"]
        assert len(ok) >= 5
        spent = sum(t["billed_prompt_tokens"] * 0.05 + t["billed_tokens"] * 0.20 for t in ok)
        out_tokens = sum(t["billed_tokens"] for t in ok)
        assert cost["concurrency"] == 2
        assert cost["per_million_output_tokens"] == pytest.approx(spent / out_tokens, rel=0.01)
        assert cost["per_session"] == pytest.approx(spent / len(ok) / 1e6, rel=0.01)
        assert 0 < cost["prefill_share"] < 1


def test_a_session_costs_its_survivors_and_then_its_failures_too() -> None:
    """Two complete sessions (600 in, 15 out; 200 in, 5 out) and one that failed after
    serving 100 in, 5 out, at 0.05 / 0.20 per million: per complete session the mean of
    the two, and with the failed one's spend carried, that plus its cost over two."""
    import pandas as pd

    from evalkit.analysis.jsonread import read_as
    from evalkit.analysis.stats import token_sums
    from evalkit.analysis.summary_workload import WorkloadSection
    from evalkit.review.cost import Prices, unit_costs

    def sums(rows: list[tuple[int, int]]) -> dict[str, Any]:
        return token_sums(pd.DataFrame(rows, columns=["prompt_tokens", "output_tokens"])
                          .assign(ok=True))

    shape = {"unit_tokens": sums([(600, 15), (200, 5)]),
             "unit_tokens_failed": sums([(100, 5)])}
    prices = Prices("separate", input_per_token=0.05e-6, output_per_token=0.20e-6)
    (row,) = unit_costs(read_as(WorkloadSection, {
        "levels": [{"users": 4, "shapes": {"chat": shape}}]}), prices)
    one, two, broke = ((600 * 0.05 + 15 * 0.20) / 1e6, (200 * 0.05 + 5 * 0.20) / 1e6,
                       (100 * 0.05 + 5 * 0.20) / 1e6)
    assert row.units == 2 and row.failed_units == 1
    assert row.per_unit == pytest.approx((one + two) / 2, rel=1e-12)
    assert row.spent_failed == pytest.approx(broke, rel=1e-12)
    assert row.per_unit_with_failed == pytest.approx((one + two + broke) / 2, rel=1e-12)
    # a summary from before failed units were summed: no figure, not a zero
    del shape["unit_tokens_failed"]
    (old,) = unit_costs(read_as(WorkloadSection, {
        "levels": [{"users": 4, "shapes": {"chat": shape}}]}), prices)
    assert old.failed_units is None and old.per_unit_with_failed is None
