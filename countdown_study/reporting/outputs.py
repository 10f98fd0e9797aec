"""Writing results: tables (CSV + Markdown) and figures (PNG + PDF), each with a provenance sidecar.

Everything a notebook leaves in ``results/`` goes through ``save_table`` / ``save_figure``, so every
file has a ``<name>.meta.json`` beside it saying where it came from: notebook, preset, run ids, git
SHA with a dirty flag, package versions and time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from countdown_study.paths import figures_dir, tables_dir
from countdown_study.runs.files import atomic_path, atomic_write_json, plain
from countdown_study.runs.provenance import git_state, now, package_versions


def provenance_record(**extra: Any) -> dict[str, Any]:
    """Git state, package versions and the time, plus ``extra`` (notebook, preset, run ids...)."""
    return {**git_state(), "packages": package_versions(), "written": now(), **plain(dict(extra))}


def save_table(table: pd.DataFrame, name: str, meta: Mapping[str, Any] | None = None, folder: Path | None = None,
               float_format: str = "%.4f") -> Path:  # fmt: skip
    """Write ``<name>.csv`` and ``<name>.md`` (and ``<name>.meta.json``) under ``results/tables``."""
    folder = folder or tables_dir()
    csv = folder / f"{name}.csv"
    with atomic_path(csv) as tmp:
        table.to_csv(tmp, index=False, float_format=float_format)
    with atomic_path(folder / f"{name}.md") as tmp:
        tmp.write_text(table.to_markdown(index=False, floatfmt=float_format.lstrip("%")) + "\n")
    atomic_write_json(folder / f"{name}.meta.json", provenance_record(**(meta or {})))
    return csv


def save_figure(fig, name: str, meta: Mapping[str, Any] | None = None, folder: Path | None = None) -> Path:
    """Write ``<name>.png`` and ``<name>.pdf`` (and ``<name>.meta.json``) under ``results/figures``."""
    folder = folder or figures_dir()
    png = folder / f"{name}.png"
    for suffix in (".png", ".pdf"):
        with atomic_path(folder / f"{name}{suffix}") as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=150, bbox_inches="tight")
    atomic_write_json(folder / f"{name}.meta.json", provenance_record(**(meta or {})))
    return png
