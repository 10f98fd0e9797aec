"""An executor's backends (``runs.executor``): submit a job, wait for some to end (each with its error or
None), cancel, close. ``LocalBackend``: worker slots on this machine, one fresh process per run;
``RayBackend``: one Ray task per run. Ray is an optional extra, imported by ``import_ray`` only."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from countdown_study.runs.jobs import Job
from countdown_study.runs.packing import refuse_missing_gpu
from countdown_study.runs.threads import set_environment, wait_policy

RAY_MISSING = 'the ray executor needs Ray, which is not installed: pip install "countdown_study[ray]"'
"""What asking for the ``ray`` backend without Ray says."""
WORKER_ENVIRONMENT = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1", **wait_policy()}
"""Environment variables every worker starts with: no progress bars (progress comes from the event log),
and OpenMP's wait policy (``runs.threads``: the driver's, else ``PASSIVE``)."""


class RayMissingError(RuntimeError):
    """The ``ray`` backend was asked for and Ray is not installed."""


def error_line(err: BaseException) -> str:
    """An attempt's error on one line: the run's own exception where a wrapper carries it (Ray's
    ``RayTaskError.cause``), its type and the first line of its message."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        err = cause
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


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
