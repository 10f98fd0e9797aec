"""Resumable checkpoints of an RLOO run: weights, optimizer and sampler state after a step, atomic.

A killed run resumes from its last checkpoint and ends with the same results as an uninterrupted one
(every draw derives from the run seed and the step, never from state the checkpoint lacks).
"""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import torch

from countdown_study.runs.files import atomic_path
from countdown_study.runs.store import RunStore
from countdown_study.samplers import Sampler

CHECKPOINT = "last.pt"
"""File name of an RLOO run's resumable checkpoint under ``checkpoints/``."""


def write_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file beside ``path``, then ``os.replace``: whole or absent.

    A failed write removes its temporary file and leaves the previous checkpoint as it was. Every
    stage's checkpoints (RLOO, SFT) are written through it.
    """
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def save_checkpoint(store: RunStore, step: int, model, optimizer, sampler: Sampler) -> None:
    """Everything needed to resume after ``step`` steps, written atomically."""
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "sampler": json.dumps(sampler.state_dict()),
    }
    write_checkpoint(store.checkpoint_dir / CHECKPOINT, state)


def load_checkpoint(store: RunStore, model, optimizer, sampler: Sampler) -> int:
    """Restore the last checkpoint; returns the number of steps it covers (0 when there is none).

    A checkpoint that cannot be read, or whose run's step log lacks a step before it (the lines of those
    steps cannot be written again), is reported with its path, removed, and the run starts again from
    step 0 (the same result as an uninterrupted run: every draw derives from the seed and the step).
    """
    path = store.path / "checkpoints" / CHECKPOINT
    if not path.is_file():
        return 0
    try:
        state = torch.load(path, weights_only=False, map_location=next(model.parameters()).device)
        step = int(state["step"])
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, pickle.UnpicklingError) as err:
        return _start_over(path, f"cannot be read ({type(err).__name__}: {err})")
    logged = [r["step"] for r in store.read_steps() if r["step"] < step]
    if logged != list(range(step)):
        return _start_over(path, f"is at step {step} but the step log lacks some of steps 0..{step - 1}")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    sampler.load_state_dict(json.loads(state["sampler"]))
    return step


def _start_over(path: Path, why: str) -> int:
    warnings.warn(f"checkpoint {path} {why}; the run starts again from step 0", stacklevel=3)
    path.unlink()
    return 0
