"""A vendor cannot tell the probe from its customers (issue 24).

The reference endpoint's `spot_probes` plays a vendor that has read our source: it looks
for the cheap marks of a benchmark (a tool's user-agent, length-forcing fields, a
bracketed nonce, a word-list prompt, one template for much of the traffic, a request-id
header) and serves what it spots from an idle pool. Its truth log names each request's
marks, so these tests judge the probe by what the server saw, not by what we meant to
send.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.prompts import PromptSource, count_tokens, synthetic
from evalkit.probe.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.reference.spotting import Spotter, prompt_text
from evalkit.rundir.store import read_run_files

SHORT = {"baseline": {"requests": 6}, "ramp": {"level_duration_s": 1.0},
         "prefill": {"prompt_tokens": [64, 256], "repeats": 2}}


def _generations(truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in truth if t["path"] != "/v1/models" and t.get("prompt_tokens")]


@pytest.mark.slow
def test_a_default_run_carries_no_mark_a_vendor_could_use(reference: Any,
                                                          tmp_path: Path) -> None:
    """Under 1 % of a default run's requests carry any mark, and its timings still match
    the server's truth, joined by the prompt itself (no request id was sent)."""
    srv = reference("gpu", spot_probes=True, decode_base_ms=8, request_overhead_ms=5)
    run_probe(ProbeConfig(srv.base_url, srv.model, levels=(1, 2, 4), overrides=SHORT,
                          phases=("connect", "baseline", "prefill", "ramp")), tmp_path / "r")
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
        text = synthetic(r.prompt_tokens or 0, r.requested_output_tokens or 0,
                         r.prompt_id).content
        t = by_prompt[hashlib.sha256(str(text).encode()).hexdigest()[:16]]
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


def test_default_prompts_share_no_template_and_keep_their_exact_length() -> None:
    """Hundreds of default prompts: exact o200k lengths, no bracketed opening, and no
    opening (digits masked) on anything near a quarter of them."""
    spot = Spotter()
    source = PromptSource("t0", seed=7)
    flagged = 0
    for i, n in enumerate([16, 64, 256, 512, 1024] * 80):
        p = source.next(n, 32)
        assert p.prompt_tokens == n == count_tokens(str(p.content)), (i, n)
        assert not str(p.content).lstrip().startswith("[")
        flagged += bool(spot.marks(None, None, {"messages": [
            {"role": "user", "content": p.content}]}))
    assert flagged == 0


def test_the_truth_log_joins_a_prompt_by_its_text() -> None:
    """`prompt_sha` is the SHA-256 of the text the server read, as the client can make it."""
    p = synthetic(64, 8, "t-000001")
    body = {"messages": [{"role": "user", "content": p.content}]}
    assert hashlib.sha256(prompt_text(body).encode()).hexdigest()[:16] == \
        hashlib.sha256(str(p.content).encode()).hexdigest()[:16]
