"""What a vendor's reply says beside its stream: a Retry-After, an error body's message.
Vendor text, so bounded and cleaned before it reaches a record."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx

from evalkit.sanitize import clean

#: the longest a Retry-After is honoured (a vendor must not park a probe for an hour)
MAX_RETRY_AFTER_S = 30.0


def retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds (delta form), bounded; None when absent or an HTTP
    date (a vendor's clock is not ours to trust)."""
    try:
        seconds = float((value or "").strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if seconds == seconds else None


def bounded_retry(seconds: float | None) -> float | None:
    """A vendor's retry hint in seconds (from its own header or error body), bounded as a
    Retry-After is; None stays None."""
    if seconds is None or seconds != seconds:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


async def bounded_get(client: httpx.AsyncClient, url: str, timeout_s: float,
                      max_bytes: int) -> httpx.Response:
    """A GET read whole within `timeout_s` in all, keeping at most `max_bytes` of its
    body: a vendor page trickled a byte a read-timeout, or endless, costs a deadline and
    a cap, never a hang or the memory. Past the deadline it raises httpx.ReadTimeout, as
    a silent read would. Only a plain body is read (identity is asked for): a compressed
    one is decoded a whole read at a time, before any cap, and 1.6 KB of brotli made 2 GiB
    (httpx.DecodingError names the coding)."""
    try:
        async with asyncio.timeout(timeout_s), client.stream(
                "GET", url, headers={"accept-encoding": "identity"}) as response:
            coding = response.headers.get("content-encoding", "identity").strip().lower()
            if coding not in ("", "identity"):
                raise httpx.DecodingError(
                    f"the answer to GET {url} is {clean(coding, 20)}-encoded although "
                    "'accept-encoding: identity' was asked for", request=response.request)
            body = bytearray()
            async for part in response.aiter_bytes():
                body += part
                if len(body) >= max_bytes:
                    break
    except TimeoutError:
        raise httpx.ReadTimeout(f"no whole answer to GET {url} within {timeout_s:g} s"
                                ) from None
    headers = [(k, v) for k, v in response.headers.multi_items()
               if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers,
                          content=bytes(body[:max_bytes]), request=response.request)


def json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
        return None


def error_message(body: bytes) -> str:
    """The message of an error body (OpenAI's {"error": {"message"}} or FastAPI's
    {"detail"}), else the body itself: one clean line of at most 200 characters."""
    text = body.decode("utf-8", errors="replace")
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # (nested thousands deep: as text)
        if text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
            text = re.sub(r"<(style|script|title)\b.*?</\1\s*>|<[^>]*>", " ", text,
                          flags=re.S | re.I)  # an HTML error page: its words only
        return clean(text, 200)
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj))
        if isinstance(err, dict):
            return clean(str(err.get("message") or err.get("type") or err), 200)
        return clean(str(err), 200)
    return clean(str(obj), 200)
