"""What a training run adds to the config core: its auxiliary objectives and its validation split.

The config core every run shares (``DataSpec``, ``EvalSpec``, ``RunConfig``, the seed and positivity
checks, the study's task sources, ``eval_on_engine``) is ``evaluation.config``, re-exported here under the
names the training stages import. ``AuxLossSpec`` names an auxiliary objective (report 003's VCC) with its
settings: a field of the RLOO config, so two runs with different auxiliary settings never share a run
folder. ``split_validation`` takes a run's validation tasks out of its training pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.task import Task
from countdown_study.evaluation.config import (
    HELD_OUT,
    TRAIN_POOL,
    DataSpec,
    EvalSpec,
    RunConfig,
    check_positive,
    check_seed,
    eval_on_engine,
)

__all__ = [
    "HELD_OUT",
    "TRAIN_POOL",
    "VALIDATION_SPLIT",
    "NEVER_EVALUATED",
    "AuxLossSpec",
    "DataSpec",
    "EvalSpec",
    "RunConfig",
    "check_positive",
    "check_seed",
    "eval_on_engine",
    "split_validation",
]

T = TypeVar("T")
"""A task of a pool (``split_validation`` keeps the pool's own type)."""


VALIDATION_SPLIT = "validation tasks held out of the training pool"
"""What a run with snapshots records in its identity (``training.loop.run_identity``): its validation tasks
are out of the pool it trains on. Runs from before the split kept them in the pool and have other ids."""


NEVER_EVALUATED = "proposes no task the run evaluates"
"""What a run whose sampler makes up tasks (``samplers.proposes_tasks``: report 004's synthetic routers)
records in its identity (``training.loop.run_identity``): the keys of its held-out, validation and extra
evaluation tasks are in its task source's seen set (``evaluated_keys``). Runs from before kept only the pool's
(the rule-based router) or the held-out set's too (the teacher router) and have other ids."""


def evaluated_keys(
    eval_tasks: Sequence[Task], validation: Sequence[Task], extra_sets: Sequence[tuple[str, str]]
) -> list:
    """The keys of every task a run evaluates: its held-out tasks, its validation tasks and each extra
    evaluation set's (``EvalSpec.extra_sets``, loaded from their sources), which a sampler that makes up
    tasks must never propose."""
    extra = [task for _, source in extra_sets for task in load_tasks(source)]
    return [task.key for task in [*eval_tasks, *validation, *extra]]


def split_validation(pool: Sequence[T], spec: EvalSpec) -> tuple[list[T], list[T]]:
    """``(training pool, validation tasks)`` of a run: with snapshots (``spec.snapshot_every``), the first
    ``spec.validation_size`` tasks of ``pool`` validate and the rest train (report 003's ``train[200:]``
    and ``train[:200]``, disjoint); without, the whole pool trains and no task validates."""
    if not spec.snapshot_every:
        return list(pool), []
    if len(pool) <= spec.validation_size:
        raise ValueError(
            f"the training pool has {len(pool)} tasks: none left to train on after the first "
            f"{spec.validation_size} are held out for validation (EvalSpec.validation_size)"
        )
    return list(pool[spec.validation_size :]), list(pool[: spec.validation_size])


@dataclass(frozen=True)
class AuxLossSpec:
    """An auxiliary objective added to the RLOO loss, by registered name (``training.aux.AUX_LOSSES``)."""

    name: str
    """Registered name of the objective."""
    coef: float = 1.0
    """Weight of its loss in the batch loss."""
    options: dict = field(default_factory=dict)
    """Its other settings (keyword arguments of its builder)."""
