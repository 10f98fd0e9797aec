"""Figures from study tables: pass@k curves, per-difficulty bars, training curves, batch occupancy.

Each function takes a table from ``countdown_study.study`` (or a step log) and returns a matplotlib
Figure; notebooks save them with ``outputs.save_figure``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


def pass_at_k_figure(curves: pd.DataFrame, title: str = "pass@k on the shared held-out tasks"):
    """pass@k against k (log scale) per method, with the Wilson 95% band (``study.pass_at_k_curves``)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
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


def grouped_bars(table: pd.DataFrame, group: str, metric: str = "pass@1", title: str | None = None):
    """``metric`` per method and ``group`` (e.g. num_count, tier), error bars = seed s.d. when present."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
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


def training_curves(
    steps: pd.DataFrame,
    metrics: Sequence[str] = ("reward_mean", "exact_rate"),
    smooth: int = 5,
    columns: int = 3,
):
    """Step-log metrics over training per method (rolling mean over ``smooth`` steps, seeds averaged)."""
    cols = min(columns, len(metrics))
    rows = (len(metrics) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
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
    fig.tight_layout()
    return fig


def occupancy_figure(steps: pd.DataFrame, prefix: str = "batch_", title: str = "batch composition"):
    """Stacked share of each batch label (bucket, category, level) over training, one panel per method."""
    columns = [c for c in steps.columns if c.startswith(prefix)]
    methods = [m for m, g in steps.groupby("method", sort=False) if g[columns].notna().any().any()]
    fig, axes = plt.subplots(
        1, max(1, len(methods)), figsize=(4.2 * max(1, len(methods)), 3.2), squeeze=False
    )
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
    fig.tight_layout()
    return fig


def histogram_grid(table: pd.DataFrame, columns: Sequence[str], hue: str | None = None, bins: int = 30):
    """One histogram per column of ``table`` (e.g. Difficulty Vector fields), optionally split by ``hue``."""
    n = len(columns)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.8 * rows), squeeze=False)
    for ax, column in zip(axes.flat, columns, strict=False):
        sns.histplot(
            data=table, x=column, hue=hue, bins=bins, ax=ax, element="step", stat="count", common_norm=False
        )
        ax.set_title(column, fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def sampler_stats_figure(steps: pd.DataFrame, prefix: str = "sampler_", smooth: int = 1):
    """Every numeric sampler statistic of the step log (EMAs, category counts, level) over training."""
    columns = [c for c in steps.columns if c.startswith(prefix) and pd.api.types.is_numeric_dtype(steps[c])]
    columns = [c for c in columns if steps[c].notna().any()]
    if not columns:
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "no sampler statistics in the step log", ha="center", va="center")
        ax.set_axis_off()
        return fig
    return training_curves(steps, metrics=columns, smooth=smooth)
