"""evalkit behind real gateways: nginx (Debian's package) and LiteLLM's proxy, in front of
the reference endpoint, whose truth log says what the engine sent and when; a recording
proxy (`engines.tap`) in front of the gateway says what the gateway sent and when.

What these gateways do, seen here (docs/probing.md, "Behind a gateway"):
- nginx's default proxy (proxy_buffering on, HTTP/1.0 upstream) holds an SSE stream in
  its 4-8 KB buffers when the upstream frames the answer by closing the connection, as
  uvicorn's h11 protocol does for an HTTP/1.0 request, and sends no `X-Accel-Buffering:
  no`: LiteLLM's proxy behind it reaches us 20 chunks a read. A chunked upstream (the
  reference endpoint, llama.cpp's server, which also sends `X-Accel-Buffering: no`) is
  passed on chunk by chunk, buffering on or off;
- LiteLLM streams chunk by chunk, adds a few ms to the first token, folds the engine's
  role chunk into the first content chunk, passes `stream_options` on, and writes a
  `usage` of its own count when the engine sent none (its tokenizer, its chat template).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.run.progress import validity_lines
from evalkit.probe.suite import RunResult, run_probe
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer
from evalkit.rundir.store import read_run_files
from tests.engines.gateways import INSTALL_HINT, LiteLLMProxy, Nginx, installed
from tests.engines.native_server import MODEL as NATIVE_MODEL
from tests.engines.native_server import NativeServer
from tests.engines.tap import Exchange, Tap

pytestmark = pytest.mark.slow
MODEL = "evalkit-reference"
#: the model LiteLLM serves from an engine that never reports usage
NO_USAGE = "evalkit-no-usage"
#: the model LiteLLM serves from llama.cpp's server
LLAMA = "evalkit-llama"
#: connect and a 4-request baseline of 32-token answers: ~3 s a probe
SERIAL: dict[str, Any] = {
    "prompt_tokens": 64, "output_tokens": 32, "timeout_s": 30,
    "connect": {"rtt_samples": 3}, "baseline": {"requests": 4}, "canaries": {"count": 0},
}
#: through a gateway: on two cores shared by the engine, a gateway or two, the tap and
#: the client, LiteLLM now and then writes two chunks at once and we read them a few ms
#: late, so the late-reads limit is widened from 0.5 % to 10 % of chunks (as for
#: llama.cpp's server in test_llama_cpp; a gateway's bursts counted as ours made 28 %),
#: and a loaded host's loop lag and CPU do not stop the buffering check (it judges no
#: group where the client was bound): these tests are of the stream, the tap their judge
GATEWAY: dict[str, Any] = {**SERIAL, "client_check": {
    "coalesced_fraction": 0.10, "loop_lag_p99_s": 60, "cpu_fraction": 100}}


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ReferenceServer,
                                                                       ReferenceServer]]:
    """The reference endpoint (a subprocess: timing is judged), and one that never sends
    usage (a thread: only its bytes are read)."""
    if missing := installed():
        pytest.fail(f"missing {', '.join(missing)}: {INSTALL_HINT}", pytrace=False)
    d = tmp_path_factory.mktemp("engines")
    with ReferenceServer("gpu", {}, truth_log=d / "truth.jsonl") as srv, \
            ReferenceServer("gpu", {"fault_no_usage": 1.0}, mode="thread") as bare:
        yield srv, bare


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's C++ server (8 slots, closing after every stream) on the tests' tiny
    model, as `MODEL`: its base URL (tests/engines/native_server.py; a binary that
    `make install` did not build fails the test, never skips it)."""
    from tests.engines.tiny_gguf import build_tiny_gguf

    d = tmp_path_factory.mktemp("llama-server")
    with NativeServer(build_tiny_gguf(d / "tiny.gguf"), d / "server.log", slots=8,
                      ctx_per_slot=2048) as srv:
        yield srv.base_url


@pytest.fixture(scope="module")
def litellm(engines: tuple[ReferenceServer, ReferenceServer], llama: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    """One LiteLLM proxy for the module (it takes 20-30 s to start), serving the
    reference endpoint, one that sends no usage, and llama-server."""
    srv, bare = engines
    routes = {MODEL: (srv.base_url, MODEL), NO_USAGE: (bare.base_url, MODEL)}
    routes[LLAMA] = (llama, NATIVE_MODEL)
    with LiteLLMProxy(routes, tmp_path_factory.mktemp("litellm")) as gw:
        yield gw


def _probe(port: int, tmp: Path, model: str = MODEL
           ) -> tuple[RunResult, dict[str, Any], list[RequestRecord], list[Exchange]]:
    """connect + baseline through a tap in front of `port`: (result, run.json, records,
    what the gateway sent)."""
    tap = Tap(port, tmp / "tap.jsonl").start()
    try:
        res = run_probe(ProbeConfig(tap.base_url, model, tag_requests=True,
                                    phases=("connect", "baseline"), overrides=GATEWAY),
                        tmp / "run")
    finally:
        wire = tap.stop()
    meta, records = read_run_files(tmp / "run")
    assert res.status == "complete", meta.get("error")
    assert [r.outcome for r in records] == ["ok"] * len(records), \
        [(r.phase, r.error) for r in records]
    return res, meta, records, wire


def _content(x: Exchange) -> list[int]:
    """The stamps at which the tap read each content event of an exchange."""
    out = []
    for e in x.events:
        if e.data == "[DONE]":
            continue
        choices = json.loads(e.data).get("choices") or []
        if choices and (choices[0].get("delta") or {}).get("content"):
            out.append(e.ns)
    return out


def _faithful(records: list[RequestRecord], wire: list[Exchange], origin: int) -> None:
    """Every record's chunks are the gateway's content events, each timed when its bytes
    reached us: after the tap read them, and within a few ms (the tap forwards at once)."""
    posts = {x.headers["x-request-id"]: x for x in wire if x.method == "POST"}
    for rec in records:
        at = _content(posts[rec.id])
        assert len(rec.chunks) == len(at), rec.id
        late = [(origin + (rec.t0_s + t) * 1e9 - ns) / 1e6 for (t, _), ns in
                zip(rec.chunks, at, strict=True)]
        assert all(-1.0 <= ms < 30.0 for ms in late), (rec.id, late)


def _held_ms(records: list[RequestRecord], srv: ReferenceServer, wire: list[Exchange],
             origin: int) -> list[float]:
    """Per baseline request: how long after the engine wrote its first content chunk
    (the truth log) that chunk reached us (the record), in ms."""
    truth = {t["prompt_sha"]: t for t in srv.truth() if t.get("outcome") == "ok"}
    posts = {x.headers["x-request-id"]: x for x in wire if x.method == "POST"}
    held = []
    for rec in records:
        if rec.phase != "baseline":
            continue
        text = posts[rec.id].json()["messages"][-1]["content"]
        t = truth[hashlib.sha256(text.encode()).hexdigest()[:16]]
        first = min(w[0] for w in t["writes"] if w[3] == "content")
        held.append((origin + (rec.t0_s + (rec.ttft_s or 0)) * 1e9 - first) / 1e6)
    return held


@pytest.mark.timeout(150)
def test_nginx_default_buffers_litellm_and_the_run_says_so(
        engines: tuple[ReferenceServer, ReferenceServer], litellm: LiteLLMProxy,
        tmp_path: Path) -> None:
    """nginx's default proxy in front of LiteLLM: the stream arrives 20 chunks a read.
    evalkit reports the gateway's stream as it came (every chunk at its read), says it
    arrived buffered (summary, terminal, and no judgement of timing), and does not take
    the bursts for its own lateness."""
    with Nginx(litellm.port, tmp_path / "nginx", buffering=True) as gw:
        res, meta, records, wire = _probe(gw.port, tmp_path)
    origin = int(meta["clock"]["origin_ns"])
    _faithful(records, wire, origin)
    s = res.summary
    assert s is not None
    check = s["checks"]["buffering"]
    assert check["flagged"] is True and check["buffered"] == check["checked"] == 4, \
        (check, meta["client_checks"]["phases"]["baseline"])
    assert check["chunks"] == 4 * 32 and check["reads"] <= 4 * 3, check
    words = (f"the stream arrived buffered: {check['chunks']} chunks in {check['reads']} "
             "reads (4 of 4 requests); TTFT and inter-token latency measure the gateway's "
             "buffer, not the engine")
    assert words in s["validity"]["reasons"]
    assert f"validity: degraded: {words}" in validity_lines(s.sections.validity)  # the terminal
    assert s.buffered == words  # the run's own typed summary
    # the bursts arrived together: our reads were not late, the client is not blamed
    assert s["client"]["client_bound"] is False, meta["client_checks"]
    # the engine's first token waited in the buffer for most of the answer
    held = _held_ms(records, engines[0], wire, origin)
    assert min(held) > 100, held


@pytest.mark.timeout(90)
def test_nginx_unbuffered_passes_litellm_as_sent(
        engines: tuple[ReferenceServer, ReferenceServer], litellm: LiteLLMProxy,
        tmp_path: Path) -> None:
    """The same stack with `proxy_buffering off`: one chunk a read, nothing flagged, and
    the first token a few ms behind the engine's."""
    with Nginx(litellm.port, tmp_path / "nginx", buffering=False) as gw:
        res, meta, records, wire = _probe(gw.port, tmp_path)
    origin = int(meta["clock"]["origin_ns"])
    _faithful(records, wire, origin)
    s = res.summary
    assert s is not None
    check = s["checks"]["buffering"]
    assert (check["flagged"], check["buffered"], check["checked"]) == (False, 0, 4), check
    assert s["validity"]["status"] == "valid", s["validity"]
    held = _held_ms(records, engines[0], wire, origin)
    assert max(held) < 50, held


@pytest.mark.timeout(90)
def test_nginx_default_passes_a_chunked_engine_as_sent(
        engines: tuple[ReferenceServer, ReferenceServer], tmp_path: Path) -> None:
    """nginx's default proxy straight in front of an engine that answers chunked (the
    reference endpoint; llama.cpp's server too): buffering on holds nothing."""
    port = httpx.URL(engines[0].base_url).port
    assert port is not None
    with Nginx(port, tmp_path / "nginx", buffering=True) as gw:
        res, meta, records, wire = _probe(gw.port, tmp_path)
    _faithful(records, wire, int(meta["clock"]["origin_ns"]))
    s = res.summary
    assert s is not None
    assert s["checks"]["buffering"]["buffered"] == 0 and s["validity"]["status"] == "valid"
    assert all(x.response_headers.get("server", "").startswith("nginx") for x in wire)


@pytest.mark.timeout(90)
def test_litellm_end_to_end(engines: tuple[ReferenceServer, ReferenceServer],
                            litellm: LiteLLMProxy, tmp_path: Path) -> None:
    """LiteLLM alone: streamed chunk by chunk, usage passed on as the engine counted it,
    the first token a few ms behind the engine's; its own headers on every answer."""
    res, meta, records, wire = _probe(litellm.port, tmp_path)
    origin = int(meta["clock"]["origin_ns"])
    _faithful(records, wire, origin)
    s = res.summary
    assert s is not None and s["validity"]["status"] == "valid", s["validity"]
    assert s["checks"]["buffering"]["buffered"] == 0
    assert s["connect"]["usage_reported"] is True
    # usage: what the engine billed (the truth log), carried through unchanged
    truth = {t["prompt_sha"]: t for t in engines[0].truth() if t.get("outcome") == "ok"}
    posts = {x.headers["x-request-id"]: x for x in wire if x.method == "POST"}
    for rec in records:
        text = posts[rec.id].json()["messages"][-1]["content"]
        t = truth[hashlib.sha256(text.encode()).hexdigest()[:16]]
        assert rec.usage_completion_tokens == t["billed_tokens"] == t["completion_tokens"]
        assert rec.prompt_tokens == t["billed_prompt_tokens"]
    assert {x.response_headers.get("x-litellm-version") for x in posts.values()} == {"1.82.6"}
    held = _held_ms(records, engines[0], wire, origin)
    assert max(held) < 50, held


@pytest.mark.timeout(60)
def test_litellm_writes_usage_the_engine_never_sent(litellm: LiteLLMProxy) -> None:
    """Asked for usage (stream_options), LiteLLM answers with a count of its own when the
    engine sent none: evalkit then reads it as the vendor's (`usage_reported`), and
    says so where it matters (docs/probing.md). Not asked, it adds none."""
    body = {"model": NO_USAGE, "max_tokens": 8, "stream": True,
            "messages": [{"role": "user", "content": "hello there friend"}]}

    def usage(extra: dict[str, Any]) -> list[Any]:
        with httpx.stream("POST", f"{litellm.base_url}/chat/completions", timeout=30,
                          json={**body, **extra}) as r:
            data = [line[6:] for line in r.iter_lines() if line.startswith("data: {")]
        return [json.loads(d)["usage"] for d in data if '"usage"' in d]

    invented = usage({"stream_options": {"include_usage": True}})
    assert len(invented) == 1 and invented[0]["completion_tokens"] == 8
    assert usage({}) == []


@pytest.mark.timeout(120)
def test_in_front_of_llama_server(llama: str, litellm: LiteLLMProxy,
                                  tmp_path: Path) -> None:
    """llama.cpp's server behind nginx's default proxy comes as sent (it answers chunked
    and says `X-Accel-Buffering: no`), on one kept-alive connection although the engine
    closes its own after every stream; behind LiteLLM behind nginx it arrives buffered,
    and the run says so."""
    port = httpx.URL(llama).port
    assert port is not None
    with Nginx(port, tmp_path / "direct", buffering=True) as gw:
        res, meta, records, wire = _probe(gw.port, tmp_path / "a", NATIVE_MODEL)
    _faithful(records, wire, int(meta["clock"]["origin_ns"]))
    s = res.summary
    assert s is not None and s["checks"]["buffering"]["buffered"] == 0
    assert len({x.conn for x in wire if x.method == "POST"}) == 1
    with Nginx(litellm.port, tmp_path / "lite", buffering=True) as gw:
        res, meta, records, wire = _probe(gw.port, tmp_path / "b", LLAMA)
    _faithful(records, wire, int(meta["clock"]["origin_ns"]))
    s = res.summary
    assert s is not None and s["checks"]["buffering"]["flagged"] is True, \
        s["checks"]["buffering"]


# --------------------------------------------------------------------------- no gateway


@pytest.mark.timeout(60)
@pytest.mark.parametrize("settings", [
    # 4 tokens a chunk, every 60 ms: an engine bundling tokens (speculative decoding)
    {"tokens_per_chunk": 4, "decode_base_ms": 15.0},
    # 2,000 tokens a second over loopback: one chunk every 0.5 ms
    {"decode_base_ms": 0.5, "decode_per_stream_ms": 0.0, "jitter_ms": 0.0},
    # 20,000 a second: the client falls behind and reads dozens of chunks at a time; that is
    # ours (client-bound where it happens), never the endpoint's buffer
    {"decode_base_ms": 0.05, "decode_per_stream_ms": 0.0, "jitter_ms": 0.0},
], ids=["bundled", "fast", "faster-than-the-client"])
def test_an_honest_engine_is_not_called_buffered(reference: Any, tmp_path: Path,
                                                 settings: dict[str, float]) -> None:
    srv = reference("gpu", **settings)
    res = run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "baseline"),
                                overrides={**SERIAL, "output_tokens": 64}), tmp_path / "run")
    s = res.summary
    assert s is not None
    check = s["checks"]["buffering"]
    assert check["buffered"] == 0 and check["flagged"] is not True, check
    assert not any("buffered" in r for r in s["validity"]["reasons"])
