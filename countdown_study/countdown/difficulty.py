"""Difficulty labels of Countdown tasks: report 000's number count, report 004's tiers, and our
solver-based partition into report 001's level names.

Report 001's own levels are nested (easy = the 3-number tasks, medium = the 4-number tasks, hard = every
task: its counts 240,608 + 249,706 = 490,314); the study uses them by default
(``samplers.sliding_window.level_pools``). ``level_labels`` is ours, a partition from solver structure,
run as a variant. Tiers and our levels need report 003's solution count of the 4-number tasks
(``solution_counts``, from the batched Difficulty Vector) unless the caller passes the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from countdown_study.countdown.features import difficulty_vectors
from countdown_study.countdown.task import Task

TIERS = ("T0", "T1", "T2", "T3", "OOD")
"""Report 004's tiers, made a partition by ``tier_labels``."""
LEVELS = ("easy", "medium", "hard")
"""Report 001's level names, easiest first. Its levels are nested (3-number tasks / 4-number tasks /
every task; ``samplers.sliding_window.level_pools``, the study's default); ``level_labels`` assigns the
same names by our solver-based partition, a variant."""


@dataclass(frozen=True)
class TierRule:
    """Thresholds of ``tier_labels`` (defaults: ours; report 004 gives T1 <= 75 and T2 <= 150)."""

    t0_max_target: int = 50
    """A task with 3 or fewer numbers is T0 up to this target, T1 above."""
    t1_max_target: int = 75
    """A dense 4-number task is T1 up to this target."""
    t2_max_target: int = 150
    """A dense 4-number task is T2 up to this target, T3 above."""
    sparse_max_solutions: int = 2
    """A 4-number task with at most this many solutions (``solver.solution_count``) is sparse: T3."""


@dataclass(frozen=True)
class LevelRule:
    """Threshold of ``level_labels``."""

    hard_max_solutions: int = 4
    """A 4-number task with at most this many solutions is hard, with more it is medium."""


def solution_counts(tasks: Sequence[Task], cap: int = 128) -> np.ndarray:
    """Report 003's solution count per task, capped at ``cap``.  # (N,) int

    From ``features.difficulty_vectors`` (batched).
    """
    if not tasks:
        return np.zeros(0, dtype=np.int64)
    counts = difficulty_vectors(list(tasks), cap=cap)["solution_count"]
    return counts.to_numpy().astype(np.int64)


def _four_number_counts(tasks: Sequence[Task], counts: Sequence[int] | np.ndarray | None) -> np.ndarray:
    """Solution counts where the labels need them (4-number tasks), -1 elsewhere.  # (N,)"""
    if counts is not None:
        if len(counts) != len(tasks):
            raise ValueError(f"got {len(counts)} solution counts for {len(tasks)} tasks")
        return np.asarray(counts, dtype=np.int64)
    result = np.full(len(tasks), -1, dtype=np.int64)
    rows = [i for i, task in enumerate(tasks) if task.num_count == 4]
    result[rows] = solution_counts([tasks[i] for i in rows])
    return result


def num_count_labels(tasks: Sequence[Task]) -> np.ndarray:
    """Report 000's buckets: the number count as text ("3" easy, "4" hard).  # (N,) str"""
    return np.array([str(task.num_count) for task in tasks], dtype=str)


def tier_labels(
    tasks: Sequence[Task],
    counts: Sequence[int] | np.ndarray | None = None,
    rule: TierRule = TierRule(),
) -> np.ndarray:
    """Report 004's tiers as a partition: one of ``TIERS`` per task.  # (N,) str

    Report 004's tiers overlap (T0 3 numbers, small targets; T1 3-4 numbers, target <= 75; T2 4
    numbers, target <= 150; T3 4 numbers, larger or sparse targets). Ours, first rule that applies:

    - OOD: 5 or more numbers;
    - 3 or fewer numbers: T0 when target <= ``t0_max_target`` (50), else T1;
    - 4 numbers: T3 when sparse (solution count <= ``sparse_max_solutions``, 2) or target >
      ``t2_max_target`` (150); else T1 when target <= ``t1_max_target`` (75); else T2.

    On generated data (targets 10..100) this gives about 22% T0, 53% T1, 10% T2, 15% T3.
    ``counts`` (solution counts aligned with ``tasks``) are computed for the 4-number tasks when not given.
    """
    counts = _four_number_counts(tasks, counts)
    sizes = np.array([task.num_count for task in tasks], dtype=np.int64)  # (N,)
    targets = np.array([task.target for task in tasks], dtype=np.int64)  # (N,)
    four = sizes == 4
    sparse_or_large = four & ((counts <= rule.sparse_max_solutions) | (targets > rule.t2_max_target))
    conditions = [
        sizes >= 5,
        (sizes <= 3) & (targets <= rule.t0_max_target),
        sizes <= 3,
        sparse_or_large,
        four & (targets <= rule.t1_max_target),
    ]
    return np.select(conditions, ["OOD", "T0", "T1", "T3", "T1"], default="T2").astype(str)


def level_labels(
    tasks: Sequence[Task],
    counts: Sequence[int] | np.ndarray | None = None,
    rule: LevelRule = LevelRule(),
) -> np.ndarray:
    """Our partition of tasks into report 001's level names, from solver structure (not report 001's
    levels): one of ``LEVELS`` per task.  # (N,)

    Report 001 does not state its rule, but its bucket sizes (240,608 / 249,706 / 490,314) are the
    3-number tasks, the 4-number tasks and every task: nested levels, the study's default
    (``samplers.sliding_window.level_pools``). This partition is the variant row "Sliding window (solver
    levels)":

    - easy: 3 or fewer numbers;
    - medium: 4 numbers with more than ``hard_max_solutions`` (4) solutions (report 003's count);
    - hard: 4 numbers with at most ``hard_max_solutions`` solutions, or 5 or more numbers.

    On generated data this gives about 50% easy, 31% medium, 19% hard.
    """
    counts = _four_number_counts(tasks, counts)
    sizes = np.array([task.num_count for task in tasks], dtype=np.int64)  # (N,)
    conditions = [sizes <= 3, (sizes == 4) & (counts > rule.hard_max_solutions)]
    return np.select(conditions, ["easy", "medium"], default="hard").astype(str)
