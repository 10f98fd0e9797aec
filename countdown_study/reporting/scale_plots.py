"""The scale study's figure: each headline claim's difference with its interval, by model size.

``scale_figure`` takes the table ``study.scale.scale_paired`` writes (one row per size and claim: ``claim``,
``metric``, ``sign``, ``size``, ``parameters``, ``diff``, ``ci_low``, ``ci_high``) and returns a matplotlib
``Figure`` drawn like ``reporting.plots``' figures (no pyplot, ``plots.STYLE``, at most ``plots.TEXT_WIDTH``
wide): one panel per claim, the sizes along a logarithmic parameter axis, each size's difference with its
seed-aware 95% interval, a filled marker where the interval is clear of zero, coloured by the claimed sign.
"""

from __future__ import annotations

import textwrap

import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from countdown_study.reporting.plots import PALETTE, STYLE, TEXT_WIDTH

SIGN_COLOURS = {1: PALETTE[0], -1: PALETTE[1], 0: "0.45"}
"""Colour of a claim by its claimed sign: above, below, no claim (the row is only ordered)."""
SIGN_WORDS = {1: "claimed above", -1: "claimed below", 0: "no claim"}
"""The legend's words for each claimed sign."""
COLUMNS = 4
"""Panels per row."""
PANEL_HEIGHT = 1.55
"""Inches per row of panels (title, axis and tick labels included)."""


def parameter_label(parameters: float) -> str:
    """A parameter count in millions at three significant figures: ``862592`` -> ``0.863M``."""
    return f"{parameters / 1e6:.3g}M"


def clear_of_zero(low: float, high: float) -> bool:
    """Whether an interval lies clear of zero (a missing end: not clear)."""
    return bool(np.isfinite(low) and np.isfinite(high) and (low > 0 or high < 0))


def panel_title(claim: str, metric: str, width: int = 25) -> str:
    """A panel's title: the claim wrapped to ``width`` characters, then its metric."""
    return "\n".join([*textwrap.wrap(claim, width), f"({metric})"])


def scale_figure(paired: pd.DataFrame) -> Figure:
    """One panel per (claim, metric) of ``paired`` in its order: ``diff`` against ``parameters`` (log axis,
    ticks at the sizes present) with its interval, a dashed line at zero, a filled marker where the
    interval is clear of zero; coloured by ``sign``; one legend below the panels."""
    missing = [
        c for c in ("claim", "metric", "sign", "parameters", "diff", "ci_low", "ci_high") if c not in paired
    ]
    if missing:
        raise ValueError(f"the table lacks column(s) {missing}; pass a study.scale.scale_paired table")
    with matplotlib.style.context(STYLE):
        return _draw(paired)


def _draw(paired: pd.DataFrame) -> Figure:
    panels = list(dict.fromkeys(zip(paired["claim"], paired["metric"], strict=True)))
    columns = max(1, min(COLUMNS, len(panels)))
    rows = -(-len(panels) // columns)
    fig = Figure(figsize=(TEXT_WIDTH, PANEL_HEIGHT * rows + 0.4), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    sizes = np.sort(paired["parameters"].unique().astype(float))
    for ax, (claim, metric) in zip(axes.flat, panels, strict=False):
        group = paired[(paired["claim"] == claim) & (paired["metric"] == metric)]
        _panel(ax, group, sizes)
        ax.set_title(panel_title(claim, metric), fontsize=6.5)
    handles = [
        Line2D([], [], color=c, marker="o", linestyle="", label=SIGN_WORDS[s])
        for s, c in SIGN_COLOURS.items()
    ]
    handles += [
        Line2D([], [], color="0.2", marker="o", linestyle="", markerfacecolor=face, markeredgecolor="0.2",
               markeredgewidth=1.0, label=text)
        for face, text in (("0.2", "interval clear of zero"), ("white", "interval covers zero"))
    ]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncols=5, fontsize=7)
    fig.supylabel("difference a - b (seed-aware 95% interval)", fontsize=7)
    return fig


def _panel(ax, group: pd.DataFrame, sizes: np.ndarray) -> None:
    """One claim's differences by size on ``ax``: a line through the sizes, each with its interval."""
    group = group.sort_values("parameters")
    colour = SIGN_COLOURS[int(np.sign(group["sign"].iloc[0]))]
    x = group["parameters"].to_numpy(dtype=float)
    diff = group["diff"].to_numpy(dtype=float)
    ax.plot(x, diff, color=colour, linewidth=0.8, alpha=0.6)
    for xi, row in zip(x, group.itertuples(index=False), strict=True):
        low, high = float(row.ci_low), float(row.ci_high)
        err = np.nan_to_num(np.array([[row.diff - low], [high - row.diff]]), nan=0.0).clip(min=0)
        filled = clear_of_zero(low, high)
        ax.errorbar(xi, row.diff, yerr=err, fmt="o", color=colour, markersize=3.5, capsize=1.5, linewidth=0.9,
                    markerfacecolor=colour if filled else "white", markeredgecolor=colour,
                    markeredgewidth=1.0, zorder=3)  # fmt: skip
    ax.axhline(0.0, color="0.3", linestyle="--", linewidth=0.7, zorder=1)
    ax.set_xscale("log")
    ax.set_xticks(sizes, [parameter_label(p) for p in sizes])
    ax.minorticks_off()
    ax.set_xlim(sizes[0] / 1.8, sizes[-1] * 1.8)
    ax.tick_params(labelsize=6)
