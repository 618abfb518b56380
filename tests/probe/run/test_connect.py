"""The connect gate (`evalkit.probe.run.connect`): an endpoint that refuses, and each failure
explained."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from evalkit.errors import UsageError
from evalkit.probe.client.clients import Target, make_client
from evalkit.probe.run.connect import check_endpoint, explain_failure
from evalkit.records import RequestRecord
from tests.probe.helpers import _Scripted


class _Unauthorised(_Scripted):
    """A real loopback HTTP server that refuses every request with 401."""

    def __init__(self) -> None:
        super().__init__(401, [b'{"error": {"message": "bad key"}}'], b"application/json")
        self.url = self.base_url


class TestEndpointErrors:
    def test_wrong_model_and_unreachable(self, reference: Any) -> None:
        """An unknown model or a closed port is an EndpointError naming what is wrong."""
        from evalkit.errors import EndpointError

        srv = reference("gpu", mode="thread")

        async def check(url: str, model: str) -> dict[str, Any]:
            target = Target(url, model)
            async with make_client(target) as client:
                return await check_endpoint(client, target, "OPENAI_API_KEY")

        assert srv.model in asyncio.run(check(srv.base_url, srv.model))["models"]
        with pytest.raises(EndpointError, match="'nope' is not served"):
            asyncio.run(check(srv.base_url, "nope"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
        with pytest.raises(EndpointError, match="cannot reach"):
            asyncio.run(check(closed, "m"))

    @pytest.mark.parametrize("target", [
        {"headers": (("X-Org", "caf\u00e9-sk-1"),)}, {"headers": (("X-Org", "sk-1\r\nX: y"),)},
        {"headers": (("X Org", "sk-1"),)}, {"secret": "sk-1\u00a0"}, {"user_agent": "a\nb"},
        {"headers": (("Authorization Bearer sk-1", "x"),)},  # a key pasted into a name
    ])
    def test_a_target_that_cannot_be_sent_is_refused_when_made(
            self, target: dict[str, Any]) -> None:
        """The library's Target refuses what httpx could not send (or would send as another
        header), never echoing a value; printable ASCII and HTAB are taken."""
        with pytest.raises(UsageError) as info:
            Target("http://h:1/v1", "m", **target)
        assert "sk-1" not in str(info.value)
        Target("http://h:1/v1", "m", headers=(("X-Org", "a\tb ~"),), secret="sk-1",
               user_agent="Mozilla/5.0 (X11)")
        # a key that is never sent (a credential header wins) is not refused
        Target("http://h:1/v1", "m", headers=(("Authorization", "Bearer sk-1"),),
               secret="sk-\u201cstale")
        # nor one of bytes that are not UTF-8 (os.environ keeps them as surrogates): it is
        # still redacted, never a UnicodeEncodeError in the first message that redacts
        stale = Target("http://h:1/v1", "m", headers=(("Authorization", "Bearer sk-1"),),
                       secret="sk-\udce9stale")
        assert stale.redact("sk-\udce9stale and sk-1") == "*** and ***"


class TestExplainFailure:
    """explain_failure: the status and body first, then the one thing to try."""

    def _explain(self, status: int | None, body: str | None = None, **target: Any) -> str:
        rec = RequestRecord(id="i", phase="connect", level=1, outcome="error", t0_s=0.0,
                            http_status=status, error=f"HTTP {status}: x" if status else
                            "ConnectError: refused", error_body=body)
        t = Target("http://h:1/v1/", "m", **{"extra_body": {"top_k": 1}, **target})
        return explain_failure(rec, t, "/chat/completions", "KEY")

    @pytest.mark.parametrize(("status", "body", "advice"), [
        (None, None, "--base-url http://h:1/v1/ is right"),
        (404, "no route", "nothing is served at http://h:1/v1/chat/completions"),
        (405, None, "does not take POST"),
        (200, None, "not in the format --api expects: check --api (openai-chat)"),
        (400, "unknown field max_tokens", "rejects the request field 'max_tokens'"),
        (400, "model is required", "rejects model 'm': check --model"),
        (400, "X-Tenant header missing", "rejects the 'X-Tenant' header"),
        (503, None, "not admitting requests now"),
        (502, None, "the server failed on our request"),
    ])
    def test_advice_follows_the_status(self, status: int | None, body: str | None,
                                       advice: str) -> None:
        first, second = self._explain(status, body, headers=(("X-Tenant", "acme"),)
                                      ).splitlines()
        assert second.startswith("what to try: ") and advice in second, second
        if status in (None, 200):
            said = "ConnectError: refused" if status is None else f"HTTP {status}: x"
            assert first == f"the connect stream failed: {said}"
        else:
            assert first.startswith("the connect stream failed: POST "
                                    f"http://h:1/v1/chat/completions answered HTTP {status}")
            assert first.endswith(f"HTTP {status}: x" + ("" if body else " (empty body)"))

    def test_what_a_bodyless_400_names(self) -> None:
        """No body names nothing: an --extra-body field is not blamed for a bare 400."""
        rec = RequestRecord(id="i", phase="connect", level=1, outcome="error", t0_s=0.0,
                            http_status=400, error="HTTP 400: Bad Request")
        message = explain_failure(rec, Target("http://h/X", "m", extra_body={"x": 1}),
                                  "/chat/completions", "KEY")
        assert "POST http://h/X/chat/completions answered" in message
        assert "without saying which part" in message

    def test_the_key_is_never_in_the_message(self) -> None:
        secret = "sk-very-secret-key"
        text = self._explain(401, f"bad key {secret}", secret=secret)
        assert secret not in text and "check the key in $KEY" in text
        assert "$KEY is not set" in self._explain(403)


#: a page a vendor trickles: a byte every 0.2 s, each well inside a 1 s read timeout, for
#: 10 s in all
_TRICKLE: list[bytes | float | None] = [
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked"
    b"\r\n\r\n"] + [b"1\r\n \r\n", 0.2] * 50


class TestBoundedPages:
    """The pages read beside the streams (the model list, the RTT's GET, the vendor's
    metrics) have a deadline in all and a size cap, over real sockets: a read timeout
    alone let a trickle hold the run for as long as the vendor liked."""

    def test_a_trickled_model_list_is_cut_at_the_timeout(self) -> None:
        from evalkit.errors import EndpointError
        from tests.probe.helpers import RawServer

        async def check(url: str) -> dict[str, Any]:
            target = Target(url, "m", timeout_s=1)
            async with make_client(target) as client:
                return await check_endpoint(client, target, "OPENAI_API_KEY")

        with RawServer([_TRICKLE]) as srv:
            began = time.monotonic()
            with pytest.raises(EndpointError, match=r"no whole answer .* within 1 s"):
                asyncio.run(check(srv.base_url))
        assert time.monotonic() - began < 3  # not the trickle's 10 s

    def test_the_rtt_probe_skips_a_trickled_answer_on_time(self) -> None:
        from evalkit.probe.run.connect import measure_rtt
        from tests.probe.helpers import RawServer

        async def rtt(url: str) -> list[float]:
            async with make_client(Target(url, "m", timeout_s=1)) as client:
                return await measure_rtt(client, 2, timeout_s=0.5)

        with RawServer([_TRICKLE] * 2) as srv:
            began = time.monotonic()
            assert asyncio.run(rtt(srv.base_url)) == []
        assert time.monotonic() - began < 3

    def test_a_trickled_or_endless_metrics_page_is_bounded(self) -> None:
        from evalkit.analysis.vendor_metrics import MAX_PAGE_BYTES
        from evalkit.probe.run.scrape import VendorScraper
        from tests.probe.helpers import RawServer

        line = b"vllm:num_requests_running 3\n"
        chunk = b"%x\r\n%s\r\n" % (len(line) * 4096, line * 4096)  # ~115 KiB a write
        endless: list[bytes | float | None] = [  # ~46 MiB over 6 s or more
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"] + [chunk] * 400

        def scrape(script: list[bytes | float | None], timeout_s: float
                   ) -> tuple[float, Any]:
            with RawServer([script], pace=0.015) as srv:
                scraper = VendorScraper(srv.url + "/metrics", timeout_s=timeout_s)

                async def go() -> None:
                    await scraper.scrape("baseline", None, "before")
                    await scraper.aclose()
                began = time.monotonic()
                asyncio.run(go())
                return time.monotonic() - began, scraper.scrapes[0]

        took, trickled = scrape(_TRICKLE, 1)
        assert took < 3 and trickled.text is None  # not the trickle's 10 s
        assert "ReadTimeout" in (trickled.error or "")
        took, flood = scrape(endless, 4)
        assert took < 3.5, took  # cut at the cap (~75 writes), not read to its end
        assert flood.error is None and flood.text is not None
        assert 0 < len(flood.text.encode()) <= MAX_PAGE_BYTES

    def test_a_compressed_page_nobody_asked_for_is_never_decoded(self) -> None:
        """1.6 KB of brotli that decodes to 2 GiB (httpx decodes a whole read before any
        cap): identity is asked for, and any other coding is refused unread, in the
        connect gate's model list and in a metrics scrape alike."""
        from evalkit.errors import EndpointError
        from evalkit.probe.run.scrape import VendorScraper
        from tests.probe.helpers import RawServer

        bomb = b"\x1b" * 1600  # the coding is refused before a byte of it is decoded
        answer = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                  b"content-encoding: br\r\ncontent-length: %d\r\n\r\n%s" % (len(bomb), bomb))

        async def check(url: str) -> dict[str, Any]:
            target = Target(url, "m", timeout_s=2)
            async with make_client(target) as client:
                return await check_endpoint(client, target, "OPENAI_API_KEY")

        with RawServer([[answer], [answer]]) as srv:
            with pytest.raises(EndpointError, match="br-encoded although"):
                asyncio.run(check(srv.base_url))
            scraper = VendorScraper(srv.url + "/metrics", timeout_s=2)

            async def go() -> None:
                await scraper.scrape("baseline", None, "before")
                await scraper.aclose()
            asyncio.run(go())
            assert all(b"accept-encoding: identity" in r.lower() for r in srv.requests)
        assert "br-encoded" in (scraper.scrapes[0].error or "")
