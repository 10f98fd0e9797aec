"""Report 000's fixed-difficulty curriculum: a 3-number (easy) and a 4-number (hard) bucket.

Report 000 ("Curriculum Sampling for RLOO", Section 3.3), per bucket b:

- success EMA ``s_b <- a s_b + (1 - a) s_hat_b`` with a = 0.95 (Section 4.3), where ``s_hat_b`` is
  the share of the bucket's prompts in the step's batch counted solved;
- v1 counts a prompt solved when ``max_k r_ik = 1`` (one correct sample of G), v2 when
  ``sum_k 1[r_ik = 1] >= 2`` (two correct samples);
- the hard bucket becomes available once ``s_easy >= tau_unlock`` with tau_unlock = 0.25; after that,
  "buckets that appear less mastered receive higher sampling weight".

Where the report is silent, our choices (each a field of ``FixedBucketConfig``):

- Both EMAs start at 0.0 (``initial_ema``): the easy bucket has to earn the unlock from observed
  successes. A bucket absent from a batch keeps its EMA (no decay towards zero).
- The unlock is latched: once ``s_easy`` reaches the threshold the hard bucket stays available, even if
  ``s_easy`` later drops ("becomes fully available once" the threshold is reached).
- Weighting after the unlock: ``p_b ~ (1 - s_b) + floor`` with floor 0.1 (``weight_floor``), so a
  mastered bucket keeps some weight and a bucket at s = 0 gets at most 1.1 / 0.1 = 11 times the weight
  of a mastered one. Before the unlock the easy bucket has probability 1.
- A sample is correct when the verifier accepts its final answer (``Grades.correct``): the format
  score never counts as a success.
- Drawing: each batch slot draws its bucket from ``p_b``, then a task uniformly (with replacement) from
  the bucket, both from ``derive_rng(seed, step, SamplerStream.STEP)``. An empty bucket has weight 0; a pool with only
  4-number tasks trains on them from the start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.difficulty import num_count_labels
from countdown_study.countdown.grading import Grades
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng

EASY, HARD = "3", "4"
"""Bucket labels (``tasks.num_count_labels``): 3-number tasks are easy, 4-number tasks hard."""
BUCKETS = (EASY, HARD)


@dataclass(frozen=True)
class FixedBucketConfig:
    """Hyperparameters of the fixed-difficulty curriculum (report 000, Sections 3.3 and 4.3)."""

    alpha: float = 0.95
    """EMA decay a in ``s_b <- a s_b + (1 - a) s_hat_b`` (report 000, Section 4.3)."""
    unlock_threshold: float = 0.25
    """tau_unlock: the hard bucket unlocks once ``s_easy >= tau_unlock`` (report 000, Section 4.3)."""
    min_correct: int = 1
    """Correct samples (of G) a prompt needs to count as solved: 1 in v1, 2 in v2."""
    initial_ema: float = 0.0
    """Starting value of both bucket EMAs (ours: the report does not give one)."""
    weight_floor: float = 0.1
    """After the unlock ``p_b ~ (1 - s_b) + weight_floor`` (ours: the report gives no formula)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {self.alpha}")
        if self.min_correct < 1:
            raise ValueError(f"min_correct must be at least 1, got {self.min_correct}")
        if self.weight_floor <= 0.0:
            raise ValueError(f"weight_floor must be positive, got {self.weight_floor}")


FIXED_V1 = FixedBucketConfig(min_correct=1)  # report 000, Table 1, "Fixed Curriculum v1"
FIXED_V2 = FixedBucketConfig(min_correct=2)  # report 000, Table 1, "Fixed Curriculum v2"


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def ema_update(s: float | np.ndarray, s_hat: float | np.ndarray, alpha: float) -> float | np.ndarray:
    """Report 000's EMA, ``s <- alpha s + (1 - alpha) s_hat`` (Section 3.3)."""
    return alpha * s + (1.0 - alpha) * s_hat


def prompts_solved(correct: np.ndarray, min_correct: int) -> np.ndarray:
    """Whether each prompt has at least ``min_correct`` correct samples.  # (P, G) -> (P,) bool

    v1 (``min_correct=1``): ``max_k r_ik = 1``; v2 (``min_correct=2``): ``sum_k 1[r_ik = 1] >= 2``.
    """
    return np.asarray(correct, dtype=bool).sum(axis=1) >= min_correct


def bucket_success(solved: np.ndarray, labels: np.ndarray, bucket: str) -> float | None:
    """``s_hat_b``: the share of the batch's prompts of ``bucket`` solved, None when it has none."""
    in_bucket = np.asarray(labels) == bucket  # (P,)
    return float(np.asarray(solved)[in_bucket].mean()) if in_bucket.any() else None


def bucket_weights(ema: dict[str, float], unlocked: bool, floor: float) -> dict[str, float]:
    """Sampling probability per bucket: easy only while locked, else ``~ (1 - s_b) + floor``."""
    if not unlocked:
        return {EASY: 1.0, HARD: 0.0}
    raw = {b: (1.0 - ema[b]) + floor for b in BUCKETS}
    total = sum(raw.values())
    return {b: w / total for b, w in raw.items()}


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class FixedBucketSampler(Sampler):
    """Report 000's fixed-difficulty curriculum over the 3-number and 4-number buckets."""

    config: FixedBucketConfig = FIXED_V1
    """The curriculum's hyperparameters (a preset: ``FIXED_V1`` or ``FIXED_V2``)."""
    name: str = field(default="fixed_buckets", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.labels = num_count_labels(self.pool)  # (N,) "3" or "4"
        unknown = sorted(set(self.labels.tolist()) - set(BUCKETS))
        if unknown:
            raise ValueError(f"fixed buckets take 3- and 4-number tasks; the pool has counts {unknown}")
        self.members = {b: np.flatnonzero(self.labels == b) for b in BUCKETS}
        self.ema = {b: float(self.config.initial_ema) for b in BUCKETS}
        self.unlocked = False

    def probabilities(self) -> dict[str, float]:
        """The next batch's bucket probabilities (empty buckets get 0)."""
        p = bucket_weights(self.ema, self.unlocked, self.config.weight_floor)
        if self.members[EASY].size == 0:  # nothing to master first: train on the hard bucket
            p = {EASY: 0.0, HARD: 1.0}
        if self.members[HARD].size == 0:
            p = {EASY: 1.0, HARD: 0.0}
        return p

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        p = self.probabilities()
        buckets = rng.choice(len(BUCKETS), size=batch_size, p=[p[b] for b in BUCKETS])  # (B,)
        sizes = np.array([self.members[b].size for b in BUCKETS])  # (2,)
        within = (rng.random(batch_size) * sizes[buckets]).astype(np.int64)  # (B,) position in the bucket
        return np.array([self.members[BUCKETS[b]][w] for b, w in zip(buckets, within, strict=True)])

    def next_batch(self, step: int, batch_size: int) -> Batch:
        batch = super().next_batch(step, batch_size)
        return Batch(batch.tasks, batch.indices, tuple(str(self.labels[i]) for i in batch.indices))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        solved = prompts_solved(grades.correct, self.config.min_correct)  # (P,)
        labels = np.array([str(t.num_count) for t in batch.tasks])  # (P,)
        for b in BUCKETS:
            s_hat = bucket_success(solved, labels, b)
            if s_hat is not None:  # a bucket absent from the batch keeps its EMA
                self.ema[b] = float(ema_update(self.ema[b], s_hat, self.config.alpha))
        self.unlocked = self.unlocked or self.ema[EASY] >= self.config.unlock_threshold

    def stats(self) -> dict:
        p = self.probabilities()
        return {
            **{f"ema_{b}": self.ema[b] for b in BUCKETS},
            "unlocked": int(self.unlocked),
            **{f"p_{b}": p[b] for b in BUCKETS},
        }

    def state_dict(self) -> dict:
        return {"ema": dict(self.ema), "unlocked": self.unlocked}

    def load_state_dict(self, state: dict) -> None:
        self.ema = {b: float(state["ema"][b]) for b in BUCKETS}
        self.unlocked = bool(state["unlocked"])
