"""Deduplication and disjoint splits of Countdown tasks by canonical key (sorted numbers, target)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from countdown_study.countdown.task import Task


def dedupe(tasks: Sequence[Task]) -> list[Task]:
    """The first task of each canonical key, in the original order (reordered duplicates removed)."""
    seen: set[tuple[tuple[int, ...], int]] = set()
    unique: list[Task] = []
    for task in tasks:
        if task.key not in seen:
            seen.add(task.key)
            unique.append(task)
    return unique


def _key_rows(tasks: Sequence[Task]) -> np.ndarray:
    """Canonical keys as integer rows: sorted numbers, -1 padding, target.  # (N, max count + 1)"""
    width = max((task.num_count for task in tasks), default=0)
    rows = [sorted(task.nums) + [-1] * (width - task.num_count) + [task.target] for task in tasks]
    return np.array(rows, dtype=np.int64).reshape(len(tasks), width + 1)


def split_tasks(
    tasks: Sequence[Task], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> tuple[list[Task], ...]:
    """Disjoint splits (train, val, test by default) by canonical key, so no key lands in two splits.

    The distinct keys (sorted numbers and target, as sorted integer rows) are permuted by
    ``numpy.random.default_rng(seed)`` and cut at the rounded cumulative ``fractions`` (fractions of
    keys, not of rows); every task follows its key, in the original order. The result depends only
    on the set of tasks and the seed.
    """
    if not fractions or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {tuple(fractions)}")
    keys, key_of_task = np.unique(_key_rows(tasks), axis=0, return_inverse=True)  # (K, w), (N,)
    position = np.empty(len(keys), dtype=np.int64)
    position[np.random.default_rng(seed).permutation(len(keys))] = np.arange(len(keys))  # (K,)
    ends = np.round(np.cumsum(fractions) * len(keys)).astype(int)  # (S,)
    ends[-1] = len(keys)
    part_of_key = np.searchsorted(ends, position, side="right")  # (K,)
    parts: tuple[list[Task], ...] = tuple([] for _ in fractions)
    for task, part in zip(tasks, part_of_key[key_of_task.reshape(-1)].tolist(), strict=True):
        parts[part].append(task)
    return parts
