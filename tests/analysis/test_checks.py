"""Data-quality checks on the records (`evalkit.analysis.checks`): the prefix cache, streaming."""

from __future__ import annotations

import pytest

from evalkit.analysis.checks import cache_check, prompt_honesty, streaming_check
from evalkit.analysis.frames import frames, records_frame
from evalkit.analysis.prefill import prefill_fit
from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord
from tests.analysis.helpers import stream


class TestChecks:
    @pytest.mark.parametrize(("achieved", "short"), [(94, True), (96, False), (100, False)])
    def test_output_length_shortfall(self, achieved: int, short: bool) -> None:
        """More than 5 % short of the requested 100 tokens is flagged."""
        s = summarize([stream("a", n=achieved, requested_output_tokens=100)])
        check = s["checks"]["output_length"]
        assert check["checked"] == 1 and check["flagged"] is short

    @pytest.mark.parametrize(("usage", "flagged"), [(150, True), (105, False), (70, True)])
    def test_usage_honesty(self, usage: int, flagged: bool) -> None:
        """The vendor bills 150 for 100 tokens we counted: flagged; 105 is tokenizer noise."""
        s = summarize([stream(f"a{i}", n=100, usage=usage, counted=100) for i in range(3)])
        assert s["checks"]["usage_honesty"]["flagged"] is flagged
        assert s["checks"]["usage_honesty"]["checked"] == 3

    @pytest.mark.parametrize(("inflated", "usage", "flagged"), [
        (2, 80, True),   # the two slowest billed 10x: their TPOT read 10x faster
        (1, 80, False),  # one alone is not a pattern
        (2, 10, False),  # 2 tokens over 8: a tokenizer's noise on a short answer
        (0, 8, False)])
    def test_usage_far_from_the_runs_own_ratio_on_a_few(
            self, inflated: int, usage: int, flagged: bool) -> None:
        """A vendor inflating usage on a few requests only (the slow ones), the median
        untouched, is flagged by its outliers; the run's ratio is the yardstick."""
        recs = [stream(f"a{i}", n=8, usage=usage if i < inflated else 9, counted=8)
                for i in range(10)]
        s = summarize(recs)
        check = s["checks"]["usage_honesty"]
        assert check["outliers"] == (inflated if usage == 80 else 0)
        assert check["flagged"] is flagged
        said = " ".join(s["validity"]["reasons"])
        assert ("streamed on 2 requests alone" in said) is flagged, said

    @pytest.mark.parametrize(("repeat", "cached"), [(0.02, True), (0.19, False),
                                                    (0.1, False)])
    def test_cache(self, repeat: float, cached: bool) -> None:
        """Repeat TTFT 0.02 vs 0.2 s first: a prefix cache; 0.19 s: none; 0.1 s, exactly
        half: not "much faster" (the threshold is a strict bound)."""
        recs = []
        for i in range(3):
            recs.append(stream(f"c{i}a", "cache", t0=2 * i, ttft=0.2, prompt_id=f"p{i}"))
            recs.append(stream(f"c{i}b", "cache", t0=2 * i + 1, ttft=repeat, prompt_id=f"p{i}"))
        out = cache_check(records_frame(recs))
        assert out is not None
        assert out["pairs"] == 3 and out["prefix_cache"] is cached
        assert out["repeat_over_first"] == pytest.approx(repeat / 0.2)

    def test_cache_pairs_only_the_cache_phase(self) -> None:
        """The same prompt sent earlier in the baseline is not the cache check's first
        send; the figures are the pair's own medians."""
        recs = [stream("b0", "baseline", t0=0, ttft=1.0, prompt_id="p"),
                stream("c0", "cache", t0=10, ttft=1.0, prompt_id="p"),
                stream("c1", "cache", t0=20, ttft=0.2, prompt_id="p")]
        assert cache_check(records_frame(recs)) == {
            "pairs": 1, "first_ttft_s": 1.0, "repeat_ttft_s": 0.2, "repeat_over_first": 0.2,
            "prefix_cache": True, "threshold": 0.5}

    @pytest.mark.parametrize("recs", [
        # a first TTFT of 0 s: nothing can be "much faster" than it
        [stream("c0", "cache", t0=0, ttft=0.0, prompt_id="q"),
         stream("c1", "cache", t0=1, ttft=0.1, prompt_id="q")],
        # no repeat at all
        [stream("c0", "cache", t0=0, ttft=0.3, prompt_id="q")],
    ])
    def test_cache_without_a_pair_says_nothing(self, recs: list[RequestRecord]) -> None:
        assert cache_check(records_frame(recs)) == {
            "pairs": 0, "first_ttft_s": None, "repeat_ttft_s": None, "repeat_over_first": None,
            "prefix_cache": None, "threshold": 0.5}

    def test_network_share_and_connect(self) -> None:
        """RTT 10 ms against a 100 ms baseline TTFT: network is 10 % of TTFT."""
        recs = [stream(f"rtt{i}", "rtt", None, t0=i, n=0, usage=None, counted=None,
                       e2e_s=0.01) for i in range(5)]
        recs += [stream(f"b{i}", t0=10 + i) for i in range(5)]
        recs.append(stream("c", "connect", tpc=3, usage=None, counted=30))
        s = summarize(recs)
        assert s["checks"]["network"]["rtt_s"] == pytest.approx(0.01)
        assert s["checks"]["network"]["share_of_ttft"] == pytest.approx(0.1)
        assert s["connect"]["rtt_s"] == pytest.approx(0.01)
        assert s["connect"]["usage_reported"] is False
        assert s["connect"]["tokens_per_chunk"]["p50"] == 3

    def test_open_loop_reports_send_lag(self) -> None:
        """A slow client cannot hide queueing: send lag p50/p99 are reported."""
        recs = [stream(f"r{i}", "rate", None, t0=i * 0.5, send_lag_s=0.001 * i)
                for i in range(11)]
        s = summarize(recs)["rate"]
        assert s["send_lag_s"]["p50"] == pytest.approx(0.005)
        assert s["send_lag_s"]["p99"] == pytest.approx(0.0099)
        assert s["arrival_rps"] == pytest.approx(2.0)
        assert s["steady_state"]["basis"] == "arrivals"


def _shaped(rid: str, sizes: list[int], phase: str = "baseline",
            outcome: str = "ok") -> RequestRecord:
    """A request whose content came in chunks of these token counts."""
    chunks = [(0.1 + 0.02 * i, k) for i, k in enumerate(sizes)]
    total = sum(sizes)
    return RequestRecord(id=rid, phase=phase, level=1, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=float(len(rid)), chunks=chunks, ttft_s=chunks[0][0],
                         e2e_s=chunks[-1][0], output_tokens=total,
                         output_tokens_estimated=False, usage_completion_tokens=total,
                         counted_output_tokens=total,
                         finish_reason="length" if outcome == "ok" else None)


class TestStreamingCheck:
    """Did the endpoint stream? An answer sent whole has a TTFT and no rhythm."""

    @staticmethod
    def _run(streamed: int, whole: list[list[int]]) -> list[RequestRecord]:
        recs = [_shaped(f"s{i}", [1] * 8) for i in range(streamed)]
        recs += [_shaped(f"w{i}", sizes) for i, sizes in enumerate(whole)]
        # not judged: 3 tokens are too few, prefill asks for 2, a cut stream is no answer
        return [*recs, _shaped("short", [3]), _shaped("pre", [8], phase="prefill"),
                _shaped("cut", [8], outcome="incomplete")]

    def test_counts_the_answers_that_came_in_one_chunk(self) -> None:
        """8 tokens in one chunk, and 4 in one (4 is enough to judge), are unstreamed;
        2 of 4 in the largest chunk is half, not most."""
        recs = self._run(17, [[8], [4], [2, 1, 1]])
        assert streaming_check(*frames(recs)) == {
            "checked": 20, "one_chunk": 2, "one_chunk_fraction": 0.1, "flagged": True,
            "tolerance": 0.05}

    def test_the_tolerance_itself_is_not_over_it(self) -> None:
        recs = self._run(18, [[8], [2, 1, 1]])
        check = streaming_check(*frames(recs))
        assert (check["one_chunk_fraction"], check["flagged"]) == (0.05, False)

    def test_nothing_to_judge_says_so(self) -> None:
        assert streaming_check(*frames([_shaped("short", [3])])) == {
            "checked": 0, "one_chunk": 0, "one_chunk_fraction": None, "flagged": None,
            "tolerance": 0.05}

    def test_an_endpoint_that_did_not_stream_degrades_the_run(self) -> None:
        """Through summarize: the check in `checks`, the reason in the run's validity, and
        the run's own threshold (unstreamed_share) is the one applied."""
        recs = self._run(17, [[8], [4], [2, 1, 1]])
        s = summarize(recs, {"run_status": "complete"})
        assert s["checks"]["streaming"]["one_chunk"] == 2
        assert s["validity"]["status"] == "degraded"
        assert "the endpoint did not stream: 2 of 20 requests came with most of their " \
               "output in one chunk, so TPOT and stream rates describe no stream" \
               in s["validity"]["reasons"]
        lenient = summarize(recs, {"run_status": "complete",
                                   "thresholds": {"unstreamed_share": 0.2}})
        assert lenient["checks"]["streaming"]["flagged"] is False
        assert not any("did not stream" in r for r in lenient["validity"]["reasons"])


def _prompted(rid: str, counted: int, reported: int | None, phase: str = "baseline",
              ttft: float = 0.1) -> RequestRecord:
    """A request whose prompt we counted `counted` tokens and the vendor `reported`."""
    return stream(rid, phase, ttft=ttft, n=2,
                  prompt_tokens=reported if reported is not None else counted,
                  prompt_tokens_estimated=reported is None, counted_prompt_tokens=counted)


class TestPromptHonesty:
    """Issue 24: the vendor's prompt_tokens replaced our count and nothing checked it."""

    @pytest.mark.parametrize(("reported", "flagged"), [
        (768, True), (449, True), (448, False), (256, False), (192, False), (191, True)])
    def test_the_vendor_count_against_ours(self, reported: int, flagged: bool) -> None:
        """256 tokens we counted: 3x is flagged; up to 25 % more plus 128 template tokens
        (256 × 1.25 + 128 = 448) or 25 % fewer (192) is our tokenizer's drift."""
        s = summarize([_prompted(f"a{i}", 256, reported) for i in range(3)])
        check = s["checks"]["prompt_honesty"]
        assert check["checked"] == 3 and check["flagged"] is flagged
        assert check["disagreeing"] == (3 if flagged else 0)
        assert check["usage_over_counted"]["p50"] == pytest.approx(reported / 256)

    def test_the_template_allowance_is_on_top_of_the_drift(self) -> None:
        """A short prompt with a chat template: 64 counted, 64 × 1.25 + 128 = 208 billed
        is on the line; 209 is over it."""
        on = prompt_honesty(records_frame([_prompted("a", 64, 208)]))
        over = prompt_honesty(records_frame([_prompted("a", 64, 209)]))
        assert (on["disagreeing"], over["disagreeing"]) == (0, 1)

    def test_without_usage_or_our_count_nothing_is_checked(self) -> None:
        """No usage (our count stands in) and records from before the field: unchecked."""
        old = RequestRecord(id="o", phase="baseline", level=1, outcome="ok", t0_s=0.0,
                            prompt_tokens=999, prompt_tokens_estimated=False)
        check = prompt_honesty(records_frame([_prompted("a", 256, None), old]))
        assert (check["checked"], check["flagged"], check["disagreeing"]) == (0, None, 0)

    def test_most_requests_must_disagree(self) -> None:
        """One odd count in three is counted, not flagged; two in three is flagged."""
        one = [_prompted("a", 256, 768), _prompted("b", 256, 256), _prompted("c", 256, 256)]
        two = [_prompted("a", 256, 768), _prompted("b", 256, 768), _prompted("c", 256, 256)]
        assert prompt_honesty(records_frame(one))["flagged"] is False
        assert prompt_honesty(records_frame(one))["disagreeing"] == 1
        assert prompt_honesty(records_frame(two))["flagged"] is True

    def test_the_thresholds_are_overridable_and_echoed(self) -> None:
        recs = [_prompted(f"a{i}", 256, 768) for i in range(3)]
        s = summarize(recs, {"thresholds": {"prompt_disagreement": 2.5}})
        assert s["checks"]["prompt_honesty"]["flagged"] is False  # 3x within +250 %
        assert s["thresholds"]["prompt_disagreement"] == 2.5
        assert s["thresholds"]["prompt_template_tokens"] == 128


class TestPrefillOnOurCount:
    """A vendor reporting 3x its prompts read 3x as fast; the fit uses our count then."""

    LENGTHS = (256, 512, 1024, 2048)

    def _run(self, factor: float, inflate: tuple[int, ...] | None = None) -> list[RequestRecord]:
        """Prefill at 20,000 tokens/s (TTFT = 0.05 + p / 20,000), the vendor reporting
        `factor` × the prompt (on the lengths in `inflate`, all by default)."""
        return [_prompted(f"p{p}-{i}", p,
                          round(p * factor) if inflate is None or p in inflate else p,
                          "prefill", ttft=0.05 + p / 20_000)
                for p in self.LENGTHS for i in range(2)]

    def test_an_honest_count_is_fitted_as_reported(self) -> None:
        s = summarize(self._run(1.0))
        assert s["prefill"]["tokens_per_s"] == pytest.approx(20_000)
        assert s["prefill"]["lengths_from"] == "prompt_tokens"
        assert s["prefill"]["prompt_tokens_estimated"] is False

    def test_a_3x_count_is_fitted_on_ours(self) -> None:
        """On the vendor's counts the fit reads 60,000 tokens/s; on ours, the true 20,000."""
        assert prefill_fit(records_frame(self._run(3.0)))["tokens_per_s"] == pytest.approx(
            60_000)
        s = summarize(self._run(3.0))
        assert s["checks"]["prompt_honesty"]["flagged"] is True
        assert s["prefill"]["tokens_per_s"] == pytest.approx(20_000)
        assert s["prefill"]["lengths_from"] == "counted_prompt_tokens"
        assert s["prefill"]["prompt_tokens_estimated"] is True
        assert [p["prompt_tokens"] for p in s["prefill"]["points"]] == list(self.LENGTHS)

    def test_inflating_only_the_long_prompts_is_not_enough_to_game_the_fit(self) -> None:
        """Honest on most requests (the check is not flagged), 3x on the two longest
        prompts: a steeper-looking line. One prefill request off is enough to fit on ours."""
        honest = [_prompted(f"b{i}", 256, 256) for i in range(20)]
        s = summarize(honest + self._run(3.0, inflate=(1024, 2048)))
        check = s["checks"]["prompt_honesty"]
        assert check["flagged"] is False and check["prefill_disagreeing"] == 4
        assert s["prefill"]["lengths_from"] == "counted_prompt_tokens"
        assert s["prefill"]["tokens_per_s"] == pytest.approx(20_000)
