"""The study's comparison: exact values on a worked example, coverage on simulated studies, verdicts."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from countdown_study.study.compare import (
    Comparison,
    compare,
    compare_runs,
    seeds_for_effect,
    two_level_means,
    two_way_variance,
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
    assert (c.n_tasks, c.n_seeds) == (2, 3) and c.ci_method.startswith("two-way random effects")
    # By hand: grand mean 0.2; task means 0.4/3, 0.8/3 -> MS_task = 3 * 2 * (0.2/3)^2 = 0.0266667;
    # seed means 0.2, 0.1, 0.3 -> MS_seed = 2 * 0.02 / 2 = 0.02; residuals +-1/30 (4 cells) and +-1/15
    # (2 cells) -> MS_cell = (4/900 + 2/225) / 2 = 0.0066667. Var(mean) = (MS_t + MS_s - MS_e) / 6 = 0.04 / 6,
    # Satterthwaite df = 0.04^2 / (0.0266667^2 / 1 + 0.02^2 / 2 + 0.0066667^2 / 2) = 12 / 7.
    assert c.se == pytest.approx(math.sqrt(0.04 / 6))
    assert c.df == pytest.approx(12 / 7)
    assert c.components == pytest.approx((0.02 / 3, 0.02 / 3, 0.02 / 3))
    assert c.ci_low == pytest.approx(0.2 - scipy_stats.t.ppf(0.975, 12 / 7) * math.sqrt(0.04 / 6))
    assert c.mde == pytest.approx((scipy_stats.t.ppf(0.975, 12 / 7) + scipy_stats.t.ppf(0.8, 12 / 7)) * c.se)


def plain_two_way(cells):
    """The two-way ANOVA mean squares by explicit loops (a reference for ``two_way_variance``)."""
    num_tasks, num_seeds = len(cells), len(cells[0])
    grand = sum(sum(row) for row in cells) / (num_tasks * num_seeds)
    rows = [sum(row) / num_seeds for row in cells]
    cols = [sum(cells[t][s] for t in range(num_tasks)) / num_tasks for s in range(num_seeds)]
    ms_t = num_seeds * sum((r - grand) ** 2 for r in rows) / (num_tasks - 1)
    ms_s = num_tasks * sum((c - grand) ** 2 for c in cols) / (num_seeds - 1)
    ss_e = sum(
        (cells[t][s] - rows[t] - cols[s] + grand) ** 2 for t in range(num_tasks) for s in range(num_seeds)
    )
    return ms_t, ms_s, ss_e / ((num_tasks - 1) * (num_seeds - 1))


@pytest.mark.parametrize("task_sd,seed_sd", [(0.3, 0.3), (0.0, 0.3), (0.3, 0.0), (0.0, 0.0)])
def test_two_way_variance_equals_the_plain_anova(task_sd, seed_sd):
    rng = np.random.default_rng(5)
    cells = rng.normal(0, task_sd, (9, 1)) + rng.normal(0, seed_sd, (1, 4)) + rng.normal(0, 0.2, (9, 4))
    ms_t, ms_s, ms_e = plain_two_way(cells.tolist())
    v = two_way_variance(cells)
    var_task, var_seed = max(0.0, (ms_t - ms_e) / 4), max(0.0, (ms_s - ms_e) / 9)
    assert (v.var_task, v.var_seed, v.var_cell) == pytest.approx((var_task, var_seed, ms_e))
    assert v.var_mean == pytest.approx(var_task / 9 + var_seed / 4 + ms_e / 36)
    # the same numbers for a stack of tables, study by study
    stack = two_way_variance(np.stack([cells, cells * 2]))
    assert stack.var_mean == pytest.approx([v.var_mean, 4 * v.var_mean])
    assert stack.df == pytest.approx([v.df, v.df])


def test_two_way_variance_is_unbiased_for_the_variance_of_the_mean():
    # D = u_t + v_s + e_ts with known spreads: the grand mean's variance is 0.04/T + 0.09/S + 0.25/(T S);
    # the estimate averages to it (truncation at zero adds a little only where a component is near zero).
    rng = np.random.default_rng(8)
    tasks, seeds, studies = 50, 6, 4000
    cells = (
        rng.normal(0, 0.2, (studies, tasks, 1))
        + rng.normal(0, 0.3, (studies, 1, seeds))
        + rng.normal(0, 0.5, (studies, tasks, seeds))
    )
    truth = 0.04 / tasks + 0.09 / seeds + 0.25 / (tasks * seeds)
    estimate = two_way_variance(cells).var_mean
    assert estimate.mean() == pytest.approx(truth, rel=0.03)
    assert cells.mean(axis=(1, 2)).var() == pytest.approx(truth, rel=0.06)


def test_seeds_for_effect_reaches_the_effect_from_the_measured_components():
    rng = np.random.default_rng(1)
    a, b = simulated_study(rng, tasks=200, seeds=5)
    c = compare(a, b, n_resamples=100)
    assert seeds_for_effect(c, c.mde * 1.01) == 5  # already detectable
    needed = seeds_for_effect(c, c.mde / 2)
    var_task, var_seed, var_cell = c.components

    def mde_at(seeds):
        se = math.sqrt(var_task / 200 + var_seed / seeds + var_cell / (200 * seeds))
        return (scipy_stats.t.ppf(0.975, seeds - 1) + scipy_stats.t.ppf(0.8, seeds - 1)) * se

    assert mde_at(needed) <= c.mde / 2 < mde_at(needed - 1)
    assert seeds_for_effect(c, 0.0) is None and seeds_for_effect(c, float("nan")) is None


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


def test_a_run_level_quantity_is_compared_by_seed_with_the_paired_t_interval():
    """One value per run (a run's training mix): the per-seed differences' t-interval, as scipy gives it."""
    a, b = np.array([0.56, 0.57, 0.58, 0.56, 0.575]), np.array([0.50, 0.51, 0.49, 0.50, 0.505])
    c = compare_runs(a, b)
    diffs = a - b
    low, high = scipy_stats.t.interval(0.95, 4, loc=diffs.mean(), scale=scipy_stats.sem(diffs))
    assert (c.diff, c.ci_low, c.ci_high) == pytest.approx((0.068, low, high))
    assert (c.t_low, c.t_high) == (c.ci_low, c.ci_high) and (c.n_tasks, c.n_seeds, c.df) == (1, 5, 4.0)
    se = scipy_stats.sem(diffs)
    assert c.mde == pytest.approx((scipy_stats.t.ppf(0.975, 4) + scipy_stats.t.ppf(0.8, 4)) * se)
    assert c.components == pytest.approx((0.0, diffs.var(ddof=1), 0.0))
    assert seeds_for_effect(c, c.mde) == 5 and seeds_for_effect(c, 1e-4) is None
    var = diffs.var(ddof=1)  # the seeds at which the MDE reaches 0.02: 6 (0.0217 at five)
    needed = next(s for s in range(2, 100) if (scipy_stats.t.ppf(0.975, s - 1) + scipy_stats.t.ppf(0.8, s - 1))
                  * math.sqrt(var / s) <= 0.02)  # fmt: skip
    assert seeds_for_effect(c, 0.02) == needed == 6
    one = compare_runs(a[:1], b[:1])
    assert one.n_seeds == 1 and math.isnan(one.ci_low) and verdict(one, 1) == "one seed: no verdict"
    with pytest.raises(ValueError, match="one value per seed"):
        compare_runs(a, b[:3])


def test_the_run_level_interval_covers_a_null_about_95_percent_of_the_time():
    """Two rows with the same training mix: each run's 4-number share is a binomial share of 1,920 drawn
    prompts around a run's own rate (a seed effect of sd 0.01 around 0.5); five seeds per row."""
    rng = np.random.default_rng(0)
    trials, covered = 4000, 0
    for _ in range(trials):
        rates = 0.5 + rng.normal(0, 0.01, size=(2, 5))
        shares = rng.binomial(1920, rates) / 1920  # (2, S)
        c = compare_runs(shares[0], shares[1])
        covered += c.ci_low <= 0 <= c.ci_high
    assert abs(covered / trials - 0.95) < 0.012  # binomial sd of the rate at 4,000 trials: 0.0034
