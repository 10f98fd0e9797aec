"""Provenance of a result: git state, package versions, Python, seed, the environment, times.

The environment is what can change a run's numbers besides its config and code: package versions,
Python, torch's CPU capability (the instruction set its kernels use) and thread settings, and the device
(``device``, ``device_name``: written by ``training.device.describe_device`` when a run starts on it).
None of it is in a run's id: ``environment_mismatch`` says how two records differ, so that runs of
different environments are not compared or reused silently. The memory allocator (``allocator``,
``runs.allocator``) is recorded too, but it changes no number, so it is not part of the environment.

Imports no torch at module level (reporting records provenance without it).
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import subprocess
import sys
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from countdown_study import paths
from countdown_study.runs.allocator import process_allocator

PROVENANCE_PACKAGES = ("torch", "transformers", "numpy", "tokenizers", "pandas", "countdown_study")
"""Packages whose versions every provenance record lists."""
ENVIRONMENT_PACKAGES = ("torch", "transformers", "numpy", "tokenizers", "countdown_study")
"""Packages whose versions can change a run's numbers (``environment_mismatch`` compares them)."""
ENVIRONMENT_FIELDS = (
    "python",
    "cpu_capability",
    "torch_threads",
    "torch_interop_threads",
    "device",
    "device_name",
)
"""Provenance fields besides the packages that can change a run's numbers, in the order they are named."""
NOT_RECORDED = "not recorded"
"""How ``environment_mismatch`` shows a field one of the two records lacks (it predates the field)."""


# ---------------------------------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path) -> str | None:
    """Output of a git command in ``cwd``, or None outside a repository or without git."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip()


def git_state(root: Path | None = None) -> dict[str, Any]:
    """``{"git_sha", "git_dirty"}`` of the project repository (None outside git).

    Dirty means tracked files outside ``results/`` differ from the commit: the code, not the outputs a
    study is writing (untracked files are not counted either).
    """
    cwd = root or paths.project_root()
    sha = _git("rev-parse", "HEAD", cwd=cwd)
    status = (
        _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results", cwd=cwd)
        if sha
        else None
    )
    return {"git_sha": sha, "git_dirty": None if status is None else bool(status)}


def package_versions(packages: tuple[str, ...] = PROVENANCE_PACKAGES) -> dict[str, str | None]:
    """Version of each package: its installed metadata, else its module's ``__version__``, else None.

    The fallback covers running from a source checkout that was never installed.
    """
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            try:
                versions[name] = getattr(importlib.import_module(name), "__version__", None)
            except ImportError:
                versions[name] = None
    return versions


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def torch_settings() -> dict[str, Any]:
    """torch's CPU capability (``AVX2``, ``AVX512``, ...) and its intra- and inter-op thread counts, if
    torch is loaded (a run always loads it; reporting does not need it), else None each."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"cpu_capability": None, "torch_threads": None, "torch_interop_threads": None}
    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
    }


def provenance(seed: int | None) -> dict[str, Any]:
    """What a result needs to be traced: git state, package versions, seed, torch's settings, start time."""
    return {
        **git_state(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "seed": seed,
        **torch_settings(),
        "allocator": process_allocator(),
        "started": now(),
        "finished": None,
    }


# ---------------------------------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    """This process's environment in the form of a provenance record: packages, Python, torch's settings."""
    return {
        "packages": package_versions(ENVIRONMENT_PACKAGES),
        "python": platform.python_version(),
        **torch_settings(),
    }


def environment_of(record: dict[str, Any]) -> dict[str, Any]:
    """The environment of a provenance record, flat: ``ENVIRONMENT_PACKAGES`` by name, then
    ``ENVIRONMENT_FIELDS``; what the record lacks or holds as None is left out."""
    packages = record.get("packages") or {}
    flat = {name: packages.get(name) for name in ENVIRONMENT_PACKAGES}
    flat.update({name: record.get(name) for name in ENVIRONMENT_FIELDS})
    return {name: value for name, value in flat.items() if value is not None}


def environment_mismatch(
    prov_a: dict[str, Any], prov_b: dict[str, Any], keys: tuple[str, ...] | None = None
) -> list[str]:
    """How the environments of two provenance records differ: ``"<key>: <a> vs <b>"`` per differing key,
    empty when they agree.

    Only what at least one of them records is compared; a key one of them lacks (a record older than
    the key) shows as ``not recorded`` on that side. ``keys`` limits the comparison to those keys.
    """
    env_a, env_b = environment_of(prov_a), environment_of(prov_b)
    names = [*ENVIRONMENT_PACKAGES, *ENVIRONMENT_FIELDS]
    return [
        f"{name}: {env_a.get(name, NOT_RECORDED)} vs {env_b.get(name, NOT_RECORDED)}"
        for name in names
        if (keys is None or name in keys)
        and (name in env_a or name in env_b)
        and env_a.get(name) != env_b.get(name)
    ]


def environments_differ(prov_a: dict[str, Any], prov_b: dict[str, Any]) -> bool:
    """Whether a key that both records hold differs (``environment_mismatch`` without the keys one of
    them predates: a record that lacks a key is no evidence of another environment)."""
    shared = tuple(environment_of(prov_a).keys() & environment_of(prov_b).keys())
    return bool(environment_mismatch(prov_a, prov_b, keys=shared))


# ---------------------------------------------------------------------------------------------------
# Clean provenance
# ---------------------------------------------------------------------------------------------------

ALLOW_DIRTY = "COUNTDOWN_STUDY_ALLOW_DIRTY"
"""Environment variable: ``1`` lets ``check_clean_tree`` warn instead of refusing (the run's
``provenance.json`` still records ``git_dirty: true``)."""


class DirtyTreeError(RuntimeError):
    """A run for the committed results asked for from a tree whose code differs from its commit."""


def changed_files(root: Path | None = None) -> list[str]:
    """The tracked files outside ``results/`` that differ from the commit, staged or not (what makes
    ``git_state`` dirty), relative to the repository; empty outside git."""
    status = _git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results",
        cwd=root or paths.project_root(),
    )  # fmt: skip
    return [line.split(maxsplit=1)[1] for line in (status or "").splitlines() if line.strip()]  # "XY path"


def check_clean_tree(what: str, root: Path | None = None) -> None:
    """Refuse ``what`` (a run whose results feed committed tables) when the project's code differs from its
    commit: ``DirtyTreeError`` naming how many files changed and the way out. With ``ALLOW_DIRTY`` set to
    ``1``, a ``UserWarning`` saying the same instead. Outside git nothing is checked."""
    changed = changed_files(root)
    if not changed:
        return
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    message = (
        f"{what}: the code differs from its commit in {len(changed)} tracked files ({shown}); commit them "
        f"first, or set {ALLOW_DIRTY}=1 to make the run anyway with git_dirty recorded in its provenance"
    )
    if os.environ.get(ALLOW_DIRTY) == "1":
        warnings.warn(f"DIRTY TREE: {message}", stacklevel=2)
        return
    raise DirtyTreeError(message)


def dirty_provenance_warnings(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line when some of ``records`` (run id -> ``provenance.json``) were made from a dirty tree
    (``git_dirty``): how many of all, at how many commits, and the first few ids; empty when none was."""
    dirty = sorted(run for run, record in records.items() if record.get("git_dirty"))
    if not dirty:
        return []
    commits = {records[run].get("git_sha") for run in dirty}
    shown = ", ".join(dirty[:5]) + (", ..." if len(dirty) > 5 else "")
    return [
        f"{len(dirty)} of {len(records)} finished runs were made from a tree with uncommitted code changes "
        f"(git_dirty in provenance.json; {len(commits)} commits): {shown}; re-run them from a clean commit "
        "before their tables are final"
    ]


TRAINING_RECORDS = ("sft.json", "teacher.json")
"""The files in which a shipped checkpoint records how it was trained (``git_sha``, ``git_dirty``)."""
REPRODUCED = "reproduced"
"""The key of a training record holding a re-make of the checkpoint (``training.reproduce``): the re-making
run's ``git_sha`` and ``git_dirty``, and whether its weights are ``identical`` to the shipped ones."""


def clean_remake(record: Mapping[str, Any]) -> bool:
    """Whether a training record holds a re-make from a clean tree whose weights are bit-identical."""
    remade = record.get(REPRODUCED)
    return isinstance(remade, dict) and remade.get("identical") is True and remade.get("git_dirty") is False


def shipped_dirty_warnings(checkpoints: Path) -> list[str]:
    """One line per shipped checkpoint (a folder of ``checkpoints``) whose training record
    (``TRAINING_RECORDS``) says it was trained from a tree with uncommitted code changes: every run that
    starts from it inherits that, and training it again from a clean commit gives it another digest, so
    another id to every such run, unless that training gave the same weights. None for a checkpoint re-made
    bit-identical from a clean commit (``clean_remake``); a re-make that differs is named in the line."""
    lines = []
    for folder in sorted(p for p in Path(checkpoints).iterdir() if p.is_dir()):
        for name in TRAINING_RECORDS:
            try:
                record = json.loads((folder / name).read_text())
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(record, dict) and record.get("git_dirty") and not clean_remake(record):
                sha = str(record.get("git_sha") or "unknown")[:12]
                remade = record.get(REPRODUCED)
                tried = (
                    f"; its re-make from {str(remade.get('git_sha'))[:12]} differs in "
                    f"{len(remade.get('differing') or [])} tensors"
                    if isinstance(remade, dict) and remade.get("identical") is False
                    else " (`--reproduce` of the command that trained it checks whether a clean commit makes the "
                    "same weights)"
                )
                lines.append(
                    f"the shipped checkpoint {folder.name} was trained from a tree with uncommitted code changes "
                    f"({name}: git_dirty at {sha}){tried}; the runs that start from it inherit this, and "
                    "training it again from a clean commit to other weights changes its digest and so their run ids"
                )
    return lines
