"""What an executor (``runs.executor``) is given and what it returns: ``Job``s, the ``ExecutorConfig``
that says how to run them, and the ``Execution`` with its ``Failure``s. Data only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from countdown_study.runs.allocator import ALLOCATORS

BACKENDS = ("local", "ray")
"""Executor backends: a process pool on this machine, or a Ray cluster."""


@dataclass(frozen=True)
class Job:
    """One run for an executor."""

    run_id: str
    """The run's id in the store (the name of its folder)."""
    call: Callable[..., Any]
    """A module-level function finishing the run in the store; workers import it by name."""
    args: tuple = ()
    """Its arguments (picklable)."""
    label: str = ""
    """What progress lines call the run (``runs.events.describe`` of its config)."""
    cpus: int = 1
    """CPU cores the run uses (its torch threads)."""
    gpus: int = 0
    """GPUs the run needs (1 for a run on ``cuda``)."""
    gpu_if_any: bool = False
    """The run takes a GPU where the cluster has one and runs on the CPU otherwise (a run on ``auto``).
    Ray hides the GPUs from a task that asks for none, so such a run must ask for one to see it."""


@dataclass(frozen=True)
class ExecutorConfig:
    """How an execution runs its jobs."""

    backend: str = "local"
    """``local`` (a process pool on this machine) or ``ray``."""
    address: str | None = None
    """Ray only: the cluster to join (``ray.init(address=...)``: ``HOST:PORT`` of the head node, ``auto``,
    or ``local`` for a fresh local Ray); None: ``RAY_ADDRESS``, or a Ray started on this machine with
    ``ray start``, else a local Ray started for the execution and stopped after it."""
    retries: int = 2
    """Failed attempts retried per run; a run failing ``retries + 1`` times is reported and given up."""
    workers: int | None = None
    """Local only: runs at once; None: this machine's cores // the most CPUs a run needs."""
    runs_per_gpu: int | None = None
    """Runs sharing one GPU at once (``--runs-per-gpu``; see ``plan_packing``). Local: this many worker slots
    per visible GPU, each pinned to its GPU, the cores divided among the slots; Ray: a run on a GPU asks for
    ``1 / runs_per_gpu`` of one. None: a whole GPU per Ray task, a local pool sized by the cores. Enters no
    run id."""
    gpus: tuple[str, ...] | None = None
    """Local only, with ``runs_per_gpu``: the GPUs to pack onto, as ``CUDA_VISIBLE_DEVICES`` names them;
    None: every GPU torch sees (``visible_gpus``)."""
    allocator: str = "auto"
    """Local only: the memory allocator the workers start with (``runs.allocator``): ``auto`` (tcmalloc
    where it is installed, else glibc's malloc), ``tcmalloc`` or ``system``. Changes no number of a run,
    only its speed and memory; enters no run id."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown executor {self.backend!r}; choose one of {BACKENDS}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.address is not None and self.backend != "ray":
            raise ValueError("an address is for the ray executor (--executor ray)")
        if self.runs_per_gpu is not None and self.runs_per_gpu < 1:
            raise ValueError(f"runs per GPU must be at least 1, got {self.runs_per_gpu}")
        if self.runs_per_gpu is not None and self.workers is not None:
            raise ValueError("give the local pool's size as workers or as runs per GPU, not both")
        if self.allocator not in ALLOCATORS:
            raise ValueError(f"unknown allocator {self.allocator!r}; choose one of {ALLOCATORS}")
        if self.gpus is not None and (self.runs_per_gpu is None or self.backend != "local"):
            raise ValueError("gpus name where a local execution packs runs: give runs_per_gpu with them")


@dataclass(frozen=True)
class Failure:
    """A run given up after its last attempt failed."""

    run_id: str
    """The run."""
    error: str
    """The last attempt's error, one line."""
    attempts: int
    """Attempts made."""


@dataclass(frozen=True)
class Execution:
    """What ``execute`` did."""

    finished: tuple[str, ...]
    """Run ids it finished, in the order they finished."""
    skipped: tuple[str, ...]
    """Run ids that had finished before it started."""
    failed: tuple[Failure, ...]
    """Runs given up."""

    @property
    def ok(self) -> bool:
        """Whether every run is finished."""
        return not self.failed
