"""Canaries and sampling (`evalkit.probe.plan.canaries`, `evalkit.probe.apis.sampling`): canaries
look like the rest of the traffic, take their turns as planned, and a vendor that refuses
a sampling field is probed without it, over a real loopback socket."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalkit.probe.apis.base import get_adapter
from evalkit.probe.apis.sampling import Sampling
from evalkit.probe.plan.canaries import alone_then, in_turn, make_canaries
from evalkit.probe.plan.prompts import Prompt, PromptSource, count_tokens
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from tests.probe.test_fail_closed_servers import _Bare400


def _ordinary() -> Any:
    source = PromptSource("t0", 0)
    return lambda: source.next(256, 32)


def test_a_canary_is_an_ordinary_prompt_of_the_run() -> None:
    """Same length, same generator (a task over prose, no nonce); only the record knows."""
    canaries = make_canaries("t0", 0, 4, 256, 32)
    ordinary = _ordinary()()
    assert [c.canary for c in canaries] == ["k1", "k2", "k3", "k4"]
    for c in canaries:
        assert c.prompt_tokens == ordinary.prompt_tokens == count_tokens(str(c.content))
        assert c.max_tokens == ordinary.max_tokens
        assert "k1" not in str(c.content) and "t0" not in str(c.content)
    assert len({c.content for c in canaries}) == 4
    # drawn per run: another run's tag draws other canaries
    assert {c.content for c in make_canaries("t1", 0, 4, 256, 32)}.isdisjoint(
        {c.content for c in canaries})


def test_a_users_prompts_are_the_canaries_with_prompts() -> None:
    mine = [Prompt(f"p{i}", f"question {i}", 3, 8) for i in range(6)]
    canaries = make_canaries("t0", 0, 2, 256, 32, mine)
    assert [(c.content, c.canary) for c in canaries] == [("question 0", "k1"),
                                                         ("question 1", "k2")]


def test_alone_weaves_every_repeat_among_the_baseline() -> None:
    canaries = make_canaries("t0", 0, 2, 64, 8)
    nxt, n = alone_then(canaries, 3, _ordinary(), 4)
    drawn = [nxt() for _ in range(n)]
    assert n == 10
    assert [p.canary for p in drawn] == ["k1", None, "k2", None, "k1", None, "k2", None,
                                         "k1", "k2"]


def test_in_turn_every_nth_request_is_the_next_canary() -> None:
    canaries = make_canaries("t0", 0, 3, 64, 8)
    nxt = in_turn(canaries, 4, _ordinary())
    drawn = [nxt().canary for _ in range(16)]
    assert drawn == [None, None, None, "k1", None, None, None, "k2",
                     None, None, None, "k3", None, None, None, "k1"]
    assert in_turn((), 4, _ordinary)() is not None  # no canaries: ordinary traffic


@pytest.mark.parametrize("api, lp_key", [("openai-chat", "logprobs"),
                                         ("openai-completions", "logprobs"),
                                         ("anthropic-messages", None),
                                         ("openai-responses", None)])
def test_every_api_gets_the_same_sampling_where_it_has_the_field(api: str,
                                                                 lp_key: str | None) -> None:
    adapter = get_adapter(api)
    plain = adapter.build_body("m", "hi", 8, False)
    assert plain["temperature"] == 0.0 and "seed" not in plain and "logprobs" not in plain
    asked = adapter.build_body("m", "hi", 8, False, Sampling(0.0, 7, True))
    if lp_key is None:  # no seed and no logprobs in these APIs
        assert "seed" not in asked and "logprobs" not in asked
    else:
        assert asked["seed"] == 7 and asked[lp_key] in (True, 1)
    none = adapter.build_body("m", "hi", 8, False, Sampling(None, None, False))
    assert "temperature" not in none


class _NoTemperature(_Bare400):
    """A reasoning-model endpoint: a body with `temperature` gets OpenAI's 400; without
    it, a two-chunk stream naming the model. Every body is kept."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        self._send(200, json.dumps({"object": "list", "data": [
            {"id": "o-mini", "object": "model"}]}).encode(), "application/json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        type(self).bodies.append(body)
        if "temperature" in body:
            self._send(400, json.dumps({"error": {
                "message": "Unsupported parameter: 'temperature' is not supported with "
                           "this model.", "type": "invalid_request_error"}}).encode(),
                       "application/json")
            return
        chunks = [{"model": "o-mini-2026", "choices": [{"index": 0, "delta": {"content": w},
                                                        "finish_reason": None}]}
                  for w in ("Hello", " there")]
        chunks.append({"model": "o-mini-2026", "choices": [
            {"index": 0, "delta": {}, "finish_reason": "stop"}]})
        data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        self._send(200, data + b"data: [DONE]\n\n", "text/event-stream")


@pytest.fixture
def no_temperature() -> Iterator[str]:
    _NoTemperature.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoTemperature)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_refused_temperature_is_dropped_and_said(no_temperature: str, tmp_path: Path
                                                   ) -> None:
    """The connect stream's 400 names `temperature`: the run goes on without it (every
    later body has none), run.json records why, and the records name the model."""
    res = run_probe(ProbeConfig(no_temperature, "o-mini", phases=("connect", "baseline"),
                                overrides={"baseline": {"requests": 2},
                                           "connect": {"rtt_samples": 1},
                                           "canaries": {"count": 1, "alone_repeats": 2}}),
                    tmp_path / "run")
    assert res.status == "complete"
    bodies = _NoTemperature.bodies
    assert "temperature" in bodies[0] and all("temperature" not in b for b in bodies[1:])
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    connect = run["connect"]
    assert connect["sampling_rejected"]["fields"] == ["temperature"]
    assert "Unsupported parameter" in connect["sampling_rejected"]["error"]
    assert connect["sampling"]["temperature"] is None
    recs = [json.loads(x) for x in (tmp_path / "run" / "requests.jsonl").read_text()
            .splitlines() if x.strip()]
    baseline = [r for r in recs if r["phase"] == "baseline"]
    assert len(baseline) == 4 and {r["model"] for r in baseline} == {"o-mini-2026"}
    assert [r["canary"] for r in baseline].count("k1") == 2
    assert all(r["answer_text"] == "Hello there" for r in baseline if r["canary"])
