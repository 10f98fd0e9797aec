"""Report 003's solution-count staged curriculum: the ranking, the stages and the pools they draw from."""

import numpy as np
import pytest

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.generate import generate_tasks
from countdown_study.samplers import make_sampler
from countdown_study.samplers.solution_count import SolutionCountStagedConfig, easiest_first, stage_of

POOL = generate_tasks(300, seed=3)


def test_ranking_puts_most_solutions_first_and_keeps_pool_order_in_ties():
    assert easiest_first(np.array([3, 75, 1, 75, 3])).tolist() == [1, 3, 0, 4, 2]


def test_stages_last_30_40_30_percent_of_the_run():
    assert [stage_of(s, 10, (0.3, 0.4, 0.3)) for s in range(12)] == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    assert [stage_of(s, 60, (0.3, 0.4, 0.3)) for s in (17, 18, 41, 42, 59)] == [0, 1, 1, 2, 2]


def test_each_stage_draws_from_the_easiest_share_of_the_pool():
    sampler = make_sampler("solution_count_staged", POOL, seed=1, total_steps=10)
    counts = solution_counts(POOL)
    rank = {int(i): r for r, i in enumerate(easiest_first(counts))}
    for step, share in ((0, 0.3), (3, 0.7), (9, 1.0)):
        batch = sampler.next_batch(step, 64)
        assert max(rank[i] for i in batch.indices) < round(share * len(POOL))
        assert set(batch.arms) == {f"easiest {round(100 * share)}%"}
    early = [i for s in range(3) for i in sampler.next_batch(s, 64).indices]
    assert np.mean(counts[early]) > np.mean(counts)  # the first stage trains on many-solution prompts
    again = make_sampler("solution_count_staged", POOL, seed=1, total_steps=10)
    assert again.next_batch(5, 16) == sampler.next_batch(5, 16)  # the same seed and step give the same batch


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"step_fractions": (0.5, 0.4, 0.3)}, "sum to 1"),
        ({"pool_fractions": (0.7, 0.3, 1.0)}, "pool_fractions"),
        ({"step_fractions": (0.5, 0.5)}, "one entry per stage"),
        ({"total_steps": 0}, "total_steps"),
    ],
)
def test_bad_schedules_are_refused_naming_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        SolutionCountStagedConfig(**changes)


def test_the_run_length_is_required():
    with pytest.raises(ValueError, match="total_steps"):
        make_sampler("solution_count_staged", POOL, seed=0)
