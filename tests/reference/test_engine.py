"""The reference endpoint's engine model and profiles, checked as pure data (no HTTP)."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.errors import UsageError
from evalkit.reference.engine import MS, EngineCore, Seq, simulate_closed_loop
from evalkit.reference.faults import plan_request, sticky_draw, under_load
from evalkit.reference.params import get_profile, load_profiles, param_specs

S = 1_000_000_000


def _profile(**overrides: object):
    return get_profile("gpu", {"jitter_ms": 0, **overrides})


class TestProfiles:
    def test_every_profile_has_a_story_and_every_parameter(self) -> None:
        """Profiles are complete: names fixed for other engineers, one-line stories."""
        profiles = load_profiles()
        assert list(profiles) == ["gpu", "admission", "queueing", "headline", "faulty",
                                  "swapper", "renamer", "truncator", "jittery", "cached"]
        for prof in profiles.values():
            assert set(prof.params) == set(param_specs())
            assert 20 < len(prof.story) < 200 and "\n" not in prof.story

    def test_overrides_are_typed_and_validated(self) -> None:
        """CLI strings become the parameter's type; unknown names and bad values are refused."""
        prof = get_profile("gpu", {"max_batch": "8", "honour_min_tokens": "false",
                                   "decode_base_ms": "2.5"})
        assert (prof["max_batch"], prof["honour_min_tokens"],
                                   prof["decode_base_ms"]) == (8, False, 2.5)
        with pytest.raises(UsageError, match="unknown reference parameter 'decode_ms'"):
            get_profile("gpu", {"decode_ms": 1})
        with pytest.raises(UsageError, match="not a int"):
            get_profile("gpu", {"max_batch": "1.5"})
        with pytest.raises(UsageError, match="probability"):
            get_profile("gpu", {"fault_crlf": 2})
        with pytest.raises(UsageError, match="unknown reference profile"):
            get_profile("h100")


class TestEngineCore:
    def test_step_time_is_base_plus_per_stream_plus_prefill_of_newcomers(self) -> None:
        """The first step carries the prefill; later steps grow with the batch only."""
        core = EngineCore(_profile(decode_base_ms=10, decode_per_stream_ms=2,
                                   prefill_overhead_ms=5, prefill_tokens_per_s=10_000))
        for _ in range(3):
            assert core.submit(Seq(prompt_tokens=1000, target_tokens=4))
        step = core.plan_step(0)
        assert step is not None and step.batch == 3
        # 10 + 2*3 + (5 + 3000 tokens / 10k per s = 300 ms)
        assert step.end_ns - step.start_ns == (10 + 6 + 5 + 300) * MS
        core.finish_step()
        step2 = core.plan_step(step.end_ns)
        assert step2 is not None and step2.start_ns == step.end_ns
        assert step2.end_ns - step2.start_ns == 16 * MS

    def test_newcomer_prefill_delays_running_streams(self) -> None:
        """A request admitted mid-stream lengthens the running streams' next step."""
        core = EngineCore(_profile(decode_base_ms=10, decode_per_stream_ms=0,
                                   prefill_overhead_ms=0, prefill_tokens_per_s=1000))
        core.submit(Seq(prompt_tokens=10, target_tokens=10))
        core.plan_step(0)
        core.finish_step()
        core.submit(Seq(prompt_tokens=50, target_tokens=10))
        step = core.plan_step(core.last_end_ns or 0)
        assert step is not None and len(step.admitted) == 1
        assert step.end_ns - step.start_ns == (10 + 50) * MS

    def test_max_batch_queues_and_admission_limit_rejects(self) -> None:
        """Beyond max_batch requests wait; beyond admission_limit they are refused."""
        core = EngineCore(_profile(max_batch=2, admission_limit=3))
        seqs = [Seq(10, 2) for _ in range(4)]
        assert [core.submit(s) for s in seqs] == [True, True, True, False]
        step = core.plan_step(0)
        assert step is not None and step.batch == 2 and len(core.waiting) == 1
        core.finish_step()
        core.plan_step(step.end_ns)
        _, finished = core.finish_step()
        assert finished == seqs[:2]
        step3 = core.plan_step(10**9)
        assert step3 is not None and step3.admitted == (seqs[2],)

    def test_prefill_budget_spreads_a_burst(self) -> None:
        """max_prefill_tokens admits what fits in one step; the rest wait for the next."""
        core = EngineCore(_profile(max_prefill_tokens=1000))
        for _ in range(5):
            core.submit(Seq(400, 8))
        step = core.plan_step(0)
        assert step is not None and len(step.admitted) == 2

    def test_same_seed_same_timeline(self) -> None:
        """Jitter and stalls are seeded: equal seeds agree, different seeds do not."""
        prof = get_profile("gpu", {"jitter_ms": 3, "stall_prob": 0.2, "stall_ms": 50})

        def timeline(seed: int) -> list[int]:
            core = EngineCore(prof, seed)
            core.submit(Seq(10, 50))
            ends, now = [], 0
            while (step := core.plan_step(now)) is not None:
                ends.append(step.end_ns)
                now = step.end_ns
                core.finish_step()
            return ends

        assert timeline(1) == timeline(1)
        assert timeline(1) != timeline(2)
        gaps = np.diff(timeline(1)) / MS
        assert gaps.max() > 50  # some stalls happened


class TestRequestPlan:
    def test_ignore_eos_and_min_tokens(self) -> None:
        """ignore_eos forces max_tokens; otherwise early stops respect min_tokens."""
        prof = get_profile("gpu", {"natural_eos_prob": 1.0})
        assert plan_request(prof, 0, 0, 64, ignore_eos=True).total_tokens == 64
        lengths = [plan_request(prof, 0, i, 64, min_tokens=40).total_tokens for i in range(50)]
        assert min(lengths) >= 40 and len(set(lengths)) > 5
        sloppy = prof.with_overrides({"honour_min_tokens": False})
        lengths = [plan_request(sloppy, 0, i, 64, min_tokens=40).total_tokens for i in range(50)]
        assert min(lengths) < 40
        deaf = prof.with_overrides({"honour_ignore_eos": False})
        assert min(plan_request(deaf, 0, i, 64, ignore_eos=True).total_tokens
                   for i in range(20)) < 64

    def test_fault_fractions_follow_the_probabilities(self) -> None:
        """A 0.3 probability hits about 30% of requests, the same ones for the same seed."""
        prof = get_profile("gpu", {"fault_no_done": 0.3})
        hits = [plan_request(prof, 7, i, 16).no_done for i in range(1000)]
        assert 0.25 < sum(hits) / 1000 < 0.35
        assert hits == [plan_request(prof, 7, i, 16).no_done for i in range(1000)]
        assert plan_request(prof, 7, 0, 16).outcome in ("ok", "fault:no_done")

    def test_faults_under_load_apply_only_above_their_threshold(self) -> None:
        """swap_above / truncate_above 3: nothing at 3 streams, both at 4; a truncated
        plan keeps its planned length, stops with `stop`, and its mid-stream fault moves
        into what is left."""
        prof = get_profile("gpu", {"swap_above": 3, "truncate_above": 3,
                                   "fault_disconnect": 1.0, "fault_role_first_chunk": 0})
        plan = plan_request(prof, 0, 0, 40, ignore_eos=True)
        assert under_load(plan, prof, 3) is plan and plan.faults == ["disconnect"]
        cut = under_load(plan, prof, 4)
        assert (cut.total_tokens, cut.planned_tokens, cut.finish_reason) == (20, 40, "stop")
        assert (cut.served_by, cut.truncated, cut.disconnect_at) == ("swap", True, 10)
        assert cut.faults == ["disconnect", "swap", "truncate"]
        assert under_load(plan, get_profile("gpu"), 99) is plan  # 0 = off
        one = plan_request(prof, 0, 0, 1, ignore_eos=True)
        assert not under_load(one, prof, 9).truncated  # half of one token is none

    def test_swap_share_swaps_that_share_above_the_threshold_and_moves_no_other_draw(
            self) -> None:
        """swap_share 0.5: about half the requests above swap_above get the swap, the same
        ones for the same seed, none at or below it; switching it on reshuffles no other
        fault. Sticky, a prompt's fate is its text's: the same text, the same fate."""
        half = get_profile("gpu", {"swap_above": 3, "swap_share": 0.5, "fault_no_done": 0.3})
        plans = [plan_request(half, 7, i, 16) for i in range(1000)]
        swapped = [under_load(p, half, 4).served_by == "swap" for p in plans]
        assert 0.45 < sum(swapped) / 1000 < 0.55
        assert swapped == [under_load(plan_request(half, 7, i, 16), half, 4).served_by == "swap"
                           for i in range(1000)]
        assert not any(under_load(p, half, 3).served_by == "swap" for p in plans)
        plain = get_profile("gpu", {"fault_no_done": 0.3})
        assert [p.no_done for p in plans] == [plan_request(plain, 7, i, 16).no_done
                                              for i in range(1000)]
        draws = [sticky_draw(f"prompt {i}") for i in range(1000)]
        assert draws == [sticky_draw(f"prompt {i}") for i in range(1000)]
        assert 0.45 < sum(d < 0.5 for d in draws) / 1000 < 0.55


def _ramp(profile: str, prompt: int, output: int, level_s: float) -> list[dict[str, float]]:
    """Closed-loop ramp as a prober runs it (all workers start at once), in virtual time."""
    prof = get_profile(profile)
    rows = []
    for c in (1, 2, 4, 8, 16, 32, 64):
        rs = simulate_closed_loop(prof, c, int(level_s * S), prompt, output, seed=1)
        ok = [r for r in rs if not r.rejected]
        rows.append({"c": c, "ttft": float(np.percentile([r.ttft_ns for r in ok], 90)),
                     "tpot": float(np.percentile([r.tpot_ns for r in ok], 90)),
                     "rejected": 1 - len(ok) / len(rs)})
    base = rows[0]
    return [{**r, "ttft": r["ttft"] / base["ttft"], "tpot": r["tpot"] / base["tpot"]}
            for r in rows]


@pytest.mark.parametrize(("profile", "metric"), [
    ("gpu", "itl"), ("faulty", "itl"), ("headline", "itl"), ("queueing", "ttft"),
    ("admission", "admission")])
@pytest.mark.parametrize(("prompt", "output", "level_s"), [(256, 32, 2.5), (512, 128, 15.0)])
def test_profile_degrades_its_metric_first_and_clearly(
        profile: str, metric: str, prompt: int, output: int, level_s: float) -> None:
    """Under a 1,2,4,…,64 ramp (2x TTFT p90, 2x TPOT p90, 1% rejected) the profile's own
    metric breaches first, by a margin, while the others stay well inside their limits."""
    rows = _ramp(profile, prompt, output, level_s)
    values = {"ttft": "ttft", "itl": "tpot", "admission": "rejected"}
    limits = {"ttft": 2.0, "itl": 2.0, "admission": 0.01}
    first = next(r for r in rows if any(r[values[m]] > limits[m] for m in limits))
    assert first[values[metric]] > 1.15 * limits[metric], (profile, first)
    for other in set(limits) - {metric}:
        assert first[values[other]] < 0.85 * limits[other], (profile, other, first)
    assert first["c"] >= 4  # a sustained level below the breach
