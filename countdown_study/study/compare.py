"""The study's paired comparison of two methods: seed-aware intervals, verdicts, minimum detectable effects.

A comparison of training methods varies with the evaluation tasks *and* with the training seed. The
inputs are two ``(tasks, seeds)`` arrays of one per-task metric (pass@1 of each task under each
training seed), aligned on tasks and seeds, and the contrast is ``D = a - b``  # (T, S).

* **Two-way random-effects interval** (the default): ``D[t, s] = delta + u_t + v_s + e_ts`` with task
  effects ``u`` (shared by every seed), training-seed effects ``v`` and their interaction plus sampling
  noise ``e``. The mean of all T x S cells has variance ``var_u / T + var_v / S + var_e / (T S)``; the
  balanced two-way ANOVA's mean squares estimate it (``two_way_variance``; each component truncated at
  zero), and the interval is the observed difference plus or minus ``t(df)`` times its square root, ``df``
  from Satterthwaite's approximation (near S - 1 when seed noise dominates, larger when task noise
  does). It is analytic, so a verdict never depends on a resampling seed, and its coverage of a null
  difference is measured on a simulation shaped like the study's data (``study.coverage``: binomial
  samples, floors and ceilings, shared tasks, per-seed shifts), written to
  ``results/tables/interval_coverage.csv``.
* **Seed-paired t-interval** (cross-check, a column of every table): ``d_s = mean_t D[t, s]``,
  ``mean(d) +- t(S-1) sd(d)/sqrt(S)``. It leaves out the task part ``var_u / T`` (the tasks are the same
  under every seed), so it is narrower where methods differ task by task.
* **Task-only interval** (kept, labelled as such): the percentile bootstrap over tasks of the
  seed-averaged difference; it holds the training seeds fixed, so it is not a verdict.
* **prob_positive**: the share of two-level bootstrap resamples (S seeds with replacement and, shared by
  them, T tasks with replacement) with a positive mean; descriptive only.
* **Minimum detectable effect**: the true difference the design detects 80% of the time with a
  two-sided 5% test, ``(t(df, 0.975) + t(df, 0.80)) * se``: the size a null result rules out.
  ``seeds_for_effect`` gives the training seeds at which it would reach a given effect, from the measured
  variance components.

With one seed only the task-only interval exists; ``ci_method`` says so and the t-interval is NaN.

A claim that a rate *stays at zero* (report 004: no 5-number task solved) is judged on the method's own
``(tasks, seeds)`` values compared with zero (``zero_verdict``): ``reversed`` when the seed-aware interval
lies above zero, ``holds`` when no task was solved under any seed, ``inside noise`` otherwise. With
nothing solved the interval collapses to a point, so what such a result rules out is given by
``zero_bound`` instead of a minimum detectable effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from countdown_study.study.stats import paired_bootstrap

ONE_SEED = "one seed: no verdict"
"""What a comparison with a single training seed says of any claim: its interval resamples tasks only."""
VERDICTS = ("holds", "reversed", "inside noise", ONE_SEED)
"""What a report's signed claim becomes under a comparison's interval."""
POWER = 0.8
"""Power of the minimum detectable effect."""
DEFAULT_METHOD = "two-way random effects (tasks x seeds), Satterthwaite t"
"""``ci_method`` of the default interval (the number of degrees of freedom follows in the table)."""


@dataclass(frozen=True)
class Comparison:
    """``a - b`` over shared tasks and training seeds, with its intervals."""

    diff: float
    """Observed mean difference over all (task, seed) cells."""
    ci_low: float
    """Lower end of the default (seed-aware) interval."""
    ci_high: float
    """Upper end of the default interval."""
    ci_method: str
    """How the default interval was made."""
    n_tasks: int
    """Shared tasks T."""
    n_seeds: int
    """Training seeds S."""
    per_seed_diffs: tuple[float, ...]
    """Mean difference under each seed, ``(S,)``."""
    t_low: float
    """Lower end of the seed-paired t-interval (NaN with one seed)."""
    t_high: float
    """Upper end of the seed-paired t-interval."""
    task_low: float
    """Lower end of the task-only bootstrap interval (seeds held fixed; not a verdict)."""
    task_high: float
    """Upper end of the task-only interval."""
    prob_positive: float
    """Share of two-level resamples with a positive difference (descriptive)."""
    se: float
    """Standard error of the difference behind the default interval."""
    mde: float
    """Minimum detectable effect at 80% power, two-sided 5% (NaN with one seed)."""
    confidence: float
    """Confidence level of the intervals."""
    df: float = float("nan")
    """Degrees of freedom of the default interval's t quantile (Satterthwaite)."""
    components: tuple[float, float, float] = (float("nan"),) * 3
    """Estimated variance components ``(var_task, var_seed, var_cell)`` of the cells (``two_way_variance``)."""

    @property
    def excludes_zero(self) -> bool:
        """Whether the default interval lies wholly on one side of zero."""
        return self.ci_low > 0 or self.ci_high < 0


def _cells(a, b) -> np.ndarray:
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape:
        raise ValueError(
            f"a and b must be aligned on tasks and seeds; got shapes {a_arr.shape} and {b_arr.shape}"
        )
    if a_arr.ndim == 1:
        a_arr, b_arr = a_arr[:, None], b_arr[:, None]
    if a_arr.ndim != 2:
        raise ValueError(f"a and b must be (tasks, seeds) arrays, got shape {a_arr.shape}")
    if a_arr.shape[0] < 2:
        raise ValueError(f"a comparison needs at least 2 shared tasks, got {a_arr.shape[0]}")
    if not (np.all(np.isfinite(a_arr)) and np.all(np.isfinite(b_arr))):
        raise ValueError("a and b must hold finite values only (a NaN would hide a missing run)")
    return a_arr - b_arr  # (T, S)


@dataclass(frozen=True)
class TwoWayVariance:
    """The variance of the grand mean of a ``(T, S)`` table under the two-way random-effects model."""

    var_mean: float
    """Estimated variance of the mean of all cells: ``var_task / T + var_seed / S + var_cell / (T S)``."""
    df: float
    """Satterthwaite degrees of freedom of that estimate."""
    var_task: float
    """Task component (truncated at zero)."""
    var_seed: float
    """Training-seed component (truncated at zero)."""
    var_cell: float
    """Interaction and sampling component (the residual mean square)."""


def two_way_variance(cells: np.ndarray) -> TwoWayVariance:
    """Variance of the mean of ``cells`` ``(T, S)`` from the balanced two-way ANOVA (module docstring).

    Mean squares: tasks ``MS_t = S var_t(row means)``, seeds ``MS_s = T var_s(column means)``, residual
    ``MS_e`` with ``(T-1)(S-1)`` degrees of freedom; ``E[MS_t] = var_e + S var_u``, ``E[MS_s] = var_e + T
    var_v``, ``E[MS_e] = var_e``. A component whose estimate is negative is set to zero and its mean square
    dropped from the combination; the degrees of freedom of the remaining linear combination of mean
    squares follow Satterthwaite (1946). ``cells`` may be a stack ``(..., T, S)``: every output is then
    an array over the leading axes.
    """
    cells = np.asarray(cells, dtype=float)
    num_tasks, num_seeds = cells.shape[-2:]
    if num_tasks < 2 or num_seeds < 2:
        raise ValueError(f"two_way_variance needs at least 2 tasks and 2 seeds, got {(num_tasks, num_seeds)}")
    grand = cells.mean(axis=(-2, -1), keepdims=True)
    rows = cells.mean(axis=-1, keepdims=True)  # (..., T, 1)
    cols = cells.mean(axis=-2, keepdims=True)  # (..., 1, S)
    df_t, df_s = num_tasks - 1, num_seeds - 1
    df_e = df_t * df_s
    ms_t = num_seeds * np.sum((rows - grand) ** 2, axis=(-2, -1)) / df_t
    ms_s = num_tasks * np.sum((cols - grand) ** 2, axis=(-2, -1)) / df_s
    ms_e = np.sum((cells - rows - cols + grand) ** 2, axis=(-2, -1)) / df_e
    keep_t, keep_s = ms_t > ms_e, ms_s > ms_e  # components estimated above zero
    c_t, c_s = keep_t.astype(float), keep_s.astype(float)
    c_e = 1.0 - c_t - c_s
    total = c_t * ms_t + c_s * ms_s + c_e * ms_e  # = S var_u + T var_v + var_e, (...,)
    denominator = (c_t * ms_t) ** 2 / df_t + (c_s * ms_s) ** 2 / df_s + (c_e * ms_e) ** 2 / df_e
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denominator > 0, total**2 / denominator, float(df_s))
    out = float if cells.ndim == 2 else np.asarray  # one table: plain floats
    return TwoWayVariance(
        var_mean=out(total / (num_tasks * num_seeds)),
        df=out(df),
        var_task=out(c_t * (ms_t - ms_e) / num_seeds),
        var_seed=out(c_s * (ms_s - ms_e) / num_tasks),
        var_cell=out(ms_e),
    )


def detectable(se, df, confidence: float = 0.95, power: float = POWER):
    """The minimum detectable effect ``(t(df, 1 - alpha/2) + t(df, power)) * se`` (arrays broadcast)."""
    return (scipy_stats.t.ppf(0.5 + confidence / 2, df) + scipy_stats.t.ppf(power, df)) * se


def seeds_for_effect(
    comparison: Comparison, effect: float, max_seeds: int = 1000, confidence: float = 0.95
) -> int | None:
    """The fewest training seeds at which the comparison's minimum detectable effect falls to ``|effect|``.

    Uses the comparison's measured variance components with its tasks held at ``n_tasks`` and degrees of
    freedom taken as ``S - 1`` (the seed part's, the conservative end of Satterthwaite's). ``None`` when
    even ``max_seeds`` would not reach it (or the effect is zero or unknown); ``n_seeds`` itself when the
    MDE already reaches it.
    """
    if not math.isfinite(effect) or effect == 0 or comparison.n_seeds < 2:
        return None
    var_task, var_seed, var_cell = comparison.components
    if comparison.mde <= abs(effect):
        return comparison.n_seeds
    seeds = np.arange(2, max_seeds + 1)
    se = np.sqrt(var_task / comparison.n_tasks + var_seed / seeds + var_cell / (comparison.n_tasks * seeds))
    reached = detectable(se, seeds - 1, confidence) <= abs(effect)
    return int(seeds[np.argmax(reached)]) if reached.any() else None


def two_level_means(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``diffs`` (T, S) over resampled seeds and, shared by them, resampled tasks, ``(R,)``.

    A resample's mean over the drawn cells is ``w_t @ D @ w_s / (T S)`` with the draw counts of tasks
    ``w_t`` and seeds ``w_s`` (multinomial), which equals averaging ``D[t*][:, s*]``.
    """
    num_tasks, num_seeds = diffs.shape
    task_counts = rng.multinomial(num_tasks, np.full(num_tasks, 1.0 / num_tasks), size=n_resamples)  # (R, T)
    seed_counts = rng.multinomial(num_seeds, np.full(num_seeds, 1.0 / num_seeds), size=n_resamples)  # (R, S)
    return np.einsum("rt,ts,rs->r", task_counts, diffs, seed_counts) / (num_tasks * num_seeds)


def compare(a, b, seed: int = 0, n_resamples: int = 5000, confidence: float = 0.95) -> Comparison:
    """The study's paired comparison of ``a`` and ``b``, each ``(tasks, seeds)`` (module docstring).

    The default interval and the MDE are analytic (``two_way_variance``); ``seed`` and ``n_resamples``
    drive only the task-only interval and ``prob_positive``, which carry no verdict.
    """
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be at least 2, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    diffs = _cells(a, b)  # (T, S)
    num_tasks, num_seeds = diffs.shape
    diff = float(diffs.mean())
    per_seed = diffs.mean(axis=0)  # (S,)
    task_only = paired_bootstrap(
        diffs.mean(axis=1), np.zeros(num_tasks), n_resamples, seed, confidence=confidence
    )
    means = two_level_means(diffs, n_resamples, np.random.default_rng(seed))
    prob_positive = float(np.mean(means > 0))
    if num_seeds == 1:
        nan = float("nan")
        return Comparison(diff, task_only.ci_low, task_only.ci_high, "task bootstrap (one seed)", num_tasks, 1,
                          (float(per_seed[0]),), nan, nan, task_only.ci_low, task_only.ci_high, prob_positive,
                          float(means.std(ddof=1)), nan, confidence)  # fmt: skip
    variance = two_way_variance(diffs)
    df, se = variance.df, math.sqrt(variance.var_mean)
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, df)) * se
    t_quantile = float(scipy_stats.t.ppf(0.5 + confidence / 2, num_seeds - 1))
    t_half = t_quantile * float(per_seed.std(ddof=1)) / math.sqrt(num_seeds)
    return Comparison(
        diff=diff,
        ci_low=diff - half,
        ci_high=diff + half,
        ci_method=f"{DEFAULT_METHOD}({df:.1f})",
        n_tasks=num_tasks,
        n_seeds=num_seeds,
        per_seed_diffs=tuple(float(d) for d in per_seed),
        t_low=float(per_seed.mean()) - t_half,
        t_high=float(per_seed.mean()) + t_half,
        task_low=task_only.ci_low,
        task_high=task_only.ci_high,
        prob_positive=prob_positive,
        se=se,
        mde=float(detectable(se, df, confidence)),
        confidence=confidence,
        df=df,
        components=(variance.var_task, variance.var_seed, variance.var_cell),
    )


RUN_METHOD = "seed-paired t over one value per run"
"""``ci_method`` of ``compare_runs``."""


def compare_runs(a, b, confidence: float = 0.95) -> Comparison:
    """The comparison of a quantity each run has once (the share of its training prompts with 4 numbers: a
    run's own mix, no evaluation tasks), ``a`` and ``b`` one value per training seed ``(S,)``, paired by seed:
    the t-interval of the per-seed differences with ``S - 1`` degrees of freedom, which is the default
    interval here (training noise is all the noise there is). ``n_tasks`` is 1 and ``components`` holds the
    per-seed differences' variance as the seed component, so ``seeds_for_effect`` reads it as for any
    comparison; with one seed the interval is NaN (``ONE_SEED``)."""
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape or a_arr.size == 0:
        raise ValueError(
            f"a and b must be one value per seed each, got shapes {a_arr.shape} and {b_arr.shape}"
        )
    if not (np.all(np.isfinite(a_arr)) and np.all(np.isfinite(b_arr))):
        raise ValueError("a and b must hold finite values only (a NaN would hide a missing run)")
    diffs = a_arr - b_arr  # (S,)
    num_seeds, diff = diffs.size, float(diffs.mean())
    nan = float("nan")
    if num_seeds == 1:
        return Comparison(diff, nan, nan, f"{RUN_METHOD} (one seed)", 1, 1, (diff,), nan, nan, nan, nan,
                          nan, nan, nan, confidence)  # fmt: skip
    var_seed = float(diffs.var(ddof=1))
    se, df = math.sqrt(var_seed / num_seeds), num_seeds - 1
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, df)) * se
    return Comparison(
        diff=diff,
        ci_low=diff - half,
        ci_high=diff + half,
        ci_method=RUN_METHOD,
        n_tasks=1,
        n_seeds=num_seeds,
        per_seed_diffs=tuple(float(d) for d in diffs),
        t_low=diff - half,
        t_high=diff + half,
        task_low=nan,
        task_high=nan,
        prob_positive=nan,  # no resampling here
        se=se,
        mde=float(detectable(se, df, confidence)),
        confidence=confidence,
        df=float(df),
        components=(0.0, var_seed, 0.0),
    )


def verdict(comparison: Comparison, claimed_sign: int) -> str:
    """A signed claim (``+1``: a above b, ``-1``: a below b) under the comparison's default interval.

    ``holds`` when the interval excludes zero on the claimed side, ``reversed`` when on the other side,
    ``inside noise`` when it contains zero (then ``comparison.mde`` says how large an effect is ruled out),
    ``ONE_SEED`` with a single training seed (a task-only interval leaves training noise out).
    """
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    if comparison.n_seeds < 2:
        return ONE_SEED
    if not comparison.excludes_zero:
        return "inside noise"
    observed = 1 if comparison.ci_low > 0 else -1
    return "holds" if observed == claimed_sign else "reversed"


def zero_bound(num_tasks: int, confidence: float = 0.95) -> float:
    """Upper end of the Clopper-Pearson interval of a per-task success rate when none of ``num_tasks``
    tasks succeeded: ``1 - ((1 - confidence) / 2) ** (1 / num_tasks)``.

    Counted over tasks only (the training seeds taken as one, the conservative case where seeds agree),
    it is the smallest rate that would have shown at least one success with probability
    ``1 - (1 - confidence) / 2``: what an all-zero result rules out.
    """
    if num_tasks < 1:
        raise ValueError(f"num_tasks must be at least 1, got {num_tasks}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / num_tasks)


def zero_verdict(comparison: Comparison, all_zero: bool) -> str:
    """A claim that a rate stays at zero, under the comparison of the method's values with zero.

    ``reversed`` when the seed-aware interval lies above zero, ``holds`` when no task succeeded under any
    seed (``all_zero``; ``zero_bound`` says how small a rate that rules out), ``inside noise`` when some
    succeeded but the interval reaches zero, ``ONE_SEED`` with a single training seed.
    """
    if comparison.n_seeds < 2:
        return ONE_SEED
    if comparison.ci_low > 0:
        return "reversed"
    return "holds" if all_zero else "inside noise"
