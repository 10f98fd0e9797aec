"""The number-count mix of the solution-count curricula's frontiers, on a worked example and against a plain
reference; whether the adaptive and hybrid frontiers moved, against the samplers themselves."""

import numpy as np
import pandas as pd
import pytest
from synthetic import grades_of

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.task import Task
from countdown_study.samplers.solution_count import (
    SOLUTION_COUNT_HYBRID,
    SolutionCountAdaptiveSampler,
    SolutionCountStagedSampler,
)
from countdown_study.study.frontier_mix import (
    frontier_columns,
    frontier_mix,
    frontier_moves,
    frontier_moves_summary,
    training_mix,
)

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


def _drive(sampler, correct: bool, steps: int = 10, batch_size: int = 8):
    """The sampler's batches and a step log as the training loop writes it (stats after ``observe``)."""
    records, drawn = [], []
    for step in range(steps):
        batch = sampler.next_batch(step, batch_size)
        drawn.append(list(batch.indices))
        grades = grades_of(np.full((len(batch.tasks), 4), float(correct)))
        sampler.observe(step, batch, grades, np.zeros((len(batch.tasks), 4)))
        records.append({"method": "Hybrid", "seed": 7, "step": step,
                        **{f"sampler_{k}": v for k, v in sampler.stats().items()}})  # fmt: skip
    return drawn, pd.DataFrame(records)


def test_frontier_moves_tells_a_hybrid_that_never_leads_from_the_staged_curriculum():
    pool = load_tasks("generated:400:3")
    staged = SolutionCountStagedSampler.from_options(pool, seed=7, total_steps=10)
    staged_batches = [list(staged.next_batch(step, 8).indices) for step in range(10)]

    # Nothing verifies: the adaptive share never widens, the clock sets every frontier, the batches are staged's.
    hybrid = SolutionCountAdaptiveSampler.from_options(
        pool, seed=7, config=SOLUTION_COUNT_HYBRID, total_steps=10
    )
    batches, steps = _drive(hybrid, correct=False)
    moves = frontier_moves(steps)
    assert moves[["moves", "final_share", "max_success_ema", "ahead_steps"]].to_dict("records") == [
        {"moves": 0, "final_share": 0.3, "max_success_ema": 0.0, "ahead_steps": 0}
    ]
    assert np.isnan(moves["first_move"].iloc[0])
    assert batches == staged_batches

    # Everything verifies, one step's dwell, 30% growth: the share widens after steps 0, 1 and 2 (0.6, 0.9, 1.0)
    # and leads the schedule (0.3 for steps 0-2, 0.7 for 3-6, 1.0 from 7) at steps 1-6, where the batches differ.
    fast = SolutionCountAdaptiveSampler.from_options(
        pool, seed=7, config=SOLUTION_COUNT_HYBRID, total_steps=10, growth=0.3, min_dwell=1
    )
    batches, steps = _drive(fast, correct=True)
    moves = frontier_moves(steps).iloc[0]
    assert (moves["moves"], moves["first_move"], moves["final_share"], moves["ahead_steps"]) == (
        3,
        0.0,
        1.0,
        6,
    )
    assert [a != b for a, b in zip(batches, staged_batches, strict=True)] == [False] + [True] * 6 + [
        False
    ] * 3

    summary = frontier_moves_summary(pd.concat([frontier_moves(steps), frontier_moves(steps.assign(seed=8))]))
    assert summary.to_dict("records") == [
        {"method": "Hybrid", "runs": 2, "runs_moved": 2, "mean_final_share": 1.0, "max_success_ema": 1.0,
         "runs_ahead": 2}
    ]  # fmt: skip
    with pytest.raises(ValueError, match="sampler_adaptive_share"):
        frontier_moves(steps.drop(columns="sampler_adaptive_share"))
