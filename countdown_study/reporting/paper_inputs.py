"""The results the paper is built from, checked before a line of LaTeX is written.

A notebook has run for a preset when its executed copy is in ``<preset>/executed`` or any of its tables and
figures is in ``<preset>/tables`` / ``<preset>/figures``. A section whose notebook has not run gets one
sentence saying so; a section whose notebook has run needs every table and figure it shows, each whole and
well formed. Anything else is refused with a ``ResultsError``, one line naming the file and what is wrong
with it: a missing file, an unreadable or truncated CSV (a last line without its newline, a row with the
wrong number of fields, fewer rows than its ``.md`` twin), a table without rows, a column missing or
renamed, text in a number column, a headline row the prose cites that is not there, a figure that is not a
PDF, a provenance sidecar that is not JSON.

``load_results`` is the one function that reads files; the checks are small functions of a path or a
table. Imports pandas, no torch.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from countdown_study.reporting.latex import Column
from countdown_study.reporting.outputs import TEXT_COLUMNS
from countdown_study.reporting.paper_sections import (
    DEVIATION_COLUMNS,
    DEVIATION_NOTEBOOKS,
    DEVIATION_TABLES,
    SECTIONS,
    Section,
    TableSpec,
)

NUMERIC_STYLES = ("number", "signed", "count", "interval")
"""Column styles whose CSV cells must be numbers (or empty)."""


class ResultsError(ValueError):
    """A table or figure the paper needs is missing or malformed; the message names the file."""


@dataclass(frozen=True)
class Results:
    """What the paper reads from one preset's results folder, checked."""

    tables: dict[str, pd.DataFrame]
    """Every table the paper shows, by CSV stem (only those of notebooks that have run)."""
    metas: dict[str, dict]
    """The ``.meta.json`` sidecar of each of those tables that has one."""
    figures: dict[str, Path]
    """Every figure PDF the paper shows, by stem."""
    not_run: frozenset[str]
    """Notebooks (``"05"``) that have not run for this preset: their sections are one sentence."""


# ----------------------------------------------------------------------------------------------------
# what each notebook's sections need


def required_columns(spec: TableSpec) -> list[str]:
    """The CSV columns a table must have: those its columns read, less the ones an older table may lack."""
    shown = (*spec.columns, spec.lead) if spec.lead is not None else spec.columns
    keys = [key for column in shown for key in column.csv_keys]
    return [key for key in dict.fromkeys(keys) if key not in spec.optional]


def numeric_columns(columns: Iterable[Column]) -> list[str]:
    """The CSV columns whose cells must be numbers: those shown as numbers, counts or intervals."""
    return [key for column in columns if column.style in NUMERIC_STYLES for key in column.csv_keys]


def notebook_tables(notebook: str) -> dict[str, tuple[list[str], list[str]]]:
    """Every table the paper reads from ``notebook``: name -> (required columns, number columns)."""
    needed = {
        spec.name: (required_columns(spec), numeric_columns(spec.columns))
        for section in SECTIONS
        if section.notebook == notebook
        for spec in section.tables
    }
    for report, name in DEVIATION_TABLES.items():
        if DEVIATION_NOTEBOOKS[report] == notebook:
            needed[name] = (list(DEVIATION_COLUMNS), [])
    return needed


def conditional_tables() -> set[str]:
    """The tables a notebook writes only in some studies (``TableSpec.absent``): left out, not refused,
    where their file is missing, and read where it holds a header alone."""
    return {spec.name for section in SECTIONS for spec in section.tables if spec.absent}


def notebook_figures(notebook: str) -> list[str]:
    """Every figure the paper shows from ``notebook``."""
    return [fig.name for s in SECTIONS if s.notebook == notebook for fig in s.figures]


def notebooks() -> list[str]:
    """The notebooks the paper reads from, in order."""
    return list(dict.fromkeys(s.notebook for s in SECTIONS))


def has_run(notebook: str, tables_dir: Path, figures_dir: Path, executed_dir: Path) -> bool:
    """Whether ``notebook`` has run for this preset: its executed copy or any of its outputs is there."""
    if executed_dir.is_dir() and any(executed_dir.glob(f"{notebook}_*.ipynb")):
        return True
    outputs = [tables_dir / f"{n}.csv" for n in notebook_tables(notebook)]
    outputs += [figures_dir / f"{n}.pdf" for n in notebook_figures(notebook)]
    return any(path.exists() for path in outputs)


# ----------------------------------------------------------------------------------------------------
# one table


def read_csv_checked(path: Path, empty_ok: bool = False) -> pd.DataFrame:
    """``path`` read in full, or a ``ResultsError`` naming it: missing, not text, cut inside its last line,
    ragged or without rows (unless ``empty_ok``: a header alone is then an empty table). Columns
    ``outputs.TEXT_COLUMNS`` stay text."""
    if not path.is_file():
        raise ResultsError(f"{path} is missing")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ResultsError(f"{path} is not a CSV table (not UTF-8 text: {error.reason})") from None
    if not text.strip():
        raise ResultsError(f"{path} is empty")
    if not text.endswith("\n"):
        raise ResultsError(f"{path} is truncated: its last line has no end")
    rows = list(csv.reader(io.StringIO(text)))
    width = len(rows[0])
    ragged = next((i for i, row in enumerate(rows[1:], start=2) if len(row) != width), None)
    if ragged is not None:
        raise ResultsError(
            f"{path} is malformed: line {ragged} has {len(rows[ragged - 1])} fields, its header {width}"
        )
    if len(rows) < 2 and not empty_ok:
        raise ResultsError(f"{path} has a header and no rows")
    return pd.read_csv(io.StringIO(text), dtype=dict.fromkeys(TEXT_COLUMNS, str))


def check_rows_against_markdown(path: Path, rows: int) -> None:
    """A table saved by ``outputs.save_table`` has a Markdown twin with the same rows: fewer rows in the
    CSV mean it was cut at a line's end."""
    twin = path.with_suffix(".md")
    if not twin.is_file():
        return
    lines = [line for line in twin.read_text(errors="replace").splitlines() if line.startswith("|")]
    expected = max(0, len(lines) - 2)  # header and separator
    if lines and expected != rows:
        raise ResultsError(f"{path} is truncated: {rows} rows where {twin.name} has {expected}")


def check_columns(path: Path, table: pd.DataFrame, required: Sequence[str], numeric: Sequence[str]) -> None:
    """A ``ResultsError`` naming ``path`` when a required column is missing or a number column holds text."""
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise ResultsError(f"{path} lacks the column(s) {', '.join(missing)} the paper shows")
    for column in numeric:
        if column not in table.columns:
            continue
        values = table[column]
        parsed = pd.to_numeric(values, errors="coerce")
        bad = values[parsed.isna() & values.notna() & (values.astype(str).str.strip() != "")]
        if len(bad):
            raise ResultsError(f"{path}: column {column} holds {str(bad.iloc[0])!r}, not a number")


def check_rows(path: Path, table: pd.DataFrame, rows: Sequence[tuple[str, str]]) -> None:
    """A ``ResultsError`` naming ``path`` when a (contrast, metric) row the prose cites is not in it."""
    if not rows:
        return
    present = set(zip(table["contrast"], table["metric"], strict=True))
    missing = [f"{c} at {m}" for c, m in rows if (c, m) not in present]
    if missing:
        raise ResultsError(f"{path} has no row {missing[0]!r}, which the paper cites")


def read_table_checked(
    path: Path,
    required: Sequence[str],
    numeric: Sequence[str],
    rows: Sequence[tuple[str, str]] = (),
    empty_ok: bool = False,
) -> pd.DataFrame:
    """``read_csv_checked``, then ``check_columns``, ``check_rows_against_markdown`` and ``check_rows``."""
    table = read_csv_checked(path, empty_ok)
    check_columns(path, table, required, numeric)
    check_rows_against_markdown(path, len(table))
    check_rows(path, table, rows)
    return table


def read_meta(path: Path) -> dict | None:
    """A table's ``.meta.json`` sidecar, None where there is none; a ``ResultsError`` if it is not JSON."""
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path} is not a JSON sidecar ({error})") from None
    if not isinstance(meta, dict):
        raise ResultsError(f"{path} is not a JSON object")
    return meta


def check_figure(path: Path) -> Path:
    """``path`` if it is a PDF, else a ``ResultsError`` naming it (missing, empty or not a PDF)."""
    if not path.is_file():
        raise ResultsError(f"{path} is missing")
    with path.open("rb") as handle:
        if handle.read(5) != b"%PDF-":
            raise ResultsError(f"{path} is not a PDF")
    return path


# ----------------------------------------------------------------------------------------------------
# the results folder


def load_results(
    tables_dir: Path,
    figures_dir: Path,
    executed_dir: Path,
    cited: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> Results:
    """Every table and figure of the notebooks that have run, checked (``ResultsError`` on the first
    problem); ``cited``: table -> the (contrast, metric) rows the prose cites by name."""
    tables, metas, figures, not_run = {}, {}, {}, set()
    conditional = conditional_tables()
    for notebook in notebooks():
        if not has_run(notebook, tables_dir, figures_dir, executed_dir):
            not_run.add(notebook)
            continue
        for name, (required, numeric) in notebook_tables(notebook).items():
            path = tables_dir / f"{name}.csv"
            if name in conditional and not path.exists():
                continue
            cites = (cited or {}).get(name, ())
            tables[name] = read_table_checked(path, required, numeric, cites, empty_ok=name in conditional)
            meta = read_meta(tables_dir / f"{name}.meta.json")
            if meta is not None:
                metas[name] = meta
        for name in notebook_figures(notebook):
            figures[name] = check_figure(figures_dir / f"{name}.pdf")
    return Results(tables, metas, figures, frozenset(not_run))


def section_has_run(section: Section, results: Results) -> bool:
    """Whether ``section``'s notebook has run for these results."""
    return section.notebook not in results.not_run
