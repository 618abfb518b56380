"""summary.json's `rate_limits` from hand-built records: the sliding window before the
first 429, counted by hand."""

from __future__ import annotations

import pytest

from evalkit.analysis.frames import records_frame
from evalkit.analysis.ratelimits import rate_limit_section
from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord
from tests.analysis.helpers import stream


def _sent(rid: str, t0: float, prompt: int = 100, out: int = 10, **kw: object
          ) -> RequestRecord:
    """An ok request sent at t0 with `prompt` input tokens and `out` output tokens that
    lasts 0.1 + (out - 1) x 0.02 s."""
    return stream(rid, t0=t0, n=out, prompt_tokens=prompt, http_status=200, **kw)


def _limited(rid: str, t0: float, retry: float | None = 2.0, status: int = 429
             ) -> RequestRecord:
    return RequestRecord(id=rid, phase="baseline", level=1, outcome="rejected", t0_s=t0,
                         http_status=status, retry_after_s=retry, end_s=0.005)


def _section(records: list[RequestRecord], window_s: float = 60.0) -> dict:
    return rate_limit_section(records_frame(records), window_s)


class TestOnset:
    def test_a_full_minute_before_the_first_429(self) -> None:
        """One request a second from t=0; a 429 at t=70.5: the window [10.5, 70.5) holds
        the requests sent at 11..70, 60 of them, whatever came before."""
        recs = [_sent(f"r{t}", float(t), prompt=100 + t, out=30) for t in range(71)]
        recs.append(_limited("x", 70.5))
        s = _section(recs)
        on = s["onset"]
        assert (on["requests"], on["full_window"], on["window_s"]) == (60, True, 60.0)
        assert on["requests_per_minute"] == 60.0
        assert on["input_tokens"] == sum(100 + t for t in range(11, 71))
        assert on["input_tokens_per_minute"] == float(sum(100 + t for t in range(11, 71)))
        assert on["output_tokens_per_minute"] == 1800.0
        assert on["tokens_per_minute"] == on["input_tokens_per_minute"] + 1800.0
        assert on["offered_requests_per_minute"] is None
        assert on["in_flight"] == 1  # each lasts 0.68 s: the one sent at 70 only
        assert s["first_rejection_s"] == 70.5 and s["rejected_429"] == 1
        assert s["onset_full_window"] == on

    def test_a_run_shorter_than_the_window_is_scaled_to_what_it_saw(self) -> None:
        """30 requests in 3 s, then a 429: 30 in the minute before it (the run sent
        nothing earlier), 600/min at the rate offered over the 3 s it saw."""
        recs = [_sent(f"r{i}", i * 0.1) for i in range(30)]
        recs.append(_limited("x", 3.0))
        on = _section(recs)["onset"]
        assert (on["requests"], on["full_window"]) == (30, False)
        assert on["window_s"] == pytest.approx(3.0)
        assert on["requests_per_minute"] == 30.0
        assert on["offered_requests_per_minute"] == pytest.approx(600.0)
        assert on["offered_tokens_per_minute"] == pytest.approx(30 * 110 * 20)
        assert _section(recs)["onset_full_window"] is None

    def test_the_first_429_with_a_whole_window_is_kept_too(self) -> None:
        """A burst rejected at 1 s, then one request every 2 s, rejected again at 61.5:
        the later window is whole and says what the endpoint admits in a minute."""
        recs = [_sent(f"b{i}", i * 0.1) for i in range(10)] + [_limited("x1", 1.0)]
        recs += [_sent(f"s{k}", 2.0 + 2 * k) for k in range(30)]  # 2, 4, ..., 60
        recs.append(_limited("x2", 61.5))
        s = _section(recs)
        assert s["onset"]["full_window"] is False and s["onset"]["requests"] == 10
        full = s["onset_full_window"]
        # [1.5, 61.5): the steady requests at 2..60 (30 of them); the burst is outside
        assert (full["full_window"], full["requests"], full["at_s"]) == (True, 30, 61.5)
        assert full["requests_per_minute"] == 30.0
        assert s["rejected_429"] == 2

    def test_a_shorter_window_scales_to_the_minute(self) -> None:
        """rate_limit_window_s = 6: 3 requests in the 6 s before the 429 are 30/min."""
        recs = [_sent(f"r{t}", float(t)) for t in (0, 2, 4, 6.5)] + [_limited("x", 7.0)]
        on = _section(recs, window_s=6.0)["onset"]
        assert (on["requests"], on["full_window"], on["requests_per_minute"]) == (3, True, 30.0)

    def test_the_edge_counts_what_lies_within_the_429s_round_trip_of_the_start(self
                                                                                ) -> None:
        """window 4 s; the 429 sent at 4.002 took 5 ms: a request sent at 0.0 is 2 ms
        before the window's start (the endpoint may still have counted it) and one at
        0.005 is 3 ms inside it (it may not have). `low` leaves both out, `high` lets
        both in; the count itself keeps the one inside."""
        recs = [_sent("a", 0.0), _sent("b", 0.005, prompt=7), _sent("c", 2.0),
                _limited("x", 4.002)]
        on = _section(recs, window_s=4.0)["onset"]
        assert on["requests"] == 2 and on["requests_per_minute"] == 30.0
        edge = on["edge"]
        assert edge["s"] == pytest.approx(0.005)
        assert edge["low"]["requests_per_minute"] == 15.0  # c only
        assert edge["high"]["requests_per_minute"] == 45.0  # a, b, c
        assert edge["low"]["input_tokens_per_minute"] == 100 * 15.0
        assert edge["high"]["input_tokens_per_minute"] == (100 + 7 + 100) * 15.0

    def test_a_stalled_429_widens_the_edge_only_to_a_tenth_of_the_window(self) -> None:
        recs = [_sent("a", 0.0), _sent("c", 2.0),
                RequestRecord(id="x", phase="baseline", level=1, outcome="rejected",
                              t0_s=4.5, http_status=429, end_s=30.0)]
        edge = _section(recs, window_s=4.0)["onset"]["edge"]
        assert edge["s"] == pytest.approx(0.4)
        assert edge["high"]["requests_per_minute"] == 15.0  # c; a, 0.5 s before it, is out

    def test_only_429_is_a_rate_limit(self) -> None:
        """A 503 is an overloaded endpoint: no onset, and it is not counted as admitted."""
        recs = [_sent("a", 0.0), _limited("b", 1.0, status=503), _sent("c", 2.0)]
        s = _section(recs)
        assert s["onset"] is None and s["rejected_429"] == 0 and s["retry_after_s"] is None

    def test_summarize_uses_the_thresholds_window(self) -> None:
        recs = [_sent(f"r{t}", float(t)) for t in (0, 2, 4, 6.5)] + [_limited("x", 7.0)]
        s = summarize(recs, {"thresholds": {"rate_limit_window_s": 6}})["rate_limits"]
        assert s["window_s"] == 6.0 and s["onset"]["requests_per_minute"] == 30.0
        assert summarize(recs)["rate_limits"]["window_s"] == 60.0


class TestRetryAfterAndPeak:
    def test_retry_after_min_median_max(self) -> None:
        recs = [_sent("a", 0.0)] + [_limited(f"x{i}", 1.0 + i, retry=r)
                                    for i, r in enumerate((1.0, 5.0, 2.0, None))]
        assert _section(recs)["retry_after_s"] == {"n": 3, "min": 1.0, "median": 2.0,
                                                   "max": 5.0}

    def test_a_run_never_rejected_gives_its_busiest_window(self) -> None:
        """Over 120 s, one request a second, then 20 in the last second: the busiest
        minute holds 60 + 19 of them."""
        recs = [_sent(f"r{t}", float(t)) for t in range(120)]
        recs += [_sent(f"q{i}", 119.0 + i * 0.05) for i in range(1, 20)]
        s = _section(recs)
        assert s["onset"] is None and s["rejected_429"] == 0
        assert s["peak"] == {"requests_per_minute": 79.0, "full_window": True,
                             "window_s": 60.0}

    def test_a_short_run_never_rejected_is_scaled_to_its_span(self) -> None:
        recs = [_sent(f"r{i}", i * 0.5) for i in range(11)]  # 10 gaps over 5 s
        assert _section(recs)["peak"] == {"requests_per_minute": 120.0,
                                          "full_window": False, "window_s": 5.0}


class TestHeaders:
    def test_headers_seen_and_the_limit_most_responses_state(self) -> None:
        h = {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "599"}
        recs = [_sent("a", 0.0, rate_limit_headers=h),
                _sent("b", 1.0, rate_limit_headers={**h, "x-ratelimit-remaining-requests":
                                                    "598"}),
                _sent("c", 2.0, rate_limit_headers={"x-ratelimit-limit-requests": "30",
                                                    "x-ratelimit-limit-tokens": "bogus"}),
                _sent("d", 3.0)]
        s = _section(recs)
        assert s["headers"] == {"x-ratelimit-limit-requests": ["600", "30"],
                                "x-ratelimit-limit-tokens": ["bogus"],
                                "x-ratelimit-remaining-requests": ["599", "598"]}
        assert s["header_limits"] == {"requests": 600.0, "tokens": None,
                                      "input_tokens": None, "output_tokens": None}

    def test_values_kept_per_header_are_bounded(self) -> None:
        recs = [_sent(f"r{i}", float(i), rate_limit_headers={
            "x-ratelimit-remaining-requests": str(i)}) for i in range(10)]
        assert _section(recs)["headers"] == {
            "x-ratelimit-remaining-requests": ["0", "1", "2", "3"]}

    def test_no_headers_no_section_parts(self) -> None:
        s = _section([_sent("a", 0.0)])
        assert s["headers"] is None and s["header_limits"] is None
