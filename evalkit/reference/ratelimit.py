"""The reference endpoint's rate limit (`rate_limit_rpm`): a sliding window of requests,
answered with 429 and Retry-After beyond it, and rate-limit headers on every response.

A sliding window of `rate_limit_window_s` admits `rate_limit_rpm x window / 60` requests
(at least one): a 6-second window at 30 requests/min admits 3 per 6 s, so a test sees a
"30 per minute" limit in seconds. Only admitted requests fill the window (a 429 costs
the client nothing), counted when they arrive. Every answered request carries
`x-ratelimit-limit-requests` (the per-minute figure, as vendors state it),
`x-ratelimit-remaining-requests` (what is left of the current window) and
`x-ratelimit-reset-requests` (seconds until the oldest request leaves it, e.g. `1.5s`).
Kept apart from the engine and the faults: a rate limit is a gateway's, in front of both.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from evalkit.reference.asgi import Message, Send
from evalkit.reference.params import Profile

Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class RateDecision:
    """One request's fate at the gateway: admitted or not, the headers it gets, and (when
    refused) why, for the truth log."""

    admitted: bool
    headers: Headers
    retry_after_s: int = 0
    reason: str | None = None


class RateLimiter:
    """A sliding window of admitted requests' arrival times (ns)."""

    def __init__(self, profile: Profile) -> None:
        self.rpm = float(profile["rate_limit_rpm"])
        self.window_ns = int(float(profile["rate_limit_window_s"]) * 1e9)
        self.allowance = max(1, math.floor(self.rpm * self.window_ns / 60e9))
        self._admitted: deque[int] = deque()

    @property
    def on(self) -> bool:
        """Whether a limit is set (rate_limit_rpm > 0 and a window)."""
        return self.rpm > 0 and self.window_ns > 0

    def admit(self, now_ns: int) -> RateDecision | None:
        """The decision for a request arriving at `now_ns`; None when no limit is set."""
        if not self.on:
            return None
        window = self._admitted
        while window and window[0] <= now_ns - self.window_ns:
            window.popleft()
        admitted = len(window) < self.allowance
        if admitted:
            window.append(now_ns)
        reset_s = max((window[0] + self.window_ns - now_ns) / 1e9, 0.0) if window else 0.0
        headers = [(b"x-ratelimit-limit-requests", f"{self.rpm:g}".encode()),
                   (b"x-ratelimit-remaining-requests",
                    str(self.allowance - len(window)).encode()),
                   (b"x-ratelimit-reset-requests", f"{reset_s:.3f}s".encode())]
        if admitted:
            return RateDecision(True, headers)
        retry = max(1, math.ceil(reset_s))
        return RateDecision(False, headers, retry, (
            f"rate limit: {len(window)} requests admitted in the last "
            f"{self.window_ns / 1e9:g} s, the window's allowance of {self.allowance} "
            f"({self.rpm:g}/min)"))


def with_headers(send: Send, headers: Headers) -> Send:
    """`send`, adding `headers` to the response's start (whatever route answers)."""

    async def sending(message: Message) -> None:
        if message.get("type") == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *headers]}
        await send(message)

    return sending
