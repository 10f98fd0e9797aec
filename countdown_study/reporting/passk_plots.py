"""pass@k figures: curves with their Wilson bands, panels of chosen methods beside the reports' own
points, and report 003's final against first verifying answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from countdown_study.reporting.plot_style import (
    MARKERS,
    TEXT_WIDTH,
    _panel_grid,
    _styled,
    colours_for,
    method_colours,
)


@_styled
def pass_at_k_figure(
    curves: pd.DataFrame,
    title: str = "pass@k on the shared held-out tasks",
    methods: Sequence[str] | None = None,
) -> Figure:
    """pass@k against k (log scale) per method, with the Wilson 95% band (``study.pass_at_k_curves``).

    ``methods``: the study's method order (``StudyResult.methods``), which colours follow (``colours_for``).
    """
    colours = colours_for(curves, methods)
    many = len(colours) > LEGEND_INSIDE
    fig = Figure(figsize=(TEXT_WIDTH if many else 5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    for method, group in curves.groupby("method", sort=False):
        _curve_with_band(ax, group, method, colours[method], markersize=3)
    _pass_at_k_axes(ax)
    ax.set_ylabel("pass@k")
    ax.set_title(title)
    if many:
        fig.legend(loc="outside right center", fontsize=7)
    else:
        ax.legend(fontsize=7)
    return fig


LEGEND_INSIDE = 6
"""The most curves ``pass_at_k_figure`` lists in a legend inside its axes; more go beside them."""


def _curve_with_band(
    ax, group: pd.DataFrame, label: str, colour: str, markersize: float, marker: str = "o", band: float = 0.15
) -> None:
    """One method's pass@k against k with its Wilson 95% band (``study.pass_at_k_curves`` rows, ``band``
    its opacity); markers at the powers of two only, where k's log axis spaces them evenly."""
    ks = group["k"].to_numpy()
    every = [i for i, k in enumerate(ks) if k >= 1 and int(k) & (int(k) - 1) == 0]
    ax.plot(ks, group["pass@k"], marker=marker, markersize=markersize, label=label, color=colour,
            markevery=every)  # fmt: skip
    ax.fill_between(ks, group["ci_low"], group["ci_high"], alpha=band, color=colour)


def _pass_at_k_axes(ax) -> None:
    """k on a log-2 axis, pass@k from 0 to 1."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (samples per task)")
    ax.set_ylim(0, 1)


PANEL_LINES = 4
"""The most methods ``pass_at_k_panels`` draws in one panel; a longer list is split over several panels."""


def split_panels(panels: Mapping[str, Sequence[str]], most: int = PANEL_LINES) -> dict[str, list[str]]:
    """``panels`` with every list of more than ``most`` methods split into parts of at most ``most``,
    titled ``<title> (1 of 2)`` and so on."""
    split = {}
    for title, names in panels.items():
        parts = [list(names[i : i + most]) for i in range(0, len(names), most)] or [[]]
        for i, part in enumerate(parts, start=1):
            split[title if len(parts) == 1 else f"{title} ({i} of {len(parts)})"] = part
    return split


@_styled
def pass_at_k_panels(
    curves: pd.DataFrame,
    panels: Mapping[str, Sequence[str]],
    methods: Sequence[str] | None = None,
    reported: pd.DataFrame | None = None,
) -> Figure:
    """pass@k of chosen methods, one panel per named subset (``panels``: title -> methods; report 002's
    Figures 3-5; one of more than ``PANEL_LINES`` methods split, ``split_panels``), each with its Wilson
    band and its own legend below it naming what it draws; three panels to a row, else two.

    The methods shown get colours and markers of their own (``colours_for`` of the shown methods in the
    order of ``methods``: up to ten distinct colours), kept in every panel. ``reported``
    (``references.reported`` rows: ``method``, ``metric`` ``pass@k``, ``value``, ``model``) adds the
    report's own points for the same methods as open markers of the same shape on a dotted line, so their
    model's numbers sit beside ours; a figure legend says which is which."""
    panels = split_panels(panels)
    shown = list(dict.fromkeys(m for names in panels.values() for m in names))
    order = [m for m in (methods or ()) if m in shown] + shown
    colours = colours_for(curves[curves["method"].isin(shown)], order)
    markers = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(colours)}
    if reported is not None:
        reported = reported[reported["metric"].str.match(r"pass@\d+$")]
    columns = len(panels) if len(panels) <= 3 else 2
    fig, grid = _panel_grid(len(panels), columns, TEXT_WIDTH / columns, 2.4, extra=0.9 * len(panels) // columns + 0.3,
                            sharey=True)  # fmt: skip
    for ax, (title, names) in zip(grid.flat, panels.items(), strict=False):
        for method in names:
            group = curves[curves["method"] == method]
            if group.empty:
                continue
            _curve_with_band(ax, group, method, colours[method], markersize=3.5, marker=markers[method],
                             band=0.25 / max(1, len(names)))  # fmt: skip
            if reported is not None:
                theirs = reported[reported["method"] == method]
                ks = theirs["metric"].str.slice(5).astype(int).to_numpy()
                rank = np.argsort(ks)
                ax.plot(ks[rank], theirs["value"].to_numpy()[rank], linestyle=":", marker=markers[method],
                        markersize=4.5, markerfacecolor="none", color=colours[method])  # fmt: skip
        _pass_at_k_axes(ax)
        ax.set_xlabel("k")
        ax.set_title(title, fontsize=8)
        handles = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
        ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=1)
    for row in grid:
        row[0].set_ylabel("pass@k")
    if reported is not None and len(reported):
        model = str(reported["model"].iloc[0])
        styles = [Line2D([], [], color="0.3", marker="o", markersize=3, label="this study (95% band)"),
                  Line2D([], [], color="0.3", linestyle=":", marker="o", markerfacecolor="none",
                         label=f"report: {model}")]  # fmt: skip
        fig.legend(handles=styles, loc="outside upper center", ncols=2, fontsize=7)
    return fig


ANSWER_GAP = 0.02
"""The smallest gap between the first verifying answer's pass@k and the final answer's (at some k) for
which ``answer_curves_figure`` draws a method's two curves."""
ANSWER_CURVES = 4
"""The most methods whose curves ``answer_curves_figure`` draws (those with the widest gaps): more pairs of
curves in one panel are not told apart."""


def answer_gaps(final: pd.DataFrame, first: pd.DataFrame) -> pd.DataFrame:
    """Per method and k: the first verifying answer's pass@k minus the final answer's (``pass_at_k_curves``
    rows of each), in the methods' order of appearance."""
    keys = ["method", "k"]
    both = final[[*keys, "pass@k"]].merge(first[[*keys, "pass@k"]], on=keys, suffixes=("_final", "_first"))
    return both.assign(gap=both["pass@k_first"] - both["pass@k_final"])[[*keys, "gap"]]


@_styled
def answer_curves_figure(final: pd.DataFrame, first: pd.DataFrame, min_gap: float = ANSWER_GAP) -> Figure:
    """Report 003's Figure 6, condensed to what differs: left, pass@k of the final answer (solid) and of the
    first verifying answer (dashed) for the methods whose two curves differ by at least ``min_gap`` at some
    k (at most ``ANSWER_CURVES`` of them, the widest gaps; the largest gap's method when none does), named
    in a legend below the panel; right, that gap at k = 1 for every method, so the rows whose curves
    coincide are one bar each rather than a panel each. The gap is what abandoning a verifying answer for a
    later wrong one costs."""
    gaps = answer_gaps(final, first)
    methods = list(dict.fromkeys(final["method"]))
    widest = gaps.groupby("method", sort=False)["gap"].max().reindex(methods)
    differ = [m for m in methods if widest[m] >= min_gap]
    top = set(sorted(differ, key=lambda m: -widest[m])[:ANSWER_CURVES])
    shown = [m for m in differ if m in top] or [widest.idxmax()]
    colours = method_colours(shown)
    fig = Figure(figsize=(TEXT_WIDTH, max(3.0, 0.17 * len(methods) + 1.3)), layout="constrained")
    curves_ax, gap_ax = fig.subplots(1, 2, width_ratios=(1, 1.1))
    for method in shown:
        for curves, style in ((final, "-"), (first, "--")):
            curve = curves[curves["method"] == method]
            curves_ax.plot(
                curve["k"], curve["pass@k"], style, color=colours[method], marker="o", markersize=2.5
            )
    _pass_at_k_axes(curves_ax)
    curves_ax.set_xlabel("k")
    curves_ax.set_ylabel("pass@k")
    widest_of = f", the {ANSWER_CURVES} widest of {len(differ)}" if len(differ) > ANSWER_CURVES else ""
    curves_ax.set_title(f"rows whose curves differ by {min_gap:g} or more{widest_of}", fontsize=8)
    handles = [Line2D([], [], color=colours[m], label=m) for m in shown]
    handles += [Line2D([], [], color="0.3", linestyle=s, label=t) for s, t in (("-", "final answer"),
                ("--", "first verifying answer"))]  # fmt: skip
    curves_ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    at_one = gaps[gaps["k"] == gaps["k"].min()].set_index("method")["gap"].reindex(methods)
    ys = np.arange(len(methods))[::-1]  # the first method on top
    gap_ax.barh(ys, at_one.to_numpy(), color=[colours.get(m, "0.6") for m in methods], height=0.6)
    gap_ax.set_yticks(ys, methods, fontsize=6.5)
    gap_ax.axvline(0, color="0.3", linewidth=0.8)
    gap_ax.set_xlabel("first verifying minus final, pass@1")
    gap_ax.set_title("every row: pass@1 lost to abandoned answers", fontsize=8)
    fig.suptitle("pass@k of the final answer and of the first verifying answer", fontsize=10)
    return fig
