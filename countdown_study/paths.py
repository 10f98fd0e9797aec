"""The one place for paths: project root, results, run store, paper, shipped checkpoints.

Every path can be moved with an environment variable, so notebooks, tests and CI never hard-code
relative paths.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed package folder."""

CHECKPOINTS_DIR = PACKAGE_DIR / "checkpoints"
"""The shipped checkpoints (package data): one folder each, with the record of how it was trained."""
EMBEDDED_CHECKPOINT_DIR = CHECKPOINTS_DIR / "embedded"
"""The shipped tiny SFT policy (package data)."""


def project_root() -> Path:
    """The project root: ``$COUNTDOWN_STUDY_ROOT``, else the repository holding the package, else the cwd."""
    env = os.environ.get("COUNTDOWN_STUDY_ROOT")
    if env:
        return Path(env).resolve()
    candidate = PACKAGE_DIR.parent
    if (candidate / "pyproject.toml").exists():
        return candidate
    return Path.cwd().resolve()


def results_dir() -> Path:
    """Where tables, figures and runs go: ``$COUNTDOWN_STUDY_RESULTS`` or ``<root>/results``."""
    env = os.environ.get("COUNTDOWN_STUDY_RESULTS")
    return Path(env).resolve() if env else project_root() / "results"


PAPER_PRESET = "full"
"""The preset whose tables, figures, executed notebooks and runs are the committed results (``<results>/``)."""


def preset_dir(preset: str = PAPER_PRESET) -> Path:
    """Where a study preset's tables, figures, executed notebooks and runs go: ``<results>`` for the full
    preset, ``<results>/presets/<preset>`` (ignored by git) for any other, so a quick or tiny study never
    overwrites the paper's results nor leaves untracked files beside them."""
    return results_dir() if preset == PAPER_PRESET else results_dir() / "presets" / preset


def runs_dir(preset: str = PAPER_PRESET) -> Path:
    """The run store of a study preset: ``<preset_dir>/runs`` (``<results>/runs`` for the full preset, and
    for runs made outside a study: ``countdown-study train|sft|teacher``)."""
    return preset_dir(preset) / "runs"


def remake_runs_dir() -> Path:
    """Where ``--reproduce`` trains a shipped checkpoint again (``training.reproduce``):
    ``<results>/runs.reproduce`` (git-ignored), apart from ``runs_dir()``, which holds the shipped run under
    the same id."""
    return runs_dir().with_name("runs.reproduce")


def tables_dir(preset: str = PAPER_PRESET) -> Path:
    """Tables (CSV and Markdown): ``<preset_dir>/tables``."""
    return preset_dir(preset) / "tables"


def figures_dir(preset: str = PAPER_PRESET) -> Path:
    """Figures (PNG and PDF): ``<preset_dir>/figures``."""
    return preset_dir(preset) / "figures"


def staging_dir(preset: str, notebook: str) -> Path:
    """Where a notebook run by the pipeline writes its tables and figures until it succeeds:
    ``<preset_dir>/.staging/<notebook>`` (moved into place at the end, removed if it fails)."""
    return preset_dir(preset) / ".staging" / notebook


def executed_dir(preset: str = PAPER_PRESET) -> Path:
    """Executed notebooks: ``<preset_dir>/executed``."""
    return preset_dir(preset) / "executed"


def notebooks_dir() -> Path:
    """The ordered study notebooks: ``<root>/notebooks``."""
    return project_root() / "notebooks"


def readme_path() -> Path:
    """The project's README, whose results table ``countdown-study paper --readme`` rewrites."""
    return project_root() / "README.md"


def paper_dir() -> Path:
    """The paper, rebuilt from ``results/`` alone: ``<root>/paper``."""
    return project_root() / "paper"


def display_path(path: Path) -> str:
    """``path`` as printed for a reader: relative to the project root (``results/presets/quick/tables``), under
    ``$COUNTDOWN_STUDY_RESULTS`` when the results folder was moved there, else as it is."""
    path = Path(path).resolve()
    if os.environ.get("COUNTDOWN_STUDY_RESULTS") and path.is_relative_to(results_dir()):
        return "$COUNTDOWN_STUDY_RESULTS/" + path.relative_to(results_dir()).as_posix()
    if path.is_relative_to(project_root()):
        return path.relative_to(project_root()).as_posix()
    return str(path)
