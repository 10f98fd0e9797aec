"""Figures from study tables: pass@k curves, per-difficulty bars, training curves, batch occupancy.

Each function takes a table from ``countdown_study.study`` (or a step log) and returns a matplotlib
``Figure``; notebooks save (and show) them with ``outputs.save_figure``.

Figures are built with ``matplotlib.figure.Figure``, not ``pyplot``: importing this module neither
picks a backend nor changes global style, a figure is never left open in pyplot's registry (so a
Jupyter kernel does not show it a second time), and any headless process can draw them. The look
(seaborn's whitegrid theme at paper scale, from matplotlib's bundled styles) applies to figures made
here only. No seaborn or scipy import: the module loads without them (and without torch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

STYLE = ("seaborn-v0_8", "seaborn-v0_8-whitegrid", "seaborn-v0_8-paper")
"""Matplotlib styles every figure here is drawn in."""

_F = TypeVar("_F", bound=Callable[..., Figure])


def _styled(make: _F) -> _F:
    """Draw the figure ``make`` returns inside ``STYLE`` (rc settings are read as artists are made)."""

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        with matplotlib.style.context(STYLE):
            return make(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@_styled
def pass_at_k_figure(curves: pd.DataFrame, title: str = "pass@k on the shared held-out tasks") -> Figure:
    """pass@k against k (log scale) per method, with the Wilson 95% band (``study.pass_at_k_curves``)."""
    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    for method, group in curves.groupby("method", sort=False):
        ax.plot(group["k"], group["pass@k"], marker="o", markersize=3, label=method)
        ax.fill_between(group["k"], group["ci_low"], group["ci_high"], alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return fig


@_styled
def grouped_bars(table: pd.DataFrame, group: str, metric: str = "pass@1", title: str | None = None) -> Figure:
    """``metric`` per method and ``group`` (e.g. num_count, tier), error bars = seed s.d. when present."""
    fig = Figure(figsize=(5.5, 3.4), layout="constrained")
    ax = fig.subplots()
    methods = list(dict.fromkeys(table["method"]))
    groups = sorted(table[group].unique(), key=str)
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        rows = table[table["method"] == method].set_index(group).reindex(groups)
        sd = rows.get(f"{metric}_sd")
        xs = [g + (i - (len(methods) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, rows[metric], width=width, label=method, yerr=None if sd is None else sd.fillna(0))
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])
    ax.set_xlabel(group)
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} by {group}")
    ax.legend(fontsize=7)
    return fig


@_styled
def training_curves(
    steps: pd.DataFrame,
    metrics: Sequence[str] = ("reward_mean", "exact_rate"),
    smooth: int = 5,
    columns: int = 3,
) -> Figure:
    """Step-log metrics over training per method (rolling mean over ``smooth`` steps, seeds averaged)."""
    cols = min(columns, len(metrics))
    rows = (len(metrics) + cols - 1) // cols
    fig = Figure(figsize=(4.2 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for method, group in steps.groupby("method", sort=False):
            if group[metric].isna().all():
                continue
            curve = group.groupby("step")[metric].mean().rolling(smooth, min_periods=1).mean()
            ax.plot(curve.index, curve.to_numpy(), label=method)
        ax.set_xlabel("step")
        ax.set_ylabel(metric)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=7)
    return fig


@_styled
def occupancy_figure(steps: pd.DataFrame, prefix: str = "batch_", title: str = "batch composition") -> Figure:
    """Stacked share of each batch label (bucket, category, level) over training, one panel per method."""
    columns = [c for c in steps.columns if c.startswith(prefix)]
    methods = [m for m, g in steps.groupby("method", sort=False) if g[columns].notna().any().any()]
    fig = Figure(figsize=(4.2 * max(1, len(methods)), 3.2), layout="constrained")
    axes = fig.subplots(1, max(1, len(methods)), squeeze=False)
    for ax, method in zip(axes[0], methods, strict=False):
        group = steps[steps["method"] == method].groupby("step")[columns].mean().fillna(0)
        present = [c for c in columns if group[c].sum() > 0]
        shares = group[present].div(group[present].sum(axis=1), axis=0)
        ax.stackplot(shares.index, shares.T.to_numpy(), labels=[c[len(prefix) :] for c in present])
        ax.set_title(method, fontsize=8)
        ax.set_xlabel("step")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=6, loc="lower left")
    axes[0][0].set_ylabel("share of batch")
    fig.suptitle(title)
    return fig


@_styled
def histogram_grid(
    table: pd.DataFrame, columns: Sequence[str], hue: str | None = None, bins: int = 30
) -> Figure:
    """One histogram per column of ``table`` (e.g. Difficulty Vector fields), optionally split by ``hue``.

    Each panel shares its bin edges across the ``hue`` groups and draws one step outline per group
    (counts, not normalised); the first panel carries the legend, titled ``hue``.
    """
    n = len(columns)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(4 * cols, 2.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=True))
    for ax, column in zip(axes.flat, columns, strict=False):
        values = pd.to_numeric(table[column], errors="coerce").dropna().to_numpy(dtype=float)
        edges = np.histogram_bin_edges(values, bins=bins) if len(values) else np.linspace(0, 1, bins + 1)
        for label, group in groups:
            data = pd.to_numeric(group[column], errors="coerce").dropna().to_numpy(dtype=float)
            ax.hist(
                data, bins=edges, histtype="step", linewidth=1.2, label=None if label is None else str(label)
            )
        ax.set_title(column, fontsize=8)
        ax.set_ylabel("count")
    if hue is not None:
        axes[0][0].legend(title=hue, fontsize=6, title_fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    return fig


@_styled
def sampler_stats_figure(steps: pd.DataFrame, prefix: str = "sampler_", smooth: int = 1) -> Figure:
    """Every numeric sampler statistic of the step log (EMAs, category counts, level) over training."""
    columns = [c for c in steps.columns if c.startswith(prefix) and pd.api.types.is_numeric_dtype(steps[c])]
    columns = [c for c in columns if steps[c].notna().any()]
    if not columns:
        fig = Figure(figsize=(4, 2))
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no sampler statistics in the step log", ha="center", va="center")
        ax.set_axis_off()
        return fig
    return training_curves(steps, metrics=columns, smooth=smooth)
