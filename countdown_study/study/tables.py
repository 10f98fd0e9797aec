"""The notebooks' tables from a ``StudyResult``: summaries over seeds, per-problem matrices, paired tests,
pass@k curves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from countdown_study.evaluation.passk import pass_at_k, problem_table, summarize
from countdown_study.study.methods import StudyResult
from countdown_study.study.stats import aggregate_seeds, paired_bootstrap, wilson_interval

# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------

METRICS = (
    "pass@1",
    "pass@2",
    "pass@4",
    "pass@8",
    "pass@16",
    "avg_pass@k",
    "mean_score",
    "exact_rate",
    "well_formed",
)
"""Summary metrics reported per method."""


def run_summaries(result: StudyResult, by: str | None = None) -> pd.DataFrame:
    """One row per (method, seed[, group]) with the summary metrics of ``evaluate.summarize``."""
    rows = []
    for (method, seed), table in result.samples.groupby(["method", "seed"], sort=False):
        groups = [(None, table)] if by is None else list(table.groupby(by, sort=True))
        for key, group in groups:
            summary = summarize(group)
            row = {"method": method, "seed": seed, **{m: summary.get(m) for m in METRICS if m in summary}}
            if by is not None:
                row[by] = key
            rows.append(row)
    return pd.DataFrame(rows)


def summary_table(result: StudyResult, by: str | None = None) -> pd.DataFrame:
    """Per method (and group): each metric's mean over seeds, its sample s.d. and the seed count."""
    per_seed = run_summaries(result, by)
    keys = ["method"] + ([by] if by else [])
    rows = []
    for key, group in per_seed.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        for metric in METRICS:
            if metric in group and group[metric].notna().all():
                agg = aggregate_seeds(group[metric].tolist())
                row[metric] = agg.mean
                row[f"{metric}_sd"] = agg.sd
        row["n_seeds"] = int(group["seed"].nunique())
        rows.append(row)
    table = pd.DataFrame(rows)
    order = {name: i for i, name in enumerate(result.methods)}
    return table.sort_values(
        by=keys, key=lambda col: col.map(order) if col.name == "method" else col
    ).reset_index(drop=True)


def problem_matrix(result: StudyResult, method: str, metric: str) -> np.ndarray:
    """Per-problem ``metric`` of ``method``, shape (problems, seeds), problems by task index."""
    table = result.samples[result.samples["method"] == method]
    if table.empty:
        raise ValueError(f"no results for method {method!r}; have {list(result.methods)}")
    columns = []
    for seed in result.preset.seeds:
        problems = problem_table(table[table["seed"] == seed])
        if metric not in problems:
            raise ValueError(f"unknown per-problem metric {metric!r}; have {list(problems.columns)}")
        columns.append(problems.sort_values("task_index")[metric].to_numpy(dtype=float))
    return np.stack(columns, axis=1)  # (P, S)


def paired_table(
    result: StudyResult,
    contrasts: Sequence[tuple[str, str]],
    metrics: Sequence[str] = ("pass@1", "pass@16"),
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired bootstrap of ``a - b`` over the shared problems for each contrast and metric.

    Columns ``contrast, metric, diff, ci_low, ci_high, n_tasks, n_seeds`` (+ ``prob_positive``). With
    several seeds a problem's value is its mean over seeds and problems are resampled.
    """
    rows = []
    for a, b in contrasts:
        for metric in metrics:
            test = paired_bootstrap(
                problem_matrix(result, a, metric), problem_matrix(result, b, metric), n_resamples, seed
            )
            rows.append({"contrast": f"{a} vs {b}", "metric": metric, "diff": test.diff, "ci_low": test.ci_low,
                         "ci_high": test.ci_high, "n_tasks": test.n, "n_seeds": len(result.preset.seeds),
                         "prob_positive": test.prob_positive})  # fmt: skip
    return pd.DataFrame(rows)


def pass_at_k_curves(result: StudyResult) -> pd.DataFrame:
    """Per method and k = 1..n: pass@k (mean over problems and seeds) and a Wilson 95% interval.

    The interval treats pass@k x problems as successes out of the problem count (report 001's plots).
    """
    rows = []
    for method in result.methods:
        table = result.samples[result.samples["method"] == method]
        n = int(table.groupby(["seed", "task_index"]).size().min())
        counts = table.groupby(["seed", "task_index"])["correct"].agg(["size", "sum"])
        for k in range(1, n + 1):
            values = [pass_at_k(int(s), int(c), k) for s, c in counts.itertuples(index=False)]
            mean = float(np.mean(values))
            low, high = wilson_interval(mean * len(values), len(values))
            rows.append({"method": method, "k": k, "pass@k": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)
