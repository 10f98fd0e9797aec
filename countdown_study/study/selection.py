"""Checkpoint selection on a validation split (report 003's tight sweep): does the checkpoint with the best
validation pass@1 have the best test pass@1?

A run with ``EvalSpec.snapshot_every`` keeps, after every ``snapshot_every`` steps and the last, the
per-sample verdicts of its policy on the validation tasks (the first ``validation_size`` tasks of the
training pool, their ``train[:200]``) and on the held-out tasks (``tables/snapshot_<set>_<step>``).
These pure functions read them and choose: per (method, seed) the step with the highest validation
pass@1 (ties: the earliest; report 003 does not say, ours), whether it is also a step with the highest
test pass@1, and what choosing it cost on test (regret) against the best checkpoint and the final one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from countdown_study.study.methods import StudyResult

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
    test pass@1 of the selected, the best and the final checkpoint (``regret`` = best - selected)."""
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
            "final_test": float(group["test"].iloc[-1]), "regret": best - float(group.loc[selected, "test"]),
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
