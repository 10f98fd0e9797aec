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


def _observe(sampler, step, success, size=16):
    """Hand the sampler a batch whose share of correct samples is ``success`` (4 samples per prompt)."""
    from synthetic import grades_of

    batch = sampler.next_batch(step, size)
    correct = np.zeros((size, 4))
    correct.flat[: round(success * correct.size)] = 1.0
    sampler.observe(step, batch, grades_of(correct), np.zeros((size, 4)))
    return batch


def test_adaptive_frontier_moves_on_success_with_a_dwell():
    """Worked example: EMA 0.8, threshold 0.5, dwell 3. Success 0.75 from step 0: the EMA is 0.75 at once,
    the first move comes when three steps are seen (after step 2), the next three steps later."""
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1)
    shares = []
    for step in range(9):
        _observe(sampler, step, 0.75)
        shares.append(round(sampler.share, 2))
    assert shares == [0.3, 0.3, 0.4, 0.4, 0.4, 0.5, 0.5, 0.5, 0.6]
    low = make_sampler("solution_count_adaptive", POOL, seed=1)
    for step in range(9):
        _observe(low, step, 0.25)
    assert low.share == 0.3 and low.success_ema == pytest.approx(0.25)  # never moves below the threshold


def test_adaptive_draws_from_its_frontier_and_resumes():
    counts = solution_counts(POOL)
    rank = {int(i): r for r, i in enumerate(easiest_first(counts))}
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1, start_fraction=0.2, growth=0.5)
    for step in range(3):
        batch = _observe(sampler, step, 1.0)
        assert max(rank[i] for i in batch.indices) < 0.2 * len(POOL) and set(batch.arms) == {"easiest 20%"}
    assert sampler.share == pytest.approx(0.7) and sampler.stats()["frontier"] == pytest.approx(0.2)
    resumed = make_sampler("solution_count_adaptive", POOL, seed=1, start_fraction=0.2, growth=0.5)
    resumed.load_state_dict(sampler.state_dict())
    assert resumed.next_batch(3, 32) == sampler.next_batch(3, 32)
    assert max(rank[i] for i in sampler.next_batch(3, 256).indices) >= 0.2 * len(POOL)


def test_hybrid_never_falls_behind_the_staged_schedule():
    hybrid = make_sampler("solution_count_hybrid", POOL, seed=1, total_steps=10)
    for step in range(10):
        _observe(hybrid, step, 0.0)  # a policy that never succeeds: the staged clock alone moves it
        assert hybrid.frontier(step) == (0.3, 0.3, 0.3, 0.7, 0.7, 0.7, 0.7, 1.0, 1.0, 1.0)[step]
    fast = make_sampler("solution_count_hybrid", POOL, seed=1, total_steps=10, growth=0.3)
    for step in range(3):
        _observe(fast, step, 1.0)
    assert fast.frontier(3) == pytest.approx(0.7) and fast.frontier(2) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="hybrid solution-count curriculum needs the option total_steps"):
        make_sampler("solution_count_hybrid", POOL, seed=1)
    with pytest.raises(ValueError, match="threshold must be in"):
        make_sampler("solution_count_adaptive", POOL, seed=1, threshold=0.0)
