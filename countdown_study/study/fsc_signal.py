"""Report 002's learning-signal analyses of the observation log: where failures are (Table 5), where
the gradient is (Table 6), what reweighting gains (the "+69% usable signal") and how few rows recover
the 3-vs-4-number gap (Table 7). Rows weigh equally and are the resampling unit; every stochastic
function takes ``seed``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from countdown_study.countdown.features import DV_COLUMNS
from countdown_study.seeding import derive_rng
from countdown_study.study.fsc_log import BANDS, _require, bin_values, difficulty_band, fail_rate
from countdown_study.study.stats import wilson_interval

BIN_FIELDS = tuple(c for c in DV_COLUMNS if c not in ("target", "solution", "solution_count", "nps_capped"))
"""DV fields ``failure_by_bin`` bins by default: all but the raw target (binned as ``target_log10``), the
solution string, and the solution counts (binned as ``nps_log1p``, the same quantile bins)."""
VAR_ATOL = 1e-12
"""A group's reward variance counts as nonzero above this (equal rewards give 0 up to rounding)."""
_BOOT_ELEMENTS = 1 << 22  # resampled values held at once by a bootstrap batch


# ---------------------------------------------------------------------------------------------------
# Table 5: per-bin failure rates
# ---------------------------------------------------------------------------------------------------


def _mean_interval(
    values: np.ndarray, method: str, confidence: float, n_resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Interval of the mean of values in [0, 1]: Wilson on (sum, count), or a percentile bootstrap."""
    if method == "wilson":
        return wilson_interval(float(values.sum()), values.size, confidence)
    if values.size < 2:
        return float("nan"), float("nan")
    result = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=n_resamples, confidence_level=confidence, method="percentile",
        rng=rng, batch=max(1, _BOOT_ELEMENTS // values.size),
    )  # fmt: skip
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def failure_by_bin(
    log: pd.DataFrame,
    fields: Sequence[str] = BIN_FIELDS,
    *,
    method: str = "bootstrap",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    max_levels: int = 8,
    n_bins: int = 5,
) -> pd.DataFrame:
    """Table 5: mean failure rate per bin of each DV field, with an interval.

    One row per (field, bin): ``field``, ``value`` (the value, or a quantile ``pd.Interval``, see
    ``bin_values``), ``n`` (rows), ``fail_rate`` (mean of the rows' failure rates), ``ci_low``,
    ``ci_high``. Rows missing the field's value are left out of that field.

    The report's n are rows (6,992 + 7,088 = all 14,080 observed rows of fsc_027, probes and batches) and
    its half-widths (+-0.009 at n = 6,992) are those of the mean of per-row rates, so rows are the unit.
    ``method``: ``"bootstrap"`` (default), a percentile bootstrap over rows, ``n_resamples`` per bin from
    one generator seeded ``seed`` (NaN below 2 rows); ``"wilson"``, the Wilson interval of (summed rate,
    rows): exact for one rollout per row and conservative otherwise (a rate in [0, 1] with mean p has
    variance at most p(1 - p)). A Wilson interval over rollouts would ignore that rollouts of one prompt
    are correlated, and is not offered.
    """
    if method not in ("bootstrap", "wilson"):
        raise ValueError(f"method must be 'bootstrap' or 'wilson', got {method!r}")
    _require(log, ("n", "n_correct", *fields), "failure_by_bin")
    log = log.reset_index(drop=True)
    fail = pd.Series(fail_rate(log))  # (R,)
    rng = np.random.default_rng(seed)
    rows = []
    for field in fields:
        for value, group in fail.groupby(
            bin_values(log[field], max_levels, n_bins), observed=True, sort=True
        ):
            low, high = _mean_interval(group.to_numpy(), method, confidence, n_resamples, rng)
            rows.append({"field": field, "value": value, "n": len(group), "fail_rate": float(group.mean()),
                         "ci_low": low, "ci_high": high})  # fmt: skip
    return pd.DataFrame(rows, columns=["field", "value", "n", "fail_rate", "ci_low", "ci_high"])


# ---------------------------------------------------------------------------------------------------
# Table 6: the RLOO gradient proxy by difficulty band
# ---------------------------------------------------------------------------------------------------


def variance_by_band(log: pd.DataFrame) -> pd.DataFrame:
    """Table 6: within-group reward variance (the RLOO gradient proxy of Eq. (2)) by difficulty band.

    One row per band of ``difficulty_band`` (all five, easiest first, empty ones with NaN means):
    ``rows``, ``share`` of all rows, ``nonzero_share`` (groups whose reward variance exceeds
    ``VAR_ATOL``: the ones that give any gradient), ``mean_reward_var``, ``mean_reward``. Over all rows
    given (the report's 14,080 are fsc_027's probes and batches); filter ``source`` first for one kind.
    """
    _require(log, ("n", "n_correct", "reward_mean", "reward_var"), "variance_by_band")
    reward_var = log["reward_var"].to_numpy(dtype=float)  # (R,)
    frame = pd.DataFrame({
        "band": pd.Categorical(difficulty_band(fail_rate(log)), categories=BANDS, ordered=True),
        "nonzero": reward_var > VAR_ATOL,
        "reward_var": reward_var,
        "reward_mean": log["reward_mean"].to_numpy(dtype=float),
    })  # fmt: skip
    table = frame.groupby("band", observed=False).agg(
        rows=("reward_var", "size"),
        nonzero_share=("nonzero", "mean"),
        mean_reward_var=("reward_var", "mean"),
        mean_reward=("reward_mean", "mean"),
    )
    table.insert(1, "share", table["rows"] / len(frame))
    return table.reset_index().astype({"band": str, "nonzero_share": float})


# ---------------------------------------------------------------------------------------------------
# The "+69% usable signal" reweighting bootstrap
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignalGain:
    """How much more within-group reward variance a reweighted draw of the probe carries than uniform."""

    uniform: float
    """Mean reward variance per example under uniform weights (the report's 0.084)."""
    weighted: float
    """Mean reward variance per example under the weights, ``sum w v / sum w`` (the report's 0.143)."""
    gain: float
    """``weighted / uniform - 1`` (the report's +0.69)."""
    ci_low: float
    """Lower end of the bootstrap interval of ``gain`` (the report's +0.54)."""
    ci_high: float
    """Upper end (the report's +0.89)."""
    prob_positive: float
    """Share of resamples with a positive gain (the report: all)."""
    n: int
    """Examples (rows), the resampling unit."""
    confidence: float
    """Confidence level of the interval."""


def _gain(reward_var: np.ndarray, weights: np.ndarray, axis: int = -1) -> np.ndarray:
    """``(sum w v / sum w) / mean v - 1`` along ``axis``."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample of zero-variance rows only
        weighted = (weights * reward_var).sum(axis=axis) / weights.sum(axis=axis)
        return weighted / reward_var.mean(axis=axis) - 1.0


def signal_gain(
    log: pd.DataFrame,
    weights: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SignalGain:
    """The report's "+69% usable gradient signal": reweighting the step-0 probe by a policy's weights.

    ``log`` is a uniform draw at one model state (the report: the step-0 probe of fsc_027, 128 rows);
    ``weights`` one non-negative weight per row, the policy's sampling weight of that row's task (for
    pool-level weights ``w``, pass ``w[log.task_index]``; the report used the edge policy's). The
    interval is a percentile bootstrap over examples, resampling (variance, weight) pairs together with
    the weights held as given: the report's 5,000-resample bootstrap does not say whether it recomputed
    the weights from each resample, and holding them fixed measures the noise of the probe's draw. The
    interval is NaN when some resample holds no nonzero variance (a probe too small to bootstrap).
    """
    _require(log, ("reward_var",), "signal_gain")
    reward_var = log["reward_var"].to_numpy(dtype=float)  # (R,)
    w = np.asarray(weights, dtype=float)  # (R,)
    if w.shape != reward_var.shape:
        raise ValueError(f"signal_gain: weights must be one per row, shape {reward_var.shape}, got {w.shape}")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0):
        raise ValueError("signal_gain: weights must be finite, non-negative and not all zero")
    if reward_var.size < 2 or not reward_var.mean() > 0:
        raise ValueError("signal_gain needs at least 2 rows and some nonzero reward variance")
    result = scipy_stats.bootstrap(
        (reward_var, w), _gain, n_resamples=n_resamples, paired=True, vectorized=True,
        confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed),
        batch=max(1, _BOOT_ELEMENTS // reward_var.size),
    )  # fmt: skip
    uniform = float(reward_var.mean())
    weighted = float((w * reward_var).sum() / w.sum())
    return SignalGain(
        uniform=uniform,
        weighted=weighted,
        gain=weighted / uniform - 1.0,
        ci_low=float(result.confidence_interval.low),
        ci_high=float(result.confidence_interval.high),
        prob_positive=float(np.mean(np.asarray(result.bootstrap_distribution) > 0)),
        n=int(reward_var.size),
        confidence=confidence,
    )


# ---------------------------------------------------------------------------------------------------
# Table 7: sample complexity of the 3-vs-4 failure gap
# ---------------------------------------------------------------------------------------------------


def welch_gap(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, ``mean(values[high]) - mean(values[low])`` and Welch's two-sided p-value.

    ``values``, ``low``, ``high``: ``(T, n)``, the masks picking each group. The gap is NaN where a group
    is empty; the p-value is NaN where a group has fewer than 2 values, 0 where both groups are constant
    and differ, 1 where they are constant and equal.  # (T, n) -> (T,), (T,)
    """
    values, low, high = np.asarray(values, float), np.asarray(low, bool), np.asarray(high, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        moments = []
        for mask in (low, high):
            count = mask.sum(axis=1)  # (T,)
            mean = np.where(mask, values, 0.0).sum(axis=1) / count  # (T,)
            var = (np.where(mask, values - mean[:, None], 0.0) ** 2).sum(axis=1) / (count - 1)  # (T,)
            moments.append((count, mean, var / count))
        (n_low, mean_low, se2_low), (n_high, mean_high, se2_high) = moments
        gap = mean_high - mean_low  # (T,)
        se = np.sqrt(se2_low + se2_high)
        df = (se2_low + se2_high) ** 2 / (se2_low**2 / (n_low - 1) + se2_high**2 / (n_high - 1))
        p = 2 * scipy_stats.t.sf(np.abs(gap / se), df)
    p = np.where(se > 0, p, np.where(gap != 0, 0.0, 1.0))
    return gap, np.where((n_low >= 2) & (n_high >= 2), p, np.nan)


COMPLEXITY_COLUMNS = ("n_obs", "pool_share", "true_gap", "mean_gap", "sd_gap", "correct_sign", "trials",
                      "undefined", "p_correct_sign", "p_recovered")  # fmt: skip
"""Columns of ``sample_complexity`` (also with no budget given)."""


def sample_complexity(
    log: pd.DataFrame,
    budgets: Sequence[int] = (2000, 500, 100, 50, 20),
    *,
    n_trials: int = 20,
    seed: int = 0,
    field: str = "num_count",
    low: object = 3,
    high: object = 4,
    alpha: float = 0.05,
    pool_size: int | None = None,
) -> pd.DataFrame:
    """Table 7 (App. B): recovering the failure gap between two bins of ``field`` from subsamples.

    The true gap is ``mean fail_rate[field == high] - mean fail_rate[field == low]`` over all rows (the
    report: 0.750 - 0.338 = 0.411 for num_count 4 vs 3). For each budget n, ``n_trials`` subsamples of n
    rows, uniform without replacement; trial t of budget n draws from ``derive_rng(seed, n, t)``, so a
    budget's trials do not depend on the rest of the grid (the report: trial seeds 0-19). One row per
    budget: ``n_obs``, ``pool_share`` (n / ``pool_size``, NaN without it), ``true_gap``, ``mean_gap``
    and ``sd_gap`` (ddof=1) over trials where both bins were drawn, ``correct_sign`` (count, the report's
    "20/20"), ``trials``, ``undefined`` (a bin not drawn), ``p_correct_sign``, and ``p_recovered``: the
    share of trials whose gap has the true sign *and* a two-sided Welch test at ``alpha`` (per-row
    failure rates as the observations) rejects no gap; the report stops at the sign.
    """
    _require(log, ("n", "n_correct", field), "sample_complexity")
    fail = fail_rate(log)  # (R,)
    in_low, in_high = (log[field] == low).to_numpy(), (log[field] == high).to_numpy()  # (R,), (R,)
    if not (in_low.any() and in_high.any()):
        raise ValueError(f"sample_complexity: the log needs rows with {field} == {low} and == {high}")
    true_gap = float(fail[in_high].mean() - fail[in_low].mean())
    if true_gap == 0:
        raise ValueError("sample_complexity: the full log shows no gap to recover")
    rows = []
    for budget in budgets:
        if not 1 <= budget <= len(log):
            raise ValueError(f"sample_complexity: budget {budget} must lie in [1, {len(log)} rows]")
        draws = [derive_rng(seed, budget, t).choice(len(log), budget, replace=False) for t in range(n_trials)]
        picks = np.stack(draws)  # (T, n)
        gap, p = welch_gap(fail[picks], in_low[picks], in_high[picks])  # (T,), (T,)
        right_sign = np.sign(gap) == np.sign(true_gap)  # NaN gaps are not
        finite = gap[np.isfinite(gap)]
        rows.append({
            "n_obs": budget, "pool_share": budget / pool_size if pool_size else float("nan"),
            "true_gap": true_gap, "mean_gap": float(finite.mean()) if finite.size else float("nan"),
            "sd_gap": float(finite.std(ddof=1)) if finite.size > 1 else float("nan"),
            "correct_sign": int(right_sign.sum()), "trials": n_trials, "undefined": int(n_trials - finite.size),
            "p_correct_sign": float(right_sign.mean()), "p_recovered": float(np.mean(right_sign & (p < alpha))),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(COMPLEXITY_COLUMNS))
