"""Precision under load from hand-built records: every figure below is computed by hand
from the answers given, and each test breaks when its rule does (evalkit.analysis.precision
and the ramp's `precision` and `length` limits)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from evalkit.analysis.precision import divergence, logprob_drift
from evalkit.analysis.summarize import summarize
from evalkit.analysis.summary import Summary
from evalkit.records import RequestRecord
from tests.analysis.helpers import closed_loop, stream

WORDS = [f" w{i}" for i in range(12)]


def answer(rid: str, phase: str, level: int, canary: str | None, pieces: list[str],
           model: str = "m-large", logprobs: list[float] | None = None, n: int = 10,
           t0: float = 0.0) -> RequestRecord:
    text = "".join(pieces)
    return stream(rid, phase, level, n=n, t0=t0, canary=canary, model=model,
                  output_sha256=hashlib.sha256(text.encode()).hexdigest(),
                  answer_text=text if canary else None,
                  answer_tokens=pieces if canary else None,
                  answer_logprobs=logprobs if canary else None)


def alone(canaries: int = 2, repeats: int = 3, model: str = "m-large") -> list[RequestRecord]:
    return [answer(f"a{k}-{r}", "baseline", 1, f"k{k}", [f" c{k}", *WORDS], model,
                   [-0.5] * 13)
            for r in range(repeats) for k in range(canaries)]


def level(c: int, answers: list[list[str]], model: str = "m-large",
          logprobs: list[float] | None = None) -> list[RequestRecord]:
    """`c` streams: ordinary requests, plus one canary answer per entry of `answers`
    (canary k{i % 2})."""
    recs = closed_loop("ramp", c, 2, ttft=0.1, gap=0.02)
    recs = [RequestRecord(**{**r.__dict__, "model": model}) for r in recs]
    for i, pieces in enumerate(answers):
        recs.append(answer(f"r{c}-{i}", "ramp", c, f"k{i % 2}", pieces, model, logprobs,
                           t0=0.05 * i))
    return recs


def same(i: int) -> list[str]:
    return [f" c{i % 2}", *WORDS]


def test_alone_learns_the_vendors_own_variation() -> None:
    recs = alone()
    # one of k1's three answers alone differs: of the answers beside each reference
    # (its modal one), k0's two match it, k1's one of two
    recs[1] = answer("odd", "baseline", 1, "k1", [" c1", " other"], logprobs=[-0.5, -1])
    p = summarize(recs + level(2, [same(i) for i in range(4)]))["precision"]
    assert p["canaries"] == 2
    assert p["alone"]["match_rate"] == pytest.approx(3 / 4)
    assert p["alone"]["distinct"] == 3 and p["alone"]["answers"] == 6


def test_an_engine_that_never_repeats_itself_alone_is_not_accused_under_load() -> None:
    """An engine whose temperature-0 answers change with any change in its arithmetic (a
    cached prompt, another batch: llama-server on a GGUF whose top logits tie within
    rounding) answers each canary differently even alone: it agrees with itself 0 % of
    the time there, so answers that differ under load are no breach, level 1 included
    (its reference counted as matching itself made that 50 %, and every level a breach)."""
    recs = [answer(f"a{k}-{r}", "baseline", 1, f"k{k}", [f" c{k}", f" r{r}", *WORDS])
            for r in range(2) for k in range(2)]
    differ = [[f" c{i % 2}", f" x{i}", *WORDS] for i in range(12)]
    s = summarize(recs + level(1, differ) + level(8, differ))
    p = s["precision"]
    assert p["alone"]["match_rate"] == 0.0 and p["alone"]["distinct"] == 4
    from evalkit.render.precision import answers_figure

    said = answers_figure(Summary.from_json(s).sections.precision, None, None)
    assert said is not None and "answers alone did not repeat" in said[1]
    assert [lv["status"] for lv in p["levels"]] == ["not_measured", "not_measured"]
    assert [lv["matches"] for lv in p["levels"]] == [0, 0] and p["degraded_at"] is None
    # a reproducible engine answering otherwise under load is still a breach
    p = summarize(alone() + level(1, [same(i) for i in range(12)]) + level(8, differ)
                  )["precision"]
    assert p["alone"]["match_rate"] == 1.0
    assert [lv["status"] for lv in p["levels"]] == ["held", "breach"]


def test_identical_answers_hold_and_nothing_is_degraded() -> None:
    p = summarize(alone() + level(2, [same(i) for i in range(6)]))["precision"]
    lv = p["levels"][0]
    assert (lv["concurrency"], lv["compared"], lv["matches"]) == (2, 6, 6)
    assert lv["match_rate"] == 1.0 and lv["status"] == "held" and lv["kind"] is None
    assert lv["match_rate_ci"][1] == 1.0 and 0.5 < lv["match_rate_ci"][0] < 0.6  # 6/6 exact
    assert lv["first_divergence_tokens"] is None
    assert lv["logprob_drift"] is None  # these canaries at load had no logprobs
    assert lv["models_seen"] == ["m-large"] and p["degraded_at"] is None


def test_a_silent_swap_breaches_as_answers_that_differ_from_the_start() -> None:
    """Other words from the first token, the same name: a breach (0 of 6 matching: the
    whole interval under 90 %), named as what another model's answers look like."""
    other = [[" z", *WORDS[::-1]] for _ in range(6)]
    s = summarize(alone() + level(2, [same(i) for i in range(6)]) + level(4, other))
    p = s["precision"]
    low, high = p["levels"]
    assert low["status"] == "held"
    assert high["match_rate"] == 0 and high["match_rate_ci"][1] < 0.9
    assert high["status"] == "breach" and high["kind"] == "diverged_at_start"
    assert high["first_divergence_tokens"] == 0
    assert p["degraded_at"] == 4
    ramp = {lv["concurrency"]: lv for lv in s["ramp"]["levels"]}
    assert "precision" in ramp[4]["breaches"] and ramp[2]["breaches"] == []
    assert s["ramp"]["first_degraded"] == "precision"
    assert s["ramp"]["first_breach_concurrency"] == 4


def test_a_reported_swap_breaches_even_when_the_words_match() -> None:
    """The response names a model that never answered alone: a breach whatever the text."""
    p = summarize(alone() + level(4, [same(i) for i in range(6)], model="m-small")
                  )["precision"]
    lv = p["levels"][0]
    assert lv["match_rate"] == 1.0 and lv["models_not_seen_alone"] == ["m-small"]
    assert lv["status"] == "breach" and lv["kind"] == "model_reported"


def test_late_divergence_reads_as_varied_not_as_a_swap() -> None:
    """Answers that part at token 8, same model: 'varied'. With 4 of 6 still matching the
    exact interval (22 %–96 %) straddles the 90 % floor: a tie, never a breach; with 3 of
    6 it reaches only 88 %: a breach, still named as varied answers, not a swap."""
    late = [[*same(i)[:8], " fork", *WORDS[8:]] for i in range(3)]
    p = summarize(alone() + level(2, late[:2] + [same(i) for i in range(2, 6)]))["precision"]
    lv = p["levels"][0]
    assert lv["matches"] == 4 and lv["first_divergence_tokens"] == 8
    assert lv["status"] == "tie" and lv["kind"] == "varied"
    assert p["degraded_at"] is None
    p = summarize(alone() + level(2, late + [same(i) for i in range(3, 6)]))["precision"]
    assert p["levels"][0]["match_rate_ci"][1] < 0.9
    assert p["levels"][0]["status"] == "breach" and p["levels"][0]["kind"] == "varied"


def test_divergence_counts_the_reference_tokens_wholly_shared() -> None:
    ref = {"answer_text": " a bb ccc", "answer_tokens": [" a", " bb", " ccc"]}
    assert divergence(ref, {"answer_text": " a bb ccc"}) == 3
    assert divergence(ref, {"answer_text": " a bx"}) == 1  # ' bb' is not wholly shared
    assert divergence(ref, {"answer_text": "x"}) == 0
    assert divergence(ref, {"answer_text": None}) is None


def test_logprob_drift_is_the_mean_gap_over_the_shared_tokens() -> None:
    ref = {"answer_tokens": [" a", " b", " c"], "answer_logprobs": [-0.1, -0.2, -0.3]}
    got = {"answer_tokens": [" a", " b", " x"], "answer_logprobs": [-0.2, -0.6, -9.0]}
    assert logprob_drift(ref, got) == pytest.approx((0.1 + 0.4) / 2)
    assert logprob_drift(ref, {"answer_tokens": [" a"], "answer_logprobs": None}) is None


def test_drift_is_measured_on_matching_answers_too() -> None:
    p = summarize(alone() + level(2, [same(i) for i in range(4)], logprobs=[-0.75] * 13)
                  )["precision"]
    assert p["levels"][0]["logprob_drift"] == pytest.approx(0.25)
    assert p["logprobs"] is True and p["divergence_unit"] == "vendor tokens (logprobs)"


def test_no_canaries_no_section() -> None:
    assert summarize([stream("b")])["precision"] is None


def _lengths(c: int, tokens: int, k: int = 20) -> list[RequestRecord]:
    """k requests, c at a time (a closed loop: each level holds its concurrency)."""
    return [stream(f"l{c}-{i}", "ramp", c, n=tokens, t0=(i // c) * 0.3) for i in range(k)]


@pytest.mark.parametrize("tokens, breach", [(10, False), (9, False), (5, True)])
def test_length_breaches_when_the_whole_interval_is_short(tokens: int, breach: bool) -> None:
    """Baseline outputs of 10 tokens; a level of 9 (10 % short: at the floor) holds, one
    of 5 breaches on length."""
    base = [stream(f"b{i}", n=10, t0=i * 0.3) for i in range(10)]
    s = summarize(base + _lengths(1, 10) + _lengths(4, tokens))
    lv = {d["concurrency"]: d for d in s["ramp"]["levels"]}[4]
    assert lv["length_ratio"] == pytest.approx(tokens / 10)
    assert ("length" in lv["breaches"]) is breach
    if breach:
        assert s["ramp"]["first_degraded"] == "length"
    assert "length" in s["ramp"]["judged_on"]


def test_length_straddling_its_floor_is_a_tie() -> None:
    """Half the level's outputs 10 tokens, half 6: mean 8 (under the 9 floor), but the
    interval of the mean reaches above it. (Four streams at once, so the level is not
    under-loaded, which would leave it unjudged.)"""
    base = [stream(f"b{i}", n=10, t0=i * 0.3) for i in range(10)]
    mixed = [stream(f"m{i}", "ramp", 4, n=10 if i % 2 else 6, t0=(i // 4) * 0.2)
             for i in range(4)]
    lv: dict[str, Any] = summarize(base + mixed)["ramp"]["levels"][0]
    assert lv["length_ratio"] == pytest.approx(0.8)
    assert lv["length_ratio_ci"][1] > 0.9 and "length" in lv["ties"]
    assert "length" not in lv["breaches"]


def test_an_answer_cut_short_matches_and_is_left_to_length() -> None:
    """The answer alone stopped at its 5th token: the same words as far as they go, so a
    match for precision (counted as cut short); its length is the `length` limit's."""
    cut = [same(i)[:5] for i in range(2)]
    lv = summarize(alone() + level(2, cut + [same(i) for i in range(2, 6)])
                   )["precision"]["levels"][0]
    assert (lv["matches"], lv["cut_short"], lv["status"]) == (6, 2, "held")


def test_one_early_parting_is_no_pattern() -> None:
    """A single answer parting at its first token is what a batch flip can do: 'varied';
    two or more all parting there read as answers that differ from the start."""
    first = [[" c0", " zz", *WORDS[1:]]]
    lv = summarize(alone() + level(2, first + [same(i) for i in range(1, 6)])
                   )["precision"]["levels"][0]
    assert lv["first_divergence_tokens"] == 1 and lv["kind"] == "varied"


def test_a_busy_client_does_not_void_an_answer_breach() -> None:
    """A client-bound level supports no timing conclusion, but the client cannot make the
    vendor cut its outputs: a length breach there stands (and only that)."""
    from evalkit.analysis.ramp import judge_ramp

    base = {"ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02},
            "achieved_output_tokens": {"mean": 10.0, "sd": 0.0, "n": 20}}
    lv = {"concurrency": 4, "requests": 20, "outcomes": {"ok": 20},
          "ttft_s": {"p90": 0.5}, "tpot_s": {"p90": 0.02}, "failure_rate": 0.0,
          "achieved_output_tokens": {"mean": 5.0, "sd": 0.0, "n": 20}}
    out = judge_ramp([lv], base, client_bound=[4])["levels"][0]
    assert out["status"] == "breached" and out["breaches"] == ["length"]
    healthy = {**lv, "achieved_output_tokens": base["achieved_output_tokens"]}
    assert judge_ramp([healthy], base, client_bound=[4])["levels"][0]["status"] == "client_bound"


def test_the_open_loops_canaries_are_judged_too() -> None:
    """The rate phase's requests have no level: its canaries are judged as one group."""
    rate = [answer(f"q{i}", "rate", None, f"k{i % 2}", [" z", *WORDS], t0=0.1 * i)  # type: ignore[arg-type]
            for i in range(4)]
    p = summarize(alone() + rate)["precision"]
    assert p["rate"]["concurrency"] is None and p["rate"]["compared"] == 4
    assert p["rate"]["status"] == "breach" and p["levels"] == []


def _digested(records: list[RequestRecord]) -> list[RequestRecord]:
    """The records as a corpus run keeps them: no answer text, each piece a digest."""
    return [RequestRecord(**{**r.__dict__, "answer_text": None, "answer_tokens": [
        hashlib.sha256(p.encode()).hexdigest()[:12] for p in r.answer_tokens]})
        if r.answer_tokens else r for r in records]


def test_answers_kept_as_digests_are_judged_piece_by_piece() -> None:
    """A corpus run keeps its canaries' pieces as digests and no text: the answers
    cut short still match, and where they part is still found, piece by piece."""
    ref = {"answer_text": None, "answer_tokens": ["d1", "d2", "d3"]}
    assert divergence(ref, {"answer_text": None, "answer_tokens": ["d1", "x", "d3"]}) == 1
    assert divergence(ref, {"answer_text": None, "answer_tokens": ["d1", "d2"]}) == 2
    assert divergence(ref, {"answer_text": None, "answer_tokens": None}) is None
    cut = [same(i)[:5] for i in range(2)]
    lv = summarize(_digested(alone() + level(2, cut + [same(i) for i in range(2, 6)]))
                   )["precision"]["levels"][0]
    assert (lv["matches"], lv["cut_short"], lv["status"]) == (6, 2, "held")
    parted = [[f" c{i % 2}", " z", *WORDS[1:]] for i in range(6)]
    lv = summarize(_digested(alone() + level(2, parted)))["precision"]["levels"][0]
    assert lv["status"] == "breach" and lv["first_divergence_tokens"] == 1
