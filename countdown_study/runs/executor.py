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
   asks for ``1 / K`` of one; local workers start with tcmalloc where it is installed (``runs.allocator``,
   ``ExecutorConfig.allocator``: faster steps, the same numbers);
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

The pieces: ``runs.jobs`` (``Job``, ``ExecutorConfig``, ``Execution``), ``runs.packing`` (``plan_packing``),
``runs.backends`` (``LocalBackend``, ``RayBackend``); the driver is here.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from countdown_study.runs.allocator import preload_environment, preloaded
from countdown_study.runs.backends import (
    RAY_MISSING,
    WORKER_ENVIRONMENT,
    LocalBackend,
    RayBackend,
    RayMissingError,
    call_job,
    error_line,
    import_ray,
    task_options,
)
from countdown_study.runs.events import record_event
from countdown_study.runs.jobs import (
    BACKENDS,
    Execution,
    ExecutorConfig,
    Failure,
    Job,
)
from countdown_study.runs.packing import (
    Packing,
    Slot,
    detect_gpus,
    pack_slots,
    plan_packing,
    refuse_missing_gpu,
    uses_gpu,
    visible_gpus,
)
from countdown_study.runs.run_ids import is_finished

__all__ = [
    "BACKENDS",
    "Execution",
    "ExecutorConfig",
    "Failure",
    "Job",
    "LocalBackend",
    "Packing",
    "RAY_MISSING",
    "RayBackend",
    "RayMissingError",
    "Slot",
    "WORKER_ENVIRONMENT",
    "available_cores",
    "call_job",
    "detect_gpus",
    "error_line",
    "execute",
    "import_ray",
    "local_packing",
    "open_backend",
    "pack_slots",
    "pending_jobs",
    "plan_packing",
    "refuse_missing_gpu",
    "schedule",
    "task_options",
    "uses_gpu",
    "visible_gpus",
]


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


@contextlib.contextmanager
def open_backend(config: ExecutorConfig, jobs: Sequence[Job]) -> Iterator[LocalBackend | RayBackend]:
    """The backend ``config`` names, ready for ``jobs``; closed when the block ends. Local workers start
    with ``config.allocator``'s library preloaded (``runs.allocator.preloaded``); Ray's workers are the
    cluster's."""
    preload = preload_environment(config.allocator) if config.backend == "local" else {}
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
        with preloaded(preload):
            yield backend
    finally:
        backend.close()


def available_cores() -> int:
    """CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
