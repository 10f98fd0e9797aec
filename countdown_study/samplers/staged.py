"""The staged easy -> medium -> hard baseline report 001 proposes (Sections 4 and 6, not run there).

Report 001: "a fixed staged curriculum: train on easy problems for the first third, medium problems
for the second third, and hard problems for the final third", to test whether the sliding-window
controller adds anything beyond ordering the data. The levels are the controller's
(``sliding_window.level_pools``: report 001's by default, ``levels="solver"`` for ours).

Our choices: stage ``k`` of ``n`` covers the steps with ``n * step // total_steps == k`` (integer
division), so 128 steps split 43 easy / 43 medium / 42 hard, and steps past ``total_steps`` stay on the
last stage. Within a stage, tasks are drawn uniformly with replacement from ``derive_rng(seed, step, SamplerStream.STEP)``;
an empty level falls back to the whole pool, as in report 001. Stateless: the stage follows from the
step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from countdown_study.countdown.difficulty import LEVELS
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.samplers.sliding_window import LEVEL_RULES, level_pools
from countdown_study.seeding import SamplerStream, derive_rng


@dataclass(frozen=True)
class StagedConfig:
    """The staged schedule: equal shares of the run per level, in order."""

    total_steps: int | None = None
    """Training steps of the run; required (the loop passes it as the option ``total_steps``)."""
    stages: tuple[str, ...] = LEVELS
    """Levels in training order, each for an equal share of ``total_steps``."""
    levels: str = "report"
    """Level rule (``sliding_window.LEVEL_RULES``): report 001's (3 numbers / 4 numbers / all) or ours."""

    def __post_init__(self) -> None:
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {self.total_steps}")
        if not self.stages or set(self.stages) - set(LEVELS):
            raise ValueError(f"stages must be levels among {LEVELS}, got {self.stages}")
        if self.levels not in LEVEL_RULES:
            raise ValueError(f"levels must be one of {LEVEL_RULES}, got {self.levels!r}")


STAGED_THIRDS = StagedConfig()  # report 001, Sections 4 and 6, the proposed "staged curriculum baseline"


def stage_index(step: int, total_steps: int, num_stages: int) -> int:
    """The stage of ``step``: ``num_stages * step // total_steps``, clamped to the last stage."""
    return min(num_stages * step // total_steps, num_stages - 1)


@dataclass
class StagedSampler(Sampler):
    """Easy for the first third of the run, then medium, then hard (report 001's proposed baseline)."""

    config: StagedConfig = STAGED_THIRDS
    """The schedule; ``total_steps`` must be set."""
    name: str = field(default="staged", init=False)
    spans_run: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.total_steps is None:
            raise ValueError("the staged sampler needs the option total_steps (the run's training steps)")
        self.pools = level_pools(self.pool, self.config.levels)  # level -> (N_l,) pool indices

    def level(self, step: int) -> str:
        """The level trained on at ``step``."""
        return self.config.stages[stage_index(step, self.config.total_steps, len(self.config.stages))]

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        return derive_rng(self.seed, step, SamplerStream.STEP).choice(
            self.pools[self.level(step)], size=batch_size
        )

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with its stage's level."""
        batch = super().next_batch(step, batch_size)
        return Batch(batch.tasks, batch.indices, (self.level(step),) * len(batch.tasks))
