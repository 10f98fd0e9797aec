"""countdown_study: reproducible RLVR studies on the Countdown arithmetic task.

Layers, lowest first; each imports only the layers before it in this list (the order the code keeps:
``tests/test_walls.py`` reads it from here and holds it, beside the narrower walls of some layers):

* ``paths``, ``seeding``, ``checksums``: the one place for paths, for seeds and for the SHA-256 of weights;
* ``countdown``: pure ground truth, no torch: tasks, generator, loading, splits, difficulty, solver,
  features, prompts, verifier, grading;
* ``runs``: the run store, run ids, files, provenance, executors; it knows no task and no model, so every
  higher layer records its runs there;
* ``policy``: tokenizer, tiny model, ``load_policy``, pure trace builders;
* ``rollout``: sampling engines (native, hf, vllm) around a small core;
* ``evaluation``: pass@k tables (``passk``, no torch) and sampling-based evaluation of a policy;
* ``objectives``: pure tensor losses (RLOO, IPO);
* ``samplers``: which tasks each step trains on; they see tasks, features and observations only;
* ``training``: the RLOO loop, the IPO and SFT stages, which evaluate with ``evaluation``;
* ``reporting``: outputs, plots, references, the paper (no torch; of ``runs`` only files and provenance);
* ``study``: presets, method rows, tables, seed-aware statistics, the notebooks' pipeline;
* ``cli``, ``__main__``: the ``countdown-study`` command line (nothing in the library imports it).

The public names (``__all__``) are importable from here lazily: each loads its home module on first
access, so ``countdown_study.compute_score(...)`` imports no torch (``compare`` lives in ``study``, which
loads the training stack). Subpackages load on access too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_LAZY = {
    "Task": "countdown_study.countdown",
    "generate_tasks": "countdown_study.countdown",
    "load_tasks": "countdown_study.countdown",
    "solve": "countdown_study.countdown",
    "solution_count": "countdown_study.countdown",
    "difficulty_vectors": "countdown_study.countdown",
    "compute_score": "countdown_study.countdown",
    "verify": "countdown_study.countdown",
    "scan_answers": "countdown_study.countdown",
    "load_policy": "countdown_study.policy",
    "pass_at_k": "countdown_study.evaluation.passk",
    "compare": "countdown_study.study.compare",
}
"""Public name -> the module that defines it (imported on first access)."""

_SUBMODULES = frozenset(
    {
        "cli",
        "countdown",
        "evaluation",
        "objectives",
        "paths",
        "policy",
        "reporting",
        "rollout",
        "runs",
        "samplers",
        "seeding",
        "study",
        "training",
    }
)
"""Subpackages and top-level modules, imported on attribute access."""

__all__ = [
    "Task",
    "compare",
    "compute_score",
    "difficulty_vectors",
    "generate_tasks",
    "load_policy",
    "load_tasks",
    "pass_at_k",
    "scan_answers",
    "solution_count",
    "solve",
    "verify",
]
"""The public names (``_LAZY``'s keys), importable from here."""

if TYPE_CHECKING:
    from countdown_study.countdown import (
        Task,
        compute_score,
        difficulty_vectors,
        generate_tasks,
        load_tasks,
        scan_answers,
        solution_count,
        solve,
        verify,
    )
    from countdown_study.evaluation.passk import pass_at_k
    from countdown_study.policy import load_policy
    from countdown_study.study.compare import compare


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})
