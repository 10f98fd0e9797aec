"""The one place for paths: project root, results, run store, paper, shipped checkpoints.

Every path can be moved with an environment variable, so notebooks, tests and CI never hard-code
relative paths.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed package folder."""

EMBEDDED_CHECKPOINT_DIR = PACKAGE_DIR / "checkpoints" / "embedded"
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


def runs_dir() -> Path:
    """The run store: ``<results>/runs``."""
    return results_dir() / "runs"


PAPER_PRESET = "full"
"""The preset whose tables, figures and executed notebooks are the committed results (``<results>/``)."""


def preset_dir(preset: str = PAPER_PRESET) -> Path:
    """Where a study preset's tables, figures and executed notebooks go: ``<results>`` for the full
    preset, ``<results>/presets/<preset>`` for any other, so a quick or tiny study never overwrites the
    paper's results (runs are shared: the run store keys them by config)."""
    return results_dir() if preset == PAPER_PRESET else results_dir() / "presets" / preset


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
