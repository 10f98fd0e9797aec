"""Curriculum samplers of reports 000 and 001 on synthetic reward streams (no model, no rollouts)."""

import json

import numpy as np
import pytest
from synthetic import grades_of

from countdown_study.countdown.difficulty import level_labels
from countdown_study.countdown.task import Task
from countdown_study.samplers import SAMPLERS, Batch, make_sampler
from countdown_study.samplers.fixed_buckets import (
    FixedBucketConfig,
    bucket_weights,
    ema_update,
    prompts_solved,
)
from countdown_study.samplers.reward_adaptive import (
    ADAPTIVE_V2,
    CATEGORIES,
    REPORT_WARMUP_FRACTION,
    RewardAdaptiveConfig,
    categorize,
    mix_counts,
    prompt_ema_update,
)
from countdown_study.samplers.sliding_window import controller_move, level_members, level_pools
from countdown_study.samplers.staged import stage_index
from countdown_study.seeding import derive_rng

EASY3 = [Task((1, 2, 3), t) for t in (6, 5, 7, 9)]
HARD4 = [Task((1, 2, 3, 4), t) for t in (10, 24, 14, 20)]
BUCKET_POOL = EASY3 + HARD4  # buckets "3" x4, "4" x4
LEVEL_POOL = EASY3 + [
    Task((1, 2, 6, 8), 24),  # medium: 75 solutions
    Task((2, 3, 4, 5), 14),  # medium: 21 solutions
    Task((1, 3, 4, 6), 24),  # hard: 1 solution, 6/(1-3/4)
    Task((3, 5, 7, 11), 13),  # hard: 1 solution
]
ADAPTIVE_POOL = [Task((1, 2, 3), t) for t in range(10, 210)]  # 200 tasks


def rewards_with(correct_per_row, group_size=8, other=0.1):
    """(P, G) rewards: row p has ``correct_per_row[p]`` samples at 1.0, the rest at ``other``."""
    return np.array([[1.0] * c + [other] * (group_size - c) for c in correct_per_row])


def synthetic_rewards(batch, group_size=4):
    """A deterministic reward stream that depends on the tasks: target mod (G + 1) correct samples."""
    return rewards_with([t.target % (group_size + 1) for t in batch.tasks], group_size)


def run(sampler, steps, batch_size=8):
    """Batches of ``steps`` steps, observing the synthetic rewards after each."""
    batches = []
    for step in steps:
        batch = sampler.next_batch(step, batch_size)
        sampler.observe(step, batch, grades_of(synthetic_rewards(batch)), np.zeros((batch_size, 4)))
        batches.append((batch.indices, batch.arms))
    return batches


# ---------------------------------------------------------------------------------------------------
# Report 000: fixed buckets
# ---------------------------------------------------------------------------------------------------


def test_success_counting_v1_any_correct_v2_two_correct():
    rewards = np.array(
        [
            [1.0, 0.1, 0.1, 0.1],  # one correct: solved in v1 only
            [1.0, 1.0, 0.0, 0.1],  # two correct: solved in both
            [0.1, 0.1, 0.1, 0.1],  # format score only: never solved
            [0.99, 1.0, 0.0, 0.0],  # 0.99 is not correct: one correct
        ]
    )
    assert prompts_solved(rewards >= 1.0, 1).tolist() == [True, True, False, True]
    assert prompts_solved(rewards >= 1.0, 2).tolist() == [False, True, False, False]
    batch = Batch(tuple(EASY3), (0, 1, 2, 3))
    for name, s_hat in (("fixed_v1", 0.75), ("fixed_v2", 0.25)):
        sampler = make_sampler(name, BUCKET_POOL)
        sampler.observe(0, batch, grades_of(rewards), np.zeros_like(rewards))
        assert sampler.ema["3"] == pytest.approx(0.05 * s_hat)  # from 0: (1 - 0.95) s_hat
        assert sampler.ema["4"] == 0.0  # absent from the batch: unchanged


@pytest.mark.parametrize(
    ("solved_rows", "unlock_after"),
    [
        (8, 6),  # s_hat = 1: 1 - 0.95^n >= 0.25 first at n = 6 (0.2649; n = 5 gives 0.2262)
        (4, 14),  # s_hat = 0.5: 0.5 (1 - 0.95^n) >= 0.25 first at n = 14 (0.2562; n = 13 gives 0.2434)
    ],
)
def test_hard_bucket_unlocks_when_easy_ema_reaches_threshold(solved_rows, unlock_after):
    sampler = make_sampler("fixed_v1", BUCKET_POOL, seed=1)
    for step in range(unlock_after):
        batch = sampler.next_batch(step, 8)
        assert set(batch.arms) == {"3"} and not sampler.unlocked
        rewards = rewards_with([1] * solved_rows + [0] * (8 - solved_rows))
        sampler.observe(step, batch, grades_of(rewards), np.zeros_like(rewards))
    assert sampler.unlocked and sampler.ema["3"] >= 0.25
    assert "4" in sampler.next_batch(unlock_after, 64).arms
    assert sampler.stats()["unlocked"] == 1 and sampler.stats()["p_4"] > 0.5  # s_4 = 0 weighs most


def test_unlock_is_latched_and_absent_buckets_keep_their_ema():
    sampler = make_sampler("fixed_v1", BUCKET_POOL)
    sampler.load_state_dict({"ema": {"3": 0.26, "4": 0.2}, "unlocked": True})
    easy_batch = Batch(tuple(EASY3), (0, 1, 2, 3))
    sampler.observe(0, easy_batch, grades_of(rewards_with([0] * 4)), np.zeros((4, 8)))
    assert sampler.ema["3"] == pytest.approx(0.95 * 0.26) and sampler.ema["3"] < 0.25
    assert sampler.ema["4"] == 0.2 and sampler.unlocked


def test_bucket_weights_favour_the_less_mastered_bucket():
    assert bucket_weights({"3": 0.9, "4": 0.0}, unlocked=False, floor=0.1) == {"3": 1.0, "4": 0.0}
    p = bucket_weights({"3": 0.5, "4": 0.0}, unlocked=True, floor=0.1)
    assert p["3"] == pytest.approx(0.6 / 1.7) and p["4"] == pytest.approx(1.1 / 1.7)
    assert ema_update(0.2, 1.0, 0.95) == pytest.approx(0.24)


def test_options_override_preset_fields():
    sampler = make_sampler("fixed_v2", BUCKET_POOL, seed=0, alpha=0.9)
    assert sampler.config == FixedBucketConfig(min_correct=2, alpha=0.9)
    with pytest.raises(ValueError, match="3- and 4-number"):
        make_sampler("fixed_v1", [Task((1, 2, 3, 4, 5), 15)])


# ---------------------------------------------------------------------------------------------------
# Report 000: reward-adaptive
# ---------------------------------------------------------------------------------------------------


def test_categories_on_hand_made_emas():
    ema = np.array([np.nan, 0.0, 0.0999, 0.1, 0.4, 0.7, 0.7001, 1.0])
    v1 = [CATEGORIES[c] for c in categorize(ema, 0.1, 0.7)]
    assert v1 == [
        "unknown",
        "too_hard",
        "too_hard",
        "learnable",
        "learnable",
        "learnable",
        "too_easy",
        "too_easy",
    ]
    v2 = [CATEGORIES[c] for c in categorize(ema, 0.2, 0.6)]
    assert v2 == [
        "unknown",
        "too_hard",
        "too_hard",
        "too_hard",
        "learnable",
        "too_easy",
        "too_easy",
        "too_easy",
    ]


def test_first_observation_initializes_the_prompt_ema():
    updated = prompt_ema_update(np.array([np.nan, 0.5]), np.array([0.3, 0.3]), 0.95)
    assert updated.tolist() == pytest.approx([0.3, 0.95 * 0.5 + 0.05 * 0.3])
    sampler = make_sampler("adaptive_v1", ADAPTIVE_POOL)
    batch = Batch((ADAPTIVE_POOL[7], ADAPTIVE_POOL[7]), (7, 7))  # drawn twice: updated twice, in order
    sampler.observe(0, batch, grades_of([[1.0, 0.0], [0.0, 0.0]]), np.zeros((2, 2)))
    assert sampler.ema[7] == pytest.approx(0.95 * 0.5)
    assert sampler.stats() == {"unknown": 199, "too_hard": 0, "learnable": 1, "too_easy": 0}


BANDED_STATE = {  # 5 learnable, 5 too hard, 5 too easy, 185 unknown (under both bands)
    "indices": list(range(15)),
    "ema": [0.4] * 5 + [0.0] * 5 + [0.9] * 5,
}


def test_v1_mix_is_90_learnable_10_uniform():
    assert mix_counts(128, 0.1) == (115, 13) and mix_counts(128, 0.3) == (90, 38)
    sampler = make_sampler("adaptive_v1", ADAPTIVE_POOL, seed=4)
    sampler.load_state_dict(BANDED_STATE)
    assert sampler.stats() == {"unknown": 185, "too_hard": 5, "learnable": 5, "too_easy": 5}
    batch = sampler.next_batch(3, 128)
    assert set(batch.arms[:115]) == {"learnable"}  # the curriculum part, all from the band
    assert batch.arms.count("learnable") >= 115 and "unknown" in batch.arms[115:]


def test_v2_mix_is_70_curriculum_30_uniform_with_weight_outside_the_band():
    sampler = make_sampler("adaptive_v2", ADAPTIVE_POOL, seed=4)
    sampler.load_state_dict(BANDED_STATE)
    batch = sampler.next_batch(25, 128)
    curriculum = np.array(batch.indices[:90])
    assert curriculum.max() < 15  # observed prompts only
    learnable = int((curriculum < 5).sum())  # expected share 5 / (5 + 10 * 0.25) = 2/3, i.e. 60
    assert 45 <= learnable <= 75 and {"too_hard", "too_easy"} <= set(batch.arms[:90])
    assert "unknown" in batch.arms[90:]


def test_v2_warmup_and_no_learnable_fallback_are_uniform():
    v2 = make_sampler("adaptive_v2", ADAPTIVE_POOL, seed=4)
    v2.load_state_dict(BANDED_STATE)
    for step in (0, 7, 19):  # warm-up steps 0..19: the plain uniform draw
        assert v2.next_batch(step, 32).indices == tuple(
            derive_rng(4, step).integers(0, 200, size=32).tolist()
        )
    assert max(v2.next_batch(20, 32).indices[:22]) < 15  # step 20: the curriculum starts
    v1 = make_sampler("adaptive_v1", ADAPTIVE_POOL, seed=4)
    v1.load_state_dict({"indices": [0, 1], "ema": [0.0, 0.95]})  # nothing learnable
    assert v1.next_batch(5, 32).indices == tuple(derive_rng(4, 5).integers(0, 200, size=32).tolist())


def test_v2_warmup_as_a_share_of_the_run():
    # Report 000: 20 warm-up steps of 100. As a share of a 60-step run: round(0.2 * 60) = 12 steps.
    assert ADAPTIVE_V2.warmup == 20  # the registered v2 keeps its 20 steps (its committed runs)
    scaled = make_sampler(
        "adaptive_v2", ADAPTIVE_POOL, seed=4, warmup_fraction=REPORT_WARMUP_FRACTION, total_steps=60
    )
    assert scaled.config.warmup == 12
    scaled.load_state_dict(BANDED_STATE)
    assert scaled.next_batch(11, 32).indices == tuple(derive_rng(4, 11).integers(0, 200, size=32).tolist())
    assert max(scaled.next_batch(12, 32).indices[:22]) < 15  # step 12: the curriculum starts
    # half up: 0.2 x 2 = 0.4 -> 0 steps, 0.25 x 10 = 2.5 -> 3, 0.2 x 20 = 4
    for fraction, steps, expected in ((0.2, 2, 0), (0.25, 10, 3), (0.2, 20, 4)):
        assert RewardAdaptiveConfig(warmup_fraction=fraction, total_steps=steps).warmup == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"warmup_fraction": 0.2}, "warmup_fraction needs the option total_steps"),
        ({"warmup_fraction": 1.5, "total_steps": 60}, r"warmup_fraction must be in \[0, 1\]"),
        ({"warmup_steps": -1}, "warmup_steps must be >= 0"),
        ({"total_steps": 0}, "total_steps must be at least 1"),
    ],
)
def test_warmup_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        make_sampler("adaptive_v2", ADAPTIVE_POOL, seed=0, **options)


# ---------------------------------------------------------------------------------------------------
# Report 001: sliding-window controller and staged thirds
# ---------------------------------------------------------------------------------------------------


def test_level_pool_labels():
    assert level_labels(LEVEL_POOL).tolist() == ["easy"] * 4 + ["medium"] * 2 + ["hard"] * 2


@pytest.mark.parametrize(
    ("window_mean", "move"),
    [(0.0, -1), (0.2399, -1), (0.24, 0), (0.27, 0), (0.30, 0), (0.3001, 1), (1.0, 1)],
)
def test_controller_move(window_mean, move):
    assert controller_move(window_mean, 0.24, 0.30) == move


def feed(sampler, pass_rates, start=0):
    """Observe one step per pass rate (16 samples each: rate * 16 correct, the rest format-scored)."""
    levels = []
    for offset, rate in enumerate(pass_rates):
        batch = sampler.next_batch(start + offset, 4)
        assert set(batch.arms) == {("easy", "medium", "hard")[sampler.level]}
        sampler.observe(
            start + offset, batch, grades_of(rewards_with([round(rate * 16)], 16)), np.zeros((1, 16))
        )
        levels.append(sampler.level)
    return levels


def test_controller_steps_up_after_a_full_window_above_030_and_keeps_the_window():
    sampler = make_sampler("sliding_window", LEVEL_POOL, seed=2)
    assert feed(sampler, [0.5] * 12) == [0] * 9 + [1, 2, 2]  # first decision at the 10th step; clamped
    assert sampler.stats() == {"level": 2, "window_mean": 0.5}
    cleared = make_sampler("sliding_window", LEVEL_POOL, seed=2, clear_on_move=True)
    assert feed(cleared, [0.5] * 20) == [0] * 9 + [1] + [1] * 9 + [2]


def test_controller_steps_down_below_024_and_stays_between():
    sampler = make_sampler("sliding_window", LEVEL_POOL, seed=2, start_level="hard")
    assert feed(sampler, [0.0] * 10) == [2] * 9 + [1]
    assert sampler.stats()["window_mean"] == 0.0
    steady = make_sampler("sliding_window", LEVEL_POOL, seed=2, start_level="medium")
    assert feed(steady, [0.25, 0.3125, 0.25, 0.25] * 8) == [1] * 32  # means in [0.24, 0.30]: stay
    format_only = make_sampler("sliding_window", LEVEL_POOL, seed=2, start_level="medium")
    assert feed(format_only, [0.0] * 10)[-1] == 0  # 0.1 format scores are not passes


def test_empty_level_falls_back_to_the_full_pool():
    assert level_members(np.array(["easy", "easy", "hard"]), "medium").tolist() == [0, 1, 2]
    sampler = make_sampler("sliding_window", EASY3, seed=0, start_level="medium")
    assert set(sampler.next_batch(0, 32).indices) == {0, 1, 2, 3}
    staged = make_sampler("staged_thirds", EASY3, seed=0, total_steps=3, levels="solver")
    hard = staged.next_batch(2, 32)  # the hard stage, empty among 3-number tasks: the whole pool
    assert set(hard.indices) == {0, 1, 2, 3} and set(hard.arms) == {"hard"}
    medium = make_sampler("staged_thirds", EASY3, seed=0, total_steps=3).next_batch(1, 32)  # no 4-number task
    assert set(medium.indices) == {0, 1, 2, 3} and set(medium.arms) == {"medium"}


def test_level_rules_report_nested_and_solver_partition():
    report = level_pools(LEVEL_POOL)  # report 001: 3 numbers / 4 numbers / every task
    assert {k: v.tolist() for k, v in report.items()} == {
        "easy": [0, 1, 2, 3], "medium": [4, 5, 6, 7], "hard": list(range(8)),
    }  # fmt: skip
    solver = level_pools(LEVEL_POOL, "solver")  # ours: by solution count among 4-number tasks
    assert {k: v.tolist() for k, v in solver.items()} == {
        "easy": [0, 1, 2, 3],
        "medium": [4, 5],
        "hard": [6, 7],
    }
    with pytest.raises(ValueError, match="levels must be one of"):
        make_sampler("sliding_window", LEVEL_POOL, levels="tiers")
    on_hard = make_sampler("sliding_window", LEVEL_POOL, seed=1, start_level="hard").next_batch(0, 64)
    assert set(on_hard.indices) == set(range(8))  # report 001's hard level is the whole data set


def test_staged_thirds_boundaries():
    assert [stage_index(s, 128, 3) for s in (0, 42, 43, 85, 86, 127, 500)] == [0, 0, 1, 1, 2, 2, 2]
    sampler = make_sampler("staged_thirds", LEVEL_POOL, seed=0, total_steps=9)
    levels = [set(sampler.next_batch(step, 16).arms) for step in range(9)]
    assert levels == [{"easy"}] * 3 + [{"medium"}] * 3 + [{"hard"}] * 3
    with pytest.raises(ValueError, match="total_steps"):
        make_sampler("staged_thirds", LEVEL_POOL)


# ---------------------------------------------------------------------------------------------------
# Every curriculum: registry, resume, determinism
# ---------------------------------------------------------------------------------------------------

CURRICULA = {
    "fixed_v1": (BUCKET_POOL, {}),
    "fixed_v2": (BUCKET_POOL, {}),
    "adaptive_v1": (ADAPTIVE_POOL, {}),
    "adaptive_v2": (ADAPTIVE_POOL, {"warmup_steps": 3}),
    "sliding_window": (LEVEL_POOL, {"window": 3}),
    "staged_thirds": (LEVEL_POOL, {"total_steps": 30}),
}


def test_every_curriculum_is_registered():
    assert set(CURRICULA) <= set(SAMPLERS)


@pytest.mark.parametrize("name", sorted(CURRICULA))
def test_resumed_sampler_makes_the_same_batches(name):
    pool, options = CURRICULA[name]
    uninterrupted = make_sampler(name, pool, seed=5, **options)
    expected = run(uninterrupted, range(30))
    first = make_sampler(name, pool, seed=5, **options)
    head = run(first, range(12))
    state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint stores
    resumed = make_sampler(name, pool, seed=5, **options)
    resumed.load_state_dict(state)
    assert head + run(resumed, range(12, 30)) == expected
    assert resumed.stats() == uninterrupted.stats()


@pytest.mark.parametrize("name", sorted(CURRICULA))
def test_batches_are_determined_by_the_seed(name):
    pool, options = CURRICULA[name]
    same = [run(make_sampler(name, pool, seed=s, **options), range(15)) for s in (7, 7, 8)]
    assert same[0] == same[1] and same[0] != same[2]


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        ("success", ["too_hard", "learnable", "too_easy"]),  # success rates 0, 3/8, 1
        (
            "reward",
            ["learnable", "learnable", "too_easy"],
        ),  # mean rewards 0.1 (on v1's closed edge), .4375, 1
    ],
)
def test_adaptive_signal_success_rate_or_literal_mean_reward(signal, expected):
    pool = [Task((1, 2, 3), 6), Task((2, 3, 4), 9), Task((1, 3, 5), 8)]
    sampler = make_sampler("adaptive_v1", pool, seed=0, signal=signal)
    batch = Batch(tuple(pool), (0, 1, 2))
    sampler.observe(0, batch, grades_of(rewards_with([0, 3, 8])), np.zeros((3, 8)))
    assert [CATEGORIES[c] for c in sampler.categories()] == expected
    with pytest.raises(ValueError, match="signal must be one of"):
        make_sampler("adaptive_v1", pool, seed=0, signal="ema")
