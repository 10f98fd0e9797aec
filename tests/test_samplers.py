"""Samplers: the uniform baselines and the interface contract."""

import json

import numpy as np
import pytest
from synthetic import grades_of

from countdown_study.countdown import generate_tasks
from countdown_study.countdown.task import Task
from countdown_study.samplers import Batch, make_sampler

POOL = [Task((1, 2, 3), t) for t in range(10, 23)]  # 13 tasks: batches of 4 cross epoch boundaries


def test_uniform_without_replacement_visits_every_task_once_per_epoch():
    sampler = make_sampler("uniform", POOL, seed=3)
    stream = np.concatenate([sampler.choose(step, 4) for step in range(13)])  # 52 draws = 4 epochs
    for epoch in range(4):
        assert sorted(stream[13 * epoch : 13 * (epoch + 1)]) == list(range(13))
    assert not np.array_equal(stream[:13], stream[13:26])  # a fresh shuffle each epoch


def test_uniform_with_replacement_is_seeded_and_in_range():
    a = make_sampler("uniform_replacement", POOL, seed=5)
    b = make_sampler("uniform_replacement", POOL, seed=5)
    c = make_sampler("uniform_replacement", POOL, seed=6)
    draws = [a.next_batch(s, 8).indices for s in range(20)]
    assert draws == [b.next_batch(s, 8).indices for s in range(20)]
    assert draws != [c.next_batch(s, 8).indices for s in range(20)]
    flat = np.concatenate(draws)
    assert flat.min() >= 0 and flat.max() < len(POOL)
    assert any(len(set(d)) < len(d) for d in draws)  # with replacement: repeats happen within a batch


def test_batch_tasks_match_indices():
    batch = make_sampler("uniform", POOL, seed=0).next_batch(2, 5)
    assert batch.tasks == tuple(POOL[i] for i in batch.indices)


def synthetic_observation(step: int, batch: Batch, group_size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Seeded rewards and RLOO advantages ``(P, G)`` for a batch: task i is solved with probability
    ``(i % 10) / 10``, else it gets the format score or nothing (a pure function of step and batch)."""
    rng = np.random.default_rng((11, step))
    p_correct = np.array([(i % 10) / 10 for i in batch.indices])[:, None]  # (P, 1)
    draws = rng.random((len(batch.indices), group_size))  # (P, G)
    rewards = np.where(draws < p_correct, 1.0, np.where(draws < 0.8, 0.1, 0.0))  # (P, G)
    others_mean = (rewards.sum(axis=1, keepdims=True) - rewards) / (group_size - 1)  # (P, G)
    return rewards, rewards - others_mean


def run_steps(sampler, steps: range, batch_size: int = 6) -> list[tuple[int, ...]]:
    """Draw and observe one batch per step; the batches' indices."""
    drawn = []
    for step in steps:
        batch = sampler.next_batch(step, batch_size)
        rewards, advantages = synthetic_observation(step, batch)
        sampler.observe(step, batch, grades_of(rewards), advantages)
        drawn.append(batch.indices)
    return drawn


@pytest.mark.parametrize("name", ["adaptive_v1", "sliding_window"])
def test_resumed_sampler_repeats_the_same_batches(name):
    pool = generate_tasks(60, 1)
    first = make_sampler(name, pool, seed=3)
    run_steps(first, range(15))  # past sliding_window's 10-step window: the level has moved
    saved = json.loads(json.dumps(first.state_dict()))
    fresh_state = make_sampler(name, pool, seed=3).state_dict()
    assert saved != fresh_state  # the steps changed the state, so a no-op load would be caught

    restored = make_sampler(name, pool, seed=3)
    restored.load_state_dict(saved)
    assert restored.state_dict() == saved
    assert run_steps(restored, range(15, 25)) == run_steps(first, range(15, 25))
    assert restored.state_dict() == first.state_dict()


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="unknown sampler 'nope'"):
        make_sampler("nope", POOL)
    with pytest.raises(ValueError, match="pool is empty"):
        make_sampler("uniform", [])
    with pytest.raises(ValueError, match="batch_size"):
        make_sampler("uniform", POOL).next_batch(0, 0)
    with pytest.raises(ValueError, match="indices"):
        Batch((POOL[0],), (0, 1))
