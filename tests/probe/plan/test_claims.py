"""Probe what was claimed: the questionnaire as the test plan (pure plan, then real runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.analysis.intervals import quantile_ranks, quantile_width, samples_for
from evalkit.cli import cli
from evalkit.errors import UsageError
from evalkit.probe.plan.claims import (
    CLIENT_STREAMS_PER_PROCESS_TLS,
    client_streams_per_process,
    plan_probe,
    requests_for_width,
    size_levels,
)
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.questionnaire.model import Questionnaire
from evalkit.rundir.store import read_records

BASE = [1, 2, 4, 8, 16, 32, 64]


def _q(text: str, name: str = "acme.yaml") -> Questionnaire:
    return parse_questionnaire(("schema: evalkit.questionnaire/1\n" + text).encode(), name)


CLAIMS = """
Q1: {ttft_p50_ms: 300, ttft_p90_ms: 900, at_concurrency: 24, prompt_tokens: 512,
     source: production}
Q2: {output_tokens_per_s_per_gpu: 900, at_concurrency: 24, gpus: 1, source: production,
     distribution: {p50: 850, p90: 950}}
Q4: {max_concurrent_streams_per_node: 48, first_degrades: itl, source: lab}
"""


class TestPlan:
    def test_samples_a_percentile_needs(self) -> None:
        """A 95 % interval with both ends needs these counts, not fewer."""
        assert [samples_for(q) for q in (0.5, 0.9, 0.99)] == [6, 36, 368]
        for q in (0.5, 0.9, 0.99):
            n = samples_for(q)
            assert None not in quantile_ranks(n, q) and None in quantile_ranks(n - 1, q)

    def test_levels_bracket_every_claim_and_floors_follow_the_percentile(self) -> None:
        """24 and 48 are bracketed (12, 24, 48, 96); 24 needs 36 requests for its p90."""
        plan = plan_probe(_q(CLAIMS), BASE, max_concurrency=None, levels_given=False)
        assert plan.levels == (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96)
        assert plan.min_requests == {24: 36, 48: 36}
        assert plan.prompt_tokens == 512 and plan.soak_concurrency == 24
        assert all(c.reachable for c in plan.claims)

    def test_a_cap_below_a_claim_makes_it_unreachable_before_the_run(self) -> None:
        """--max-concurrency 32: the 48-stream limit can only be decided by a breach."""
        plan = plan_probe(_q(CLAIMS), BASE, max_concurrency=32, levels_given=False)
        assert max(plan.levels) == 32
        [q4] = plan.unreachable
        assert q4.question == "Q4" and "above --max-concurrency 32" in (q4.why_not or "")

    def test_levels_given_are_kept_and_what_they_miss_is_said(self) -> None:
        plan = plan_probe(_q(CLAIMS), [1, 4, 16], max_concurrency=None, levels_given=True)
        assert plan.levels == (1, 4, 16)
        assert {c.question for c in plan.unreachable} == {"Q1", "Q2", "Q4"}

    def test_the_client_ceiling_and_a_budget_bound_the_plan(self) -> None:
        """Past 256 streams a process is client-bound; a budget drops the top levels."""
        big = _q("Q1: {ttft_p90_ms: 900, at_concurrency: 1000, source: production}\n")
        [claim] = plan_probe(big, BASE, max_concurrency=None, levels_given=False).claims
        assert not claim.reachable and "ceiling of about 256" in (claim.why_not or "")
        assert plan_probe(big, BASE, max_concurrency=None, levels_given=False,
                          processes=4).claims[0].reachable
        # over HTTPS a process holds fewer (each chunk is a TLS record to decrypt too)
        tls = client_streams_per_process("HTTPS://api.vendor.example/v1")
        assert tls == CLIENT_STREAMS_PER_PROCESS_TLS < client_streams_per_process(
            "http://127.0.0.1:8000/v1") == 256
        mid = _q(f"Q1: {{ttft_p90_ms: 900, at_concurrency: {tls + 16}, source: production}}\n")
        assert plan_probe(mid, BASE, max_concurrency=None, levels_given=False).claims[0].reachable
        [over] = plan_probe(mid, BASE, max_concurrency=None, levels_given=False,
                            per_process=tls).claims
        assert not over.reachable and f"{tls} per process" in (over.why_not or "")
        assert "over HTTPS" in (over.why_not or "")
        plan = plan_probe(_q(CLAIMS), BASE, max_concurrency=None, levels_given=False,
                          budget_requests=60, default_requests=3)
        assert plan.levels == (1, 2, 4, 8, 12, 16, 24, 32)  # 7 × 3 + 36 = 57 ≤ 60; +48 is not
        assert {c.question for c in plan.unreachable} == {"Q4"}
        assert "beyond the --budget of 60 requests" in (plan.unreachable[0].why_not or "")


def _questionnaire(tmp_path: Path, srv: Any, claims: str) -> Path:
    path = tmp_path / "acme.yaml"
    path.write_text(f"schema: evalkit.questionnaire/1\nvendor: Acme\nmodel: {srv.model}\n"
                    f"endpoint: {srv.base_url}\n" + claims)
    return path


QUICK = {"output_tokens": 8, "baseline": {"requests": 3}, "connect": {"rtt_samples": 2},
         "ramp": {"level_duration_s": 0.5}}


class TestPlannedRuns:
    def test_a_claim_at_32_streams_is_measured_at_32(self, reference: Any,
                                                    tmp_path: Path) -> None:
        """The plan adds 32 to the ramp and runs it with its floor, even past a breach."""
        srv = reference("gpu", decode_base_ms=2, decode_per_stream_ms=2)
        q = _questionnaire(tmp_path, srv, "Q1: {ttft_p90_ms: 2000, at_concurrency: 32, "
                                          "source: production}\n")
        # levels of 8 requests: the 36 at 32 are then the plan's floor for the claim, not
        # the quick profile's for every level (and the run takes half the time)
        short = {**QUICK, "ramp": {**QUICK["ramp"], "level_min_requests": 8}}
        res = run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                                    phases=("connect", "baseline", "ramp"),
                                    questionnaire=q, overrides=short), tmp_path / "run")
        records = read_records(tmp_path / "run" / "requests.jsonl")
        at32 = [r for r in records if r.phase == "ramp" and r.level == 32]
        assert len(at32) >= 36
        # past a breach: inter-token latency broke below 32 (at 8 it is 4.5 times the
        # baseline's), so the ramp alone would have stopped short of 32
        assert res.summary is not None
        assert res.summary["ramp"]["first_breach_concurrency"] < 32, res.summary["ramp"]
        truth_ids = {t["request_id"] for t in srv.truth()}
        assert {r.id for r in at32} <= truth_ids  # really sent, really served
        run = json.loads((tmp_path / "run" / "run.json").read_text())
        assert run["plan"]["claims"][0]["concurrency"] == 32
        assert 32 in run["settings"]["ramp"]["levels"]

    def test_an_unreachable_claim_is_said_before_and_unverified_after(
            self, reference: Any, tmp_path: Path) -> None:
        """Capped at 8, a 64-stream claim is listed as unreachable, and the scorecard says
        unverified with the command that would verify it."""
        srv = reference("gpu", decode_base_ms=2, decode_per_stream_ms=1)
        q = _questionnaire(tmp_path, srv, "Q1: {ttft_p90_ms: 2000, at_concurrency: 64, "
                                          "source: production}\n")
        # the short suite of the test above, and levels of 8 requests: no level below the cap
        # is judged (the plan sets no floor for them), only the 64 the run never reached
        short = tmp_path / "short.json"
        short.write_text(json.dumps({"extends": "quick", **QUICK, "ramp": {
            **QUICK["ramp"], "level_min_requests": 8}}))
        res = CliRunner().invoke(cli, [
            "probe", "--tag-requests", "--base-url", srv.base_url, "--model", srv.model, "--quiet",
            "--questionnaire", str(q), "--max-concurrency", "8", "--phases",
            "connect,baseline,ramp", "--profile", str(short), "--out", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
        before = res.stdout[:res.stdout.index("baseline:")]
        assert "Q1 claims 64 streams: UNREACHABLE: above --max-concurrency 8" in before
        out = tmp_path / "card.pdf"
        res = CliRunner().invoke(cli, ["report", "--run", str(tmp_path / "run"),
                                       "--questionnaire", str(q), "--out", str(out)])
        assert res.exit_code == 0, res.output
        q1 = json.loads(out.with_suffix(".json").read_text())["questions"]["Q1"]
        assert q1["status"] == "unverified"
        assert (f"re-run `evalkit probe --base-url {srv.base_url} --model {srv.model} "
                "--questionnaire acme.yaml --max-concurrency 128 --out DIR`") in q1["reason"]

class TestSizedForWidth:
    """--interval-width: each level sized so the percentile it is judged on is known to a
    width, checked against evalkit.analysis.intervals' own ranks for the n picked."""

    @pytest.mark.parametrize(("q", "width"), [(0.9, 0.10), (0.9, 0.05), (0.9, 0.02),
                                              (0.99, 0.01), (0.5, 0.05), (0.9, 0.30)])
    def test_the_count_fits_and_one_fewer_does_not(self, q: float, width: float) -> None:
        n = requests_for_width(q, width)
        fits = quantile_width(n, q)
        assert fits is not None and fits <= width
        fewer = quantile_width(n - 1, q)
        assert fewer is None or fewer > width
        assert n >= samples_for(q)  # both ends bounded, whatever the width

    def test_known_counts(self) -> None:
        """The figures --help quotes: a p90 to 10, 5 and 2 points."""
        assert [requests_for_width(0.9, w) for w in (0.10, 0.05, 0.02)] == [141, 561, 3500]

    @pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
    def test_a_width_must_be_a_share(self, bad: float) -> None:
        with pytest.raises(ValueError):
            requests_for_width(0.9, bad)

    def test_every_level_for_its_p90_and_a_claim_for_its_own_percentile(self) -> None:
        """Level 24 holds a Q1 p90 and a Q2 p50 claim: p50 at 5 points needs 1,540; the
        others get the p90's 561; a planned floor is never lowered."""
        plan = plan_probe(_q(CLAIMS), BASE, max_concurrency=None, levels_given=False,
                          interval_width=0.05)
        assert plan.interval_width == 0.05
        assert set(plan.min_requests) == set(plan.levels)
        assert plan.min_requests[24] == requests_for_width(0.5, 0.05) == 1540
        assert {n for c, n in plan.min_requests.items() if c != 24} == {561}
        assert size_levels([1, 2], 0.05, {2: 9999}) == {1: 561, 2: 9999}

    def test_the_library_sizes_the_run_with_and_without_a_questionnaire(
            self, tmp_path: Path) -> None:
        """plan_run (what run_probe and a notebook use, not only the CLI) floors every ramp
        level for the width; with a questionnaire a claim's own percentile is sized too."""
        from evalkit.probe.plan.runplan import plan_run

        base = ProbeConfig("http://127.0.0.1:9/v1", "m", levels=(1, 4), interval_width=0.10)
        planned = plan_run(base)
        settings, plan = planned.settings, planned.plan
        assert plan is None and dict(settings.ramp.min_requests) == {1: 141, 4: 141}
        # floors at every level name no claim: past a confirmed breach the ramp still stops
        assert settings.ramp.claimed == ()
        path = tmp_path / "acme.yaml"
        path.write_text("schema: evalkit.questionnaire/1\n" + CLAIMS)
        planned = plan_run(ProbeConfig("http://127.0.0.1:9/v1", "m", questionnaire=path,
                                       interval_width=0.05))
        settings, plan = planned.settings, planned.plan
        assert plan is not None and plan.interval_width == 0.05
        assert settings.ramp.min_requests[24] == 1540  # Q2's p50 claim at 24 streams
        assert set(settings.ramp.min_requests) == set(settings.ramp.levels)
        assert settings.ramp.claimed == (24, 48)  # Q1/Q2 at 24, Q4's limit at 48
        with pytest.raises(UsageError, match=r"between 0 and 0\.5"):
            plan_run(ProbeConfig("http://127.0.0.1:9/v1", "m", interval_width=0.5))

class TestVoicePlan:
    """A voice run (`--api openai-realtime`) planned from the calls its voice claims name,
    never from the streams of the text claims beside them."""

    VOICE = """
Q1: {ttft_p50_ms: 300, at_concurrency: 32, voice_ttfa_p90_ms: 500, voice_at_calls: 6,
     voice_silence_ms: 300, source: production}
Q2: {output_tokens_per_s_per_gpu: 900, at_concurrency: 24, gpus: 1, source: production,
     distribution: {p50: 850, p90: 950}}
Q4: {max_concurrent_streams_per_node: 48, voice_max_calls_per_node: 5, nodes: 2,
     voice_first_degrades: ttfa, source: lab}
"""

    def test_the_calls_claimed_are_planned(self) -> None:
        plan = plan_probe(_q(self.VOICE), [1, 2, 4], max_concurrency=None,
                          levels_given=False, voice=True)
        assert [(c.question, c.concurrency, c.percentile) for c in plan.claims] == [
            ("Q1", 6, "p90"), ("Q4", 10, "p90")]
        assert plan.levels == (1, 2, 3, 4, 5, 6, 10, 12, 20)
        assert plan.unit == "calls" and plan.soak_concurrency is None
        assert plan.prompt_tokens is None

    def test_the_dry_run_says_a_claim_at_another_window_will_not_be_verified(
            self, tmp_path: Path) -> None:
        q = tmp_path / "acme.yaml"
        q.write_text("schema: evalkit.questionnaire/1\n" + self.VOICE)
        args = ["probe", "--api", "openai-realtime", "--base-url", "http://127.0.0.1:9/v1",
                "--model", "m", "--questionnaire", str(q), "--dry-run", "--out",
                str(tmp_path / "run")]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "  Q1 claims 6 calls: level 6, at least 36 turns for its p90" in result.output
        assert ("note: Q1's voice claim assumes server VAD with a 300 ms silence window; "
                "this run asks server VAD with 500 ms, so it will not verify that claim "
                "(--turn-detection server-vad --silence-ms 300 would)") in result.output
        same = CliRunner().invoke(cli, [*args, "--silence-ms", "300"])
        assert same.exit_code == 0 and "will not verify" not in same.output
