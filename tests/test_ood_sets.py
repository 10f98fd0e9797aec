"""Report 004's out-of-distribution sets: the 5-number tasks (at the floor for our policy) and tasks with
targets above the training range (``ood_targets``), which the shipped policy solves now and then."""

from dataclasses import replace

import numpy as np
import pytest

from countdown_study import load_policy, study
from countdown_study.countdown import generate_ood_target_tasks, load_tasks, solvable
from countdown_study.countdown.load import limit_spec
from countdown_study.evaluation.evaluate import EVAL_SAMPLING, evaluate
from countdown_study.reporting.deviations import deviations
from countdown_study.study.methods import method_config
from countdown_study.study.presets import study_preset
from countdown_study.training.specs import HELD_OUT, TRAIN_POOL


def test_the_target_set_is_three_and_four_numbers_above_the_training_targets():
    tasks = load_tasks("ood_targets:200:0")
    assert tasks == generate_ood_target_tasks(200, 0) == load_tasks("ood_targets:200:0")  # seeded
    targets = np.array([t.target for t in tasks])
    counts = np.array([t.num_count for t in tasks])
    assert targets.min() >= 101 and targets.max() <= 200 and set(counts) == {3, 4}
    assert 0.35 < (counts == 3).mean() < 0.65 and solvable(tasks).all()
    seen = {t.key for source in (TRAIN_POOL, HELD_OUT) for t in load_tasks(source)}
    assert max(key[1] for key in seen) <= 100 and not seen & {t.key for t in tasks}  # never trained on
    assert limit_spec("ood_targets:200:0", 100) == "ood_targets:100:0"
    with pytest.raises(ValueError, match="ood_targets:COUNT:SEED"):
        load_tasks("ood_targets:ten:0")


def test_report_004_rows_evaluate_both_sets_and_other_rows_none():
    full, quick = study_preset("full"), study_preset("quick")
    both = (("ood", "ood:200:0"), ("ood_targets", "ood_targets:200:0"))
    for method in study.REPORT_004:
        assert method_config(method, full, 0).eval.extra_sets == both
        capped = method_config(method, quick, 0).eval.extra_sets  # no more than the preset's held-out tasks
        assert capped == tuple((name, limit_spec(source, quick.eval_limit)) for name, source in both)
    for method in (study.UNIFORM, *study.REPORT_003, *study.REPORT_000):
        assert method_config(method, full, 0).eval.extra_sets == ()  # their configs and run ids unchanged


@pytest.mark.slow
def test_the_shipped_policy_solves_some_target_tasks_exactly():
    """``countdown-study eval --policy embedded --tasks ood_targets:100:0 --n 16`` in Python: an exact pass@16
    above zero (the floor every row sits at on the 5-number set), counting exact solutions only."""
    model, tokenizer = load_policy("embedded")
    result = evaluate(model, tokenizer, load_tasks("ood_targets:100:0"), n=16, seed=0,
                      sampling=replace(EVAL_SAMPLING, max_new_tokens=224))  # fmt: skip
    solved = result.problems["correct"].to_numpy() > 0  # (100,) a task with an exact solution among 16
    assert result.summary["pass@16"] == solved.mean() > 0
    assert (
        result.samples.loc[result.samples["correct"], "reward"].eq(1.0).all()
    )  # the format score is not a solve


def test_the_deviations_rows_name_both_sets_and_the_nonzero_rule():
    rows = deviations("004").set_index("what")
    assert "ood:200:0" in rows.loc["OOD sets", "ours"] and "ood_targets:200:0" in rows.loc["OOD sets", "ours"]
    assert "101..200" in rows.loc["OOD sets", "ours"] and rows.loc["OOD sets", "where set"].startswith(
        "study.OOD_SET"
    )
    assert "format score included" in rows.loc["OOD nonzero pass@16", "ours"]
