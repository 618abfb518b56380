"""Vendor text made safe: what a record keeps of a response's rate-limit headers."""

from __future__ import annotations

import httpx

from evalkit.sanitize import MAX_HEADER_VALUE, MAX_HEADERS, rate_limit_headers


class TestKept:
    def test_only_rate_limit_headers_and_retry_after(self) -> None:
        kept = rate_limit_headers(httpx.Headers([
            ("content-type", "text/event-stream"), ("X-RateLimit-Limit-Requests", "600"),
            ("x-ratelimit-remaining-tokens", "149000"), ("x-ratelimit-reset-requests", "1s"),
            ("Retry-After", "3"), ("x-ratelimit-other", "no"), ("set-cookie", "secret")]))
        assert kept == {"x-ratelimit-limit-requests": "600",
                        "x-ratelimit-remaining-tokens": "149000",
                        "x-ratelimit-reset-requests": "1s", "retry-after": "3"}

    def test_none_when_the_response_sent_none(self) -> None:
        assert rate_limit_headers({"content-type": "application/json"}) is None

    def test_values_are_sanitised_and_capped_in_length_and_count(self) -> None:
        hostile = {f"x-ratelimit-limit-h{i}": "\x1b[2J" + "9" * 500 for i in range(50)}
        kept = rate_limit_headers(hostile)
        assert kept is not None and len(kept) == MAX_HEADERS
        value = kept["x-ratelimit-limit-h0"]
        assert "\x1b" not in value and len(value) <= MAX_HEADER_VALUE + len("… [cut]")
        # names are matched whatever their case; the first spelling's value is kept
        assert rate_limit_headers({"Retry-After": "1", "retry-after": "9"}) == {
            "retry-after": "1"}
