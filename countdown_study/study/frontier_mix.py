"""What report 003's solution-count curricula train on: the number-count mix of their frontiers.

The curricula draw uniformly from the easiest ``x%`` of the pool ranked by solution count
(``samplers.solution_count``). On Countdown a task with four numbers has many more derivations than one with
three, so the ranking's "easiest" prompts are mostly four-number prompts, the ones a policy solves least:
the difficulty proxy and the policy's own difficulty point in opposite directions. ``frontier_mix`` gives
each frontier's share of four-number tasks and its median solution count; ``training_mix`` gives the mix a
run drew, from the prompts its step log counts under each frontier label (``batch_easiest 30%``): within a
frontier the draw is uniform, so a frontier's share is the expected share of its prompts.

``frontier_moves`` says whether our adaptive and hybrid rules adapted at all: the adaptive frontier widens
when the training success EMA has gained enough since its last move (the rule ``progress``) or reaches a
threshold (the variant rule ``threshold``), and a hybrid whose frontier is never wider than
the staged schedule's draws, seed for seed, the staged curriculum's prompts (both take the step's draw from
the same seeded stream over the same frontier), so the two rows are then one experiment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.task import Task
from countdown_study.samplers.solution_count import (
    SOLUTION_COUNT_ADAPTIVE,
    SOLUTION_COUNT_STAGED,
    SolutionCountStagedConfig,
    easiest_first,
    stage_of,
)

FRONTIER_COLUMN = re.compile(r"^batch_easiest (\d+)%$")
"""A step-log column counting the prompts drawn from a frontier (the solution-count samplers' labels)."""
HARD_COUNT = 4
"""The number count whose share is tabulated (four-number tasks: the harder half of the pool)."""


def frontier_mix(pool: Sequence[Task], fractions: Sequence[float], cap: int = 128) -> pd.DataFrame:
    """One row per ``fractions`` entry: ``frontier`` (the share of the pool), ``tasks`` (the easiest that many
    by solution count, as the samplers take them), ``four_number_share`` and ``median_solutions`` (counts
    capped at ``cap``, report 003)."""
    counts = solution_counts(pool, cap=cap)  # (N,)
    ranking = easiest_first(counts)  # (N,)
    hard = np.array([t.num_count == HARD_COUNT for t in pool])  # (N,)
    rows = []
    for fraction in fractions:
        if not 0 < fraction <= 1:
            raise ValueError(f"a frontier is a share of the pool in (0, 1], got {fraction}")
        chosen = ranking[: max(1, round(fraction * len(pool)))]
        rows.append({"frontier": float(fraction), "tasks": len(chosen),
                     "four_number_share": float(hard[chosen].mean()),
                     "median_solutions": float(np.median(counts[chosen]))})  # fmt: skip
    return pd.DataFrame(rows)


def frontier_columns(steps: pd.DataFrame) -> dict[str, float]:
    """The step log's frontier columns and the share of the pool each names (``batch_easiest 30%`` -> 0.3)."""
    return {c: int(m.group(1)) / 100 for c in steps.columns if (m := FRONTIER_COLUMN.match(c))}


def training_mix(steps: pd.DataFrame, pool: Sequence[Task], cap: int = 128) -> pd.DataFrame:
    """Per method of ``steps`` (step logs of several runs, a ``method`` column) that drew from frontiers:
    ``prompts`` drawn over all its runs and the expected ``four_number_share`` among them (each frontier's
    share weighted by the prompts drawn from it), beside ``pool_four_number_share``."""
    columns = frontier_columns(steps)
    if not columns:
        raise ValueError("the step logs have no frontier columns (batch_easiest N%): no solution-count rows")
    mix = frontier_mix(pool, sorted(set(columns.values())), cap).set_index("frontier")["four_number_share"]
    pool_share = float(np.mean([t.num_count == HARD_COUNT for t in pool]))
    rows = []
    for method, group in steps.groupby("method", sort=False):
        drawn = group[list(columns)].fillna(0).sum()  # prompts per frontier column
        if drawn.sum() == 0:
            continue
        hard = sum(drawn[c] * mix[f] for c, f in columns.items())
        rows.append({"method": method, "prompts": int(drawn.sum()), "four_number_share": hard / drawn.sum(),
                     "pool_four_number_share": pool_share})  # fmt: skip
    return pd.DataFrame(rows)


MOVE_COLUMNS = ("sampler_frontier", "sampler_adaptive_share", "sampler_success_ema")
"""Step-log columns of the adaptive and hybrid solution-count samplers (``SolutionCountAdaptiveSampler``)."""


def frontier_moves(
    steps: pd.DataFrame,
    staged: SolutionCountStagedConfig = SOLUTION_COUNT_STAGED,
    start: float = SOLUTION_COUNT_ADAPTIVE.start_fraction,
) -> pd.DataFrame:
    """One row per run (``method``, ``seed``) of ``steps`` that logs an adaptive frontier (``MOVE_COLUMNS``):
    ``moves`` (times the adaptive share widened from ``start``), ``first_move`` (the step whose outcome first
    widened it, NaN if none did), ``final_share``, ``max_success_ema``, and ``ahead_steps``: steps whose
    frontier was wider than ``staged``'s schedule at that step (the run's logged steps taken as its length).
    For a hybrid, ``ahead_steps == 0`` means the clock, never the adaptive rule, set its frontier: it drew
    the staged curriculum's prompts."""
    missing = [c for c in ("method", "seed", "step", *MOVE_COLUMNS) if c not in steps.columns]
    if missing:
        raise ValueError(f"the step logs lack {missing}: no adaptive or hybrid solution-count rows")
    rows = []
    logged = steps.dropna(subset=["sampler_adaptive_share"])
    for (method, seed), run in logged.groupby(["method", "seed"], sort=False):
        run = run.sort_values("step")
        share = run["sampler_adaptive_share"].to_numpy(dtype=float)  # (S,)
        widened = np.flatnonzero(np.diff(share, prepend=start) > 0)  # (M,) rows where the share grew
        total = int(run["step"].max()) + 1
        scheduled = [
            staged.pool_fractions[stage_of(int(t), total, staged.step_fractions)] for t in run["step"]
        ]
        ahead = run["sampler_frontier"].to_numpy(dtype=float) > np.asarray(scheduled) + 1e-9
        rows.append({"method": method, "seed": int(seed), "steps": len(run), "moves": len(widened),
                     "first_move": float(run["step"].iloc[widened[0]]) if len(widened) else np.nan,
                     "final_share": float(share[-1]), "max_success_ema": float(run["sampler_success_ema"].max()),
                     "ahead_steps": int(ahead.sum())})  # fmt: skip
    return pd.DataFrame(rows)


def frontier_moves_summary(moves: pd.DataFrame) -> pd.DataFrame:
    """Per method of ``frontier_moves``: ``runs``, ``runs_moved`` (runs whose adaptive share ever widened),
    ``mean_final_share``, ``max_success_ema`` (over its runs) and ``runs_ahead`` (runs whose frontier was ever
    wider than the staged schedule's; a hybrid with none is the staged curriculum, seed for seed)."""
    grouped = moves.groupby("method", sort=False)
    return pd.DataFrame(
        {
            "runs": grouped["seed"].size(),
            "runs_moved": grouped["moves"].apply(lambda m: int((m > 0).sum())),
            "mean_final_share": grouped["final_share"].mean(),
            "max_success_ema": grouped["max_success_ema"].max(),
            "runs_ahead": grouped["ahead_steps"].apply(lambda a: int((a > 0).sum())),
        }
    ).reset_index()
