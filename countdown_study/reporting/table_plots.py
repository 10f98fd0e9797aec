"""Figures of per-group tables: bars by group, outcome shares, histograms of task features, and what
each method generated for its gain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from countdown_study.reporting.plot_labels import label, ordered_labels
from countdown_study.reporting.plot_style import (
    TEXT_WIDTH,
    _legend,
    _panel_grid,
    _styled,
    colours_for,
    label_colours,
    method_colours,
)

HISTOGRAM_FILL = 0.35
"""Opacity of a histogram's fill (``histogram_grid``), so overlapping groups show through each other;
each keeps a full-colour outline, and its legend square the same fill."""


@_styled
def grouped_bars(
    table: pd.DataFrame,
    group: str,
    metric: str = "pass@1",
    title: str | None = None,
    methods: Sequence[str] | None = None,
) -> Figure:
    """``metric`` per method and ``group`` (e.g. num_count, tier; in a reader's order, ``ordered_labels``),
    error bars = seed s.d. when present; ``methods`` as in ``pass_at_k_figure``."""
    fig = Figure(figsize=(5.5, 3.4), layout="constrained")
    ax = fig.subplots()
    colours = colours_for(table, methods)
    shown = list(colours)
    groups = ordered_labels(list(table[group].unique()))
    width = 0.8 / max(1, len(shown))
    for i, method in enumerate(shown):
        rows = table[table["method"] == method].set_index(group).reindex(groups)
        sd = rows.get(f"{metric}_sd")
        xs = [g + (i - (len(shown) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, rows[metric], width=width, label=method, color=colours[method],
               yerr=None if sd is None else sd.fillna(0))  # fmt: skip
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])
    ax.set_xlabel(label(group))
    ax.set_ylabel(label(metric))
    ax.set_title(title or f"{label(metric)} by {label(group)}")
    ax.legend(fontsize=7)
    return fig


@_styled
def outcome_shares_figure(
    table: pd.DataFrame, panel: str = "source", group: str = "tier", first: str = "accepted",
    title: str = "generated tasks: accepted, or why not",
) -> Figure:  # fmt: skip
    """Share of each outcome among the candidates of every ``group`` (tier), one panel per ``panel``
    (source): a stacked bar per group. ``table`` has one row per (``panel``, ``group``) and one count
    column per outcome (other numeric columns ending in ``_share`` are ignored); ``first`` is drawn at the
    bottom, the other outcomes by their total, largest first. Bars are labelled with their candidates."""
    outcomes = [c for c in table.columns if c not in (panel, group) and not str(c).endswith("_share")]
    rest = sorted((c for c in outcomes if c != first), key=lambda c: -table[c].sum())
    outcomes = [first, *rest] if first in outcomes else rest
    colours = label_colours(outcomes)
    panels = list(dict.fromkeys(table[panel]))
    fig = Figure(figsize=(min(TEXT_WIDTH, 3.6 * max(1, len(panels))), 3.4), layout="constrained")
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], panels, strict=False):
        rows = table[table[panel] == name].set_index(group)
        rows = rows.reindex(ordered_labels(list(rows.index)))
        counts = rows[outcomes].to_numpy(dtype=float)  # (groups, outcomes)
        totals = counts.sum(axis=1)
        shares = counts / np.where(totals > 0, totals, 1)[:, None]
        xs = np.arange(len(rows))
        bottom = np.zeros(len(rows))
        for j, outcome in enumerate(outcomes):
            ax.bar(xs, shares[:, j], bottom=bottom, color=colours[outcome], width=0.7)
            bottom += shares[:, j]
        for x, total in zip(xs, totals, strict=True):
            ax.text(x, 1.01, f"n={int(total)}", ha="center", va="bottom", fontsize=6)
        ax.set_xticks(xs, [str(g) for g in rows.index])
        ax.set_xlabel(label(group))
        ax.set_title(str(name).replace("_", "-"), fontsize=8)
        ax.set_ylim(0, 1.08)
    axes[0][0].set_ylabel("share of candidates")
    fig.suptitle(title)
    _legend(fig, {str(o).replace("_", " "): colours[o] for o in outcomes}, patches=True)
    return fig


@_styled
def histogram_grid(
    table: pd.DataFrame,
    columns: Sequence[str],
    hue: str | None = None,
    bins: int = 30,
    title: str | None = None,
) -> Figure:
    """One histogram per column of ``table`` (e.g. Difficulty Vector fields), optionally split by ``hue``.

    Each panel shares its bin edges across the ``hue`` groups and draws each group as a translucent
    filled histogram with an outline in its colour (counts, not normalised); groups keep one colour and
    their reader's order (``ordered_labels``) in every panel, with one legend titled ``hue``'s label.
    A column of whole numbers gets whole-number ticks, and one bar per value when it takes at most
    ``bins`` values (``histogram_edges``). Panels are titled with their column's label (``label``), the
    figure with ``title`` when given.
    """
    fig, axes = _panel_grid(len(columns), 3, 4.0, 2.8, extra=0.5 if hue else 0.0)
    if hue is None:
        groups = [(None, table)]
    else:
        by_label = dict(list(table.groupby(hue, sort=False)))
        groups = [(key, by_label[key]) for key in ordered_labels(list(by_label))]
    colours = method_colours([key for key, _ in groups])
    for ax, column in zip(axes.flat, columns, strict=False):
        values = pd.to_numeric(table[column], errors="coerce").dropna().to_numpy(dtype=float)
        edges = histogram_edges(values, bins)
        if is_whole(values):
            whole_number_ticks(ax, values)
        for key, group in groups:
            data = pd.to_numeric(group[column], errors="coerce").dropna().to_numpy(dtype=float)
            ax.hist(data, bins=edges, histtype="stepfilled", alpha=HISTOGRAM_FILL, color=colours[key])
            ax.hist(data, bins=edges, histtype="step", linewidth=1.1, color=colours[key])
        ax.set_title(label(column), fontsize=8)
        ax.set_ylabel("tasks")
    if hue is not None:
        _legend(fig, colours, title=label(hue), patches=True, fill=HISTOGRAM_FILL)
    if title:
        fig.suptitle(title)
    return fig


def is_whole(values: np.ndarray) -> bool:
    """Whether every value is a whole number (a count, a depth, a flag)."""
    return bool(len(values)) and bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))


def whole_number_ticks(ax, values: np.ndarray, most: int = 8) -> None:
    """x ticks at whole numbers only: at every value when they span at most ``most``, else at most six."""
    low, high = int(values.min()), int(values.max())
    if high - low + 1 <= most:
        ax.set_xticks(range(low, high + 1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))


def histogram_edges(values: np.ndarray, bins: int) -> np.ndarray:
    """Bin edges for ``values``: one bin centred on each whole number when they are whole and span at most
    ``bins`` values, else ``bins`` equal bins over their range (0 to 1 when there are none)."""
    if not len(values):
        return np.linspace(0, 1, bins + 1)
    low, high = float(values.min()), float(values.max())
    if is_whole(values) and high - low + 1 <= bins:
        return np.arange(low - 0.5, high + 1.0, 1.0)
    return np.histogram_bin_edges(values, bins=bins)


@_styled
def cost_figure(
    cost: pd.DataFrame,
    groups: Mapping[str, str] | None = None,
    title: str = "what each method generated for its pass@1",
) -> Figure:
    """Two panels from ``study.generation_cost``: rollouts generated per optimizer step (a labelled bar per
    method), and pass@1 gained over the starting policy against completion tokens generated per run (a
    point per method numbered as its bar, seed s.d. as error bars). ``groups`` maps a method to its kind (e.g.
    "field", "reports"): one colour per kind and one legend (without: one colour per method)."""
    methods = list(cost["method"])
    kinds = [groups.get(m, "other") if groups else m for m in methods]
    colours = method_colours(list(dict.fromkeys(kinds)))
    fig = Figure(figsize=(TEXT_WIDTH, 0.2 * len(cost) + 2.2), layout="constrained")
    bars, points = fig.subplots(1, 2, width_ratios=(1, 1.3))
    ys = np.arange(len(cost))[::-1]  # the first method on top
    bars.barh(ys, cost["rollouts_per_step"], color=[colours[k] for k in kinds])
    bars.set_yticks(ys, [f"{m}  ({i})" for i, m in enumerate(methods, start=1)], fontsize=7)
    bars.set_xlabel("rollouts per optimizer step")
    for number, (row, kind) in enumerate(zip(cost.itertuples(index=False), kinds, strict=True), start=1):
        x, y = row.tokens_per_run / 1e6, row.gain
        points.errorbar(
            x, y, xerr=_sd(row, "tokens_per_run_sd") / 1e6, yerr=_sd(row, "gain_sd"), fmt="o",
            color=colours[kind], capsize=2, markersize=4,
        )  # fmt: skip
        points.annotate(str(number), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=6)
    points.axhline(0, color="grey", linewidth=0.8)
    points.set_xlabel("completion tokens per run (millions)")
    points.set_ylabel("pass@1 gain over the starting policy")
    fig.suptitle(title, fontsize=10)
    if groups:
        _legend(fig, colours, patches=True)
    return fig


def _sd(row, name: str) -> float:
    value = getattr(row, name, 0.0)
    return 0.0 if value is None or not np.isfinite(value) else float(value)
