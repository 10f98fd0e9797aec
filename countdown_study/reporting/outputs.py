"""Writing results: tables (CSV + Markdown) and figures (PNG + PDF), each with a provenance sidecar.

Everything a notebook leaves in ``results/`` goes through ``save_table`` / ``save_figure``, so every
file has a ``<name>.meta.json`` beside it saying where it came from: notebook, preset, run ids, git
SHA with a dirty flag, package versions and time. In a Jupyter kernel (a notebook, also under
papermill) ``save_figure`` also shows the figure in the notebook, as a PNG at ``DISPLAY_DPI``.

Imports no torch (nor IPython: the notebook display is looked up only inside a running kernel).
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from countdown_study.paths import PAPER_PRESET, figures_dir, staging_dir, tables_dir
from countdown_study.runs.files import atomic_path, atomic_write_json, atomic_write_text, plain
from countdown_study.runs.provenance import git_state, now, package_versions

FILE_DPI = 150
"""Resolution of the PNG written to ``results/figures``."""

DISPLAY_DPI = 80
"""Resolution of the PNG shown in a notebook (keeps an executed notebook well under a megabyte)."""

TEXT_COLUMNS = ("report",)
"""Columns read back as text: report numbers such as ``000`` are names, not integers."""


def read_table(path: Path) -> pd.DataFrame:
    """A saved table's CSV, with ``TEXT_COLUMNS`` kept as text."""
    return pd.read_csv(path, dtype=dict.fromkeys(TEXT_COLUMNS, str))


def provenance_record(**extra: Any) -> dict[str, Any]:
    """Git state, package versions and the time, plus ``extra`` (notebook, preset, run ids...)."""
    return {**git_state(), "packages": package_versions(), "written": now(), **plain(dict(extra))}


def save_table(table: pd.DataFrame, name: str, meta: Mapping[str, Any] | None = None, folder: Path | None = None,
               float_format: str = "%.4f") -> Path:  # fmt: skip
    """Write ``<name>.csv`` and ``<name>.md`` (and ``<name>.meta.json``) under the tables folder of
    ``meta["preset"]`` (``paths.tables_dir``: ``results/tables`` for the full preset), or ``folder``."""
    folder = folder or _destination("tables", meta)
    csv = folder / f"{name}.csv"
    with atomic_path(csv) as tmp:
        table.to_csv(tmp, index=False, float_format=float_format)
    with atomic_path(folder / f"{name}.md") as tmp:
        tmp.write_text(table.to_markdown(index=False, floatfmt=float_format.lstrip("%")) + "\n")
    atomic_write_json(folder / f"{name}.meta.json", provenance_record(**(meta or {})))
    return csv


def save_figure(
    fig,
    name: str,
    meta: Mapping[str, Any] | None = None,
    folder: Path | None = None,
    show: bool | None = None,
) -> Path:
    """Write ``<name>.png`` and ``<name>.pdf`` (and ``<name>.meta.json``) under the figures folder of
    ``meta["preset"]`` (``paths.figures_dir``: ``results/figures`` for the full preset), or ``folder``.

    ``show`` displays the figure in the notebook (a PNG at ``DISPLAY_DPI``); by default it does so
    exactly when running inside a Jupyter kernel, so scripts and tests stay headless. A shown figure is
    also closed in pyplot, if pyplot tracks it, so the kernel does not show it a second time.
    Returns the PNG's path.
    """
    folder = folder or _destination("figures", meta)
    png = folder / f"{name}.png"
    for suffix in (".png", ".pdf"):
        with atomic_path(folder / f"{name}{suffix}") as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=FILE_DPI, bbox_inches="tight")
    record = provenance_record(**(meta or {}))
    atomic_write_json(folder / f"{name}.meta.json", {**record, "caption": caption(fig)})
    if in_notebook() if show is None else show:
        show_figure(fig)
    return png


def caption(fig) -> str:
    """A figure's caption from its own titles: the figure title, else its panels' titles joined."""
    title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    panels = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    return title or "; ".join(dict.fromkeys(panels))


def headline_contrasts(folder: Path, notebooks: list[str], metric: str = "pass@1") -> list[str]:
    """One line per paired contrast of ``metric`` that ``notebooks`` saved in ``folder`` (a tables folder):
    the difference, its seed-aware interval and the verdict, for a summary at the end of a run."""
    lines = []
    for meta_file in sorted(folder.glob("*_paired.meta.json")):
        if json.loads(meta_file.read_text()).get("notebook") not in notebooks:
            continue
        table = read_table(meta_file.with_name(meta_file.name.replace(".meta.json", ".csv")))
        for row in table[table["metric"] == metric].itertuples(index=False):
            verdict = getattr(row, "verdict", "")
            lines.append(
                f"{row.contrast:55s} {metric} {row.diff:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}] {verdict}"
            )
    return lines


def write_figure_index(folder: Path | None = None) -> Path:
    """``README.md`` in a figures folder: every figure with its caption, notebook and preset (from its
    ``.meta.json``), so a reader can find a figure without opening the notebooks."""
    folder = folder or figures_dir()
    lines = [
        "# Figures",
        "",
        "Generated from each figure's `.meta.json` (`reporting.outputs.write_figure_index`).",
        "",
    ]
    lines += ["| figure | caption | notebook | preset |", "|---|---|---|---|"]
    for meta_file in sorted(folder.glob("*.meta.json")):
        name = meta_file.name.removesuffix(".meta.json")
        meta = json.loads(meta_file.read_text())
        lines.append(f"| [{name}]({name}.png) | {meta.get('caption', '')} | {meta.get('notebook', '')} | "
                     f"{meta.get('preset', '')} |")  # fmt: skip
    target = folder / "README.md"
    atomic_write_text(target, "\n".join(lines) + "\n")
    return target


STAGE_ENV = "COUNTDOWN_STUDY_STAGE"
"""Set (to 1) in the kernels of ``countdown-study run``: a notebook's outputs go to its staging folder
(``paths.staging_dir``) and are moved into place only when the whole notebook succeeds."""


def _destination(kind: str, meta: Mapping[str, Any] | None) -> Path:
    """``tables`` or ``figures`` folder of ``meta``'s preset, or the notebook's staging folder."""
    preset, notebook = _preset(meta), (meta or {}).get("notebook")
    if os.environ.get(STAGE_ENV) and notebook:
        return staging_dir(preset, str(notebook)) / kind
    return tables_dir(preset) if kind == "tables" else figures_dir(preset)


def _preset(meta: Mapping[str, Any] | None) -> str:
    """The study preset a result belongs to (``meta["preset"]``; the paper's when unnamed)."""
    return str((meta or {}).get("preset", PAPER_PRESET))


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (a notebook, interactive or under papermill)."""
    ipython = sys.modules.get("IPython")  # never imported here: a kernel has already loaded it
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def show_figure(fig, dpi: int = DISPLAY_DPI) -> None:
    """Display ``fig`` in the running notebook as one PNG output, then close it in pyplot if tracked."""
    from IPython.display import Image, display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    display(Image(data=buffer.getvalue(), format="png"))
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)
