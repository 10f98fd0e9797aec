"""Batch samplers: which tasks each RLOO step trains on (the interface, and the uniform baselines).

The interface every method of the study plugs into (the training loop never changes for a new one):

1. ``sampler.next_batch(step, batch_size) -> Batch``: the tasks of this step. A batch names pool
   indices (``Batch.indices``), or carries tasks the sampler made itself (index ``-1``, report 004's
   synthetic arms), and a label per task (``Batch.arms``: bucket, tier or arm, for logs).
2. ``sampler.probe_requests(step) -> list[int]``: pool indices the sampler wants extra rollouts on
   before the update (report 002's probes); the loop samples G rollouts each, grades them, and hands
   them back through ``observe_probe``. Probes never enter the gradient.
3. ``sampler.observe(step, batch, grades, advantages)``: after every step, the groups' ``Grades``
   (``countdown.grading``: rewards, correctness, reasons, ``(P, G)`` each) and RLOO advantages ``(P, G)`` (reports 000, 001, 002, 004 adapt from them).
4. ``sampler.stats() -> dict``: numbers for the step log (occupancy, current level, ...).
5. ``sampler.state_dict()`` / ``load_state_dict(state)``: everything needed to resume, JSON-able.
6. ``sampler.records() -> {name: rows}``: logs the sampler keeps for analysis (report 002's observation
   log, report 004's synthetic-task log), JSON-able rows kept in its state; the training loop writes
   each as ``tables/sampler_<name>.parquet`` in the run store.

Randomness: a sampler keeps no RNG object; each call draws from
``seeding.derive_rng(seed, step, SamplerStream.*)``, so a
resumed run makes the same draws as an uninterrupted one.

Samplers are registered by name in ``countdown_study.samplers.SAMPLERS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.countdown.task import Task
from countdown_study.seeding import SamplerStream, derive_rng


@dataclass(frozen=True)
class Batch:
    """The tasks of one step."""

    tasks: tuple[Task, ...]
    """The P tasks, in prompt order."""
    indices: tuple[int, ...]
    """Pool index of each task, or -1 for a task the sampler made."""
    arms: tuple[str, ...] = ()
    """Optional label per task (bucket, level, tier, arm) for logs and diagnostics."""

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.tasks):
            raise ValueError(f"batch has {len(self.tasks)} tasks but {len(self.indices)} indices")
        if self.arms and len(self.arms) != len(self.tasks):
            raise ValueError(f"batch has {len(self.tasks)} tasks but {len(self.arms)} arm labels")


@dataclass
class Sampler:
    """Base class: holds the pool and seed; subclasses implement ``choose``."""

    pool: Sequence[Task]
    """Training tasks the sampler draws from."""
    seed: int = 0
    """Run seed; every draw derives from (seed, step)."""
    name: str = field(default="base", init=False)
    """Registry name."""

    def __post_init__(self) -> None:
        if len(self.pool) == 0:
            raise ValueError("the sampler's task pool is empty")

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        """Pool indices for this step, shape ``(batch_size,)``."""
        raise NotImplementedError

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch from ``choose``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        idx = [int(i) for i in self.choose(step, batch_size)]
        return Batch(tuple(self.pool[i] for i in idx), tuple(idx))

    def probe_requests(self, step: int) -> list[int]:
        """Pool indices to probe before this step's update (none by default)."""
        return []

    def observe_probe(self, step: int, indices: Sequence[int], grades: Grades) -> None:
        """Grades ``(len(indices), G)`` of the probes asked for at ``step``."""

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        """Grades and advantages ``(P, G)`` of the step's groups."""

    def stats(self) -> dict:
        """Numbers for the step log."""
        return {}

    def state_dict(self) -> dict:
        """JSON-able resume state."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict``."""

    def records(self) -> dict[str, list[dict]]:
        """The sampler's logs by name, one dict per row (none by default)."""
        return {}


@dataclass
class UniformWithoutReplacement(Sampler):
    """The reports' RLOO baseline: shuffle the pool each epoch and walk through it.

    Epoch e's order is a permutation drawn from ``derive_rng(seed, e, SamplerStream.EPOCH)``; a batch that crosses an
    epoch boundary takes the rest of one epoch and the start of the next. Stateless: the position
    follows from ``step * batch_size`` (the batch size must stay fixed within a run).
    """

    name: str = field(default="uniform", init=False)

    def _epoch_order(self, epoch: int) -> np.ndarray:
        return derive_rng(self.seed, epoch, SamplerStream.EPOCH).permutation(len(self.pool))

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        n = len(self.pool)
        start = step * batch_size
        positions = np.arange(start, start + batch_size)  # (B,) global positions in the stream
        epochs, offsets = np.divmod(positions, n)
        orders = {int(e): self._epoch_order(int(e)) for e in np.unique(epochs)}
        return np.array([orders[int(e)][int(o)] for e, o in zip(epochs, offsets, strict=True)])


@dataclass
class UniformWithReplacement(Sampler):
    """Report 002's control: every batch drawn uniformly with replacement from the pool."""

    name: str = field(default="uniform_replacement", init=False)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        return derive_rng(self.seed, step, SamplerStream.REPLACEMENT).integers(
            0, len(self.pool), size=batch_size
        )
