"""The number-count mix of the solution-count curricula's frontiers, on a worked example and against a plain
reference."""

import numpy as np
import pandas as pd
import pytest

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.task import Task
from countdown_study.study.frontier_mix import frontier_columns, frontier_mix, training_mix

POOL = [Task((3, 5, 7), 22), Task((2, 9, 4), 17), Task((1, 2, 3, 4), 10), Task((2, 3, 4, 6), 24)]
"""Solution counts 1, 1, 54, 28: the two four-number tasks rank easiest."""


def test_the_worked_pools_solution_counts():
    assert solution_counts(POOL).tolist() == [1, 1, 54, 28]


def test_frontier_mix_on_the_worked_pool():
    mix = frontier_mix(POOL, (0.5, 0.75, 1.0))
    assert mix["tasks"].tolist() == [2, 3, 4]
    assert mix["four_number_share"].tolist() == pytest.approx([1.0, 2 / 3, 0.5])
    assert mix["median_solutions"].tolist() == [41.0, 28.0, 14.5]
    with pytest.raises(ValueError, match="share of the pool"):
        frontier_mix(POOL, (0.0,))


def test_frontier_mix_equals_a_plain_sort_on_a_generated_pool():
    pool = load_tasks("generated:400:3")
    counts = solution_counts(pool, cap=128)
    order = sorted(range(len(pool)), key=lambda i: (-counts[i], i))  # most solutions first, ties in order
    mix = frontier_mix(pool, (0.3, 0.7, 1.0)).set_index("frontier")
    for fraction in (0.3, 0.7, 1.0):
        chosen = order[: round(fraction * len(pool))]
        share = np.mean([pool[i].num_count == 4 for i in chosen])
        assert mix.loc[fraction, "four_number_share"] == pytest.approx(share)
        assert mix.loc[fraction, "median_solutions"] == np.median([counts[i] for i in chosen])


def test_training_mix_weights_each_frontier_by_the_prompts_drawn_from_it():
    steps = pd.DataFrame(
        [
            {"method": "Staged", "step": 0, "batch_easiest 50%": 4},
            {"method": "Staged", "step": 1, "batch_easiest 50%": 4},
            {"method": "Staged", "step": 2, "batch_easiest 100%": 4},
            {"method": "Uniform", "step": 0},  # draws from no frontier: left out
        ]
    )
    assert frontier_columns(steps) == {"batch_easiest 50%": 0.5, "batch_easiest 100%": 1.0}
    mix = training_mix(steps, POOL)
    assert mix.to_dict("records") == [
        {"method": "Staged", "prompts": 12, "four_number_share": pytest.approx((8 * 1.0 + 4 * 0.5) / 12),
         "pool_four_number_share": 0.5}
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no frontier columns"):
        training_mix(steps[["method", "step"]], POOL)
