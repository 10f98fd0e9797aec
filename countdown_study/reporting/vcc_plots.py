"""Report 003's bar figures, from its tables: Figure 3 (pass@1 against pass@16) and Figure 5 (the VCC
ablation).

Each function takes a table as ``references.side_by_side`` writes it (``vcc_003_table1``,
``vcc_003_table2``: one row per source x method, a column per metric) and returns a matplotlib
``Figure``: one panel per source (this study, then the report; their policy is not ours, so their bars
are not drawn on our axes), one group of bars per method, one bar per metric with its value written
above it. Figures are built as in ``plots`` (no pyplot, drawn in ``plots.STYLE``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from countdown_study.reporting.plots import STYLE, TEXT_WIDTH, label, method_colours

FIGURE_3_METRICS = ("pass@1", "pass@16")
"""Report 003's Figure 3: single-rollout accuracy (pass@1) against oracle pass@16, per Table 1 row."""
FIGURE_5_METRICS = ("exact_rate", "mean_score", "pass@16")
"""Report 003's Figure 5: the VCC family of its Table 2 (rollout accuracy, mean reward, oracle pass@16)."""
TABLE_2_ALIASES = {"RLOO uniform (Table 2 run)": "RLOO uniform"}
"""Report 003's Table 2 names its RLOO baseline apart from Table 1's (another run); its bars stand where
ours do."""
METRIC_LABELS = {
    "pass@1": "pass@1 (rollout accuracy)",
    "pass@16": "oracle pass@16",
    "exact_rate": "rollout accuracy",
    "mean_score": "mean reward",
}
"""Report 003's names of the metrics in the legend (``plots.label`` for the others)."""
SOURCE_ORDER = ("this study",)
"""Sources drawn first; the others (the reports) follow in the table's order."""


def bar_layout(n_metrics: int, width: float = 0.8) -> np.ndarray:
    """Offsets of ``n_metrics`` bars around their group's centre, filling ``width``.  # (M,)"""
    if n_metrics < 1:
        raise ValueError(f"need at least one metric, got {n_metrics}")
    bar = width / n_metrics
    return (np.arange(n_metrics) - (n_metrics - 1) / 2) * bar


def bar_frame(
    table: pd.DataFrame,
    metrics: Sequence[str],
    methods: Sequence[str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The values each panel draws: one row per (source, method) in drawing order, ``model`` and the
    ``metrics`` (NaN where a source lacks a method or a metric). ``aliases`` renames methods first;
    ``methods`` orders (and selects) them, default: as they first appear."""
    missing = [c for c in ("source", "model", "method") if c not in table.columns]
    if missing:
        raise ValueError(f"the table lacks column(s) {missing}; pass a references.side_by_side table")
    if not any(m in table.columns for m in metrics):
        raise ValueError(f"the table has none of the metrics {list(metrics)}; it has {list(table.columns)}")
    frame = table.assign(method=table["method"].replace(dict(aliases or {})))
    order = list(dict.fromkeys(frame["method"])) if methods is None else list(methods)
    sources = list(dict.fromkeys([*(s for s in SOURCE_ORDER if s in set(frame["source"])), *frame["source"]]))
    rows = []
    for source in sources:
        part = frame[frame["source"] == source].drop_duplicates("method").set_index("method")
        for method in order:
            values = {
                m: float(part.at[method, m]) if method in part.index and m in part else np.nan
                for m in metrics
            }
            rows.append({"source": source, "model": part["model"].iloc[0], "method": method, **values})
    return pd.DataFrame(rows)


def metric_bars(
    table: pd.DataFrame,
    metrics: Sequence[str],
    title: str,
    methods: Sequence[str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Figure:
    """Bars of ``metrics`` per method, one panel per source (``bar_frame``) stacked at the text's width, on a
    shared 0-1 axis, the methods named under the last panel."""
    frame = bar_frame(table, metrics, methods, aliases)
    sources = list(dict.fromkeys(frame["source"]))
    order = list(dict.fromkeys(frame["method"]))
    with matplotlib.style.context(STYLE):
        colours = method_colours(list(metrics))
        fig = Figure(figsize=(TEXT_WIDTH, 2.2 * len(sources) + 1.0), layout="constrained")
        axes = np.atleast_1d(fig.subplots(len(sources), 1, sharex=True, sharey=True))
        offsets = bar_layout(len(metrics))
        for ax, source in zip(axes, sources, strict=True):
            part = frame[frame["source"] == source]
            for offset, metric in zip(offsets, metrics, strict=True):
                bars = ax.bar(np.arange(len(order)) + offset, part[metric], width=0.8 / len(metrics),
                              color=colours[metric], label=METRIC_LABELS.get(metric, label(metric)))  # fmt: skip
                ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)
            ax.set_ylim(0, 1.12)
            ax.set_ylabel("rate or score")
            ax.set_title(f"{source}\n{part['model'].iloc[0]}", fontsize=8)
        axes[-1].set_xticks(range(len(order)), [textwrap.fill(m, 14) for m in order], fontsize=7)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=len(metrics), fontsize=7)
        fig.suptitle(title, fontsize=9)
    return fig


def figure_3(table1: pd.DataFrame, methods: Sequence[str] | None = None) -> Figure:
    """Report 003's Figure 3 from its Table 1 (``vcc_003_table1``): pass@1 against pass@16 per row."""
    return metric_bars(
        table1, FIGURE_3_METRICS, "pass@1 against oracle pass@16 (report 003, Figure 3)", methods=methods
    )


def figure_5(table2: pd.DataFrame, methods: Sequence[str] | None = None) -> Figure:
    """Report 003's Figure 5 from its Table 2 (``vcc_003_table2``): the VCC family's rollout accuracy,
    mean reward and pass@16; their Table 2 baseline stands beside ours (``TABLE_2_ALIASES``)."""
    return metric_bars(
        table2,
        FIGURE_5_METRICS,
        "the VCC ablation: rollout accuracy, mean reward, oracle pass@16 (report 003, Figure 5)",
        methods=methods,
        aliases=TABLE_2_ALIASES,
    )
