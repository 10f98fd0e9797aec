"""The synthesis of the five reports: every method row on one footing, and every headline claim's verdict.

The rows fall in two blocks, each run from its own starting policy on the same held-out tasks and seeds
(``study.synthesis_rows``): ``MAIN``, on the embedded policy, and ``SEARCH``, report 003's rows on the
search-style policy. A row is measured against the uniform RLOO row of its own block and reward
(``uniform_reference``) and against the controls its report names (``CONTRASTS_*``). The claims come from
the ``CLAIMS_*`` dicts of ``study.methods``, their one source of truth (``all_claims``), and are judged in
``study.synthesis_claims``. Here: every row in one table (``joint_summary``) and the paired comparisons
(``joint_paired``). The cross-report questions and the cost of each row are in ``study.synthesis_tables``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdown_study.reporting.references import PAPER_MODEL
from countdown_study.study.compare import compare
from countdown_study.study.methods import StudyResult
from countdown_study.study.synthesis_claims import (
    CLAIM_SETS,
    HEADLINE_METRICS,
    HOME_BLOCK,
    OOD_METRIC,
    REPORTED_AS,
    SELECTED,
    SWEEP_METHODS,
    VERDICT_COLUMNS,
    Claim,
    all_claims,
    all_verdicts,
    claim_row,
    honest_verdicts,
    ood_verdicts,
    selection_verdicts,
    their_numbers,
    verdict_table,
)
from countdown_study.study.synthesis_rows import (
    BINARY_UNIFORM,
    BLOCK_ROWS,
    CONTROLS,
    MAIN,
    MAIN_METHODS,
    OWN_CONTRASTS,
    SEARCH,
    SEARCH_METHODS,
    UNIFORM_AGAINST,
    WHOLE_ROLLOUT_UNIFORM,
    Rows,
    against,
    block_model,
    blocks,
    contrasts,
    joint_meta,
    labelled,
    report_of,
    uniform_reference,
)
from countdown_study.study.tables import paired_table, problem_matrix, summary_table

__all__ = [
    "BINARY_UNIFORM",
    "BLOCK_ROWS",
    "CLAIM_SETS",
    "CONTROLS",
    "Claim",
    "HEADLINE_METRICS",
    "HOME_BLOCK",
    "INTERVAL_METRICS",
    "MAIN",
    "MAIN_METHODS",
    "OOD_METRIC",
    "OWN_CONTRASTS",
    "PAIRED_METRICS",
    "PAPER_MODEL",
    "REPORTED_AS",
    "Rows",
    "SEARCH",
    "SEARCH_METHODS",
    "SELECTED",
    "SUMMARY_METRICS",
    "SWEEP_METHODS",
    "UNIFORM_AGAINST",
    "VERDICT_COLUMNS",
    "WHOLE_ROLLOUT_UNIFORM",
    "against",
    "all_claims",
    "all_verdicts",
    "block_model",
    "block_summary",
    "blocks",
    "claim_row",
    "contrasts",
    "honest_verdicts",
    "joint_meta",
    "joint_paired",
    "joint_summary",
    "labelled",
    "level_interval",
    "ood_verdicts",
    "report_of",
    "selection_verdicts",
    "their_numbers",
    "uniform_reference",
    "verdict_table",
]

# ---------------------------------------------------------------------------------------------------
# Every row in one table, and the paired comparisons
# ---------------------------------------------------------------------------------------------------

SUMMARY_METRICS = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "avg_pass@k", "mean_score",
                   "exact_rate")  # fmt: skip
"""The metrics of the joint summary (each with its seed s.d.)."""
INTERVAL_METRICS = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "mean_score")
"""The summary metrics that are means of per-task values, each given a seed-aware interval (the exact rate's
would be pass@1's: per task they are equal)."""
PAIRED_METRICS = ("pass@1", "pass@16", "mean_score")
"""The metrics of the paired comparisons."""


def level_interval(values: np.ndarray, seed: int = 0, n_resamples: int = 5000) -> tuple[float, float]:
    """Seed-aware 95% interval of a method's mean of one metric, ``values`` ``(tasks, seeds)``: the study's
    comparison (``compare``: seeds and tasks) of the method against zero."""
    c = compare(values, np.zeros_like(values), seed, n_resamples)
    return c.ci_low, c.ci_high


def block_summary(result: StudyResult, block: str, n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """``summary_table`` of one block's rows: ``SUMMARY_METRICS`` with seed s.d. and, for
    ``INTERVAL_METRICS``, ``<metric>_low`` / ``<metric>_high`` (``level_interval``)."""
    summary = summary_table(result)
    columns = ["method"]
    for metric in (m for m in SUMMARY_METRICS if m in summary):
        columns += [metric, f"{metric}_sd"]
        if metric in INTERVAL_METRICS:
            bounds = [
                level_interval(problem_matrix(result, m, metric), seed, n_resamples)
                for m in summary["method"]
            ]
            summary[f"{metric}_low"], summary[f"{metric}_high"] = zip(*bounds, strict=True)
            columns += [f"{metric}_low", f"{metric}_high"]
    return labelled(summary[[*columns, "n_seeds"]], block, result)


def joint_summary(results: Mapping[str, StudyResult], n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Every row of every block in one table (``block_summary``), labelled by block, model and report."""
    tables = [block_summary(result, block, n_resamples, seed) for block, result in results.items()]
    return pd.concat(tables, ignore_index=True)


def joint_paired(
    results: Mapping[str, StudyResult],
    metrics: Sequence[str] = PAIRED_METRICS,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """``paired_table`` of every block's ``contrasts``, with ``block``, ``model``, ``report`` (of ``a``),
    ``against`` (``UNIFORM_AGAINST``, a report's control or another row), ``a`` and ``b`` in front;
    ``verdict`` judges the contrasts a report claims (``all_claims``) and orders the others."""
    tables = []
    for block, result in results.items():
        pairs = contrasts(block)
        claimed = {c.key: c.sign for c in all_claims() if c.block == block}
        table = paired_table(result, pairs, metrics, n_resamples, seed, claims=claimed)
        a, b = ([pair[i] for pair in pairs for _ in metrics] for i in (0, 1))  # paired_table's row order
        table.insert(0, "b", b)
        table.insert(0, "a", a)
        table.insert(0, "against", [against(block, x, y) for x, y in zip(a, b, strict=True)])
        tables.append(labelled(table, block, result, method="a"))
    return pd.concat(tables, ignore_index=True)
