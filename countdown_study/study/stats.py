"""Uncertainty for small evaluations: Wilson intervals, paired bootstrap, seed aggregates.

* ``wilson_interval``: the score interval for a proportion (report 001 puts Wilson 95% intervals on
  pass@k over 50 held-out prompts).
* ``paired_bootstrap``: a difference between two runs scored on the same problems, resampling
  problems with replacement (report 002, Table 4: per-problem differences, 5K resamples). Pairing
  cancels the shared problem-difficulty noise; it does nothing about training-seed noise.
* ``aggregate_seeds``: per-seed values, their mean and sample standard deviation, for the seed noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

Statistic = Callable[..., np.ndarray]
"""A numpy reduction called as ``statistic(values, axis=-1)`` (``np.mean``, ``np.median``, ...)."""


# ---------------------------------------------------------------------------------------------------
# Wilson score interval
# ---------------------------------------------------------------------------------------------------


def wilson_interval(successes: float, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` for ``successes`` out of ``trials``.

    With p = successes / trials and z the two-sided normal quantile,
    ``(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``. ``successes`` may be fractional
    (e.g. pass@k averaged over problems times the number of problems, as report 001 plots it).
    """
    if trials < 1:
        raise ValueError(f"wilson_interval needs at least one trial, got trials={trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, trials={trials}], got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    p = successes / trials
    z2n = z * z / trials
    center = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / trials + z2n / (4 * trials))
    return max(0.0, center - half), min(1.0, center + half)


# ---------------------------------------------------------------------------------------------------
# Paired bootstrap over shared problems
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedBootstrap:
    """A paired bootstrap comparison ``statistic(a) - statistic(b)`` over shared problems."""

    diff: float
    """The observed difference on all problems."""
    ci_low: float
    """Lower end of the confidence interval of the difference."""
    ci_high: float
    """Upper end of the confidence interval of the difference."""
    n: int
    """Number of shared problems (the resampling unit)."""
    prob_positive: float
    """Fraction of resamples with a positive difference (report 002's "P")."""
    confidence: float
    """Confidence level of the interval."""


def _per_problem(values: np.ndarray, name: str) -> np.ndarray:
    """``(P,)`` or ``(P, S)`` -> ``(P,)``: a problem's value is its mean over seeds."""
    if values.ndim not in (1, 2):
        raise ValueError(f"{name} must be (problems,) or (problems, seeds), got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return values if values.ndim == 1 else values.mean(axis=1)  # (P,)


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_resamples: int = 5000,
    seed: int = 0,
    statistic: Statistic = np.mean,
    confidence: float = 0.95,
    method: str = "percentile",
) -> PairedBootstrap:
    """Bootstrap ``statistic(a) - statistic(b)`` resampling shared problems with replacement.

    ``a`` and ``b`` are aligned per problem: shape ``(P,)``, or ``(P, S)`` with S seeds per problem,
    in which case whole problems are resampled and a problem's value is its mean over seeds.
    ``statistic`` reduces per-problem values along ``axis`` (numpy style). ``method`` is scipy's
    (``percentile``, ``basic`` or ``BCa``); percentile is the plain reading of report 002.
    """
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must be aligned per problem; got shapes {a_arr.shape} and {b_arr.shape}")
    a_p, b_p = _per_problem(a_arr, "a"), _per_problem(b_arr, "b")  # (P,), (P,)
    if a_p.shape[0] < 2:
        raise ValueError(f"paired_bootstrap needs at least 2 shared problems, got {a_p.shape[0]}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")

    def contrast(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return statistic(x, axis=axis) - statistic(y, axis=axis)

    result = scipy_stats.bootstrap(
        (a_p, b_p),
        contrast,
        n_resamples=n_resamples,
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        method=method,
        rng=np.random.default_rng(seed),
    )
    distribution = np.asarray(result.bootstrap_distribution)  # (n_resamples,)
    return PairedBootstrap(
        diff=float(contrast(a_p, b_p)),
        ci_low=float(result.confidence_interval.low),
        ci_high=float(result.confidence_interval.high),
        n=int(a_p.shape[0]),
        prob_positive=float(np.mean(distribution > 0)),
        confidence=confidence,
    )


# ---------------------------------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedAggregate:
    """One metric over training seeds."""

    per_seed: dict[int, float]
    """The value of each seed (keys are seeds, or positions when none were given)."""
    mean: float
    """Mean over seeds."""
    sd: float
    """Sample standard deviation over seeds (ddof=1); NaN with a single seed."""
    n: int
    """Number of seeds."""


def aggregate_seeds(values_by_seed: Mapping[int, float] | Sequence[float]) -> SeedAggregate:
    """Mean and sample s.d. (ddof=1) of one metric over seeds: ``{seed: value}`` or a list of values."""
    if isinstance(values_by_seed, Mapping):
        per_seed = {int(s): float(v) for s, v in values_by_seed.items()}
    else:
        per_seed = {i: float(v) for i, v in enumerate(values_by_seed)}
    if not per_seed:
        raise ValueError("aggregate_seeds needs at least one seed's value")
    values = np.array(list(per_seed.values()))  # (S,)
    sd = float(np.std(values, ddof=1)) if values.size > 1 else math.nan
    return SeedAggregate(per_seed=per_seed, mean=float(values.mean()), sd=sd, n=int(values.size))
