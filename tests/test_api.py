"""The public names of ``../shared/API.md``: importable from the top level, lazily, with their worked values."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import countdown_study

HOMES = {
    "Task": "countdown_study.countdown",
    "generate_tasks": "countdown_study.countdown",
    "load_tasks": "countdown_study.countdown",
    "solve": "countdown_study.countdown",
    "solution_count": "countdown_study.countdown",
    "difficulty_vectors": "countdown_study.countdown",
    "compute_score": "countdown_study.countdown",
    "verify": "countdown_study.countdown",
    "scan_answers": "countdown_study.countdown",
    "load_policy": "countdown_study.policy",
    "pass_at_k": "countdown_study.evaluation.passk",
    "compare": "countdown_study.study.compare",
}
"""Each public name and the module that defines it (the contract, written out independently)."""
GROUND_TRUTH = {"target": 24, "numbers": [1, 2, 6, 8]}


@pytest.mark.parametrize("name", sorted(HOMES))
def test_public_name_is_its_home_modules_object(name):
    assert getattr(countdown_study, name) is getattr(importlib.import_module(HOMES[name]), name)


def test_public_names_are_listed():
    assert sorted(countdown_study.__all__) == sorted(HOMES)
    assert set(HOMES) <= set(dir(countdown_study))


def test_from_import_works():
    from countdown_study import Task, generate_tasks, solution_count

    tasks = generate_tasks(3, 0)
    assert len(tasks) == 3 and all(isinstance(t, Task) for t in tasks)
    assert solution_count([1, 2, 6, 8], 24) == 75


@pytest.mark.parametrize("name", ["countdown", "evaluation", "samplers", "study", "paths", "seeding"])
def test_subpackages_are_attributes(name):
    assert getattr(countdown_study, name) is importlib.import_module(f"countdown_study.{name}")
    assert name in dir(countdown_study)


def test_unknown_attribute_names_itself():
    with pytest.raises(AttributeError, match="'no_such_name'"):
        countdown_study.no_such_name  # noqa: B018
    assert not hasattr(countdown_study, "compare_not_yet")


def test_worked_values():
    assert countdown_study.solution_count([1, 2, 6, 8], 24) == 75
    assert countdown_study.solve([1, 2, 6, 8], 24) is not None
    # correct: (8 - 2) * (6 - 1) = 30 from [8, 2, 6, 1]
    assert (
        countdown_study.compute_score(
            "<answer>(8 - 2) * (6 - 1)</answer>", {"target": 30, "numbers": [8, 2, 6, 1]}
        )
        == 1.0
    )
    # correct, with a non-integer intermediate: 8 * (6 / 2) * 1 = 24
    assert countdown_study.compute_score("<answer>8 * (6 / 2) * 1</answer>", GROUND_TRUTH) == 1.0
    # well-formed but 30, not 24: the format score
    assert countdown_study.compute_score("<answer>(8 - 2) * (6 - 1)</answer>", GROUND_TRUTH) == 0.1
    assert (
        countdown_study.compute_score("<answer>(8 - 2) * (6 - 1)</answer>", GROUND_TRUTH, format_score=0.0)
        == 0.0
    )
    # no answer span at all
    assert countdown_study.compute_score("the answer is 24", GROUND_TRUTH) == 0.0
    verdict = countdown_study.verify("<answer>8 * (6 / 2) * 1</answer>", [1, 2, 6, 8], 24)
    assert (verdict.reward, verdict.reason) == (1.0, "ok")
    assert (
        len(
            countdown_study.scan_answers(
                "<answer>1</answer> <answer>8 * (6 / 2) * 1</answer>", [1, 2, 6, 8], 24
            ).spans
        )
        == 2
    )
    assert countdown_study.pass_at_k(10, 3, 1) == 0.3
    assert countdown_study.pass_at_k(5, 5, 2) == 1.0
    assert countdown_study.pass_at_k(5, 0, 2) == 0.0


def test_ground_truth_loads_no_torch():
    code = (
        "import sys\n"
        "import countdown_study\n"
        "gt = {'target': 24, 'numbers': [1, 2, 6, 8]}\n"
        "assert countdown_study.compute_score('<answer>8 * (6 / 2) * 1</answer>', gt) == 1.0\n"
        "assert countdown_study.solution_count([1, 2, 6, 8], 24) == 75\n"
        "assert countdown_study.pass_at_k(10, 3, 1) == 0.3\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_compare_is_the_study_comparison_on_tasks_by_seeds():
    a = [[0.5, 0.5, 0.5], [1.0, 0.75, 1.0]]
    b = [[0.25, 0.5, 0.25], [0.75, 0.5, 1.0]]
    result = countdown_study.compare(a, b, n_resamples=200)
    assert result.diff == pytest.approx(1.0 / 6) and result.ci_low <= result.diff <= result.ci_high
    assert result.n_tasks == 2 and result.n_seeds == 3
