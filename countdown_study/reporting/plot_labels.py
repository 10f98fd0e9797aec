"""Readable axis labels of table and step-log columns, and a reader's order of group labels.

``label`` names a column (``LABELS``, report 002's refresh diagnostics, else the column name in words);
``ordered_labels`` sorts group labels as a reader expects (tiers, levels and categories in their own order,
numbers by value, text with its numbers by value).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

LABELS = {
    "mean_success": "probe success (mean)",
    "mastered_share": "share mastered (success > 0.9)",
    "edge_mean_shortest_operand_count": "edge rows: shortest-solution operands",
    "edge_mean_four_numbers": "edge rows: share with 4 numbers",
    "reward_mean": "training-batch reward (mean)",
    "exact_rate": "training-batch exact rate",
    "mixed_groups": "groups with mixed outcomes",
    "sampler_level": "controller level",
    "sampler_window_mean": "recent pass rate (window mean)",
    "sampler_ema_3": "success EMA, 3-number bucket",
    "sampler_ema_4": "success EMA, 4-number bucket",
    "sampler_p_3": "probability of the 3-number bucket",
    "sampler_p_4": "probability of the 4-number bucket",
    "sampler_unlocked": "hard bucket unlocked",
    "sampler_unknown": "prompts never observed",
    "sampler_too_hard": "prompts too hard",
    "sampler_learnable": "prompts learnable",
    "sampler_too_easy": "prompts too easy",
    "filter_rounds": "batches generated per step",
    "discarded_groups": "groups discarded per step",
    "generated_exact_rate": "exact rate of every generated group",
    "num_count": "numbers in the task",
    "tier": "difficulty tier",
    "level": "difficulty level",
    "nps_log1p": "log(1 + valid solutions)",
    "shortest_expression_depth": "depth of the shallowest solution",
    "shortest_operand_count": "fewest numbers reaching the target",
    "op_distinct_min": "fewest distinct operators in a solution",
    "solution_count": "distinct solutions (capped at 128)",
    "mean_score": "mean score",
    "well_formed": "well-formed rate",
    "sampler_observed": "prompts observed",
    "sampler_easy": "prompts in the easy pool",
    "sampler_normal": "prompts in the normal pool",
    "sampler_hard": "prompts in the hard pool",
    "sampler_posterior_mean": "posterior mean success (pool mean)",
    "sampler_fail_observed": "failure rate of observed prompts (mean)",
    "sampler_fail_mean": "failure rate, unobserved at the prior (mean)",
    "sampler_entropy": "normalised entropy of the weights",
    "sampler_ess": "effective sample size",
    "sampler_ess_frac": "effective sample size / pool size",
}
"""Axis labels of table and step-log columns (others: ``DIAGNOSTIC_LABELS``' patterns, else the column
name without ``sampler_``, spaces for ``_``)."""
DIAGNOSTIC_LABELS = {
    "tv": "total variation from {}",
    "js": "JS divergence from {}",
    "rho": "Spearman of the weights with {}",
    "overlap": "batch overlap with a draw from {}",
}
"""Report 002's refresh diagnostics (``sampler_<measure>_<reference>``, ``samplers.feature_space``)."""
DIAGNOSTIC_REFERENCES = {"uni": "uniform", "edge": "edge-only", "ff": "feature_failure-only"}
"""The counterfactual distributions the diagnostics compare the active one with."""
LEVEL_NAMES = ("easy", "medium", "hard")
"""Names of the sliding-window controller's levels, by index."""
KNOWN_ORDERS = (
    ("T0", "T1", "T2", "T3", "OOD"),
    LEVEL_NAMES,
    ("too_easy", "learnable", "too_hard", "unknown"),
    ("easy", "hard"),
)
"""Orders of group labels that are not alphabetical (tiers, levels, reward-adaptive categories)."""


def ordered_labels(labels: Sequence) -> list:
    """Distinct labels in a reader's order: a known order (tiers, levels, categories) when every label is
    in one, else numbers by value (``3 < 4 < 10``), else text alphabetically with the numbers in it by
    value (``easiest 30%`` before ``easiest 100%``)."""
    distinct = list(dict.fromkeys(labels))
    for order in KNOWN_ORDERS:
        if all(str(x) in order for x in distinct):
            return sorted(distinct, key=lambda x: order.index(str(x)))
    numeric = pd.to_numeric(pd.Series(distinct, dtype=object), errors="coerce")
    if numeric.notna().all():
        return [distinct[i] for i in np.argsort(numeric.to_numpy(dtype=float), kind="stable")]
    return sorted(distinct, key=_natural_key)


def _natural_key(value) -> tuple:
    """Sort key of a label: its text with each run of digits compared as a number."""
    parts = re.split(r"(\d+)", str(value))
    return tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in parts)


def label(column: str) -> str:
    """A readable axis label for a step-log column."""
    if column in LABELS:
        return LABELS[column]
    name = column.removeprefix("sampler_")
    measure, _, reference = name.rpartition("_")
    if measure in DIAGNOSTIC_LABELS and reference in DIAGNOSTIC_REFERENCES:
        return DIAGNOSTIC_LABELS[measure].format(DIAGNOSTIC_REFERENCES[reference])
    top = re.fullmatch(r"top(\d+)", name)
    if top:
        return f"weight on the heaviest {top.group(1)}% of prompts"
    return name.replace("_", " ")
