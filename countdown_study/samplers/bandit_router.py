"""Report 004's bandit router (ADSC): an epsilon-softmax bandit over {real, synthetic} x tiers.

Report 004 ("Advantage-Driven Synthetic Curriculum", Section 3.3, eqs. 3-6, Algorithm 1), per step:

- prompt score ``s(x) = mean_k |A_k|`` over its G RLOO advantages (eq. 3); arm reward
  ``|A|_c = mean_{x in B_c} s(x)`` over the arm's prompts of the batch (eq. 4);
- ``Q(c) <- (1 - eta) Q(c) + eta |A|_c`` with eta = 0.15, for the arms in the batch (eq. 5; Q starts
  at 0, Algorithm 1);
- ``p(c) = (1 - eps) softmax(Q / tau)(c) + eps / |arms|`` with tau = 0.25 (eq. 6);
- constraints on every batch: real >= 30%, synthetic <= 50%, hard tiers (T2, T3) >= 10% after warm-up.

Arms: ``real:T0 .. real:T3`` draw from the pool's tasks of that tier (``countdown.tier_labels``, our
partition; a tier without pool tasks is not an arm); ``synthetic:T0 .. synthetic:T3`` ask a
``TaskSource`` (the rule-based generator, ``countdown.synthetic``; a teacher model later). The
real-only variant (report 004's "RLOO + real-only MAB") has the four real arms.

Where the report is silent, our choices (fields of ``BanditRouterConfig``):

- eps = 0.1: every arm keeps at least eps / 8 = 1.25% of the probability (report 004 gives no value).
- Warm-up: 10 steps (``warmup_steps``): the EMA's time constant is 1 / eta ~ 7 observations, so after
  10 steps the Q values carry signal; 10 of the report's 75 steps. Only the hard-tier quota waits for
  it; the routing itself starts at step 0 (uniform while every Q is 0).
- Shares in whole prompts: real >= ceil(0.30 B), synthetic <= floor(0.50 B), hard >= ceil(0.10 B).
  With two sources, synthetic <= 50% implies real >= 50%, so the real floor only binds when the
  synthetic ceiling is raised above 70%.
- Batch assembly (``assemble_counts``), all draws from ``derive_rng(seed, step, SamplerStream.STEP)``:
  1. synthetic slots ``n_s ~ Binomial(B, p(synthetic))``, clipped into what the source constraints
     allow (the minimal repair of the source split);
  2. real slots' arms ~ Multinomial(B - n_s, p over real arms), synthetic ones ~ Multinomial(n_s, p
     over synthetic arms). Without constraints, steps 1-2 are exactly Multinomial(B, p);
  3. after warm-up, while hard slots fall short: one easy slot (drawn in proportion to the easy arms'
     counts) moves to a hard arm of the same source (drawn by p), so the source split is kept.
     When the pool has no hard tier, step 1 keeps at least the hard quota synthetic.
- Tasks: a real arm's tasks are drawn uniformly without replacement from its tier within a step
  (whole permutations repeated if it asks for more than the tier holds); a synthetic arm asks the
  source with its own stream ``derive_rng(seed, step, SamplerStream.STEP, 1 + arm index)``. The batch
  lists arms in ``arms`` order, real first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from countdown_study.countdown.difficulty import tier_labels
from countdown_study.countdown.grading import Grades
from countdown_study.countdown.task import Task
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng

REAL, SYNTHETIC = "real", "synthetic"
ROUTED_TIERS = ("T0", "T1", "T2", "T3")
"""The tiers the router trains on (OOD is evaluation only)."""
HARD_TIERS = ("T2", "T3")
"""Tiers counted by the hard quota."""
VARIANTS = ("real_only", "synthetic")
"""``real_only``: the four real arms; ``synthetic``: the eight {real, synthetic} x tier arms."""
_TOLERANCE = 1e-9  # shares times batch sizes: 0.3 * 10 must give 3, not 3.0000000000000004


class TaskSource(Protocol):
    """Where synthetic arms get tasks: the rule-based generator, or a teacher model."""

    def propose(self, tier: str, count: int, rng: np.random.Generator) -> tuple[list[Task], list[dict]]:
        """Exactly ``count`` accepted tasks of ``tier`` and one log row per candidate (or raise)."""
        ...

    def state_dict(self) -> dict:
        """JSON-able resume state (what it has seen and accepted)."""
        ...

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict``."""
        ...


def arm_label(source: str, tier: str) -> str:
    """``real:T2``, ``synthetic:T0``: the ``Batch.arms`` label of an arm."""
    return f"{source}:{tier}"


@dataclass(frozen=True)
class BanditRouterConfig:
    """Hyperparameters of the ADSC router (report 004, Sections 3.3 and 4)."""

    eta: float = 0.15
    """EMA rate of ``Q <- (1 - eta) Q + eta |A|_c`` (report 004: alpha = 0.15)."""
    temperature: float = 0.25
    """Softmax temperature tau of ``softmax(Q / tau)`` (report 004)."""
    epsilon: float = 0.1
    """Exploration share spread evenly over the arms (ours: report 004 gives no value)."""
    min_real_share: float = 0.30
    """Real tasks are at least this share of every batch (report 004)."""
    max_synthetic_share: float = 0.50
    """Synthetic tasks are at most this share of every batch (report 004)."""
    min_hard_share: float = 0.10
    """T2 and T3 tasks are at least this share of every batch after warm-up (report 004)."""
    warmup_steps: int = 10
    """Steps ``0 .. warmup_steps - 1`` skip the hard quota (ours: report 004 names a warm-up only)."""
    initial_q: float = 0.0
    """Every arm's Q before its first observation (report 004, Algorithm 1)."""
    variant: str = "synthetic"
    """``synthetic``: real and synthetic arms; ``real_only``: the real arms (report 004's two routers)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.eta <= 1.0:
            raise ValueError(f"eta must be in (0, 1], got {self.eta}")
        if not self.temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        for name in ("epsilon", "min_real_share", "max_synthetic_share", "min_hard_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be non-negative, got {self.warmup_steps}")
        if not math.isfinite(self.initial_q):
            raise ValueError(f"initial_q must be finite, got {self.initial_q}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")

    @property
    def arms(self) -> tuple[str, ...]:
        """The variant's arms, real first."""
        sources = (REAL,) if self.variant == "real_only" else (REAL, SYNTHETIC)
        return tuple(arm_label(source, tier) for source in sources for tier in ROUTED_TIERS)


ADSC_REAL_ONLY = BanditRouterConfig(variant="real_only")  # report 004, Table 2, "RLOO + real-only MAB"
ADSC_SYNTHETIC = BanditRouterConfig()  # report 004, Table 2, "ADSC rule-based" (and "Qwen-teacher")


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def prompt_scores(advantages: np.ndarray) -> np.ndarray:
    """Report 004's eq. 3: ``s(x) = mean_k |A_k|`` per prompt.  # (P, G) -> (P,)"""
    return np.abs(np.asarray(advantages, dtype=np.float64)).mean(axis=1)


def arm_rewards(scores: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """Report 004's eq. 4: ``|A|_c``, the mean score of each arm's prompts (arms in the batch only)."""
    labels = np.asarray(labels)  # (P,)
    return {str(arm): float(scores[labels == arm].mean()) for arm in dict.fromkeys(labels.tolist())}


def q_update(q: float, reward: float, eta: float) -> float:
    """Report 004's eq. 5: ``Q <- (1 - eta) Q + eta |A|_c``."""
    return (1.0 - eta) * q + eta * reward


def arm_probabilities(q: np.ndarray, available: np.ndarray, temperature: float, epsilon: float) -> np.ndarray:
    """Report 004's eq. 6 over the available arms, 0 elsewhere.  # (A,), (A,) bool -> (A,)

    ``p = (1 - eps) softmax(Q / tau) + eps / n`` with n the number of available arms.
    """
    logits = np.where(available, np.asarray(q, dtype=np.float64) / temperature, -np.inf)  # (A,)
    softmax = np.exp(logits - logits.max())
    softmax /= softmax.sum()
    return np.where(available, (1.0 - epsilon) * softmax + epsilon / available.sum(), 0.0)


@dataclass(frozen=True)
class Quotas:
    """A batch's constraints in whole prompts."""

    min_real: int
    """Real prompts at least."""
    max_synthetic: int
    """Synthetic prompts at most."""
    min_hard: int
    """T2 / T3 prompts at least (0 during warm-up)."""


def batch_quotas(batch_size: int, config: BanditRouterConfig, step: int) -> Quotas:
    """The shares of ``config`` as prompt counts of a batch of ``batch_size`` at ``step``."""
    hard = config.min_hard_share if step >= config.warmup_steps else 0.0
    return Quotas(
        min_real=math.ceil(config.min_real_share * batch_size - _TOLERANCE),
        max_synthetic=math.floor(config.max_synthetic_share * batch_size + _TOLERANCE),
        min_hard=math.ceil(hard * batch_size - _TOLERANCE),
    )


def assemble_counts(
    p: np.ndarray,
    is_real: np.ndarray,
    is_hard: np.ndarray,
    batch_size: int,
    quotas: Quotas,
    rng: np.random.Generator,
) -> np.ndarray:
    """Prompts per arm: drawn by ``p``, repaired minimally into ``quotas``.  # (A,) -> (A,) int

    See the module docstring (batch assembly, steps 1-3). Unavailable arms have ``p = 0``.
    """
    available = p > 0
    real_hard = (available & is_real & is_hard).any()
    low = 0 if real_hard else quotas.min_hard  # no hard tier in the pool: the quota comes synthetic
    high = min(quotas.max_synthetic, batch_size - quotas.min_real) if (available & ~is_real).any() else 0
    if low > high:
        raise ValueError(
            f"min_hard_share needs {quotas.min_hard} hard prompts of {batch_size}, but the pool has no "
            f"T2/T3 task and at most {high} synthetic prompts are allowed"
        )
    p_synthetic = float(np.clip(p[~is_real].sum(), 0.0, 1.0))
    n_synthetic = int(np.clip(rng.binomial(batch_size, p_synthetic), low, high))
    counts = np.zeros(len(p), dtype=np.int64)
    for part, n in ((is_real, batch_size - n_synthetic), (~is_real, n_synthetic)):
        if n:
            weights = np.where(part, p, 0.0)
            counts += rng.multinomial(n, weights / weights.sum())
    return _fill_hard_quota(counts, p, is_real, is_hard, quotas.min_hard, rng)


def _fill_hard_quota(counts, p, is_real, is_hard, min_hard, rng) -> np.ndarray:
    """Move easy slots to hard arms of the same source until ``min_hard`` slots are hard."""
    has_hard = {bool(real): ((p > 0) & is_hard & (is_real == real)).any() for real in (False, True)}
    donor_ok = ~is_hard & np.array([has_hard[bool(r)] for r in is_real])  # (A,)
    counts = counts.copy()
    for _ in range(min_hard - int(counts[is_hard].sum())):
        donors = np.where(donor_ok, counts, 0).astype(np.float64)
        donor = int(rng.choice(len(counts), p=donors / donors.sum()))
        weights = np.where(is_hard & (is_real == is_real[donor]), p, 0.0)
        counts[donor] -= 1
        counts[int(rng.choice(len(counts), p=weights / weights.sum()))] += 1
    return counts


def draw_without_replacement(members: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` of ``members`` uniformly without replacement, repeating whole permutations.  # (count,)"""
    rounds = -(-count // len(members))
    return np.concatenate([rng.permutation(members) for _ in range(rounds)])[:count]


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class BanditRouterSampler(Sampler):
    """Report 004's ADSC router: Q-values of mean |RLOO advantage| route each batch over the arms."""

    config: BanditRouterConfig = ADSC_SYNTHETIC
    """The router's hyperparameters (a preset: ``ADSC_REAL_ONLY`` or ``ADSC_SYNTHETIC``)."""
    source: TaskSource | None = None
    """Synthetic tasks (``TaskSource``); required by the synthetic variant, unused by the real-only one."""
    name: str = field(default="bandit_router", init=False)

    @classmethod
    def build_arguments(
        cls,
        pool: Sequence[Task],
        config: BanditRouterConfig,
        source_factory: Callable[..., TaskSource] | None = None,
        exclude_keys: Iterable = (),
    ) -> dict[str, Any]:
        """The synthetic variant's task source, ``source_factory(seen_keys=...)``: its seen keys are the
        pool's and ``exclude_keys`` (e.g. the evaluation set's, as ``[nums, target]`` pairs)."""
        if config.variant != "synthetic" or source_factory is None:
            return {}
        return {"source": source_factory(seen_keys=[*(t.key for t in pool), *exclude_keys])}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.variant == "synthetic" and self.source is None:
            raise ValueError("the synthetic variant needs a task source (source=...)")
        labels = tier_labels(self.pool)  # (N,)
        self.members = {tier: np.flatnonzero(labels == tier) for tier in ROUTED_TIERS}  # tier -> (N_t,)
        if not any(m.size for m in self.members.values()):
            raise ValueError(f"the pool has no task in tiers {ROUTED_TIERS} (only {set(labels.tolist())})")
        self.arms = self.config.arms
        self.is_real = np.array([arm.startswith(REAL + ":") for arm in self.arms])  # (A,)
        self.is_hard = np.array([arm.split(":")[1] in HARD_TIERS for arm in self.arms])  # (A,)
        self.available = ~self.is_real | np.array(
            [self.members[arm.split(":")[1]].size > 0 for arm in self.arms]
        )  # (A,) a real arm needs pool tasks of its tier
        self.q = np.full(len(self.arms), self.config.initial_q)  # (A,)
        self.task_log: list[dict] = []

    def probabilities(self) -> np.ndarray:
        """Each arm's routing probability now (eq. 6).  # (A,)"""
        return arm_probabilities(self.q, self.available, self.config.temperature, self.config.epsilon)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch: arm counts by ``assemble_counts``, then tasks arm by arm."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        quotas = batch_quotas(batch_size, self.config, step)
        counts = assemble_counts(self.probabilities(), self.is_real, self.is_hard, batch_size, quotas, rng)
        tasks, indices, arms = [], [], []
        for a, (arm, count) in enumerate(zip(self.arms, counts.tolist(), strict=True)):
            if count == 0:
                continue
            source, tier = arm.split(":")
            if source == REAL:
                drawn = draw_without_replacement(self.members[tier], count, rng).tolist()
                tasks += [self.pool[i] for i in drawn]
                indices += drawn
            else:
                tasks += self._synthetic(step, a, tier, count)
                indices += [-1] * count
            arms += [arm] * count
        return Batch(tuple(tasks), tuple(indices), tuple(arms))

    def _synthetic(self, step: int, arm_index: int, tier: str, count: int) -> list[Task]:
        rng = derive_rng(self.seed, step, SamplerStream.STEP, 1 + arm_index)
        tasks, rows = self.source.propose(tier, count, rng)
        if len(tasks) != count:
            raise ValueError(f"the task source gave {len(tasks)} {tier} tasks, {count} were asked for")
        self.task_log += [{"step": step, **row} for row in rows]
        return list(tasks)

    def records(self) -> dict[str, list[dict]]:
        """``tasks``: every synthetic candidate the source proposed (``step`` + the source's row: source,
        tier, accepted or the reason it was not, numbers, target)."""
        return {"tasks": list(self.task_log)} if self.config.variant == "synthetic" else {}

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        """Eqs. 3-5: each arm in the batch moves its Q towards its mean |advantage|."""
        if not batch.arms:
            raise ValueError("the router needs the batch's arm labels (Batch.arms)")
        for arm, reward in arm_rewards(prompt_scores(advantages), batch.arms).items():
            a = self.arms.index(arm)
            self.q[a] = q_update(self.q[a], reward, self.config.eta)

    def stats(self) -> dict:
        """``p_<arm>`` and ``q_<arm>`` per arm, e.g. ``p_real_T0``, ``q_syn_T3``."""
        short = [arm.replace(SYNTHETIC, "syn").replace(":", "_") for arm in self.arms]
        p = self.probabilities()
        return {
            **{f"p_{s}": float(v) for s, v in zip(short, p, strict=True)},
            **{f"q_{s}": float(v) for s, v in zip(short, self.q, strict=True)},
        }

    def state_dict(self) -> dict:
        return {
            "q": dict(zip(self.arms, self.q.tolist(), strict=True)),
            "source": self.source.state_dict() if self.config.variant == "synthetic" else None,
            "task_log": list(self.task_log),
        }

    def load_state_dict(self, state: dict) -> None:
        self.q = np.array([float(state["q"][arm]) for arm in self.arms])
        if state["source"] is not None:
            self.source.load_state_dict(state["source"])
        self.task_log = list(state["task_log"])
