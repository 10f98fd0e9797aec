"""The notebooks' tables from a ``StudyResult``: summaries over seeds, per-problem matrices, paired tests,
pass@k curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdown_study.evaluation.passk import pass_at_k, problem_table, summarize
from countdown_study.study.compare import ONE_SEED, Comparison, compare, verdict, zero_bound, zero_verdict
from countdown_study.study.methods import StudyResult
from countdown_study.study.stats import aggregate_seeds, wilson_interval

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
    "answer_spans_per_rollout",
    "first_verifying_pass@1",
    "abandoned_rate",
    "truncated",
)
"""Summary metrics reported per method (``truncated``: share of rollouts cut by the token cap;
``first_verifying_pass@1`` and ``abandoned_rate``: report 003's diagnostic of answer abandonment)."""


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
    claims: Mapping[tuple, int] | None = None,
) -> pd.DataFrame:
    """The study's comparison (``study.compare``: seeds and tasks) of ``a - b`` per contrast and metric.

    Columns ``PAIRED_COLUMNS``: the seed-aware interval (``ci_low``, ``ci_high``, ``ci_method``), the
    per-seed differences and their t-interval, the task-only interval (labelled, not a verdict), the
    minimum detectable effect, and ``verdict``: for a contrast in ``claims`` (its claimed sign, +1 or -1,
    keyed ``(a, b)`` for every metric or ``(a, b, metric)`` for one) ``holds`` / ``reversed`` /
    ``inside noise``; otherwise ``a above b`` / ``a below b`` / ``inside noise``.
    """
    rows = []
    claims = claims or {}
    for a, b in contrasts:
        for metric in metrics:
            sign = claims.get((a, b, metric), claims.get((a, b)))
            c = compare(
                problem_matrix(result, a, metric), problem_matrix(result, b, metric), seed, n_resamples
            )
            rows.append(comparison_row(f"{a} vs {b}", metric, c, _verdict(c, sign)))
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


PAIRED_COLUMNS = ("contrast", "metric", "diff", "ci_low", "ci_high", "ci_method", "n_tasks", "n_seeds",
                  "per_seed_diffs", "t_low", "t_high", "prob_positive", "verdict", "task_only_low",
                  "task_only_high", "mde")  # fmt: skip
"""Columns of every ``*_paired`` table."""


def paired_beside(
    result: StudyResult, reported: pd.DataFrame, n_resamples: int = 5000, seed: int = 0
) -> pd.DataFrame:
    """A report's own paired table (rows ``a``, ``b``, ``metric``, ``diff``, ``ci_low``, ``ci_high``: e.g.
    ``references.reported_table("002", "Table 4")``) redone on ``result``: per row our ``contrast``,
    ``metric``, ``diff``, seed-aware ``ci_low``/``ci_high``, ``mde``, ``n_seeds`` and ``verdict`` (the
    ordering ``a above b`` / ``a below b`` / ``inside noise``), then theirs as ``their_diff``,
    ``their_low``, ``their_high``."""
    missing = [c for c in ("a", "b", "metric", "diff", "ci_low", "ci_high") if c not in reported.columns]
    if missing:
        raise ValueError(f"the reported table lacks column(s) {', '.join(missing)}")
    rows = []
    for row in reported.itertuples(index=False):
        ours = paired_table(result, [(row.a, row.b)], (row.metric,), n_resamples, seed).iloc[0]
        rows.append({**{c: ours[c] for c in ("contrast", "metric", "diff", "ci_low", "ci_high", "mde",
                                              "n_seeds", "verdict")},
                     "their_diff": row.diff, "their_low": row.ci_low, "their_high": row.ci_high})  # fmt: skip
    return pd.DataFrame(rows)


def comparison_row(
    contrast: str, metric: str, c: Comparison, verdict_text: str, mde: float | None = None
) -> dict[str, object]:
    """One ``PAIRED_COLUMNS`` row of a comparison ``c`` (``mde``: the comparison's unless given)."""
    return {"contrast": contrast, "metric": metric, "diff": c.diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "ci_method": c.ci_method, "n_tasks": c.n_tasks, "n_seeds": c.n_seeds,
            "per_seed_diffs": " ".join(f"{d:+.4f}" for d in c.per_seed_diffs), "t_low": c.t_low,
            "t_high": c.t_high, "prob_positive": c.prob_positive, "verdict": verdict_text,
            "task_only_low": c.task_low, "task_only_high": c.task_high,
            "mde": c.mde if mde is None else mde}  # fmt: skip


def zero_claims_table(
    result: StudyResult,
    methods: Sequence[str],
    metric: str = "pass@16",
    label: str = "zero",
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """Claims that ``metric`` of each of ``methods`` stays at zero, as ``PAIRED_COLUMNS`` rows.

    Each method's ``(tasks, seeds)`` values are compared with zero by the study's comparison (``diff`` is
    the method's level); ``verdict`` is ``compare.zero_verdict``; where no task succeeded under any seed,
    ``mde`` is ``compare.zero_bound`` over the tasks (the smallest rate the design would have seen), else
    the comparison's minimum detectable effect. ``contrast`` reads ``<method> vs <label>``.
    """
    rows = []
    for method in methods:
        values = problem_matrix(result, method, metric)  # (T, S)
        c = compare(values, np.zeros_like(values), seed, n_resamples)
        all_zero = not np.any(values > 0)
        mde = zero_bound(c.n_tasks) if all_zero else c.mde
        rows.append(comparison_row(f"{method} vs {label}", metric, c, zero_verdict(c, all_zero), mde))
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


def _verdict(comparison: Comparison, claimed_sign: int | None) -> str:
    if claimed_sign is not None:
        return verdict(comparison, claimed_sign)
    if comparison.n_seeds < 2:
        return ONE_SEED
    if not comparison.excludes_zero:
        return "inside noise"
    return "a above b" if comparison.ci_low > 0 else "a below b"


def pass_at_k_curves(result: StudyResult) -> pd.DataFrame:
    """Per method and k = 1..n: pass@k (mean over problems and seeds) and a Wilson 95% interval.

    The interval's unit is the problem: a problem's pass@k is its mean over seeds, and the trials are
    the shared problems (seeds enter the comparisons through ``study.compare``, not through extra trials).
    """
    rows = []
    for method in result.methods:
        table = result.samples[result.samples["method"] == method]
        counts = table.groupby(["seed", "task_index"])["correct"].agg(["size", "sum"])
        n = int(counts["size"].min())
        for k in range(1, n + 1):
            values = pd.Series(
                [pass_at_k(int(s), int(c), k) for s, c in counts.itertuples(index=False)], index=counts.index
            )
            per_problem = values.groupby(level="task_index").mean()  # (problems,)
            mean = float(per_problem.mean())
            low, high = wilson_interval(mean * len(per_problem), len(per_problem))
            rows.append({"method": method, "k": k, "pass@k": mean, "ci_low": low, "ci_high": high,
                         "n_problems": len(per_problem)})  # fmt: skip
    return pd.DataFrame(rows)


def generation_cost(result: StudyResult, reference: str) -> pd.DataFrame:
    """What each RLOO method generated for its result: per method, means over seeds of

    ``rollouts_per_step`` (completions generated per optimizer step: the update's groups, a group filter's
    discarded ones and a sampler's probes), ``tokens_per_run`` (completion tokens generated in training),
    ``optimizer_steps``, ``pass@1``, ``gain`` (pass@1 minus ``reference``'s, the starting policy) and
    ``gain_per_million_tokens``; the ``*_sd`` columns are sample s.d. over seeds.
    """
    if result.steps.empty:
        raise ValueError("the study has no RLOO step logs")
    steps = result.steps.copy()

    def column(name: str) -> pd.Series:
        return steps[name].fillna(0) if name in steps else pd.Series(0, index=steps.index)

    prompts = result.preset.prompts_per_step
    kept = steps["kept_groups"].fillna(prompts) if "kept_groups" in steps else prompts  # filters: fewer
    extra = column("discarded_rollouts") + column("probe_rollouts")
    steps["generated_rollouts"] = kept * result.preset.group_size + extra
    steps["generated_tokens"] = steps["tokens"] + column("discarded_tokens") + column("probe_tokens")
    steps["optimizer_step"] = 1 - column("skipped_update")
    per_run = steps.groupby(["method", "seed"], sort=False).agg(
        rollouts=("generated_rollouts", "sum"),
        tokens=("generated_tokens", "sum"),
        optimizer_steps=("optimizer_step", "sum"),
    )
    per_run["rollouts_per_step"] = per_run["rollouts"] / per_run["optimizer_steps"].clip(lower=1)
    accuracy = run_summaries(result).set_index(["method", "seed"])["pass@1"]
    if reference not in result.methods:
        raise ValueError(f"reference method {reference!r} is not in the study; have {list(result.methods)}")
    start = accuracy.xs(reference, level="method")  # the reference's pass@1 per seed
    per_run["pass@1"] = accuracy.reindex(per_run.index)
    per_run["gain"] = per_run["pass@1"] - start.reindex(per_run.index.get_level_values("seed")).to_numpy()
    per_run["gain_per_million_tokens"] = per_run["gain"] / (per_run["tokens"] / 1e6)
    columns = ["rollouts_per_step", "tokens", "optimizer_steps", "pass@1", "gain", "gain_per_million_tokens"]
    grouped = per_run.groupby(level="method", sort=False)[columns]
    table = grouped.mean().join(grouped.std(ddof=1).add_suffix("_sd"))
    table = table.rename(columns={"tokens": "tokens_per_run", "tokens_sd": "tokens_per_run_sd"})
    table["n_seeds"] = grouped.size()
    return table.reset_index()
