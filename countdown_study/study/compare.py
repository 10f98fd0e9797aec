"""The study's paired comparison of two methods: seed-aware intervals, verdicts, minimum detectable effects.

A comparison of training methods varies with the evaluation tasks *and* with the training seed. The
inputs are two ``(tasks, seeds)`` arrays of one per-task metric (pass@1 of each task under each
training seed), aligned on tasks and seeds, and the contrast is ``D = a - b``  # (T, S).

* **Two-level bootstrap** (the default interval; stratified bootstrap over runs, Agarwal et al., 2021):
  each resample draws S training seeds with replacement and, shared by them, T tasks with replacement,
  and takes the mean of D over the drawn cells. With a handful of seeds a percentile interval of that
  distribution is too narrow (five clusters), so the interval is calibrated for few seeds: the observed
  difference plus or minus ``t(S-1)`` times the bootstrap standard error, the error's seed part
  corrected by ``sqrt(S / (S - 1))`` (the bootstrap variance of a mean of S values is (S-1)/S of the
  unbiased one). ``ci_method`` says which interval a row carries.
* **Seed-paired t-interval** (cross-check): ``d_s = mean_t D[t, s]``, ``mean(d) +- t(S-1) sd(d)/sqrt(S)``.
* **Task-only interval** (kept, labelled as such): the percentile bootstrap over tasks of the
  seed-averaged difference; it holds the training seeds fixed, so it is not a verdict.
* **Minimum detectable effect**: the true difference the design detects 80% of the time with a
  two-sided 5% test, ``(t(S-1, 0.975) + t(S-1, 0.80)) * se``: the size a null result rules out.

With one seed only the task-only interval exists; ``ci_method`` says so and the t-interval is NaN.

A claim that a rate *stays at zero* (report 004: no 5-number task solved) is judged on the method's own
``(tasks, seeds)`` values compared with zero (``zero_verdict``): ``reversed`` when the seed-aware interval
lies above zero, ``holds`` when no task was solved under any seed, ``inside noise`` otherwise. With
nothing solved the bootstrap interval collapses to a point, so what such a result rules out is given by
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
    """Share of two-level resamples with a positive difference."""
    se: float
    """Standard error of the difference behind the default interval (few-seed corrected)."""
    mde: float
    """Minimum detectable effect at 80% power, two-sided 5% (NaN with one seed)."""
    confidence: float
    """Confidence level of the intervals."""

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
    """The study's paired comparison of ``a`` and ``b``, each ``(tasks, seeds)`` (module docstring)."""
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
    df = num_seeds - 1
    quantile = float(scipy_stats.t.ppf(0.5 + confidence / 2, df))
    se = float(means.std(ddof=1)) * math.sqrt(num_seeds / df)
    t_half = quantile * float(per_seed.std(ddof=1)) / math.sqrt(num_seeds)
    mde = (quantile + float(scipy_stats.t.ppf(POWER, df))) * se
    return Comparison(
        diff=diff,
        ci_low=diff - quantile * se,
        ci_high=diff + quantile * se,
        ci_method=f"two-level bootstrap (seeds, tasks), t({df}) x corrected s.e.",
        n_tasks=num_tasks,
        n_seeds=num_seeds,
        per_seed_diffs=tuple(float(d) for d in per_seed),
        t_low=float(per_seed.mean()) - t_half,
        t_high=float(per_seed.mean()) + t_half,
        task_low=task_only.ci_low,
        task_high=task_only.ci_high,
        prob_positive=prob_positive,
        se=se,
        mde=mde,
        confidence=confidence,
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
