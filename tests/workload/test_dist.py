"""Distributions as a workload file writes them, drawn many times from a seed: the draws
are what the definition says (the lognormal's median and p90, the uniform's inclusive
ends, the empirical list's values only, the clips)."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

from evalkit.workload.model import Dist, Single
from tests.workload.helpers import HEAD, workload

N = 20_000


def output_dist(tmp: Path, text: str) -> Dist:
    """The output_tokens distribution of a one-shape workload, as the reader made it."""
    w = workload(tmp, HEAD + f"  - {{name: s, kind: single, prompt_tokens: 1, "
                 f"output_tokens: {text}}}\n")
    shape = w.shapes[0]
    assert isinstance(shape, Single)
    return shape.output_tokens


def draws(d: Dist, n: int = N, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [d.sample(rng) for _ in range(n)]


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[int(q * (len(s) - 1))]


def test_lognormal_has_the_median_and_p90_it_was_given(tmp_path: Path) -> None:
    d = output_dist(tmp_path, "{lognormal: {median: 600, p90: 2000}}")
    xs = draws(d)
    assert abs(quantile(xs, 0.5) / 600 - 1) < 0.03
    assert abs(quantile(xs, 0.9) / 2000 - 1) < 0.03
    assert all(x == int(x) and 1 <= x <= 131_072 for x in xs)
    assert abs(statistics.fmean(xs) / d.mean() - 1) < 0.03


def test_a_lognormal_max_clips_the_tail(tmp_path: Path) -> None:
    d = output_dist(tmp_path, "{lognormal: {median: 100, p90: 400, max: 300}}")
    xs = draws(d)
    assert max(xs) == 300
    assert 0.05 < sum(1 for x in xs if x == 300) / N < 0.2  # the tail above p90's 400 and more
    assert abs(quantile(xs, 0.5) / 100 - 1) < 0.03


def test_a_lognormal_token_count_never_draws_zero(tmp_path: Path) -> None:
    """A tiny median's lower tail rounds to 0: the reader's low bound clips it to 1."""
    xs = draws(output_dist(tmp_path, "{lognormal: {median: 1, p90: 20}}"))
    assert min(xs) == 1 and sum(1 for x in xs if x == 1) > N * 0.3


def test_a_lognormal_pause_is_not_rounded(tmp_path: Path) -> None:
    w = workload(tmp_path, HEAD + "  - {name: s, kind: session, turns: 2, system_prompt_tokens: 0,"
                 " user_tokens: 1, output_tokens: 1,\n"
                 "     think_time_s: {lognormal: {median: 0.5, p90: 2}}}\n")
    xs = draws(w.shapes[0].think_time_s)  # type: ignore[union-attr]
    assert any(x != int(x) for x in xs)
    assert abs(quantile(xs, 0.5) / 0.5 - 1) < 0.03 and abs(quantile(xs, 0.9) / 2 - 1) < 0.03


def test_uniform_integers_reach_both_ends_and_no_further(tmp_path: Path) -> None:
    xs = draws(output_dist(tmp_path, "{uniform: [4, 8]}"))
    assert set(xs) == {4, 5, 6, 7, 8}
    counts = [xs.count(v) / N for v in (4, 5, 6, 7, 8)]
    assert all(abs(c - 0.2) < 0.02 for c in counts)


def test_uniform_seconds_stay_within_their_ends(tmp_path: Path) -> None:
    w = workload(tmp_path, HEAD + "  - {name: s, kind: session, turns: 2, system_prompt_tokens: 0,"
                 " user_tokens: 1, output_tokens: 1,\n"
                 "     think_time_s: {uniform: [1.0, 3.0]}}\n")
    xs = draws(w.shapes[0].think_time_s)  # type: ignore[union-attr]
    assert 1.0 <= min(xs) < 1.01 and 2.99 < max(xs) <= 3.0
    assert abs(statistics.fmean(xs) - 2.0) < 0.02


def test_empirical_draws_only_its_values_each_about_equally(tmp_path: Path) -> None:
    xs = draws(output_dist(tmp_path, "{empirical: [50, 80, 300, 300]}"))
    assert set(xs) == {50, 80, 300}
    assert abs(xs.count(300) / N - 0.5) < 0.02 and abs(xs.count(50) / N - 0.25) < 0.02


def test_fixed_is_always_its_value(tmp_path: Path) -> None:
    assert set(draws(output_dist(tmp_path, "{fixed: 42}"), n=100)) == {42}
    assert set(draws(output_dist(tmp_path, "42"), n=100)) == {42}


def test_the_same_seed_draws_the_same(tmp_path: Path) -> None:
    d = output_dist(tmp_path, "{lognormal: {median: 60, p90: 200}}")
    assert draws(d, 50, seed=3) == draws(d, 50, seed=3) != draws(d, 50, seed=4)
