"""Report 002's observation log and the vocabulary of its analyses (``study.fsc_analysis``).

A pandas table with one row per observed example per observation: every probe group and every
training-batch group of a run, one row per prompt in prompt order (a task drawn twice in one batch gives
two rows). The feature-space sampler keeps it (``samplers.observations``, whose ``observation_rows``
builds the rows of one step from its ``(P, G)`` arrays) and the run store holds it as
``tables/sampler_observations.parquet``; its columns (``LOG_COLUMNS``) are described there.

``with_features`` joins the task's Difficulty Vector columns (``DV_COLUMNS``) by ``task_index``.
Derived, never stored: ``fail_rate = (n - n_correct) / n`` (the report's ``P(r < 1)``: partial credit
counts as a failure) and success ``n_correct / n``; ``difficulty_band`` gives Table 6's band of a failure
rate and ``bin_values`` a DV field's bins.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from countdown_study.countdown.features import DV_COLUMNS

BANDS = ("solved", "easy", "edge", "hard", "impossible")
"""Table 6's difficulty bands of the failure rate, easiest first."""
BAND_EDGES = (0.1, 0.3, 0.7, 0.9)
"""Failure rates between the bands (Table 6)."""
EDGE_TARGET = 0.5
"""The edge target tau of the report's Eq. (1): the success rate of maximal RLOO signal."""


# ---------------------------------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------------------------------


def _require(log: pd.DataFrame, columns: Iterable[str], caller: str) -> None:
    """Raise naming the columns ``caller`` needs that ``log`` lacks, or when ``log`` is empty."""
    missing = [c for c in columns if c not in log.columns]
    if missing:
        have = sorted(str(c) for c in log.columns)
        raise ValueError(f"{caller}: the observation log lacks column(s) {missing}; it has {have}")
    if log.empty:
        raise ValueError(f"{caller}: the observation log is empty")


def with_features(log: pd.DataFrame, dv_table: pd.DataFrame) -> pd.DataFrame:
    """``log`` with the ``DV_COLUMNS`` of ``dv_table`` joined by ``task_index`` (rows and order kept).

    ``dv_table`` is keyed by its ``task_index`` column when it has one, else by its index (the row of
    ``difficulty_vectors`` of the pool is the pool index). The DV columns it has are joined.
    """
    _require(log, ("task_index",), "with_features")
    table = dv_table.set_index("task_index") if "task_index" in dv_table.columns else dv_table
    columns = [c for c in DV_COLUMNS if c in table.columns]
    if not columns:
        raise ValueError(f"with_features: dv_table has none of the DV columns {list(DV_COLUMNS)}")
    clash = [c for c in columns if c in log.columns]
    if clash:
        raise ValueError(f"with_features: the log already has DV column(s) {clash}")
    unknown = np.setdiff1d(log["task_index"].unique(), table.index.to_numpy())
    if unknown.size:
        raise ValueError(f"with_features: task_index values {unknown[:5].tolist()} are not in dv_table")
    return log.join(table[columns], on="task_index")


def fail_rate(log: pd.DataFrame) -> np.ndarray:
    """Per-row failure rate ``(n - n_correct) / n``, the report's ``fail_rate = P(r < 1)``.  # (R,)

    Computed as a ratio of counts, so 1 failure in 10 is the float 0.1 and lands on Table 6's 0.1 edge.
    """
    _require(log, ("n", "n_correct"), "fail_rate")
    n, n_correct = log["n"].to_numpy(dtype=float), log["n_correct"].to_numpy(dtype=float)  # (R,), (R,)
    if np.any(n < 1) or np.any(n_correct < 0) or np.any(n_correct > n):
        raise ValueError("fail_rate: every row needs n >= 1 and 0 <= n_correct <= n")
    return (n - n_correct) / n


def difficulty_band(fail: np.ndarray) -> np.ndarray:
    """Table 6's band of each failure rate.  # (R,) -> (R,) str

    solved [0, 0.1), easy [0.1, 0.3), edge [0.3, 0.7], hard (0.7, 0.9], impossible (0.9, 1]. The report
    gives only "< 0.1", "0.1-0.3", ...; here a rate on an edge goes to the band nearer 0.5, so the bands
    mirror under fail <-> success.
    """
    fail = np.asarray(fail, dtype=float)
    position = sum(((fail >= e) if e < EDGE_TARGET else (fail > e)).astype(int) for e in BAND_EDGES)
    return np.asarray(BANDS)[position]


def bin_values(values: pd.Series, max_levels: int = 8, n_bins: int = 5) -> pd.Series:
    """A DV field's bin per row: the value itself when the field takes at most ``max_levels`` values,
    else one of ``n_bins`` quantile bins over the rows (``pd.qcut``; tied edges merged). The report bins
    each field without saying how; its fields are discrete except target magnitude and nps."""
    if values.nunique() <= max_levels:
        return values
    return pd.qcut(values, n_bins, duplicates="drop")
