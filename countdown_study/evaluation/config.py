"""The config core every run shares: where its data comes from, how it is evaluated, its seed, threads and
device, declared once here and composed by every run config.

``RunConfig`` holds the shared fields: ``data`` (``DataSpec``: policy, tokenizer, template, training
pool, held-out evaluation source and size), ``eval`` (``EvalSpec``: samples per task, sampling,
checkpoint evaluations), ``seed``, ``threads`` and ``device``. Each kind of run is a subclass that adds
its own fields: ``EvalRunConfig`` (the evaluation-only run, nothing added), ``training.ipo.IPOConfig``
and ``training.rloo_config.TrainConfig`` (RLOO). So the paper road (``policy`` + ``tokenizer`` +
``template``) passes through every kind of run the same way, and a run's id covers all of it.

The core sits in ``evaluation``, the lowest layer that runs a policy on tasks, so that the
evaluation-only run (``evaluation.run``) and every training stage above it compose the same fields.
A run's canonical JSON has sorted keys (``runs.files.canonical_json``): where a field is declared does not
change a run id, only its name and value do; ``device`` at ``cpu`` is left out of it (``OMIT_AT_DEFAULT``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from countdown_study.evaluation.defaults import EVAL_BATCH_SIZE, EVAL_N, EVAL_SAMPLING
from countdown_study.rollout.sampling import SamplingConfig
from countdown_study.runs.device import DEFAULT_DEVICE, check_device
from countdown_study.runs.files import OMIT_AT_DEFAULT

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


# ---------------------------------------------------------------------------------------------------
# Data and evaluation specs
# ---------------------------------------------------------------------------------------------------


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

    n: int = EVAL_N
    """Samples per evaluation task."""
    sampling: SamplingConfig = field(default_factory=lambda: EVAL_SAMPLING)
    """Evaluation sampling (the reports': temperature 0.6, top-p 0.95, top-k 20, whole rollouts)."""
    batch_size: int = EVAL_BATCH_SIZE
    """Tasks per sampling batch, batch b seeded with ``derive_seed(seed, b)`` (so it decides the draws)."""
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
    for training; ``training.specs.split_validation``). Without snapshots the whole pool trains."""

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


# ---------------------------------------------------------------------------------------------------
# The fields every run config shares
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """The fields every run config shares (module docstring). A subclass adds its stage's fields after
    ``data`` and ``eval``; ``seed``, ``threads`` and ``device`` are keyword-only, so they come last when
    it is built."""

    data: DataSpec = field(default_factory=DataSpec)
    """Starting policy (the frozen reference of a training stage, the evaluated policy of an
    evaluation-only run), training pool (evaluation keys removed) and held-out evaluation tasks."""
    eval: EvalSpec = field(default_factory=EvalSpec)
    """Samples per evaluation task and evaluation sampling (and a training run's checkpoint evaluations)."""
    seed: int = field(default=0, kw_only=True)
    """Run seed: every draw of the run (rollouts, sampler, pairs, evaluation) derives from it."""
    threads: int = field(default=2, kw_only=True)
    """torch threads (results are reproducible for a fixed seed and thread count)."""
    device: str = field(default=DEFAULT_DEVICE, kw_only=True, metadata=OMIT_AT_DEFAULT)
    """Where the policy, a reference, rollouts and updates run: ``cpu``, ``cuda`` or ``auto`` (``cuda`` when
    torch sees one, else ``cpu``; resolved at run start and recorded in ``provenance.json``). ``cuda`` on a
    machine without one is refused before a run folder is made (``runs.device``)."""

    def __post_init__(self) -> None:
        check_seed(self.seed)
        if self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        check_device(self.device)


@dataclass(frozen=True)
class EvalRunConfig(RunConfig):
    """Evaluate ``data.policy`` on the held-out tasks, stored like a training run (the study's SFT row):
    the shared fields and nothing else (the training pool is unused; the split is the training runs')."""
