"""The observation log a sampler keeps of what it saw: one row per observed group, per observation.

Report 002's samplers log every probe group and every training-batch group; the training loop writes a
sampler's logs into the run store (``Sampler.records``, ``tables/sampler_<name>.parquet``), and
``study.fsc_analysis`` analyses them. Columns (``LOG_COLUMNS``):

- ``step`` (int): the training step of the observation (the probe before the step's update, or the
  step's training batch).
- ``source`` (str): ``"probe"`` (a uniformly drawn prompt, rolled out but never trained on) or
  ``"batch"`` (a prompt of the step's training batch, drawn from the curriculum distribution).
- ``task_index`` (int): the task's index in the training pool (the row of ``difficulty_vectors``).
- ``n`` (int): rollouts in the group, G.
- ``n_correct`` (int): rollouts whose final answer verifies (``Grades.correct``), 0 to n.
- ``reward_mean`` (float): mean of the G rewards.
- ``reward_var`` (float): within-group variance of the G rewards, population form (ddof=0): the
  ``Var(r)`` of report 002's Eq. (2), zero when every rollout of the group gets the same reward.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

LOG_COLUMNS = ("step", "source", "task_index", "n", "n_correct", "reward_mean", "reward_var")
"""The observation log's columns, in order (module docstring)."""
SOURCES = ("probe", "batch")
"""Values of ``source``."""


def observation_records(
    step: int, source: str, indices: Sequence[int] | np.ndarray, rewards: np.ndarray, correct: np.ndarray
) -> list[dict]:
    """The log rows of one observation as plain (JSON-able) dicts: P groups, ``rewards`` and ``correct``
    ``(P, G)``."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    rewards, correct = np.asarray(rewards, dtype=float), np.asarray(correct, dtype=bool)  # (P, G) each
    task_index = np.asarray(indices, dtype=np.int64)  # (P,)
    if rewards.ndim != 2 or rewards.shape != correct.shape or rewards.shape[1] < 1:
        raise ValueError(
            f"rewards and correct must be (P, G >= 1) alike; got {rewards.shape}, {correct.shape}"
        )
    if task_index.shape != (rewards.shape[0],):
        raise ValueError(f"indices must be (P,) = ({rewards.shape[0]},), got shape {task_index.shape}")
    if np.any(task_index < 0):
        raise ValueError(
            "indices must be pool indices (>= 0): a task the sampler made has no Difficulty Vector"
        )
    group = rewards.shape[1]
    n_correct, means, variances = correct.sum(axis=1), rewards.mean(axis=1), rewards.var(axis=1)  # (P,) each
    return [
        {"step": int(step), "source": source, "task_index": int(i), "n": group, "n_correct": int(c),
         "reward_mean": float(m), "reward_var": float(v)}
        for i, c, m, v in zip(task_index.tolist(), n_correct.tolist(), means.tolist(), variances.tolist(), strict=True)
    ]  # fmt: skip


def observation_rows(
    step: int, source: str, indices: Sequence[int] | np.ndarray, rewards: np.ndarray, correct: np.ndarray
) -> pd.DataFrame:
    """``observation_records`` as a table with ``LOG_COLUMNS``."""
    records = observation_records(step, source, indices, rewards, correct)
    return pd.DataFrame(records, columns=list(LOG_COLUMNS))
