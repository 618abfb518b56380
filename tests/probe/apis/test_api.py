"""Anthropic Messages and OpenAI Responses, probed over real loopback HTTP.

The reference endpoint serves both APIs (`evalkit.reference.wire`) and logs its own truth
per request, so each adapter is checked the way OpenAI chat is: TTFT against the server's
first content write, thinking-first (TTFA) against its first answer write, output tokens
from usage (not estimated), an error event mid-stream → error, a stream without its end
event → incomplete, and the auth headers each style sends. The adapters' parsing of each
documented event, pure, is in tests/probe/wire/test_sse.py (in `make mutation`'s reach).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.client.clients import Target, make_client
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.run.connect import check_endpoint
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer

NEW_APIS = ("anthropic-messages", "openai-responses")


def _one(srv: ReferenceServer, api: str, out: int = 8, **target: Any
         ) -> tuple[int, RequestRecord, dict[str, Any]]:
    """One stream through the prober; (origin, record, the server's truth line for it)."""

    async def run() -> tuple[int, RequestRecord]:
        t = Target(srv.base_url, srv.model, tag_requests=True,
                   api=api, secret="sk-evalkit-test-key", **target)
        async with Prober(t, time.perf_counter_ns(), "a") as prober:
            rec = await prober.stream(synthetic(48, out, f"a-{api}"), "baseline", 1)
            return prober.origin_ns, rec

    origin, rec = asyncio.run(run())
    truth = {t["request_id"]: t for t in srv.truth()}[rec.id]
    return origin, rec, truth


class TestOverHTTP:
    @pytest.mark.parametrize("api", NEW_APIS)
    def test_ttft_thinking_first_and_usage_match_the_truth(self, reference: Any,
                                                           api: str) -> None:
        """TTFT is the first thinking/reasoning write, TTFA the first answer write, the
        output count the server's own (not estimated), prompt tokens from usage."""
        srv = reference("gpu", fault_reasoning_tokens=3, decode_base_ms=8)
        origin, rec, truth = _one(srv, api)
        assert rec.outcome == "ok", rec.error
        assert rec.output_tokens == truth["completion_tokens"] == 8
        assert not rec.output_tokens_estimated and rec.usage_completion_tokens == 8
        assert rec.prompt_tokens == truth["prompt_tokens"] and not rec.prompt_tokens_estimated
        assert len(rec.chunks) == 8
        # thinking came first: TTFT is the first chunk, TTFA the fourth (the first answer),
        # as the server wrote them
        writes = [w[0] for w in truth["writes"] if w[3] in ("content", "reasoning")]
        assert (truth["first_write_ns"], truth["first_answer_ns"]) == (writes[0], writes[3])
        assert rec.ttft_s == rec.chunks[0][0] and rec.ttfa_s == rec.chunks[3][0]
        t0 = origin + round(rec.t0_s * 1e9)
        assert len(writes) == len(rec.chunks)
        for (at_s, _), written, before in zip(rec.chunks, writes, [t0, *writes],
                                              strict=False):
            # our arrival stamp vs the server's write stamps (same CLOCK_MONOTONIC): after
            # the write before it (the server stamps a write once send() returned, then
            # sends the next: a preempted server stamps late, never early), and not long
            # after its own (the machine is shared; accuracy is test_prober's business)
            at = t0 + round(at_s * 1e9)
            assert before < at < written + 50e6
        assert rec.finish_reason == {"anthropic-messages": "max_tokens",
                                     "openai-responses": "max_output_tokens"}[api]

    @pytest.mark.parametrize("api", NEW_APIS)
    def test_error_event_mid_stream_is_an_error(self, reference: Any, api: str) -> None:
        srv = reference("gpu", mode="thread", fault_error_payload=1.0)
        _, rec, truth = _one(srv, api, out=10)
        assert rec.outcome == "error" and "injected fault" in (rec.error or "")
        assert len(rec.chunks) == 5 and truth["outcome"] == "fault:error_payload"

    @pytest.mark.parametrize("api,end", [("anthropic-messages", "message_stop"),
                                         ("openai-responses", "response.completed")])
    def test_no_end_event_is_incomplete(self, reference: Any, api: str, end: str) -> None:
        """Anthropic: message_delta (stop_reason, usage) came, message_stop did not."""
        srv = reference("gpu", mode="thread", fault_no_done=1.0)
        _, rec, truth = _one(srv, api)
        assert rec.outcome == "incomplete" and end in (rec.error or ""), rec.error
        assert len(rec.chunks) == 8 and truth["outcome"] == "fault:no_done"

    @pytest.mark.parametrize("api", NEW_APIS)
    def test_cut_connection_is_incomplete(self, reference: Any, api: str) -> None:
        srv = reference("gpu", mode="thread", fault_disconnect=1.0)
        _, rec, _ = _one(srv, api, out=10)
        assert rec.outcome == "incomplete" and len(rec.chunks) == 5

    def test_usage_withheld_is_estimated(self, reference: Any) -> None:
        srv = reference("gpu", mode="thread", fault_no_usage=1.0)
        _, rec, _ = _one(srv, "anthropic-messages")
        assert rec.outcome == "ok" and rec.output_tokens_estimated and rec.output_tokens == 8


    @pytest.mark.parametrize("api", ["openai-chat", *NEW_APIS])
    def test_cached_prompt_tokens_are_what_the_cache_served(self, reference: Any,
                                                           api: str) -> None:
        """Each API reports its prefix cache in its own words (chat's
        prompt_tokens_details, Anthropic's cache_read_input_tokens split off input_tokens,
        the Responses API's input_tokens_details): a prompt sent again reads back the
        count the server's truth line says its cache served, and the whole prompt still
        counts as prompt tokens."""
        srv = reference("gpu", prefix_cache=True, decode_base_ms=2)

        async def run() -> list[RequestRecord]:
            t = Target(srv.base_url, srv.model, tag_requests=True,
                       api=api, secret="sk-evalkit-test-key")
            async with Prober(t, time.perf_counter_ns(), "c") as prober:
                return [await prober.stream(synthetic(200, 4, f"same-{api}"), "baseline", 1)
                        for _ in range(2)]
        recs = asyncio.run(run())
        truth = {t["request_id"]: t for t in srv.truth()}
        served = [truth[r.id]["cached_prompt_tokens"] for r in recs]
        assert served[0] == 0 and served[1] > 100, served  # premise: the repeat is cached
        assert [r.cached_prompt_tokens for r in recs] == served
        assert [r.prompt_tokens for r in recs] == [truth[r.id]["prompt_tokens"] for r in recs]


class TestAuth:
    def test_anthropic_sends_x_api_key_and_its_version(self, reference: Any) -> None:
        srv = reference("gpu", mode="thread")
        _, rec, truth = _one(srv, "anthropic-messages")
        assert rec.outcome == "ok"
        assert truth["auth_headers"] == ["x-api-key"]
        assert truth["anthropic_version"] == "2023-06-01" and truth["api"] == "messages"

    def test_responses_sends_bearer(self, reference: Any) -> None:
        srv = reference("gpu", mode="thread")
        _, _, truth = _one(srv, "openai-responses")
        assert truth["auth_headers"] == ["authorization"] and truth["api_version"] is None

    def test_azure_api_key_with_api_version_query(self, reference: Any) -> None:
        srv = reference("gpu", mode="thread")
        _, rec, truth = _one(srv, "openai-chat", auth="api-key",
                             params=(("api-version", "2024-10-21"),))
        assert rec.outcome == "ok"
        assert truth["auth_headers"] == ["api-key"] and truth["api_version"] == "2024-10-21"

    def test_azure_reads_its_own_key_variable_never_openais(self, reference: Any,
                                                             tmp_path: Path) -> None:
        """`--api-version` (Azure OpenAI) without --api-key-env reads AZURE_OPENAI_API_KEY:
        an OpenAI key in the shell is not sent to Microsoft's endpoint (the reference takes
        any key, so the truth log says whether one came); without --auth it goes in Azure's
        `api-key` header, which Azure takes, not as a bearer token, which it refuses."""
        srv = reference("gpu", mode="thread")
        env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
        sent = []
        for extra in ({}, {"AZURE_OPENAI_API_KEY": "az-key-for-azure"}):
            proc = subprocess.run(
                [sys.executable, "-m", "evalkit.cli", "probe", "--base-url", srv.base_url,
                 "--model", srv.model, "--api-version", "2024-10-21",
                 "--out", str(tmp_path / f"run{len(sent)}"), "--phases", "connect"],
                env={**env, "OPENAI_API_KEY": "sk-openai-not-for-azure", **extra},
                capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            sent.append({tuple(t["auth_headers"]) for t in srv.truth()
                         if t.get("path", "").endswith("/completions")})
        assert sent[0] == {()} and sent[1] == {(), ("api-key",)}, sent

    def test_an_explicit_header_still_wins(self, reference: Any) -> None:
        srv = reference("gpu", mode="thread")
        _, _, truth = _one(srv, "anthropic-messages",
                           headers=(("Authorization", "Bearer other"),))
        assert truth["auth_headers"] == ["authorization"]

    def test_anthropic_without_its_version_header_is_refused(self, reference: Any) -> None:
        import httpx

        srv = reference("gpu", mode="thread")
        r = httpx.post(srv.base_url + "/messages", json={
            "model": srv.model, "max_tokens": 4, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 400 and "anthropic-version" in r.text

    def test_connect_tolerates_a_model_the_list_omits(self, reference: Any) -> None:
        """Anthropic's list is paginated and omits aliases: the connect stream decides."""
        srv = reference("gpu", mode="thread")

        async def run(api: str) -> dict[str, Any]:
            t = Target(srv.base_url, "claude-alias", api=api)
            async with make_client(t) as client:
                return await check_endpoint(client, t, "ANTHROPIC_API_KEY")

        assert asyncio.run(run("anthropic-messages"))["model_not_listed"] is True
        with pytest.raises(Exception, match="not served"):
            asyncio.run(run("openai-responses"))

