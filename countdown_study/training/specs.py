"""The config core every run shares: where its data comes from, how it is evaluated, what it adds.

``DataSpec`` (policy, tokenizer, template, training pool, held-out evaluation source and size) and
``EvalSpec`` (samples per task, sampling) are nested in every run config (RLOO ``TrainConfig``,
``IPOConfig``, the evaluation-only ``EvalRunConfig``) and in the study presets, so the paper road
(``policy`` + ``tokenizer`` + ``template``) passes through every kind of run the same way, and a run's
id covers all of it. ``AuxLossSpec`` names an auxiliary objective (report 003's VCC) with its
settings: a field of the RLOO config, so two runs with different auxiliary settings never share a
run folder. ``eval_on_engine`` puts a run's evaluation on its training engine; ``split_validation`` takes a
run's validation tasks out of its training pool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from countdown_study.evaluation.evaluate import EVAL_SAMPLING
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.files import OMIT_AT_DEFAULT

T = TypeVar("T")
"""A task of a pool (``split_validation`` keeps the pool's own type)."""
TRAIN_POOL = "generated:20000:1"
"""The study's training pool: 20,000 generated tasks (seed 1); evaluation keys are removed from it."""
HELD_OUT = "generated:1000:0"
"""The held-out evaluation source: 1,000 generated tasks (seed 0), never seen by the embedded SFT stage."""


def check_positive(name: str, value: float, allow_zero: bool = False) -> None:
    """Refuse a setting that is not a finite number above zero (or at least zero), naming it."""
    if not (math.isfinite(value) and (value >= 0 if allow_zero else value > 0)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value}")


def check_seed(seed: int) -> None:
    """Refuse a run seed that is not a non-negative integer (seeds derive streams from it)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


@dataclass(frozen=True)
class DataSpec:
    """Where a run's policy, prompts and tasks come from."""

    policy: str = "embedded"
    """Starting policy (and frozen reference): ``embedded``, a Hugging Face id or a folder."""
    tokenizer: str | None = None
    """Where the tokenizer comes from, if not the policy (the paper road: ``Qwen/Qwen2.5-0.5B``)."""
    template: str | None = None
    """Prompt template; None: the policy's own (``compact`` for the embedded model)."""
    train_tasks: str = TRAIN_POOL
    """Training pool source (``load_tasks``); tasks sharing a key with the evaluation source are removed."""
    eval_tasks: str = HELD_OUT
    """Held-out evaluation source."""
    eval_limit: int = 500
    """How many distinct evaluation tasks to use, from the start of ``eval_tasks``."""

    def __post_init__(self) -> None:
        if self.eval_limit < 1:
            raise ValueError(f"eval_limit must be at least 1, got {self.eval_limit}")


@dataclass(frozen=True)
class EvalSpec:
    """How a run's final policy is evaluated on the held-out tasks."""

    n: int = 16
    """Samples per evaluation task."""
    sampling: SamplingConfig = field(default_factory=lambda: EVAL_SAMPLING)
    """Evaluation sampling (the reports': temperature 0.6, top-p 0.95, top-k 20, whole rollouts)."""
    batch_size: int = 64
    """Tasks per sampling batch, batch b seeded with ``derive_seed(seed, b)`` (so it decides the draws):
    64 tasks x 16 samples sampled 12% faster than 32 on 2 CPU cores, and 128 or 256 no faster."""
    extra_sets: tuple[tuple[str, str], ...] = field(default=(), metadata=OMIT_AT_DEFAULT)
    """``(name, task source)`` pairs evaluated beside the held-out tasks with the same samples and
    sampling, each into ``tables/eval_<name>.parquet`` (report 004's 5-number set:
    ``("ood", "ood:200:0")``)."""
    snapshot_every: int = field(default=0, metadata=OMIT_AT_DEFAULT)
    """Evaluate the policy every this many steps during training (0: never), on the validation tasks
    and the held-out tasks, each into ``tables/snapshot_<set>_<step>.parquet`` (report 003's checkpoint
    selection). The last snapshot is the final step's."""
    snapshot_n: int = field(default=4, metadata=OMIT_AT_DEFAULT)
    """Samples per task at each snapshot (fewer than ``n``: a snapshot is read for its pass@1)."""
    validation_size: int = field(default=200, metadata=OMIT_AT_DEFAULT)
    """Validation tasks of the snapshots: the first this many tasks of the run's training pool, taken out
    of it, so the sampler never draws them (report 003's ``train[:200]`` for validation and ``train[200:]``
    for training; ``split_validation``). Without snapshots the whole pool trains."""

    def __post_init__(self) -> None:
        if self.snapshot_every < 0 or self.snapshot_n < 1 or self.validation_size < 1:
            raise ValueError(
                "snapshot_every must be >= 0 and snapshot_n, validation_size >= 1, got "
                f"{self.snapshot_every}, {self.snapshot_n}, {self.validation_size}"
            )
        if self.n < 1:
            raise ValueError(f"evaluation needs at least 1 sample per task, got n={self.n}")
        if self.batch_size < 1:
            raise ValueError(f"evaluation batch_size must be >= 1, got {self.batch_size}")
        names = [pair[0] for pair in self.extra_sets]
        if any(not (isinstance(n, str) and n.isidentifier()) for n in names) or len(set(names)) != len(names):
            raise ValueError(f"extra_sets names must be distinct identifiers, got {names}")


def eval_on_engine(spec: EvalSpec, training: SamplingConfig) -> EvalSpec:
    """``spec`` sampling on the engine of the ``training`` rollouts, so a run builds one engine for both.

    The evaluation keeps its own temperature, top-p / top-k, budget and stopping. On ``vllm`` it also takes
    the training dtype (one vLLM instance runs one dtype); the in-process engines keep the evaluation's
    own dtype, so a native run's config, and its run id, are unchanged.
    """
    changes = {"engine": training.engine}
    if training.engine == "vllm":
        changes["dtype"] = training.dtype
    return replace(spec, sampling=replace(spec.sampling, **changes))


VALIDATION_SPLIT = "validation tasks held out of the training pool"
"""What a run with snapshots records in its identity (``training.loop.run_identity``): its validation tasks
are out of the pool it trains on. Runs from before the split kept them in the pool and have other ids."""


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
