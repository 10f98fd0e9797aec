"""Executors: a study's runs, each in a worker process, on this machine or on a Ray cluster.

``execute(jobs, root, config)`` takes ``Job``s (a run id and the call that finishes that run in the run
store at ``root``). The driver, the process calling it:

1. drops the jobs whose run finished already, by run id (its ``DONE`` marker; no lock is taken, as
   file locks are unreliable on network file systems), and repeated run ids;
2. hands the rest to a backend: ``local``, a process pool on this machine sized to its cores (cores //
   the CPUs a run needs, the behaviour of one machine running its studies), or ``ray``, one Ray task per
   run asking for the run's CPUs (its torch threads) and a GPU where the run asks for one, on the cluster
   at ``address`` (``ray.init(address=...)``; without one, a local Ray is started for the execution);
3. retries a failed attempt (an exception, a killed worker, a lost node) up to ``retries`` times and
   reports each failure with its run id and error: in the returned ``Execution`` and as ``retry`` and
   ``gave_up`` events of the store's event log (``runs.events``), which ``countdown-study run`` prints
   beside the workers' own events (started, resumed, finished, failed).

Where results go: the workers write them into the run store at ``root`` themselves, a folder every
worker sees at the same path (a shared file system on a cluster); only the run id comes back to the
driver. Shipping results back for the driver to write would move every checkpoint through the object
store and lose the store's resume: a retried run continues from the last checkpoint its killed attempt
wrote, which works only when the retry, on whichever node it lands, reads the folder the killed attempt
wrote to. The store's atomic files keep a killed attempt's folder consistent, and ``DONE`` comes last.

Ray is an optional extra (``pip install "countdown_study[ray]"``), imported by the ``ray`` backend only.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from countdown_study.runs.events import record_event
from countdown_study.runs.store import is_finished

BACKENDS = ("local", "ray")
"""Executor backends: a process pool on this machine, or a Ray cluster."""
RAY_MISSING = 'the ray executor needs Ray, which is not installed: pip install "countdown_study[ray]"'
"""What asking for the ``ray`` backend without Ray says."""
WORKER_ENVIRONMENT = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}
"""Environment variables every worker starts with: no progress bars (progress comes from the event log)."""


class RayMissingError(RuntimeError):
    """The ``ray`` backend was asked for and Ray is not installed."""


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

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown executor {self.backend!r}; choose one of {BACKENDS}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.address is not None and self.backend != "ray":
            raise ValueError("an address is for the ray executor (--executor ray)")


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


# ---------------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------------


def pending_jobs(jobs: Iterable[Job], root: str | Path) -> tuple[list[Job], list[str]]:
    """The jobs still to run (the first of each run id) and the run ids finished already."""
    todo, skipped, seen = [], [], set()
    for job in jobs:
        if job.run_id in seen:
            continue
        seen.add(job.run_id)
        if is_finished(Path(root) / job.run_id):
            skipped.append(job.run_id)
        else:
            todo.append(job)
    return todo, skipped


def execute(jobs: Sequence[Job], root: str | Path, config: ExecutorConfig | None = None) -> Execution:
    """Finish every job's run in the store at ``root`` (see the module docstring); failures are returned,
    not raised."""
    config = config or ExecutorConfig()
    Path(root).mkdir(parents=True, exist_ok=True)
    todo, skipped = pending_jobs(jobs, root)
    if not todo:
        return Execution((), tuple(skipped), ())
    with open_backend(config, todo) as backend:
        finished, failed = schedule(backend, todo, Path(root), config.retries)
    return Execution(tuple(finished), tuple(skipped), tuple(failed))


def schedule(backend, jobs: Sequence[Job], root: Path, retries: int) -> tuple[list[str], list[Failure]]:
    """Run ``jobs`` on ``backend``, at most ``backend.capacity`` at once, each failed attempt retried up to
    ``retries`` times; the finished run ids and the failures."""
    queue, attempts, running = deque(jobs), Counter(), {}
    finished, failed = [], []
    try:
        while queue or running:
            while queue and len(running) < backend.capacity:
                job = queue.popleft()
                running[backend.submit(job)] = job
            for handle, error in backend.wait(list(running)):
                job = running.pop(handle)
                if error is None:
                    finished.append(job.run_id)
                    continue
                attempts[job.run_id] += 1
                tried = attempts[job.run_id]
                if tried <= retries:
                    record_event(root, job.run_id, job.label, "retry", attempt=tried + 1,
                                 attempts=retries + 1, error=error)  # fmt: skip
                    queue.append(job)
                else:
                    record_event(root, job.run_id, job.label, "gave_up", attempts=tried, error=error)
                    failed.append(Failure(job.run_id, error, tried))
    finally:
        backend.cancel(list(running))
    return finished, failed


def error_line(err: BaseException) -> str:
    """An attempt's error on one line: the run's own exception where a wrapper carries it (Ray's
    ``RayTaskError.cause``), its type and the first line of its message."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        err = cause
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


@contextlib.contextmanager
def open_backend(config: ExecutorConfig, jobs: Sequence[Job]) -> Iterator[LocalBackend | RayBackend]:
    """The backend ``config`` names, ready for ``jobs``; closed when the block ends."""
    if config.backend == "ray":
        backend = RayBackend(config.address)
    else:
        cpus = max(job.cpus for job in jobs)
        backend = LocalBackend(config.workers or max(1, available_cores() // cpus))
    try:
        yield backend
    finally:
        backend.close()


def available_cores() -> int:
    """CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------------
# Backends: submit a job, wait for some to end (each with its error or None), cancel, close
# ---------------------------------------------------------------------------------------------------


class LocalBackend:
    """A pool of ``workers`` processes on this machine (started fresh, not forked from the driver), each
    process finishing one run and exiting, so that no run inherits another's memory or torch threads."""

    def __init__(self, workers: int) -> None:
        self.capacity = workers
        self._pool: ProcessPoolExecutor | None = None
        self._pool_of: dict[Future, ProcessPoolExecutor] = {}

    def submit(self, job: Job) -> Future:
        if self._pool is None:  # the first, or the last one broke
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                self.capacity,
                context,
                initializer=set_environment,
                initargs=(WORKER_ENVIRONMENT,),
                max_tasks_per_child=1,
            )
        future = self._pool.submit(job.call, *job.args)
        self._pool_of[future] = self._pool
        return future

    def wait(self, handles: list[Future]) -> list[tuple[Future, str | None]]:
        """A killed worker breaks the pool: every run in it fails this attempt and a new pool takes the
        retries (at most ``capacity`` runs are in a pool at once, so no queued run is charged)."""
        done, _ = wait_futures(handles, return_when=FIRST_COMPLETED)
        outcomes = []
        for future in done:
            error = future.exception()
            pool = self._pool_of.pop(future)
            if isinstance(error, BrokenProcessPool) and pool is self._pool:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            outcomes.append((future, None if error is None else error_line(error)))
        return outcomes

    def cancel(self, handles: list[Future]) -> None:
        for future in handles:
            future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def set_environment(env: dict[str, str]) -> None:
    """Add ``env`` to this process's environment (a local worker's first call, before any run's imports)."""
    os.environ.update(env)


def import_ray():
    """The ``ray`` module, or ``RayMissingError`` saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise RayMissingError(RAY_MISSING) from err
    return ray


def call_job(call: Callable[..., Any], args: tuple) -> Any:
    """``call(*args)``: the body of every Ray task."""
    return call(*args)


def task_options(job: Job, cluster_gpus: float) -> dict[str, Any]:
    """A job's Ray resources on a cluster with ``cluster_gpus`` GPUs: its CPUs, the GPUs it needs, and one
    GPU for a run on ``auto`` where the cluster has any (without it Ray would hide the GPU from the task
    and ``auto`` would quietly train on the CPU)."""
    gpus = max(job.gpus, int(job.gpu_if_any and cluster_gpus >= 1))
    return {"num_cpus": job.cpus, "num_gpus": gpus, "name": job.run_id}


class RayBackend:
    """One Ray task per run, with the run's CPUs and GPUs as its resources; Ray's own retries are off,
    so that every failed attempt is seen, counted and reported here."""

    def __init__(self, address: str | None) -> None:
        self._ray = import_ray()
        self._owned = not self._ray.is_initialized()
        if self._owned:
            self._ray.init(address=address, log_to_driver=False)
        self._task = self._ray.remote(max_retries=0, runtime_env={"env_vars": WORKER_ENVIRONMENT})(call_job)
        self.capacity = sys.maxsize  # Ray queues the tasks and places each where its resources are free

    def submit(self, job: Job):
        options = task_options(job, self._ray.cluster_resources().get("GPU", 0))
        return self._task.options(**options).remote(job.call, job.args)

    def wait(self, handles: list) -> list[tuple[Any, str | None]]:
        done, _ = self._ray.wait(handles, num_returns=1)
        outcomes = []
        for ref in done:
            try:
                self._ray.get(ref)
            except self._ray.exceptions.RayError as err:
                outcomes.append((ref, error_line(err)))
            else:
                outcomes.append((ref, None))
        return outcomes

    def cancel(self, handles: list) -> None:
        for ref in handles:
            self._ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._owned:
            self._ray.shutdown()
