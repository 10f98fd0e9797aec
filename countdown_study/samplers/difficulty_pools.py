"""prime-rl's difficulty pools: retire saturated prompts into "easy" / "hard" pools, bring a few back.

Source: PrimeIntellect-ai/prime-rl, ``src/prime_rl/orchestrator/buffer.py``, ``DifficultyPoolBuffer``
(config ``DifficultyPoolBufferConfig`` in ``orchestrator/config.py``). What it does, per step:

- every problem starts in the ``normal`` pool;
- after each batch, a problem's pool is set from the mean reward ``r`` of its rollouts: ``easy`` when
  ``r > easy_border``, ``hard`` when ``r < hard_border``, else ``normal`` (so a retired problem that is
  drawn again and lands in between returns to ``normal``); defaults ``easy_border = 0.8``,
  ``hard_border = 0.2``;
- a batch of n problems takes ``int(n * easy_fraction)`` from ``easy``, ``int(n * hard_fraction)`` from
  ``hard`` (defaults 0.1 each) and the rest from ``normal``, each pool sampled without replacement
  (``random.sample``); an easy or hard shortfall is drawn from ``normal`` instead; the batch lists easy,
  normal, hard in that order. A ``normal`` pool too small for its share fails an assertion there.

(Later prime-rl versions fold this into one ``Buffer`` with ``easy_threshold`` / ``hard_threshold``
compared with ``>=`` / ``<=`` and sample only ``normal`` problems, the fractions then saying how many
retired problems return to ``normal`` at a (re)start. We follow the pool version above.)

Where we differ or choose (fields of ``DifficultyPoolsConfig``):

- The signal is the group's success rate (share of correct samples, ``Grades.correct``), not the mean
  reward: with the 0.1 format score a never-solved but always-answered prompt has mean reward 0.1 and
  would never fall under a hard threshold of 0.05.
- Thresholds 0.95 / 0.05 (prime-rl: 0.8 / 0.2), compared strictly as there (``>``, ``<``). With G < 20
  samples per prompt they retire exactly the all-correct and all-wrong groups, whose RLOO advantages are
  all zero (no gradient). prime-rl's borders are one override away (``easy_threshold=0.8``, ...).
- ``ema``: the pool follows a per-prompt success EMA ``s <- ema s + (1 - ema) s_hat``, whose first
  observation sets ``s = s_hat``. The default 0.0 is prime-rl's rule: the last observed success.
- Fractions in whole prompts as prime-rl (``int``, rounding down); 10% easy / 10% hard as there.
- When ``normal`` cannot fill its share (prime-rl asserts), the rest is drawn from the prompts not yet in
  the batch, uniformly without replacement; only a batch larger than the pool repeats prompts (whole
  permutations, ``bandit_router.draw_without_replacement``).
- All draws come from ``derive_rng(seed, step, SamplerStream.STEP)``; ``Batch.arms`` names each
  prompt's pool at draw time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.samplers.bandit_router import draw_without_replacement
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.samplers.reward_adaptive import prompt_ema_update
from countdown_study.seeding import SamplerStream, derive_rng

POOLS = ("easy", "normal", "hard")
"""Pool labels; ``pool_labels`` returns indices into this tuple (the batch order, as prime-rl's)."""
EASY, NORMAL, HARD = range(3)


@dataclass(frozen=True)
class DifficultyPoolsConfig:
    """Hyperparameters of the difficulty pools (prime-rl's ``DifficultyPoolBufferConfig``)."""

    easy_threshold: float = 0.95
    """A prompt whose success is above it retires to ``easy`` (prime-rl's ``easy_border``: 0.8)."""
    hard_threshold: float = 0.05
    """A prompt whose success is below it retires to ``hard`` (prime-rl's ``hard_border``: 0.2)."""
    easy_fraction: float = 0.1
    """Share of each batch brought back from ``easy``, rounded down (prime-rl: 0.1)."""
    hard_fraction: float = 0.1
    """Share of each batch brought back from ``hard``, rounded down (prime-rl: 0.1)."""
    ema: float = 0.0
    """Decay of the per-prompt success EMA; 0 keeps the last observed success (prime-rl's rule)."""

    def __post_init__(self) -> None:
        for name in ("easy_threshold", "hard_threshold", "easy_fraction", "hard_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not self.hard_threshold < self.easy_threshold:
            raise ValueError(
                f"hard_threshold must be below easy_threshold, got {self.hard_threshold}, {self.easy_threshold}"
            )
        if self.easy_fraction + self.hard_fraction > 1.0:
            raise ValueError(
                f"easy_fraction + hard_fraction must be at most 1, got {self.easy_fraction} + {self.hard_fraction}"
            )
        if not 0.0 <= self.ema < 1.0:
            raise ValueError(f"ema must be in [0, 1), got {self.ema}")


DIFFICULTY_POOLS = (
    DifficultyPoolsConfig()
)  # prime-rl's difficulty pools, retiring all-correct / all-wrong groups


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def pool_labels(success: np.ndarray, easy_threshold: float, hard_threshold: float) -> np.ndarray:
    """Pool index (``POOLS``) of each prompt from its success, NaN (never observed) meaning normal.  # (N,)"""
    success = np.asarray(success, dtype=np.float64)
    return np.select([success > easy_threshold, success < hard_threshold], [EASY, HARD], default=NORMAL)


def pool_counts(batch_size: int, config: DifficultyPoolsConfig, sizes: Sequence[int]) -> tuple[int, int, int]:
    """(easy, normal, hard) prompts of a batch: prime-rl's split, retired shortfalls moved to normal.

    ``sizes`` are the current (easy, normal, hard) pool sizes; normal's count may exceed its size (the
    sampler fills the rest, see the module docstring).
    """
    n_easy = min(int(batch_size * config.easy_fraction), int(sizes[EASY]))
    n_hard = min(int(batch_size * config.hard_fraction), int(sizes[HARD]))
    return n_easy, batch_size - n_easy - n_hard, n_hard


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class DifficultyPoolsSampler(Sampler):
    """prime-rl's difficulty pools: mostly normal prompts, a fixed share brought back from easy and hard."""

    config: DifficultyPoolsConfig = DIFFICULTY_POOLS
    """The pools' hyperparameters."""
    name: str = field(default="difficulty_pools", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.success = np.full(len(self.pool), np.nan)  # (N,) NaN until first observed

    def pools(self) -> np.ndarray:
        """Each pool prompt's pool index now.  # (N,)"""
        return pool_labels(self.success, self.config.easy_threshold, self.config.hard_threshold)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        labels = self.pools()  # (N,)
        members = [np.flatnonzero(labels == p) for p in range(len(POOLS))]
        counts = pool_counts(batch_size, self.config, [m.size for m in members])
        drawn = [
            rng.choice(m, size=min(c, m.size), replace=False) for m, c in zip(members, counts, strict=True)
        ]
        shortfall = batch_size - sum(d.size for d in drawn)
        if shortfall:  # normal cannot fill its share: the rest of the pool, then repeats
            rest = np.setdiff1d(np.arange(len(self.pool)), np.concatenate(drawn))
            fill = draw_without_replacement(rest if rest.size else np.arange(len(self.pool)), shortfall, rng)
            drawn.insert(NORMAL + 1, fill)
        return np.concatenate(drawn)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        batch = super().next_batch(step, batch_size)
        labels = self.pools()
        return Batch(batch.tasks, batch.indices, tuple(POOLS[labels[i]] for i in batch.indices))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        """Each observed prompt's success (its group's share of correct samples) updates its pool."""
        rates = grades.correct.mean(axis=1, dtype=np.float64)  # (P,)
        for index, rate in zip(batch.indices, rates, strict=True):  # duplicates update in batch order
            if index >= 0:
                self.success[index] = prompt_ema_update(self.success[index], rate, self.config.ema)

    def stats(self) -> dict:
        """Pool sizes: ``easy``, ``normal``, ``hard`` (never-observed prompts count as normal)."""
        sizes = np.bincount(self.pools(), minlength=len(POOLS))
        return {name: int(n) for name, n in zip(POOLS, sizes, strict=True)}

    def state_dict(self) -> dict:
        """The observed prompts' success; the pools follow from it (``pool_labels``)."""
        observed = np.flatnonzero(~np.isnan(self.success))
        return {"indices": observed.tolist(), "success": self.success[observed].tolist()}

    def load_state_dict(self, state: dict) -> None:
        self.success = np.full(len(self.pool), np.nan)
        indices = np.asarray(state["indices"], dtype=np.int64)
        self.success[indices] = np.asarray(state["success"], dtype=np.float64)
