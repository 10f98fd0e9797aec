"""Which committed runs the fixes of report 003's and 004's methods invalidate, and that no other does.

Every run the notebooks plan at the full preset keeps its committed id, except the runs of the rows below,
whose configs or identities changed on purpose (to be re-run): for those, the id the row had before the fix
is a committed run and differs from the id it has now. The first adaptive and hybrid runs stay reusable as
the variant rows of their rule."""

from dataclasses import replace

import pytest

from countdown_study import study
from countdown_study.paths import runs_dir
from countdown_study.policy import policy_identity
from countdown_study.runs.store import RunStore, is_finished
from countdown_study.samplers.solution_count import SOLUTION_COUNT_STAGED, stage_of
from countdown_study.study import grid, scale
from countdown_study.study.methods import locate_config, method_config
from countdown_study.study.presets import study_preset

FIRST_OOD_SET = (("ood", "ood:200:0"),)
CHANGED_ROWS = {
    # report 003: the adaptive and hybrid rows widen on the progress rule (5 seeds x 2 policies each)
    "Adaptive curriculum": 10,
    "Hybrid curriculum": 10,
    # report 003's tight sweep: its validation tasks are out of the training pool (identity "validation")
    "Sweep control (c = 0)": 5,
    **{f"VCC c = {c}": 5 for c in study.VCC_COEFFICIENTS},
    # report 004: every row also evaluates ood_targets; the teacher row's id also covers the teacher's weights;
    # the two routers that make up tasks never propose one the run evaluates (identity "proposals")
    **{method.name: 5 for method in study.REPORT_004},
}
"""Rows whose full-preset runs have new ids, and how many runs each (70 in all)."""
NEW_ROWS = {study.UNIFORM_SEQUENCE_SUM.name, study.ADAPTIVE_V2_REPORT_WARMUP.name}
"""Rows added with the fixes (the reports' loss aggregation, v2's proportional warm-up): no run before."""


OTHER_SIZES = {size.policy for size in scale.SIZES if size.name != "embedded"}
"""The scale study's other sizes (notebook 09): their runs are new, not re-runs of committed ones."""


@pytest.fixture(scope="module")
def rows():
    """(method, preset) of every row the notebooks plan at the full preset, once each, but the other
    sizes'."""
    seen = {}
    for _, method, at in grid.grid_rows(sorted(grid.NOTEBOOK_STUDIES), "full"):
        if at.data.policy not in OTHER_SIZES:
            seen.setdefault((method.name, at.data.policy), (method, at))
    return list(seen.values())


def id_before_the_fixes(method, at, seed) -> str:
    """The run id ``method`` had at ``seed`` before the fixes: its first rule, its one OOD set, and an
    identity of the starting policy alone."""
    first = replace(method, options={k: v for k, v in method.options.items() if k != "rule"})
    first = replace(first, eval_sets=FIRST_OOD_SET) if method.eval_sets else first
    config = method_config(first, at, seed)
    return RunStore.locate(config, prefix="rloo", identity=policy_identity(config.data.policy)).run_id


def test_only_the_fixed_rows_have_new_run_ids(rows):
    new = {}
    for method, at in rows:
        if method.name in NEW_ROWS:
            continue
        for seed in at.seeds:
            now = locate_config(method.kind, method_config(method, at, seed)).run_id
            if method.name not in CHANGED_ROWS:
                assert is_finished(runs_dir() / now), (method.name, seed, now)
                continue
            before = id_before_the_fixes(method, at, seed)
            assert is_finished(runs_dir() / before) and before != now, (method.name, seed)
            new[method.name] = new.get(method.name, 0) + 1
    assert new == CHANGED_ROWS and sum(new.values()) == 70


@pytest.mark.parametrize("policy", ["embedded", "embedded-search"])
def test_the_first_adaptive_and_hybrid_runs_are_the_threshold_rows(policy):
    full = study_preset("full", policy=policy)
    rows = study.REPORT_003_THRESHOLD if policy == "embedded-search" else study.REPORT_003_THRESHOLD_EMBEDDED
    for method in rows:
        for seed in full.seeds:
            store = locate_config("rloo", method_config(method, full, seed))
            assert is_finished(store.path), (method.name, seed)
            steps = store.read_steps()
            if method.sampler == "solution_count_adaptive":  # the success EMA never reached 0.5
                assert {s["sampler_adaptive_share"] for s in steps} == {0.3}
            else:  # never ahead of the staged schedule: the staged curriculum's prompts, seed for seed
                fractions = SOLUTION_COUNT_STAGED.step_fractions
                stages = [
                    SOLUTION_COUNT_STAGED.pool_fractions[stage_of(s["step"], full.steps, fractions)]
                    for s in steps
                ]
                assert [s["sampler_frontier"] for s in steps] == stages
