"""Re-making a shipped checkpoint from a clean commit, and recording whether its weights came out the same.

A shipped checkpoint (``checkpoints/<name>``) says in its training record (``sft.json``, ``teacher.json``)
which commit trained it and whether that tree had uncommitted changes (``git_dirty``); every run that starts
from it inherits that. Training it again (``countdown-study sft --reproduce``, ``countdown-study teacher
--reproduce``) with the recorded config, from a clean commit, into another run store, then storing the result
the way it was shipped (the same ``ship`` into a scratch folder), gives weights that ``compare_shipped``
compares tensor by tensor with the shipped ones. ``record_reproduction`` writes the finding into the training
record under ``REPRODUCED``: the re-making run's commit, whether its tree was clean, its packages, and whether
every tensor is bit-identical. The weights and their digest are untouched, so no run id changes; ``runs
verify`` stops warning of a dirty checkpoint only where a clean re-make is bit-identical
(``runs.provenance.shipped_dirty_warnings``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from countdown_study.runs.files import atomic_write_text
from countdown_study.runs.provenance import REPRODUCED, check_clean_tree
from countdown_study.runs.store import RunStore

WEIGHTS_FILE = "model.safetensors"
"""The shipped weights ``save_pretrained`` writes (one shard at these sizes)."""


def config_difference(recorded: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """The config keys whose value differs between a checkpoint's recorded config and the one a re-make
    would train (both as JSON-ready dicts), sorted; empty when the re-make trains what was shipped."""
    normal = json.loads(json.dumps(dict(config)))  # tuples as lists, as the record holds them
    return sorted(key for key in set(recorded) | set(normal) if recorded.get(key) != normal.get(key))


def compare_shipped(remade: Path, shipped: Path) -> dict[str, Any]:
    """Two shipped folders' weights (``WEIGHTS_FILE``) tensor by tensor: ``identical`` (the same names,
    dtypes, shapes and bits), ``tensors`` (how many the shipped file holds), ``differing`` (the names that
    differ or are in one file only, sorted) and ``max_abs_diff`` (the largest difference of a tensor both
    hold with the same shape; 0.0 when none differs)."""
    ours, theirs = load_file(Path(remade) / WEIGHTS_FILE), load_file(Path(shipped) / WEIGHTS_FILE)
    differing, largest = sorted(set(ours) ^ set(theirs)), 0.0
    for name in sorted(set(ours) & set(theirs)):
        a, b = ours[name], theirs[name]
        if a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b):
            continue
        differing.append(name)
        if a.shape == b.shape:
            largest = max(largest, float((a.double() - b.double()).abs().max()))
    return {"identical": not differing, "tensors": len(theirs), "differing": sorted(differing),
            "max_abs_diff": largest}  # fmt: skip


def reproduction(store: RunStore, shipped: Path, ship: Callable[[RunStore, Path], Any]) -> dict[str, Any]:
    """The ``REPRODUCED`` record of a finished re-making run ``store`` against the checkpoint in
    ``shipped``: ``ship`` stores its weights as the checkpoint was stored (into a scratch folder), then
    ``compare_shipped``; with the run's id and its provenance (commit, clean or not, packages)."""
    with tempfile.TemporaryDirectory() as scratch:
        ship(store, Path(scratch))
        comparison = compare_shipped(Path(scratch), shipped)
    made = store.provenance()
    return {"run_id": store.run_id, "git_sha": made.get("git_sha"), "git_dirty": made.get("git_dirty"),
            "packages": made.get("packages"), "finished": made.get("finished"), **comparison}  # fmt: skip


def record_reproduction(record_file: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` into the checkpoint's training record ``record_file`` under ``REPRODUCED`` (the rest
    of the file kept as it is)."""
    info = json.loads(Path(record_file).read_text())
    atomic_write_text(Path(record_file), json.dumps({**info, REPRODUCED: dict(record)}, indent=2) + "\n")


def remake(
    name: str,
    record_file: Path,
    config: Mapping[str, Any],
    train: Callable[[], RunStore],
    ship: Callable[[RunStore, Path], Any],
    command: str,
) -> dict[str, Any]:
    """Re-make the shipped checkpoint ``name`` whose training record is ``record_file``: refuse a ``config``
    (JSON-ready) other than the recorded one, and a tree with uncommitted changes (``command`` names the
    refused command); ``train`` it, compare (``reproduction``, stored with ``ship``), write the finding into
    the record (``record_reproduction``) and return it."""
    record_file = Path(record_file)
    if not record_file.is_file():
        raise FileNotFoundError(f"{name} is not shipped ({record_file} is missing): nothing to re-make")
    changed = config_difference(json.loads(record_file.read_text())["config"], config)
    if changed:
        raise ValueError(
            f"{command} trains the config {name} was shipped with; these differ: {', '.join(changed)}"
        )
    check_clean_tree(command)
    record = reproduction(train(), record_file.parent, ship)
    record_reproduction(record_file, record)
    return record


def summary(name: str, record: Mapping[str, Any]) -> str:
    """One line on a re-make: bit-identical, or how many tensors differ and by how much at most."""
    made = (
        f"re-made from {str(record.get('git_sha'))[:12]}{' (dirty tree)' if record.get('git_dirty') else ''}"
    )
    if record["identical"]:
        return f"{name}: {made}: all {record['tensors']} tensors bit-identical to the shipped weights"
    return (
        f"{name}: {made}: {len(record['differing'])} of {record['tensors']} tensors differ from the shipped "
        f"weights (largest difference {record['max_abs_diff']:.3g})"
    )
