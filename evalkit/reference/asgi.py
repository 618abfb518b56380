"""The ASGI plumbing of the reference endpoint: the message types, reading a request's
body, a header or a query parameter, and sending a whole JSON response. The app speaks
raw ASGI (no web framework), so these few helpers are all it needs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from evalkit.reference.parse import BadRequest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def query_param(scope: Scope, name: str) -> str | None:
    """The first value of a query parameter (the api-version Azure clients send), or None."""
    from urllib.parse import parse_qs

    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def header(scope: Scope, name: bytes) -> str | None:
    """A request header's value (`name` in lower case), or None when it was not sent."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def read_body(receive: Receive) -> bytes:
    """The whole request body; a client that leaves before sending it is a BadRequest."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest(400, "client went away before sending its body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def send_json(send: Send, status: int, payload: Any,
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """One whole JSON response, compact, with its length."""
    await _send_body(send, status, json.dumps(payload, separators=(",", ":")).encode(),
                     headers)


async def send_error(send: Send, err: BadRequest,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A BadRequest as its status and OpenAI-shaped JSON body."""
    await _send_body(send, err.status, err.body(), headers)


async def _send_body(send: Send, status: int, body: bytes,
                     headers: list[tuple[bytes, bytes]] | None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body, "more_body": False})
