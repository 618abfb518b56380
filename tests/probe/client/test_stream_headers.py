"""The rate-limit headers a record keeps, over real HTTP: the ones the reference endpoint
sent (which headers, and their bounds: tests/test_sanitize.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer


def test_records_keep_the_headers_the_reference_sent(
        reference: Callable[..., ReferenceServer]) -> None:
    """At 30/min over a 4 s window: 2 admitted, then 429s; each record holds the
    headers of its own response, as the limiter counted them."""
    srv = reference(mode="thread", rate_limit_rpm=30, rate_limit_window_s=4,
                    request_overhead_ms=0)

    async def run() -> list[RequestRecord]:
        target = Target(srv.base_url, srv.model, tag_requests=True, timeout_s=30)
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            return [await prober.stream(synthetic(32, 3, f"p{i}"), "baseline", 1)
                    for i in range(4)]

    recs = asyncio.run(run())
    assert [r.outcome for r in recs] == ["ok", "ok", "rejected", "rejected"]
    heads = [r.rate_limit_headers or {} for r in recs]
    assert [h.get("x-ratelimit-remaining-requests") for h in heads] == ["1", "0", "0", "0"]
    assert all(h.get("x-ratelimit-limit-requests") == "30" for h in heads)
    assert [h.get("retry-after") is not None for h in heads] == [False, False, True, True]
    assert [str(int(r.retry_after_s or 0)) for r in recs[2:]] == [
        h["retry-after"] for h in heads[2:]]
    truth = {t["request_id"]: t for t in srv.truth()}
    assert [truth[r.id]["outcome"] for r in recs] == ["ok", "ok", "rejected", "rejected"]
    # a record written and read back keeps them
    again = RequestRecord.from_dict(json.loads(recs[2].to_json()))
    assert again.rate_limit_headers == recs[2].rate_limit_headers
