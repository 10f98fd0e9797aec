"""The paper's generated parts: LaTeX tables, figures, macros and sentences from ``results/`` alone.

``paper/`` holds the prose (``main.tex``, ``sections/*.tex``); every number, table and figure in it comes
from here, written to ``paper/generated/`` by ``write_generated`` (``countdown-study paper``):

* a table fragment per CSV (``generated/tables/<name>.tex``, booktabs), with the columns that matter;
* a body per section (``generated/<section>.tex``): its tables and figures, or one sentence naming the
  notebook that produces them when they are not in ``results/`` yet;
* ``generated/macros.tex``: headline differences from the paired tables (``\\RlooVsSftPassOne`` and its
  interval, verdict and MDE), verdict counts, and provenance (git SHA, seeds, preset).

The text helpers (``escape``, ``number``, ``interval``) and the fragment builders are pure; only
``load_results``, ``write_generated`` and ``build_pdf`` touch files. Imports no torch.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from countdown_study.reporting.deviations import deviations

LATEX_INSTALL = (
    "apt-get install -y --no-install-recommends latexmk texlive-latex-recommended texlive-latex-extra"
)
"""The Debian packages that build the paper (``paper/README.md``)."""

MISSING = "--"
"""A cell whose value is missing (NaN or an empty string)."""

# ----------------------------------------------------------------------------------------------------
# text and numbers

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\u2264": r"$\leq$",
            "\u2265": r"$\geq$", "\u00d7": r"$\times$", "\u2013": "--", "\u2014": "---"}  # fmt: skip
_TRANSLATION = str.maketrans(_SPECIAL)


def escape(text: object) -> str:
    """``text`` as LaTeX text: the specials ``\\ & % $ # _ { } ~ ^ < > |`` escaped."""
    return str(text).translate(_TRANSLATION)


def code(text: object) -> str:
    """``text`` in typewriter, escaped, breakable after dots, underscores and commas."""
    breakable = re.sub(r"(\.|\\_|,)", r"\1\\allowbreak{}", escape(text))
    return rf"\texttt{{{breakable}}}"


def is_missing(value: object) -> bool:
    """Whether a cell holds no value (None, NaN or blank)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


def number(value: object, digits: int = 3, signed: bool = False) -> str:
    """``value`` rounded to ``digits`` decimals (``+`` in front of a positive one when ``signed``);
    ``MISSING`` when there is none. Plain text: ``in_math`` puts a signed one in math mode."""
    if is_missing(value):
        return MISSING
    rounded = round(float(value), digits) + 0.0  # + 0.0: no "-0.000"
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"


def in_math(text: str) -> str:
    """A formatted number as LaTeX: in math mode when it carries a sign (a true minus, not a hyphen)."""
    return f"${text}$" if text[:1] in "+-" else text


def count(value: object) -> str:
    """An integer with thousands separators (``244,883``); ``MISSING`` when there is none."""
    return MISSING if is_missing(value) else f"{round(float(value)):,}"


def interval(low: object, high: object, digits: int = 3, signed: bool = True) -> str:
    """A 95% interval as ``[$+0.019$, $+0.075$]``; ``MISSING`` when either end is missing."""
    if is_missing(low) or is_missing(high):
        return MISSING
    ends = (in_math(number(end, digits, signed)) for end in (low, high))
    return "[{}, {}]".format(*ends)


def short_model(label: object) -> str:
    """A model label without its parenthesised detail: ``Qwen2.5-0.5B SFT (asingh15/...)`` -> ``Qwen2.5-0.5B
    SFT``."""
    return str(label).split(" (")[0]


# ----------------------------------------------------------------------------------------------------
# tables


@dataclass(frozen=True)
class Column:
    """One column of a LaTeX table, read from a CSV column."""

    key: str
    """CSV column; for ``style="interval"`` the prefix of ``<key>_low`` / ``<key>_high``."""
    header: str
    """Column heading (plain text, escaped when written)."""
    style: str = "number"
    """text | code | model (``short_model``) | raw (LaTeX as is) | number | signed | count | interval."""
    digits: int = 3
    """Decimals of a number, signed number or interval."""
    width: str | None = None
    """``X`` (flexible, the table spans the line) or a fraction of the line (``"0.2"``); None: natural."""


def cell(row: Mapping[str, object], column: Column) -> str:
    """One cell of ``row`` (a CSV row as a mapping) in ``column``'s style, as LaTeX."""
    if column.style == "interval":
        return interval(row.get(f"{column.key}_low"), row.get(f"{column.key}_high"), column.digits)
    value = row.get(column.key)
    if is_missing(value):
        return MISSING
    if column.style in ("number", "signed"):
        return in_math(number(value, column.digits, signed=column.style == "signed"))
    if column.style == "count":
        return count(value)
    if column.style == "code":
        return code(value)
    if column.style == "raw":
        return str(value)
    return escape(short_model(value) if column.style == "model" else value)


def present(table: pd.DataFrame, columns: Sequence[Column]) -> list[Column]:
    """The columns whose CSV column(s) ``table`` has (an older table may lack a verdict or MDE)."""
    keys = set(table.columns)
    return [
        c
        for c in columns
        if ({f"{c.key}_low", f"{c.key}_high"} <= keys if c.style == "interval" else c.key in keys)
    ]


def _spec(column: Column) -> str:
    if column.width == "X":
        return r">{\raggedright\arraybackslash}X"
    if column.width is not None:
        return rf">{{\raggedright\arraybackslash}}p{{{column.width}\linewidth}}"
    return "r" if column.style in ("number", "signed", "count", "interval") else "l"


def tabular(table: pd.DataFrame, columns: Sequence[Column], group: str | None = None) -> str:
    """A booktabs ``tabular`` (``tabularx`` across the line when a column is ``X``) of ``table``'s rows in
    ``columns``; a ``\\midrule`` wherever the value of the CSV column ``group`` changes."""
    wide = any(c.width == "X" for c in columns)
    spec = "".join(_spec(c) for c in columns)
    head = rf"\begin{{tabularx}}{{\linewidth}}{{{spec}}}" if wide else rf"\begin{{tabular}}{{{spec}}}"
    lines = [head, r"\toprule", " & ".join(escape(c.header) for c in columns) + r" \\", r"\midrule"]
    previous = None
    for row in table.to_dict("records"):
        if group is not None and previous is not None and row.get(group) != previous:
            lines.append(r"\midrule")
        previous = row.get(group) if group is not None else None
        lines.append(" & ".join(cell(row, c) for c in columns) + r" \\")
    lines += [r"\bottomrule", r"\end{tabularx}" if wide else r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def table_float(body: str, caption: str, label: str, size: str = r"\small") -> str:
    """``body`` (a tabular) in a centred ``table`` float with a caption above and a label."""
    return (
        "\n".join(
            [
                r"\begin{table}[!htbp]",
                r"\centering",
                size,
                rf"\caption{{{caption}}}",
                rf"\label{{{label}}}",
                body.rstrip("\n"),
                r"\end{table}",
            ]
        )
        + "\n"
    )


def figure_float(path: str, caption: str, label: str) -> str:
    """A figure float including the PDF at ``path`` (relative to the paper folder) with its caption."""
    include = rf"\includegraphics[width=\linewidth,height=0.36\textheight,keepaspectratio]{{{path}}}"
    return (
        "\n".join(
            [
                r"\begin{figure}[!htbp]",
                r"\centering",
                include,
                rf"\caption{{{caption}}}",
                rf"\label{{{label}}}",
                r"\end{figure}",
            ]
        )
        + "\n"
    )


# ----------------------------------------------------------------------------------------------------
# what each section shows

MODEL_COLUMN = Column("model", "model", "model")
METHOD_COLUMN = Column("method", "method", "text")
VERDICT_COLUMNS = (
    Column("contrast", "contrast", "text", width="X"),
    Column("metric", "metric", "text"),
    Column("diff", "difference", "signed"),
    Column("ci", "95% interval", "interval"),
    Column("mde", "MDE", "number"),
    Column("n_seeds", "seeds", "count"),
    Column("verdict", "verdict", "text"),
)
"""The columns of a verdict table (from a ``*_paired.csv``); an older table without some shows the rest."""
VERDICT_METRICS = ("pass@1", "pass@16")
"""The metrics a verdict table shows (the paired tables may hold more)."""


def metric_columns(*metrics: str) -> tuple[Column, ...]:
    """Number columns headed by their metric names."""
    return tuple(Column(m, m.replace("_", " ")) for m in metrics)


@dataclass(frozen=True)
class TableSpec:
    """One table of a section: which CSV, which columns, which caption."""

    name: str
    """CSV stem in ``results/tables``."""
    columns: tuple[Column, ...]
    """Columns shown, in order (those missing from the CSV are left out)."""
    caption: str
    """Caption (LaTeX; the source notebook and the CSV name are appended)."""
    group: str | None = None
    """CSV column whose changes get a ``\\midrule`` (e.g. ``model``)."""
    metrics: tuple[str, ...] | None = None
    """Keep only rows whose ``metric`` is one of these (paired tables)."""


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a section."""

    name: str
    """Figure stem in ``results/figures`` (the PDF is included)."""
    caption: str
    """Caption (LaTeX)."""


@dataclass(frozen=True)
class Section:
    """The generated body of one section: its notebook's tables and figures."""

    key: str
    """Name of the generated body, ``generated/<key>.tex``."""
    notebook: str
    """Number of the notebook that writes these results (``"05"``)."""
    tables: tuple[TableSpec, ...]
    """Tables, in order; with none of them in ``results/`` the section is one ``missing_sentence``."""
    figures: tuple[FigureSpec, ...] = ()
    """Figures, in order."""


def _side_by_side(name: str, metrics: tuple[str, ...], caption: str) -> TableSpec:
    """A model-labelled table (``references.side_by_side``): theirs on Qwen2.5-0.5B, ours on the embedded
    model; a rule between the models."""
    return TableSpec(name, (MODEL_COLUMN, METHOD_COLUMN, *metric_columns(*metrics)), caption, group="model")


def _verdicts(name: str, caption: str) -> TableSpec:
    return TableSpec(name, VERDICT_COLUMNS, caption, metrics=VERDICT_METRICS)


_SUMMARY = (
    METHOD_COLUMN,
    *metric_columns("pass@1", "pass@16", "mean_score"),
    Column("n_seeds", "seeds", "count"),
)
_BY_COUNT = (METHOD_COLUMN, Column("num_count", "numbers", "count"), *metric_columns("pass@1", "pass@16"))
_THEIRS = (
    "Each row says whose model produced it: ours (embedded 3.4M Qwen2) or the report's (Qwen2.5-0.5B SFT)."
)
_CLAIMS = (
    "Paired differences (a $-$ b, mean over training seeds) with the seed-aware 95\\% interval, the minimum "
    "detectable effect at 80\\% power and the verdict."
)

_TASK_COLUMNS = (
    Column("tasks", "tasks", "count"),
    Column("target_mean", "mean target", digits=1),
    Column("solutions_median", "median solutions", "count"),
)
_ONOURS = "on our model, beside theirs. " + _THEIRS
_TASKS = Section(
    "tasks",
    "01",
    (
        TableSpec(
            "tasks_by_num_count",
            (
                Column("num_count", "numbers", "count"),
                *_TASK_COLUMNS,
                Column("single_solution", "single solution"),
                Column("depth_mean", "mean depth", digits=2),
            ),
            "The task pool by number count, from the exact solver.",
        ),
        TableSpec(
            "tasks_by_tier",
            (
                Column("tier", "tier", "text"),
                Column("num_count", "numbers", "count"),
                *_TASK_COLUMNS,
                Column("share", "share"),
            ),
            "Report 004's tiers, made a partition of the pool.",
        ),
    ),
    (FigureSpec("solution_count_by_tier", "Solution counts (distinct derivations) by tier."),),
)
_BASELINES = Section(
    "baselines",
    "02",
    (
        TableSpec("baselines_summary", _SUMMARY, "SFT, IPO and uniform RLOO on the shared held-out tasks."),
        _verdicts("baselines_paired", "Baselines against each other. " + _CLAIMS),
        _side_by_side(
            "baselines_vs_reports", ("pass@1", "pass@8", "pass@16"), "Beside report 002's Table 1. " + _THEIRS
        ),
    ),
    (
        FigureSpec("baselines_pass_at_k", "pass@k of the baselines with Wilson 95\\% intervals."),
        FigureSpec("baselines_pass1_by_tier", "pass@1 of the baselines by tier."),
    ),
)
_REPORT_000 = Section(
    "report000",
    "03",
    (
        _side_by_side(
            "curricula_000_table1", ("pass@1", "pass@4", "pass@16"), "Report 000's Table 1 " + _ONOURS
        ),
        _verdicts("curricula_000_paired", "Report 000's curricula against uniform RLOO. " + _CLAIMS),
        TableSpec("curricula_000_by_num_count", _BY_COUNT, "Per difficulty: 3-number and 4-number tasks."),
    ),
    (
        FigureSpec("curricula_000_occupancy", "What the curricula sampled over training."),
        FigureSpec("curricula_000_training", "Training curves of report 000's rows."),
    ),
)
_REPORT_001 = Section(
    "report001",
    "04",
    (
        _side_by_side(
            "sliding_window_001_vs_report",
            ("pass@1", "pass@16", "mean_score"),
            "Report 001's comparison " + _ONOURS,
        ),
        _verdicts(
            "sliding_window_001_paired", "Report 001's rows against uniform RLOO (binary reward). " + _CLAIMS
        ),
    ),
    (
        FigureSpec("sliding_window_001_levels", "The difficulty level the controller chose over training."),
        FigureSpec(
            "sliding_window_001_pass_at_k", "pass@k of report 001's rows with Wilson 95\\% intervals."
        ),
    ),
)
_REPORT_002 = Section(
    "report002",
    "05",
    (
        _side_by_side("fsc_002_table1", ("pass@1", "pass@8", "pass@16"), "Report 002's Table 1 " + _ONOURS),
        _verdicts("fsc_002_paired", "Report 002's claims R1--R4. " + _CLAIMS),
    ),
    (
        FigureSpec("fsc_002_pass_at_k", "pass@k of the Feature-Space Curriculum rows."),
        FigureSpec("fsc_002_diagnostics", "Refresh diagnostics of the samplers over training."),
    ),
)
_REPORT_003 = Section(
    "report003",
    "06",
    (
        _side_by_side(
            "vcc_003_table1", ("avg_pass@k", "pass@1", "pass@16"), "Report 003's Table 1 " + _ONOURS
        ),
        _side_by_side(
            "vcc_003_table2", ("exact_rate", "mean_score", "pass@16"), "Report 003's Table 2 " + _ONOURS
        ),
        _verdicts("vcc_003_paired", "Report 003's claims. " + _CLAIMS),
        TableSpec(
            "vcc_003_abandonment",
            (
                METHOD_COLUMN,
                Column("answer_spans_per_rollout", "spans per rollout", digits=2),
                *metric_columns("pass@1", "first_verifying_pass@1", "abandoned_rate"),
            ),
            "Answer abandonment: the final answer against the first verifying one.",
        ),
    ),
    (FigureSpec("vcc_003_final_vs_first", "pass@k of the final answer and of the first verifying answer."),),
)
_REPORT_004 = Section(
    "report004",
    "07",
    (
        _side_by_side(
            "adsc_004_table2", ("mean_score", "exact_rate", "pass@16"), "Report 004's Table 2 " + _ONOURS
        ),
        _verdicts("adsc_004_paired", "Report 004's claims. " + _CLAIMS),
        TableSpec(
            "adsc_004_ood",
            (METHOD_COLUMN, *metric_columns("pass@1", "pass@16", "nonzero_pass_at_16")),
            "5-number tasks never trained on (their Table 4).",
        ),
    ),
    (FigureSpec("adsc_004_router_state", "The router's arm probabilities and values over training."),),
)
_FIELD = Section(
    "field",
    "08",
    (
        TableSpec(
            "field_ranking",
            (
                METHOD_COLUMN,
                Column("source", "from", "text"),
                *metric_columns("pass@1", "pass@16"),
                Column("gain_per_million_tokens", "gain / M tokens"),
            ),
            "The field's methods and the reports' curricula, ranked by pass@1.",
        ),
        _verdicts("field_paired", "Each of the field's methods against uniform RLOO. " + _CLAIMS),
        _verdicts("field_vs_best_curriculum", "Each against the best of the reports' curricula. " + _CLAIMS),
    ),
    (FigureSpec("field_pass_at_k", "pass@k of the field's methods and the reports' curricula."),),
)
SECTIONS = (_TASKS, _BASELINES, _REPORT_000, _REPORT_001, _REPORT_002, _REPORT_003, _REPORT_004, _FIELD)
"""Each section's tables and figures, in the names the notebooks save them under."""


def missing_sentence(notebook: str) -> str:
    """The sentence a section shows while its notebook's results are not in ``results/``."""
    return rf"Results of notebook {notebook} are not in \texttt{{results/}} yet."


def table_fragment(spec: TableSpec, table: pd.DataFrame, notebook: str) -> str:
    """The table float of ``spec`` from its CSV ``table``."""
    if spec.metrics is not None and "metric" in table:
        table = table[table["metric"].isin(spec.metrics)]
    source = rf" Source: notebook {notebook}, \texttt{{{escape(spec.name)}}}."
    body = tabular(table, present(table, spec.columns), group=spec.group)
    return table_float(body, spec.caption + source, f"tab:{spec.name}")


def deviation_fragment(rows: pd.DataFrame, caption: str, label: str) -> str:
    """A deviations table (``reporting.deviations.COLUMNS``): what, the report's value, ours with the field
    that sets it, why."""
    ours = [
        f"{escape(o)}\\newline{{\\scriptsize {code(w)}}}"
        for o, w in zip(rows["ours"], rows["where set"], strict=True)
    ]
    columns = (
        Column("what", "what", "text", width="0.15"),
        Column("report's value", "report", "text", width="0.22"),
        Column("ours", "ours (where set)", "raw", width="0.31"),
        Column("why", "why", "text", width="0.22"),
    )
    return table_float(tabular(rows.assign(ours=ours), columns), caption, label, size=r"\footnotesize")


DEVIATION_TABLES = {
    "000": "curricula_000_deviations",
    "001": "sliding_window_001_deviations",
    "002": "fsc_002_deviations",
    "003": "vcc_003_deviations",
    "004": "adsc_004_deviations",
    "field": "field_deviations",
}
"""The deviations table each notebook saves, per ``reporting.deviations`` key."""


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


# ----------------------------------------------------------------------------------------------------
# section bodies


def section_body(
    section: Section, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, str]
) -> tuple[str, dict[str, str]]:
    """The body of ``section`` (``\\input`` of its table fragments, its figures) and the fragments by table
    name; the ``missing_sentence`` alone while none of its tables is in ``results/``; a sentence lists
    the tables and figures still missing beside present ones."""
    if not any(t.name in tables for t in section.tables):
        return missing_sentence(section.notebook) + "\n", {}
    fragments = {
        t.name: table_fragment(t, tables[t.name], section.notebook)
        for t in section.tables
        if t.name in tables
    }
    parts = [rf"\input{{generated/tables/{name}}}" for name in fragments]
    for fig in section.figures:
        if fig.name in figures:
            caption = rf"{fig.caption} Source: notebook {section.notebook}, \texttt{{{escape(fig.name)}}}."
            parts.append(figure_float(figures[fig.name], caption, f"fig:{fig.name}"))
    absent = [t.name for t in section.tables if t.name not in tables] + [
        f.name for f in section.figures if f.name not in figures
    ]
    if absent:
        names = ", ".join(rf"\texttt{{{escape(n)}}}" for n in absent)
        parts.append(rf"Not in \texttt{{results/}} yet from notebook {section.notebook}: {names}.")
    return "\n".join(parts) + "\n", fragments


# ----------------------------------------------------------------------------------------------------
# macros: headline numbers, verdict counts, provenance

_WORDS = (
    "Zero",
    "One",
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
    "Eleven",
    "Twelve",
    "Thirteen",
    "Fourteen",
    "Fifteen",
    "Sixteen",
    "Seventeen",
    "Eighteen",
    "Nineteen",
    "Twenty",
)


def macro_name(text: str) -> str:
    """A LaTeX command name from free text: words capitalised, numbers spelled out (``pass@16`` ->
    ``PassSixteen``)."""
    words = re.findall(r"[A-Za-z]+|\d+", text)
    return "".join(_spell(w) if w.isdigit() else w[:1].upper() + w[1:].lower() for w in words)


def _spell(digits: str) -> str:
    """A number as a word up to twenty (``16`` -> ``Sixteen``), else digit by digit (``000`` ->
    ``ZeroZeroZero``)."""
    if (digits == "0" or digits[0] != "0") and int(digits) < len(_WORDS):
        return _WORDS[int(digits)]
    return "".join(_WORDS[int(d)] for d in digits)


def newcommand(name: str, value: str) -> str:
    """One macro definition."""
    return rf"\newcommand{{\{name}}}{{{value}}}"


def row_macros(name: str, row: Mapping[str, object] | None) -> list[str]:
    """``\\<name>`` (the difference), ``Low``, ``High``, ``CI``, ``Mde`` and ``Verdict`` of one paired row;
    ``n/a`` for each when the row is not in ``results/``."""
    if row is None:
        return [
            newcommand(name + part, r"\textit{n/a}") for part in ("", "Low", "High", "CI", "Mde", "Verdict")
        ]
    values = {
        "": number(row.get("diff"), signed=True),
        "Low": number(row.get("ci_low"), signed=True),
        "High": number(row.get("ci_high"), signed=True),
        "Mde": number(row.get("mde")),
    }
    lines = [
        newcommand(name + part, rf"\ensuremath{{{v}}}" if v != MISSING else MISSING)
        for part, v in values.items()
    ]
    lines.append(newcommand(name + "CI", interval(row.get("ci_low"), row.get("ci_high"))))
    verdict = row.get("verdict")
    return [*lines, newcommand(name + "Verdict", MISSING if is_missing(verdict) else escape(verdict))]


@dataclass(frozen=True)
class Headline:
    """A paired row the abstract and introduction cite by name."""

    macro: str
    """Command name, without the backslash."""
    table: str
    """Paired table (CSV stem)."""
    contrast: str
    """Its ``contrast`` value."""
    metric: str
    """Its ``metric`` value."""


HEADLINES = (
    Headline("RlooVsSftPassOne", "baselines_paired", "RLOO uniform vs SFT", "pass@1"),
    Headline("RlooVsSftPassSixteen", "baselines_paired", "RLOO uniform vs SFT", "pass@16"),
    Headline("IpoVsSftPassOne", "baselines_paired", "IPO vs SFT", "pass@1"),
    Headline(
        "ReplacementPassOne", "baselines_paired", "RLOO uniform (with replacement) vs RLOO uniform", "pass@1"
    ),
)
"""The rows the prose cites; every other paired row gets ``\\<Table><Contrast><Metric>``."""


def find_row(table: pd.DataFrame | None, contrast: str, metric: str) -> dict[str, object] | None:
    """The row of a paired table with this contrast and metric, or None."""
    if table is None:
        return None
    match = table[(table["contrast"] == contrast) & (table["metric"] == metric)]
    return match.iloc[0].to_dict() if len(match) else None


def paired_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every paired table in ``tables`` (``*_paired`` and the field's ``*_vs_best_curriculum``), by name."""
    names = [s.name for section in SECTIONS for s in section.tables if s.metrics is not None]
    return {name: tables[name] for name in names if name in tables}


def verdict_counts(paired: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """How many rows of the paired tables (``VERDICT_METRICS`` only) carry each verdict."""
    verdicts = [
        v
        for t in paired.values()
        for v in t[t["metric"].isin(VERDICT_METRICS)].get("verdict", pd.Series(dtype=str))
    ]
    counted = pd.Series(verdicts, dtype=str).value_counts()
    return {
        v: int(counted.get(v, 0)) for v in ("holds", "reversed", "inside noise", "a above b", "a below b")
    }


def macros(tables: Mapping[str, pd.DataFrame], metas: Mapping[str, Mapping]) -> str:
    """``generated/macros.tex``: headline rows, every paired row, verdict counts and provenance."""
    paired = paired_tables(tables)
    lines = ["% Generated by countdown_study.reporting.paper from results/; do not edit."]
    for h in HEADLINES:
        lines += row_macros(h.macro, find_row(paired.get(h.table), h.contrast, h.metric))
    seen = {h.macro for h in HEADLINES}
    for name, table in paired.items():
        tag = macro_name(re.sub(r"\d+|_paired$", "", name))
        for row in table.to_dict("records"):
            base = tag + macro_name(f"{row['contrast']} {row['metric']}")
            if base not in seen:
                seen.add(base)
                lines += row_macros(base, row)
    for verdict, n in verdict_counts(paired).items():
        lines.append(newcommand("Verdicts" + macro_name(verdict), str(n)))
    lines.append(newcommand("PairedTablesPresent", str(len(paired))))
    lines += [newcommand(k, v) for k, v in provenance(metas).items()]
    return "\n".join(lines) + "\n"


def provenance(metas: Mapping[str, Mapping]) -> dict[str, str]:
    """Macros of where the results came from, over every table: git SHAs, seeds, presets, latest date."""
    values = list(metas.values())
    shas = {
        str(m["git_sha"])[:12] + ("-dirty" if m.get("git_dirty") else "") for m in values if m.get("git_sha")
    }
    presets = {str(m["preset"]) for m in values if m.get("preset")}
    written = max((str(m.get("written", ""))[:10] for m in values), default="")
    return {
        "ResultsGitSha": escape(", ".join(sorted(shas)) or MISSING),
        "ResultsSeeds": seed_list(sorted(_seeds(values))),
        "ResultsPreset": escape(", ".join(sorted(presets)) or MISSING),
        "ResultsWritten": escape(written or MISSING),
    }


def _seeds(metas) -> set[int]:
    return {int(r["seed"]) for m in metas for r in m.get("runs", []) if r.get("seed") is not None}


def seed_list(seeds: Sequence[int]) -> str:
    """Seeds as LaTeX text: a run as ``0--4``, else a comma list; ``--`` when there are none."""
    if not seeds:
        return MISSING
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}--{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def provenance_table(metas: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per notebook whose tables are in ``results/``: preset, seeds, git SHA (dirty flag), written."""
    rows = {}
    for meta in metas.values():
        notebook = str(meta.get("notebook", MISSING))
        row = rows.setdefault(
            notebook,
            {
                "notebook": notebook,
                "preset": meta.get("preset", MISSING),
                "seeds": set(),
                "git SHA": set(),
                "written": "",
            },
        )
        row["seeds"] |= _seeds([meta])
        row["git SHA"].add(str(meta.get("git_sha", ""))[:12] + (" (dirty)" if meta.get("git_dirty") else ""))
        row["written"] = max(row["written"], str(meta.get("written", ""))[:10])
    for row in rows.values():
        row["seeds"] = seed_list(sorted(row["seeds"])).replace("--", "-")
        row["git SHA"] = ", ".join(sorted(row["git SHA"]))
    return pd.DataFrame(
        sorted(rows.values(), key=lambda r: r["notebook"]),
        columns=["notebook", "preset", "seeds", "git SHA", "written"],
    )


KNOWN_VERDICTS = ("holds", "reversed", "inside noise", "a above b", "a below b")
"""Verdicts of ``study.paired_table`` (a single seed's ``one seed: no verdict`` counts as none)."""


def synthesis_table(paired: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per paired table: rows at ``VERDICT_METRICS`` and how many carry each verdict (none: an older table)."""
    rows = []
    for name, table in paired.items():
        shown = table[table["metric"].isin(VERDICT_METRICS)]
        verdicts = shown["verdict"] if "verdict" in shown else pd.Series([None] * len(shown))
        rows.append(
            {
                "table": name,
                "comparisons": len(shown),
                "holds": int((verdicts == "holds").sum()),
                "reversed": int((verdicts == "reversed").sum()),
                "inside noise": int((verdicts == "inside noise").sum()),
                "a above/below b": int(verdicts.isin(["a above b", "a below b"]).sum()),
                "no verdict": int((~verdicts.isin(KNOWN_VERDICTS)).sum()),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "table",
            "comparisons",
            "holds",
            "reversed",
            "inside noise",
            "a above/below b",
            "no verdict",
        ],
    )


SYNTHESIS_COLUMNS = (
    Column("table", "paired table", "code"),
    Column("comparisons", "rows", "count"),
    Column("holds", "holds", "count"),
    Column("reversed", "reversed", "count"),
    Column("inside noise", "in noise", "count"),
    Column("a above/below b", "no claim, decided", "count"),
    Column("no verdict", "no verdict", "count"),
)
"""Columns of the synthesis table (``synthesis_table``)."""


def synthesis_body(paired: Mapping[str, pd.DataFrame]) -> str:
    """The synthesis: verdict counts per paired table, every claim that holds or is reversed, and a sentence
    naming the notebooks whose paired tables are not in ``results/`` yet."""
    parts = []
    if paired:
        counts = tabular(synthesis_table(paired), SYNTHESIS_COLUMNS)
        parts.append(
            table_float(
                counts, f"Verdicts per paired table ({' and '.join(VERDICT_METRICS)}).", "tab:synthesis"
            )
        )
        decided = (
            pd.concat([t.assign(table=n) for n, t in paired.items() if "verdict" in t], ignore_index=True)
            if any("verdict" in t for t in paired.values())
            else pd.DataFrame()
        )
        if len(decided):
            decided = decided[
                decided["verdict"].isin(["holds", "reversed"]) & decided["metric"].isin(VERDICT_METRICS)
            ]
        if len(decided):
            columns = (Column("table", "table", "code"), *VERDICT_COLUMNS)
            parts.append(
                table_float(
                    tabular(decided, present(decided, columns)),
                    "The reports' claims that hold or are reversed here. " + _CLAIMS,
                    "tab:decided",
                )
            )
    waiting = [
        s.notebook for s in SECTIONS for t in s.tables if t.metrics is not None and t.name not in paired
    ]
    if waiting:
        parts.append(
            f"Paired tables of notebooks {', '.join(sorted(set(waiting)))} are not in \\texttt{{results/}} yet."
        )
    return "\n".join(parts) + "\n"


# ----------------------------------------------------------------------------------------------------
# files


def load_results(
    tables_dir: Path, figures_dir: Path
) -> tuple[dict[str, pd.DataFrame], dict[str, dict], dict[str, Path]]:
    """Every CSV table (by stem), its ``.meta.json`` (where present) and every figure PDF (by stem)."""
    tables = {p.stem: pd.read_csv(p) for p in sorted(tables_dir.glob("*.csv"))}
    metas = {
        p.name.removesuffix(".meta.json"): json.loads(p.read_text())
        for p in sorted(tables_dir.glob("*.meta.json"))
    }
    figures = {p.stem: p for p in sorted(figures_dir.glob("*.pdf"))}
    return tables, metas, figures


def generated_files(
    tables: Mapping[str, pd.DataFrame], metas: Mapping[str, Mapping], figures: Mapping[str, str]
) -> dict[str, str]:
    """Every generated file (path under ``paper/generated`` -> LaTeX) from the loaded results; ``figures``
    maps a figure stem to its path as the paper folder sees it."""
    files = {"macros.tex": macros(tables, metas)}
    for section in SECTIONS:
        body, fragments = section_body(section, tables, figures)
        files[f"{section.key}.tex"] = body
        files |= {f"tables/{name}.tex": text for name, text in fragments.items()}
    rows = {key: deviation_rows(key, tables) for key in DEVIATION_TABLES}
    shared, own = split_shared(rows)
    files["deviations_shared.tex"] = deviation_fragment(
        shared, "Choices shared by every report's rows.", "tab:deviations-shared"
    )
    for key, table in own.items():
        title = "the field's methods" if key == "field" else f"report {key}"
        files[f"deviations_{key}.tex"] = deviation_fragment(
            table, f"Where this study departs from {title}, and why.", f"tab:deviations-{key}"
        )
    files["synthesis.tex"] = synthesis_body(paired_tables(tables))
    prov = provenance_table(metas)
    prov_columns = tuple(Column(c, c, "code" if c == "git SHA" else "text") for c in prov.columns)
    files["provenance.tex"] = table_float(
        tabular(prov, prov_columns),
        "Provenance of the tables in \\texttt{results/tables}, from their \\texttt{.meta.json} sidecars.",
        "tab:provenance",
    )
    return files


def write_generated(paper_dir: Path, tables_dir: Path, figures_dir: Path) -> list[Path]:
    """Write ``paper_dir/generated`` from the results (stale files removed first); the paths written."""
    tables, metas, figures = load_results(tables_dir, figures_dir)
    relative = {stem: Path(os.path.relpath(path, paper_dir)).as_posix() for stem, path in figures.items()}
    out = paper_dir / "generated"
    if out.is_dir():
        shutil.rmtree(out)
    written = []
    for name, text in generated_files(tables, metas, relative).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def build_pdf(paper_dir: Path, latexmk: str = "latexmk") -> subprocess.CompletedProcess:
    """``latexmk -pdf`` of ``paper_dir/main.tex`` into ``paper_dir/build`` (stops at the first error)."""
    command = [
        latexmk,
        "-pdf",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        "-outdir=build",
        "main.tex",
    ]
    return subprocess.run(command, cwd=paper_dir, capture_output=True, text=True)


def pages_written(log: str) -> int | None:
    """The page count in a LaTeX log (``Output written on main.pdf (12 pages, ...)``), or None."""
    found = re.findall(r"Output written on .*?\((\d+) pages?", log, re.S)
    return int(found[-1]) if found else None
