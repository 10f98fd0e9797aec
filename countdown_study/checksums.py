"""SHA-256 checksums of weights, recorded beside them when written and checked whenever they are read.

A file ``<dir>/last.pt`` has its digest in ``<dir>/last.pt.sha256.json``; a ``save_pretrained`` folder
``<dir>/final/`` has one digest per file in ``<dir>/final.sha256.json``::

    {"sha256": {"final/config.json": "<hex>", "final/model.safetensors": "<hex>", ...}}

Names are relative to the sidecar's folder. ``runs.files.write_checksums`` writes a sidecar (atomically,
after the weights); reading and checking live here, in the standard library alone, so that every layer
that loads weights (``policy``, ``training``, ``runs``) checks them the same way.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SIDECAR_SUFFIX = ".sha256.json"
"""Suffix of the file beside a checkpoint (or a weights folder) that records its SHA-256."""


class ChecksumError(ValueError):
    """Weights whose bytes differ from the SHA-256 recorded when they were written, or have none recorded."""


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(target: str | Path) -> Path:
    """Where the checksums of ``target`` (a file or a folder) are recorded: ``<target>.sha256.json``."""
    target = Path(target)
    return target.with_name(target.name + SIDECAR_SUFFIX)


def sidecar_target(sidecar: str | Path) -> Path:
    """The file or folder a sidecar records (inverse of ``sidecar_path``)."""
    sidecar = Path(sidecar)
    return sidecar.with_name(sidecar.name.removesuffix(SIDECAR_SUFFIX))


def _files(target: Path) -> list[Path]:
    """``target`` itself when it is a file, else every file under it, sorted."""
    return [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())


def digests(target: str | Path) -> dict[str, str]:
    """SHA-256 of a file, or of every file under a folder, by name relative to ``target``'s folder."""
    target = Path(target)
    return {f.relative_to(target.parent).as_posix(): sha256_file(f) for f in _files(target)}


def recorded_digests(target: str | Path) -> dict[str, str] | None:
    """The digests recorded for ``target`` (None: no sidecar); a garbled sidecar raises ``ChecksumError``."""
    sidecar = sidecar_path(target)
    if not sidecar.is_file():
        return None
    try:
        recorded = json.loads(sidecar.read_text()).get("sha256")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        raise ChecksumError(f"{sidecar}: unreadable checksums ({type(err).__name__})") from err
    if not isinstance(recorded, dict) or not all(isinstance(v, str) for v in recorded.values()):
        raise ChecksumError(f"{sidecar}: unreadable checksums (no name -> SHA-256 table)")
    return recorded


def _within(file: Path, target: Path) -> bool:
    resolved, root = file.resolve(), target.resolve()
    return resolved == root or root in resolved.parents


def checksum_problems(target: str | Path) -> list[str]:
    """One line per file of ``target`` that is missing, changed or unrecorded, naming it (empty: intact,
    or nothing recorded for it)."""
    target = Path(target)
    sidecar = sidecar_path(target)
    try:
        recorded = recorded_digests(target)
    except ChecksumError as err:
        return [str(err)]
    if recorded is None:
        return []
    problems = []
    for name, digest in sorted(recorded.items()):
        file = target.parent / name
        if not _within(file, target):
            problems.append(f"{sidecar}: names {name!r}, which lies outside {target}")
        elif not file.is_file():
            problems.append(f"{file}: missing (its SHA-256 is recorded in {sidecar})")
        elif sha256_file(file) != digest:
            problems.append(f"{file}: changed since it was written (SHA-256 differs from {sidecar})")
    present = {f.relative_to(target.parent).as_posix() for f in _files(target)} if target.exists() else set()
    for name in sorted(present - set(recorded)):
        problems.append(f"{target.parent / name}: not among the files recorded in {sidecar}")
    return problems


def check_checksums(target: str | Path, required: bool = True) -> bool:
    """Raise ``ChecksumError`` naming the files of ``target`` that differ from their recorded SHA-256.

    ``required``: weights without a sidecar are refused too (they cannot be checked); otherwise they pass
    unchecked. Returns whether a record was checked.
    """
    target = Path(target)
    if recorded_digests(target) is None:
        if required:
            raise ChecksumError(f"{target} has no recorded SHA-256 ({sidecar_path(target).name} is missing)")
        return False
    problems = checksum_problems(target)
    if problems:
        raise ChecksumError("; ".join(problems))
    return True
