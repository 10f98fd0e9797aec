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

Configuration: a sampler's hyperparameters are one frozen dataclass in its ``config`` field, whose
registered presets are module constants (``FIXED_V1``); ``Sampler.from_options(pool, seed, config,
**options)`` builds any sampler from a preset and a run's JSON-able options (an option naming a config
field changes it, any other is a constructor argument), and ``Sampler.run_options`` names what the sampler
takes from the run it trains in (``total_steps`` where it ``spans_run``). Samplers are registered by name in
``samplers.registry.SAMPLERS``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

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

    def take(self, rows: Sequence[int]) -> Batch:
        """Some of the batch's tasks (``rows``: positions in the batch, in the order wanted)."""
        return Batch(
            tuple(self.tasks[i] for i in rows),
            tuple(self.indices[i] for i in rows),
            tuple(self.arms[i] for i in rows) if self.arms else (),
        )

    @staticmethod
    def concat(parts: Sequence[Batch]) -> Batch:
        """Several batches as one, task after task (arm labels kept only when every part has them)."""
        arms = all(b.arms for b in parts)
        return Batch(
            tuple(t for b in parts for t in b.tasks),
            tuple(i for b in parts for i in b.indices),
            tuple(a for b in parts for a in b.arms) if arms else (),
        )


@dataclass
class Sampler:
    """Base class: holds the pool, seed and config; subclasses implement ``choose``."""

    pool: Sequence[Task]
    """Training tasks the sampler draws from."""
    seed: int = 0
    """Run seed; every draw derives from (seed, step)."""
    config: Any = None
    """The sampler's hyperparameters, a frozen dataclass (subclasses declare its type and default preset);
    None for a sampler without any (the uniform baselines)."""
    name: str = field(default="base", init=False)
    """The sampler's name in logs (one class may serve several registered names)."""
    spans_run: ClassVar[bool] = False
    """Whether its schedule is laid over the whole run: its config then has a ``total_steps`` field, which
    ``run_options`` fills with the run's training steps."""

    def __post_init__(self) -> None:
        if len(self.pool) == 0:
            raise ValueError("the sampler's task pool is empty")

    @classmethod
    def from_options(cls, pool: Sequence[Task], seed: int = 0, config: Any = None, **options: Any) -> Sampler:
        """The sampler over ``pool`` from ``config`` (the class's default preset when None) and a run's
        options: an option naming a field of the config changes that field (``dataclasses.replace``), any
        other goes to ``build_arguments`` (constructor arguments such as a precomputed feature table)."""
        config = cls.__dataclass_fields__["config"].default if config is None else config
        names = {f.name for f in fields(config)} if config is not None else set()
        if config is not None:
            config = replace(config, **{k: v for k, v in options.items() if k in names})
        arguments = cls.build_arguments(pool, config, **{k: v for k, v in options.items() if k not in names})
        return cls(pool=pool, seed=seed, config=config, **arguments)

    @classmethod
    def build_arguments(cls, pool: Sequence[Task], config: Any, **options: Any) -> dict[str, Any]:
        """Constructor arguments from the options that are no config field: by default the class's own
        fields, given as they are; an option that is neither fails naming both lists."""
        own = sorted(f.name for f in fields(cls) if f.init and f.name not in ("pool", "seed", "config"))
        unknown = sorted(set(options) - set(own))
        if unknown:
            known = sorted(f.name for f in fields(config)) if config is not None else []
            raise ValueError(
                f"{cls.__name__} takes no option {', '.join(unknown)}; its options: config fields {known}, "
                f"arguments {own}"
            )
        return options

    @classmethod
    def run_options(cls, options: Mapping[str, Any], steps: int, prompts_per_step: int) -> dict[str, Any]:
        """Options this sampler takes from the run it trains in (its ``steps``, its ``prompts_per_step``),
        which a study sets where the row's ``options`` leave them (``study.method_config``): the run's
        ``total_steps`` for a sampler that ``spans_run``, else none."""
        return {"total_steps": steps} if cls.spans_run else {}

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        """Pool indices for this step, shape ``(batch_size,)``."""
        raise NotImplementedError

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch from ``choose``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        idx = [int(i) for i in self.choose(step, batch_size)]
        return Batch(tuple(self.pool[i] for i in idx), tuple(idx))

    def refill_batch(self, step: int, draw: int, batch_size: int) -> Batch:
        """Another batch for the same step: ``draw`` = 1, 2, ... are a group filter's extra rounds
        (``training.group_filters``). Samplers whose draws assume one batch per step refuse (the
        ``samplers.REFILLABLE`` ones implement ``choose_refill``)."""
        if draw < 1:
            raise ValueError(f"a refill draw is numbered from 1, got {draw}")
        idx = [int(i) for i in self.choose_refill(step, draw, batch_size)]
        return Batch(tuple(self.pool[i] for i in idx), tuple(idx))

    def choose_refill(self, step: int, draw: int, batch_size: int) -> np.ndarray:
        """Pool indices of the step's extra draw ``draw``, shape ``(batch_size,)``."""
        raise NotImplementedError(f"sampler {self.name!r} draws one batch per step; it cannot refill one")

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

    Epoch e's order is a permutation drawn from ``derive_rng(seed, e, SamplerStream.EPOCH)``; a batch that
    crosses an epoch boundary takes the rest of one epoch and the start of the next. Step s starts at
    position ``s * batch_size + refilled`` of that stream (the batch size must stay fixed within a run):
    ``refilled`` counts the positions a group filter's extra draws took (``refill_batch`` walks on
    through the stream, as a data loader does), 0 without a filter.
    """

    name: str = field(default="uniform", init=False)
    refilled: int = field(default=0, init=False)
    """Stream positions taken by refill draws so far (resume state)."""

    def _epoch_order(self, epoch: int) -> np.ndarray:
        return derive_rng(self.seed, epoch, SamplerStream.EPOCH).permutation(len(self.pool))

    def _walk(self, start: int, batch_size: int) -> np.ndarray:
        positions = np.arange(start, start + batch_size)  # (B,) global positions in the stream
        epochs, offsets = np.divmod(positions, len(self.pool))
        orders = {int(e): self._epoch_order(int(e)) for e in np.unique(epochs)}
        return np.array([orders[int(e)][int(o)] for e, o in zip(epochs, offsets, strict=True)])

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        return self._walk(step * batch_size + self.refilled, batch_size)

    def choose_refill(self, step: int, draw: int, batch_size: int) -> np.ndarray:
        start = (step + 1) * batch_size + self.refilled  # right after the step's batch and its refills
        self.refilled += batch_size
        return self._walk(start, batch_size)

    def state_dict(self) -> dict:
        return {"refilled": self.refilled}

    def load_state_dict(self, state: dict) -> None:
        self.refilled = int(state.get("refilled", 0))  # checkpoints written before refills: 0


@dataclass
class UniformWithReplacement(Sampler):
    """Report 002's control: every batch drawn uniformly with replacement from the pool (a refill draw
    from its own stream, ``derive_rng(seed, step, SamplerStream.REPLACEMENT, draw)``)."""

    name: str = field(default="uniform_replacement", init=False)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        return self.choose_refill(step, 0, batch_size)

    def choose_refill(self, step: int, draw: int, batch_size: int) -> np.ndarray:
        rng = derive_rng(self.seed, step, SamplerStream.REPLACEMENT, draw)  # draw 0: the step's own batch
        return rng.integers(0, len(self.pool), size=batch_size)
