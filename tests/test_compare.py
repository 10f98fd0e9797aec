"""The study's comparison: exact values on a worked example, coverage on simulated studies, verdicts."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from countdown_study.study.compare import (
    Comparison,
    compare,
    two_level_means,
    verdict,
    zero_bound,
    zero_verdict,
)


def simulated_study(rng, true_diff=0.0, tasks=300, seeds=5, seed_sd=0.03, interaction_sd=0.05, cell_sd=0.1):
    """Per-task values of two methods, (tasks, seeds): shared task difficulty, a method-by-task effect,
    a per-seed shift of each method's training (s.d. ``seed_sd``) and evaluation noise per cell."""
    difficulty = rng.uniform(0.1, 0.9, tasks)[:, None]  # (T, 1)
    interaction = rng.normal(0, interaction_sd, tasks)[:, None]  # (T, 1)
    a = (
        difficulty
        + true_diff
        + interaction
        + rng.normal(0, seed_sd, seeds)
        + rng.normal(0, cell_sd, (tasks, seeds))
    )
    b = difficulty + rng.normal(0, seed_sd, seeds) + rng.normal(0, cell_sd, (tasks, seeds))
    return a, b


def test_worked_example_per_seed_diffs_and_t_interval():
    # D = a - b: seed 0 differences (0.1, 0.3) -> 0.2; seed 1 (0.0, 0.2) -> 0.1; seed 2 (0.3, 0.3) -> 0.3
    b = np.zeros((2, 3))
    a = np.array([[0.1, 0.0, 0.3], [0.3, 0.2, 0.3]])
    c = compare(a, b, n_resamples=200)
    assert c.diff == pytest.approx(0.2) and c.per_seed_diffs == pytest.approx((0.2, 0.1, 0.3))
    half = scipy_stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)  # sd of (0.2, 0.1, 0.3) is 0.1
    assert (c.t_low, c.t_high) == pytest.approx((0.2 - half, 0.2 + half))
    assert (c.n_tasks, c.n_seeds) == (2, 3) and c.ci_method.startswith("two-level bootstrap")
    assert c.ci_low == pytest.approx(c.diff - scipy_stats.t.ppf(0.975, 2) * c.se)
    assert c.mde == pytest.approx((scipy_stats.t.ppf(0.975, 2) + scipy_stats.t.ppf(0.8, 2)) * c.se)


def test_two_level_means_equal_averaging_the_drawn_cells():
    rng = np.random.default_rng(3)
    diffs = rng.normal(size=(7, 4))
    means = two_level_means(diffs, 50, np.random.default_rng(11))
    replay = np.random.default_rng(11)
    tasks = replay.multinomial(7, np.full(7, 1 / 7), size=50)
    seeds = replay.multinomial(4, np.full(4, 1 / 4), size=50)
    for r in range(50):
        t_idx, s_idx = np.repeat(np.arange(7), tasks[r]), np.repeat(np.arange(4), seeds[r])
        assert means[r] == pytest.approx(diffs[np.ix_(t_idx, s_idx)].mean())


def test_same_seed_same_interval_and_one_seed_falls_back_to_tasks():
    a, b = simulated_study(np.random.default_rng(0), tasks=40)
    assert compare(a, b, seed=4, n_resamples=300) == compare(a, b, seed=4, n_resamples=300)
    one = compare(a[:, :1], b[:, :1], n_resamples=300)
    assert one.ci_method == "task bootstrap (one seed)" and (one.ci_low, one.ci_high) == (
        one.task_low,
        one.task_high,
    )
    assert math.isnan(one.t_low) and math.isnan(one.mde)


def test_coverage_and_power_on_simulated_studies():
    # 300 tasks, 5 seeds, per-seed shifts of s.d. 0.03, no true difference: the seed-aware interval covers 0
    # in at least 90% of studies; the task-only one does not (it holds the training seeds fixed).
    rng = np.random.default_rng(2024)
    null = [compare(*simulated_study(rng), seed=i, n_resamples=500) for i in range(100)]
    coverage = np.mean([c.ci_low <= 0 <= c.ci_high for c in null])
    assert coverage >= 0.9, coverage
    assert np.mean([c.t_low <= 0 <= c.t_high for c in null]) >= 0.88
    assert np.mean([c.task_low <= 0 <= c.task_high for c in null]) < 0.7
    # a true difference of 3 seed s.d. is detected
    shifted = [compare(*simulated_study(rng, true_diff=0.09), seed=i, n_resamples=500) for i in range(100)]
    assert np.mean([c.ci_low > 0 for c in shifted]) >= 0.8
    # the minimum detectable effect is detected about 80% of the time
    mde = float(np.median([c.mde for c in null]))
    at_mde = [compare(*simulated_study(rng, true_diff=mde), seed=i, n_resamples=500) for i in range(100)]
    assert 0.6 <= np.mean([c.ci_low > 0 for c in at_mde]) <= 0.97


def test_verdicts():
    def made(low, high):
        nan = float("nan")
        return Comparison(0.0, low, high, "x", 10, 5, (), nan, nan, nan, nan, 0.5, 0.01, 0.03, 0.95)

    assert verdict(made(0.01, 0.05), +1) == "holds" and verdict(made(0.01, 0.05), -1) == "reversed"
    assert verdict(made(-0.05, -0.01), -1) == "holds" and verdict(made(-0.02, 0.01), +1) == "inside noise"
    one_seed = compare(np.array([[1.0], [1.0], [0.9]]), np.zeros((3, 1)), n_resamples=100)
    assert one_seed.excludes_zero and verdict(one_seed, +1) == "one seed: no verdict"
    with pytest.raises(ValueError, match="claimed_sign"):
        verdict(made(0.01, 0.05), 0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="aligned"):
        compare(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        compare(np.array([[np.nan, 0.0], [0.0, 0.0]]), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="at least 2 shared tasks"):
        compare(np.zeros((1, 3)), np.zeros((1, 3)))


def test_zero_bound_is_the_rate_that_shows_a_success_with_the_confidence_asked():
    assert zero_bound(200) == pytest.approx(1 - 0.025 ** (1 / 200))
    assert zero_bound(200) == pytest.approx(0.018275, abs=1e-6)
    # a true rate at the bound leaves all 200 tasks unsolved with probability 2.5%
    assert (1 - zero_bound(200)) ** 200 == pytest.approx(0.025)
    # equal to the upper end of scipy's exact (Clopper-Pearson) interval of 0 successes in 200
    assert zero_bound(200) == pytest.approx(scipy_stats.binomtest(0, 200).proportion_ci(0.95).high)
    assert zero_bound(50, confidence=0.9) == pytest.approx(1 - 0.05 ** (1 / 50))
    with pytest.raises(ValueError, match="num_tasks"):
        zero_bound(0)
    with pytest.raises(ValueError, match="confidence"):
        zero_bound(10, confidence=1.0)


def test_zero_verdicts():
    zeros = np.zeros((40, 5))
    assert zero_verdict(compare(zeros, zeros, n_resamples=200), all_zero=True) == "holds"
    solved = np.zeros((40, 5))
    solved[:20] = 1.0  # half the tasks solved under every seed
    assert zero_verdict(compare(solved, zeros, n_resamples=200), all_zero=False) == "reversed"
    one = np.zeros((40, 5))
    one[0, 0] = 1.0  # a single task under a single seed: the interval reaches zero
    assert zero_verdict(compare(one, zeros, n_resamples=200), all_zero=False) == "inside noise"
    single = compare(np.ones((3, 1)), np.zeros((3, 1)), n_resamples=100)
    assert zero_verdict(single, all_zero=False) == "one seed: no verdict"
