"""Resumable checkpoints of an RLOO run: weights, optimizer and sampler state after a step, atomic.

A killed run resumes from its last checkpoint and ends with the same results as an uninterrupted one
(every draw derives from the run seed and the step, never from state the checkpoint lacks).

Every checkpoint (RLOO and SFT) holds tensors and plain containers only (the sampler's state as JSON
text, the RNG state as a tensor), has finite weights, and has its SHA-256 recorded beside it after it is
written (``checksums``). Reading one (``read_checkpoint``) checks the SHA-256 first, then loads with
``weights_only=True``, so a file that is not what was written is never unpickled, and one that holds
other objects runs no code.
"""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import torch

from countdown_study.checksums import ChecksumError, check_checksums, sidecar_path
from countdown_study.runs.files import atomic_path, write_checksums
from countdown_study.runs.store import RunStore
from countdown_study.samplers import Sampler
from countdown_study.training.finite import check_finite_weights

CHECKPOINT = "last.pt"
"""File name of an RLOO run's resumable checkpoint under ``checkpoints/``."""


class UnreadableCheckpointError(ValueError):
    """A checkpoint that cannot be used: torn, foreign, without its step, or whose bytes differ from (or
    lack) its recorded SHA-256. A run's own such checkpoint is removed and the run starts over."""


class UnsafeCheckpointError(ValueError):
    """A checkpoint whose bytes match their record but that holds objects other than tensors and plain
    containers: refused unread (``weights_only``), never removed or started over silently."""


def write_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file beside ``path``, then ``os.replace``: whole or absent; then its
    SHA-256 beside it (``runs.files.write_checksums``).

    Weights (``state["model"]``) that are not finite are refused before anything is written. A failed
    write removes its temporary file and leaves the previous checkpoint as it was. Every stage's
    checkpoints (RLOO, SFT) are written through it.
    """
    if "model" in state:
        check_finite_weights(state["model"], f"checkpoint {path} after {state.get('step')} steps")
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    write_checksums(path)


def _refusal(err: Exception) -> str:
    """The line of torch's ``weights_only`` refusal that names what was refused."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    named = [line for line in lines if "GLOBAL" in line or "Unsupported" in line]
    return (named or lines or [type(err).__name__])[0]


def read_checkpoint(path: Path, map_location=None) -> dict:
    """The state in ``path``: its recorded SHA-256 checked, then ``torch.load(..., weights_only=True)``.

    Raises ``UnreadableCheckpointError`` (the file is not what was written, or has no record, or cannot
    be read) or ``UnsafeCheckpointError`` (what was recorded holds objects ``weights_only`` refuses),
    each naming the path.
    """
    try:
        check_checksums(path)
    except ChecksumError as err:
        raise UnreadableCheckpointError(f"checkpoint {path} cannot be read ({err})") from err
    try:
        state = torch.load(path, weights_only=True, map_location=map_location)
    except pickle.UnpicklingError as err:
        raise UnsafeCheckpointError(
            f"checkpoint {path} refused: it holds objects other than tensors and plain containers "
            f"({_refusal(err)}); it was not written by this package; delete it to start the run over"
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise UnreadableCheckpointError(
            f"checkpoint {path} cannot be read ({type(err).__name__}: {err})"
        ) from err
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise UnreadableCheckpointError(f"checkpoint {path} cannot be read (it holds no step count)")
    return state


def remove_checkpoint(path: Path) -> None:
    """Delete a checkpoint and its recorded SHA-256."""
    path.unlink(missing_ok=True)
    sidecar_path(path).unlink(missing_ok=True)


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

    A checkpoint that cannot be read or differs from its recorded SHA-256 (``read_checkpoint``), or
    whose run's step log lacks a step before it (the lines of those steps cannot be written again), is
    reported with its path, removed, and the run starts again from step 0 (the same result as an
    uninterrupted run: every draw derives from the seed and the step). One holding objects other than
    tensors is refused with ``UnsafeCheckpointError``.
    """
    path = store.path / "checkpoints" / CHECKPOINT
    if not path.is_file():
        return 0
    try:
        state = read_checkpoint(path, map_location=next(model.parameters()).device)
    except UnreadableCheckpointError as err:
        return _start_over(path, str(err))
    step = state["step"]
    logged = [r["step"] for r in store.read_steps() if r["step"] < step]
    if logged != list(range(step)):
        why = f"checkpoint {path} is at step {step} but the step log lacks some of steps 0..{step - 1}"
        return _start_over(path, why)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    sampler.load_state_dict(json.loads(state["sampler"]))
    return step


def _start_over(path: Path, why: str) -> int:
    warnings.warn(f"{why}; it is removed and the run starts again from step 0", stacklevel=3)
    remove_checkpoint(path)
    return 0
