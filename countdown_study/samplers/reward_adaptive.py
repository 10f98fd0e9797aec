"""Report 000's reward-adaptive curriculum: per-prompt reward EMAs sort the pool into learnability bands.

Report 000 ("Curriculum Sampling for RLOO", Section 3.4), per prompt i with G samples:

- ``s_i <- a s_i + (1 - a) (1/G) sum_k r_ik`` with a = 0.95 (Section 4.3): an EMA of the group's mean
  reward, which the report also calls the prompt's "success EMA";
- categories: unknown (never observed), too hard (``s_i`` below the band), learnable (in the band),
  too easy (above it);
- v1: band ``0.1 <= s_i <= 0.7``, "90% from learnable prompts and 10% uniformly";
- v2: band ``0.2 <= s_i <= 0.6``, 30% uniform, a 20-step uniform warm-up, "higher sampling weights
  for prompts outside the learnable region".

Where the report is silent or contradicts itself, our choices (fields of ``RewardAdaptiveConfig``):

- The EMA's signal (``signal``): by default the group's success rate (share of correct samples, from
  ``Grades.correct``), as the report's words "success EMA" and "almost never solves" intend. The literal
  mean reward (``signal="reward"``) counts the 0.1 format score: a prompt never solved but always
  answered has a mean reward of exactly 0.1, on the closed lower edge of v1's band, so v1 would treat
  unsolvable prompts as learnable. It is kept as an ablation row (``study.REPORT_000_ABLATIONS``).

- The first observation of a prompt sets its EMA to the observed group mean (no pull towards an
  arbitrary prior); a prompt drawn twice in one batch is updated twice, in batch order.
- The band is closed on both ends, as the report writes it (``0.1 <= s_i <= 0.7`` is learnable).
- Batch split: ``round(uniform_fraction * B)`` slots (half up) are drawn uniformly from the whole pool,
  the rest (the curriculum part) from the observed prompts with weight 1 for learnable and
  ``too_hard_weight`` / ``too_easy_weight`` outside the band. v1 gives the outside 0 (the curriculum
  part is all learnable: "90% from learnable prompts"); v2 gives both 0.25 (our value for "higher").
  Unknown prompts get no curriculum weight: the uniform part explores them. The batch lists the
  curriculum draws first, then the uniform ones. All draws are with replacement, from
  ``derive_rng(seed, step, SamplerStream.STEP)``.
- Fallback: while no prompt is learnable (at the start, or when every band empties), the whole batch
  is uniform; so is every batch of the warm-up (steps ``0 .. warmup - 1``). Rewards observed
  during warm-up and fallback still update the EMAs.
- v2's warm-up length: the report's 20 steps are 20% of its 100-step run. ``ADAPTIVE_V2`` keeps 20
  steps (``warmup_steps``), a third of the study's 60-step run, so that its committed runs stay what
  they are; ``warmup_fraction=REPORT_WARMUP_FRACTION`` with the run's ``total_steps`` gives the
  report's proportion instead (12 of 60 steps; the row ``study.ADAPTIVE_V2_REPORT_WARMUP``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.samplers.fixed_buckets import ema_update
from countdown_study.seeding import SamplerStream, derive_rng

CATEGORIES = ("unknown", "too_hard", "learnable", "too_easy")
"""Category labels; ``categorize`` returns indices into this tuple."""
UNKNOWN, TOO_HARD, LEARNABLE, TOO_EASY = range(4)
SIGNALS = ("success", "reward")
"""What a prompt's EMA can track (``RewardAdaptiveConfig.signal``)."""


@dataclass(frozen=True)
class RewardAdaptiveConfig:
    """Hyperparameters of the reward-adaptive curriculum (report 000, Sections 3.4 and 4.3)."""

    alpha: float = 0.95
    """EMA decay a in ``s_i <- a s_i + (1 - a) mean_k r_ik`` (report 000, Section 4.3)."""
    low: float = 0.1
    """Lower edge of the learnable band (inclusive): below it a prompt is too hard."""
    high: float = 0.7
    """Upper edge of the learnable band (inclusive): above it a prompt is too easy."""
    uniform_fraction: float = 0.1
    """Share of each batch drawn uniformly from the whole pool (rounded half up to whole prompts)."""
    warmup_steps: int = 0
    """Steps at the start whose batches are entirely uniform (unused when ``warmup_fraction`` is set)."""
    warmup_fraction: float | None = None
    """Share of the run's steps whose batches are entirely uniform, rounded half up; when set it replaces
    ``warmup_steps`` and needs ``total_steps`` (report 000's v2: 20 of 100 steps, 0.2)."""
    total_steps: int | None = None
    """The run's training steps, which ``warmup_fraction`` scales (the study passes it; unused otherwise)."""
    too_hard_weight: float = 0.0
    """Curriculum weight of a too-hard prompt, relative to 1 for a learnable one (ours)."""
    too_easy_weight: float = 0.0
    """Curriculum weight of a too-easy prompt, relative to 1 for a learnable one (ours)."""
    signal: str = "success"
    """What the EMA tracks: ``success`` (share of correct samples; ours) or ``reward`` (mean reward, literal)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {self.alpha}")
        if not self.low <= self.high:
            raise ValueError(f"need low <= high, got {self.low}, {self.high}")
        if not 0.0 <= self.uniform_fraction <= 1.0:
            raise ValueError(f"uniform_fraction must be in [0, 1], got {self.uniform_fraction}")
        if self.signal not in SIGNALS:
            raise ValueError(f"signal must be one of {SIGNALS}, got {self.signal!r}")
        if min(self.too_hard_weight, self.too_easy_weight) < 0.0:
            raise ValueError("category weights must be non-negative")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {self.total_steps}")
        if self.warmup_fraction is not None:
            if not 0.0 <= self.warmup_fraction <= 1.0:
                raise ValueError(f"warmup_fraction must be in [0, 1], got {self.warmup_fraction}")
            if self.total_steps is None:
                raise ValueError("warmup_fraction needs the option total_steps (the run's training steps)")

    @property
    def warmup(self) -> int:
        """Steps of the uniform warm-up: ``warmup_fraction * total_steps`` rounded half up when the
        fraction is set, else ``warmup_steps``."""
        if self.warmup_fraction is None:
            return self.warmup_steps
        return int(np.floor(self.warmup_fraction * self.total_steps + 0.5))


ADAPTIVE_V1 = RewardAdaptiveConfig()  # report 000, Table 1, "Reward-Adaptive v1"
ADAPTIVE_V2 = RewardAdaptiveConfig(  # report 000, Table 1, "Reward-Adaptive v2" (warm-up: 20 steps)
    low=0.2, high=0.6, uniform_fraction=0.3, warmup_steps=20, too_hard_weight=0.25, too_easy_weight=0.25
)
REPORT_WARMUP_FRACTION = 0.2
"""Report 000's v2 warm-up as a share of its run: 20 of 100 steps (``RewardAdaptiveConfig.warmup_fraction``)."""


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def prompt_ema_update(ema: np.ndarray, observed: np.ndarray, alpha: float) -> np.ndarray:
    """Report 000's per-prompt EMA; an unobserved prompt (NaN) takes ``observed``.  # (K,), (K,) -> (K,)"""
    return np.where(np.isnan(ema), observed, ema_update(ema, observed, alpha))


def categorize(ema: np.ndarray, low: float, high: float) -> np.ndarray:
    """Category index (``CATEGORIES``) of each prompt from its EMA, NaN meaning unknown.  # (N,) -> (N,)"""
    ema = np.asarray(ema, dtype=np.float64)
    conditions = [np.isnan(ema), ema < low, ema <= high]
    return np.select(conditions, [UNKNOWN, TOO_HARD, LEARNABLE], default=TOO_EASY)


def category_weights(categories: np.ndarray, config: RewardAdaptiveConfig) -> np.ndarray:
    """Unnormalized curriculum weight per prompt: learnable 1, outside the band its config weight.  # (N,)"""
    per_category = np.array([0.0, config.too_hard_weight, 1.0, config.too_easy_weight])  # (4,)
    return per_category[categories]


def mix_counts(batch_size: int, uniform_fraction: float) -> tuple[int, int]:
    """(curriculum, uniform) prompts of a batch: ``round(uniform_fraction * B)`` uniform, half up."""
    uniform = min(batch_size, int(np.floor(uniform_fraction * batch_size + 0.5)))
    return batch_size - uniform, uniform


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class RewardAdaptiveSampler(Sampler):
    """Report 000's reward-adaptive curriculum: the learnable band first, a uniform share for coverage."""

    config: RewardAdaptiveConfig = ADAPTIVE_V1
    """The curriculum's hyperparameters (a preset: ``ADAPTIVE_V1`` or ``ADAPTIVE_V2``)."""
    name: str = field(default="reward_adaptive", init=False)

    @classmethod
    def run_options(cls, options: Mapping[str, Any], steps: int, prompts_per_step: int) -> dict[str, Any]:
        """A warm-up given as a share of the run (``warmup_fraction``) needs the run's ``total_steps``."""
        return {"total_steps": steps} if "warmup_fraction" in options else {}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ema = np.full(len(self.pool), np.nan)  # (N,) NaN until first observed

    def categories(self) -> np.ndarray:
        """Each pool prompt's category index now.  # (N,)"""
        return categorize(self.ema, self.config.low, self.config.high)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        n = len(self.pool)
        categories = self.categories()  # (N,)
        if step < self.config.warmup or not (categories == LEARNABLE).any():
            return rng.integers(0, n, size=batch_size)
        weights = category_weights(categories, self.config)  # (N,)
        n_curriculum, n_uniform = mix_counts(batch_size, self.config.uniform_fraction)
        curriculum = rng.choice(n, size=n_curriculum, p=weights / weights.sum())  # (B_c,)
        uniform = rng.integers(0, n, size=n_uniform)  # (B_u,)
        return np.concatenate([curriculum, uniform])

    def next_batch(self, step: int, batch_size: int) -> Batch:
        batch = super().next_batch(step, batch_size)
        categories = self.categories()
        return Batch(batch.tasks, batch.indices, tuple(CATEGORIES[categories[i]] for i in batch.indices))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        signal = grades.correct if self.config.signal == "success" else grades.rewards  # (P, G)
        group_means = signal.mean(axis=1, dtype=np.float64)  # (P,)
        for index, mean in zip(batch.indices, group_means, strict=True):  # duplicates update in order
            if index >= 0:
                self.ema[index] = prompt_ema_update(self.ema[index], mean, self.config.alpha)

    def stats(self) -> dict:
        counts = np.bincount(self.categories(), minlength=len(CATEGORIES))  # (4,)
        return {name: int(c) for name, c in zip(CATEGORIES, counts, strict=True)}

    def state_dict(self) -> dict:
        observed = np.flatnonzero(~np.isnan(self.ema))
        return {"indices": observed.tolist(), "ema": self.ema[observed].tolist()}

    def load_state_dict(self, state: dict) -> None:
        self.ema = np.full(len(self.pool), np.nan)
        self.ema[np.asarray(state["indices"], dtype=np.int64)] = np.asarray(state["ema"], dtype=np.float64)
