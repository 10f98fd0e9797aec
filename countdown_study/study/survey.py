"""The task survey of notebook 01: Difficulty Vectors with tiers and levels, and their summaries.

``survey_table`` runs the exact solver over a task list (report 002's Difficulty Vector plus report
004's tier and the easy / medium / hard level); ``by_num_count``, ``by_tier`` and ``by_level`` are pure
group-bys of that table, one row per group, in the order of ``countdown.TIERS`` / ``countdown.LEVELS``.
Needs no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from countdown_study import countdown
from countdown_study.countdown import Task

SOLUTION_CAP = 128
"""``countdown.difficulty_vectors``' default cap on ``solution_count``: a count at the cap means "this
many or more"."""


def survey_table(tasks: Sequence[Task], workers: int = 1) -> pd.DataFrame:
    """One row per task: its Difficulty Vector (``countdown.DV_COLUMNS``) plus ``tier`` and ``level``.

    Tiers and levels reuse the table's own solution counts, so the solver runs once per task.
    """
    dv = countdown.difficulty_vectors(list(tasks), workers=workers)
    counts = dv["solution_count"].to_numpy()
    dv["tier"] = countdown.tier_labels(tasks, counts=counts)
    dv["level"] = countdown.level_labels(tasks, counts=counts)
    return dv


def by_num_count(dv: pd.DataFrame, cap: int = SOLUTION_CAP) -> pd.DataFrame:
    """Per number count: tasks, mean target, median solution count and the shape of the distribution.

    Columns: ``num_count``, ``tasks``, ``target_mean``, ``solutions_median``, ``single_solution`` (share
    of tasks with exactly one solution), ``at_cap`` (share whose count reached ``cap``), ``depth_mean``
    (mean ``shortest_expression_depth``), ``needs_fraction`` (share with ``requires_fraction``).
    """
    return (
        dv.groupby("num_count")
        .agg(
            tasks=("target", "size"),
            target_mean=("target", "mean"),
            solutions_median=("solution_count", "median"),
            single_solution=("solution_count", lambda s: (s == 1).mean()),
            at_cap=("solution_count", lambda s: (s >= cap).mean()),
            depth_mean=("shortest_expression_depth", "mean"),
            needs_fraction=("requires_fraction", "mean"),
        )
        .reset_index()
    )


def by_tier(dv: pd.DataFrame) -> pd.DataFrame:
    """Per (tier, number count): tasks, median solution count, mean target and ``share`` of all tasks.

    Rows follow ``countdown.TIERS`` (T0, T1, T2, T3, OOD), then the number count; shares sum to 1.
    """
    table = (
        dv.assign(tier=_ordered(dv["tier"], countdown.TIERS))
        .groupby(["tier", "num_count"], observed=True)
        .agg(
            tasks=("target", "size"),
            solutions_median=("solution_count", "median"),
            target_mean=("target", "mean"),
        )
        .reset_index()
    )
    return table.assign(tier=table["tier"].astype(str), share=table["tasks"] / len(dv))


def by_level(dv: pd.DataFrame) -> pd.DataFrame:
    """Per level: tasks, median solution count and ``share`` of all tasks.

    Rows follow ``countdown.LEVELS`` (easy, medium, hard); shares sum to 1.
    """
    table = (
        dv.assign(level=_ordered(dv["level"], countdown.LEVELS))
        .groupby("level", observed=True)
        .agg(tasks=("target", "size"), solutions_median=("solution_count", "median"))
        .reset_index()
    )
    return table.assign(level=table["level"].astype(str), share=table["tasks"] / len(dv))


def _ordered(labels: pd.Series, order: Sequence[str]) -> pd.Categorical:
    """``labels`` as a categorical in ``order`` (labels outside it sort last, alphabetically)."""
    extra = sorted(set(labels) - set(order))
    return pd.Categorical(labels, categories=[*order, *extra], ordered=True)
