"""Provenance of a result: git state, package versions, Python, seed, torch threads, times.

Imports no torch at module level (reporting records provenance without it).
"""

from __future__ import annotations

import importlib
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from countdown_study import paths

PROVENANCE_PACKAGES = ("torch", "transformers", "numpy", "pandas", "countdown_study")
"""Packages whose versions every provenance record lists."""


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


def _torch_threads() -> int | None:
    """torch's thread count if torch is loaded (a run always loads it; reporting does not need it)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


def provenance(seed: int | None) -> dict[str, Any]:
    """What a result needs to be traced: git state, package versions, seed, torch threads, start time."""
    return {
        **git_state(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "seed": seed,
        "torch_threads": _torch_threads(),
        "started": now(),
        "finished": None,
    }
