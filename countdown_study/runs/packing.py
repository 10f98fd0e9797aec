"""Packing runs onto GPUs: ``runs_per_gpu`` K runs share one GPU (``plan_packing``). A local pool has K
worker slots per visible GPU (``Slot``: its GPU by ``CUDA_VISIBLE_DEVICES``, round-robin, and its share of
the cores); where no run takes a GPU packing does not apply and ``Packing.note`` says why. Runs that need a
GPU on a machine without one are refused before any worker starts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from countdown_study.runs.jobs import Job
from countdown_study.runs.threads import thread_share


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
