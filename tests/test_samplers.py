"""Samplers: the uniform baselines and the interface contract."""

import numpy as np
import pytest

from countdown_study.countdown.tasks import Task
from countdown_study.samplers import Batch, make_sampler
from countdown_study.seeding import derive_rng

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


def test_resumed_sampler_repeats_the_same_batches():
    first = make_sampler("uniform", POOL, seed=9)
    first.load_state_dict(first.state_dict())
    fresh = make_sampler("uniform", POOL, seed=9)
    assert [first.next_batch(s, 4).indices for s in range(7, 12)] == [
        fresh.next_batch(s, 4).indices for s in range(7, 12)
    ]


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="unknown sampler 'nope'"):
        make_sampler("nope", POOL)
    with pytest.raises(ValueError, match="pool is empty"):
        make_sampler("uniform", [])
    with pytest.raises(ValueError, match="batch_size"):
        make_sampler("uniform", POOL).next_batch(0, 0)
    with pytest.raises(ValueError, match="indices"):
        Batch((POOL[0],), (0, 1))
