"""Checkpoint selection on a validation split (report 003's tight sweep): does the checkpoint with the best
validation pass@1 have the best test pass@1?

A run with ``EvalSpec.snapshot_every`` keeps, after every ``snapshot_every`` steps and the last, the
per-sample verdicts of its policy on the validation tasks (the first ``validation_size`` tasks of the
training pool, their ``train[:200]``) and on the held-out tasks (``tables/snapshot_<set>_<step>``).
These pure functions read them and choose: per (method, seed) the step with the highest validation
pass@1 (ties: the earliest; report 003 does not say, ours), whether it is also a step with the highest
test pass@1, and what choosing it cost on test (regret) against the best checkpoint and the final one.

Report 003's claim that validation "did not reliably select the best test checkpoint" is judged by
``selection_claim``: the test pass@1 of the validation-selected checkpoint minus that of the final one,
per task, with the study's seed-aware comparison, over the runs of the sweep's coefficients
(``SELECTION_POOL``; the c = 0 control is left out, as it is no part of the report's sweep). The report
chose one checkpoint across its whole sweep (c, seed and step); one choice gives no interval, so each run
chooses its own step here (ours, in the deviations table). The contrast is with the final checkpoint (what
a run gives without selection), not with the best test checkpoint: that one is chosen on the test tasks
themselves, so its regret is positive under test noise even for a perfect selector and cannot be tested
against zero (ours; the report gives no test).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from countdown_study.study.compare import compare, verdict
from countdown_study.study.methods import StudyResult
from countdown_study.study.rows import VCC_SWEEP
from countdown_study.study.tables import PAIRED_COLUMNS, comparison_row

_SNAPSHOT = re.compile(r"snapshot_(val|test)_(\d+)\.parquet")


def snapshot_table(result: StudyResult) -> pd.DataFrame:
    """One row per (method, seed, step, set) of every run that kept snapshots: ``pass_at_1`` (mean
    correctness over tasks and samples, the unbiased pass@1) and ``num_tasks``. Runs without snapshots
    are skipped; none at all is an error naming the fix."""
    rows = []
    for run in result.runs.itertuples(index=False):
        for file in sorted((Path(run.path) / "tables").glob("snapshot_*.parquet")):
            match = _SNAPSHOT.fullmatch(file.name)
            if match is None:
                continue
            samples = pd.read_parquet(file, columns=["task_index", "correct"])
            rows.append({
                "method": run.method, "seed": run.seed, "step": int(match.group(2)), "set": match.group(1),
                "pass_at_1": float(samples["correct"].mean()), "num_tasks": samples["task_index"].nunique(),
            })  # fmt: skip
    if not rows:
        raise ValueError("no run of this study kept snapshots (set EvalSpec.snapshot_every on its methods)")
    return pd.DataFrame(rows).sort_values(["method", "seed", "set", "step"], ignore_index=True)


def select_checkpoints(snapshots: pd.DataFrame) -> pd.DataFrame:
    """Per (method, seed): the step validation selects, the best test step(s), whether they agree, and the
    test pass@1 of the selected, the best and the final checkpoint (``final_step``, the last snapshot;
    ``regret`` = best - selected)."""
    wide = snapshots.pivot_table(index=["method", "seed", "step"], columns="set", values="pass_at_1")
    rows = []
    for (method, seed), group in wide.groupby(level=["method", "seed"], sort=False):
        group = group.droplevel(["method", "seed"]).sort_index()  # (steps, {test, val})
        selected = int(group["val"].idxmax())  # first maximum: the earliest step among ties
        best = float(group["test"].max())
        rows.append({
            "method": method, "seed": seed, "selected_step": selected,
            "best_test_steps": [int(s) for s in group.index[group["test"] == best]],
            "picked_best": bool(group.loc[selected, "test"] == best),
            "selected_test": float(group.loc[selected, "test"]), "best_test": best,
            "final_step": int(group.index[-1]), "final_test": float(group["test"].iloc[-1]),
            "regret": best - float(group.loc[selected, "test"]),
        })  # fmt: skip
    return pd.DataFrame(rows)


def selection_summary(selection: pd.DataFrame, methods: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per method: seeds, share of seeds where validation picked a best test checkpoint, mean regret, and
    the mean test pass@1 of the selected, the best and the final checkpoints (``methods`` sets the order)."""
    summary = selection.groupby("method", sort=False).agg(
        n_seeds=("seed", "nunique"),
        picked_best_share=("picked_best", "mean"),
        mean_regret=("regret", "mean"),
        selected_test=("selected_test", "mean"),
        best_test=("best_test", "mean"),
        final_test=("final_test", "mean"),
    )
    if methods is not None:
        summary = summary.reindex([m for m in methods if m in summary.index])
    return summary.reset_index()


SELECTION_CLAIM = -1
"""Report 003's claim, signed: the validation-selected checkpoint is not above the final one on test (a null
claim: ``holds`` and ``inside noise`` agree with it; ``reversed`` says validation selection reliably beats
taking the last checkpoint)."""
SELECTION_CONTRAST = "validation-selected vs final checkpoint"
"""The ``contrast`` of ``selection_claim``'s row."""


def _task_pass_at_1(file: Path) -> pd.Series:
    samples = pd.read_parquet(file, columns=["task_index", "correct"])
    return samples.groupby("task_index")["correct"].mean().sort_index()


def selection_matrices(result: StudyResult, chosen: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-task test pass@1 at the validation-selected and at the final checkpoint of every run of
    ``chosen`` (``select_checkpoints``), each ``(tasks, runs)``, read from the runs' test snapshots."""
    paths = {(r.method, r.seed): Path(r.path) for r in result.runs.itertuples(index=False)}
    selected, final, tasks = [], [], None
    for row in chosen.itertuples(index=False):
        folder = paths[(row.method, row.seed)] / "tables"
        for step, column in ((row.selected_step, selected), (row.final_step, final)):
            values = _task_pass_at_1(folder / f"snapshot_test_{step}.parquet")
            if tasks is None:
                tasks = values.index
            elif not values.index.equals(tasks):
                raise ValueError(
                    f"run {row.method!r} seed {row.seed} step {step} has other test tasks than the first run"
                )
            column.append(values.to_numpy(dtype=float))
    if tasks is None:
        raise ValueError("no run to compare: select_checkpoints gave no rows")
    return np.stack(selected, axis=1), np.stack(final, axis=1)


def cluster_by_seed(values: np.ndarray, seeds) -> np.ndarray:
    """``values`` ``(tasks, runs)`` averaged over the runs of each training seed -> ``(tasks, seeds)``.

    Runs of one training seed (the sweep's configurations at that seed) share its noise, so they are one
    cluster of the comparison, not independent ones; seeds in first-seen order.
    """
    seeds = np.asarray(seeds)
    if seeds.shape != (values.shape[1],):
        raise ValueError(f"need one seed per run column, got {seeds.shape} for {values.shape[1]} runs")
    order = list(dict.fromkeys(seeds.tolist()))
    return np.stack([values[:, seeds == s].mean(axis=1) for s in order], axis=1)


SELECTION_POOL = tuple(method.name for method in VCC_SWEEP)
"""The rows whose checkpoints the selection claim judges: the sweep's coefficients, as the report's sweep
(its c = 0 control, which keeps snapshots too, is no part of that sweep)."""


def claim_runs(chosen: pd.DataFrame, pool: Sequence[str] = SELECTION_POOL) -> pd.DataFrame:
    """The rows of ``select_checkpoints``' table whose method is in ``pool``; none is an error naming both."""
    runs = chosen[chosen["method"].isin(pool)]
    if runs.empty:
        raise ValueError(
            f"no run of the rows {list(pool)} kept snapshots; have {sorted(set(chosen['method']))}"
        )
    return runs.reset_index(drop=True)


def selection_values(
    result: StudyResult, pool: Sequence[str] = SELECTION_POOL
) -> tuple[np.ndarray, np.ndarray]:
    """The validation-selected and the final checkpoints' per-task test pass@1 over the runs of ``result``
    of the rows ``pool`` (``select_checkpoints``, ``claim_runs``), clustered by training seed
    (``cluster_by_seed``), each ``(tasks, seeds)``."""
    chosen = claim_runs(select_checkpoints(snapshot_table(result)), pool)
    selected, final = selection_matrices(result, chosen)
    seeds = chosen["seed"].to_numpy()
    return cluster_by_seed(selected, seeds), cluster_by_seed(final, seeds)


def selection_claim(
    result: StudyResult,
    chosen: pd.DataFrame,
    n_resamples: int = 5000,
    seed: int = 0,
    pool: Sequence[str] = SELECTION_POOL,
) -> pd.DataFrame:
    """Report 003's claim on validation selection as one ``PAIRED_COLUMNS`` row (module docstring): the
    selected minus the final checkpoint's test pass@1 over tasks and every run of ``chosen`` of the rows
    ``pool`` (``claim_runs``), the runs of one training seed averaged into one cluster (``cluster_by_seed``:
    ``n_seeds`` counts training seeds, not runs), judged with ``SELECTION_CLAIM``."""
    chosen = claim_runs(chosen, pool)
    selected, final = selection_matrices(result, chosen)
    seeds = chosen["seed"].to_numpy()
    c = compare(
        cluster_by_seed(selected, seeds), cluster_by_seed(final, seeds), seed=seed, n_resamples=n_resamples
    )
    row = comparison_row(SELECTION_CONTRAST, "pass@1", c, verdict(c, SELECTION_CLAIM))
    return pd.DataFrame([row], columns=list(PAIRED_COLUMNS))
