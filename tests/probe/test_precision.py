"""Precision under load end to end: canaries over real loopback HTTP against reference
endpoints that swap models, cut outputs or vary honestly under load, every judgement
checked against the truth log (which model answered each request, what it cut)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.plan.settings import ProbeConfig, profile_settings
from evalkit.probe.suite import run_probe
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.reference.faults import sticky_draw
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import RunTarget

#: four levels, each at least 12 requests, every 2nd a canary (6 a level); the baseline
#: answers each of the 4 canaries twice
SHORT: dict[str, Any] = {
    "output_tokens": 16, "baseline": {"requests": 2}, "connect": {"rtt_samples": 3},
    "ramp": {"levels": [1, 2, 4, 8], "level_duration_s": 0.3, "level_min_requests": 12,
             "confirm_levels": 3},
    "canaries": {"count": 4, "alone_repeats": 2, "every": 2}}
#: the profiles' engines, quicker (what is judged here is the words, not the timing)
FAST = {"request_overhead_ms": 20, "decode_base_ms": 4}


def _run(reference: Any, tmp_path: Path, profile: str, **over: Any) -> tuple[Any, Any, dict]:
    srv = reference(profile, **FAST)
    overrides = {**SHORT, **over}
    config = ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                         phases=("connect", "baseline", "ramp"), overrides=overrides)
    res = run_probe(config, tmp_path / "run")
    assert res.summary is not None
    truth = {t["request_id"]: t for t in srv.truth()}
    return srv, res, truth


def _records(res: Any) -> list[dict[str, Any]]:
    text = (res.out_dir / "requests.jsonl").read_text()
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _sold_at_4(srv: Any, res: Any) -> Any:
    """The review of the run against a questionnaire that sells 4 streams."""
    q = parse_questionnaire((f"schema: evalkit.questionnaire/1\nmodel: {srv.model}\n"
                             f"endpoint: {srv.base_url}\nQ2: {{at_concurrency: 4}}\n").encode(),
                            "q.yaml")
    return reconcile(q, res.summary, None, RunTarget(model=srv.model, endpoint=srv.base_url))


def test_a_silent_swap_above_3_streams_is_caught_at_the_first_level_above(
        reference: Any, tmp_path: Path) -> None:
    srv, res, truth = _run(reference, tmp_path, "swapper")
    p = res.summary["precision"]
    by_level = {lv["concurrency"]: lv for lv in p["levels"]}
    # the truth: every canary answered at 1 or 2 streams came from the primary model
    for rec in _records(res):
        if rec["canary"] and rec["phase"] in ("baseline", "ramp") and rec["level"] <= 2:
            assert truth[rec["id"]]["served_by"] == "primary"
    assert by_level[1]["status"] == by_level[2]["status"] == "held"
    assert p["degraded_at"] == 4, by_level[4]
    assert by_level[4]["kind"] == "diverged_at_start"  # same name: no model was reported
    # each canary answer matched alone exactly when the primary model answered it
    for rec in _records(res):
        if rec["canary"] and rec["phase"] == "ramp" and rec["outcome"] == "ok":
            served = truth[rec["id"]]["served_by"]
            alone = next(r for r in _records(res) if r["canary"] == rec["canary"]
                         and r["phase"] == "baseline")
            assert (rec["output_sha256"] == alone["output_sha256"]) == (served == "primary")
    r = _sold_at_4(srv, res)
    assert r.verdict.streaming_ready is False
    assert r.answers is not None and "at 4 streams" in r.answers
    assert r.swap is None  # nothing named another model: the wording does not say so


def test_the_same_endpoint_without_the_swap_flags_nothing(reference: Any,
                                                          tmp_path: Path) -> None:
    srv, res, truth = _run(reference, tmp_path, "gpu")
    p = res.summary["precision"]
    assert p["degraded_at"] is None
    assert all(lv["status"] == "held" and lv["matches"] == lv["compared"] > 0
               for lv in p["levels"]), p["levels"]
    assert all(lv["grew"] is None for lv in p["levels"])  # no level ran on for nothing
    assert {t["served_by"] for t in truth.values() if t.get("served_by")} == {"primary"}
    r = _sold_at_4(srv, res)
    assert r.answers is None and r.swap is None
    assert not any(set(lv["breaches"]) & {"precision", "length"}
                   for lv in res.summary["ramp"]["levels"])


def test_a_reported_swap_is_named_as_another_model(reference: Any, tmp_path: Path) -> None:
    srv = reference("swapper", model_returned="evalkit-reference-mini", **FAST)
    res = run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                                phases=("connect", "baseline", "ramp"), overrides=SHORT),
                    tmp_path / "run")
    assert res.summary is not None
    lv4 = {lv["concurrency"]: lv for lv in res.summary["precision"]["levels"]}[4]
    assert lv4["models_not_seen_alone"] == ["evalkit-reference-mini"]
    assert lv4["kind"] == "model_reported" and lv4["status"] == "breach"
    r = _sold_at_4(srv, res)
    assert r.swap is not None and "evalkit-reference-mini" in r.swap


def test_truncation_above_3_streams_breaches_length_there(reference: Any,
                                                         tmp_path: Path) -> None:
    _, res, truth = _run(reference, tmp_path, "truncator")
    ramp = {lv["concurrency"]: lv for lv in res.summary["ramp"]["levels"]}
    assert "length" not in ramp[1]["breaches"] + ramp[2]["breaches"]
    assert "length" in ramp[4]["breaches"], (ramp[4]["status"], ramp[4]["length_ratio_ci"])
    # what was cut, by the truth log: the level's mean output over the baseline's
    outs = {c: [truth[r["id"]]["completion_tokens"] for r in _records(res)
                if r["phase"] == "ramp" and r["level"] == c and r["outcome"] == "ok"]
            for c in (4,)}
    base = [truth[r["id"]]["completion_tokens"] for r in _records(res)
            if r["phase"] == "baseline" and r["outcome"] == "ok"]
    want = (sum(outs[4]) / len(outs[4])) / (sum(base) / len(base))
    assert ramp[4]["length_ratio"] == pytest.approx(want, rel=0.02)
    # a cut answer is the answer alone stopped early: precision is not what it breaches
    assert "precision" not in ramp[4]["breaches"]


def test_honest_batch_variance_reads_as_varied_never_as_a_swap(reference: Any,
                                                                tmp_path: Path) -> None:
    _, res, truth = _run(reference, tmp_path, "jittery", output_tokens=32)
    p = res.summary["precision"]
    flipped = {rid for rid, t in truth.items() if t.get("first_flip_at") is not None}
    assert flipped, "the jittery profile flipped no token: nothing was tested"
    for lv in p["levels"]:
        assert lv["models_not_seen_alone"] == []
        assert lv["kind"] in (None, "varied"), lv
    # the canaries that differed are exactly those the server flipped
    for rec in _records(res):
        if rec["canary"] and rec["phase"] == "ramp" and rec["outcome"] == "ok":
            alone = next(r for r in _records(res) if r["canary"] == rec["canary"]
                         and r["phase"] == "baseline")
            assert (rec["output_sha256"] != alone["output_sha256"]) == (rec["id"] in flipped)


def _prompts(n_swapped: int, n_kept: int, start: int = 0) -> list[str]:
    """Prompts whose `swap_sticky` draw sends `n_swapped` of them to the swap (under 0.5)
    and keeps `n_kept` with the primary, swapped ones first."""
    swapped, kept = [], []
    i = start
    while len(swapped) < n_swapped or len(kept) < n_kept:
        text = f"In two sentences, say what the committee decided at meeting {i}."
        (swapped if sticky_draw(text) < 0.5 else kept).append(text)
        i += 1
    return swapped[:n_swapped] + kept[:n_kept]


def test_the_standard_profile_calls_a_half_swap_at_the_level_it_happens(
        reference: Any, tmp_path: Path) -> None:
    """Half of level 4's answers come from another model (a router sending a hash bucket
    of prompts to a cheaper replica above 1 stream), two of the six canaries among them.
    At the level's planned end its canaries are a tie (4 of 6 matched: an interval from
    22 % to 96 %); the level runs on in the same mix until the interval lies below the
    floor, so `degraded_at` is 4, not "no level". Deterministic: the canaries are the
    buyer's first prompts (`--prompts`), whose fate is their text's."""
    canaries = _prompts(2, 4)  # two swapped above 1 stream, four kept: k2 and k5 swapped
    others = _prompts(3, 3, start=1000)
    lines = [json.dumps({"prompt": p}) for p in (canaries[2:3] + canaries[:1] + canaries[3:5]
                                                 + canaries[1:2] + canaries[5:] + others)]
    (tmp_path / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    srv = reference("gpu", swap_above=1, swap_share=0.5, swap_sticky=True, **FAST)
    standard = profile_settings("standard")
    config = ProbeConfig(srv.base_url, srv.model, profile="standard", tag_requests=True,
                         phases=("connect", "baseline", "ramp"), levels=(4,),
                         prompts_file=tmp_path / "prompts.jsonl", overrides={
                             "output_tokens": 16, "baseline": {"requests": 2},
                             "connect": {"rtt_samples": 3},
                             "ramp": {"level_duration_s": 0.3}})
    res = run_probe(config, tmp_path / "run")
    assert res.summary is not None
    truth = {t["request_id"]: t for t in srv.truth()}
    level = [r for r in _records(res) if r["phase"] == "ramp" and r["level"] == 4]
    swapped = sum(truth[r["id"]]["served_by"] == "swap" for r in level)
    assert 0.35 < swapped / len(level) < 0.65  # about half of the level's answers
    p = res.summary["precision"]
    lv4 = p["levels"][0]
    assert p["degraded_at"] == 4, lv4
    assert lv4["status"] == "breach" and lv4["kind"] == "diverged_at_start"
    # it ran on past the floor's 36 requests (6 canaries), and said why it stopped
    every = standard.canaries.every
    assert lv4["grew"] == "decided" and lv4["compared"] > 36 // every, lv4
    assert lv4["budget"] == standard.canaries.level_budget
    assert not lv4["undecided"]
    # in the same mix: one canary in each block of `every` requests, no burst of them
    sent = [r["canary"] for r in sorted(level, key=lambda r: r["t0_s"])]
    for b in range(len(sent) // every):
        assert sum(c is not None for c in sent[b * every:(b + 1) * every]) <= 2
    assert abs(sum(c is not None for c in sent) - len(sent) / every) <= 1
    # each canary answer matched alone exactly when the primary model answered it
    alone = {r["canary"]: r["output_sha256"] for r in _records(res)
             if r["canary"] and r["phase"] == "baseline"}
    for r in level:
        if r["canary"] and r["outcome"] == "ok":
            assert (r["output_sha256"] == alone[r["canary"]]) == (
                truth[r["id"]]["served_by"] == "primary")
    assert any("ramp level 4: precision was a tie at the level's planned end; it ran on"
               in n for n in json.loads((res.out_dir / "run.json").read_text())["notes"])
