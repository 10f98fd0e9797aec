"""The field's prompt-selection methods as samplers (prime-rl's pools, MoPPS, SEC) on synthetic streams."""

import json
import math
from collections import Counter

import numpy as np
import pytest
from synthetic import grades_of

from countdown_study.countdown import generate_tasks
from countdown_study.countdown.task import Task
from countdown_study.samplers import SAMPLERS, Batch, make_sampler
from countdown_study.samplers.beta_posterior import (
    BetaPosteriorConfig,
    BetaPosteriorSampler,
    candidate_count,
    nearest_to_target,
    posterior_update,
)
from countdown_study.samplers.difficulty_pools import (
    EASY,
    HARD,
    NORMAL,
    POOLS,
    DifficultyPoolsConfig,
    DifficultyPoolsSampler,
    pool_counts,
    pool_labels,
)
from countdown_study.samplers.sec import SECConfig, boltzmann, category_labels, td_update

FIELD = ("difficulty_pools", "beta_posterior", "sec")
POOL = generate_tasks(200, seed=0)
SMALL = [Task((1, 2, 3), t) for t in range(10, 60)]  # 50 tasks


def rows(correct_per_row, group_size=8):
    """(P, G) rewards: row p has ``correct_per_row[p]`` samples at 1.0, the rest at 0.0."""
    return np.array([[1.0] * c + [0.0] * (group_size - c) for c in correct_per_row])


def loo_advantages(rewards):
    """RLOO advantages of (P, G) rewards: each reward minus the mean of the others."""
    rewards = np.asarray(rewards, dtype=np.float64)
    return rewards - (rewards.sum(axis=1, keepdims=True) - rewards) / (rewards.shape[1] - 1)


def stream(step, batch, group_size=8):
    """Seeded rewards of a batch: prompt i is solved with probability (i % 5) / 4 (0, 1/4, ..., 1)."""
    rng = np.random.default_rng((7, step))
    p_correct = np.array([(i % 5) / 4 for i in batch.indices])[:, None]  # (P, 1)
    return (rng.random((len(batch.indices), group_size)) < p_correct).astype(np.float64)  # (P, G)


def run_steps(sampler, steps, batch_size=8):
    """Draw and observe one batch per step; the batches' (indices, arms)."""
    drawn = []
    for step in steps:
        batch = sampler.next_batch(step, batch_size)
        rewards = stream(step, batch)
        sampler.observe(step, batch, grades_of(rewards), loo_advantages(rewards))
        drawn.append((batch.indices, batch.arms))
    return drawn


# ---------------------------------------------------------------------------------------------------
# All three: registry, smoke run, resume, config errors
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIELD)
def test_registered_sampler_builds_and_runs_on_generated_tasks(name):
    assert name in SAMPLERS
    sampler = make_sampler(name, generate_tasks(200, seed=0), seed=0)
    for indices, arms in run_steps(sampler, range(4), batch_size=16):
        assert len(indices) == 16 and all(0 <= i < 200 for i in indices)
        assert not arms or len(arms) == 16
    json.dumps(sampler.stats())
    json.dumps(sampler.state_dict())


@pytest.mark.parametrize("name", FIELD)
def test_resumed_sampler_repeats_the_same_batches(name):
    first = make_sampler(name, POOL, seed=3)
    run_steps(first, range(12))
    saved = json.loads(json.dumps(first.state_dict()))
    assert saved != make_sampler(name, POOL, seed=3).state_dict()  # a no-op load would be caught

    restored = make_sampler(name, POOL, seed=3)
    restored.load_state_dict(saved)
    assert restored.state_dict() == saved
    assert run_steps(restored, range(12, 20)) == run_steps(first, range(12, 20))
    assert restored.state_dict() == first.state_dict()


@pytest.mark.parametrize(
    ("config", "changes", "field_name"),
    [
        (DifficultyPoolsConfig, {"easy_threshold": 1.5}, "easy_threshold"),
        (DifficultyPoolsConfig, {"hard_threshold": 0.9, "easy_threshold": 0.5}, "hard_threshold"),
        (DifficultyPoolsConfig, {"easy_fraction": -0.1}, "easy_fraction"),
        (DifficultyPoolsConfig, {"easy_fraction": 0.6, "hard_fraction": 0.6}, "hard_fraction"),
        (DifficultyPoolsConfig, {"ema": 1.0}, "ema"),
        (BetaPosteriorConfig, {"prior_alpha": 0.0}, "prior_alpha"),
        (BetaPosteriorConfig, {"prior_beta": -1.0}, "prior_beta"),
        (BetaPosteriorConfig, {"decay": 1.5}, "decay"),
        (BetaPosteriorConfig, {"target": 2.0}, "target"),
        (BetaPosteriorConfig, {"candidate_ratio": 0.5}, "candidate_ratio"),
        (SECConfig, {"learning_rate": 0.0}, "learning_rate"),
        (SECConfig, {"temperature": 0.0}, "temperature"),
        (SECConfig, {"initial_q": math.inf}, "initial_q"),
        (SECConfig, {"categories": "nope"}, "categories"),
    ],
)
def test_config_errors_name_the_field(config, changes, field_name):
    with pytest.raises(ValueError, match=field_name):
        config(**changes)


def test_options_override_the_preset():
    sampler = make_sampler("difficulty_pools", SMALL, easy_threshold=0.8, hard_threshold=0.2)
    assert (sampler.config.easy_threshold, sampler.config.hard_threshold) == (0.8, 0.2)
    assert make_sampler("sec", POOL, temperature=0.4).config.temperature == 0.4
    assert make_sampler("beta_posterior", SMALL, candidate_ratio=None).config.candidate_ratio is None


# ---------------------------------------------------------------------------------------------------
# prime-rl's difficulty pools
# ---------------------------------------------------------------------------------------------------


def test_pool_labels_are_strict_thresholds_and_unseen_prompts_are_normal():
    success = [np.nan, 1.0, 0.0, 0.5, 0.96, 0.04, 0.95, 0.05]
    expected = [NORMAL, EASY, HARD, NORMAL, EASY, HARD, NORMAL, NORMAL]  # 0.95 / 0.05 do not pass
    assert pool_labels(success, 0.95, 0.05).tolist() == expected


def test_pool_counts_round_down_and_move_shortfalls_to_normal():
    config = DifficultyPoolsConfig()
    assert pool_counts(20, config, (5, 10, 5)) == (2, 16, 2)  # 10% of 20 each
    assert pool_counts(20, config, (1, 10, 0)) == (1, 19, 0)  # one easy, no hard: the rest normal
    assert pool_counts(5, config, (5, 10, 5)) == (0, 5, 0)  # int(0.5) = 0, as prime-rl


def test_pools_retire_a_prompt_that_keeps_succeeding_and_one_that_keeps_failing():
    sampler = DifficultyPoolsSampler(pool=SMALL)
    batch = Batch(tuple(SMALL[:3]), (0, 1, 2))
    for step in range(3):
        sampler.observe(step, batch, grades_of(rows([8, 0, 4])), np.zeros((3, 8)))
        assert sampler.pools()[:3].tolist() == [EASY, HARD, NORMAL]
    assert sampler.stats() == {"easy": 1, "normal": 48, "hard": 1}
    sampler.observe(3, batch, grades_of(rows([4, 4, 4])), np.zeros((3, 8)))  # drawn back, now mixed
    assert sampler.stats() == {"easy": 0, "normal": 50, "hard": 0}


def test_with_an_ema_a_prompt_retires_after_enough_successes():
    sampler = DifficultyPoolsSampler(pool=SMALL, config=DifficultyPoolsConfig(ema=0.5))
    batch = Batch((SMALL[0],), (0,))
    sampler.observe(0, batch, grades_of(rows([4])), np.zeros((1, 8)))  # s = 0.5: the first sets it
    for step, expected in enumerate((0.75, 0.875, 0.9375, 0.96875), start=1):
        assert sampler.pools()[0] == NORMAL
        sampler.observe(step, batch, grades_of(rows([8])), np.zeros((1, 8)))
        assert sampler.success[0] == pytest.approx(expected)
    assert sampler.pools()[0] == EASY  # 0.96875 > 0.95 after the fourth success


def test_pools_follow_a_reward_stream():
    sampler = make_sampler("difficulty_pools", SMALL, seed=1)
    run_steps(sampler, range(30))
    observed = np.flatnonzero(~np.isnan(sampler.success))
    labels = sampler.pools()  # (N,)
    never, always = observed[observed % 5 == 0], observed[observed % 5 == 4]  # solved with p 0, p 1
    assert never.size > 5 and always.size > 5
    assert (labels[never] == HARD).all() and (labels[always] == EASY).all()


def with_pools(sampler, easy, hard):
    """Set ``easy`` prompts to success 1 and ``hard`` ones to 0 (the rest stay unobserved: normal)."""
    indices = [*easy, *hard]
    sampler.load_state_dict({"indices": indices, "success": [1.0] * len(easy) + [0.0] * len(hard)})


def test_batches_bring_back_the_configured_fraction():
    sampler = make_sampler("difficulty_pools", SMALL, seed=2)
    with_pools(sampler, easy=range(10), hard=range(10, 20))
    for step in range(10):
        batch = sampler.next_batch(step, 20)
        assert batch.arms == ("easy",) * 2 + ("normal",) * 16 + ("hard",) * 2  # prime-rl's order
        assert len(set(batch.indices)) == 20  # without replacement
        labels = sampler.pools()
        assert [POOLS[labels[i]] for i in batch.indices] == list(batch.arms)

    quarter = make_sampler("difficulty_pools", SMALL, seed=2, easy_fraction=0.25, hard_fraction=0.0)
    with_pools(quarter, easy=range(10), hard=range(10, 20))
    assert Counter(quarter.next_batch(0, 20).arms) == {"easy": 5, "normal": 15}


def test_a_normal_pool_too_small_is_filled_from_the_rest():
    sampler = make_sampler("difficulty_pools", SMALL[:10], seed=0)
    with_pools(sampler, easy=range(8), hard=())  # 8 easy, 2 normal
    batch = sampler.next_batch(0, 6)  # int(0.6) = 0 easy slots: 6 normal slots, 2 normal prompts
    assert len(set(batch.indices)) == 6
    assert {8, 9} <= set(batch.indices)
    assert Counter(batch.arms) == {"normal": 2, "easy": 4}
    assert len(sampler.next_batch(1, 15).indices) == 15  # larger than the pool: repeats


# ---------------------------------------------------------------------------------------------------
# MoPPS: Beta posteriors and Thompson sampling
# ---------------------------------------------------------------------------------------------------


def test_posterior_counts_on_a_worked_example():
    sampler = BetaPosteriorSampler(pool=SMALL)
    sampler.observe(0, Batch(tuple(SMALL[:2]), (0, 1)), grades_of(rows([3, 0])), np.zeros((2, 8)))
    assert (sampler.alpha[0], sampler.beta[0]) == (4.0, 6.0)  # Beta(1, 1) + 3 successes, 5 failures
    assert (sampler.alpha[1], sampler.beta[1]) == (1.0, 9.0)
    sampler.observe(1, Batch((SMALL[0],), (0,)), grades_of(rows([8])), np.zeros((1, 8)))
    assert (sampler.alpha[0], sampler.beta[0]) == (12.0, 6.0)
    assert sampler.state_dict() == {"indices": [0, 1], "alpha": [12.0, 1.0], "beta": [6.0, 9.0]}
    assert sampler.stats()["observed"] == 2


def test_decay_forgets_towards_the_prior():
    config = BetaPosteriorConfig(decay=0.5)
    alpha, beta = posterior_update(4.0, 6.0, 8, 0, config)
    assert (alpha, beta) == (0.5 * 4 + 0.5 * 1 + 8, 0.5 * 6 + 0.5 * 1 + 0)  # (10.5, 3.5)


def test_candidates_and_ranking():
    assert candidate_count(8, 200, 4.0) == 32
    assert candidate_count(8, 20, 4.0) == 20  # capped at the pool
    assert candidate_count(8, 200, None) == 200  # the whole pool
    assert candidate_count(10, 200, 1.5) == 15
    samples = np.array([0.9, 0.45, 0.5, 0.1, 0.55])
    assert nearest_to_target(samples, 0.5, 3).tolist() == [2, 1, 4]  # 0.45 and 0.55 tie: candidate order
    assert nearest_to_target(samples[:2], 0.5, 3).tolist() == [1, 0, 1]  # fewer samples than slots


def test_a_prompt_near_half_is_picked_far_more_often_than_saturated_ones():
    sampler = make_sampler("beta_posterior", SMALL[:30], seed=4)
    sampler.load_state_dict(
        {
            "indices": list(range(30)),
            "alpha": [20.0] * 10 + [60.0] * 10 + [1.0] * 10,  # 0..9 near 0.5, 10..19 solved, 20..29 not
            "beta": [20.0] * 10 + [1.0] * 10 + [60.0] * 10,
        }
    )
    picks = Counter(i // 10 for step in range(200) for i in sampler.next_batch(step, 4).indices)
    assert picks[0] > 0.95 * 800  # candidates are 16 of 30: about 5 near 0.5 among them
    assert picks[0] > 20 * (picks[1] + picks[2])


def test_same_seed_same_batch():
    a, b, c = (make_sampler("beta_posterior", POOL, seed=s) for s in (5, 5, 6))
    assert [a.next_batch(s, 8).indices for s in range(5)] == [b.next_batch(s, 8).indices for s in range(5)]
    assert [a.next_batch(s, 8).indices for s in range(5)] != [c.next_batch(s, 8).indices for s in range(5)]
    assert len(set(a.next_batch(0, 8).indices)) == 8


# ---------------------------------------------------------------------------------------------------
# SEC: a Boltzmann bandit over categories
# ---------------------------------------------------------------------------------------------------


def test_categories_cross_number_count_and_tier():
    sampler = make_sampler("sec", POOL)
    assert sampler.arms == ("3:T0", "3:T1", "4:T1", "4:T2", "4:T3")
    assert sorted(np.concatenate(list(sampler.members.values())).tolist()) == list(range(200))
    assert all(POOL[i].num_count == int(arm[0]) for arm, m in sampler.members.items() for i in m)
    assert set(category_labels(POOL, "tier").tolist()) == {"T0", "T1", "T2", "T3"}


def test_q_update_on_a_worked_example():
    assert td_update(0.2, 0.6, 0.5) == pytest.approx(0.4)
    sampler = make_sampler("sec", POOL)
    t0, t3 = sampler.members["3:T0"], sampler.members["4:T3"]
    indices = (int(t0[0]), int(t0[1]), int(t3[0]))
    batch = Batch(tuple(POOL[i] for i in indices), indices, ("3:T0", "3:T0", "4:T3"))
    advantages = np.array(
        [
            [0.5, -0.5, 0.5, -0.5],  # s = 0.5
            [0.25, -0.25, 0.25, -0.25],  # s = 0.25: the arm's reward is 0.375
            [0.0, 0.0, 0.0, 0.0],  # s = 0: present, its Q moves towards 0
        ]
    )
    sampler.observe(0, batch, None, advantages)
    q = dict(zip(sampler.arms, sampler.q.tolist(), strict=True))
    assert q == {"3:T0": 0.1875, "3:T1": 0.0, "4:T1": 0.0, "4:T2": 0.0, "4:T3": 0.0}  # 0 + 0.5 * 0.375
    sampler.observe(1, batch, None, advantages)
    assert sampler.q[0] == pytest.approx(0.1875 + 0.5 * (0.375 - 0.1875))
    assert sampler.stats()["q_3_T0"] == pytest.approx(0.28125)


def test_boltzmann_probabilities_sum_to_one_and_match_a_hand_computation():
    e = [math.exp(0.0), math.exp(0.5), math.exp(1.0)]
    assert boltzmann(np.array([0.0, 0.5, 1.0]), 1.0).tolist() == pytest.approx([x / sum(e) for x in e])
    z = 1 + math.e + math.e**2  # tau = 0.5: exp(0), exp(1), exp(2)
    assert boltzmann(np.array([0.0, 0.5, 1.0]), 0.5).tolist() == pytest.approx(
        [1 / z, math.e / z, math.e**2 / z]
    )
    sampler = make_sampler("sec", POOL)
    sampler.load_state_dict({"q": {"3:T0": 0.3, "3:T1": 0.1, "4:T1": 0.0, "4:T2": 0.6, "4:T3": 0.2}})
    p = sampler.probabilities()
    assert p.sum() == pytest.approx(1.0)
    assert p[3] == pytest.approx(math.exp(0.6) / sum(math.exp(v) for v in (0.3, 0.1, 0.0, 0.6, 0.2)))
    assert sum(v for k, v in sampler.stats().items() if k.startswith("p_")) == pytest.approx(1.0)


def test_an_arm_with_large_advantages_gains_probability():
    sampler = make_sampler("sec", POOL, seed=3)
    assert sampler.probabilities() == pytest.approx(np.full(5, 0.2))
    correct = {"3:T0": 8, "3:T1": 8, "4:T1": 0, "4:T2": 4, "4:T3": 0}  # only 4:T2's groups are mixed
    for step in range(20):
        batch = sampler.next_batch(step, 32)
        sampler.observe(step, batch, None, loo_advantages(rows([correct[arm] for arm in batch.arms])))
    p = dict(zip(sampler.arms, sampler.probabilities().tolist(), strict=True))
    assert p["4:T2"] == max(p.values()) and p["4:T2"] > 0.28
    assert sampler.q[sampler.arms.index("4:T2")] == pytest.approx(4 / 7, rel=0.01)  # |A| = 4/7 at G = 8
    counts = Counter(sampler.next_batch(99, 1000).arms)
    assert counts["4:T2"] == max(counts.values())
