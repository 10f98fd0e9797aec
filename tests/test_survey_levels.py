"""Notebook 01's level tables: report 001's nested levels (the default) and our solver partition."""

import pandas as pd
import pytest

from countdown_study import countdown
from countdown_study.countdown import Task
from countdown_study.samplers.sliding_window import level_pools
from countdown_study.study import survey

POOL = [
    Task((3, 5, 2), 10),
    Task((1, 2, 6, 8), 24),  # 75 solutions: medium in our partition
    Task((1, 3, 4, 6), 24),  # 1 solution: hard in our partition
    Task((4, 6, 9), 19),
]


@pytest.fixture(scope="module")
def dv():
    return survey.survey_table(POOL)


def test_report_001s_levels_are_nested(dv):
    table = survey.by_level_pools(dv, level_pools(POOL))
    assert list(table.columns) == ["level", "tasks", "solutions_median", "share"]
    assert table["level"].tolist() == list(countdown.LEVELS)
    assert table["tasks"].tolist() == [2, 2, 4]  # 3 numbers, 4 numbers, every task
    assert table["share"].tolist() == pytest.approx([0.5, 0.5, 1.0])  # nested: shares sum past 1
    counts = dv["solution_count"].tolist()
    assert table["solutions_median"].tolist() == pytest.approx(
        [(counts[0] + counts[3]) / 2, (75 + 1) / 2, pd.Series(counts).median()]
    )


def test_our_partition_is_the_variant(dv):
    assert dv["level"].tolist() == ["easy", "medium", "hard", "easy"]
    assert survey.by_level(dv)["share"].sum() == pytest.approx(1.0)
    assert survey.by_level_pools(dv, level_pools(POOL, "solver"))["tasks"].tolist() == [2, 1, 1]


def test_by_level_pools_refuses_positions_outside_the_table(dv):
    with pytest.raises(ValueError, match="level 'easy' holds positions outside the table's 4 rows"):
        survey.by_level_pools(dv, {"easy": [0, 9]})
