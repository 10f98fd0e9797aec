"""The ablation rows of the loss aggregation and of report 000's warm-up, and the deviations they need:
what each row runs, that the rows already run keep their run ids, and what the tables say."""

import json
from dataclasses import replace

import pytest

from countdown_study import study
from countdown_study.paths import tables_dir
from countdown_study.reporting.deviations import deviations
from countdown_study.samplers import make_sampler
from countdown_study.samplers.feature_space import FSC_PRESETS, fsc_deviations
from countdown_study.study.methods import locate_config, method_config
from countdown_study.study.presets import study_preset
from countdown_study.training.common import study_tasks

REPORTS = ("000", "001", "002", "003", "004", "field")


@pytest.fixture(scope="module")
def full():
    return study_preset("full")


def test_the_sequence_sum_row_changes_only_the_aggregation(full):
    uniform = method_config(study.UNIFORM, full, 0)
    summed = method_config(study.UNIFORM_SEQUENCE_SUM, full, 0)
    assert uniform.loss.aggregation == "token_mean" and summed.loss.aggregation == "token_sum"
    assert summed.loss.kl_coef == summed.loss.entropy_coef == 0.001  # the preset's coefficients kept
    assert replace(summed, loss=uniform.loss) == uniform
    ids = {locate_config("rloo", c).run_id for c in (uniform, summed)}
    assert len(ids) == 2


def test_rows_already_run_keep_their_committed_run_ids(full):
    recorded = json.loads((tables_dir("full") / "curricula_000_paired.meta.json").read_text())["runs"]
    committed = {(r["method"], r["seed"]): r["run_id"] for r in recorded}
    for method in (study.UNIFORM, *study.REPORT_000):
        for seed in full.seeds:
            assert (
                locate_config("rloo", method_config(method, full, seed)).run_id
                == committed[method.name, seed]
            )


def test_the_report_warmup_row_is_a_fifth_of_the_run():
    at, warmup = study_preset("full"), 12  # 20% of the full preset's 60 steps
    assert at.steps == 60
    config = method_config(study.ADAPTIVE_V2_REPORT_WARMUP, at, 0)
    assert config.sampler == "adaptive_v2"
    assert config.sampler_options == {"warmup_fraction": 0.2, "total_steps": at.steps}
    pool = study_tasks(at.run_data)[0][:50]
    assert make_sampler(config.sampler, pool, 0, **config.sampler_options).config.warmup == warmup
    assert method_config(study.REPORT_000[3], at, 0).sampler_options == {}  # "Adaptive v2": 20 steps


def test_every_deviations_table_names_the_loss_aggregation():
    for report in REPORTS:
        row = deviations(report).set_index("what").loc["RLOO loss aggregation"]
        assert "summed" in row["report's value"] and "RLOO uniform (sequence-sum)" in row["ours"]
        assert row["where set"] == "RLOOConfig.aggregation"


def test_report_000_and_003_rows_of_this_study():
    rows = deviations("000").set_index("what")
    assert "a third of the 60-step run" in rows.loc["reward-adaptive v2 warm-up", "ours"]
    assert "(1 - s_b) + 0.1" in rows.loc["fixed-bucket weighting after the unlock", "ours"]
    assert rows.loc["fixed-bucket starting EMA", "where set"] == "FixedBucketConfig.initial_ema"
    assert "latched" in rows.loc["fixed-bucket unlock", "ours"]
    assert "final checkpoint" in deviations("003").set_index("what").loc["Table 1 checkpoints", "ours"]


def test_the_fsc_deviations_show_the_probe_the_runs_were_given(full):
    options = method_config(study.REPORT_002[0], full, 0).sampler_options
    rows = {
        d.what: d.ours for d in fsc_deviations(replace(FSC_PRESETS[study.REPORT_002[0].sampler], **options))
    }
    assert rows["probe size"] == str(full.prompts_per_step) == "32"
