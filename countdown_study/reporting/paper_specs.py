"""The vocabulary of the paper's section layout (``reporting.paper_sections``): what a table, a figure and a
section of the paper are (``TableSpec``, ``FigureSpec``, ``Section``), the column sets and captions the
sections share, and the verdict table's columns. Data only; imports ``reporting.latex``, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from countdown_study.reporting.latex import Column

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
    long: bool = False
    """Written as a ``latex.long_table`` that breaks across pages, not a float, whatever its length (a table
    of more than ``LONG_TABLE_ROWS`` rows always is)."""
    optional: tuple[str, ...] = ()
    """CSV columns an older table may lack (its table shows the rest); every other column shown is required."""
    lead: Column | None = None
    """A column shown on a line of its own above each row, across the table (a long identifier that would
    leave the other columns no room); the table is then a ``long_table``."""
    absent: str = ""
    """For a table its notebook writes only in some studies (``claims_seed_change``: with more than five
    training seeds) or writes with no rows in some (``interval_coverage``: one training seed): the sentence
    (LaTeX) the paper prints in its place where the notebook has run without writing it, or adds to its
    caption where it has no rows. Empty (every other table): the table is required, with rows, once its
    notebook has run."""


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a section."""

    name: str
    """Figure stem in ``results/figures`` (the PDF is included)."""
    caption: str
    """Caption (LaTeX)."""
    height: float = 0.85
    """Its largest height, as a fraction of the text's height: a figure drawn at the text's width
    (``plots.TEXT_WIDTH``) prints at its own size below it, and only a taller one is shrunk."""


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


def side_by_side_spec(name: str, metrics: tuple[str, ...], caption: str) -> TableSpec:
    """A model-labelled table (``references.side_by_side``): theirs on Qwen2.5-0.5B, ours on the embedded
    model; a rule between the models."""
    return TableSpec(name, (MODEL_COLUMN, METHOD_COLUMN, *metric_columns(*metrics)), caption, group="model")


VERDICT_OPTIONAL = ("mde", "n_seeds", "verdict")
"""Columns a paired table written before the seed-aware comparison lacks."""


def verdict_spec(name: str, caption: str, metrics: tuple[str, ...] = VERDICT_METRICS) -> TableSpec:
    """A verdict table (a ``*_paired`` CSV) at ``metrics``: ``VERDICT_COLUMNS``, those of
    ``VERDICT_OPTIONAL`` left out where an older table lacks them."""
    return TableSpec(name, VERDICT_COLUMNS, caption, metrics=metrics, optional=VERDICT_OPTIONAL)


SUMMARY_COLUMNS = (
    METHOD_COLUMN,
    *metric_columns("pass@1", "pass@16", "mean_score"),
    Column("n_seeds", "seeds", "count"),
)
"""The columns of a study's summary table."""
BY_COUNT_COLUMNS = (
    METHOD_COLUMN,
    Column("num_count", "numbers", "count"),
    *metric_columns("pass@1", "pass@16"),
)
"""The columns of a table by number count."""
THEIRS = (
    "Each row says whose model produced it: ours (embedded 3.4M Qwen2) or the report's (Qwen2.5-0.5B SFT)."
)
"""The caption sentence of every table that puts the reports' rows beside ours."""
CLAIMS = (
    "Paired differences (a $-$ b, mean over training seeds) with the seed-aware 95\\% interval, the minimum "
    "detectable effect at 80\\% power and the verdict."
)
"""The caption sentence of every verdict table."""

TASK_COLUMNS = (
    Column("tasks", "tasks", "count"),
    Column("target_mean", "mean target", digits=1),
    Column("solutions_median", "median solutions", "count"),
)
"""The columns describing a part of the task pool."""
ON_OURS = "on our model, beside theirs. " + THEIRS
"""The end of a caption of a table that puts the reports' rows beside ours."""
