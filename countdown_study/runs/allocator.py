"""The memory allocator of a run process: glibc's malloc, or tcmalloc preloaded into the executor's workers.

A training step allocates and frees tensors of many sizes. glibc's malloc maps every block above its
mmap threshold (at most 32 MB on 64-bit Linux) afresh and unmaps it when it is freed, so the kernel
faults in and zeroes those pages again on every step: in two full-preset VCC-RLOO runs side by side a
quarter to a half of the CPU time was the kernel's. tcmalloc (gperftools' ``libtcmalloc_minimal``, the
Debian package ``libtcmalloc-minimal4``) keeps freed pages for reuse and hands them back gradually.
``benchmarks/bench_allocator.py`` measured it on the full preset, two runs at once with one thread
each: 0.84x glibc's seconds per step for uniform RLOO on the embedded policy and 0.70x for VCC-RLOO on
whole rollouts, with lower peak memory; glibc kept from mapping (``mmap_max=0``) gained less
(0.92-0.93x), and torch's and glibc's huge-page switches and jemalloc lost (1.06-1.61x). An allocator
moves no arithmetic (torch asks every allocator for the same 64-byte alignment): a run's numbers, and
so its id and results, are the same with either, which the benchmark and ``tests/test_allocator.py``
check bit for bit.

A library is preloaded when a process starts (``LD_PRELOAD``), so the local executor sets it in the
environment its workers are started with (``preloaded``), for as long as its pool is open, and every
notebook kernel starts with it (``study.pipeline``); the driver keeps its own allocator.
``ExecutorConfig.allocator`` and ``countdown-study run --allocator`` (the kernels' too) choose: ``auto``
(tcmalloc where it is installed, glibc's malloc otherwise), ``tcmalloc`` (refused where it is missing)
or ``system`` (no preload). A run records the allocator it ran with in its provenance (``allocator``);
it is not part of the environment that decides whether runs are comparable, as it changes no number.

Imports only the standard library: the command line reads it before torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

ALLOCATORS = ("auto", "tcmalloc", "system")
"""Choices of ``ExecutorConfig.allocator`` and ``countdown-study run --allocator``."""
LIBRARIES = {"tcmalloc": "tcmalloc_minimal"}
"""The library name (``ctypes.util.find_library``) of each allocator that is preloaded."""
PACKAGES = {"tcmalloc": "libtcmalloc-minimal4"}
"""The Debian package that installs each preloaded allocator, for the error that names it."""
MAPS = Path("/proc/self/maps")
"""The libraries mapped into this process (Linux)."""


class AllocatorMissingError(RuntimeError):
    """An allocator was asked for by name and its library is not installed."""


def allocator_library(name: str) -> str | None:
    """The library file of the preloaded allocator ``name`` as the dynamic loader finds it, or None."""
    return ctypes.util.find_library(LIBRARIES[name])


def preload_environment(choice: str) -> dict[str, str]:
    """The environment variables a worker starts with for ``choice`` (``ALLOCATORS``): ``LD_PRELOAD`` with
    tcmalloc's library, or nothing (``system``, or ``auto`` where tcmalloc is not installed); an unknown
    choice, or ``tcmalloc`` without its library, is refused naming what to do."""
    if choice not in ALLOCATORS:
        raise ValueError(f"unknown allocator {choice!r}; choose one of {ALLOCATORS}")
    if choice == "system":
        return {}
    library = allocator_library("tcmalloc")
    if library is None:
        if choice == "auto":
            return {}
        raise AllocatorMissingError(
            f"the allocator {choice!r} is not installed: apt-get install {PACKAGES[choice]}, "
            "or choose --allocator system"
        )
    return {"LD_PRELOAD": library}


def describe_allocator(choice: str) -> str:
    """What the local executor's workers start with for ``choice``, for the command's output; the line
    names the package to install where ``auto`` falls back to glibc's malloc."""
    library = preload_environment(choice).get("LD_PRELOAD")
    if library:
        return f"workers' allocator: tcmalloc ({library}; the same numbers, faster steps)"
    if choice == "system":
        return "workers' allocator: the system's malloc (--allocator system)"
    return (
        "workers' allocator: the system's malloc (tcmalloc is not installed; "
        f"apt-get install {PACKAGES['tcmalloc']} for faster steps, the same numbers)"
    )


def joined_preload(env: Mapping[str, str], before: str | None) -> dict[str, str]:
    """``env``'s ``LD_PRELOAD`` put before ``before`` (a value the user set, kept after it), or nothing
    where ``env`` preloads nothing."""
    library = env.get("LD_PRELOAD")
    if not library:
        return {}
    return {"LD_PRELOAD": f"{library} {before}" if before else library}


@contextlib.contextmanager
def preloaded(env: Mapping[str, str]) -> Iterator[None]:
    """This process's environment with ``env``'s ``LD_PRELOAD`` put first in any the user set, while the
    block runs, so that the processes started meanwhile load it; the environment is restored after."""
    before = os.environ.get("LD_PRELOAD")
    joined = joined_preload(env, before)
    if not joined:
        yield
        return
    os.environ.update(joined)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = before


def loaded_allocator(maps: str | None = None) -> str:
    """The allocator of this process as its mapped libraries show it (``maps``: the text of
    ``/proc/self/maps``, read here when None): ``tcmalloc``, ``jemalloc``, or ``system`` otherwise and
    where the maps cannot be read."""
    if maps is None:
        try:
            maps = MAPS.read_text()
        except OSError:
            return "system"
    for name, marker in (("tcmalloc", "libtcmalloc"), ("jemalloc", "libjemalloc")):
        if marker in maps:
            return name
    return "system"


@functools.cache
def process_allocator() -> str:
    """``loaded_allocator`` of this process, read once (a process keeps the allocator it started with)."""
    return loaded_allocator()


def release_tcmalloc_free_memory() -> bool | None:
    """Hand tcmalloc's free pages back to the system (``MallocExtension_ReleaseFreeMemory``): True if it
    held any, False if none; None where tcmalloc is not this process's allocator."""
    if process_allocator() != "tcmalloc":
        return None
    process = ctypes.CDLL(None)
    try:
        release = process.MallocExtension_ReleaseFreeMemory
        numeric = process.MallocExtension_GetNumericProperty
    except AttributeError:
        return None
    free = ctypes.c_size_t(0)
    numeric.argtypes = (ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t))
    known = numeric(b"tcmalloc.pageheap_free_bytes", ctypes.byref(free))
    release()
    return bool(free.value) if known else True
