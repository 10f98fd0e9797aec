"""Wilson intervals, paired bootstrap and seed aggregates: closed forms, coverage, determinism, errors."""

import math

import numpy as np
import pytest

from countdown_study.study.stats import aggregate_seeds, paired_bootstrap, wilson_interval

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def test_wilson_zero_successes_closed_form():
    # p = 0: the interval is [0, z^2 / (n + z^2)].
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(Z95**2 / (10 + Z95**2), abs=1e-12)


def test_wilson_half_closed_form():
    # p = 1/2: centred at 1/2 with half-width z / (2 sqrt(n + z^2)).
    low, high = wilson_interval(5, 10)
    half = Z95 / (2 * math.sqrt(10 + Z95**2))
    assert low == pytest.approx(0.5 - half, abs=1e-12)
    assert high == pytest.approx(0.5 + half, abs=1e-12)


def test_wilson_newcombe_example():
    # Newcombe (1998), example (a): 81 of 263 -> 0.2553 to 0.3662.
    low, high = wilson_interval(81, 263)
    assert round(low, 4) == 0.2553
    assert round(high, 4) == 0.3662


def test_wilson_symmetry_and_wider_at_higher_confidence():
    low, high = wilson_interval(3, 20)
    low_c, high_c = wilson_interval(17, 20)
    assert low == pytest.approx(1 - high_c) and high == pytest.approx(1 - low_c)
    low99, high99 = wilson_interval(3, 20, confidence=0.99)
    assert low99 < low and high99 > high


@pytest.mark.parametrize(
    ("successes", "trials", "message"),
    [(1, 0, "at least one trial"), (11, 10, "successes must lie"), (-1, 10, "successes must lie")],
)
def test_wilson_errors(successes, trials, message):
    with pytest.raises(ValueError, match=message):
        wilson_interval(successes, trials)


def _constructed_pair(true_diff: float, problems: int = 200, seed: int = 1):
    """Per-problem difficulty shared by both runs, plus small independent noise."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(0, 1, size=problems)  # (P,)
    noise = rng.normal(0, 0.02, size=(2, problems))  # (2, P)
    b = difficulty + noise[0]
    a = b + true_diff + noise[1] - noise[1].mean()  # mean difference exactly true_diff
    return a, b


def test_paired_bootstrap_contains_true_difference():
    a, b = _constructed_pair(0.1)
    result = paired_bootstrap(a, b, n_resamples=2000, seed=0)
    assert result.diff == pytest.approx(0.1, abs=1e-12)
    assert result.ci_low < 0.1 < result.ci_high
    # Pairing cancels the shared difficulty: the interval is far narrower than the difficulty spread.
    assert result.ci_high - result.ci_low < 0.01
    assert result.ci_low > 0 and result.prob_positive == 1.0
    assert result.n == 200


def test_paired_bootstrap_equals_naive_percentile_reference_in_spread():
    # A plain loop over resampled problem indices gives nearly the same percentile interval.
    a, b = _constructed_pair(0.05, problems=60, seed=3)
    result = paired_bootstrap(a, b, n_resamples=4000, seed=0)
    rng = np.random.default_rng(123)
    diffs = []
    for _ in range(4000):
        idx = rng.integers(0, 60, size=60)
        diffs.append(a[idx].mean() - b[idx].mean())
    low, high = np.percentile(diffs, [2.5, 97.5])
    width = high - low
    assert result.ci_low == pytest.approx(low, abs=0.1 * width)
    assert result.ci_high == pytest.approx(high, abs=0.1 * width)


def test_paired_bootstrap_deterministic_by_seed():
    a, b = _constructed_pair(0.02, problems=30)
    first = paired_bootstrap(a, b, n_resamples=500, seed=7)
    again = paired_bootstrap(a, b, n_resamples=500, seed=7)
    other = paired_bootstrap(a, b, n_resamples=500, seed=8)
    assert first == again
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)


def test_paired_bootstrap_problems_by_seeds_resamples_problems():
    # (P, S) input: a problem's value is its mean over seeds, so it equals the 1-D call on row means.
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(40, 3))
    b = rng.uniform(size=(40, 3))
    two_d = paired_bootstrap(a, b, n_resamples=300, seed=2)
    one_d = paired_bootstrap(a.mean(axis=1), b.mean(axis=1), n_resamples=300, seed=2)
    assert two_d == one_d
    assert two_d.n == 40
    assert two_d.diff == pytest.approx(a.mean() - b.mean())


def test_paired_bootstrap_custom_statistic():
    a, b = _constructed_pair(0.1, problems=51)
    result = paired_bootstrap(a, b, n_resamples=300, statistic=np.median)
    assert result.diff == pytest.approx(np.median(a) - np.median(b))


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (np.zeros(5), np.zeros(6), "aligned per problem"),
        (np.zeros((5, 2)), np.zeros((5, 3)), "aligned per problem"),
        (np.zeros((2, 2, 2)), np.zeros((2, 2, 2)), "problems, seeds"),
        (np.array([1.0, np.nan]), np.zeros(2), "NaN"),
        (np.zeros(1), np.zeros(1), "at least 2 shared problems"),
    ],
)
def test_paired_bootstrap_errors(a, b, message):
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(a, b, n_resamples=10)


def test_aggregate_seeds_mapping_and_sequence():
    agg = aggregate_seeds({0: 0.4, 1: 0.5, 2: 0.6})
    assert agg.per_seed == {0: 0.4, 1: 0.5, 2: 0.6}
    assert agg.mean == pytest.approx(0.5)
    assert agg.sd == pytest.approx(0.1)  # ddof=1: sqrt((0.01 + 0 + 0.01) / 2)
    assert agg.n == 3
    assert aggregate_seeds([0.4, 0.5, 0.6]).per_seed == {0: 0.4, 1: 0.5, 2: 0.6}


def test_aggregate_seeds_single_and_empty():
    single = aggregate_seeds({5: 0.3})
    assert single.mean == 0.3 and math.isnan(single.sd)
    with pytest.raises(ValueError, match="at least one seed"):
        aggregate_seeds({})
