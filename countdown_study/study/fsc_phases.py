"""Report 002's analyses over training and per policy: the moving edge of learnability by training
phase (Figure 6), the training diet's hard share, and what a policy's batches hold inside one part of
the pool (Section 5.2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdown_study.study.fsc_log import EDGE_TARGET, _require, bin_values, difficulty_band, fail_rate
from countdown_study.study.stats import wilson_interval

PHASE_NAMES = ("early", "mid", "late")
"""Names of three training phases (Figure 6)."""
REPORT_PHASES = (0.2, 0.5)
"""Where report 002's phases start, as shares of the run (its steps 0-20, 20-50 and 50-100 of 100): the
default phase bounds, steps 12 and 30 of the full preset's 60."""


# ---------------------------------------------------------------------------------------------------
# Figure 6: the moving edge of learnability
# ---------------------------------------------------------------------------------------------------


def training_phase(steps: np.ndarray, bounds: Sequence[float]) -> np.ndarray:
    """Phase of each step: the number of ``bounds`` at or below it (a bound starts a phase).  # (R,)"""
    edges = np.asarray(bounds, dtype=float)
    if edges.ndim != 1 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"phase bounds must be increasing, got {list(bounds)}")
    return np.searchsorted(edges, np.asarray(steps, dtype=float), side="right")


def _phases(log: pd.DataFrame, bounds: Sequence[float] | None) -> tuple[np.ndarray, list[str]]:
    """Each row's phase and the phase names; default bounds: the report's (``REPORT_PHASES``) over the log's
    step range."""
    if bounds is None:
        first, end = float(log["step"].min()), float(log["step"].max()) + 1
        bounds = [first + share * (end - first) for share in REPORT_PHASES]
    names = list(PHASE_NAMES) if len(bounds) == 2 else [f"phase {i}" for i in range(len(bounds) + 1)]
    return training_phase(log["step"].to_numpy(), bounds), names


def _phase_frame(
    log: pd.DataFrame, bounds: Sequence[float] | None, source: str, extra: pd.DataFrame
) -> pd.DataFrame:
    """phase, name, step, success, band and the ``extra`` columns of the rows of ``source``, by position
    (phases from the whole log's steps)."""
    phase, names = _phases(log, bounds)
    fail = fail_rate(log)  # (R,)
    frame = pd.DataFrame({
        "phase": phase, "name": np.asarray(names)[phase], "step": log["step"].to_numpy(),
        "success": log["n_correct"].to_numpy() / log["n"].to_numpy(), "band": difficulty_band(fail),
    })  # fmt: skip
    frame = pd.concat([frame, extra.reset_index(drop=True)], axis=1)
    return frame[(log["source"] == source).to_numpy()]


def edge_profile(
    log: pd.DataFrame,
    fields: Sequence[str] = ("num_count", "shortest_operand_count"),
    *,
    phase_bounds: Sequence[float] | None = None,
    source: str = "probe",
) -> pd.DataFrame:
    """Figure 6: per training phase, mean success, mastered share and the DV profile of the edge rows.

    One row per phase holding rows of ``source``: ``phase``, ``name``, ``first_step``, ``last_step``,
    ``rows``, ``mean_success`` (the report: 0.29 -> 0.45 -> 0.50), ``mastered_share`` (band "solved",
    the report: 0.14 -> 0.42 -> 0.46), ``edge_rows``, ``edge_share`` (band "edge", the report's
    s(x) ~ 0.5 region) and ``edge_mean_<field>``, the mean of each field over the edge rows (the report:
    shortest_operand_count 3.13 -> 3.23 -> 3.28; the mean of a boolean column such as
    ``num_count == 4`` is a share, the report's 0.45 -> 0.54 -> 0.58); NaN in a phase without edge rows.

    Probe rows by default, as the report: fresh measurements free of curriculum-sampling bias. Phases:
    ``phase_bounds`` are the steps that start phases 1, 2, ...; the default cuts the log's step range
    (all sources) where the report's phases start (``REPORT_PHASES``: its 0-20, 20-50, 50-100 of 100 steps,
    at 12 and 30 of a 60-step run).
    """
    _require(log, ("step", "source", "n", "n_correct", *fields), "edge_profile")
    means = [f"edge_mean_{f}" for f in fields]
    frame = _phase_frame(log, phase_bounds, source, log[list(fields)].astype(float).set_axis(means, axis=1))
    frame = frame.assign(mastered=frame["band"] == "solved", edge=frame["band"] == "edge")
    table = frame.groupby(["phase", "name"]).agg(
        first_step=("step", "min"), last_step=("step", "max"), rows=("step", "size"),
        mean_success=("success", "mean"), mastered_share=("mastered", "mean"),
        edge_rows=("edge", "sum"), edge_share=("edge", "mean"),
    )  # fmt: skip
    edge_means = frame[frame["edge"]].groupby("phase")[means].mean()
    return table.reset_index().join(edge_means, on="phase")


def success_by_phase(
    log: pd.DataFrame,
    field: str,
    *,
    phase_bounds: Sequence[float] | None = None,
    source: str = "probe",
    max_levels: int = 8,
    n_bins: int = 5,
) -> pd.DataFrame:
    """Figure 6, by bin: per training phase and bin of ``field``, the success rate, and the edge bin.

    One row per (phase, bin) with rows: ``phase``, ``name``, ``value``, ``rows``, ``success``,
    ``distance`` (``|success - EDGE_TARGET|``) and ``nearest_edge``, true for the one bin of each phase
    whose success sits nearest 0.5 (ties: the lowest bin). Bins come from ``bin_values`` over the whole
    log, so they are the same in every phase; phases and ``source`` as in ``edge_profile``.
    """
    _require(log, ("step", "source", "n", "n_correct", field), "success_by_phase")
    bins = bin_values(log[field], max_levels, n_bins).rename("value").to_frame()
    frame = _phase_frame(log, phase_bounds, source, bins)
    table = frame.groupby(["phase", "name", "value"], observed=True, sort=True).agg(
        rows=("success", "size"), success=("success", "mean")
    )
    table = table.reset_index()
    table["distance"] = (table["success"] - EDGE_TARGET).abs()
    table["nearest_edge"] = table.index.isin(table.groupby("phase")["distance"].idxmin())
    return table


# ---------------------------------------------------------------------------------------------------
# The training diet's hard share
# ---------------------------------------------------------------------------------------------------


def diet_label(difference: float, tolerance: float) -> str:
    """``amplify`` above the pool's hard share by more than ``tolerance``, ``suppress`` below by more,
    else ``preserve``. A difference of the tolerance, up to float rounding (0.55 - 0.5), preserves."""
    slack = tolerance + 1e-12
    if difference > slack:
        return "amplify"
    return "suppress" if difference < -slack else "preserve"


def training_diet(
    logs: Mapping[str, pd.DataFrame],
    hard: Sequence[bool] | np.ndarray,
    *,
    tolerance: float = 0.05,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The realized training diet's hard share per policy, against the pool's (report 002, Section 5.2).

    ``logs`` maps a policy to its observation log; its ``batch`` rows are the realized diet (every
    draw counts, repeats included; probes are left out). ``hard`` is one flag per pool task (the report:
    4 numbers, about half the pool: ``dv.num_count.to_numpy() == 4``). One row per policy: ``policy``,
    ``rows``, ``hard_share`` with its Wilson interval over draws (``ci_low``, ``ci_high``),
    ``pool_share``, ``difference`` and ``label`` (``diet_label``). The report names the bands (preserve
    48.9-54.1%, suppress 23.9%, pool ~50%) but no tolerance; 0.05 in share keeps its preserve band.
    """
    flags = np.asarray(hard, dtype=bool)  # (N,)
    if flags.ndim != 1 or flags.size == 0:
        raise ValueError("training_diet: hard must be one flag per pool task")
    pool_share = float(flags.mean())
    rows = []
    for policy, log in logs.items():
        _require(log, ("source", "task_index"), f"training_diet[{policy!r}]")
        drawn = log.loc[log["source"] == "batch", "task_index"].to_numpy()  # (D,)
        if drawn.size == 0:
            raise ValueError(f"training_diet[{policy!r}]: the log has no batch rows")
        if drawn.min() < 0 or drawn.max() >= flags.size:
            raise ValueError(f"training_diet[{policy!r}]: task_index outside the pool of {flags.size}")
        count = int(flags[drawn].sum())
        share = count / drawn.size
        ci_low, ci_high = wilson_interval(count, int(drawn.size), confidence)
        rows.append({"policy": policy, "rows": int(drawn.size), "hard_share": share, "ci_low": ci_low,
                     "ci_high": ci_high, "pool_share": pool_share, "difference": share - pool_share,
                     "label": diet_label(share - pool_share, tolerance)})  # fmt: skip
    return pd.DataFrame(rows)


def diet_makeup(
    logs: Mapping[str, pd.DataFrame],
    within: Sequence[bool] | np.ndarray,
    subsets: Mapping[str, Sequence[bool] | np.ndarray],
) -> pd.DataFrame:
    """What each policy's batches hold inside one part of the pool (Section 5.2: "conditioning on the
    4-number problems each policy does keep").

    ``within`` and every mask of ``subsets`` hold one flag per pool task. Per policy, its ``batch`` rows
    whose task is ``within`` (every draw counts, repeats included) and, per subset, the share of those
    rows in it; a first row ``pool`` gives the subsets' shares among the pool's own ``within`` tasks.
    Columns: ``policy``, ``rows``, then one per subset name. The report: the uncorrected kernel's
    4-number diet is ~78% all-numbers-required 4-operand tasks (edge ~73%) and ~18% of depth >= 3
    (edge ~28%).
    """
    inside = np.asarray(within, dtype=bool)  # (N,)
    if inside.ndim != 1 or not inside.any():
        raise ValueError("diet_makeup: within must be one flag per pool task, some of them set")
    masks = {name: np.asarray(mask, dtype=bool) for name, mask in subsets.items()}
    wrong = [name for name, mask in masks.items() if mask.shape != inside.shape]
    if wrong:
        raise ValueError(f"diet_makeup: subset(s) {wrong} must hold one flag per pool task ({inside.size})")
    pool = np.flatnonzero(inside)  # (W,)
    rows = [
        {"policy": "pool", "rows": int(pool.size), **{n: float(m[pool].mean()) for n, m in masks.items()}}
    ]
    for policy, log in logs.items():
        _require(log, ("source", "task_index"), f"diet_makeup[{policy!r}]")
        drawn = log.loc[log["source"] == "batch", "task_index"].to_numpy()  # (D,)
        if drawn.size and (drawn.min() < 0 or drawn.max() >= inside.size):
            raise ValueError(f"diet_makeup[{policy!r}]: task_index outside the pool of {inside.size}")
        kept = drawn[inside[drawn]]  # (D_w,)
        shares = {n: float(m[kept].mean()) if kept.size else float("nan") for n, m in masks.items()}
        rows.append({"policy": policy, "rows": int(kept.size), **shares})
    return pd.DataFrame(rows)
