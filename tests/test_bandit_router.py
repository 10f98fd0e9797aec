"""Report 004's ADSC bandit router on synthetic advantage streams (no model, no rollouts)."""

import json
import math
from collections import Counter

import numpy as np
import pytest

from countdown_study.countdown import generate_tasks, tier_labels
from countdown_study.countdown.synthetic import RuleBasedGenerator
from countdown_study.countdown.task import Task
from countdown_study.samplers import SAMPLERS, Batch, make_sampler
from countdown_study.samplers.bandit_router import (
    ADSC_REAL_ONLY,
    BanditRouterConfig,
    BanditRouterSampler,
    Quotas,
    arm_probabilities,
    assemble_counts,
    batch_quotas,
)

POOL = generate_tasks(240, 0)
TIERS = tier_labels(POOL)
TIER_SIZES = Counter(TIERS.tolist())
EASY_POOL = [Task((1, 2, 3), t) for t in range(10, 40)]  # T0 only: no hard tier
ARMS = BanditRouterConfig().arms


class StubSource:
    """A task source that makes any tier instantly (tasks are not in the tier: the router must not care)."""

    def __init__(self):
        self.calls = []
        self.made = 0

    def propose(self, tier, count, rng):
        self.calls.append((tier, count))
        tasks = [Task((int(rng.integers(1, 99)), 2, 3), 1000 + self.made + i) for i in range(count)]
        self.made += count
        rows = [{"source": "stub", "tier": tier, "accepted": True, "nums": list(t.nums)} for t in tasks]
        return tasks, rows

    def state_dict(self):
        return {"made": self.made}

    def load_state_dict(self, state):
        self.made = state["made"]


def router(pool=POOL, seed=0, source=None, **changes):
    config = BanditRouterConfig(**changes)
    return BanditRouterSampler(pool=pool, seed=seed, config=config, source=source or StubSource())


def loo_advantages(rewards):
    """RLOO advantages of (P, G) rewards: each reward minus the mean of the others."""
    rewards = np.asarray(rewards, dtype=np.float64)
    return rewards - (rewards.sum(axis=1, keepdims=True) - rewards) / (rewards.shape[1] - 1)


# ---------------------------------------------------------------------------------------------------
# The formulas
# ---------------------------------------------------------------------------------------------------


def test_q_update_and_probabilities_on_a_worked_example():
    sampler = router()
    sampler.load_state_dict(
        {"q": {arm: 0.0 for arm in ARMS} | {"real:T1": 0.2}, "source": None, "task_log": []}
    )
    batch = Batch((POOL[0], POOL[1], Task((1, 2, 3), 6)), (0, 1, -1), ("real:T0", "real:T0", "synthetic:T2"))
    advantages = np.array(
        [
            [0.5, -0.5, 0.5, -0.5],  # s = 0.5
            [0.25, -0.25, 0.25, -0.25],  # s = 0.25: the arm's reward is 0.375
            [0.0, 0.0, 0.0, 0.0],  # s = 0: the arm is present, its Q moves towards 0
        ]
    )
    sampler.observe(0, batch, None, advantages)
    q = dict(zip(ARMS, sampler.q.tolist(), strict=True))
    assert q["real:T0"] == pytest.approx(0.15 * 0.375)  # 0.05625 from 0
    assert q["synthetic:T2"] == 0.0 and q["real:T1"] == 0.2  # absent: unchanged
    exp = {arm: math.exp(value / 0.25) for arm, value in q.items()}  # exp(0.225), exp(0.8), 1 x 6
    p = dict(zip(ARMS, sampler.probabilities().tolist(), strict=True))
    for arm in ARMS:
        assert p[arm] == pytest.approx(0.9 * exp[arm] / sum(exp.values()) + 0.1 / 8)
    assert p["real:T1"] == pytest.approx(0.9 * math.exp(0.8) / (math.exp(0.8) + math.exp(0.225) + 6) + 0.0125)
    sampler.observe(1, batch, None, advantages)
    assert sampler.q[0] == pytest.approx(0.85 * 0.05625 + 0.15 * 0.375)
    assert sampler.stats()["q_real_T0"] == pytest.approx(0.85 * 0.05625 + 0.15 * 0.375)
    assert sampler.stats()["p_syn_T2"] == pytest.approx(sampler.probabilities()[6])


def test_unavailable_arms_get_no_probability():
    p = arm_probabilities(np.array([1.0, 0.0, 5.0]), np.array([True, True, False]), 0.25, 0.1)
    e = math.exp(4.0)
    assert p.tolist() == pytest.approx([0.9 * e / (e + 1) + 0.05, 0.9 / (e + 1) + 0.05, 0.0])


def test_quotas_in_whole_prompts():
    config = BanditRouterConfig()
    assert batch_quotas(128, config, step=10) == Quotas(min_real=39, max_synthetic=64, min_hard=13)
    assert batch_quotas(10, config, step=10) == Quotas(
        min_real=3, max_synthetic=5, min_hard=1
    )  # 0.3 * 10 = 3
    assert batch_quotas(10, config, step=9).min_hard == 0  # warm-up: steps 0..9


def test_unconstrained_assembly_is_multinomial():
    p = np.array([0.05, 0.1, 0.15, 0.2, 0.1, 0.1, 0.2, 0.1])
    is_real = np.arange(8) < 4
    rng = np.random.default_rng(0)
    free = Quotas(min_real=0, max_synthetic=16, min_hard=0)
    counts = np.array([assemble_counts(p, is_real, ~is_real, 16, free, rng) for _ in range(4000)])
    assert (counts.sum(axis=1) == 16).all()
    assert counts.mean(axis=0) == pytest.approx(16 * p, abs=0.06)


# ---------------------------------------------------------------------------------------------------
# Routing on advantage streams
# ---------------------------------------------------------------------------------------------------

OUTCOMES = {"T0": "saturated", "T1": "saturated", "T2": "mixed", "T3": "hopeless"}


def stream_rewards(batch, group_size=8):
    """Rewards by arm: synthetic:T2 is mixed (half correct), T0/T1 all correct, the rest all wrong."""
    rows = []
    for arm in batch.arms:
        if arm == "synthetic:T2":
            rows.append([1.0, 0.0] * (group_size // 2))
        else:
            rows.append([1.0 if arm.endswith(("T0", "T1")) else 0.0] * group_size)
    return np.array(rows)


def test_mixed_arm_gains_mass_saturated_and_hopeless_arms_lose_it():
    sampler = router(seed=3)
    start = sampler.probabilities()
    assert start == pytest.approx(np.full(8, 1 / 8))
    for step in range(30):
        batch = sampler.next_batch(step, 32)
        sampler.observe(step, batch, None, loo_advantages(stream_rewards(batch)))
    p = dict(zip(ARMS, sampler.probabilities().tolist(), strict=True))
    assert p["synthetic:T2"] > 0.4 and p["synthetic:T2"] == max(p.values())
    assert all(p[arm] < 1 / 8 for arm in ARMS if arm != "synthetic:T2")
    assert sampler.q[ARMS.index("synthetic:T2")] == pytest.approx(4 / 7, rel=0.05)  # |A| = 4/7 at G = 8


def check_batch(sampler, batch, step, batch_size):
    """Every constraint, label and index rule of one batch."""
    quotas = batch_quotas(batch_size, sampler.config, step)
    arms = np.asarray(batch.arms)
    synthetic = np.char.startswith(arms, "synthetic:")
    hard = np.char.endswith(arms, "T2") | np.char.endswith(arms, "T3")
    assert len(batch.tasks) == batch_size
    assert (~synthetic).sum() >= quotas.min_real >= math.ceil(0.3 * batch_size - 1e-9)
    assert synthetic.sum() <= quotas.max_synthetic
    assert hard.sum() >= (math.ceil(0.1 * batch_size - 1e-9) if step >= 10 else 0)
    for task, index, arm in zip(batch.tasks, batch.indices, batch.arms, strict=True):
        if arm.startswith("synthetic:"):
            assert index == -1
        else:
            assert POOL[index] == task and arm == f"real:{TIERS[index]}"
    for tier in ("T0", "T1", "T2", "T3"):  # within a step, a tier's tasks repeat only once it is used up
        drawn = [i for i, arm in zip(batch.indices, batch.arms, strict=True) if arm == f"real:{tier}"]
        assert len(set(drawn)) == min(len(drawn), TIER_SIZES[tier])


@pytest.mark.parametrize("seed", range(4))
def test_every_batch_meets_the_constraints(seed):
    rng = np.random.default_rng(seed)
    for batch_size in (1, 3, 7, 10, 64, 128):
        sampler = router(seed=seed)
        q = rng.uniform(0.0, 3.0, size=8)  # sharp preferences: exp(12) between arms at tau = 0.25
        q[4:6] += 3.0 * (seed % 2)  # half the seeds pull hard towards the easy synthetic arms
        sampler.load_state_dict(
            {"q": dict(zip(ARMS, q.tolist(), strict=True)), "source": None, "task_log": []}
        )
        for step in range(16):  # 10 warm-up steps, then the hard quota
            batch = sampler.next_batch(step, batch_size)
            check_batch(sampler, batch, step, batch_size)
            sampler.observe(step, batch, None, rng.normal(size=(batch_size, 4)))


def test_hard_quota_waits_for_the_warmup():
    sampler = router(seed=1, warmup_steps=5)
    easy = {arm: (3.0 if arm.endswith(("T0", "T1")) else 0.0) for arm in ARMS}  # hard arms ~ eps / 8 each
    sampler.load_state_dict({"q": easy, "source": None, "task_log": []})
    hard_counts = [
        sum(arm.endswith(("T2", "T3")) for arm in sampler.next_batch(step, 40).arms) for step in range(10)
    ]
    assert min(hard_counts[:5]) < 4 <= min(hard_counts[5:])  # 10% of 40 from step 5 on


def test_pool_without_hard_tasks_takes_the_hard_quota_from_synthetic_arms():
    sampler = router(pool=EASY_POOL, seed=2)
    assert sampler.available.tolist() == [True, False, False, False] + [True] * 4
    for step in range(10, 20):
        batch = sampler.next_batch(step, 10)
        assert batch.arms.count("real:T0") >= 3
        assert sum(a in ("synthetic:T2", "synthetic:T3") for a in batch.arms) >= 1
    with pytest.raises(ValueError, match="min_hard_share needs 1 hard prompts of 10"):
        make_sampler("adsc_real_only", EASY_POOL).next_batch(10, 10)
    assert make_sampler("adsc_real_only", EASY_POOL, min_hard_share=0.0).next_batch(10, 10).arms == (
        ("real:T0",) * 10
    )


# ---------------------------------------------------------------------------------------------------
# Variants, registry, resume
# ---------------------------------------------------------------------------------------------------


def test_real_only_variant_never_asks_the_source():
    source = StubSource()
    sampler = BanditRouterSampler(pool=POOL, seed=4, config=ADSC_REAL_ONLY, source=source)
    assert sampler.arms == ("real:T0", "real:T1", "real:T2", "real:T3")
    for step in range(20):
        batch = sampler.next_batch(step, 16)
        assert min(batch.indices) >= 0 and all(arm.startswith("real:") for arm in batch.arms)
        sampler.observe(step, batch, None, np.ones((16, 4)))
    assert source.calls == [] and sampler.records() == {} and sampler.state_dict()["source"] is None
    assert set(sampler.stats()) == {f"{k}_real_T{t}" for k in "pq" for t in range(4)}


def test_synthetic_arms_ask_the_source_and_log_its_rows():
    source = StubSource()
    sampler = router(seed=5, source=source)
    batch = sampler.next_batch(3, 32)
    asked = {arm: batch.arms.count(arm) for arm in dict.fromkeys(batch.arms) if arm.startswith("synthetic:")}
    assert source.calls == [(arm.split(":")[1], n) for arm, n in asked.items()]
    rows = sampler.records()["tasks"]
    assert len(rows) == sum(asked.values()) and {row["step"] for row in rows} == {3}
    assert sampler.records()["tasks"] == rows  # kept, not drained


def test_registered_router_builds_the_rule_based_source_with_the_pool_as_seen():
    assert {"adsc_real_only", "adsc_rule_based"} <= set(SAMPLERS)
    extra = [[[1, 2, 3], 6]]
    sampler = make_sampler("adsc_rule_based", POOL, seed=0, exclude_keys=extra, eta=0.3)
    assert isinstance(sampler.source, RuleBasedGenerator) and sampler.config.eta == 0.3
    assert {t.key for t in POOL} | {((1, 2, 3), 6)} == sampler.source.seen
    batch = sampler.next_batch(0, 12)
    synthetic = [t for t, a in zip(batch.tasks, batch.arms, strict=True) if a.startswith("synthetic:")]
    assert synthetic and tier_labels(synthetic).tolist() == [
        a.split(":")[1] for a in batch.arms if a.startswith("synthetic:")
    ]
    with pytest.raises(ValueError, match="needs a task source"):
        make_sampler("adsc_real_only", POOL, variant="synthetic")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("eta", 0.0),
        ("temperature", 0.0),
        ("epsilon", 1.5),
        ("min_real_share", -0.1),
        ("max_synthetic_share", 1.2),
        ("min_hard_share", 2.0),
        ("warmup_steps", -1),
        ("initial_q", math.inf),
        ("variant", "teacher_only"),
    ],
)
def test_config_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        make_sampler("adsc_real_only", POOL, **{field: value})


def run(sampler, steps, batch_size=8):
    """Batches (tasks, indices, arms) of ``steps``, observing mean-reward-driven advantages."""
    out = []
    for step in steps:
        batch = sampler.next_batch(step, batch_size)
        rewards = np.array([[1.0, 0.0, 0.0, 1.0] if t.target % 3 else [0.0] * 4 for t in batch.tasks])
        sampler.observe(step, batch, None, loo_advantages(rewards))
        out.append((batch.tasks, batch.indices, batch.arms, sampler.records().get("tasks", [])[-1:]))
    return out


@pytest.mark.parametrize("name", ["adsc_real_only", "adsc_rule_based"])
def test_resumed_router_makes_identical_batches(name):
    uninterrupted = make_sampler(name, POOL, seed=6, warmup_steps=2)
    expected = run(uninterrupted, range(12))
    first = make_sampler(name, POOL, seed=6, warmup_steps=2)
    head = run(first, range(6))
    state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint stores
    assert state != make_sampler(name, POOL, seed=6).state_dict()
    resumed = make_sampler(name, POOL, seed=6, warmup_steps=2)
    resumed.load_state_dict(state)
    assert head + run(resumed, range(6, 12)) == expected
    assert resumed.stats() == uninterrupted.stats()
    assert resumed.state_dict() == uninterrupted.state_dict()


def test_batches_are_determined_by_the_seed():
    same = [run(router(seed=s), range(8)) for s in (7, 7, 8)]
    assert same[0] == same[1] and same[0] != same[2]


def test_a_run_hands_a_router_that_makes_up_tasks_every_task_it_evaluates():
    """The rule-based router's own proposals, made the run's held-out and validation tasks, are never
    proposed again once the run builds the router (``training.loop.build_sampler``); nor are its extra
    evaluation sets' tasks. A sampler that makes up no task is built without them."""
    from countdown_study.countdown.load import load_tasks
    from countdown_study.training.loop import TrainConfig, build_sampler
    from countdown_study.training.specs import EvalSpec

    def proposals(sampler):
        return [
            t.key
            for tasks, _, arms, _ in run(sampler, range(10), batch_size=12)
            for t, arm in zip(tasks, arms, strict=True)
            if arm.startswith("synthetic:")
        ]

    free = proposals(make_sampler("adsc_rule_based", POOL, seed=3))
    assert len(free) >= 8
    evaluated = [Task(nums, target) for nums, target in free[:8]]  # what the router would train on first
    held_out, validation = evaluated[:6], evaluated[6:]
    config = TrainConfig(sampler="adsc_rule_based", seed=3, eval=EvalSpec(extra_sets=(("ood", "ood:20:0"),)))
    sampler = build_sampler(config, POOL, held_out, validation)
    ood = load_tasks("ood:20:0")
    assert {t.key for t in [*evaluated, *ood]} <= sampler.source.seen
    again = proposals(sampler)
    assert again and not set(again) & {t.key for t in evaluated}
    uniform = build_sampler(TrainConfig(sampler="uniform", seed=3), POOL, held_out, validation)
    assert uniform.name == "uniform" and len(uniform.next_batch(0, 4).tasks) == 4
