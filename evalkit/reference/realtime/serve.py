"""The realtime reference endpoint served: one WebSocket server whose sessions speak the
protocol their path names (Gemini Live's `…BidiGenerateContent`, else OpenAI's Realtime),
over TLS when given a certificate (google-genai's client connects only with wss://)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from pathlib import Path

from websockets.asyncio.server import serve

from evalkit.reference.realtime.gemini import GeminiSession
from evalkit.reference.realtime.params import RealtimeParams
from evalkit.reference.realtime.server import Endpoint, StampedConnection, Truth


async def serve_realtime(host: str, port: int, params: RealtimeParams,
                         truth_log: Path | None, seed: int,
                         ready: Callable[[str], None] | None = None,
                         tls: tuple[Path, Path] | None = None) -> None:
    """Serve until cancelled; `ready(url)` is called once listening (https:// with
    `tls`, a certificate and its key)."""
    endpoint = Endpoint(params, Truth(truth_log), seed)
    endpoint.dialects = (("BidiGenerateContent", GeminiSession),)
    context = None
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
    async with serve(endpoint.handle, host, port, process_request=endpoint.admit,
                     process_response=endpoint.counted, ssl=context,
                     create_connection=StampedConnection, max_size=4 * 1024 * 1024,
                     compression=None) as server:
        bound = next(iter(server.sockets)).getsockname()
        if ready is not None:
            ready(f"{'https' if tls else 'http'}://{host}:{bound[1]}/v1")
        await asyncio.Future()
