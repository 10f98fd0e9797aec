"""Executors: a study's runs, each in a worker process, on this machine or on a Ray cluster.

``execute(jobs, root, config)`` takes ``Job``s (a run id and the call that finishes that run in the run
store at ``root``). The driver, the process calling it:

1. drops the jobs whose run finished already, by run id (its ``DONE`` marker; no lock is taken, as
   file locks are unreliable on network file systems), and repeated run ids;
2. hands the rest to a backend: ``local``, a process pool on this machine sized to its cores (cores //
   the CPUs a run needs, the behaviour of one machine running its studies), or ``ray``, one Ray task per
   run asking for the run's CPUs (its torch threads) and a GPU where the run asks for one, on the cluster
   at ``address`` (``ray.init(address=...)``; without one, a local Ray is started for the execution);
   with ``runs_per_gpu`` K, runs on a GPU share it (``plan_packing``): the local pool has K worker slots
   per visible GPU, each slot's workers see only its GPU (``CUDA_VISIBLE_DEVICES``, assigned round-robin)
   and start their libraries' thread pools at the slot's share of the cores; a Ray task of a run on a GPU
   asks for ``1 / K`` of one;
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

Packing is an execution detail: a run's config, and so its run id and its results, are the same at any
K (a run on ``cuda`` names no GPU index: the slot's ``CUDA_VISIBLE_DEVICES`` decides which GPU it is; its
torch threads are its config's). On a machine without a GPU, runs that need one are refused before any
worker starts; where no run uses a GPU, K does not apply and ``Packing.note`` says so.

Ray is an optional extra (``pip install "countdown_study[ray]"``), imported by the ``ray`` backend only.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from countdown_study.runs.events import record_event
from countdown_study.runs.store import is_finished
from countdown_study.runs.threads import set_environment, thread_share, wait_policy

BACKENDS = ("local", "ray")
"""Executor backends: a process pool on this machine, or a Ray cluster."""
RAY_MISSING = 'the ray executor needs Ray, which is not installed: pip install "countdown_study[ray]"'
"""What asking for the ``ray`` backend without Ray says."""
WORKER_ENVIRONMENT = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1", **wait_policy()}
"""Environment variables every worker starts with: no progress bars (progress comes from the event log),
and OpenMP's wait policy (``runs.threads``: the driver's, else ``PASSIVE``)."""


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
    runs_per_gpu: int | None = None
    """Runs sharing one GPU at once (``--runs-per-gpu``; see ``plan_packing``). Local: this many worker slots
    per visible GPU, each pinned to its GPU, the cores divided among the slots; Ray: a run on a GPU asks for
    ``1 / runs_per_gpu`` of one. None: a whole GPU per Ray task, a local pool sized by the cores. Enters no
    run id."""
    gpus: tuple[str, ...] | None = None
    """Local only, with ``runs_per_gpu``: the GPUs to pack onto, as ``CUDA_VISIBLE_DEVICES`` names them;
    None: every GPU torch sees (``visible_gpus``)."""

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


# ---------------------------------------------------------------------------------------------------
# Packing runs onto GPUs
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """A place of a packed local pool: one run at a time, on one GPU, with a share of the cores."""

    gpu: str
    """The GPU its workers see (their ``CUDA_VISIBLE_DEVICES``: a run on ``cuda`` finds it as ``cuda:0``)."""
    threads: int
    """Its share of the machine's cores: the thread-pool size of the libraries its run loads
    (``runs.threads.THREAD_VARIABLES``)."""

    @property
    def environment(self) -> dict[str, str]:
        """The environment its workers start with, beside ``WORKER_ENVIRONMENT``."""
        return {"CUDA_VISIBLE_DEVICES": self.gpu, **thread_share(self.threads)}


@dataclass(frozen=True)
class Packing:
    """How a local execution with ``runs_per_gpu`` places its runs (``plan_packing``)."""

    runs_per_gpu: int
    """Runs sharing one GPU at once."""
    slots: tuple[Slot, ...]
    """The pool's slots, ``runs_per_gpu`` per GPU; empty where packing does not apply (``note``)."""
    note: str = ""
    """Why packing does not apply (no run uses a GPU); empty where it does."""

    @property
    def gpus(self) -> tuple[str, ...]:
        """The GPUs the slots use, in order."""
        return tuple(dict.fromkeys(slot.gpu for slot in self.slots))


def visible_gpus(cuda_visible_devices: str | None, device_count: int) -> tuple[str, ...]:
    """The GPUs a process sees, as ``CUDA_VISIBLE_DEVICES`` names them: its entries (as many as CUDA
    found, ``device_count``), or ``0 .. device_count - 1`` where the variable is not set."""
    if cuda_visible_devices is None:
        return tuple(str(index) for index in range(device_count))
    named = [entry.strip() for entry in cuda_visible_devices.split(",") if entry.strip()]
    return tuple(named[:device_count])


def detect_gpus() -> tuple[str, ...]:
    """``visible_gpus`` of this process (torch's device count; none on a CPU-only build)."""
    import torch

    return visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count())


def pack_slots(gpus: Sequence[str], runs_per_gpu: int, cores: int) -> tuple[Slot, ...]:
    """``runs_per_gpu`` slots per GPU, GPUs taken round-robin (slot ``i`` on ``gpus[i % len(gpus)]``, so the
    first runs spread over every GPU), each with ``cores // slots`` threads (at least 1)."""
    if not gpus:
        raise ValueError("no GPU to pack runs onto")
    if runs_per_gpu < 1:
        raise ValueError(f"runs per GPU must be at least 1, got {runs_per_gpu}")
    count = len(gpus) * runs_per_gpu
    threads = max(1, cores // count)
    return tuple(Slot(gpus[i % len(gpus)], threads) for i in range(count))


def uses_gpu(job: Job, gpu_here: bool) -> bool:
    """Whether ``job``'s run takes a GPU: it needs one (``cuda``), or runs on ``auto`` where there is one."""
    return job.gpus > 0 or (job.gpu_if_any and gpu_here)


def refuse_missing_gpu(jobs: Sequence[Job], runs_per_gpu: int, gpu_here: bool, where: str) -> None:
    """Refuse packing runs that need a GPU (device ``cuda``) onto ``where`` when it has none."""
    needing = sum(job.gpus > 0 for job in jobs)
    if needing and not gpu_here:
        raise ValueError(
            f"{runs_per_gpu} runs per GPU asked for, but {where} has no GPU for the {needing} run(s) on "
            "device cuda"
        )


def plan_packing(jobs: Sequence[Job], runs_per_gpu: int, gpus: Sequence[str], cores: int) -> Packing:
    """How a local pool runs ``jobs`` with ``runs_per_gpu`` on a machine with ``gpus`` and ``cores``.

    Runs that need a GPU on a machine without one are refused (``ValueError``, before any worker starts).
    Where no run takes a GPU (every run on ``cpu``, or on ``auto`` without a GPU) packing does not apply:
    no slots, a ``note`` saying why, and the pool is sized by the cores as without it. Otherwise every run
    takes a slot of ``pack_slots`` (a run on the CPU among runs on a GPU too).
    """
    refuse_missing_gpu(jobs, runs_per_gpu, bool(gpus), "this machine")
    if not any(uses_gpu(job, bool(gpus)) for job in jobs):
        why = "no run asks for a GPU (device cpu)" if gpus else "this machine has no GPU and no run needs one"
        return Packing(
            runs_per_gpu, (), f"{why}: runs per GPU does not apply, runs are spread over the cores"
        )
    return Packing(runs_per_gpu, pack_slots(gpus, runs_per_gpu, cores))


def local_packing(jobs: Sequence[Job], config: ExecutorConfig) -> Packing | None:
    """``plan_packing`` of a local execution with ``config`` on this machine (None without
    ``runs_per_gpu``)."""
    if config.backend != "local" or config.runs_per_gpu is None:
        return None
    gpus = detect_gpus() if config.gpus is None else config.gpus
    return plan_packing(jobs, config.runs_per_gpu, gpus, available_cores())


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
        backend = RayBackend(config.address, config.runs_per_gpu)
        backend.check(jobs)
    else:
        packing = local_packing(jobs, config)
        if packing is not None and packing.slots:
            environments = [{**WORKER_ENVIRONMENT, **slot.environment} for slot in packing.slots]
        else:
            cpus = max(job.cpus for job in jobs)
            environments = [WORKER_ENVIRONMENT] * (config.workers or max(1, available_cores() // cpus))
        backend = LocalBackend(environments)
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
    """Worker slots on this machine, one run at a time in each: a slot is a pool of one process (started
    fresh, not forked from the driver) whose workers start with the slot's environment, each finishing one
    run and exiting, so that no run inherits another's memory or torch threads.

    A worker sets its slot's environment first (``runs.threads.set_environment``), before its run is
    unpickled and starts torch. A fresh process also imports the driver's main module again: a driver
    script importing torch at its top starts OpenMP there first, and its workers keep the driver's OpenMP
    settings (their GPU, read when CUDA starts, is still the slot's). The command line imports no torch
    before it runs a command."""

    def __init__(self, environments: Sequence[Mapping[str, str]]) -> None:
        self.capacity = len(environments)
        self._environments = [dict(env) for env in environments]
        self._pools: list[ProcessPoolExecutor | None] = [None] * self.capacity
        self._slot_of: dict[Future, int] = {}

    def submit(self, job: Job) -> Future:
        busy = set(self._slot_of.values())
        slot = next(i for i in range(self.capacity) if i not in busy)
        if self._pools[slot] is None:  # the first run of this slot, or its last worker was killed
            self._pools[slot] = ProcessPoolExecutor(
                1,
                multiprocessing.get_context("spawn"),
                initializer=set_environment,
                initargs=(self._environments[slot],),
                max_tasks_per_child=1,
            )
        future = self._pools[slot].submit(job.call, *job.args)
        self._slot_of[future] = slot
        return future

    def wait(self, handles: list[Future]) -> list[tuple[Future, str | None]]:
        """A killed worker breaks its slot's pool: its run fails this attempt and a new pool takes the
        slot's next run."""
        done, _ = wait_futures(handles, return_when=FIRST_COMPLETED)
        outcomes = []
        for future in done:
            error = future.exception()
            slot = self._slot_of.pop(future)
            if isinstance(error, BrokenProcessPool):
                self._pools[slot].shutdown(wait=False, cancel_futures=True)
                self._pools[slot] = None
            outcomes.append((future, None if error is None else error_line(error)))
        return outcomes

    def cancel(self, handles: list[Future]) -> None:
        for future in handles:
            future.cancel()

    def close(self) -> None:
        for pool in self._pools:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


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


def task_options(job: Job, cluster_gpus: float, runs_per_gpu: int | None = None) -> dict[str, Any]:
    """A job's Ray resources on a cluster with ``cluster_gpus`` GPUs: its CPUs, the GPUs it needs, and one
    GPU for a run on ``auto`` where the cluster has any (without it Ray would hide the GPU from the task
    and ``auto`` would quietly train on the CPU); with ``runs_per_gpu`` K, ``1 / K`` of each such GPU (Ray
    places K such tasks on one GPU and sets each one's ``CUDA_VISIBLE_DEVICES``)."""
    gpus = max(job.gpus, int(job.gpu_if_any and cluster_gpus >= 1))
    if runs_per_gpu is not None and gpus:
        gpus = gpus / runs_per_gpu
    return {"num_cpus": job.cpus, "num_gpus": gpus, "name": job.run_id}


class RayBackend:
    """One Ray task per run, with the run's CPUs and GPUs as its resources; Ray's own retries are off,
    so that every failed attempt is seen, counted and reported here."""

    def __init__(self, address: str | None, runs_per_gpu: int | None = None) -> None:
        self._ray = import_ray()
        self._owned = not self._ray.is_initialized()
        if self._owned:
            self._ray.init(address=address, log_to_driver=False)
        self._task = self._ray.remote(max_retries=0, runtime_env={"env_vars": WORKER_ENVIRONMENT})(call_job)
        self.capacity = sys.maxsize  # Ray queues the tasks and places each where its resources are free
        self.runs_per_gpu = runs_per_gpu

    def check(self, jobs: Sequence[Job]) -> None:
        """Refuse packing runs that need a GPU onto a cluster without one (Ray would queue them forever)."""
        if self.runs_per_gpu is not None:
            gpu_here = self._ray.cluster_resources().get("GPU", 0) > 0
            refuse_missing_gpu(jobs, self.runs_per_gpu, gpu_here, "the Ray cluster")

    def submit(self, job: Job):
        options = task_options(job, self._ray.cluster_resources().get("GPU", 0), self.runs_per_gpu)
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
