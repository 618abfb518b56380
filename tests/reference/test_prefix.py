"""The reference endpoint's prefix cache, over real loopback HTTP, judged by the truth log:
which blocks are cached (whole blocks, the chain rule, the LRU bound), that a cached
prompt's TTFT is shorter by the prefill its truth line says, and that each request's
message digests are the SHA-256 of what was sent, in order.

The prompts are words of the reference's own vocabulary, one o200k_base token each (the
tests check that premise), so the blocks a prompt should share follow from word counts.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

from evalkit.errors import UsageError
from evalkit.reference.answers import WORDS
from evalkit.reference.engine import MS, EngineCore, Seq
from evalkit.reference.params import get_profile
from evalkit.reference.parse import count_tokens
from evalkit.reference.prefix import MAX_DIGESTS
from evalkit.reference.server import ReferenceServer
from tests.reference.test_server import chat_body, content_arrivals, stream

Factory = Callable[..., ReferenceServer]
BLOCK = 16
#: quick and exact: no jitter, no gateway delay worth waiting for
QUICK = {"prefix_cache": True, "request_overhead_ms": 0, "jitter_ms": 0,
         "decode_base_ms": 2, "decode_per_stream_ms": 0, "prefill_overhead_ms": 1}


def words(n: int, seed: int) -> str:
    """`n` seeded words, one token each (checked), so n tokens on their own."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(n))
    assert count_tokens(text) == n, "premise: a word of the vocabulary is one token"
    return text


def chat(*messages: tuple[str, str], max_tokens: int = 4) -> dict[str, Any]:
    return {**chat_body(max_tokens=max_tokens),
            "messages": [{"role": r, "content": c} for r, c in messages]}


def send(srv: ReferenceServer, body: dict[str, Any], rid: str,
         path: str = "/chat/completions") -> dict[str, Any]:
    """One streamed request; its usage chunk (the last JSON chunk)."""
    s = stream(srv, body, rid=rid, path=path)
    assert s.status == 200, s.raw
    return s.chunks()[-1]["usage"]


def truths(srv: ReferenceServer) -> dict[str, dict[str, Any]]:
    return {t["request_id"]: t for t in srv.truth()}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TestWhatIsCached:
    def test_shared_first_blocks_are_cached_and_no_more(self, reference: Factory) -> None:
        """A prompt sharing its first 3 blocks and 5 more tokens with an earlier one gets
        exactly those 3 blocks (48 tokens) cached; its own repeat gets all its whole blocks
        (100 tokens: 96), never the partial one. Completions: one digest, role prompt."""
        srv = reference(mode="thread", **QUICK)
        head, tail_a, tail_b = words(53, 1), words(47, 2), words(47, 3)
        a, b = f"{head} {tail_a}", f"{head} {tail_b}"
        assert count_tokens(a) == count_tokens(b) == 100
        body = {"model": "evalkit-reference", "max_tokens": 3, "stream": True,
                "ignore_eos": True, "stream_options": {"include_usage": True}}
        usage = [send(srv, {**body, "prompt": p}, rid, "/completions")
                 for p, rid in ((a, "a"), (b, "b"), (b, "b2"))]
        t = truths(srv)
        assert [t[r]["cached_prompt_tokens"] for r in ("a", "b", "b2")] == [0, 48, 96]
        assert [u["prompt_tokens_details"]["cached_tokens"] for u in usage] == [0, 48, 96]
        assert [u["prompt_tokens"] for u in usage] == [100, 100, 100]
        assert t["b"]["messages"] == [{"role": "prompt", "sha256": sha(b), "tokens": 100}]
        assert t["b"]["message_count"] == 1

    def test_a_block_after_another_prefix_or_role_is_not_cached(
            self, reference: Factory) -> None:
        """Chain rule: the same 48 tokens after a different first block match nothing; a
        block cached after one prefix is not found after another that is itself cached
        (X+W after X+Y and Z+W: only X); the same text under another role is another
        prompt."""
        srv = reference(mode="thread", **QUICK)
        shared, x, z, w = words(48, 4), words(16, 5), words(16, 6), words(16, 14)
        send(srv, chat(("user", f"{x} {shared}")), "x")
        send(srv, chat(("user", f"{z} {shared}")), "z")
        send(srv, chat(("user", f"{z} {w}")), "zw")
        send(srv, chat(("user", f"{x} {w}")), "xw")
        send(srv, chat(("user", shared)), "u")
        send(srv, chat(("system", shared)), "s")
        send(srv, chat(("user", shared)), "u2")
        t = truths(srv)
        assert [t[r]["cached_prompt_tokens"] for r in ("x", "z", "zw", "xw", "u", "s", "u2")
                ] == [0, 0, 16, 16, 0, 0, 48]

    def test_lru_evicts_at_its_bound_tail_first(self, reference: Factory) -> None:
        """With room for 6 blocks: A (4), then B (4) pushes out A's last two, so A again
        finds its first two; a prompt of 8 blocks keeps only its first 6."""
        srv = reference(mode="thread", prefix_cache_blocks=6, **QUICK)
        a, b, c = words(64, 7), words(64, 8), words(128, 9)
        for text, rid in ((a, "a"), (b, "b"), (a, "a2"), (c, "c"), (c, "c2")):
            send(srv, chat(("user", text)), rid)
        t = truths(srv)
        assert [t[r]["cached_prompt_tokens"] for r in ("a", "b", "a2", "c", "c2")] == [
            0, 0, 32, 0, 96]

    def test_off_caches_nothing_and_reports_no_detail(self, reference: Factory) -> None:
        """gpu (cache off): the same prompt twice prefills in full both times, and usage
        has no prompt_tokens_details; a cache of 0 blocks reports 0 cached."""
        off = reference(mode="thread", **{**QUICK, "prefix_cache": False})
        text = words(64, 10)
        usage = [send(off, chat(("user", text)), rid) for rid in ("1", "2")]
        assert all("prompt_tokens_details" not in u for u in usage)
        t = truths(off)
        assert [t[r]["cached_prompt_tokens"] for r in ("1", "2")] == [0, 0]
        assert [t[r]["prefill_s"] for r in ("1", "2")] == [pytest.approx(64 / 50_000)] * 2
        empty = reference(mode="thread", prefix_cache_blocks=0, **QUICK)
        usage = [send(empty, chat(("user", text)), rid) for rid in ("1", "2")]
        assert [u["prompt_tokens_details"]["cached_tokens"] for u in usage] == [0, 0]


class TestSession:
    def test_next_turn_finds_the_last_prompt_and_carries_the_history(
            self, reference: Factory) -> None:
        """[S, U1] then [S, U1, A1, U2] with A1 the answer streamed: the second request's
        cached tokens are the first prompt's whole blocks (40 + 30 tokens: 64), and its
        digests are the four messages sent, in order. Not streamed, usage says the same."""
        srv = reference(mode="thread", **QUICK)
        system, u1, u2 = words(40, 11), words(30, 12), words(9, 13)
        first = httpx.post(srv.base_url + "/chat/completions", timeout=30, headers={
            "x-request-id": "t1"}, json={**chat(("system", system), ("user", u1)),
                                         "stream": False}).json()
        a1 = first["choices"][0]["message"]["content"]
        assert a1 and first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
        usage = send(srv, chat(("system", system), ("user", u1), ("assistant", a1),
                               ("user", u2)), "t2")
        t = truths(srv)
        assert t["t2"]["cached_prompt_tokens"] == 64 == usage["prompt_tokens_details"][
            "cached_tokens"]
        n_a1 = count_tokens(a1)
        assert t["t2"]["prompt_tokens"] == 40 + 30 + n_a1 + 9
        assert t["t2"]["messages"] == [
            {"role": "system", "sha256": sha(system), "tokens": 40},
            {"role": "user", "sha256": sha(u1), "tokens": 30},
            {"role": "assistant", "sha256": sha(a1), "tokens": n_a1},
            {"role": "user", "sha256": sha(u2), "tokens": 9}]
        assert t["t1"]["messages"] == t["t2"]["messages"][:2]

    def test_digests_are_bounded_and_put_the_system_prompt_first(
            self, reference: Factory) -> None:
        """300 messages: 256 digests, message_count 300; Anthropic's `system` is the first
        digest, as a model reads it."""
        srv = reference(mode="thread", **QUICK)
        many = [("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(300)]
        send(srv, chat(*many), "many")
        body = {"model": "evalkit-reference", "max_tokens": 3, "stream": True,
                "system": "be brief", "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(srv.base_url + "/messages", json=body, timeout=30,
                       headers={"anthropic-version": "2023-06-01", "x-request-id": "anth"})
        assert r.status_code == 200
        t = truths(srv)
        assert t["many"]["message_count"] == 300
        assert [d["sha256"] for d in t["many"]["messages"]] == [
            sha(c) for _, c in many[:MAX_DIGESTS]]
        assert [(d["role"], d["sha256"]) for d in t["anth"]["messages"]] == [
            ("system", sha("be brief")), ("user", sha("hi"))]


class TestTiming:
    def test_a_cached_prompt_starts_sooner_by_the_prefill_saved(
            self, reference: Factory) -> None:
        """The same 3000-token prompt twice, seven times over: the second's truth says 2992
        tokens cached (whole blocks), its scheduled first token comes exactly the fixed
        part plus its logged prefill_s after arrival, and the client's TTFT shrinks by the
        prefill the truth log says was saved (within 5 ms, as a median: a loaded machine
        delays a send now and then by tens of ms, on the client's side of `received_ns`)."""
        srv = reference(prefill_tokens_per_s=20_000, prefill_overhead_ms=5, jitter_ms=0,
                        request_overhead_ms=10, decode_base_ms=5, decode_per_stream_ms=0,
                        prefix_cache=True)
        measured, saved = [], []
        for i in range(7):
            body = chat(("user", words(3000, 100 + i)), max_tokens=2)
            cold, warm = (stream(srv, body, rid=f"{i}{w}") for w in "cw")
            t = truths(srv)
            c, w = t[f"{i}c"], t[f"{i}w"]
            assert (c["cached_prompt_tokens"], w["cached_prompt_tokens"]) == (0, 2992)
            assert c["prefill_s"] == pytest.approx(3000 / 20_000)
            assert w["prefill_s"] == pytest.approx((8 + 0.1 * 2992) / 20_000)
            for truth in (c, w):  # what the engine scheduled is what it logged
                first = next(x for x in truth["writes"] if x[3] == "content")
                fixed = (10 + 5 + 5) * MS
                assert abs(first[1] - truth["received_ns"] - fixed
                           - truth["prefill_s"] * 1e9) < 0.2 * MS
            ttft = [(content_arrivals(s)[0] - s.t0_ns) / 1e9 for s in (cold, warm)]
            measured.append(ttft[0] - ttft[1])
            saved.append(c["prefill_s"] - w["prefill_s"])
        assert float(np.median(saved)) == pytest.approx(0.9 * 2992 / 20_000)
        assert abs(float(np.median(measured)) - float(np.median(saved))) < 0.005, (
            measured, saved)


class TestEngine:
    def test_cached_tokens_prefill_at_their_cost_and_skip_the_budget(self) -> None:
        """Virtual time: 1000 prompt tokens, 800 cached at 0.1, prefill 200 + 80 tokens;
        the step budget counts the 200 to compute, so two such fit in a 400 budget."""
        prof = get_profile("cached", {"jitter_ms": 0, "decode_base_ms": 10,
                                      "decode_per_stream_ms": 0, "prefill_overhead_ms": 5,
                                      "prefill_tokens_per_s": 10_000,
                                      "max_prefill_tokens": 400})
        core = EngineCore(prof)
        for _ in range(2):
            assert core.submit(Seq(prompt_tokens=1000, target_tokens=2, cached_tokens=800))
        step = core.plan_step(0)
        assert step is not None and len(step.admitted) == 2
        # 10 ms decode + 5 ms overhead + 2 x 280 tokens / 10k per s (56 ms)
        assert step.end_ns - step.start_ns == (10 + 5 + 56) * MS
        assert core.prefill_s(step.admitted[0]) == pytest.approx(0.028)

    def test_a_block_of_no_tokens_or_a_dearer_cache_is_refused(self) -> None:
        """The bounds the schema sets: a block holds at least one token, a cached token
        costs at most an uncached one."""
        with pytest.raises(UsageError, match="prefix_block_tokens: must be >= 1"):
            get_profile("cached", {"prefix_block_tokens": 0})
        with pytest.raises(UsageError, match="prefix_cache_cost: must be <= 1"):
            get_profile("cached", {"prefix_cache_cost": "1.5"})
        assert get_profile("cached")["prefix_cache"] is True
        assert get_profile("gpu")["prefix_cache"] is False
