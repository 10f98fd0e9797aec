"""Figures of the synthesis: every row against its uniform RLOO row (a forest plot), the pass@1 vs pass@16
trade-off, the curricula's pairwise matrix and what each row's budget bought.

Each function takes a table of ``countdown_study.study.synthesis`` / ``synthesis_tables`` (with ``report``
and ``model`` columns) and returns a matplotlib ``Figure`` drawn like ``reporting.plots``' figures: one
colour per report (the baselines grey), one marker per model, one legend below the panels. Points of the
scatter figures are numbered, with a key beside the panel naming each.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from countdown_study.reporting.plots import _styled, label, method_colours

BASELINE_COLOUR = "0.45"
"""Colour of the baseline rows (SFT, IPO, the uniform samplers)."""
MARKERS = ("o", "s", "^", "D")
"""Markers of the models, in order of appearance."""
MARKER_GLYPHS = {"o": "\u25cf", "s": "\u25a0", "^": "\u25b2", "D": "\u25c6"}
"""Each marker as a character, for a key's text."""


def report_colours(reports: Sequence[str]) -> dict[str, str]:
    """One colour per report in order of appearance (the style's cycle), ``baselines`` grey."""
    distinct = list(dict.fromkeys(reports))
    colours = method_colours([r for r in distinct if r != "baselines"])
    return {r: BASELINE_COLOUR if r == "baselines" else colours[r] for r in distinct}


def model_markers(models: Sequence[str]) -> dict[str, str]:
    """One marker per model, in order of appearance."""
    return {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(dict.fromkeys(models))}


def _errors(table: pd.DataFrame, centre: str, low: str, high: str) -> np.ndarray:
    """Asymmetric error bars ``(2, n)`` from interval columns (0 where an interval is missing)."""
    below = (table[centre] - table[low]).to_numpy(dtype=float)
    above = (table[high] - table[centre]).to_numpy(dtype=float)
    return np.nan_to_num(np.stack([below, above]), nan=0.0).clip(min=0)


def _legend(fig: Figure, colours: dict[str, str], markers: dict[str, str]) -> None:
    """One legend below the panels: the reports' colours, then the models' markers."""
    handles = [Patch(facecolor=c, label=f"report {r}" if r[0].isdigit() else r) for r, c in colours.items()]
    handles += [
        Line2D([], [], color="0.2", marker=m, linestyle="", label=model) for model, m in markers.items()
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=7)


def _key(ax, names: Sequence[str], markers: Sequence[str] | None = None) -> None:
    """The names of numbered points, one per line, in an axis of their own; a name shared by points of
    different models ends with its point's marker (``markers``, one per name)."""
    ax.set_axis_off()
    shared = {n for n in names if names.count(n) > 1}
    glyphs = [MARKER_GLYPHS.get(m, m) for m in markers] if markers is not None else [""] * len(names)
    lines = [
        f"{i:>2}  {name}" + (f" {glyph}" if name in shared and glyph else "")
        for i, (name, glyph) in enumerate(zip(names, glyphs, strict=True), start=1)
    ]
    ax.text(
        0, 1, "\n".join(lines), va="top", ha="left", fontsize=6.5, family="monospace", transform=ax.transAxes
    )


@_styled
def forest_figure(
    paired: pd.DataFrame,
    metrics: Sequence[str] = ("pass@1", "pass@16"),
    title: str = "every row against its uniform RLOO row (seed-aware 95% intervals)",
) -> Figure:
    """One panel per metric: each row's difference ``a - b`` with its interval (``ci_low``, ``ci_high``),
    one line per contrast of ``paired`` (``synthesis_tables.versus_uniform``), grouped by block under a bold
    heading naming its model and usual reference, coloured by report."""
    first = paired[paired["metric"] == metrics[0]]
    labels, position, y = [], {}, 0  # (y, text, heading), (block, a, b) -> y
    for block, group in first.groupby("block", sort=False):
        usual = group["b"].mode().iloc[0]
        labels.append((y, f"{group['model'].iloc[0]}, against {usual}", True))
        for row in group.itertuples(index=False):
            y -= 1
            labels.append((y, row.a if row.b == usual else f"{row.a} (against {row.b})", False))
            position[block, row.a, row.b] = y
        y -= 1.5
    colours = report_colours(list(first["report"]))
    fig = Figure(figsize=(4.0 + 3.0 * len(metrics), 0.2 * len(labels) + 1.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        rows = paired[paired["metric"] == metric]
        err = _errors(rows, "diff", "ci_low", "ci_high")
        for i, row in enumerate(rows.to_dict("records")):
            row_y = position[row["block"], row["a"], row["b"]]
            colour = colours[row["report"]]
            ax.errorbar(
                row["diff"], row_y, xerr=err[:, i : i + 1], fmt="o", color=colour, markersize=3.5, capsize=2
            )
        ax.axvline(0, color="0.3", linewidth=0.8)
        ax.set_xlabel(f"{label(metric)} difference from uniform RLOO")
        ax.set_title(label(metric), fontsize=9)
    axes[0].set_yticks([y for y, _, _ in labels], [text for _, text, _ in labels], fontsize=6.5)
    for tick, (_, _, heading) in zip(axes[0].get_yticklabels(), labels, strict=True):
        tick.set_fontweight("bold" if heading else "normal")
    fig.suptitle(title, fontsize=10)
    _legend(fig, colours, {})
    return fig


@_styled
def tradeoff_figure(
    tradeoff: pd.DataFrame, title: str = "pass@1 against pass@16, each row minus its uniform RLOO row"
) -> Figure:
    """Each row of ``synthesis_tables.tradeoff_table`` as a numbered point: its pass@1 difference (x) and
    pass@16 difference (y) from its uniform row with their intervals; colour per report, marker per model."""
    colours = report_colours(list(tradeoff["report"]))
    markers = model_markers(list(tradeoff["model"]))
    fig = Figure(figsize=(9.0, max(4.2, 0.13 * len(tradeoff) + 1.8)), layout="constrained")
    ax, key = fig.subplots(1, 2, width_ratios=(1.6, 1))
    xerr = _errors(tradeoff, "pass@1_diff", "pass@1_low", "pass@1_high")
    yerr = _errors(tradeoff, "pass@16_diff", "pass@16_low", "pass@16_high")
    for i, row in enumerate(tradeoff.to_dict("records")):
        x, y = row["pass@1_diff"], row["pass@16_diff"]
        ax.errorbar(x, y, xerr=xerr[:, i : i + 1], yerr=yerr[:, i : i + 1], fmt=markers[row["model"]],
                    color=colours[row["report"]], markersize=4, capsize=1.5, linewidth=0.7)  # fmt: skip
        ax.annotate(str(i + 1), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=6)
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.axvline(0, color="0.3", linewidth=0.8)
    ax.set_xlabel("pass@1 difference from uniform RLOO")
    ax.set_ylabel("pass@16 difference from uniform RLOO")
    _key(key, list(tradeoff["method"]), [markers[m] for m in tradeoff["model"]])
    fig.suptitle(title, fontsize=10)
    _legend(fig, colours, markers)
    return fig


def pairwise_matrix(pairs: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """The square matrix of ``pairs`` (a ``pairwise_table``): entry (row, column) is row minus column."""
    order = list(order) if order is not None else list(dict.fromkeys([*pairs["a"], *pairs["b"]]))
    matrix = pd.DataFrame(np.nan, index=order, columns=order)
    for row in pairs.itertuples(index=False):
        matrix.loc[row.a, row.b], matrix.loc[row.b, row.a] = row.diff, -row.diff
    return matrix


@_styled
def pairwise_figure(
    pairs: pd.DataFrame,
    order: Sequence[str] | None = None,
    metric: str = "pass@1",
    title: str = "the curricula against each other",
) -> Figure:
    """Heat map of ``pairwise_matrix`` (row minus column, ``order``: e.g. a ranking); a dot marks a pair
    whose seed-aware interval is clear of zero."""
    matrix = pairwise_matrix(pairs, order)
    names = list(matrix.index)
    limit = float(np.nanmax(np.abs(matrix.to_numpy()))) if matrix.notna().any().any() else 1.0
    fig = Figure(figsize=(0.3 * len(names) + 3.2, 0.3 * len(names) + 2.2), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(matrix.to_numpy(dtype=float), cmap="RdBu", vmin=-limit, vmax=limit)
    clear = pairs[pairs["verdict"].isin(("a above b", "a below b"))]
    for row in clear.itertuples(index=False):
        for r, c in ((row.a, row.b), (row.b, row.a)):
            ax.plot(names.index(c), names.index(r), marker=".", color="black", markersize=4)
    ax.set_xticks(range(len(names)), names, rotation=70, ha="right", fontsize=6.5)
    ax.set_yticks(range(len(names)), names, fontsize=6.5)
    ax.grid(False)
    fig.colorbar(image, ax=ax, shrink=0.7, label=f"{label(metric)}: row minus column")
    ax.set_title(title, fontsize=10)
    return fig


@_styled
def budget_figure(
    budget: pd.DataFrame, title: str = "what each row generated against what it gained, beside uniform RLOO"
) -> Figure:
    """Each row of ``synthesis_tables.budget_table`` as a numbered point: completion tokens it generated
    relative to its uniform row (x) and its pass@1 gain over that row with the interval (y)."""
    colours = report_colours(list(budget["report"]))
    markers = model_markers(list(budget["model"]))
    fig = Figure(figsize=(9.0, max(4.2, 0.13 * len(budget) + 1.8)), layout="constrained")
    ax, key = fig.subplots(1, 2, width_ratios=(1.6, 1))
    yerr = _errors(budget, "gain_vs_uniform", "gain_low", "gain_high")
    for i, row in enumerate(budget.to_dict("records")):
        x, y = row["tokens_vs_uniform"], row["gain_vs_uniform"]
        ax.errorbar(x, y, yerr=yerr[:, i : i + 1], fmt=markers[row["model"]], color=colours[row["report"]],
                    markersize=4, capsize=1.5, linewidth=0.7)  # fmt: skip
        ax.annotate(str(i + 1), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=6)
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.axvline(1, color="0.3", linewidth=0.8, linestyle="--")
    ax.set_xlabel("completion tokens generated per run, relative to uniform RLOO")
    ax.set_ylabel("pass@1 difference from uniform RLOO")
    _key(key, list(budget["method"]), [markers[m] for m in budget["model"]])
    fig.suptitle(title, fontsize=10)
    _legend(fig, colours, markers)
    return fig
