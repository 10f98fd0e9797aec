"""Report 003's solution-count curriculum: prompts ranked by how many derivations reach the target.

Report 003 ranks prompts by the solver's solution count (capped at 128): many solutions make a prompt
easy. Its staged curriculum trains the first 30% of updates on the easiest 30% of prompts, the next 40%
on the easiest 70%, and the last 30% on all of them.

Our choices where the report is silent: ties in the count are ranked by pool order (the pool is already a
seeded draw, so this adds no bias of its own); stage k covers the steps with
``cum_k <= step / total_steps < cum_{k+1}`` over the cumulative step fractions, and steps past
``total_steps`` stay on the last stage; within a stage, tasks are drawn uniformly with replacement from
``derive_rng(seed, step, SamplerStream.STEP)``. Stateless: the stage follows from the step. The report's
"adaptive" and "hybrid" variants are named there but not defined, and are not built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.task import Task
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng


@dataclass(frozen=True)
class SolutionCountStagedConfig:
    """The staged schedule over the solution-count ranking (report 003's values by default)."""

    total_steps: int | None = None
    """Training steps of the run; required (the study passes it as the option ``total_steps``)."""
    step_fractions: tuple[float, ...] = (0.3, 0.4, 0.3)
    """Share of the run each stage lasts, in order (sums to 1)."""
    pool_fractions: tuple[float, ...] = (0.3, 0.7, 1.0)
    """Share of the ranked pool (easiest first) each stage draws from, non-decreasing, ending at 1."""
    cap: int = 128
    """Solution counts are capped here (report 003)."""

    def __post_init__(self) -> None:
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {self.total_steps}")
        if len(self.step_fractions) != len(self.pool_fractions) or not self.step_fractions:
            raise ValueError("step_fractions and pool_fractions need one entry per stage")
        if any(f <= 0 for f in self.step_fractions) or abs(sum(self.step_fractions) - 1) > 1e-9:
            raise ValueError(f"step_fractions must be positive and sum to 1, got {self.step_fractions}")
        pools = self.pool_fractions
        if any(not 0 < f <= 1 for f in pools) or list(pools) != sorted(pools) or pools[-1] != 1:
            raise ValueError(f"pool_fractions must rise within (0, 1] and end at 1, got {pools}")
        if self.cap < 1:
            raise ValueError(f"cap must be at least 1, got {self.cap}")


SOLUTION_COUNT_STAGED = SolutionCountStagedConfig()  # report 003's staged curriculum


def easiest_first(counts: np.ndarray) -> np.ndarray:
    """Pool indices from the most solutions to the fewest, ties in pool order.  # (N,) -> (N,)"""
    return np.argsort(-np.asarray(counts), kind="stable")


def stage_of(step: int, total_steps: int, step_fractions: Sequence[float]) -> int:
    """The stage whose share of the run holds ``step`` (the last one past ``total_steps``)."""
    ends = np.cumsum(step_fractions) * total_steps  # (K,)
    return min(int(np.searchsorted(ends, step, side="right")), len(step_fractions) - 1)


@dataclass
class SolutionCountStagedSampler(Sampler):
    """Easiest 30% of prompts for the first 30% of updates, the easiest 70% next, then all (report 003)."""

    config: SolutionCountStagedConfig = SOLUTION_COUNT_STAGED
    """The schedule; ``total_steps`` must be set."""
    name: str = field(default="solution_count_staged", init=False)

    @classmethod
    def from_options(
        cls,
        pool: Sequence[Task],
        seed: int = 0,
        config: SolutionCountStagedConfig = SOLUTION_COUNT_STAGED,
        **overrides,
    ) -> SolutionCountStagedSampler:
        """The sampler with ``config``'s fields overridden by ``overrides`` (e.g. ``total_steps=60``)."""
        return cls(pool=pool, seed=seed, config=replace(config, **overrides))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.total_steps is None:
            raise ValueError(
                "the solution-count sampler needs the option total_steps (the run's training steps)"
            )
        self.ranking = easiest_first(solution_counts(self.pool, cap=self.config.cap))  # (N,)

    def stage(self, step: int) -> int:
        """The stage trained on at ``step``."""
        return stage_of(step, self.config.total_steps, self.config.step_fractions)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        share = self.config.pool_fractions[self.stage(step)]
        allowed = self.ranking[: max(1, round(share * len(self.pool)))]  # the easiest ``share`` of the pool
        return derive_rng(self.seed, step, SamplerStream.STEP).choice(allowed, size=batch_size)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with its stage's pool share (``easiest 30%``)."""
        batch = super().next_batch(step, batch_size)
        label = f"easiest {round(100 * self.config.pool_fractions[self.stage(step)])}%"
        return Batch(batch.tasks, batch.indices, (label,) * len(batch.tasks))
