"""How often the default interval covers a null difference, on simulated studies shaped like ours.

An interval is only as good as its coverage on data like the data it is used on. Ours are binomial
(16 samples per task), bounded (a quarter of the tasks never solved, a fifth always solved), crossed
(every seed evaluates the same tasks) and noisy at the level of the training seed. ``fit_shape`` reads
that shape off finished runs:

* ``p`` (per task): the exact-success rate pooled over the reference method's seeds and samples; tasks
  at 0 or 1 stay there in every simulated run (floors and ceilings);
* ``q`` (per task): the share of well-formed answers among the wrong ones (the 0.1 format score of the
  mean score);
* ``shift_sd`` and ``cell_sd``: a training run's success probability on task t is
  ``sigmoid(logit p_t + shift_run + eta_run,t)`` with a per-run shift and a per-(run, task) deviation,
  both normal; their spreads are fitted by the method of moments to the across-seed variance of the
  runs' means and of their per-task rates, after removing the binomial part (pooled over the methods
  given, each against its own seeds).

``simulate_null`` draws studies of two methods with no difference (the same tasks, drawn with
replacement from the fitted pool, shared by seeds and methods; independent runs per method and seed),
``coverage_table`` measures, per metric and seed count, the share of studies whose interval contains 0
(with its Monte Carlo standard error) and the power at the MDE: the share of studies that detect a true
difference equal to the mean MDE of the null studies, added to every cell (a location shift, the
definition behind the MDE). The seed-paired t-interval's coverage is given beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as scipy_stats

from countdown_study.study.compare import detectable, two_way_variance

METRICS = ("pass@1", "pass@16", "mean_score")
"""The metrics the coverage is measured on (the study's headline metrics)."""
SEED_COUNTS = (5, 10)
"""The seed counts the study runs at (today's five, the planned ten)."""
FORMAT_SCORE = 0.1
"""The score of a well-formed wrong answer (``countdown.grading``'s format score)."""
COVERAGE_BOUNDS = (0.93, 0.97)
"""The band a 95% interval's measured coverage of a null must fall in."""


@dataclass(frozen=True)
class StudyShape:
    """What a simulated study draws from: per-task rates and the training-noise spreads."""

    p: np.ndarray
    """Per-task exact-success probability of the reference method, ``(T,)``."""
    q: np.ndarray
    """Per-task share of well-formed answers among wrong ones, ``(T,)``."""
    shift_sd: float
    """Spread of a run's shift on the logit scale (training-seed noise shared by all tasks)."""
    cell_sd: float
    """Spread of a run's per-task deviation on the logit scale (seed x task noise)."""
    n_samples: int
    """Samples per task and run."""

    @property
    def floor_share(self) -> float:
        """Share of tasks never solved by the reference method."""
        return float(np.mean(self.p == 0))

    @property
    def ceiling_share(self) -> float:
        """Share of tasks always solved by the reference method."""
        return float(np.mean(self.p == 1))


def _counts(samples: pd.DataFrame) -> pd.DataFrame:
    """Per (seed, task): samples, exact successes and well-formed wrong answers."""
    table = samples.assign(
        correct=samples["correct"].astype(bool),
        formatted=(~samples["correct"].astype(bool)) & (samples["reward"] > 0),
    )
    return table.groupby(["seed", "task_index"]).agg(
        n=("correct", "size"), c=("correct", "sum"), w=("formatted", "sum")
    )


def task_rates(samples: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """``(p, q, n)`` of one method's samples (module docstring), tasks in index order."""
    counts = _counts(samples)
    sizes = counts["n"].unique()
    if len(sizes) != 1:
        raise ValueError(f"every (seed, task) must have the same number of samples, got {sorted(sizes)}")
    pooled = counts.groupby("task_index")[["n", "c", "w"]].sum()
    p = (pooled["c"] / pooled["n"]).to_numpy(dtype=float)
    wrong = (pooled["n"] - pooled["c"]).to_numpy(dtype=float)
    q = np.divide(pooled["w"].to_numpy(dtype=float), wrong, out=np.zeros_like(wrong), where=wrong > 0)
    return p, q, int(sizes[0])


def observed_moments(samples: pd.DataFrame) -> tuple[float, float]:
    """``(per-task, per-run-mean)`` across-seed variances of one method's rates, binomial part removed.

    With ``r[t, s] = c / n`` the run's rate on task t: ``mean_t [var_s r - mean_s r(1-r)/(n-1)]`` and
    ``var_s(mean_t r) - mean_s mean_t r(1-r)/(n-1) / T`` (``r(1-r)/(n-1)`` is the unbiased estimate of the
    binomial variance of a rate of n samples).
    """
    counts = _counts(samples)
    rates = (counts["c"] / counts["n"]).unstack("seed").to_numpy(dtype=float)  # (T, S)
    n = int(counts["n"].iloc[0])
    binomial = rates * (1 - rates) / (n - 1)  # (T, S)
    per_task = float(np.mean(rates.var(axis=1, ddof=1) - binomial.mean(axis=1)))
    per_mean = float(rates.mean(axis=0).var(ddof=1) - binomial.mean() / rates.shape[0])
    return per_task, per_mean


def _logit(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return special.logit(p)  # -inf at 0, +inf at 1: floors and ceilings stay put


def run_rates(logits: np.ndarray, shift_sd: float, cell_sd: float, runs: int, rng: np.random.Generator):
    """Success probabilities of ``runs`` simulated runs on tasks with base ``logits`` ``(T,)`` -> ``(T, runs)``."""
    shift = rng.normal(0.0, shift_sd, size=(1, runs))
    cell = rng.normal(0.0, cell_sd, size=(logits.shape[0], runs))
    return special.expit(logits[:, None] + shift + cell)


def fit_spreads(
    p: np.ndarray,
    moments: tuple[float, float],
    shift_grid: Sequence[float] = tuple(np.arange(0.0, 0.81, 0.02)),
    cell_grid: Sequence[float] = tuple(np.arange(0.0, 2.01, 0.05)),
    runs: int = 200,
    seed: int = 0,
) -> tuple[float, float]:
    """``(shift_sd, cell_sd)`` on the grids whose simulated moments come closest to ``moments``.

    Closeness is the sum of squared relative errors of the two moments (``observed_moments``' order),
    each simulated from ``runs`` runs with common random numbers across the grid.
    """
    logits = _logit(np.asarray(p, dtype=float))
    target = np.maximum(np.asarray(moments, dtype=float), 1e-12)
    best, best_error = (0.0, 0.0), float("inf")
    for shift_sd in shift_grid:
        for cell_sd in cell_grid:
            rates = run_rates(logits, shift_sd, cell_sd, runs, np.random.default_rng(seed))  # (T, runs)
            simulated = np.array([rates.var(axis=1, ddof=1).mean(), rates.mean(axis=0).var(ddof=1)])
            error = float(np.sum(((simulated - target) / target) ** 2))
            if error < best_error:
                best, best_error = (float(shift_sd), float(cell_sd)), error
    return best


def fit_shape(samples: pd.DataFrame, reference: str, methods: Sequence[str] | None = None) -> StudyShape:
    """The study shape of ``samples`` (columns ``method``, ``seed``, ``task_index``, ``correct``,
    ``reward``): per-task rates of ``reference``, spreads fitted to the moments averaged over ``methods``
    (default: every method in ``samples``), each method's moments taken over its own seeds."""
    methods = list(samples["method"].unique()) if methods is None else list(methods)
    if reference not in set(samples["method"]):
        raise ValueError(f"no samples of the reference method {reference!r}")
    p, q, n = task_rates(samples[samples["method"] == reference])
    moments = np.mean([observed_moments(samples[samples["method"] == m]) for m in methods], axis=0)
    shift_sd, cell_sd = fit_spreads(p, (float(moments[0]), float(moments[1])))
    return StudyShape(p=p, q=q, shift_sd=shift_sd, cell_sd=cell_sd, n_samples=n)


def simulate_null(shape: StudyShape, n_studies: int, n_seeds: int, rng: np.random.Generator) -> dict:
    """``{metric: D}`` with ``D`` ``(n_studies, T, n_seeds)`` the per-task differences of two methods
    drawn alike (module docstring); T is the pool's size, its tasks drawn with replacement per study."""
    num_tasks, n = shape.p.shape[0], shape.n_samples
    tasks = rng.integers(0, num_tasks, size=(n_studies, num_tasks))  # (N, T)
    logits, q = _logit(shape.p)[tasks][..., None], shape.q[tasks][..., None]  # (N, T, 1)
    values = []
    for _ in range(2):  # the two methods, independent runs
        shift = rng.normal(0.0, shape.shift_sd, size=(n_studies, 1, n_seeds))
        cell = rng.normal(0.0, shape.cell_sd, size=(n_studies, num_tasks, n_seeds))
        correct = rng.binomial(n, special.expit(logits + shift + cell))  # (N, T, S)
        formatted = rng.binomial(n - correct, np.broadcast_to(q, correct.shape))
        values.append({"pass@1": correct / n, "pass@16": (correct > 0).astype(float),
                       "mean_score": (correct + FORMAT_SCORE * formatted) / n})  # fmt: skip
    return {metric: values[0][metric] - values[1][metric] for metric in METRICS}


def interval_outcomes(diffs: np.ndarray, confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Per study of ``diffs`` ``(N, T, S)``: the mean, the default interval's half-width and MDE, and the
    seed-paired t-interval's half-width (arrays ``(N,)``)."""
    variance = two_way_variance(diffs)
    se = np.sqrt(variance.var_mean)
    num_seeds = diffs.shape[-1]
    per_seed = diffs.mean(axis=1)  # (N, S)
    t_half = scipy_stats.t.ppf(0.5 + confidence / 2, num_seeds - 1) * per_seed.std(axis=1, ddof=1)
    return {
        "diff": diffs.mean(axis=(1, 2)),
        "half": scipy_stats.t.ppf(0.5 + confidence / 2, variance.df) * se,
        "mde": detectable(se, variance.df, confidence),
        "t_half": t_half / np.sqrt(num_seeds),
    }


def coverage_table(
    shape: StudyShape,
    seed_counts: Sequence[int] = SEED_COUNTS,
    n_studies: int = 2000,
    seed: int = 0,
    chunk: int = 250,
) -> pd.DataFrame:
    """Coverage of a null and power at the MDE of the default interval, per metric and seed count.

    Columns: ``metric``, ``n_seeds``, ``n_studies``, ``coverage`` (share of null studies whose interval
    holds 0), ``coverage_se`` (its Monte Carlo standard error), ``power_at_mde`` (share of studies that
    find a true difference of ``mean_mde``, the null studies' mean MDE, added to every cell),
    ``mean_mde``, ``seed_t_coverage`` (the seed-paired t-interval's coverage), ``n_tasks``.
    """
    rows = []
    for n_seeds in seed_counts:
        rng = np.random.default_rng([seed, n_seeds])
        outcomes: dict[str, dict[str, list]] = {m: {} for m in METRICS}
        for start in range(0, n_studies, chunk):
            diffs = simulate_null(shape, min(chunk, n_studies - start), n_seeds, rng)
            for metric, values in diffs.items():
                for key, array in interval_outcomes(values).items():
                    outcomes[metric].setdefault(key, []).append(array)
        for metric in METRICS:
            o = {key: np.concatenate(arrays) for key, arrays in outcomes[metric].items()}
            covered = np.abs(o["diff"]) <= o["half"]
            effect = float(o["mde"].mean())
            detected = (o["diff"] + effect - o["half"]) > 0
            rows.append({"metric": metric, "n_seeds": n_seeds, "n_studies": n_studies,
                         "coverage": float(covered.mean()),
                         "coverage_se": float(np.sqrt(covered.mean() * (1 - covered.mean()) / n_studies)),
                         "power_at_mde": float(detected.mean()), "mean_mde": effect,
                         "seed_t_coverage": float(np.mean(np.abs(o["diff"]) <= o["t_half"])),
                         "n_tasks": int(shape.p.shape[0])})  # fmt: skip
    return pd.DataFrame(rows)


def finished_samples(methods: Sequence, preset, root=None) -> pd.DataFrame:
    """Per-sample rows (with ``method`` and ``seed``) of finished runs of ``methods`` at ``preset``, read
    without training anything (``study.finished.finished_study``)."""
    from countdown_study.study.finished import finished_study

    return finished_study(methods, preset, root).samples


COVERAGE_COLUMNS = ("metric", "n_seeds", "n_studies", "coverage", "coverage_se", "power_at_mde", "mean_mde",
                    "seed_t_coverage", "n_tasks", "shift_sd", "cell_sd", "floor_share", "ceiling_share")  # fmt: skip
"""Columns of ``results/tables/interval_coverage.csv``."""


def study_coverage(result, reference: str, n_studies: int = 2000, seed: int = 0) -> pd.DataFrame:
    """``coverage_table`` of the shape fitted to ``result`` (a ``StudyResult``): per-task rates of
    ``reference``, spreads from every RLOO row of the study, with the fitted shape in its columns. A study
    with one training seed cannot show seed noise: the table is then empty (the columns only)."""
    if len(result.preset.seeds) < 2:
        return pd.DataFrame(columns=list(COVERAGE_COLUMNS))
    rloo = result.runs.loc[result.runs["kind"] == "rloo", "method"].unique().tolist()
    shape = fit_shape(result.samples, reference, methods=rloo)
    table = coverage_table(shape, n_studies=n_studies, seed=seed)
    return table.assign(shift_sd=shape.shift_sd, cell_sd=shape.cell_sd, floor_share=shape.floor_share,
                        ceiling_share=shape.ceiling_share)[list(COVERAGE_COLUMNS)]  # fmt: skip
