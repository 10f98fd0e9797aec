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
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import matplotlib
import matplotlib.colors
import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

STYLE = ("seaborn-v0_8", "seaborn-v0_8-whitegrid", "seaborn-v0_8-paper", "seaborn-v0_8-colorblind")
"""Matplotlib styles every figure here is drawn in (the last sets a colour-blind-safe colour cycle)."""

_F = TypeVar("_F", bound=Callable[..., Figure])


def _styled(make: _F) -> _F:
    """Draw the figure ``make`` returns inside ``STYLE`` (rc settings are read as artists are made)."""

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        with matplotlib.style.context(STYLE):
            return make(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


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
    fig = Figure(figsize=(7.5 if many else 5.5, 3.6), layout="constrained")
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


def _curve_with_band(ax, group: pd.DataFrame, label: str, colour: str, markersize: float) -> None:
    """One method's pass@k against k with its Wilson 95% band (``study.pass_at_k_curves`` rows)."""
    ax.plot(group["k"], group["pass@k"], marker="o", markersize=markersize, label=label, color=colour)
    ax.fill_between(group["k"], group["ci_low"], group["ci_high"], alpha=0.15, color=colour)


def _pass_at_k_axes(ax) -> None:
    """k on a log-2 axis, pass@k from 0 to 1."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (samples per task)")
    ax.set_ylim(0, 1)


@_styled
def pass_at_k_panels(
    curves: pd.DataFrame,
    panels: Mapping[str, Sequence[str]],
    methods: Sequence[str] | None = None,
    reported: pd.DataFrame | None = None,
) -> Figure:
    """pass@k of chosen methods, one panel per named subset (``panels``: title -> methods; report 002's
    Figures 3-5), each with its Wilson band; a method keeps its colour in every panel (``colours_for``
    with ``methods``). ``reported`` (``references.reported`` rows: ``method``, ``metric`` ``pass@k``,
    ``value``, ``model``) adds the report's own points for the same methods as open markers on a dotted
    line, so their model's numbers sit beside ours, labelled in the legend."""
    shown = [m for names in panels.values() for m in names]
    colours = colours_for(curves[curves["method"].isin(shown)], methods)
    if reported is not None:
        reported = reported[reported["metric"].str.match(r"pass@\d+$")]
    fig = Figure(figsize=(4.0 * len(panels), 3.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for ax, (title, names) in zip(axes, panels.items(), strict=True):
        for method in names:
            group = curves[curves["method"] == method]
            if group.empty:
                continue
            _curve_with_band(ax, group, method, colours[method], markersize=2)
            if reported is not None:
                theirs = reported[reported["method"] == method]
                ks = theirs["metric"].str.slice(5).astype(int).to_numpy()
                order = np.argsort(ks)
                ax.plot(ks[order], theirs["value"].to_numpy()[order], linestyle=":",
                        marker="o", markersize=4, markerfacecolor="none", color=colours[method])  # fmt: skip
        _pass_at_k_axes(ax)
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=6, loc="lower right")
    axes[0].set_ylabel("pass@k")
    if reported is not None and len(reported):
        model = str(reported["model"].iloc[0])
        styles = [Line2D([], [], color="0.3", marker="o", markersize=2, label="this study (95% band)"),
                  Line2D([], [], color="0.3", linestyle=":", marker="o", markerfacecolor="none",
                         label=f"report: {model}")]  # fmt: skip
        fig.legend(handles=styles, loc="outside lower center", ncols=2, fontsize=7)
    return fig


@_styled
def phase_profile_figure(
    table: pd.DataFrame,
    metrics: Sequence[str],
    x: str = "name",
    hue: str = "source",
    title: str | None = None,
) -> Figure:
    """One panel per metric against training phase (``x``, in the table's order of first appearance),
    one line per ``hue`` (this study and the report: report 002's Figure 6 from ``edge_profile``)."""
    order = list(dict.fromkeys(table[x]))
    colours = method_colours(list(dict.fromkeys(table[hue])))
    fig = Figure(figsize=(3.0 * len(metrics), 3.0), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        for name, group in table.groupby(hue, sort=False):
            values = group.set_index(x)[metric].reindex(order)
            ax.plot(range(len(order)), values.to_numpy(dtype=float), marker="o", color=colours[name])
        ax.set_xticks(range(len(order)), [str(o) for o in order])
        ax.set_xlabel("training phase")
        ax.set_title(label(metric), fontsize=8)
    if title:
        fig.suptitle(title)
    _legend(fig, colours)
    return fig


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
    fig = Figure(figsize=(3.6 * max(1, len(panels)), 3.4), layout="constrained")
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


LABELS = {
    "mean_success": "probe success (mean)",
    "mastered_share": "share mastered (success > 0.9)",
    "edge_mean_shortest_operand_count": "edge rows: shortest-solution operands",
    "edge_mean_four_numbers": "edge rows: share with 4 numbers",
    "reward_mean": "training-batch reward (mean)",
    "exact_rate": "training-batch exact rate",
    "mixed_groups": "groups with mixed outcomes",
    "sampler_level": "controller level",
    "sampler_window_mean": "recent pass rate (window mean)",
    "sampler_ema_3": "success EMA, 3-number bucket",
    "sampler_ema_4": "success EMA, 4-number bucket",
    "sampler_p_3": "probability of the 3-number bucket",
    "sampler_p_4": "probability of the 4-number bucket",
    "sampler_unlocked": "hard bucket unlocked",
    "sampler_unknown": "prompts never observed",
    "sampler_too_hard": "prompts too hard",
    "sampler_learnable": "prompts learnable",
    "sampler_too_easy": "prompts too easy",
    "filter_rounds": "batches generated per step",
    "discarded_groups": "groups discarded per step",
    "generated_exact_rate": "exact rate of every generated group",
    "num_count": "numbers in the task",
    "tier": "difficulty tier",
    "level": "difficulty level",
    "nps_log1p": "log(1 + valid solutions)",
    "shortest_expression_depth": "depth of the shallowest solution",
    "shortest_operand_count": "fewest numbers reaching the target",
    "op_distinct_min": "fewest distinct operators in a solution",
    "solution_count": "distinct solutions (capped at 128)",
    "mean_score": "mean score",
    "well_formed": "well-formed rate",
    "sampler_observed": "prompts observed",
    "sampler_easy": "prompts in the easy pool",
    "sampler_normal": "prompts in the normal pool",
    "sampler_hard": "prompts in the hard pool",
    "sampler_posterior_mean": "posterior mean success (pool mean)",
    "sampler_fail_observed": "failure rate of observed prompts (mean)",
    "sampler_fail_mean": "failure rate, unobserved at the prior (mean)",
    "sampler_entropy": "normalised entropy of the weights",
    "sampler_ess": "effective sample size",
    "sampler_ess_frac": "effective sample size / pool size",
}
"""Axis labels of table and step-log columns (others: ``DIAGNOSTIC_LABELS``' patterns, else the column
name without ``sampler_``, spaces for ``_``)."""
DIAGNOSTIC_LABELS = {
    "tv": "total variation from {}",
    "js": "Jensen-Shannon divergence from {}",
    "rho": "Spearman of the weights with {}",
    "overlap": "batch overlap with a draw from {}",
}
"""Report 002's refresh diagnostics (``sampler_<measure>_<reference>``, ``samplers.feature_space``)."""
DIAGNOSTIC_REFERENCES = {"uni": "uniform", "edge": "edge-only", "ff": "feature_failure-only"}
"""The counterfactual distributions the diagnostics compare the active one with."""
LEVEL_NAMES = ("easy", "medium", "hard")
"""Names of the sliding-window controller's levels, by index."""
KNOWN_ORDERS = (
    ("T0", "T1", "T2", "T3", "OOD"),
    LEVEL_NAMES,
    ("too_easy", "learnable", "too_hard", "unknown"),
    ("easy", "hard"),
)
"""Orders of group labels that are not alphabetical (tiers, levels, reward-adaptive categories)."""


def ordered_labels(labels: Sequence) -> list:
    """Distinct labels in a reader's order: a known order (tiers, levels, categories) when every label is
    in one, else numbers by value (``3 < 4 < 10``), else text alphabetically with the numbers in it by
    value (``easiest 30%`` before ``easiest 100%``)."""
    distinct = list(dict.fromkeys(labels))
    for order in KNOWN_ORDERS:
        if all(str(x) in order for x in distinct):
            return sorted(distinct, key=lambda x: order.index(str(x)))
    numeric = pd.to_numeric(pd.Series(distinct, dtype=object), errors="coerce")
    if numeric.notna().all():
        return [distinct[i] for i in np.argsort(numeric.to_numpy(dtype=float), kind="stable")]
    return sorted(distinct, key=_natural_key)


def _natural_key(value) -> tuple:
    """Sort key of a label: its text with each run of digits compared as a number."""
    parts = re.split(r"(\d+)", str(value))
    return tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in parts)


def label(column: str) -> str:
    """A readable axis label for a step-log column."""
    if column in LABELS:
        return LABELS[column]
    name = column.removeprefix("sampler_")
    measure, _, reference = name.rpartition("_")
    if measure in DIAGNOSTIC_LABELS and reference in DIAGNOSTIC_REFERENCES:
        return DIAGNOSTIC_LABELS[measure].format(DIAGNOSTIC_REFERENCES[reference])
    top = re.fullmatch(r"top(\d+)", name)
    if top:
        return f"weight on the heaviest {top.group(1)}% of prompts"
    return name.replace("_", " ")


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """One colour per method, no two alike, the same in every panel of a figure: the style's colour cycle
    in order, or ``tab20``'s colours where there are more methods than the cycle holds (up to 20)."""
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(methods) <= len(cycle):
        return {method: cycle[i] for i, method in enumerate(methods)}
    tab20 = matplotlib.colormaps["tab20"]
    return {method: matplotlib.colors.to_hex(tab20(i % 20)) for i, method in enumerate(methods)}


SHADES = ("Blues", "Oranges", "Greens", "Purples", "Greys")
"""Colour maps whose shades tell the members of one group of labels apart (``label_colours``)."""


def label_colours(names: Sequence[str]) -> dict[str, str]:
    """One colour per label, no two alike. Labels ``group:member`` (``real:T2``) take shades of one hue
    per group (``SHADES``; darker for later members), so a group reads as one family; other labels take
    ``method_colours``."""
    names = list(names)
    groups = list(dict.fromkeys(n.split(":", 1)[0] for n in names))
    if names and all(":" in n for n in names) and 1 < len(groups) <= len(SHADES):
        colours = {}
        for group, family in zip(groups, SHADES, strict=False):
            members = [n for n in names if n.split(":", 1)[0] == group]
            shades = matplotlib.colormaps[family](np.linspace(0.4, 0.9, len(members)))
            colours.update({n: matplotlib.colors.to_hex(c) for n, c in zip(members, shades, strict=True)})
        return {n: colours[n] for n in names}
    return method_colours(names)


def colours_for(table: pd.DataFrame, methods: Sequence[str] | None = None) -> dict[str, str]:
    """The colour of each method of ``table``, in order: ``method_colours`` of the study's method order
    ``methods`` followed by the table's other methods. Given the same ``methods``, a method keeps its
    colour in every figure, also where others are missing (the SFT row has no training curve); without
    ``methods``, the table's order decides."""
    present = set(table["method"])
    colours = method_colours(list(dict.fromkeys([*(methods or ()), *table["method"]])))
    return {method: colour for method, colour in colours.items() if method in present}


def _legend(fig: Figure, colours: dict[str, str], title: str | None = None, patches: bool = False) -> None:
    """One legend for the whole figure, entries in ``colours``' order, below the panels."""
    if patches:
        handles = [Patch(facecolor=colour, alpha=0.6, label=str(name)) for name, colour in colours.items()]
    else:
        handles = [Line2D([], [], color=colour, label=str(name)) for name, colour in colours.items()]
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize=7, title=title,
        title_fontsize=7,
    )  # fmt: skip


def _panel_grid(
    n: int, columns: int, width: float, height: float, extra: float = 0.0, **subplot_kw
) -> tuple[Figure, np.ndarray]:
    """A figure of ``n`` panels, ``columns`` to a row at most, each ``width`` x ``height`` inches (plus
    ``extra`` inches of height for a legend); the grid's unused panels hidden."""
    cols = max(1, min(columns, n))
    rows = max(1, (n + cols - 1) // cols)
    fig = Figure(figsize=(width * cols, height * rows + extra), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **subplot_kw)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    return fig, axes


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

    One colour per method across every panel (``colours_for`` of ``methods``, the study's method order)
    and one legend; panel titles name what is plotted (``labels``, else ``label``: the step log's
    rewards are the training batches', not the held-out evaluation's).
    """
    fig, axes = _panel_grid(len(metrics), columns, 4.2, 3.0, extra=0.6)
    colours = colours_for(steps, methods)
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for method, group in steps.groupby("method", sort=False):
            if metric not in group or group[metric].isna().all():
                continue
            curve = group.groupby("step")[metric].mean().rolling(smooth, min_periods=1).mean()
            ax.plot(curve.index, curve.to_numpy(), color=colours[method])
        ax.set_xlabel("training step")
        ax.set_title((labels or {}).get(metric) or label(metric), fontsize=9)
    _legend(fig, colours)
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
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
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
    level_ax.set_title("level of each training batch", fontsize=9)
    for value, name in ((low, "tau_low"), (high, "tau_high")):
        window_ax.axhline(value, color="0.3", linestyle="--", linewidth=0.8)
        window_ax.annotate(f"{name} {value:.2f}", (0, value), xycoords=("axes fraction", "data"), fontsize=7,
                           xytext=(2, 2), textcoords="offset points")  # fmt: skip
    window_ax.set_title("recent pass rate of training batches (window mean)", fontsize=9)
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
    Panels are titled with their column's label (``label``), the figure with ``title`` when given.
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
        edges = np.histogram_bin_edges(values, bins=bins) if len(values) else np.linspace(0, 1, bins + 1)
        for key, group in groups:
            data = pd.to_numeric(group[column], errors="coerce").dropna().to_numpy(dtype=float)
            ax.hist(data, bins=edges, histtype="stepfilled", alpha=0.35, color=colours[key])
            ax.hist(data, bins=edges, histtype="step", linewidth=1.1, color=colours[key])
        ax.set_title(label(column), fontsize=8)
        ax.set_ylabel("tasks")
    if hue is not None:
        _legend(fig, colours, title=label(hue), patches=True)
    if title:
        fig.suptitle(title)
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
    fig = Figure(figsize=(3.4 * max(1, len(methods)), 2.4 * len(quantities) + 0.6), layout="constrained")
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
                ax.set_title(method, fontsize=8)
            if col == 0:
                ax.set_ylabel(axis_label)
            if row == len(quantities) - 1:
                ax.set_xlabel("training step")
    fig.suptitle(title)
    _legend(fig, colours)
    return fig


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
    fig = Figure(figsize=(10.0, 0.28 * len(cost) + 2.4), layout="constrained")
    bars, points = fig.subplots(1, 2, width_ratios=(1, 1.3))
    ys = np.arange(len(cost))[::-1]  # the first method on top
    bars.barh(ys, cost["rollouts_per_step"], color=[colours[k] for k in kinds], alpha=0.8)
    bars.set_yticks(ys, [f"{m}  ({i})" for i, m in enumerate(methods, start=1)], fontsize=7)
    bars.set_xlabel("rollouts generated per optimizer step")
    for number, (row, kind) in enumerate(zip(cost.itertuples(index=False), kinds, strict=True), start=1):
        x, y = row.tokens_per_run / 1e6, row.gain
        points.errorbar(
            x, y, xerr=_sd(row, "tokens_per_run_sd") / 1e6, yerr=_sd(row, "gain_sd"), fmt="o",
            color=colours[kind], capsize=2, markersize=4,
        )  # fmt: skip
        points.annotate(str(number), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=6)
    points.axhline(0, color="grey", linewidth=0.8)
    points.set_xlabel("completion tokens generated per run (millions)")
    points.set_ylabel("pass@1 gain over the starting policy")
    fig.suptitle(title, fontsize=10)
    if groups:
        _legend(fig, colours, patches=True)
    return fig


def _sd(row, name: str) -> float:
    value = getattr(row, name, 0.0)
    return 0.0 if value is None or not np.isfinite(value) else float(value)


@_styled
def answer_curves_figure(final: pd.DataFrame, first: pd.DataFrame, columns: int = 4) -> Figure:
    """Report 003's Figure 6: per method, pass@k of the final answer (solid) and of the first verifying
    answer (dashed), from ``study.pass_at_k_curves`` of each; the gap is what abandoning answers loses."""
    methods = list(dict.fromkeys(final["method"]))
    fig, axes = _panel_grid(len(methods), columns, 3.0, 2.6, extra=0.5, sharey=True)
    for ax, method in zip(axes.flat, methods, strict=False):
        for curves, style in ((final, "-"), (first, "--")):
            curve = curves[curves["method"] == method]
            ax.plot(curve["k"], curve["pass@k"], style, color="C0", marker="o", markersize=2)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1)
        ax.set_title(method, fontsize=8)
        ax.set_xlabel("k")
    axes[0, 0].set_ylabel("pass@k")
    handles = [Line2D([], [], color="C0", linestyle=s, label=t) for s, t in (("-", "final answer"),
               ("--", "first verifying answer"))]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=7)
    fig.suptitle(
        "pass@k of the final answer and of the first verifying answer, one panel per method", fontsize=10
    )
    return fig
