"""Study presets: report 003's checkpoint evaluations follow the preset's steps, and the full preset's
sweep runs have the config of a fixed interval of 10 steps on 200 validation tasks."""

from dataclasses import replace

import pytest

from countdown_study.runs.files import canonical_json
from countdown_study.study import SNAPSHOTS, VCC_SWEEP, VCC_SWEEP_CONTROL, study_preset
from countdown_study.study.methods import method_config
from countdown_study.training.common import snapshot_steps


@pytest.mark.parametrize(
    ("preset", "changes", "every", "steps"),
    [
        ("full", {}, 10, (10, 20, 30, 40, 50, 60)),  # report 003: every 10 of 60 steps
        ("quick", {}, 2, (2, 3)),  # rounded up: two checkpoints of three steps, not three
        ("quick", {"steps": 4}, 2, (2, 4)),
        ("quick", {"steps": 12}, 6, (6, 12)),  # the interval follows the steps
        ("full", {"steps": 61}, 11, (11, 22, 33, 44, 55, 61)),  # never more than the preset's six
        ("quick", {"steps": 1}, 1, (1,)),  # never below one step
        ("tiny", {}, 2, (2,)),
    ],
)
def test_snapshots_follow_the_presets_steps(preset, changes, every, steps):
    at = study_preset(preset, **changes)
    config = method_config(VCC_SWEEP_CONTROL, at, seed=0)
    assert config.eval.snapshot_every == at.snapshot_every == every
    assert config.eval.validation_size == at.validation_size
    assert snapshot_steps(config.eval, config.steps) == steps


def test_the_full_sweep_runs_keep_the_config_of_a_fixed_interval_of_ten():
    full = study_preset("full")
    for method in (VCC_SWEEP_CONTROL, *VCC_SWEEP):
        plain = method_config(replace(method, evaluation={}), full, seed=3)
        fixed = replace(
            plain, eval=replace(plain.eval, snapshot_every=10)
        )  # how the rows were written before
        assert canonical_json(method_config(method, full, seed=3)) == canonical_json(fixed)


def test_rows_without_snapshots_are_unchanged():
    quick = study_preset("quick")
    assert SNAPSHOTS == {"snapshots": True}
    plain = replace(VCC_SWEEP_CONTROL, evaluation={})
    assert method_config(plain, quick, 0).eval.snapshot_every == 0
    explicit = replace(
        VCC_SWEEP_CONTROL, evaluation={**SNAPSHOTS, "snapshot_every": 3}
    )  # an explicit change wins
    assert method_config(explicit, quick, 0).eval.snapshot_every == 3
