"""What the reference endpoint answers, over real loopback HTTP: words that follow from the
prompt, logprobs when asked, and the faults under load (a swapped model, a renamed one,
truncation, honest batch variance), each checked against the truth log."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from evalkit.reference.answers import FINGERPRINTS, LOGPROB_NOISE, Answer, answer_text
from evalkit.reference.server import ReferenceServer
from tests.reference.test_server import chat_body, stream

Factory = Callable[..., ReferenceServer]
#: short and quick: 30-token streams overlap for ~300 ms, no gateway delay
FAST = {"request_overhead_ms": 0, "decode_base_ms": 10, "decode_per_stream_ms": 0,
        "jitter_ms": 0, "prefill_overhead_ms": 1}
PROMPT = "What is the capital of France? Answer in one word."


@dataclass
class Reply:
    """One response as a client read it."""

    rid: str
    chunks: list[dict[str, Any]]

    @property
    def text(self) -> str:
        out = []
        for c in self.chunks:
            if c.get("choices"):
                ch = c["choices"][0]
                out.append(ch.get("delta", {}).get("content") or ch.get("text") or "")
            elif c.get("type") == "content_block_delta" and c["delta"]["type"] == "text_delta":
                out.append(c["delta"]["text"])
            elif c.get("type") == "response.output_text.delta":
                out.append(c["delta"])
        return "".join(out)

    def field(self, name: str) -> set[Any]:
        """Every value of a top-level field the chunks carried."""
        return {c.get(name) for c in self.chunks if "choices" in c}


def parse(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines()
            if line.startswith("data: {")]


def ask(srv: ReferenceServer, body: dict[str, Any], path: str = "/chat/completions",
        rid: str = "r") -> Reply:
    """One streamed request, alone."""
    s = stream(srv, body, rid=rid, path=path)
    assert s.status == 200, s.raw
    return Reply(rid, parse(s.raw))


def burst(srv: ReferenceServer, bodies: list[dict[str, Any]]) -> dict[str, Reply]:
    """All bodies at once, as concurrent streams; replies by request id."""
    async def run() -> list[Reply]:
        async with httpx.AsyncClient(timeout=30) as client:
            async def one(i: int, body: dict[str, Any]) -> Reply:
                async with client.stream("POST", srv.base_url + "/chat/completions",
                                         json=body, headers={"x-request-id": f"b{i}"}) as r:
                    return Reply(f"b{i}", parse(await r.aread()))
            return list(await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies))))
    return {r.rid: r for r in asyncio.run(run())}


def body(prompt: str = PROMPT, max_tokens: int = 30, **extra: Any) -> dict[str, Any]:
    return {**chat_body(max_tokens=max_tokens, **extra),
            "messages": [{"role": "user", "content": prompt}]}


class TestAnswersFollowThePrompt:
    def test_same_prompt_same_text_other_prompt_other_text(self, reference: Factory) -> None:
        """Asked twice, the same words and count; another prompt, other words; the truth
        log's output_sha is the SHA-256 of the text the client read."""
        srv = reference(mode="thread", **FAST)
        first, again = ask(srv, body(), rid="a"), ask(srv, body(), rid="b")
        other = ask(srv, body("What is the capital of Spain?"), rid="c")
        assert first.text == again.text == answer_text(PROMPT, tokens=30)
        assert len(first.text.split()) == len(other.text.split()) == 30
        assert other.text != first.text
        truth = {t["request_id"]: t for t in srv.truth()}
        assert truth["a"]["output_sha"] == hashlib.sha256(first.text.encode()).hexdigest()
        assert truth["a"]["output_sha"] == truth["b"]["output_sha"] != truth["c"]["output_sha"]
        for t in truth.values():
            assert (t["served_by"], t["active_streams"], t["first_flip_at"]) == ("primary", 1,
                                                                                 None)
            assert (t["truncated"], t["planned_tokens"]) == (False, 30)
            assert t["model_returned"] == "evalkit-reference"
            assert t["system_fingerprint"] == FINGERPRINTS["primary"]
        # every chat chunk (role, content, usage) names the model and its fingerprint
        assert len(first.chunks) == 32
        assert first.field("system_fingerprint") == {FINGERPRINTS["primary"]}

    def test_every_api_answers_the_same_prompt_with_the_same_words(
            self, reference: Factory) -> None:
        """Chat, completions, Anthropic Messages, OpenAI Responses: the answer follows the
        prompt's text whichever API framed it (the newer APIs carry no fingerprint)."""
        srv = reference(mode="thread", **FAST)
        want = answer_text(PROMPT, tokens=6)
        chat = ask(srv, body(max_tokens=6))
        completion = ask(srv, {"model": srv.model, "prompt": PROMPT, "max_tokens": 6,
                               "stream": True, "ignore_eos": True}, path="/completions")
        r = httpx.post(srv.base_url + "/messages", timeout=10,
                       headers={"anthropic-version": "2023-06-01"},
                       json={"model": srv.model, "max_tokens": 6, "stream": True,
                             "ignore_eos": True, "temperature": 0,
                             "messages": [{"role": "user", "content": PROMPT}]})
        messages = Reply("m", parse(r.content))
        responses = ask(srv, {"model": srv.model, "input": PROMPT, "max_output_tokens": 6,
                              "stream": True, "ignore_eos": True, "temperature": 0},
                        path="/responses")
        assert chat.text == completion.text == messages.text == responses.text == want
        assert messages.chunks[0]["message"]["model"] == "evalkit-reference"
        truth = [t for t in srv.truth() if t["status"] == 200]
        assert [t["system_fingerprint"] is None for t in truth] == [False, False, True, True]


class TestSampling:
    def test_sampling_fields_are_accepted_and_typed(self, reference: Factory) -> None:
        """temperature, top_p, seed, logprobs, top_logprobs pass; wrong types are 400s."""
        srv = reference(mode="thread", **FAST)
        ok = ask(srv, body(max_tokens=3, temperature=0, top_p=1, seed=1234, logprobs=True,
                           top_logprobs=3))
        assert ok.text == answer_text(PROMPT, tokens=3)  # temperature 0: the same words
        for bad, param in [({"temperature": "hot"}, "temperature"), ({"top_p": 2},
                           "top_p"), ({"seed": 1.5}, "seed"), ({"logprobs": "yes"},
                           "logprobs"), ({"top_logprobs": 99}, "top_logprobs")]:
            r = httpx.post(srv.base_url + "/chat/completions", json=body(**bad), timeout=10)
            assert (r.status_code, r.json()["error"]["param"]) == (400, param)
        r = httpx.post(srv.base_url + "/completions", timeout=10, json={
            "model": srv.model, "prompt": PROMPT, "max_tokens": 2, "logprobs": -1})
        assert (r.status_code, r.json()["error"]["param"]) == (400, "logprobs")

    def test_chat_logprobs_iff_asked(self, reference: Factory) -> None:
        """logprobs: true gives one entry per token in each content chunk (token, bytes,
        a value in [-2, 0), the same for the same prompt); without it, null everywhere."""
        srv = reference(mode="thread", tokens_per_chunk=3, **FAST)
        plain = ask(srv, body(max_tokens=8))
        assert all(c["choices"][0]["logprobs"] is None for c in plain.chunks if c["choices"])
        runs = [ask(srv, body(max_tokens=8, logprobs=True)) for _ in range(2)]
        for reply in runs:
            content = [c["choices"][0] for c in reply.chunks
                       if c["choices"] and c["choices"][0]["delta"].get("content")]
            assert [len(c["logprobs"]["content"]) for c in content] == [3, 3, 2]
            for c in content:
                entries = c["logprobs"]["content"]
                assert "".join(e["token"] for e in entries) == c["delta"]["content"]
                assert all(e["bytes"] == list(e["token"].encode()) for e in entries)
                assert all(-2 <= e["logprob"] < 0 and e["top_logprobs"] == []
                           for e in entries)
            assert content[-1]["finish_reason"] == "length"
        assert runs[0].chunks[1:-1] != plain.chunks[1:-1]
        values = [[e["logprob"] for c in r.chunks if c["choices"] and c["choices"][0]["logprobs"]
                   for e in c["choices"][0]["logprobs"]["content"]] for r in runs]
        assert values[0] == values[1] and len(set(values[0])) == 8
        whole = httpx.post(srv.base_url + "/chat/completions", timeout=10,
                           json={**body(max_tokens=8, logprobs=True), "stream": False}).json()
        assert [e["logprob"] for e in whole["choices"][0]["logprobs"]["content"]] == values[0]
        assert whole["system_fingerprint"] == FINGERPRINTS["primary"]

    def test_completions_logprobs_iff_asked(self, reference: Factory) -> None:
        """logprobs: N gives tokens, token_logprobs and running text_offset per chunk."""
        srv = reference(mode="thread", tokens_per_chunk=2, **FAST)
        req = {"model": srv.model, "prompt": PROMPT, "max_tokens": 5, "stream": True,
               "ignore_eos": True}
        plain = ask(srv, req, path="/completions")
        assert all(c["choices"][0]["logprobs"] is None for c in plain.chunks if c["choices"])
        reply = ask(srv, {**req, "logprobs": 0}, path="/completions")
        lps = [c["choices"][0]["logprobs"] for c in reply.chunks if c["choices"]]
        assert [len(lp["tokens"]) for lp in lps] == [2, 2, 1]
        tokens = [t for lp in lps for t in lp["tokens"]]
        assert "".join(tokens) == reply.text == answer_text(PROMPT, tokens=5)
        offsets = [o for lp in lps for o in lp["text_offset"]]
        assert offsets == [sum(len(t) for t in tokens[:i]) for i in range(5)]
        assert all(lp["top_logprobs"] is None for lp in lps)
        assert all(-2 <= v < 0 for lp in lps for v in lp["token_logprobs"])


def texts_alone_and_in_burst(reference: Factory, n: int = 6, alone_prompt: str = PROMPT,
                             **params: Any) -> tuple[ReferenceServer, Reply, dict[str, Reply],
                                                      dict[str, dict[str, Any]]]:
    """The prompt answered alone, then by `n` concurrent streams; truth lines by id."""
    srv = reference(mode="thread", **{**FAST, **params})
    alone = ask(srv, body(alone_prompt), rid="alone")
    replies = burst(srv, [body(alone_prompt) for _ in range(n)])
    return srv, alone, replies, {t["request_id"]: t for t in srv.truth()}


class TestFaultsUnderLoad:
    def test_swap_above_3_answers_with_another_model_under_the_same_name(
            self, reference: Factory) -> None:
        """Requests that reach an engine holding more than 3 streams get other words, the
        same model name and fingerprint; the others match the prompt answered alone."""
        _, alone, replies, truth = texts_alone_and_in_burst(reference, swap_above=3)
        assert truth["alone"]["served_by"] == "primary"
        served = {rid: truth[rid]["served_by"] for rid in replies}
        assert served == {rid: "swap" if truth[rid]["active_streams"] > 3 else "primary"
                          for rid in replies}
        assert "swap" in set(served.values())  # 6 in flight at once: above 3
        for rid, reply in replies.items():
            assert (reply.text == alone.text) == (served[rid] == "primary")
            assert len(reply.text.split()) == 30
            assert reply.field("model") == {"evalkit-reference"}
            assert reply.field("system_fingerprint") == {FINGERPRINTS["primary"]}
            assert truth[rid]["model_returned"] == "evalkit-reference"
            if served[rid] == "swap":
                assert reply.text == answer_text(PROMPT, "swap", 30)
                assert "swap" in truth[rid]["faults"]

    def test_model_returned_names_the_swap(self, reference: Factory) -> None:
        """renamer: the swapped requests say `evalkit-reference-mini` with their own
        fingerprint, the others the primary's; the truth log says what was sent."""
        _, _, replies, truth = texts_alone_and_in_burst(reference, swap_above=3,
                                                        model_returned="evalkit-reference-mini",
                                                        swap_fingerprint=True)
        seen = set()
        for rid, reply in replies.items():
            swap = truth[rid]["served_by"] == "swap"
            want = (("evalkit-reference-mini", FINGERPRINTS["swap"]) if swap
                    else ("evalkit-reference", FINGERPRINTS["primary"]))
            assert (reply.field("model"), reply.field("system_fingerprint")) == (
                {want[0]}, {want[1]})
            assert (truth[rid]["model_returned"], truth[rid]["system_fingerprint"]) == want
            seen.add(swap)
        # a burst of 6 all in flight at once is above 3 (however many the engine held);
        # the request alone is not
        assert True in seen
        assert (truth["alone"]["served_by"], truth["alone"]["model_returned"]) == (
            "primary", "evalkit-reference")

    def test_model_returned_without_a_swap_renames_every_response(
            self, reference: Factory) -> None:
        """swap_above 0: the primary answers every request, under the name given."""
        srv = reference(mode="thread", model_returned="gpt-4o", **FAST)
        reply = ask(srv, body(max_tokens=4))
        assert reply.field("model") == {"gpt-4o"} and reply.text == answer_text(PROMPT,
                                                                                tokens=4)
        [t] = srv.truth()
        assert (t["served_by"], t["model_returned"]) == ("primary", "gpt-4o")

    def test_truncate_above_3_halves_the_output_only_above_it(self,
                                                              reference: Factory) -> None:
        """Above 3 streams: half the planned tokens, finish_reason stop, honest usage, the
        same words as far as they go; at or below: the whole output."""
        _, alone, replies, truth = texts_alone_and_in_burst(reference, truncate_above=3)
        cut = set()
        for rid, reply in replies.items():
            t = truth[rid]
            assert t["truncated"] == (t["active_streams"] > 3) and t["planned_tokens"] == 30
            n = 15 if t["truncated"] else 30
            finish = [c["choices"][0]["finish_reason"] for c in reply.chunks
                      if c["choices"] and c["choices"][0]["finish_reason"]]
            assert finish == ["stop" if t["truncated"] else "length"]
            assert reply.chunks[-1]["usage"]["completion_tokens"] == t["completion_tokens"] == n
            assert reply.text == answer_text(PROMPT, tokens=n)
            assert t["served_by"] == "primary" and t["outcome"] == "ok"
            cut.add(t["truncated"])
        assert True in cut and not truth["alone"]["truncated"]
        assert len(alone.text.split()) == 30

    def test_no_batch_variance_never_flips(self, reference: Factory) -> None:
        """batch_variance 0: eight streams in one batch answer exactly as one alone."""
        _, alone, replies, truth = texts_alone_and_in_burst(reference, n=8)
        assert all(r.text == alone.text for r in replies.values())
        assert all(t["first_flip_at"] is None for t in truth.values())

    def test_batch_variance_flips_tokens_only_in_a_batch(self, reference: Factory) -> None:
        """batch_variance 0.05, six streams: flips are logged, a flipped text is the alone
        text up to the flip and another word there; an unflipped one is the alone text;
        alone never flips; logprobs drift a little over the shared prefix."""
        srv = reference(mode="thread", batch_variance=0.05, **FAST)
        alone = ask(srv, body(logprobs=True), rid="alone")
        replies = burst(srv, [body(logprobs=True) for _ in range(6)])
        truth = {t["request_id"]: t for t in srv.truth()}
        assert truth["alone"]["first_flip_at"] is None
        assert alone.text == answer_text(PROMPT, tokens=30)
        words = alone.text.split()
        flips = [truth[rid]["first_flip_at"] for rid in replies]
        assert sum(f is not None for f in flips) >= 3, flips
        drift = []
        for rid, reply in replies.items():
            at = truth[rid]["first_flip_at"]
            got = reply.text.split()
            assert len(got) == 30 and reply.field("model") == {"evalkit-reference"}
            assert (reply.text != alone.text) == (at is not None)
            if at is not None:
                assert got[:at] == words[:at] and got[at] != words[at]
            lp = [e["logprob"] for c in reply.chunks if c["choices"] and c["choices"][0][
                "logprobs"] for e in c["choices"][0]["logprobs"]["content"]]
            base = [e["logprob"] for c in alone.chunks if c["choices"] and c["choices"][0][
                "logprobs"] for e in c["choices"][0]["logprobs"]["content"]]
            drift += [abs(a - b) for a, b in zip(lp[:at], base[:at], strict=True)]
        assert drift and 0 < max(drift) <= LOGPROB_NOISE * 0.25 + 1e-6


class TestAnswer:
    def test_words_are_prefix_stable_and_a_flip_changes_the_rest(self) -> None:
        """Word i does not depend on the length asked; a flip keeps the words before it."""
        short, long_ = Answer("p", "primary", 5), Answer("p", "primary", 40, variance=0.5)
        assert long_.words[:5] == short.words
        assert Answer("p", "swap", 5).words != short.words
        before = list(long_.words)
        for i in range(40):
            long_.generated(i, batch=2)  # p = 0.5 per token
        at = long_.first_flip_at
        assert at is not None and long_.words[:at] == before[:at]
        assert long_.words[at] != before[at]

    @pytest.mark.parametrize("batch", [0, 1])
    def test_alone_never_flips(self, batch: int) -> None:
        a = Answer("p", "primary", 50, logprobs=True, variance=1.0)
        for i in range(50):
            a.generated(i, batch)
        assert a.first_flip_at is None and not a.noise
