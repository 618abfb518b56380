"""The reference endpoint holds 1,000 concurrent streams on loopback (the issue's floor).

Figures (tokens/s, write timing error at 100/500/1,000 streams) are in
`bench/bench_reference.py`; this only checks the floor, with a lean raw-socket client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from evalkit.reference.server import ReferenceServer

STREAMS = 1000


async def _one(host: str, port: int, body: bytes, rid: str) -> bool:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write((f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\n"
                  f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
                  f"x-request-id: {rid}\r\nconnection: close\r\n\r\n").encode() + body)
    tail = b""
    try:
        while data := await reader.read(65536):
            tail = (tail + data)[-32:]
    finally:
        writer.close()
    return tail.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")


@pytest.mark.slow
def test_holds_a_thousand_concurrent_streams(reference: Callable[..., ReferenceServer]) -> None:
    """1,000 streams open at once all run to [DONE], decoding in one batch together."""
    srv = reference("gpu", decode_base_ms=250, decode_per_stream_ms=0, max_batch=2000,
                    request_overhead_ms=0, max_prefill_tokens=0, prefill_overhead_ms=1,
                    fault_role_first_chunk=0)
    host, port = srv.root_url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"model": srv.model, "stream": True, "ignore_eos": True,
                       "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
                      ).encode()

    async def run() -> list[bool]:
        return list(await asyncio.gather(*(_one(host, int(port), body, f"s{i}")
                                           for i in range(STREAMS))))

    assert sum(asyncio.run(run())) == STREAMS
    truth = srv.truth(timeout_s=60)
    assert len(truth) == STREAMS and {t["outcome"] for t in truth} == {"ok"}
    assert all(t["completion_tokens"] == 8 for t in truth)
    # all were decoding at the same time: the last admission precedes the first end
    assert max(t["admitted_ns"] for t in truth) < min(t["end_ns"] for t in truth)
