"""SEC (Self-Evolving Curriculum): a Boltzmann bandit over problem categories, rewarded by mean |advantage|.

Source: Chen et al., "Self-Evolving Curriculum for LLM Reasoning" (arXiv 2505.14970), and the usage of
its released code (``trainer.sec.strategy=bandit``, ``trainer.sec.bandit.lr``, ``.temperature``,
``.objective=adv``). Curriculum selection is a non-stationary multi-armed bandit, one arm per problem
category (difficulty level or problem type). Per step:

- reward of arm c: the mean absolute advantage of the batch's rollouts of c's problems, a proxy for the
  immediate learning gain (``objective=adv``);
- TD(0) update of the arms in the batch: ``Q(c) <- Q(c) + alpha (r(c) - Q(c))``, alpha = 0.5 (the
  ``lr`` of every run of the released code);
- Boltzmann policy ``p(c) = softmax(Q / tau)(c)`` chooses the category of each batch slot, then a problem
  is drawn uniformly from that category; tau = 1.0 in the Countdown run (0.4 for math, 0.2 for the 2-D
  runs).

Relation to report 004's router (``samplers/bandit_router.py``): the same signal (eqs. 3-4,
``prompt_scores`` and ``arm_rewards`` are reused: a prompt's mean |A| over its G RLOO advantages, averaged
over the arm's prompts). SEC has no source constraints (no real / synthetic shares, no hard-tier quota, no
warm-up), no exploration epsilon (every arm keeps ``exp(Q / tau)`` mass only), and a TD(0) update where the
router keeps an EMA. On a bandit the two recursions are the same map, ``(1 - a) Q + a r``; what differs is
the rate (0.5 against the router's 0.15, a memory of about 2 rather than 7 observations) and the
temperature (1.0 against 0.25).

Where we choose (fields of ``SECConfig``):

- Categories (``categories``): ``count_x_tier`` (default) crosses the number count (3, 4) with
  ``countdown.tier_labels`` (report 004's tiers, from target and solution count), giving the arms
  ``3:T0, 3:T1, 4:T1, 4:T2, 4:T3`` on generated data (T1 holds both 3- and 4-number tasks, so the cross
  splits it); ``tier`` uses the tiers alone (the router's real arms, for a like-for-like comparison).
  Solution-count terciles within a number count were not used: 3-number tasks take only a few distinct
  counts (1, 3, 5), so their terciles degenerate. Every label present in the pool is an arm.
- Q starts at 0 for every arm (uniform first batches).
- A batch: ``Multinomial(B, p)`` arm counts, then each arm's problems uniformly without replacement within
  the step (whole permutations repeated if an arm gets more slots than it holds); arms in sorted order.
  All draws from ``derive_rng(seed, step, SamplerStream.STEP)``; ``Batch.arms`` names each prompt's arm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.difficulty import tier_labels
from countdown_study.countdown.grading import Grades
from countdown_study.countdown.task import Task
from countdown_study.samplers.bandit_router import arm_rewards, draw_without_replacement, prompt_scores
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng

CATEGORY_RULES = ("count_x_tier", "tier")
"""How tasks are split into SEC's arms (``category_labels``)."""


@dataclass(frozen=True)
class SECConfig:
    """Hyperparameters of SEC (arXiv 2505.14970, the released code's Countdown run)."""

    learning_rate: float = 0.5
    """alpha of the TD(0) update ``Q <- Q + alpha (r - Q)`` (SEC: 0.5)."""
    temperature: float = 1.0
    """tau of the Boltzmann policy ``softmax(Q / tau)`` (SEC's Countdown run: 1.0)."""
    initial_q: float = 0.0
    """Every arm's Q before its first observation (ours)."""
    categories: str = "count_x_tier"
    """Arm rule: ``count_x_tier`` (number count x report 004's tier) or ``tier`` (ours)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.learning_rate <= 1.0:
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate}")
        if not self.temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not math.isfinite(self.initial_q):
            raise ValueError(f"initial_q must be finite, got {self.initial_q}")
        if self.categories not in CATEGORY_RULES:
            raise ValueError(f"categories must be one of {CATEGORY_RULES}, got {self.categories!r}")


SEC = SECConfig()  # SEC's Countdown settings (alpha 0.5, tau 1.0) over number count x tier


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def category_labels(tasks: Sequence[Task], rule: str = "count_x_tier") -> np.ndarray:
    """SEC's arm of each task: ``3:T0`` (number count x tier) or ``T0`` (tier).  # (N,) str"""
    if rule not in CATEGORY_RULES:
        raise ValueError(f"unknown category rule {rule!r}; choose one of {CATEGORY_RULES}")
    tiers = tier_labels(tasks)  # (N,)
    if rule == "tier":
        return tiers
    return np.array([f"{task.num_count}:{tier}" for task, tier in zip(tasks, tiers, strict=True)])


def td_update(q: float, reward: float, learning_rate: float) -> float:
    """SEC's TD(0) step: ``Q <- Q + alpha (r - Q)``."""
    return q + learning_rate * (reward - q)


def boltzmann(q: np.ndarray, temperature: float) -> np.ndarray:
    """SEC's policy ``softmax(Q / tau)``.  # (A,) -> (A,)"""
    logits = np.asarray(q, dtype=np.float64) / temperature  # (A,)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class SECSampler(Sampler):
    """SEC: categories drawn from a Boltzmann policy on TD(0) estimates of their mean |advantage|."""

    config: SECConfig = SEC
    """The bandit's hyperparameters."""
    name: str = field(default="sec", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        labels = category_labels(self.pool, self.config.categories)  # (N,)
        self.arms = tuple(sorted(set(labels.tolist())))
        self.members = {arm: np.flatnonzero(labels == arm) for arm in self.arms}  # arm -> (N_c,)
        self.q = np.full(len(self.arms), self.config.initial_q)  # (A,)

    def probabilities(self) -> np.ndarray:
        """Each arm's probability now.  # (A,)"""
        return boltzmann(self.q, self.config.temperature)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """Arm counts ~ Multinomial(B, p), then each arm's prompts uniformly without replacement."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        counts = rng.multinomial(batch_size, self.probabilities())  # (A,)
        indices, arms = [], []
        for arm, count in zip(self.arms, counts.tolist(), strict=True):
            if count:
                indices += draw_without_replacement(self.members[arm], count, rng).tolist()
                arms += [arm] * count
        return Batch(tuple(self.pool[i] for i in indices), tuple(indices), tuple(arms))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        """Each arm in the batch moves its Q towards its prompts' mean |advantage| (TD(0))."""
        if not batch.arms:
            raise ValueError("SEC needs the batch's arm labels (Batch.arms)")
        for arm, reward in arm_rewards(prompt_scores(advantages), batch.arms).items():
            a = self.arms.index(arm)
            self.q[a] = td_update(self.q[a], reward, self.config.learning_rate)

    def stats(self) -> dict:
        """``p_<arm>`` and ``q_<arm>`` per arm, e.g. ``p_4_T3``."""
        short = [arm.replace(":", "_") for arm in self.arms]
        return {
            **{f"p_{s}": float(v) for s, v in zip(short, self.probabilities(), strict=True)},
            **{f"q_{s}": float(v) for s, v in zip(short, self.q, strict=True)},
        }

    def state_dict(self) -> dict:
        return {"q": dict(zip(self.arms, self.q.tolist(), strict=True))}

    def load_state_dict(self, state: dict) -> None:
        self.q = np.array([float(state["q"][arm]) for arm in self.arms])
