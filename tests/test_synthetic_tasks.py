"""Report 004's rule-based task generator and held-out 5-number set (``countdown.synthetic``)."""

import json
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from countdown_study.countdown import generate_tasks, solvable, solve, tier_labels
from countdown_study.countdown.synthetic import (
    REASONS,
    RuleBasedConfig,
    RuleBasedGenerator,
    expression_value,
    five_number_ood_set,
    task_tier,
)
from countdown_study.countdown.task import Task

POOL = generate_tasks(200, 0)
POOL_KEYS = [task.key for task in POOL]
DEFAULT = RuleBasedConfig()


def propose(tier, count, seed, seen=POOL_KEYS, config=DEFAULT):
    generator = RuleBasedGenerator(config, seen_keys=seen)
    tasks, rows = generator.propose(tier, count, np.random.default_rng(seed))
    return generator, tasks, rows


@pytest.mark.parametrize(("tier", "count"), [("T0", 12), ("T1", 12), ("T2", 12), ("T3", 12), ("OOD", 4)])
def test_accepted_tasks_are_integer_solvable_in_tier_and_unseen(tier, count):
    generator, tasks, rows = propose(tier, count, seed=1)
    assert len(tasks) == count == sum(row["accepted"] for row in rows)
    assert all(isinstance(task.target, int) for task in tasks)
    assert all(solve(task.nums, task.target) is not None for task in tasks)
    assert tier_labels(tasks).tolist() == [tier] * count  # the batched solution-count path agrees
    keys = [task.key for task in tasks]
    assert len(set(keys)) == count and not set(keys) & set(POOL_KEYS)
    assert set(keys) <= generator.seen
    if tier == "OOD":
        assert all(task.num_count == 5 for task in tasks)


def test_rows_log_every_candidate_and_the_counts_match():
    generator, tasks, rows = propose("T2", 10, seed=3)
    assert all(set(row) == {"source", "tier", "accepted", "reason", "nums", "target"} for row in rows)
    assert {row["reason"] for row in rows} <= set(REASONS)
    assert Counter(row["reason"] for row in rows) == generator.counts["T2"]
    assert [Task(row["nums"], row["target"]) for row in rows if row["accepted"]] == tasks
    assert all(row["target"] is None for row in rows if row["reason"] in ("non_integer", "division_by_zero"))
    assert generator.acceptance_rates() == {"T2": 10 / len(rows)}
    json.dumps(rows)  # storable as is


def test_deterministic_for_a_seed():
    _, tasks_a, rows_a = propose("T1", 8, seed=5)
    _, tasks_b, rows_b = propose("T1", 8, seed=5)
    _, tasks_c, _ = propose("T1", 8, seed=6)
    assert (tasks_a, rows_a) == (tasks_b, rows_b) and tasks_a != tasks_c


def test_a_seen_key_is_rejected_as_seen():
    _, (first, *_), _ = propose("T0", 1, seed=7)
    generator, tasks, rows = propose("T0", 1, seed=7, seen=[*POOL_KEYS, first.key])  # same candidates
    assert first not in tasks and tasks[0] != first
    blocked = [row for row in rows if row["reason"] == "seen"]
    assert [Task(row["nums"], row["target"]).key for row in blocked] == [first.key]
    assert generator.counts["T0"]["seen"] == 1


def test_accepted_keys_are_not_proposed_again():
    generator = RuleBasedGenerator(seen_keys=POOL_KEYS)
    rng = np.random.default_rng(0)
    tasks = [t for _ in range(20) for t in generator.propose("T0", 3, rng)[0]]
    assert len({t.key for t in tasks}) == 60


def test_state_round_trip_continues_the_same_run():
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    uninterrupted = RuleBasedGenerator(seen_keys=POOL_KEYS)
    first = RuleBasedGenerator(seen_keys=POOL_KEYS)
    for tier in ("T0", "T3"):
        uninterrupted.propose(tier, 5, rng_a)
        first.propose(tier, 5, rng_b)
    resumed = RuleBasedGenerator(seen_keys=POOL_KEYS)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    assert resumed.propose("T1", 5, rng_b) == uninterrupted.propose("T1", 5, rng_a)
    assert resumed.state_dict() == uninterrupted.state_dict()


def test_impossible_request_fails_naming_the_tier():
    config = RuleBasedConfig(max_number=1, max_attempts_per_task=50)  # four 1s never reach 76..150
    with pytest.raises(ValueError, match="tier T2: only 0 of 2 tasks accepted after 100 candidates"):
        propose("T2", 2, seed=0, config=config)
    with pytest.raises(ValueError, match="unknown tier 'T9'"):
        propose("T9", 1, seed=0)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"min_number": 0}, "min_number"),  # numbers start at 1
        ({"min_target": 50, "max_target": 40}, "min_target"),  # empty target range
        ({"max_attempts_per_task": 0}, "max_attempts_per_task"),
    ],
)
def test_config_errors_name_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        RuleBasedConfig(**changes)


def test_expression_tree_uses_both_numbers_with_each_operator():
    values = {expression_value((6, 3), np.random.default_rng(seed)) for seed in range(200)}
    assert values == {Fraction(v) for v in (9, 3, -3, 18, 2)} | {Fraction(1, 2)}  # 6+3 6-3 3-6 6*3 6/3 3/6
    assert expression_value((5, 0), np.random.default_rng(0)) in {5, -5, 0, None}  # x/0 is None
    three = {expression_value((1, 2, 4), np.random.default_rng(seed)) for seed in range(300)}
    assert Fraction(7) in three and Fraction(8) in three and Fraction(1, 8) in three  # 1+2+4, 1*2*4, 1/2/4


def test_single_task_tier_matches_the_batched_labels():
    tasks = generate_tasks(120, 4)
    assert [task_tier(task) for task in tasks] == tier_labels(tasks).tolist()


def test_ood_set_has_five_numbers_and_excludes_given_keys():
    first = five_number_ood_set(20, seed=2)
    assert len(first) == 20 and len({t.key for t in first}) == 20
    assert all(t.num_count == 5 for t in first) and solvable(first).all()
    assert five_number_ood_set(20, seed=2) == first
    excluded = [[list(t.nums), t.target] for t in first[:8]]  # JSON-shaped keys
    second = five_number_ood_set(20, seed=2, exclude_keys=excluded)
    assert len(second) == 20 and not {t.key for t in first[:8]} & {t.key for t in second}
    assert five_number_ood_set(0, seed=2) == []
