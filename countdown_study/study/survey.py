"""The task survey of notebook 01: Difficulty Vectors with tiers and levels, and their summaries.

``survey_table`` runs the exact solver over a task list (report 002's Difficulty Vector plus report
004's tier and our solver-based easy / medium / hard level); ``by_num_count``, ``by_tier`` and
``by_level`` are pure group-bys of that table, one row per group, in the order of ``countdown.TIERS`` /
``countdown.LEVELS``. ``by_level_pools`` summarises levels given as pools, such as report 001's own
nested levels (``samplers.sliding_window.level_pools``, the default of its controller). Needs no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdown_study import countdown
from countdown_study.countdown import Task

SOLUTION_CAP = 128
"""``countdown.difficulty_vectors``' default cap on ``solution_count``: a count at the cap means "this
many or more"."""


def survey_table(tasks: Sequence[Task], workers: int = 1) -> pd.DataFrame:
    """One row per task: its Difficulty Vector (``countdown.DV_COLUMNS``) plus ``tier`` and ``level``
    (``countdown.level_labels``: our solver-based partition, a variant of report 001's nested levels).

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
    """Per level of the table's ``level`` column (our solver-based partition): tasks, median solution
    count and ``share`` of all tasks.

    Rows follow ``countdown.LEVELS`` (easy, medium, hard); shares sum to 1.
    """
    table = (
        dv.assign(level=_ordered(dv["level"], countdown.LEVELS))
        .groupby("level", observed=True)
        .agg(tasks=("target", "size"), solutions_median=("solution_count", "median"))
        .reset_index()
    )
    return table.assign(level=table["level"].astype(str), share=table["tasks"] / len(dv))


def by_level_pools(dv: pd.DataFrame, pools: Mapping[str, Sequence[int]]) -> pd.DataFrame:
    """Per level of ``pools`` (level -> row positions in ``dv``): tasks, median solution count and
    ``share`` of all tasks, the columns of ``by_level``.

    For report 001's own levels pass ``samplers.sliding_window.level_pools(tasks)``: easy = the 3-number
    tasks, medium = the 4-number tasks, hard = every task (nested, as its counts 240,608 + 249,706 =
    490,314 say), so shares sum past 1. Rows follow ``countdown.LEVELS``, then other levels.
    """
    order = [
        *(lv for lv in countdown.LEVELS if lv in pools),
        *(lv for lv in pools if lv not in countdown.LEVELS),
    ]
    counts = dv["solution_count"].to_numpy()
    rows = []
    for level in order:
        members = np.asarray(pools[level], dtype=np.int64)
        if members.size and (members.min() < 0 or members.max() >= len(dv)):
            raise ValueError(f"level {level!r} holds positions outside the table's {len(dv)} rows")
        median = float(np.median(counts[members])) if members.size else float("nan")
        rows.append({"level": level, "tasks": int(members.size), "solutions_median": median,
                     "share": members.size / len(dv)})  # fmt: skip
    return pd.DataFrame(rows, columns=["level", "tasks", "solutions_median", "share"])


def _ordered(labels: pd.Series, order: Sequence[str]) -> pd.Categorical:
    """``labels`` as a categorical in ``order`` (labels outside it sort last, alphabetically)."""
    extra = sorted(set(labels) - set(order))
    return pd.Categorical(labels, categories=[*order, *extra], ordered=True)
