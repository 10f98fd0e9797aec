"""What each section of the paper shows, and its generated body: tables and figures by the names the
notebooks save them under, the sentence standing in for missing results, and the deviations tables.

``SECTIONS`` is the map from the paper to ``results/``; ``section_body`` and ``deviation_fragment`` turn
loaded CSVs into LaTeX (``reporting.latex``) and touch no file. Imports pandas, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    long: bool = False
    """Written as a ``latex.long_table`` that breaks across pages, not a float, whatever its length (a table
    of more than ``LONG_TABLE_ROWS`` rows always is)."""
    optional: tuple[str, ...] = ()
    """CSV columns an older table may lack (its table shows the rest); every other column shown is required."""


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


def _side_by_side(name: str, metrics: tuple[str, ...], caption: str) -> TableSpec:
    """A model-labelled table (``references.side_by_side``): theirs on Qwen2.5-0.5B, ours on the embedded
    model; a rule between the models."""
    return TableSpec(name, (MODEL_COLUMN, METHOD_COLUMN, *metric_columns(*metrics)), caption, group="model")


VERDICT_OPTIONAL = ("mde", "n_seeds", "verdict")
"""Columns a paired table written before the seed-aware comparison lacks."""


def _verdicts(name: str, caption: str, metrics: tuple[str, ...] = VERDICT_METRICS) -> TableSpec:
    return TableSpec(name, VERDICT_COLUMNS, caption, metrics=metrics, optional=VERDICT_OPTIONAL)


_SUMMARY = (
    METHOD_COLUMN,
    *metric_columns("pass@1", "pass@16", "mean_score"),
    Column("n_seeds", "seeds", "count"),
)
_BY_COUNT = (METHOD_COLUMN, Column("num_count", "numbers", "count"), *metric_columns("pass@1", "pass@16"))
_THEIRS = (
    "Each row says whose model produced it: ours (embedded 3.4M Qwen2) or the report's (Qwen2.5-0.5B SFT)."
)
CLAIMS = (
    "Paired differences (a $-$ b, mean over training seeds) with the seed-aware 95\\% interval, the minimum "
    "detectable effect at 80\\% power and the verdict."
)
"""The caption sentence of every verdict table."""

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
        _verdicts("baselines_paired", "Baselines against each other. " + CLAIMS),
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
        _verdicts("curricula_000_paired", "Report 000's curricula against uniform RLOO. " + CLAIMS),
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
            "sliding_window_001_paired", "Report 001's rows against uniform RLOO (binary reward). " + CLAIMS
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
        _verdicts(
            "fsc_002_paired",
            "Report 002's rows against its uniform control, and the dynamic edge and frozen feature-failure policy against the frozen edge: the contrasts behind claims R1--R4. "
            + CLAIMS,
        ),
        TableSpec(
            "fsc_002_table4",
            (
                Column("contrast", "contrast", "text", width="X"),
                Column("metric", "metric", "text"),
                Column("diff", "ours", "signed"),
                Column("ci", "our 95% interval", "interval"),
                Column("their_diff", "theirs", "signed"),
                Column("their", "their 95% interval", "interval"),
            ),
            "Report 002's Table 4 redone: ours with the seed-aware interval (five training seeds), theirs a "
            "paired bootstrap over their 50 problems from single runs (training seed fixed).",
        ),
    ),
    (
        FigureSpec(
            "fsc_002_figures_3_5",
            "Report 002's Figures 3--5 on our model: pass@k of the rows each "
            "compares, ours with 95\\% bands, theirs (Qwen2.5-0.5B) as open markers.",
        ),
        FigureSpec(
            "fsc_002_moving_edge",
            "Report 002's Figure 6 on our model beside theirs: the dynamic edge's "
            "probe rows by training phase.",
        ),
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
        _verdicts("vcc_003_paired", "Report 003's claims. " + CLAIMS),
        TableSpec(
            "vcc_003_abandonment",
            (
                METHOD_COLUMN,
                Column("answer_spans_per_rollout", "spans per rollout", digits=2),
                *metric_columns("pass@1", "first_verifying_pass@1", "abandoned_rate"),
            ),
            "Answer abandonment: the final answer against the first verifying one.",
        ),
        TableSpec(
            "vcc_003_frontier_mix",
            (
                Column("frontier", "easiest share of the pool", digits=1),
                Column("tasks", "tasks", "count"),
                Column("four_number_share", "four-number share"),
                Column("median_solutions", "median solutions", digits=0),
            ),
            "What the solution-count curricula draw from: the easiest part of the training pool by solution "
            "count, its share of four-number tasks (the harder half for the policy) and its median count.",
        ),
        TableSpec(
            "vcc_003_training_mix",
            (
                METHOD_COLUMN,
                Column("prompts", "prompts drawn", "count"),
                Column("four_number_share", "four-number share"),
                Column("pool_four_number_share", "pool's share"),
            ),
            "The share of four-number prompts each curriculum drew over its runs (from the frontier of every "
            "step), beside the pool's.",
        ),
        TableSpec(
            "vcc_003_frontier_moves_summary",
            (
                METHOD_COLUMN,
                Column("runs", "runs", "count"),
                Column("runs_moved", "runs widened", "count"),
                Column("mean_final_share", "final share", digits=2),
                Column("max_success_ema", "highest success EMA"),
                Column("runs_ahead", "runs ahead of staged", "count"),
            ),
            "Did the adaptive rules adapt? Runs whose adaptive frontier ever widened (at a training success "
            "EMA of 0.5), its mean final share of the pool, the highest success EMA, and the runs whose "
            "frontier was ever wider than the staged schedule's: a hybrid run never ahead drew the staged "
            "curriculum's prompts seed for seed, and its results are the staged row's.",
        ),
        TableSpec(
            "vcc_003_sweep_selection_summary",
            (
                METHOD_COLUMN,
                Column("n_seeds", "seeds", "count"),
                Column("picked_best_share", "picked best"),
                Column("mean_regret", "regret"),
                Column("selected_test", "selected"),
                Column("best_test", "best"),
                Column("final_test", "final"),
            ),
            "The tight sweep's checkpoint selection on validation: the share of seeds where it picked a best "
            "test checkpoint, its mean cost on test (regret), and the test pass@1 of the selected, the best "
            "and the final checkpoints.",
        ),
        _verdicts(
            "vcc_003_selection_claim",
            "Validation selection against the final checkpoint, test pass@1 over the tight sweep's runs "
            "(a null claim: \\emph{holds} and \\emph{inside noise} agree with it). " + CLAIMS,
        ),
        _side_by_side(
            "vcc_003_embedded_table1",
            ("avg_pass@k", "pass@1", "pass@16"),
            "Report 003's curricula and VCC also on the embedded policy, the other reports' starting policy "
            "(curricula on rollouts cut at the first answer, VCC-RLOO on whole rollouts) " + _ONOURS,
        ),
        _verdicts(
            "vcc_003_embedded_paired",
            "Report 003's claims on the embedded policy: the curricula against uniform RLOO, VCC-RLOO "
            "against uniform RLOO on whole rollouts. " + CLAIMS,
        ),
    ),
    (
        FigureSpec(
            "vcc_003_final_vs_first",
            "The final answer against the first verifying one. Left: pass@k of each (solid and dashed) for "
            "the rows whose two curves differ by 0.02 or more; right: the pass@1 the first verifying answer "
            "would add, for every row.",
        ),
        FigureSpec(
            "vcc_003_training",
            "Over training: answer spans per rollout, the share of rollouts that abandon a verifying answer, "
            "and the training batches' exact rate, for the rows of report 003's Tables 1 and 2.",
        ),
    ),
)
_REPORT_004 = Section(
    "report004",
    "07",
    (
        _side_by_side(
            "adsc_004_table2", ("mean_score", "exact_rate", "pass@16"), "Report 004's Table 2 " + _ONOURS
        ),
        _verdicts(
            "adsc_004_paired",
            "Report 004's claims (its headline metric is the mean score). " + CLAIMS,
            metrics=("mean_score", "pass@16"),
        ),
        TableSpec(
            "adsc_004_ood",
            (METHOD_COLUMN, *metric_columns("pass@1", "pass@16", "nonzero_pass_at_16")),
            "5-number tasks never trained on (their Table 4).",
        ),
        _verdicts(
            "adsc_004_ood_claims",
            "Report 004's Table 4 claim: each synthetic student's exact pass@16 on the 5-number tasks against "
            "zero. Where no task was solved under any seed, the MDE column is the smallest per-task rate that "
            "would have shown one (Clopper-Pearson bound).",
        ),
    ),
    (
        FigureSpec("adsc_004_router_state", "The router's arm probabilities and values Q over training."),
        FigureSpec("adsc_004_batch_mix", "The training batches' mix of sources and tiers over training."),
        FigureSpec(
            "adsc_004_generator_acceptance",
            "The generators' candidates per tier: the share accepted, and why the others were rejected.",
        ),
    ),
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
        _verdicts("field_paired", "Each of the field's methods against uniform RLOO. " + CLAIMS),
        _verdicts("field_vs_best_curriculum", "Each against the best of the reports' curricula. " + CLAIMS),
    ),
    (
        FigureSpec("field_pass_at_k", "pass@k of the field's methods and the reports' curricula."),
        FigureSpec(
            "field_sec_arms", "SEC's arms (number count $\\times$ tier) over training: probability and value."
        ),
    ),
)
_SYNTHESIS = Section(
    "synthesis_study",
    "90",
    (
        TableSpec(
            "synthesis_verdicts",
            (
                Column("report", "report", "text"),
                Column("claim", "claim", "text", width="X"),
                Column("metric", "metric", "text", width="0.11"),
                Column("their_diff", "theirs", "signed"),
                Column("our_diff", "ours", "signed"),
                Column("ci", "95% interval", "interval"),
                Column("mde", "MDE", "number"),
                Column("verdict", "verdict", "text"),
            ),
            "Every headline claim of the five reports: their difference on their model, ours on ours with its "
            "seed-aware interval and minimum detectable effect, and the verdict.",
            group="report",
            long=True,
        ),
        TableSpec(
            "interval_coverage",
            (
                Column("metric", "metric", "text"),
                Column("n_seeds", "seeds", "count"),
                Column("n_studies", "studies", "count"),
                Column("coverage", "coverage"),
                Column("coverage_se", "MC s.e."),
                Column("power_at_mde", "power at MDE", digits=2),
                Column("mean_mde", "mean MDE"),
                Column("seed_t_coverage", "seed t coverage"),
            ),
            "The default interval on simulated studies shaped like ours (per-task rates of uniform RLOO with "
            "its floors and ceilings, 16 samples per task, shared tasks, per-run shifts fitted to the runs): "
            "the share of null studies whose 95\\% interval holds zero, its Monte Carlo standard error, the "
            "share that detect a true difference the size of the mean MDE, and the seed-paired t-interval's "
            "coverage beside it.",
        ),
        TableSpec(
            "claims",
            (
                Column("claim_id", "claim", "code", width="X"),
                Column("metric", "metric", "text"),
                Column("report_a", "theirs a"),
                Column("report_b", "b"),
                Column("ours_a", "ours a"),
                Column("ours_b", "b"),
                Column("ci", "95% interval", "interval"),
                Column("mde", "MDE"),
                Column("seeds_needed", "seeds", "count"),
                Column("verdict", "verdict", "text", width="0.16"),
            ),
            "The claim registry: every quantitative claim of the five reports (\\texttt{study/claims\\_registry.csv}), "
            "the report's numbers on its model (Qwen2.5-0.5B SFT, one run), ours on ours (five training "
            "seeds), the interval of our difference, the MDE, the training seeds at which the MDE would reach "
            "the report's own difference, and the verdict; claims not tested give their reason in "
            "\\texttt{results/tables/claims.csv}.",
            group="report",
            long=True,
        ),
        TableSpec(
            "synthesis_curricula_ranking",
            (
                Column("rank", "rank", "count"),
                METHOD_COLUMN,
                Column("mean_diff_vs_others", "mean difference", "signed"),
                Column("above", "above", "count"),
                Column("below", "below", "count"),
            ),
            "The curricula on the embedded policy that share uniform RLOO's reward and rollouts, ranked by "
            "their mean pass@1 difference from the others; \\emph{above} and \\emph{below} count the rows "
            "each is above or below with a seed-aware interval clear of zero.",
        ),
        TableSpec(
            "synthesis_budget",
            (
                Column("report", "report", "text"),
                Column("method", "method", "text", width="X"),
                Column("tokens_vs_uniform", "tokens / uniform", digits=2),
                Column("gain_vs_uniform", "pass@1 gain", "signed"),
                Column("gain", "95% interval", "interval"),
                Column("gain_per_million_tokens", "gain / M tokens", "signed"),
            ),
            "What each row generated against what it gained: its completion tokens per run relative to its "
            "uniform RLOO row, its pass@1 difference from that row with the seed-aware interval, and its pass@1 "
            "gain over the starting policy per million generated tokens. The rows of the embedded policy come "
            "first, then (after a rule) report 003's rows on the search-style policy.",
            group="model",
            long=True,
        ),
    ),
    (
        FigureSpec(
            "synthesis_forest",
            "Every row against the uniform RLOO row of its starting policy, with seed-aware 95\\% intervals.",
        ),
        FigureSpec(
            "synthesis_tradeoff",
            "Sharpening against coverage: each row's pass@1 and pass@16 differences from its uniform RLOO row "
            "with seed-aware 95\\% intervals, grouped by the direction of the two point estimates.",
        ),
        FigureSpec(
            "synthesis_cross_curricula",
            "The curricula against each other at pass@1 (row minus column); a dot marks a pair whose "
            "seed-aware interval is clear of zero.",
        ),
        FigureSpec(
            "synthesis_budget",
            "What each row generated (completion tokens per run relative to its uniform RLOO row) and what it "
            "gained (its pass@1 difference from that row, with the seed-aware 95\\% interval).",
        ),
    ),
)
SECTIONS = (
    _TASKS, _BASELINES, _REPORT_000, _REPORT_001, _REPORT_002, _REPORT_003, _REPORT_004, _FIELD, _SYNTHESIS,
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
) -> str:
    """``table`` as a float, or as a ``long_table`` that breaks across pages when ``long`` or when it has
    more than ``LONG_TABLE_ROWS`` rows."""
    if long or len(table) > LONG_TABLE_ROWS:
        return long_table(table, columns, caption, label, group=group)
    return table_float(tabular(table, columns, group=group), caption, label)


def table_fragment(spec: TableSpec, table: pd.DataFrame, notebook: str) -> str:
    """The table of ``spec`` from its CSV ``table`` (``fitted_table``)."""
    if spec.metrics is not None and "metric" in table:
        table = table[table["metric"].isin(spec.metrics)]
    columns, caption = present(table, spec.columns), f"{spec.caption} {source_note(notebook, spec.name)}"
    return fitted_table(table, columns, caption, f"tab:{spec.name}", spec.group, spec.long)


def section_labels(section: Section) -> list[str]:
    """The labels of a section's tables and figures (``tab:<name>``, ``fig:<name>``)."""
    return [f"tab:{t.name}" for t in section.tables] + [f"fig:{f.name}" for f in section.figures]


def section_body(
    section: Section, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, str]
) -> tuple[str, dict[str, str]]:
    """The body of ``section`` (``\\input`` of its table fragments, its figures) and the fragments by table
    name; the ``missing_sentence`` alone while none of its tables is in ``tables`` (its notebook has not
    run: ``paper_inputs.load_results`` gives all of a notebook's tables or none)."""
    if not any(t.name in tables for t in section.tables):
        return missing_sentence(section.notebook) + "\n", {}
    fragments = {t.name: table_fragment(t, tables[t.name], section.notebook) for t in section.tables}
    parts = [rf"\input{{generated/tables/{name}}}" for name in fragments]
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
