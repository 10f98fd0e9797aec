"""The task survey's group-bys on a hand-made Difficulty Vector table, and ``survey_table`` on three
tasks whose solution counts report 003 gives."""

import pandas as pd
import pytest

from countdown_study.countdown import DV_COLUMNS, Task
from countdown_study.study import survey

# num_count, target, solution_count, shortest_expression_depth, requires_fraction, tier, level
ROWS = [
    (3, 10, 1, 1, False, "T0", "easy"),
    (3, 60, 5, 2, False, "T1", "easy"),
    (3, 20, 128, 2, True, "T0", "easy"),
    (4, 24, 75, 2, False, "T1", "medium"),
    (4, 90, 1, 3, False, "T3", "hard"),
    (4, 100, 10, 3, False, "T2", "medium"),
    (4, 40, 128, 2, False, "T1", "medium"),
    (4, 50, 2, 3, False, "T3", "hard"),
    (5, 30, 7, 2, False, "OOD", "hard"),
    (4, 12, 3, 2, False, "T1", "hard"),
]
COLUMNS = ["num_count", "target", "solution_count", "shortest_expression_depth", "requires_fraction"]


@pytest.fixture
def dv():
    return pd.DataFrame(ROWS, columns=[*COLUMNS, "tier", "level"])


def test_by_num_count_worked_example(dv):
    table = survey.by_num_count(dv)
    assert list(table.columns) == [
        "num_count", "tasks", "target_mean", "solutions_median", "single_solution", "at_cap",
        "depth_mean", "needs_fraction",
    ]  # fmt: skip
    assert table["num_count"].tolist() == [3, 4, 5]
    assert table["tasks"].tolist() == [3, 6, 1]
    assert table["target_mean"].tolist() == pytest.approx([30.0, 316 / 6, 30.0])
    assert table["solutions_median"].tolist() == [5.0, 6.5, 7.0]  # 1 5 128 | 1 2 3 10 75 128 | 7
    assert table["single_solution"].tolist() == pytest.approx([1 / 3, 1 / 6, 0.0])
    assert table["at_cap"].tolist() == pytest.approx([1 / 3, 1 / 6, 0.0])  # a count of 128 is at the cap
    assert table["depth_mean"].tolist() == pytest.approx([5 / 3, 2.5, 2.0])
    assert table["needs_fraction"].tolist() == pytest.approx([1 / 3, 0.0, 0.0])


def test_at_cap_follows_the_cap(dv):
    assert survey.by_num_count(dv, cap=10)["at_cap"].tolist() == pytest.approx([1 / 3, 3 / 6, 0.0])


def test_by_tier_worked_example(dv):
    table = survey.by_tier(dv)
    assert list(table.columns) == ["tier", "num_count", "tasks", "solutions_median", "target_mean", "share"]
    rows = list(zip(table["tier"], table["num_count"], table["tasks"], strict=True))
    # TIERS order, OOD last (not alphabetical, where it would come first)
    assert rows == [("T0", 3, 2), ("T1", 3, 1), ("T1", 4, 3), ("T2", 4, 1), ("T3", 4, 2), ("OOD", 5, 1)]
    assert table["solutions_median"].tolist() == [64.5, 5.0, 75.0, 10.0, 1.5, 7.0]
    assert table["target_mean"].tolist() == pytest.approx([15.0, 60.0, 76 / 3, 100.0, 70.0, 30.0])
    assert table["share"].tolist() == pytest.approx([0.2, 0.1, 0.3, 0.1, 0.2, 0.1])
    assert table["share"].sum() == pytest.approx(1.0)
    assert not isinstance(table["tier"].dtype, pd.CategoricalDtype)  # plain labels, as in the saved CSV


def test_by_level_worked_example(dv):
    table = survey.by_level(dv)
    assert list(table.columns) == ["level", "tasks", "solutions_median", "share"]
    assert table["level"].tolist() == ["easy", "medium", "hard"]  # LEVELS order, not alphabetical
    assert table["tasks"].tolist() == [3, 3, 4]
    assert table["solutions_median"].tolist() == [5.0, 75.0, 2.5]
    assert table["share"].tolist() == pytest.approx([0.3, 0.3, 0.4])
    assert table["share"].sum() == pytest.approx(1.0)
    assert not isinstance(table["level"].dtype, pd.CategoricalDtype)


def test_group_bys_leave_the_table_unchanged(dv):
    before = dv.copy()
    survey.by_num_count(dv), survey.by_tier(dv), survey.by_level(dv)
    pd.testing.assert_frame_equal(dv, before)


def test_survey_table_adds_tier_and_level_to_the_difficulty_vector():
    tasks = [Task((1, 2, 6, 8), 24), Task((1, 3, 4, 6), 24), Task((3, 5, 2), 10)]
    dv = survey.survey_table(tasks)
    assert list(dv.columns) == [*DV_COLUMNS, "tier", "level"]
    assert dv["solution_count"].tolist()[:2] == [75, 1]  # report 003's worked examples
    assert dv["tier"].tolist() == ["T1", "T3", "T0"]  # 4 numbers, target <= 75 | sparse | 3 numbers, <= 50
    assert dv["level"].tolist() == ["medium", "hard", "easy"]
