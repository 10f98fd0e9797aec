"""Giving a run process's freed heap back to the system.

A training step allocates and frees tensors of many sizes; glibc keeps what is freed for reuse, so a
process's resident memory settles near its largest step plus fragmentation, and an evaluation after
training allocates on top of it. Measured on the full preset: a VCC-RLOO run held 8.6-9.4 GB while
training and reached 12.2 GB evaluating, against 4.2 GB of memory in use; two such runs evaluating at
once overran a 24 GB machine. ``return_free_heap`` (glibc's ``malloc_trim(0)``) hands the free pages
back; the training loop calls it at each checkpoint and before each evaluation. It moves no data, so the
numbers a run computes are the same with it or without it; calling it every step would cost the
process its page faults again each step (about 15% of a step here), at a checkpoint it costs nothing
measurable.

Between checkpoints the heap a step leaves behind still adds up across the runs sharing a machine: two
whole-rollout runs of the full preset at 9.2 GB each left too little for anything beside them, and one
was killed by the kernel. So the loop also calls ``return_free_heap_when_low`` after each step: it hands
the heap back only while the machine's available memory is below ``LOW_MEMORY_SHARE`` of its total
(``memory_is_low``), paying the page faults only when memory is short.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from pathlib import Path

from countdown_study.runs.allocator import release_tcmalloc_free_memory

LOW_MEMORY_SHARE = 0.25
"""The share of the machine's memory below which its available memory counts as low
(``memory_is_low``): 6 GB of 24."""

MEMINFO = Path("/proc/meminfo")
"""Where Linux reports the machine's memory (``MemTotal``, ``MemAvailable``, in KiB)."""


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def return_free_heap() -> bool:
    """Return the C heap's free pages to the system; True if the allocator released any, False otherwise
    or where it cannot (then this does nothing). The allocator is glibc's (``malloc_trim``) or tcmalloc
    where the executor preloaded it (``runs.allocator``; glibc's trim would find nothing to return)."""
    released = release_tcmalloc_free_memory()
    if released is not None:
        return released
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


def meminfo_kib(meminfo: str | None = None) -> dict[str, int]:
    """The fields of ``meminfo`` (the text of ``/proc/meminfo``; read here when None) as KiB by name, e.g.
    ``{"MemTotal": 24576000, "MemAvailable": ...}``; empty where it cannot be read (not Linux)."""
    if meminfo is None:
        try:
            meminfo = MEMINFO.read_text()
        except OSError:
            return {}
    fields = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0])
    return fields


def memory_is_low(meminfo: str | None = None) -> bool:
    """Whether the machine's available memory (``MemAvailable``) is below ``LOW_MEMORY_SHARE`` of its total
    (``MemTotal``), read by ``meminfo_kib``. False where neither can be read (not Linux): then nothing is
    returned early."""
    fields = meminfo_kib(meminfo)
    total, available = fields.get("MemTotal"), fields.get("MemAvailable")
    if not total or available is None:
        return False
    return available < LOW_MEMORY_SHARE * total


def return_free_heap_when_low(meminfo: str | None = None) -> bool:
    """``return_free_heap`` while ``memory_is_low``; True if it ran and glibc released pages."""
    return memory_is_low(meminfo) and return_free_heap()
