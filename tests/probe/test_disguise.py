"""A vendor cannot tell the probe from its customers (issues 24 and 40).

The reference endpoint's `spot_probes` plays a vendor that has read our source: it looks
for the cheap marks of a benchmark (a tool's user-agent, length-forcing fields, a
bracketed nonce, a word-list prompt, one template for much of the traffic, a request-id
header) and for ten words in a row of anything evalkit ships (its passages, the tasks it
composes), and serves what it spots from an idle pool where no stream slows another. Its
truth log names each request's marks, so these tests judge the probe by what the server
saw, not by what we meant to send: cut from the buyer's corpus, the probe goes unseen;
cut from the public text, it is seen, and measures the idle pool.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from evalkit.corpus.store import load_text
from evalkit.probe.plan.prompts import PromptSource, count_tokens, synthetic
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.reference.spotting import Spotter, prompt_text
from evalkit.rundir.store import read_run_files

SHORT = {"baseline": {"requests": 6}, "ramp": {"level_duration_s": 1.0},
         "prefill": {"prompt_tokens": [64, 256], "repeats": 2}}


def _generations(truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in truth if t["path"] != "/v1/models" and t.get("prompt_tokens")]


@pytest.mark.slow
def test_a_corpus_run_carries_no_mark_a_vendor_could_use(reference: Any, private_corpus: Path,
                                                        tmp_path: Path) -> None:
    """Under 1 % of a run's requests cut from the buyer's corpus carry any mark, though
    the vendor knows everything evalkit ships, and its timings still match the server's
    truth, joined by the prompt itself (no request id was sent)."""
    srv = reference("gpu", spot_probes=True, decode_base_ms=8, request_overhead_ms=5)
    # 16 tokens out, not the quick profile's 32: the same requests and prompts (what the
    # vendor looks at), each streaming half as long (the run ~35 s -> ~20 s)
    run_probe(ProbeConfig(srv.base_url, srv.model, levels=(1, 2, 4), overrides=SHORT,
                          output_tokens=16,
                          phases=("connect", "baseline", "prefill", "ramp"),
                          corpus_dir=private_corpus), tmp_path / "r")
    text = load_text(private_corpus)
    truth = _generations(srv.truth())
    assert len(truth) >= 40
    spotted = [t for t in truth if t.get("spotted")]
    assert len(spotted) < 0.01 * len(truth), [t["spotted"] for t in spotted][:5]
    assert not any(t["request_id"].count("-") == 4 for t in truth)  # no UUID id was sent
    meta, records = read_run_files(tmp_path / "r")
    by_prompt = {t["prompt_sha"]: t for t in truth}
    errors_ms: list[float] = []
    gap_errors_ms: list[float] = []
    for r in records:
        if r.outcome != "ok" or r.ttft_s is None or r.prompt_id is None:
            continue
        # the record's prompt, re-made from its seed, finds the server's line
        sent = synthetic(r.counted_prompt_tokens or 0, r.requested_output_tokens or 0,
                         r.prompt_id, 0, text).content
        t = by_prompt[hashlib.sha256(str(sent).encode()).hexdigest()[:16]]
        ours = meta["clock"]["origin_ns"] + (r.t0_s + r.ttft_s) * 1e9
        errors_ms.append(abs(ours - t["first_write_ns"]) / 1e6)
        # each inter-chunk gap against the gap between the server's content writes
        writes = [w[0] for w in t["writes"] if w[3] in ("content", "reasoning")]
        ours_at = [at for at, _ in r.chunks]
        if len(writes) == len(ours_at):
            gap_errors_ms += [abs((b - a) - (y - x) / 1e9) * 1e3 for a, b, x, y in
                              zip(ours_at, ours_at[1:], writes, writes[1:], strict=False)]
    assert len(errors_ms) >= 0.9 * len([r for r in records if r.outcome == "ok"])
    errors_ms.sort()
    gap_errors_ms.sort()
    assert errors_ms[len(errors_ms) // 2] < 5.0, errors_ms[-5:]  # TTFT within 5 ms
    assert gap_errors_ms and gap_errors_ms[len(gap_errors_ms) // 2] < 2.0  # ITL within 2 ms


@pytest.mark.slow
def test_the_public_text_is_spotted_and_its_scorecard_reads_better_than_it_should(
        reference: Any, private_corpus: Path, tmp_path: Path) -> None:
    """The same endpoint, whose streams slow each other down, probed twice: the run on
    the public text is recognised request by request and served by the idle pool, so its
    ramp shows no degradation and its page one reads better than the service customers
    get (and says why it may); the run on the buyer's corpus is not, and shows the
    degradation that is there."""
    from evalkit.render.page import build_page
    from evalkit.review.pipeline import review

    short = {"baseline": {"requests": 4}, "canaries": {"count": 2, "alone_repeats": 1},
             "ramp": {"level_duration_s": 0.8, "level_min_requests": 12,
                      "confirm_levels": 0}}
    runs = {}
    for name, corpus in (("public", None), ("private", private_corpus)):
        # a gateway's 40 ms before the engine: a newcomer's wait for the step under way
        # (6 ms) does not double its TTFT; each stream slows the others' steps by 6 ms
        # (a process of its own: in this one, a loaded machine made the client bound)
        srv = reference("gpu", spot_probes=True, decode_base_ms=6, decode_per_stream_ms=6,
                        request_overhead_ms=40)
        out = tmp_path / name
        result = run_probe(ProbeConfig(srv.base_url, srv.model, levels=(1, 8),
                                       output_tokens=12, overrides=short,
                                       phases=("connect", "baseline", "ramp"),
                                       corpus_dir=corpus, no_corpus=corpus is None), out)
        truth = _generations(srv.truth())
        spotted = [t for t in truth if t.get("spotted")]
        done = review(out, None)
        page = build_page(done.card, done.run, {}, charts=False)  # page one's words
        runs[name] = (result.summary or {}, truth, spotted, page)
    summary, truth, spotted, page = runs["public"]
    assert len(spotted) == len(truth) > 20
    assert all("public-text" in t["spotted"] for t in spotted)
    assert summary["prompt_text"]["recognisable"] is True
    top = summary["ramp"]["levels"][-1]
    assert top["concurrency"] == 8 and summary["ramp"]["first_degraded"] is None
    private_summary, private_truth, private_spotted, private_page = runs["private"]
    assert not private_spotted and len(private_truth) > 20
    assert private_summary["prompt_text"]["recognisable"] is False
    private_top = private_summary["ramp"]["levels"][-1]
    assert private_summary["ramp"]["first_degraded"] in ("ttft", "itl")
    # served apart, the spotted run's streams at 8 ran several times as fast as customers'
    assert top["tpot_s"]["p90"] < 0.4 * private_top["tpot_s"]["p90"]
    figures, private_figures = dict(page.key_figures), dict(private_page.key_figures)
    assert "degraded first" not in figures["Max sustained concurrency"]
    assert "degraded first" in private_figures["Max sustained concurrency"]
    # and page one says why the spotted run may read better than it should
    assert page.prompt_text is not None and private_page.prompt_text is not None
    assert page.prompt_text.heading == "A VENDOR COULD RECOGNISE THIS PROBE"
    assert private_page.prompt_text.heading == ""
    assert private_page.prompt_text.text.startswith("Prompt text: the buyer's corpus "
                                                          "(digest ")


@pytest.mark.slow
def test_forced_lengths_and_tagged_requests_are_spotted(reference: Any, tmp_path: Path) -> None:
    """`--force-length --tag-requests` say "probe" on every request, as their help warns."""
    srv = reference("gpu", mode="thread", spot_probes=True)
    # each kind of request once or more: an ordinary prompt and every canary (5, not 14)
    few = {**SHORT, "baseline": {"requests": 1}, "canaries": {"alone_repeats": 1}}
    run_probe(ProbeConfig(srv.base_url, srv.model, overrides=few, force_length=True,
                          tag_requests=True, phases=("connect", "baseline")), tmp_path / "r")
    truth = _generations(srv.truth())
    assert len(truth) == 1 + 1 + 4  # connect, the ordinary prompt, the four canaries
    assert truth and all({"body-extension", "request-id"} <= set(t["spotted"]) for t in truth)


def test_the_old_probe_prompt_and_a_tool_user_agent_are_marks() -> None:
    """What evalkit sent before issue 24, each mark named."""
    spot = Spotter()
    marks: list[str] = []
    for i in range(30):
        body = {"messages": [{"role": "user", "content":
                              f"[ab12cd-{i:06d}] Continue this list of words: the of and"}],
                "ignore_eos": True, "min_tokens": 8}
        marks = spot.marks("evalkit", "3f1c0b6e-9d4a-4b7e-8a51-1c2d3e4f5a6b", body)
    assert marks == ["user-agent", "body-extension", "nonce", "word-list", "template",
                     "request-id"]
    assert Spotter().marks("python-httpx/0.28.1", None, {"prompt": "What is a slot?"}) == []


def test_default_prompts_share_no_template_and_keep_their_exact_length(
        private_corpus: Path) -> None:
    """Hundreds of prompts: exact o200k lengths, no bracketed opening, no opening (digits
    masked) on anything near a quarter of them; cut from the corpus they carry no mark
    at all, cut from the public text only that one (ten words of what evalkit ships), on
    every prompt long enough to hold ten words (16 tokens may not)."""
    text = load_text(private_corpus)
    for source, allowed in ((PromptSource("t0", seed=7, text=text), set()),
                            (PromptSource("t0", seed=7), {"public-text", "task-text"})):
        spot = Spotter()
        for i, n in enumerate([16, 64, 256, 512, 1024] * 80):
            p = source.next(n, 32)
            assert p.prompt_tokens == n == count_tokens(str(p.content)), (i, n)
            assert not str(p.content).lstrip().startswith("[")
            marks = set(spot.marks(None, None, {"messages": [
                {"role": "user", "content": p.content}]}))
            assert marks <= allowed, (i, marks)
            if not allowed or n > 16:
                assert bool(marks) == bool(allowed), (i, n, marks)


def test_the_truth_log_joins_a_prompt_by_its_text() -> None:
    """`prompt_sha` is the SHA-256 of the text the server read, as the client can make it."""
    p = synthetic(64, 8, "t-000001")
    body = {"messages": [{"role": "user", "content": p.content}]}
    assert hashlib.sha256(prompt_text(body).encode()).hexdigest()[:16] == \
        hashlib.sha256(str(p.content).encode()).hexdigest()[:16]
