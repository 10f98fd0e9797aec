"""Study tables from hand-made verdict tables: summaries over seeds, paired tests, pass@k curves."""

import json
import threading
import time

import numpy as np
import pandas as pd
import pytest

from countdown_study import study
from countdown_study.policy import policy_identity
from countdown_study.reporting import outputs, plots
from countdown_study.runs.store import RunStore
from countdown_study.study import (
    STUDY_PRESETS,
    Method,
    StudyResult,
    paired_table,
    pass_at_k_curves,
    problem_matrix,
    run_all,
    study_preset,
    summary_table,
    zero_claims_table,
)
from countdown_study.study.compare import compare, zero_bound
from countdown_study.study.stats import wilson_interval


def _samples(method: str, seed: int, correct_per_task: list[int], n: int = 4) -> pd.DataFrame:
    rows = []
    for task, c in enumerate(correct_per_task):
        for j in range(n):
            ok = j < c
            rows.append({"task_index": task, "num_count": 3 + task % 2, "tier": "T1", "target": 10 + task,
                         "sample_index": j, "reward": 1.0 if ok else 0.1, "correct": ok, "well_formed": True,
                         "method": method, "seed": seed})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def result():
    preset = study_preset("tiny", seeds=(0, 1))
    samples = pd.concat(
        [
            _samples("A", 0, [4, 2, 0, 1]),
            _samples("A", 1, [4, 4, 0, 1]),
            _samples("B", 0, [2, 2, 0, 0]),
            _samples("B", 1, [2, 0, 0, 0]),
        ],
        ignore_index=True,
    )
    return StudyResult(preset, pd.DataFrame(), samples, pd.DataFrame(), ("A", "B"))


def test_summary_is_mean_and_sd_over_seeds(result):
    table = summary_table(result).set_index("method")
    # A: pass@1 per seed = mean(c/4) = (1 + .5 + 0 + .25)/4 = .4375 and (1 + 1 + 0 + .25)/4 = .5625
    assert table.loc["A", "pass@1"] == pytest.approx(0.5)
    assert table.loc["A", "pass@1_sd"] == pytest.approx(np.std([0.4375, 0.5625], ddof=1))
    assert table.loc["B", "pass@4"] == pytest.approx(np.mean([0.5, 0.25]))
    assert list(table.index) == ["A", "B"] and table.loc["A", "n_seeds"] == 2


def test_summary_by_group(result):
    table = summary_table(result, by="num_count")
    three = table[(table["method"] == "A") & (table["num_count"] == 3)].iloc[0]
    assert three["pass@1"] == pytest.approx(np.mean([(1 + 0) / 2, (1 + 0) / 2]))


def test_problem_matrix_and_paired_difference(result):
    a = problem_matrix(result, "A", "pass@1")  # (4 problems, 2 seeds)
    assert a.shape == (4, 2) and a[1].tolist() == [0.5, 1.0]
    paired = paired_table(result, [("A", "B")], metrics=("pass@1", "pass@4"), n_resamples=500)
    row = paired.set_index("metric").loc["pass@1"]
    assert row["diff"] == pytest.approx(0.5 - 0.1875)  # B: (.5+.5+0+0)/4 and (.5+0+0+0)/4 -> mean .1875
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]
    assert (row["n_tasks"], row["n_seeds"], row["contrast"]) == (4, 2, "A vs B")
    assert list(paired.columns[:13]) == [
        "contrast", "metric", "diff", "ci_low", "ci_high", "ci_method", "n_tasks", "n_seeds", "per_seed_diffs",
        "t_low", "t_high", "prob_positive", "verdict",
    ]  # fmt: skip
    # seed 0: A (1, .5, 0, .25) -> .4375 vs B (.5, .5, 0, 0) -> .25; seed 1: A .5625 vs B .125
    assert row["per_seed_diffs"] == "+0.1875 +0.4375" and row["ci_method"].startswith(
        "two-way random effects"
    )
    claimed = paired_table(
        result, [("A", "B")], metrics=("pass@1",), n_resamples=500, claims={("A", "B"): -1}
    )
    assert claimed["verdict"].iloc[0] in ("reversed", "inside noise")
    with pytest.raises(ValueError, match="no results for method 'C'"):
        problem_matrix(result, "C", "pass@1")


def test_pass_at_k_curves_carry_wilson_intervals(result):
    curves = pass_at_k_curves(result)
    assert sorted(curves["k"].unique()) == [1, 2, 3, 4]
    first = curves[(curves["method"] == "A") & (curves["k"] == 1)].iloc[0]
    assert first["pass@k"] == pytest.approx(0.5) and first["ci_low"] < 0.5 < first["ci_high"]
    # the unit is the problem (4 of them), not the 8 (seed, problem) pairs
    assert first["n_problems"] == 4
    assert (first["ci_low"], first["ci_high"]) == pytest.approx(wilson_interval(2.0, 4))


def test_outputs_write_table_and_figure_with_provenance(result, tmp_path):
    table = summary_table(result)
    outputs.save_table(table, "demo", {"notebook": "test"}, folder=tmp_path)
    assert pd.read_csv(tmp_path / "demo.csv")["method"].tolist() == ["A", "B"]
    assert (tmp_path / "demo.md").read_text().startswith("| method")
    meta = json.loads((tmp_path / "demo.meta.json").read_text())
    assert meta["notebook"] == "test" and "git_sha" in meta and meta["packages"]["torch"]
    outputs.save_figure(plots.pass_at_k_figure(pass_at_k_curves(result)), "curves", folder=tmp_path)
    assert (tmp_path / "curves.png").stat().st_size > 1000 and (tmp_path / "curves.pdf").exists()


def test_presets_and_methods_are_checked():
    assert STUDY_PRESETS["full"].seeds == (0, 1, 2, 3, 4) and STUDY_PRESETS["full"].eval_limit >= 500
    assert STUDY_PRESETS["full"].eval_n == 16
    with pytest.raises(ValueError, match="unknown study preset 'huge'"):
        study_preset("huge")
    with pytest.raises(ValueError, match="unknown method kind 'dpo'"):
        Method("x", kind="dpo")


@pytest.mark.slow
def test_run_all_takes_free_runs_first_and_waits_for_held_ones(tmp_path):
    preset = study_preset("tiny")
    config = preset.train_config("uniform", 0)
    held = RunStore.open(config, root=tmp_path, prefix="rloo", identity=policy_identity(config.data.policy))
    stores = {}
    with held.lock():  # as if another notebook's kernel were training the shared baseline
        worker = threading.Thread(
            target=lambda: stores.update(
                run_all([study.UNIFORM, study.SFT], preset, tmp_path, progress=False)
            )
        )
        worker.start()
        deadline = time.time() + 300
        while not any((p / "DONE").exists() for p in tmp_path.glob("eval-*")) and time.time() < deadline:
            time.sleep(0.2)
        assert any((p / "DONE").exists() for p in tmp_path.glob("eval-*"))  # the free run went first
        assert not (held.path / "provenance.json").exists()  # the held one was left alone
    worker.join(timeout=300)
    assert stores[study.UNIFORM.name, 0].path == held.path and held.is_done
    assert stores[study.SFT.name, 0].is_done


def test_generation_cost_counts_discarded_and_probe_rollouts(tmp_path):
    """A worked example: B is plain RLOO with probes on one step; C a group-filtered run whose second step
    kept nothing (no optimizer step). A is the starting policy."""
    preset = study_preset("tiny", seeds=(0, 1))
    P, G = preset.prompts_per_step, preset.group_size
    samples = pd.concat(
        [_samples(m, s, c) for m, c in (("A", [2, 0]), ("B", [4, 0]), ("C", [3, 1])) for s in (0, 1)],
        ignore_index=True,
    )  # pass@1: A 0.25, B 0.5, C 0.5
    nan = float("nan")
    steps = pd.DataFrame(
        [
            {"method": "B", "seed": s, "step": 0, "tokens": 100, "probe_rollouts": 8, "probe_tokens": 40}
            for s in (0, 1)
        ]
        + [{"method": "B", "seed": s, "step": 1, "tokens": 120} for s in (0, 1)]
        + [
            {
                "method": "C",
                "seed": s,
                "step": 0,
                "tokens": 80,
                "kept_groups": P,
                "discarded_rollouts": 3 * G,
                "discarded_tokens": 30,
                "skipped_update": nan,
            }
            for s in (0, 1)
        ]  # fmt: skip
        + [
            {
                "method": "C",
                "seed": s,
                "step": 1,
                "tokens": 0,
                "kept_groups": 0,
                "discarded_rollouts": 2 * P * G,
                "discarded_tokens": 50 + 10 * s,
                "skipped_update": 1.0,
            }
            for s in (0, 1)
        ]  # fmt: skip
    )
    result = StudyResult(preset, pd.DataFrame(), samples, steps, ("A", "B", "C"))
    cost = study.generation_cost(result, reference="A").set_index("method")
    assert list(cost.index) == ["B", "C"]
    assert cost.loc["B", "rollouts_per_step"] == (2 * P * G + 8) / 2
    assert cost.loc["B", "tokens_per_run"] == 260 and cost.loc["B", "optimizer_steps"] == 2
    assert cost.loc["C", "rollouts_per_step"] == P * G + 3 * G + 2 * P * G  # one optimizer step
    assert cost.loc["C", "tokens_per_run"] == 165 and cost.loc["C", "tokens_per_run_sd"] == pytest.approx(
        np.std([160, 170], ddof=1)
    )
    assert cost.loc["B", "gain"] == pytest.approx(0.25)
    assert cost.loc["C", "gain_per_million_tokens"] == pytest.approx(np.mean([0.25e6 / 160, 0.25e6 / 170]))
    with pytest.raises(ValueError, match="reference method 'SFT' is not in the study"):
        study.generation_cost(result, reference="SFT")
    figure = plots.cost_figure(cost.reset_index(), {"B": "baseline", "C": "field"})
    outputs.save_figure(figure, "cost", folder=tmp_path)
    assert (tmp_path / "cost.png").stat().st_size > 1000


def test_zero_claims_read_each_methods_level_against_zero(result):
    table = zero_claims_table(result, ["A", "B"], metric="pass@1", label="zero", n_resamples=500)
    rows = table.set_index("contrast")
    assert list(table.columns) == list(
        paired_table(result, [("A", "B")], ("pass@1",), n_resamples=10).columns
    )
    assert rows.loc["A vs zero", "diff"] == pytest.approx(0.5) and rows.loc["B vs zero", "diff"] == 0.1875
    assert rows.loc["A vs zero", "mde"] == pytest.approx(
        compare(problem_matrix(result, "A", "pass@1"), np.zeros((4, 2)), 0, 500).mde
    )
    # two seeds (t with 1 degree of freedom): some tasks solved, yet the interval reaches zero
    assert set(rows["verdict"]) == {"inside noise"}
    seeds = (0, 1, 2)
    preset = study_preset("tiny", seeds=seeds)
    solved = pd.concat([_samples("S", s, [4, 3, 4, 2, 4, 4]) for s in seeds], ignore_index=True)
    nothing = pd.concat([_samples("Z", s, [0, 0, 0]) for s in seeds], ignore_index=True)
    three = StudyResult(preset, pd.DataFrame(), pd.concat([solved, nothing]), pd.DataFrame(), ("S", "Z"))
    rows = zero_claims_table(three, ["S", "Z"], metric="pass@4", n_resamples=200).set_index("contrast")
    assert rows.loc["S vs zero", "verdict"] == "reversed"  # every task solved under every seed
    # nothing solved under any seed: the claim holds and the MDE is what that rules out
    z = rows.loc["Z vs zero"]
    assert (z["verdict"], z["diff"], z["n_tasks"]) == ("holds", 0.0, 3)
    assert z["mde"] == pytest.approx(zero_bound(3))


def test_a_reports_paired_table_is_redone_with_theirs_beside(result):
    theirs = pd.DataFrame(
        {"a": ["A"], "b": ["B"], "metric": ["pass@1"], "diff": [0.1], "ci_low": [-0.1], "ci_high": [0.3]}
    )
    table = study.paired_beside(result, theirs, n_resamples=300).iloc[0]
    ours = paired_table(result, [("A", "B")], ("pass@1",), n_resamples=300).iloc[0]
    for column in ("contrast", "diff", "ci_low", "ci_high", "mde", "n_seeds", "verdict"):
        assert table[column] == ours[column], column
    assert (table["their_diff"], table["their_low"], table["their_high"]) == (0.1, -0.1, 0.3)
    with pytest.raises(ValueError, match="lacks column.*ci_high"):
        study.paired_beside(result, theirs.drop(columns="ci_high"))
