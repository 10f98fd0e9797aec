"""Report 002's Section 5.2 on the DV fields: which predict failure (Spearman's rho per run group) and
what two of them add together (the failure-rate spread over their joint bins)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from countdown_study.study.fsc_log import _require, bin_values, fail_rate

# ---------------------------------------------------------------------------------------------------
# Section 5.2: which DV fields predict failure, and their interactions
# ---------------------------------------------------------------------------------------------------

SPEARMAN_FIELDS = ("num_count", "shortest_operand_count", "all_numbers_required", "nps_log1p",
                   "shortest_expression_depth", "target_log10", "op_distinct_min")  # fmt: skip
"""DV fields of Section 5.2's Spearman analysis: the five it names (num_count rho ~ 0.5, then the solver
fields), then target magnitude and operator uniqueness."""


def _groups(log: pd.DataFrame, by: str | None) -> list[tuple[object, pd.DataFrame]]:
    """``(label, rows)`` per value of column ``by`` in order of appearance; the whole log when None."""
    if by is None:
        return [(None, log)]
    _require(log, (by,), f"grouping by {by!r}")
    return list(log.groupby(by, sort=False))


def failure_spearman(
    log: pd.DataFrame, fields: Sequence[str] = SPEARMAN_FIELDS, *, by: str | None = "method"
) -> pd.DataFrame:
    """Section 5.2: Spearman's rho between each DV field and the per-row failure rate, per run group.

    One row per (group, field): ``by`` (the group's label, left out when ``by`` is None), ``field``,
    ``n`` (rows with the field's value), ``rho`` (average ranks for ties; NaN when either side is
    constant) and its two-sided ``p_value``. Rows weigh equally, as in Table 5: the report runs the
    analysis over each run's observation log (dynamic, static-once and kernel runs).
    """
    _require(log, ("n", "n_correct", *fields), "failure_spearman")
    rows = []
    for label, group in _groups(log.reset_index(drop=True), by):
        fail = fail_rate(group)  # (R,)
        for field in fields:
            values = pd.to_numeric(group[field], errors="coerce").to_numpy(dtype=float)  # (R,)
            kept = ~np.isnan(values)
            x, y = values[kept], fail[kept]
            if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
                rho, p = float("nan"), float("nan")
            else:
                rho, p = (float(v) for v in scipy_stats.spearmanr(x, y))
            row = {} if by is None else {by: label}
            rows.append({**row, "field": field, "n": int(kept.sum()), "rho": rho, "p_value": p})
    return pd.DataFrame(rows)


def value_range(table: pd.DataFrame, keys: Sequence[str], value: str) -> pd.DataFrame:
    """The range of ``value`` across the rows sharing ``keys`` (the report's "rho ~ 0.22-0.31" across
    runs): one row per key, in order of appearance, with ``<value>_low``, ``<value>_high`` (NaN values
    left out) and ``groups`` (rows with a value)."""
    _require(table, (*keys, value), "value_range")
    grouped = table.groupby(list(keys), sort=False)[value]
    return grouped.agg(**{f"{value}_low": "min", f"{value}_high": "max", "groups": "count"}).reset_index()


def _cell_rates(fail: pd.Series, bins: list[pd.Series], min_rows: int) -> pd.Series:
    """Mean failure per cell of ``bins`` (one or more binnings of the same rows), cells of at least
    ``min_rows`` rows only."""
    cells = fail.groupby(bins, observed=True).agg(["mean", "size"])
    return cells.loc[cells["size"] >= min_rows, "mean"]


def _spread(rates: pd.Series) -> float:
    return float(rates.max() - rates.min()) if len(rates) >= 2 else float("nan")


def pairwise_interactions(
    log: pd.DataFrame,
    fields: Sequence[str] = SPEARMAN_FIELDS,
    *,
    by: str | None = "method",
    min_rows: int = 30,
    max_levels: int = 8,
    n_bins: int = 5,
) -> pd.DataFrame:
    """Section 5.2's pairwise interactions: the failure-rate spread over the joint bins of two DV fields.

    Each field is binned as in ``failure_by_bin`` (``bin_values``); the rows of a pair fall into the
    cells of both binnings, and a cell counts when it holds at least ``min_rows`` rows. One row per
    (group, pair), largest spread first within a group: ``by`` (left out when None), ``field_a``,
    ``field_b``, ``cells``, ``spread`` (highest minus lowest cell failure rate; NaN below two cells),
    ``low_cell`` and ``high_cell`` (those two rates) and ``spread_a``, ``spread_b``, the spread of each
    field alone over its own bins (same ``min_rows``): a pair's spread above both is what its joint
    cells add. The report names no formula or cell minimum; its strongest pairs are nps x
    shortest_operand_count (spread ~0.80-0.82) and nps x shortest_expression_depth (~0.77).
    """
    _require(log, ("n", "n_correct", *fields), "pairwise_interactions")
    if min_rows < 1:
        raise ValueError(f"pairwise_interactions: min_rows must be >= 1, got {min_rows}")
    rows = []
    for label, group in _groups(log.reset_index(drop=True), by):
        group = group.reset_index(drop=True)
        fail = pd.Series(fail_rate(group))  # (R,)
        binned = {f: bin_values(group[f], max_levels, n_bins).reset_index(drop=True) for f in fields}
        alone = {f: _spread(_cell_rates(fail, [binned[f]], min_rows)) for f in fields}
        pairs = []
        for a, b in combinations(fields, 2):
            rates = _cell_rates(fail, [binned[a], binned[b]], min_rows)
            low, high = (float(rates.min()), float(rates.max())) if len(rates) else (float("nan"),) * 2
            pairs.append({"field_a": a, "field_b": b, "cells": len(rates), "spread": _spread(rates),
                          "low_cell": low, "high_cell": high, "spread_a": alone[a], "spread_b": alone[b]})  # fmt: skip
        pairs.sort(key=lambda r: -r["spread"] if np.isfinite(r["spread"]) else np.inf)
        rows.extend(({} if by is None else {by: label}) | r for r in pairs)
    return pd.DataFrame(rows)
