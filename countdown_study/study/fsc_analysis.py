"""Report 002's offline analyses of the observation log, as pure functions (its Diagnostics part).

The observation log
-------------------
A pandas table with one row per observed example per observation: every probe group and every
training-batch group of a run, one row per prompt in prompt order (a task drawn twice in one batch gives
two rows). The feature-space sampler keeps it (``samplers.observations``, whose ``observation_rows``
builds the rows of one step from its ``(P, G)`` arrays) and the run store holds it as
``tables/sampler_observations.parquet``; its columns (``LOG_COLUMNS``) are described there.

``with_features`` joins the task's Difficulty Vector columns (``DV_COLUMNS``) by ``task_index``.
Derived, never stored: ``fail_rate = (n - n_correct) / n`` (the report's ``P(r < 1)``: partial credit
counts as a failure) and success ``n_correct / n``. Every per-bin or per-band mean below weighs rows
equally (the report's "mean fail" over observed rows), and every resampling unit is a row.

Analyses, each reproducing one table or figure of report 002:

* ``failure_by_bin``: Table 5, per-bin failure rates of each DV field with 95% intervals.
* ``variance_by_band``: Table 6, within-group reward variance by difficulty band.
* ``signal_gain``: the "+69% usable signal" reweighting bootstrap of the step-0 probe (Section 5.2).
* ``edge_profile`` and ``success_by_phase``: Figure 6, the moving edge by training phase.
* ``sample_complexity``: Table 7 (App. B), recovering the 3-vs-4-number failure gap from subsamples.
* ``training_diet``: the realized hard share per policy, preserve / amplify / suppress (Section 5.2).
* ``failure_spearman`` and ``value_range``: Section 5.2's Spearman correlations of the DV fields with
  failure, per run and as the range across runs.
* ``pairwise_interactions``: Section 5.2's failure-rate spread over the joint bins of two DV fields.
* ``diet_makeup``: what a policy's batches hold within a part of the pool (Section 5.2: the kernel's
  4-number diet).
* ``gain_table``: the "+69% usable signal" as a table; ``refresh_diagnostics``: the effective-sample
  fraction and the other refresh diagnostics of the step log as a table (Sections 4 and 5.2).
* ``per_seed_table``: Table 8 (App. C), per-seed pass@k with the mean and sample s.d. over seeds.

Randomness is an argument: every stochastic function takes ``seed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from countdown_study.countdown.features import DV_COLUMNS
from countdown_study.seeding import derive_rng
from countdown_study.study.stats import wilson_interval

BIN_FIELDS = tuple(c for c in DV_COLUMNS if c not in ("target", "solution", "solution_count", "nps_capped"))
"""DV fields ``failure_by_bin`` bins by default: all but the raw target (binned as ``target_log10``), the
solution string, and the solution counts (binned as ``nps_log1p``, the same quantile bins)."""
BANDS = ("solved", "easy", "edge", "hard", "impossible")
"""Table 6's difficulty bands of the failure rate, easiest first."""
BAND_EDGES = (0.1, 0.3, 0.7, 0.9)
"""Failure rates between the bands (Table 6)."""
EDGE_TARGET = 0.5
"""The edge target tau of the report's Eq. (1): the success rate of maximal RLOO signal."""
PHASE_NAMES = ("early", "mid", "late")
"""Names of three training phases (Figure 6)."""
VAR_ATOL = 1e-12
"""A group's reward variance counts as nonzero above this (equal rewards give 0 up to rounding)."""
_BOOT_ELEMENTS = 1 << 22  # resampled values held at once by a bootstrap batch


# ---------------------------------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------------------------------


def _require(log: pd.DataFrame, columns: Iterable[str], caller: str) -> None:
    """Raise naming the columns ``caller`` needs that ``log`` lacks, or when ``log`` is empty."""
    missing = [c for c in columns if c not in log.columns]
    if missing:
        have = sorted(str(c) for c in log.columns)
        raise ValueError(f"{caller}: the observation log lacks column(s) {missing}; it has {have}")
    if log.empty:
        raise ValueError(f"{caller}: the observation log is empty")


def with_features(log: pd.DataFrame, dv_table: pd.DataFrame) -> pd.DataFrame:
    """``log`` with the ``DV_COLUMNS`` of ``dv_table`` joined by ``task_index`` (rows and order kept).

    ``dv_table`` is keyed by its ``task_index`` column when it has one, else by its index (the row of
    ``difficulty_vectors`` of the pool is the pool index). The DV columns it has are joined.
    """
    _require(log, ("task_index",), "with_features")
    table = dv_table.set_index("task_index") if "task_index" in dv_table.columns else dv_table
    columns = [c for c in DV_COLUMNS if c in table.columns]
    if not columns:
        raise ValueError(f"with_features: dv_table has none of the DV columns {list(DV_COLUMNS)}")
    clash = [c for c in columns if c in log.columns]
    if clash:
        raise ValueError(f"with_features: the log already has DV column(s) {clash}")
    unknown = np.setdiff1d(log["task_index"].unique(), table.index.to_numpy())
    if unknown.size:
        raise ValueError(f"with_features: task_index values {unknown[:5].tolist()} are not in dv_table")
    return log.join(table[columns], on="task_index")


def fail_rate(log: pd.DataFrame) -> np.ndarray:
    """Per-row failure rate ``(n - n_correct) / n``, the report's ``fail_rate = P(r < 1)``.  # (R,)

    Computed as a ratio of counts, so 1 failure in 10 is the float 0.1 and lands on Table 6's 0.1 edge.
    """
    _require(log, ("n", "n_correct"), "fail_rate")
    n, n_correct = log["n"].to_numpy(dtype=float), log["n_correct"].to_numpy(dtype=float)  # (R,), (R,)
    if np.any(n < 1) or np.any(n_correct < 0) or np.any(n_correct > n):
        raise ValueError("fail_rate: every row needs n >= 1 and 0 <= n_correct <= n")
    return (n - n_correct) / n


def difficulty_band(fail: np.ndarray) -> np.ndarray:
    """Table 6's band of each failure rate.  # (R,) -> (R,) str

    solved [0, 0.1), easy [0.1, 0.3), edge [0.3, 0.7], hard (0.7, 0.9], impossible (0.9, 1]. The report
    gives only "< 0.1", "0.1-0.3", ...; here a rate on an edge goes to the band nearer 0.5, so the bands
    mirror under fail <-> success.
    """
    fail = np.asarray(fail, dtype=float)
    position = sum(((fail >= e) if e < EDGE_TARGET else (fail > e)).astype(int) for e in BAND_EDGES)
    return np.asarray(BANDS)[position]


def bin_values(values: pd.Series, max_levels: int = 8, n_bins: int = 5) -> pd.Series:
    """A DV field's bin per row: the value itself when the field takes at most ``max_levels`` values,
    else one of ``n_bins`` quantile bins over the rows (``pd.qcut``; tied edges merged). The report bins
    each field without saying how; its fields are discrete except target magnitude and nps."""
    if values.nunique() <= max_levels:
        return values
    return pd.qcut(values, n_bins, duplicates="drop")


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
# Figure 6: the moving edge of learnability
# ---------------------------------------------------------------------------------------------------


def training_phase(steps: np.ndarray, bounds: Sequence[float]) -> np.ndarray:
    """Phase of each step: the number of ``bounds`` at or below it (a bound starts a phase).  # (R,)"""
    edges = np.asarray(bounds, dtype=float)
    if edges.ndim != 1 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"phase bounds must be increasing, got {list(bounds)}")
    return np.searchsorted(edges, np.asarray(steps, dtype=float), side="right")


def _phases(log: pd.DataFrame, bounds: Sequence[float] | None) -> tuple[np.ndarray, list[str]]:
    """Each row's phase and the phase names; default bounds: thirds of the log's steps."""
    if bounds is None:
        first, end = float(log["step"].min()), float(log["step"].max()) + 1
        bounds = [first + (end - first) / 3, first + 2 * (end - first) / 3]
    names = list(PHASE_NAMES) if len(bounds) == 2 else [f"phase {i}" for i in range(len(bounds) + 1)]
    return training_phase(log["step"].to_numpy(), bounds), names


def _phase_frame(
    log: pd.DataFrame, bounds: Sequence[float] | None, source: str, extra: pd.DataFrame
) -> pd.DataFrame:
    """phase, name, step, success, band and the ``extra`` columns of the rows of ``source``, by position
    (phases from the whole log's steps)."""
    phase, names = _phases(log, bounds)
    fail = fail_rate(log)  # (R,)
    frame = pd.DataFrame({
        "phase": phase, "name": np.asarray(names)[phase], "step": log["step"].to_numpy(),
        "success": log["n_correct"].to_numpy() / log["n"].to_numpy(), "band": difficulty_band(fail),
    })  # fmt: skip
    frame = pd.concat([frame, extra.reset_index(drop=True)], axis=1)
    return frame[(log["source"] == source).to_numpy()]


def edge_profile(
    log: pd.DataFrame,
    fields: Sequence[str] = ("num_count", "shortest_operand_count"),
    *,
    phase_bounds: Sequence[float] | None = None,
    source: str = "probe",
) -> pd.DataFrame:
    """Figure 6: per training phase, mean success, mastered share and the DV profile of the edge rows.

    One row per phase holding rows of ``source``: ``phase``, ``name``, ``first_step``, ``last_step``,
    ``rows``, ``mean_success`` (the report: 0.29 -> 0.45 -> 0.50), ``mastered_share`` (band "solved",
    the report: 0.14 -> 0.42 -> 0.46), ``edge_rows``, ``edge_share`` (band "edge", the report's
    s(x) ~ 0.5 region) and ``edge_mean_<field>``, the mean of each field over the edge rows (the report:
    shortest_operand_count 3.13 -> 3.23 -> 3.28; the mean of a boolean column such as
    ``num_count == 4`` is a share, the report's 0.45 -> 0.54 -> 0.58); NaN in a phase without edge rows.

    Probe rows by default, as the report: fresh measurements free of curriculum-sampling bias. Phases:
    ``phase_bounds`` are the steps that start phases 1, 2, ...; the default cuts the log's step range
    (all sources) into thirds; the report's phases are 0-20, 20-50, 50-100 (``phase_bounds=(20, 50)``).
    """
    _require(log, ("step", "source", "n", "n_correct", *fields), "edge_profile")
    means = [f"edge_mean_{f}" for f in fields]
    frame = _phase_frame(log, phase_bounds, source, log[list(fields)].astype(float).set_axis(means, axis=1))
    frame = frame.assign(mastered=frame["band"] == "solved", edge=frame["band"] == "edge")
    table = frame.groupby(["phase", "name"]).agg(
        first_step=("step", "min"), last_step=("step", "max"), rows=("step", "size"),
        mean_success=("success", "mean"), mastered_share=("mastered", "mean"),
        edge_rows=("edge", "sum"), edge_share=("edge", "mean"),
    )  # fmt: skip
    edge_means = frame[frame["edge"]].groupby("phase")[means].mean()
    return table.reset_index().join(edge_means, on="phase")


def success_by_phase(
    log: pd.DataFrame,
    field: str,
    *,
    phase_bounds: Sequence[float] | None = None,
    source: str = "probe",
    max_levels: int = 8,
    n_bins: int = 5,
) -> pd.DataFrame:
    """Figure 6, by bin: per training phase and bin of ``field``, the success rate, and the edge bin.

    One row per (phase, bin) with rows: ``phase``, ``name``, ``value``, ``rows``, ``success``,
    ``distance`` (``|success - EDGE_TARGET|``) and ``nearest_edge``, true for the one bin of each phase
    whose success sits nearest 0.5 (ties: the lowest bin). Bins come from ``bin_values`` over the whole
    log, so they are the same in every phase; phases and ``source`` as in ``edge_profile``.
    """
    _require(log, ("step", "source", "n", "n_correct", field), "success_by_phase")
    bins = bin_values(log[field], max_levels, n_bins).rename("value").to_frame()
    frame = _phase_frame(log, phase_bounds, source, bins)
    table = frame.groupby(["phase", "name", "value"], observed=True, sort=True).agg(
        rows=("success", "size"), success=("success", "mean")
    )
    table = table.reset_index()
    table["distance"] = (table["success"] - EDGE_TARGET).abs()
    table["nearest_edge"] = table.index.isin(table.groupby("phase")["distance"].idxmin())
    return table


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


# ---------------------------------------------------------------------------------------------------
# The training diet's hard share
# ---------------------------------------------------------------------------------------------------


def diet_label(difference: float, tolerance: float) -> str:
    """``amplify`` above the pool's hard share by more than ``tolerance``, ``suppress`` below by more,
    else ``preserve``. A difference of the tolerance, up to float rounding (0.55 - 0.5), preserves."""
    slack = tolerance + 1e-12
    if difference > slack:
        return "amplify"
    return "suppress" if difference < -slack else "preserve"


def training_diet(
    logs: Mapping[str, pd.DataFrame],
    hard: Sequence[bool] | np.ndarray,
    *,
    tolerance: float = 0.05,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The realized training diet's hard share per policy, against the pool's (report 002, Section 5.2).

    ``logs`` maps a policy to its observation log; its ``batch`` rows are the realized diet (every
    draw counts, repeats included; probes are left out). ``hard`` is one flag per pool task (the report:
    4 numbers, about half the pool: ``dv.num_count.to_numpy() == 4``). One row per policy: ``policy``,
    ``rows``, ``hard_share`` with its Wilson interval over draws (``ci_low``, ``ci_high``),
    ``pool_share``, ``difference`` and ``label`` (``diet_label``). The report names the bands (preserve
    48.9-54.1%, suppress 23.9%, pool ~50%) but no tolerance; 0.05 in share keeps its preserve band.
    """
    flags = np.asarray(hard, dtype=bool)  # (N,)
    if flags.ndim != 1 or flags.size == 0:
        raise ValueError("training_diet: hard must be one flag per pool task")
    pool_share = float(flags.mean())
    rows = []
    for policy, log in logs.items():
        _require(log, ("source", "task_index"), f"training_diet[{policy!r}]")
        drawn = log.loc[log["source"] == "batch", "task_index"].to_numpy()  # (D,)
        if drawn.size == 0:
            raise ValueError(f"training_diet[{policy!r}]: the log has no batch rows")
        if drawn.min() < 0 or drawn.max() >= flags.size:
            raise ValueError(f"training_diet[{policy!r}]: task_index outside the pool of {flags.size}")
        count = int(flags[drawn].sum())
        share = count / drawn.size
        ci_low, ci_high = wilson_interval(count, int(drawn.size), confidence)
        rows.append({"policy": policy, "rows": int(drawn.size), "hard_share": share, "ci_low": ci_low,
                     "ci_high": ci_high, "pool_share": pool_share, "difference": share - pool_share,
                     "label": diet_label(share - pool_share, tolerance)})  # fmt: skip
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# Section 5.2: which DV fields predict failure, and their interactions
# ---------------------------------------------------------------------------------------------------

SPEARMAN_FIELDS = ("num_count", "shortest_operand_count", "all_numbers_required", "nps_log1p",
                   "shortest_expression_depth", "target_log10", "op_distinct_min")  # fmt: skip
"""DV fields of Section 5.2's Spearman analysis: the five it names (num_count rho ~ 0.5, then the solver
fields), then target magnitude and operator uniqueness."""


def _groups(log: pd.DataFrame, by: str | None) -> list[tuple[object, pd.DataFrame]]:
    """``(label, rows)`` per value of column ``by`` in order of appearance; the whole log when None."""
    if by is None:
        return [(None, log)]
    _require(log, (by,), f"grouping by {by!r}")
    return list(log.groupby(by, sort=False))


def failure_spearman(
    log: pd.DataFrame, fields: Sequence[str] = SPEARMAN_FIELDS, *, by: str | None = "method"
) -> pd.DataFrame:
    """Section 5.2: Spearman's rho between each DV field and the per-row failure rate, per run group.

    One row per (group, field): ``by`` (the group's label, left out when ``by`` is None), ``field``,
    ``n`` (rows with the field's value), ``rho`` (average ranks for ties; NaN when either side is
    constant) and its two-sided ``p_value``. Rows weigh equally, as in Table 5: the report runs the
    analysis over each run's observation log (dynamic, static-once and kernel runs).
    """
    _require(log, ("n", "n_correct", *fields), "failure_spearman")
    rows = []
    for label, group in _groups(log.reset_index(drop=True), by):
        fail = fail_rate(group)  # (R,)
        for field in fields:
            values = pd.to_numeric(group[field], errors="coerce").to_numpy(dtype=float)  # (R,)
            kept = ~np.isnan(values)
            x, y = values[kept], fail[kept]
            if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
                rho, p = float("nan"), float("nan")
            else:
                rho, p = (float(v) for v in scipy_stats.spearmanr(x, y))
            row = {} if by is None else {by: label}
            rows.append({**row, "field": field, "n": int(kept.sum()), "rho": rho, "p_value": p})
    return pd.DataFrame(rows)


def value_range(table: pd.DataFrame, keys: Sequence[str], value: str) -> pd.DataFrame:
    """The range of ``value`` across the rows sharing ``keys`` (the report's "rho ~ 0.22-0.31" across
    runs): one row per key, in order of appearance, with ``<value>_low``, ``<value>_high`` (NaN values
    left out) and ``groups`` (rows with a value)."""
    _require(table, (*keys, value), "value_range")
    grouped = table.groupby(list(keys), sort=False)[value]
    return grouped.agg(**{f"{value}_low": "min", f"{value}_high": "max", "groups": "count"}).reset_index()


def _cell_rates(fail: pd.Series, bins: list[pd.Series], min_rows: int) -> pd.Series:
    """Mean failure per cell of ``bins`` (one or more binnings of the same rows), cells of at least
    ``min_rows`` rows only."""
    cells = fail.groupby(bins, observed=True).agg(["mean", "size"])
    return cells.loc[cells["size"] >= min_rows, "mean"]


def _spread(rates: pd.Series) -> float:
    return float(rates.max() - rates.min()) if len(rates) >= 2 else float("nan")


def pairwise_interactions(
    log: pd.DataFrame,
    fields: Sequence[str] = SPEARMAN_FIELDS,
    *,
    by: str | None = "method",
    min_rows: int = 30,
    max_levels: int = 8,
    n_bins: int = 5,
) -> pd.DataFrame:
    """Section 5.2's pairwise interactions: the failure-rate spread over the joint bins of two DV fields.

    Each field is binned as in ``failure_by_bin`` (``bin_values``); the rows of a pair fall into the
    cells of both binnings, and a cell counts when it holds at least ``min_rows`` rows. One row per
    (group, pair), largest spread first within a group: ``by`` (left out when None), ``field_a``,
    ``field_b``, ``cells``, ``spread`` (highest minus lowest cell failure rate; NaN below two cells),
    ``low_cell`` and ``high_cell`` (those two rates) and ``spread_a``, ``spread_b``, the spread of each
    field alone over its own bins (same ``min_rows``): a pair's spread above both is what its joint
    cells add. The report names no formula or cell minimum; its strongest pairs are nps x
    shortest_operand_count (spread ~0.80-0.82) and nps x shortest_expression_depth (~0.77).
    """
    _require(log, ("n", "n_correct", *fields), "pairwise_interactions")
    if min_rows < 1:
        raise ValueError(f"pairwise_interactions: min_rows must be >= 1, got {min_rows}")
    rows = []
    for label, group in _groups(log.reset_index(drop=True), by):
        group = group.reset_index(drop=True)
        fail = pd.Series(fail_rate(group))  # (R,)
        binned = {f: bin_values(group[f], max_levels, n_bins).reset_index(drop=True) for f in fields}
        alone = {f: _spread(_cell_rates(fail, [binned[f]], min_rows)) for f in fields}
        pairs = []
        for a, b in combinations(fields, 2):
            rates = _cell_rates(fail, [binned[a], binned[b]], min_rows)
            low, high = (float(rates.min()), float(rates.max())) if len(rates) else (float("nan"),) * 2
            pairs.append({"field_a": a, "field_b": b, "cells": len(rates), "spread": _spread(rates),
                          "low_cell": low, "high_cell": high, "spread_a": alone[a], "spread_b": alone[b]})  # fmt: skip
        pairs.sort(key=lambda r: -r["spread"] if np.isfinite(r["spread"]) else np.inf)
        rows.extend(({} if by is None else {by: label}) | r for r in pairs)
    return pd.DataFrame(rows)


def diet_makeup(
    logs: Mapping[str, pd.DataFrame],
    within: Sequence[bool] | np.ndarray,
    subsets: Mapping[str, Sequence[bool] | np.ndarray],
) -> pd.DataFrame:
    """What each policy's batches hold inside one part of the pool (Section 5.2: "conditioning on the
    4-number problems each policy does keep").

    ``within`` and every mask of ``subsets`` hold one flag per pool task. Per policy, its ``batch`` rows
    whose task is ``within`` (every draw counts, repeats included) and, per subset, the share of those
    rows in it; a first row ``pool`` gives the subsets' shares among the pool's own ``within`` tasks.
    Columns: ``policy``, ``rows``, then one per subset name. The report: the uncorrected kernel's
    4-number diet is ~78% all-numbers-required 4-operand tasks (edge ~73%) and ~18% of depth >= 3
    (edge ~28%).
    """
    inside = np.asarray(within, dtype=bool)  # (N,)
    if inside.ndim != 1 or not inside.any():
        raise ValueError("diet_makeup: within must be one flag per pool task, some of them set")
    masks = {name: np.asarray(mask, dtype=bool) for name, mask in subsets.items()}
    wrong = [name for name, mask in masks.items() if mask.shape != inside.shape]
    if wrong:
        raise ValueError(f"diet_makeup: subset(s) {wrong} must hold one flag per pool task ({inside.size})")
    pool = np.flatnonzero(inside)  # (W,)
    rows = [
        {"policy": "pool", "rows": int(pool.size), **{n: float(m[pool].mean()) for n, m in masks.items()}}
    ]
    for policy, log in logs.items():
        _require(log, ("source", "task_index"), f"diet_makeup[{policy!r}]")
        drawn = log.loc[log["source"] == "batch", "task_index"].to_numpy()  # (D,)
        if drawn.size and (drawn.min() < 0 or drawn.max() >= inside.size):
            raise ValueError(f"diet_makeup[{policy!r}]: task_index outside the pool of {inside.size}")
        kept = drawn[inside[drawn]]  # (D_w,)
        shares = {n: float(m[kept].mean()) if kept.size else float("nan") for n, m in masks.items()}
        rows.append({"policy": policy, "rows": int(kept.size), **shares})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# Tables of single numbers: the signal gain, the refresh diagnostics, per-seed pass@k
# ---------------------------------------------------------------------------------------------------


def gain_table(gains: Mapping[str, SignalGain]) -> pd.DataFrame:
    """``signal_gain`` results as a table: one row per label (``weights``: the policy whose weights
    reweight the probe), then every ``SignalGain`` field."""
    if not gains:
        raise ValueError("gain_table: no signal gain given")
    return pd.DataFrame([{"weights": label, **asdict(gain)} for label, gain in gains.items()])


REFRESH_DIAGNOSTICS = ("sampler_ess_frac", "sampler_entropy", "sampler_tv_uni")
"""Step-log columns of ``refresh_diagnostics``: the effective-sample fraction, the normalized weight
entropy and the total variation from uniform (Section 4; the report: ~99.5%, ~1.00, near 0)."""


def refresh_diagnostics(
    steps: pd.DataFrame, columns: Sequence[str] = REFRESH_DIAGNOSTICS, *, by: str = "method"
) -> pd.DataFrame:
    """The sampler's refresh diagnostics of a step log as a table: per ``by`` group, ``steps`` (step-log
    rows holding every column) and, per column, ``<column>_mean`` over all those rows (every step of
    every seed), ``<column>_min`` and ``<column>_last`` (the mean over seeds at the group's last step).
    Groups without any of the columns are left out."""
    _require(steps, ("step", by), "refresh_diagnostics")
    missing = [c for c in columns if c not in steps.columns]
    if missing:
        raise ValueError(f"refresh_diagnostics: the step log lacks column(s) {missing}")
    rows = []
    for label, group in steps.dropna(subset=list(columns)).groupby(by, sort=False):
        last = group[group["step"] == group["step"].max()]
        row = {by: label, "steps": len(group)}
        for column in columns:
            row |= {f"{column}_mean": float(group[column].mean()), f"{column}_min": float(group[column].min()),
                    f"{column}_last": float(last[column].mean())}  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def per_seed_table(
    summaries: pd.DataFrame,
    metrics: Sequence[str] = ("pass@1", "pass@8", "pass@16"),
    methods: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Table 8 (App. C): each method's per-seed ``metrics``, then their ``mean`` and sample ``s.d.``.

    ``summaries`` has one row per (method, seed) (``study.run_summaries``). One row per method and seed
    (``seed`` as text), then a ``mean`` row and an ``s.d.`` row (ddof = 1; NaN with one seed) per method,
    in the order of ``methods`` (default: as they appear). The report lists the seeds themselves because
    at two seeds the s.d. is a fragile estimate.
    """
    _require(summaries, ("method", "seed", *metrics), "per_seed_table")
    order = list(dict.fromkeys(summaries["method"])) if methods is None else list(methods)
    unknown = [m for m in order if m not in set(summaries["method"])]
    if unknown:
        raise ValueError(f"per_seed_table: no summaries for method(s) {unknown}")
    rows = []
    for method in order:
        group = summaries[summaries["method"] == method].sort_values("seed")
        values = group[list(metrics)].astype(float)
        rows.extend({"method": method, "seed": str(seed), **v} for seed, v in
                    zip(group["seed"], values.to_dict("records"), strict=True))  # fmt: skip
        rows.append({"method": method, "seed": "mean", **values.mean().to_dict()})
        rows.append({"method": method, "seed": "s.d.", **values.std(ddof=1).to_dict()})
    return pd.DataFrame(rows, columns=["method", "seed", *metrics])
