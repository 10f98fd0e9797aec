"""Writing results: tables (CSV + Markdown) and figures (PNG + PDF), each with a provenance sidecar.

Everything a notebook leaves in ``results/`` goes through ``save_table`` / ``save_figure``, so every
file has a ``<name>.meta.json`` beside it saying where it came from: notebook, preset, run ids, git
SHA with a dirty flag, package versions and time. In a Jupyter kernel (a notebook, also under
papermill) ``save_figure`` also shows the figure in the notebook, as a PNG at ``DISPLAY_DPI``.

Writing the same result again leaves every file byte-identical: figures carry no creation date or
software stamp (``FIGURE_METADATA``), and a table or figure whose bytes and description are those already
published keeps its earlier sidecar, git SHA and time included (``PROVENANCE_FIELDS``), so re-executing a
notebook whose numbers did not change changes no committed file.

Imports no torch (nor IPython: the notebook display is looked up only inside a running kernel).
"""

from __future__ import annotations

import contextlib
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

FIGURE_METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None}}
"""``savefig`` metadata per format: no software stamp in a PNG, no creation date in a PDF, so that the same
figure gives the same bytes."""

PROVENANCE_FIELDS = ("git_sha", "git_dirty", "packages", "written")
"""Sidecar fields saying when and from which code a file was written (``provenance_record``); the rest of a
sidecar describes the file (notebook, preset, run ids, caption)."""

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
    target, published = (
        (folder, folder) if folder else (_destination("tables", meta), _published("tables", meta))
    )
    files = {
        ".csv": table.to_csv(index=False, float_format=float_format).encode(),
        ".md": (table.to_markdown(index=False, floatfmt=float_format.lstrip("%")) + "\n").encode(),
    }
    write_result(target, name, files, provenance_record(**(meta or {})), published)
    return target / f"{name}.csv"


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
    target, published = (
        (folder, folder) if folder else (_destination("figures", meta), _published("figures", meta))
    )
    files = {f".{fmt}": figure_bytes(fig, fmt) for fmt in ("png", "pdf")}
    record = {**provenance_record(**(meta or {})), "caption": caption(fig)}
    write_result(target, name, files, record, published)
    if in_notebook() if show is None else show:
        show_figure(fig)
    return target / f"{name}.png"


def figure_bytes(fig, fmt: str, dpi: int = FILE_DPI) -> bytes:
    """``fig`` as a PNG or PDF file's bytes, the same bytes for the same figure (``FIGURE_METADATA``)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=dpi, bbox_inches="tight", metadata=FIGURE_METADATA[fmt])
    return buffer.getvalue()


def write_result(folder: Path, name: str, files: Mapping[str, bytes], record: Mapping[str, Any],
                 published: Path | None = None) -> None:  # fmt: skip
    """Write ``<name><suffix>`` for each of ``files`` and the sidecar ``<name>.meta.json`` into ``folder``.

    The sidecar is ``record``, or the one already in ``published`` (the folder the files end up in, by
    default ``folder``) when that holds the same bytes under the same names and a record equal to
    ``record`` but for ``PROVENANCE_FIELDS``: an unchanged result keeps its provenance.
    """
    earlier = earlier_record(published or folder, name, files, record)
    for suffix, content in files.items():
        with atomic_path(folder / f"{name}{suffix}") as tmp:
            tmp.write_bytes(content)
    atomic_write_json(folder / f"{name}.meta.json", earlier or plain(dict(record)))


def earlier_record(
    folder: Path, name: str, files: Mapping[str, bytes], record: Mapping[str, Any]
) -> dict | None:
    """The sidecar of ``name`` in ``folder`` if its files hold exactly ``files`` and it describes them as
    ``record`` does (all but ``PROVENANCE_FIELDS`` equal); otherwise None."""
    try:
        earlier = json.loads((folder / f"{name}.meta.json").read_text())
        same_bytes = all(
            (folder / f"{name}{suffix}").read_bytes() == content for suffix, content in files.items()
        )
    except (OSError, ValueError):  # missing, unreadable or not JSON: write a fresh record
        return None
    fresh = json.loads(json.dumps(plain(dict(record))))  # as it would read back from its sidecar
    return earlier if same_bytes and _description(earlier) == _description(fresh) else None


def _description(record: Mapping[str, Any]) -> dict[str, Any]:
    """A sidecar's fields but ``PROVENANCE_FIELDS``: what the file is, not when it was written."""
    return {key: value for key, value in record.items() if key not in PROVENANCE_FIELDS}


def caption(fig) -> str:
    """A figure's caption from its own titles: the figure title, else its panels' titles joined."""
    title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    panels = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    return title or "; ".join(dict.fromkeys(panels))


def written_by(meta: Mapping[str, Any], kind: str) -> list[str]:
    """Names of the ``kind`` (``tables`` or ``figures``) the notebook of ``meta`` has saved at its preset, from
    the sidecars in the folder it writes to now (its staging folder under ``countdown-study run``)."""
    folder = _destination(kind, meta)
    names = []
    for sidecar in sorted(folder.glob("*.meta.json")):
        with contextlib.suppress(OSError, ValueError):  # a sidecar being replaced or torn: not listed
            if json.loads(sidecar.read_text()).get("notebook") == meta.get("notebook"):
                names.append(sidecar.name.removesuffix(".meta.json"))
    return names


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


def _published(kind: str, meta: Mapping[str, Any] | None) -> Path:
    """The ``tables`` or ``figures`` folder of ``meta``'s preset, where a staged file ends up."""
    return tables_dir(_preset(meta)) if kind == "tables" else figures_dir(_preset(meta))


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

    display(Image(data=figure_bytes(fig, "png", dpi), format="png"))
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)
