"""The reference endpoint's rate limit (`rate_limit_rpm`): the sliding window by itself,
then over real loopback HTTP, checked against the truth log.

A window of a few seconds stands for the minute: at 30 requests/min a 4-second window
admits 2 per 4 s. What the HTTP test checks is the window's count and its headers, not a
minute's wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

from evalkit.reference.params import get_profile
from evalkit.reference.ratelimit import RateDecision, RateLimiter
from evalkit.reference.server import ReferenceServer

Factory = Callable[..., ReferenceServer]
S = 1_000_000_000


def _limiter(rpm: float, window_s: float) -> RateLimiter:
    return RateLimiter(get_profile("gpu", {"rate_limit_rpm": rpm,
                                           "rate_limit_window_s": window_s}))


def _headers(decision: RateDecision | None) -> dict[str, str]:
    assert decision is not None
    return {k.decode(): v.decode() for k, v in decision.headers}


class TestSlidingWindow:
    def test_off_by_default(self) -> None:
        assert RateLimiter(get_profile("gpu")).admit(0) is None

    def test_the_window_admits_its_share_of_the_minute_and_slides(self) -> None:
        """30/min over 6 s admits 3; the fourth waits until the first leaves the window."""
        rl = _limiter(30, 6)
        assert rl.allowance == 3
        fates = [rl.admit(t * S // 10) for t in (0, 10, 20, 30)]  # 0, 1, 2, 3 s
        assert [d.admitted for d in fates if d] == [True, True, True, False]
        refused = fates[3]
        assert refused is not None
        assert refused.retry_after_s == 3  # the one of t=0 leaves at 6 s: 3 s from t=3
        assert "3 requests admitted in the last 6 s" in (refused.reason or "")
        assert _headers(refused) == {"x-ratelimit-limit-requests": "30",
                                     "x-ratelimit-remaining-requests": "0",
                                     "x-ratelimit-reset-requests": "3.000s"}
        assert [_headers(d)["x-ratelimit-remaining-requests"] for d in fates[:3] if d] == [
            "2", "1", "0"]
        # at 6 s the first has left: one more is admitted, and a refusal cost nothing
        later = rl.admit(6 * S)
        assert later is not None and later.admitted
        again = rl.admit(6 * S + 1)
        assert again is not None and not again.admitted
        assert again.retry_after_s == 1  # the one of t=1 leaves at 7 s

    def test_a_window_shorter_than_its_rate_still_admits_one(self) -> None:
        assert _limiter(6, 1).allowance == 1


class TestOverHttp:
    def test_429_with_retry_after_and_headers_on_every_response(self, reference: Factory
                                                                ) -> None:
        """At 30/min over a 4 s window, 5 requests in a row: 2 stream, 3 get 429; every
        response says the limit and what is left; the truth log names the reason."""
        srv = reference(mode="thread", rate_limit_rpm=30, rate_limit_window_s=4,
                        request_overhead_ms=0)

        async def five() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=30) as client:
                out = []
                for i in range(5):
                    out.append(await client.post(
                        srv.base_url + "/chat/completions", headers={"x-request-id": f"r{i}"},
                        json={"model": srv.model, "max_tokens": 3, "stream": True,
                              "messages": [{"role": "user", "content": "hi"}]}))
                return out

        started = time.monotonic()
        responses = asyncio.run(five())
        assert time.monotonic() - started < 4  # all inside one window
        assert [r.status_code for r in responses] == [200, 200, 429, 429, 429]
        assert [r.headers["x-ratelimit-remaining-requests"] for r in responses] == [
            "1", "0", "0", "0", "0"]
        assert all(r.headers["x-ratelimit-limit-requests"] == "30" for r in responses)
        assert all(1 <= int(r.headers["retry-after"]) <= 4 for r in responses[2:])
        assert all(r.json()["error"]["code"] == 429 for r in responses[2:])
        truth = {t["request_id"]: t for t in srv.truth()}
        assert [truth[f"r{i}"]["outcome"] for i in range(5)] == ["ok", "ok"] + ["rejected"] * 3
        assert all("2 requests admitted in the last 4 s" in truth[f"r{i}"]["rejected_by"]
                   for i in range(2, 5))
        assert "rejected_by" not in truth["r0"]
