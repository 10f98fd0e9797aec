"""Checkpoint selection on validation snapshots (``study.selection``): worked examples."""

from __future__ import annotations

import pandas as pd
import pytest

from countdown_study.study.compare import compare
from countdown_study.study.methods import StudyResult
from countdown_study.study.rows import VCC_COEFFICIENTS
from countdown_study.study.selection import (
    SELECTION_POOL,
    claim_runs,
    cluster_by_seed,
    select_checkpoints,
    selection_claim,
    selection_matrices,
    selection_summary,
    snapshot_table,
)


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


def _write_run(folder, snapshots):
    """A run folder with ``{(set, step): correct per task (2 samples each)}`` test and validation snapshots."""
    tables = folder / "tables"
    tables.mkdir(parents=True)
    for (kind, step), per_task in snapshots.items():
        rows = [{"task_index": t, "correct": j < c} for t, c in enumerate(per_task) for j in range(2)]
        pd.DataFrame(rows).to_parquet(tables / f"snapshot_{kind}_{step}.parquet")


def test_the_selection_claim_compares_the_selected_with_the_final_checkpoint_per_task(tmp_path):
    # run a0: validation best at step 10 -> test (2, 1, 0) correct of 2; final step 20 -> test (2, 2, 0)
    # run a1: validation best at step 20 = final -> no difference
    # run b0: validation best at step 10 -> test (1, 1, 1); final (2, 1, 1)
    runs = {
        ("a", 0): {("val", 10): [2, 2], ("val", 20): [1, 1], ("test", 10): [2, 1, 0], ("test", 20): [2, 2, 0]},
        ("a", 1): {("val", 10): [0, 1], ("val", 20): [2, 1], ("test", 10): [0, 0, 0], ("test", 20): [1, 2, 1]},
        ("b", 0): {("val", 10): [2, 0], ("val", 20): [0, 1], ("test", 10): [1, 1, 1], ("test", 20): [2, 1, 1]},
    }  # fmt: skip
    for (method, seed), snaps in runs.items():
        _write_run(tmp_path / f"{method}{seed}", snaps)
    table = pd.DataFrame([{"method": m, "seed": s, "path": str(tmp_path / f"{m}{s}")} for m, s in runs])
    result = StudyResult(None, table, pd.DataFrame(), pd.DataFrame(), ("a", "b"))
    chosen = claim_runs(select_checkpoints(snapshot_table(result)), pool=("a", "b"))
    assert chosen["selected_step"].tolist() == [10, 20, 10] and chosen["final_step"].tolist() == [20, 20, 20]
    selected, final = selection_matrices(result, chosen)
    assert selected.tolist() == [[1.0, 0.5, 0.5], [0.5, 1.0, 0.5], [0.0, 0.5, 0.5]]  # (tasks, runs)
    assert final.tolist() == [[1.0, 0.5, 1.0], [1.0, 1.0, 0.5], [0.0, 0.5, 0.5]]
    row = selection_claim(result, chosen, n_resamples=300, pool=("a", "b")).iloc[0]
    # differences: a0 (0, -.5, 0), a1 (0, 0, 0), b0 (-.5, 0, 0); a0 and b0 share training seed 0, one
    # cluster: seed 0 (-.25, -.25, 0), seed 1 (0, 0, 0) -> mean -1/12 over three tasks and two seeds
    assert row["diff"] == pytest.approx(-1 / 12) and (row["n_tasks"], row["n_seeds"]) == (3, 2)
    seeds = chosen["seed"].tolist()
    assert seeds == [0, 1, 0]
    assert cluster_by_seed(selected, seeds).tolist() == [[0.75, 0.5], [0.5, 1.0], [0.25, 0.5]]
    expected = compare(
        cluster_by_seed(selected, seeds), cluster_by_seed(final, seeds), seed=0, n_resamples=300
    )
    assert (row["ci_low"], row["ci_high"], row["mde"]) == pytest.approx(
        (expected.ci_low, expected.ci_high, expected.mde)
    )
    assert row["contrast"] == "validation-selected vs final checkpoint" and row["metric"] == "pass@1"
    assert row["verdict"] == "inside noise"  # a null claim: only "reversed" would contradict it


def test_the_selection_claim_judges_the_sweeps_coefficients_not_its_control():
    chosen = pd.DataFrame({"method": ["Sweep control (c = 0)", "VCC c = 0.005", "VCC c = 0.015"], "seed": 0})
    assert claim_runs(chosen)["method"].tolist() == ["VCC c = 0.005", "VCC c = 0.015"]
    assert tuple(f"VCC c = {c}" for c in VCC_COEFFICIENTS) == SELECTION_POOL
    with pytest.raises(ValueError, match="no run of the rows"):
        claim_runs(chosen.iloc[:1])


def test_selection_refuses_runs_evaluated_on_other_test_tasks(tmp_path):
    _write_run(tmp_path / "a0", {("val", 10): [1], ("test", 10): [1, 1]})
    _write_run(tmp_path / "a1", {("val", 10): [1], ("test", 10): [1, 1, 1]})
    table = pd.DataFrame([{"method": "a", "seed": s, "path": str(tmp_path / f"a{s}")} for s in (0, 1)])
    result = StudyResult(None, table, pd.DataFrame(), pd.DataFrame(), ("a",))
    with pytest.raises(ValueError, match="other test tasks"):
        selection_matrices(result, select_checkpoints(snapshot_table(result)))
