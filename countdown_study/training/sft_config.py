"""What decides an SFT run's weights (``SFTConfig``), its JSON views, and where a run keeps its checkpoints.

The run id hashes ``run_config(config)``: the config without ``RUNTIME_FIELDS`` (threads, checkpoint and
log intervals, loader workers), so changing those keeps the run. A run keeps its resumable checkpoint in
``checkpoints/last.pt`` (``checkpoint_path``) and its final weights in ``checkpoints/final/``
(``final_model_dir``). The loop is ``training.sft``, the step data ``training.sft_data``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from countdown_study.policy import TinyModelConfig
from countdown_study.policy.traces import SearchRecipe
from countdown_study.runs.files import OMIT_AT_DEFAULT, plain
from countdown_study.runs.store import RunStore
from countdown_study.training.device import DEFAULT_DEVICE, check_device
from countdown_study.training.specs import check_positive, check_seed

CHECKPOINT = "last.pt"
"""The resumable checkpoint in a run's ``checkpoints/``."""


@dataclass(frozen=True)
class SFTConfig:
    """Everything that decides the SFT weights; the defaults make the shipped ``embedded`` checkpoint."""

    steps: int = 4000
    """Optimizer steps (the run is step-budgeted, never time-budgeted)."""
    batch_size: int = 64
    """Traces per step, each from a fresh task."""
    lr: float = 1.5e-3
    """Peak learning rate of AdamW."""
    warmup_steps: int = 100
    """Linear warm-up from ``lr / warmup_steps`` to ``lr``."""
    decay_fraction: float = 0.25
    """The last fraction of steps decays linearly to zero (field notes: this decay mattered)."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW moment coefficients."""
    grad_clip: float = 1.0
    """Global gradient-norm clip (0: off)."""
    length_buckets: int = 8
    """Each step runs as this many length-sorted micro-batches (same gradient, less padding)."""
    multi_attempt_share: float = 0.1
    """Share of traces with wrong attempts before the correct one (solver traces; unused with ``search``)."""
    max_wrong_attempts: int = 2
    """A multi-attempt trace has 1 to this many wrong attempts (uniform; unused with ``search``)."""
    prefer_clean: bool = True
    """Draw the solution among those whose intermediate values are non-negative integers, when any."""
    num_counts: tuple[int, ...] = (3, 4)
    """How many numbers a training task has (``generate_tasks``: half 3, half 4)."""
    heldout_count: int = 1000
    """Size of the held-out evaluation set never trained on: ``generate_tasks(heldout_count, heldout_seed)``."""
    heldout_seed: int = 0
    """Seed of the held-out evaluation set (``countdown-study eval --tasks generated:1000:0``)."""
    model: TinyModelConfig = TinyModelConfig()
    """Shape of the policy."""
    seed: int = 0
    """Run seed: model initialisation, tasks and traces of every step derive from it."""
    threads: int = 2
    """torch intra-op threads (the same seed and thread count give identical weights)."""
    checkpoint_every: int = 250
    """Write a resumable checkpoint every this many steps (and at the end)."""
    log_every: int = 25
    """Append a line to the step log every this many steps (and at the end)."""
    data_workers: int = 1
    """Processes preparing the next steps' traces while the current one trains (0: in the loop)."""
    init_from: str | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Starting weights: a shipped policy name (``embedded``) or a ``save_pretrained`` folder of this
    ``model`` shape; None: a fresh model seeded by ``seed``. Their fingerprint is part of the run id.
    (Added after the ``embedded`` run, left out of a config's JSON while None, so that run keeps its id.)"""
    search: SearchRecipe | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Train on search traces with these proportions (``policy.traces.make_search_trace``); None: solver
    traces (``make_trace``, with ``multi_attempt_share``). (Left out of the JSON while None, too.)"""
    device: str = field(default=DEFAULT_DEVICE, metadata=OMIT_AT_DEFAULT)
    """Where the model trains: ``cpu``, ``cuda`` or ``auto`` (``training.device``; resolved at run start
    and recorded in the run's provenance; left out of the JSON while ``cpu``)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.multi_attempt_share <= 1.0:
            raise ValueError(f"multi_attempt_share must be in [0, 1], got {self.multi_attempt_share}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be positive")
        if not 0.0 <= self.decay_fraction <= 1.0:
            raise ValueError(f"decay_fraction must be in [0, 1], got {self.decay_fraction}")
        check_positive("lr", self.lr)
        check_seed(self.seed)
        for name in ("threads", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        check_device(self.device)

    @property
    def decay_start(self) -> int:
        """First step of the final linear decay."""
        return int(round(self.steps * (1.0 - self.decay_fraction)))


RUNTIME_FIELDS = ("threads", "checkpoint_every", "log_every", "data_workers")
"""Config fields a resumed run may change and the run id leaves out: they do not change what is computed
(``threads`` does change the floating-point sums; the run's provenance records the count it ran with)."""


def config_to_dict(config: SFTConfig) -> dict:
    """A JSON-able view of a config (``runs.files.plain``: fields added later left out at their default)."""
    return plain(config)


def config_from_dict(data: dict) -> SFTConfig:
    """Inverse of ``config_to_dict`` (unknown keys are an error)."""
    unknown = set(data) - {f.name for f in fields(SFTConfig)}
    if unknown:
        raise ValueError(f"unknown SFTConfig fields: {sorted(unknown)}")
    values = dict(data)
    if "model" in values:
        values["model"] = TinyModelConfig(**values["model"])
    if values.get("search") is not None:
        values["search"] = SearchRecipe(**values["search"])
    for name in ("betas", "num_counts"):
        if name in values:
            values[name] = tuple(values[name])
    return SFTConfig(**values)


def run_config(config: SFTConfig) -> dict:
    """The view of ``config`` that names its run: ``config_to_dict`` without ``RUNTIME_FIELDS``.

    ``RunStore.open`` hashes the config it is given (type name and canonical JSON), so SFT runs open
    the store with this dict (type ``dict``), not the dataclass: runtime fields do not change the id.
    """
    return {k: v for k, v in config_to_dict(config).items() if k not in RUNTIME_FIELDS}


def run_folder(run: RunStore | str | Path) -> Path:
    """The folder of a run given as its store or its folder."""
    return run.path if isinstance(run, RunStore) else Path(run)


def checkpoint_path(run: RunStore | str | Path) -> Path:
    """A run's resumable checkpoint, ``checkpoints/last.pt`` (a run store or a run folder)."""
    return run_folder(run) / "checkpoints" / CHECKPOINT


def final_model_dir(run: RunStore | str | Path) -> Path:
    """Where a finished run keeps its model and tokenizer (``save_pretrained``; ignored by git)."""
    return run_folder(run) / "checkpoints" / "final"
