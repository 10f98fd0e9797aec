"""Files of the run store and of results/: canonical JSON of configs, atomic writes, weights' checksums.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``), so a crash
leaves either the old file or the new one, never a partial one. Imports no torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from countdown_study.checksums import digests, sidecar_path


def _file_mode() -> int:
    mask = os.umask(0o022)  # read the process's umask (set back at once)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()
"""Mode of every file written atomically: what ``open`` gives a new file under this process's umask."""

# ---------------------------------------------------------------------------------------------------
# Canonical config and run id
# ---------------------------------------------------------------------------------------------------


OMIT_AT_DEFAULT = {"omit_at_default": True}
"""Metadata of a config field added after runs exist: ``plain`` leaves it out while it holds its default,
so configs that do not use it keep their canonical JSON and run ids."""


def _at_default(f: dataclasses.Field, value: Any) -> bool:
    if not f.metadata.get("omit_at_default"):
        return False
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return value == default


def plain(value: Any) -> Any:
    """A JSON-ready copy: dataclasses to dicts (fields marked ``OMIT_AT_DEFAULT`` left out at their
    default), tuples and sets to lists, paths to strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f for f in dataclasses.fields(value) if not _at_default(f, getattr(value, f.name))]
        return {f.name: plain(getattr(value, f.name)) for f in fields}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item"):  # numpy and torch scalars
        return value.item()
    raise TypeError(f"cannot put a {type(value).__name__} into a run config: {value!r}")


def canonical_json(config: Any) -> str:
    """The config as canonical JSON: sorted keys, no whitespace, NaN and infinities refused."""
    return json.dumps(plain(config), sort_keys=True, separators=(",", ":"), allow_nan=False)


# ---------------------------------------------------------------------------------------------------
# Atomic writes
# ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    The file gets the mode a plain ``open`` would give it (``0o666`` less the umask: readable by the
    group), not the private ``0o600`` of a temporary file. A kill between the two leaves a
    ``.<name>.*.tmp`` file behind; ``remove_temporaries`` clears them.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def remove_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files ``atomic_path`` left in ``folder`` (and below) when a process was killed."""
    left = [p for p in Path(folder).rglob(".*.tmp") if p.is_file()]
    for path in left:
        path.unlink(missing_ok=True)
    return left


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically (NaN is written as ``NaN``, as Python and pandas read it)."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_checksums(target: str | Path) -> Path:
    """Record the SHA-256 of ``target`` (a checkpoint file or a weights folder) in its sidecar
    (``checksums.sidecar_path``), atomically; call it after the weights are written. Returns the sidecar."""
    sidecar = sidecar_path(target)
    atomic_write_json(sidecar, {"sha256": digests(target)})
    return sidecar
