"""What each section of the paper shows, and its generated body: tables and figures by the names the
notebooks save them under, the sentence standing in for missing results, and the deviations tables.

``SECTIONS`` is the map from the paper to ``results/`` (its sections are data, in
``paper_report_sections`` and ``paper_study_sections``, written with ``paper_specs``' ``TableSpec``,
``FigureSpec`` and ``Section``); ``section_body`` and ``deviation_fragment`` turn loaded CSVs into LaTeX
(``reporting.latex``) and touch no file. Imports pandas, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from countdown_study.reporting.deviations import deviations
from countdown_study.reporting.latex import (
    MISSING,
    Column,
    code,
    escape,
    figure_float,
    is_missing,
    long_table,
    present,
    table_float,
    tabular,
    texttt,
)
from countdown_study.reporting.paper_report_sections import (
    BASELINES,
    REPORT_000,
    REPORT_001,
    REPORT_002,
    REPORT_003,
    REPORT_004,
    TASKS,
)
from countdown_study.reporting.paper_specs import (
    CLAIMS,
    METHOD_COLUMN,
    MODEL_COLUMN,
    VERDICT_COLUMNS,
    VERDICT_METRICS,
    VERDICT_OPTIONAL,
    FigureSpec,
    Section,
    TableSpec,
    metric_columns,
)
from countdown_study.reporting.paper_study_sections import FIELD, SCALE, SYNTHESIS

__all__ = [
    "CLAIMS",
    "DEVIATION_COLUMNS",
    "DEVIATION_NOTEBOOKS",
    "DEVIATION_TABLES",
    "FigureSpec",
    "LONG_TABLE_ROWS",
    "METHOD_COLUMN",
    "MODEL_COLUMN",
    "PAIRED_TABLES",
    "SECTIONS",
    "Section",
    "TableSpec",
    "VERDICT_COLUMNS",
    "VERDICT_METRICS",
    "VERDICT_OPTIONAL",
    "deviation_files",
    "deviation_fragment",
    "deviation_rows",
    "fitted_table",
    "metric_columns",
    "missing_sentence",
    "ours_cell",
    "section_body",
    "section_labels",
    "source_note",
    "split_shared",
    "table_fragment",
]

# ----------------------------------------------------------------------------------------------------
# what each section shows

SECTIONS = (
    TASKS, BASELINES, REPORT_000, REPORT_001, REPORT_002, REPORT_003, REPORT_004, FIELD, SCALE, SYNTHESIS,
)  # fmt: skip
"""Each section's tables and figures, in the names the notebooks save them under."""

PAIRED_TABLES = {t.name: s.notebook for s in SECTIONS for t in s.tables if t.metrics is not None}
"""Every paired table (``*_paired`` and the field's ``*_vs_best_curriculum``) -> the notebook that writes it."""

# ----------------------------------------------------------------------------------------------------
# section bodies

LONG_TABLE_ROWS = 18
"""A table of more rows is a ``latex.long_table`` that breaks across pages: as a float it could run past
the page's foot (two-line rows make 18 rows about half a page)."""


def missing_sentence(notebook: str) -> str:
    """The sentence a section shows while its notebook has not run for these results."""
    return rf"Notebook {notebook} has not run yet for these results: its tables and figures are not here."


def source_note(notebook: str, name: str) -> str:
    """The sentence a caption ends with: which notebook and which saved table or figure."""
    return rf"Source: notebook {notebook}, {texttt(name)}."


def fitted_table(
    table: pd.DataFrame,
    columns: Sequence[Column],
    caption: str,
    label: str,
    group: str | None = None,
    long: bool = False,
    lead: Column | None = None,
) -> str:
    """``table`` as a float, or as a ``long_table`` that breaks across pages when ``long``, when it has a
    ``lead`` column (``TableSpec.lead``) or when it has more than ``LONG_TABLE_ROWS`` rows."""
    if long or lead is not None or len(table) > LONG_TABLE_ROWS:
        return long_table(table, columns, caption, label, group=group, lead=lead)
    return table_float(tabular(table, columns, group=group), caption, label)


def table_fragment(spec: TableSpec, table: pd.DataFrame, notebook: str) -> str:
    """The table of ``spec`` from its CSV ``table`` (``fitted_table``)."""
    if spec.metrics is not None and "metric" in table:
        table = table[table["metric"].isin(spec.metrics)]
    why = (
        f" {spec.absent}" if table.empty and spec.absent else ""
    )  # written with no rows: the caption says why
    caption, columns = f"{spec.caption}{why} {source_note(notebook, spec.name)}", present(table, spec.columns)
    return fitted_table(table, columns, caption, f"tab:{spec.name}", spec.group, spec.long, spec.lead)


def section_labels(section: Section) -> list[str]:
    """The labels of a section's tables and figures (``tab:<name>``, ``fig:<name>``)."""
    return [f"tab:{t.name}" for t in section.tables] + [f"fig:{f.name}" for f in section.figures]


def section_body(
    section: Section, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, str]
) -> tuple[str, dict[str, str]]:
    """The body of ``section`` (``\\input`` of its table fragments, its figures) and the fragments by table
    name; the ``missing_sentence`` alone while none of its tables is in ``tables`` (its notebook has not
    run: ``paper_inputs.load_results`` gives all of a notebook's tables or none), and a table's ``absent``
    sentence in its place where its notebook did not write it (in its caption where it wrote no rows)."""
    if not any(t.name in tables for t in section.tables):
        return missing_sentence(section.notebook) + "\n", {}
    fragments, parts = {}, []
    for spec in section.tables:
        if spec.name not in tables and spec.absent:
            parts.append(spec.absent + "\n")
            continue
        fragments[spec.name] = table_fragment(spec, tables[spec.name], section.notebook)
        parts.append(rf"\input{{generated/tables/{spec.name}}}")
    for fig in section.figures:
        caption = f"{fig.caption} {source_note(section.notebook, fig.name)}"
        parts.append(figure_float(figures[fig.name], caption, f"fig:{fig.name}", fig.height))
    return "\n".join(parts) + "\n", fragments


# ----------------------------------------------------------------------------------------------------
# deviations

DEVIATION_TABLES = {
    "000": "curricula_000_deviations",
    "001": "sliding_window_001_deviations",
    "002": "fsc_002_deviations",
    "003": "vcc_003_deviations",
    "004": "adsc_004_deviations",
    "field": "field_deviations",
}
"""The deviations table each notebook saves, per ``reporting.deviations`` key."""
DEVIATION_NOTEBOOKS = {"000": "03", "001": "04", "002": "05", "003": "06", "004": "07", "field": "08"}
"""The notebook that saves each deviations table."""
DEVIATION_COLUMNS = ("what", "report's value", "ours", "why", "where set")
"""The columns of a deviations table the paper shows (``reporting.deviations.COLUMNS``)."""

_DEVIATION_COLUMNS = (
    Column("what", "what", "text", width="0.15"),
    Column("report's value", "report", "text", width="0.22"),
    Column("ours", "ours (where set)", "raw", width="0.31"),
    Column("why", "why", "text", width="0.22"),
)


def ours_cell(ours: object, where: object) -> str:
    """A deviations row's choice with the configuration field that sets it below, small; a dash for a
    missing choice, nothing below it for a missing field."""
    text = MISSING if is_missing(ours) else escape(ours)
    return text if is_missing(where) else f"{text}\\newline{{\\scriptsize {code(where)}}}"


def deviation_fragment(rows: pd.DataFrame, caption: str, label: str) -> str:
    """A deviations table (``reporting.deviations.COLUMNS``): what, the report's value, ours with the field
    that sets it, why; a ``long_table`` that breaks across pages."""
    ours = [ours_cell(o, w) for o, w in zip(rows["ours"], rows["where set"], strict=True)]
    return long_table(rows.assign(ours=ours), _DEVIATION_COLUMNS, caption, label, size=r"\footnotesize")


def deviation_rows(report: str, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """A report's deviations: the notebook's saved table if present, else the library's own rows."""
    saved = tables.get(DEVIATION_TABLES[report])
    return saved if saved is not None else deviations(report)


def split_shared(rows: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The rows every report shares (by ``what``, taken from the first report) and each report's own rows."""
    shared = set.intersection(*(set(table["what"]) for table in rows.values()))
    first = next(iter(rows.values()))
    own = {key: table[~table["what"].isin(shared)] for key, table in rows.items()}
    return first[first["what"].isin(shared)], own


def deviation_files(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """The deviations fragments (file name -> LaTeX): the rows every report shares, then each report's own."""
    shared, own = split_shared({key: deviation_rows(key, tables) for key in DEVIATION_TABLES})
    files = {
        "deviations_shared.tex": deviation_fragment(
            shared, "Choices shared by every report's rows.", "tab:deviations-shared"
        )
    }
    for key, table in own.items():
        title = "the field's methods" if key == "field" else f"report {key}"
        files[f"deviations_{key}.tex"] = deviation_fragment(
            table, f"Where this study departs from {title}, and why.", f"tab:deviations-{key}"
        )
    return files
