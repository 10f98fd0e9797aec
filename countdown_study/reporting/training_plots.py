"""Figures of training: step-log curves per method, report 001's controller, batch composition,
sampler statistics, a bandit's arms, and a profile by training phase."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from countdown_study.reporting.plot_labels import LEVEL_NAMES, label, ordered_labels
from countdown_study.reporting.plot_style import (
    TEXT_WIDTH,
    _legend,
    _panel_grid,
    _styled,
    colours_for,
    label_colours,
    method_colours,
    title_columns,
)


@_styled
def phase_profile_figure(
    table: pd.DataFrame,
    metrics: Sequence[str],
    x: str = "name",
    hue: str = "source",
    title: str | None = None,
) -> Figure:
    """One panel per metric against training phase (``x``, in the table's order of first appearance),
    one line per ``hue`` (this study and the report: report 002's Figure 6 from ``edge_profile``); two
    panels to a row."""
    order = list(dict.fromkeys(table[x]))
    colours = method_colours(list(dict.fromkeys(table[hue])))
    fig, grid = _panel_grid(len(metrics), 2, 3.25, 2.3, extra=0.5)
    for ax, metric in zip(grid.flat, metrics, strict=False):
        for name, group in table.groupby(hue, sort=False):
            values = group.set_index(x)[metric].reindex(order)
            ax.plot(range(len(order)), values.to_numpy(dtype=float), marker="o", color=colours[name])
        ax.set_xticks(range(len(order)), [str(o) for o in order])
        ax.set_xlabel("training phase")
        ax.set_title(label(metric), fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    _legend(fig, colours)
    return fig


@_styled
def training_curves(
    steps: pd.DataFrame,
    metrics: Sequence[str] = ("reward_mean", "exact_rate"),
    smooth: int = 5,
    columns: int = 3,
    methods: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """Step-log metrics over training per method (rolling mean over ``smooth`` steps, seeds averaged).

    One colour per method across every panel (``colours_for`` of ``methods``, the study's method order).
    The legend names only what is drawn: one below the panels when every panel draws the same methods,
    else one in each panel naming its own (a sampler's statistics exist for that sampler's rows only).
    Panel titles name what is plotted (``labels``, else ``label``: the step log's rewards are the training
    batches', not the held-out evaluation's).
    """
    titles = [(labels or {}).get(metric) or label(metric) for metric in metrics]
    columns = min(columns, title_columns(titles))
    fig, axes = _panel_grid(len(metrics), columns, 4.2, 3.0, extra=0.6)
    colours = colours_for(steps, methods)
    drawn = []  # the methods of each panel, in colour order
    for ax, metric in zip(axes.flat, metrics, strict=False):
        panel = []
        for method, group in steps.groupby("method", sort=False):
            if metric not in group or group[metric].isna().all():
                continue
            curve = group.groupby("step")[metric].mean().rolling(smooth, min_periods=1).mean()
            ax.plot(curve.index, curve.to_numpy(), color=colours[method])
            panel.append(method)
        drawn.append([m for m in colours if m in panel])
        ax.set_xlabel("training step")
        ax.set_title(titles[len(drawn) - 1], fontsize=8)
    if all(d == drawn[0] for d in drawn):
        _legend(fig, {m: colours[m] for m in drawn[0]})
    else:
        for ax, names in zip(axes.flat, drawn, strict=False):
            handles = [Line2D([], [], color=colours[m], label=m) for m in names]
            ax.legend(handles=handles, fontsize=6, loc="best", framealpha=0.85)
    return fig


@_styled
def controller_figure(
    steps: pd.DataFrame,
    low: float,
    high: float,
    prefix: str = "sampler_",
    methods: Sequence[str] | None = None,
) -> Figure:
    """Report 001's controller over training: the level of each step by name, and the window mean it
    decides on with the thresholds ``low`` / ``high`` (tau_low, tau_high); seeds averaged; colours as
    ``training_curves``'."""
    level, window = f"{prefix}level", f"{prefix}window_mean"
    controlled = steps[steps[level].notna()] if level in steps else steps.iloc[:0]
    fig = Figure(figsize=(TEXT_WIDTH, 3.0), layout="constrained")
    level_ax, window_ax = fig.subplots(1, 2)
    colours = colours_for(controlled, methods)
    for method, group in controlled.groupby("method", sort=False):
        by_step = group.groupby("step")
        level_ax.step(by_step[level].mean().index, by_step[level].mean().to_numpy(), where="post",
                      color=colours[method])  # fmt: skip
        if window in group and group[window].notna().any():
            window_ax.plot(
                by_step[window].mean().index, by_step[window].mean().to_numpy(), color=colours[method]
            )
    level_ax.set_yticks(range(len(LEVEL_NAMES)), LEVEL_NAMES)
    level_ax.set_title("level of each training batch", fontsize=8)
    for value, name in ((low, "tau_low"), (high, "tau_high")):
        window_ax.axhline(value, color="0.3", linestyle="--", linewidth=0.8)
        window_ax.annotate(f"{name} {value:.2f}", (0, value), xycoords=("axes fraction", "data"), fontsize=7,
                           xytext=(2, 2), textcoords="offset points")  # fmt: skip
    window_ax.set_title("recent pass rate of training batches (window mean)", fontsize=7.5)
    for ax in (level_ax, window_ax):
        ax.set_xlabel("training step")
    _legend(fig, colours)
    return fig


@_styled
def occupancy_figure(
    steps: pd.DataFrame,
    prefix: str = "batch_",
    title: str = "batch composition",
    columns: int = 3,
    legend_title: str | None = None,
) -> Figure:
    """Stacked share of each batch label (bucket, category, level) over training, one panel per method,
    ``columns`` panels to a row at most.

    Labels keep one colour (``label_colours``: no two alike, ``source:tier`` labels in one hue per source)
    and their reader's order (``ordered_labels``) in every panel; one legend (titled ``legend_title``),
    its entries written in words (``too_easy`` as "too easy").
    """
    counts = [c for c in steps.columns if c.startswith(prefix)]
    methods = [m for m, g in steps.groupby("method", sort=False) if g[counts].notna().any().any()]
    names = ordered_labels([c[len(prefix) :] for c in counts])
    colours = label_colours(names)
    fig, axes = _panel_grid(len(methods), columns, 4.2, 3.0, extra=0.8)
    for ax, method in zip(axes.flat, methods, strict=False):
        group = steps[steps["method"] == method].groupby("step")[counts].mean().fillna(0)
        present = [n for n in names if group[prefix + n].sum() > 0]
        shares = group[[prefix + n for n in present]]
        shares = shares.div(shares.sum(axis=1), axis=0)
        ax.stackplot(shares.index, shares.T.to_numpy(), colors=[colours[n] for n in present])
        ax.set_title(method, fontsize=8)
        ax.set_xlabel("training step")
        ax.set_xlim(shares.index.min(), shares.index.max())
        ax.set_ylim(0, 1)
    for row in axes:
        row[0].set_ylabel("share of the training batch")
    fig.suptitle(title)
    _legend(fig, {str(n).replace("_", " "): c for n, c in colours.items()}, title=legend_title, patches=True)
    return fig


@_styled
def sampler_stats_figure(
    steps: pd.DataFrame, prefix: str = "sampler_", smooth: int = 1, labels: Mapping[str, str] | None = None
) -> Figure:
    """Every numeric sampler statistic of the step log (EMAs, category counts, level) over training;
    panel titles from ``labels``, else ``label``."""
    columns = [c for c in steps.columns if c.startswith(prefix) and pd.api.types.is_numeric_dtype(steps[c])]
    columns = [c for c in columns if steps[c].notna().any()]
    if not columns:
        fig = Figure(figsize=(4, 2))
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no sampler statistics in the step log", ha="center", va="center")
        ax.set_axis_off()
        return fig
    return training_curves(steps, metrics=columns, smooth=smooth, labels=labels)


@_styled
def arm_state_figure(
    steps: pd.DataFrame,
    quantities: Mapping[str, str] | None = None,
    title: str = "the router's arms over training",
) -> Figure:
    """A bandit's per-arm state over training: one row per quantity (step-log prefix -> axis label; default
    ``sampler_p_`` the arm's probability, ``sampler_q_`` its value Q), one column per method, one line per
    arm (mean over seeds). Arms are the columns with a value in ``steps`` (a step log of several samplers
    holds others' columns too); ``<source>_<tier>`` is shown as ``source:tier`` and coloured by
    ``label_colours`` (one hue per source, darker for harder tiers)."""
    quantities = quantities or {"sampler_p_": "arm probability", "sampler_q_": "arm value Q"}
    methods = [m for m, g in steps.groupby("method", sort=False)
               if any(g[c].notna().any() for c in g.columns if c.startswith(tuple(quantities)))]  # fmt: skip
    arms = list(dict.fromkeys(c[len(p) :] for p in quantities for c in steps.columns
                              if c.startswith(p) and steps[c].notna().any()))  # fmt: skip
    names = {arm: arm.replace("_", ":", 1) for arm in arms}
    colours = label_colours(list(names.values()))
    width = min(TEXT_WIDTH, 3.4 * max(1, len(methods)))
    fig = Figure(figsize=(width, 2.2 * len(quantities) + 0.7), layout="constrained")
    axes = fig.subplots(len(quantities), max(1, len(methods)), squeeze=False, sharex=True, sharey="row")
    for col, method in enumerate(methods):
        group = steps[steps["method"] == method].groupby("step").mean(numeric_only=True)
        for row, (prefix, axis_label) in enumerate(quantities.items()):
            ax = axes[row, col]
            for arm in arms:
                column = prefix + arm
                if column in group and group[column].notna().any():
                    ax.plot(group.index, group[column], color=colours[names[arm]], linewidth=1.2)
            if row == 0:
                ax.set_title(method, fontsize=7.5)
            if col == 0:
                ax.set_ylabel(axis_label)
            if row == len(quantities) - 1:
                ax.set_xlabel("training step")
    fig.suptitle(title)
    _legend(fig, colours)
    return fig
