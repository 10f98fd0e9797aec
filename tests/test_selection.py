"""Checkpoint selection on validation snapshots (``study.selection``): worked examples."""

from __future__ import annotations

import pandas as pd
import pytest

from countdown_study.study.selection import select_checkpoints, selection_summary, snapshot_table


def snapshots(rows):
    """``(method, seed, step, val, test)`` rows in the long form ``snapshot_table`` returns."""
    long = []
    for method, seed, step, val, test in rows:
        long += [
            {"method": method, "seed": seed, "step": step, "set": "val", "pass_at_1": val},
            {"method": method, "seed": seed, "step": step, "set": "test", "pass_at_1": test},
        ]
    return pd.DataFrame(long)


TABLE = snapshots([
    # validation picks step 20, test is best at 20: agreement, no regret
    ("a", 0, 10, 0.30, 0.40), ("a", 0, 20, 0.35, 0.45), ("a", 0, 30, 0.33, 0.44),
    # validation picks step 10 (tie with 30 -> earliest), test is best at 30: regret 0.05
    ("a", 1, 10, 0.40, 0.40), ("a", 1, 20, 0.20, 0.42), ("a", 1, 30, 0.40, 0.45),
    # one seed of b: validation picks step 30 = best test (tied with 10)
    ("b", 0, 10, 0.10, 0.50), ("b", 0, 20, 0.20, 0.30), ("b", 0, 30, 0.30, 0.50),
])  # fmt: skip


def test_validation_selects_its_best_step_and_the_test_cost_is_the_regret():
    chosen = select_checkpoints(TABLE).set_index(["method", "seed"])
    assert chosen.loc[("a", 0), "selected_step"] == 20 and chosen.loc[("a", 0), "picked_best"]
    assert chosen.loc[("a", 0), "regret"] == 0.0 and chosen.loc[("a", 0), "final_test"] == 0.44
    assert chosen.loc[("a", 1), "selected_step"] == 10  # ties go to the earliest step
    assert not chosen.loc[("a", 1), "picked_best"]
    assert chosen.loc[("a", 1), "regret"] == pytest.approx(0.05)
    assert chosen.loc[("a", 1), "best_test_steps"] == [30]
    assert chosen.loc[("b", 0), "picked_best"] and chosen.loc[("b", 0), "best_test_steps"] == [10, 30]


def test_summary_per_method_in_the_order_asked():
    summary = selection_summary(select_checkpoints(TABLE), methods=("b", "a")).set_index("method")
    assert list(summary.index) == ["b", "a"]
    assert summary.loc["a", "n_seeds"] == 2 and summary.loc["a", "picked_best_share"] == 0.5
    assert summary.loc["a", "mean_regret"] == pytest.approx(0.025)
    assert summary.loc["a", "selected_test"] == pytest.approx(0.425)
    assert summary.loc["a", "best_test"] == pytest.approx(0.45)
    assert summary.loc["a", "final_test"] == pytest.approx(0.445)
    assert summary.loc["b", "picked_best_share"] == 1.0


def test_snapshot_table_reads_run_folders_and_refuses_a_study_without_snapshots(tmp_path):
    from countdown_study.study.methods import StudyResult

    tables = tmp_path / "run" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame({"task_index": [0, 0, 1, 1], "correct": [True, False, True, True]}).to_parquet(
        tables / "snapshot_val_10.parquet"
    )
    pd.DataFrame({"task_index": [0, 1], "correct": [False, True]}).to_parquet(
        tables / "snapshot_test_10.parquet"
    )
    pd.DataFrame({"task_index": [0], "correct": [True]}).to_parquet(tables / "eval.parquet")
    runs = pd.DataFrame([{"method": "m", "seed": 3, "path": str(tmp_path / "run")}])
    result = StudyResult(None, runs, pd.DataFrame(), pd.DataFrame(), ("m",))
    table = snapshot_table(result).set_index("set")
    assert table.loc["val", "pass_at_1"] == 0.75 and table.loc["val", "num_tasks"] == 2
    assert (
        table.loc["test", "pass_at_1"] == 0.5 and (table["step"] == 10).all() and (table["seed"] == 3).all()
    )
    empty = StudyResult(
        None, runs.assign(path=str(tmp_path / "none")), pd.DataFrame(), pd.DataFrame(), ("m",)
    )
    with pytest.raises(ValueError, match="snapshot_every"):
        snapshot_table(empty)
