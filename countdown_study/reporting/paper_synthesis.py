"""The paper's synthesis section: verdict counts per paired table, every claim that holds or is reversed,
which notebooks' paired tables are not in ``results/`` yet, and what model size changes (notebook 09's
tables, as the README says it: ``readme.scale_agreement``). Pure: tables in, LaTeX text out."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from countdown_study.reporting.latex import (
    Column,
    escape,
    in_math,
    interval,
    number,
    present,
    table_float,
    tabular,
)
from countdown_study.reporting.paper_macros import KNOWN_VERDICTS, verdict_counts
from countdown_study.reporting.paper_sections import (
    CLAIMS,
    PAIRED_TABLES,
    VERDICT_COLUMNS,
    VERDICT_METRICS,
    fitted_table,
)
from countdown_study.reporting.readme import rloo_over_sft, scale_agreement, scale_sizes, trend_sentences

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
    return pd.DataFrame(rows, columns=[c.key for c in SYNTHESIS_COLUMNS])


def synthesis_body(
    paired: Mapping[str, pd.DataFrame],
    scale_verdicts: pd.DataFrame | None = None,
    scale_paired: pd.DataFrame | None = None,
    scale_trend: pd.DataFrame | None = None,
) -> str:
    """The synthesis: verdict counts per paired table, every claim that holds or is reversed, a sentence
    naming the notebooks whose paired tables are not in ``results/`` yet, and the paragraph on model size
    (``scale_paragraph``) where notebook 09's tables are there."""
    parts = []
    if paired:
        parts.append(verdict_sentence(verdict_counts(paired)))
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
            decided = decided.assign(notebook=decided["table"].map(PAIRED_TABLES).fillna(""))
            columns = (Column("notebook", "nb", "text"), *VERDICT_COLUMNS)
            caption = (
                "The reports' claims that hold or are reversed here (nb: the notebook whose paired table holds "
                "the row). " + CLAIMS
            )
            parts.append(fitted_table(decided, present(decided, columns), caption, "tab:decided", "table"))
    waiting = [notebook for name, notebook in PAIRED_TABLES.items() if name not in paired]
    if waiting:
        parts.append(
            f"Notebooks {', '.join(sorted(set(waiting)))} have not run yet for these results: their paired "
            "tables are not counted here."
        )
    scale = scale_paragraph(scale_verdicts, scale_paired, scale_trend)
    if scale:
        parts.append(scale)
    return "\n\n".join(parts) + "\n"


def latex_change(change: float, low: float, high: float) -> str:
    """``$+0.019$ [$+0.002$, $+0.035$]``: a change and its interval in LaTeX (``readme.trend_sentences``)."""
    return f"{in_math(number(change, signed=True))} {interval(low, high)}"


def scale_paragraph(
    verdicts: pd.DataFrame | None, paired: pd.DataFrame | None, trend: pd.DataFrame | None = None
) -> str:
    """What model size changes, from notebook 09's ``scale_verdicts`` and ``scale_paired``: how many headline
    claims keep their verdict at every size (naming those that do not), and at each size uniform RLOO's
    pass@1 gain over the SFT policy of that size and its change of pass@16 (the narrowing), with their
    intervals; then, from ``scale_trend`` where it has rows, how the differences change from each size to
    the next (``readme.trend_sentences``, Table~\ref{tab:scale_trend}). Empty while either of the first two
    is missing."""
    if verdicts is None or paired is None:
        return ""
    at_sizes = []
    for size in scale_sizes(verdicts):
        cells = []
        for metric in ("pass@1", "pass@16"):
            row = rloo_over_sft(paired, size, metric)
            if row is not None and not pd.isna(row["diff"]):
                cells.append(f"{metric} {latex_change(row['diff'], row['ci_low'], row['ci_high'])}")
        if cells:
            at_sizes.append(f"at {escape(size)}, {' and '.join(cells)}")
    text = (
        r"\paragraph{Model size.} Section~\ref{sec:scale} runs the headline rows at each size of the embedded "
        rf"policy (Table~\ref{{tab:scale_verdicts}}). {scale_agreement(verdicts, escape)}"
    )
    if at_sizes:
        text += (
            " Uniform RLOO against the SFT policy of the same size (pass@1: the gain; pass@16: a negative "
            f"difference is the narrowing): {'; '.join(at_sizes)}."
        )
    changes = trend_sentences(trend, latex_change, escape)
    if changes:
        text += rf" From each size to the next larger (Table~\ref{{tab:scale_trend}}): {changes}"
    return text


def verdict_sentence(counts: Mapping[str, int]) -> str:
    """The synthesis' opening: how many comparisons at ``VERDICT_METRICS`` carry each verdict."""
    return (
        rf"Table~\ref{{tab:synthesis}} counts the verdicts of every paired table at "
        rf"{' and '.join(VERDICT_METRICS)}: {counts['holds']} comparisons confirm a report's claim, "
        rf"{counts['reversed']} reverse one and {counts['inside noise']} lie inside the noise; "
        rf"{counts['a above b']} and {counts['a below b']} contrasts without a claim put the first method "
        r"above or below the second. A verdict of \emph{inside noise} is not evidence of no effect: the MDE "
        r"beside it says which effects the design would have detected."
    )
