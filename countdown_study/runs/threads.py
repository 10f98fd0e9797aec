"""CPU thread settings of the package's processes: OpenMP's wait policy, a packed run's share of the cores.

OpenMP's worker threads spin after each parallel region by default, waiting for the next one. On cores
other work shares, the spinning threads take the time that work (and the run's own next operation) needs:
``OMP_WAIT_POLICY=PASSIVE`` makes them sleep instead. It is read once, when torch starts OpenMP, so it is
set before torch is imported: by the command line's entry point, in every executor worker's environment
and in every notebook kernel's (``runs.executor.WORKER_ENVIRONMENT``, ``study.pipeline.KERNEL_ENVIRONMENT``).
A value the user set is kept. ``benchmarks/bench_wait_policy.py`` measures both policies side by side.

Imports only the standard library: the command line reads it before anything else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

WAIT_POLICY_VARIABLE = "OMP_WAIT_POLICY"
"""The OpenMP variable naming what idle worker threads do (``ACTIVE``: spin, ``PASSIVE``: sleep)."""
DEFAULT_WAIT_POLICY = "PASSIVE"
"""The package's wait policy where the user set none (measured: ``benchmarks/results/wait_policy.json``)."""
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")
"""Thread-pool sizes of the libraries a run loads (OpenMP, MKL, OpenBLAS, the tokenizers' Rayon): set to a
packed run's share of the cores, so that K runs on one machine do not each start a pool per core. torch's
own intra-op threads are the run's ``threads`` (part of its config and its run id)."""


def wait_policy(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{OMP_WAIT_POLICY: ...}``: the value in ``environ`` (default ``os.environ``) where one is set, else
    ``DEFAULT_WAIT_POLICY``."""
    environ = os.environ if environ is None else environ
    return {WAIT_POLICY_VARIABLE: environ.get(WAIT_POLICY_VARIABLE) or DEFAULT_WAIT_POLICY}


def set_wait_policy(environ: MutableMapping[str, str] | None = None) -> None:
    """Put ``wait_policy`` into ``environ`` (default ``os.environ``), keeping a value already there; call it
    before torch is imported."""
    environ = os.environ if environ is None else environ
    environ.update(wait_policy(environ))


def thread_share(threads: int) -> dict[str, str]:
    """``THREAD_VARIABLES`` set to ``threads`` (a packed run's share of the cores)."""
    if threads < 1:
        raise ValueError(f"a run's share of the cores must be at least 1 thread, got {threads}")
    return dict.fromkeys(THREAD_VARIABLES, str(threads))


def set_environment(env: Mapping[str, str]) -> None:
    """Add ``env`` to this process's environment: a local executor worker's first call. It runs before the
    worker's run is unpickled, and this module imports no torch, so the settings are in place when the run's
    imports start OpenMP and CUDA."""
    os.environ.update(env)
