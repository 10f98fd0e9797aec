"""Figures from study tables: pass@k curves, per-difficulty bars, training curves, batch occupancy.

Each function takes a table from ``countdown_study.study`` (or a step log) and returns a matplotlib
``Figure``; notebooks save (and show) them with ``outputs.save_figure``.

Every figure is drawn at most ``TEXT_WIDTH`` wide, the paper's text width, so that the paper includes it
at its own size and its 7-9 pt text prints at 7-9 pt: a grid of panels wraps into rows rather than
growing wider.

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
from matplotlib.ticker import MaxNLocator

STYLE = ("seaborn-v0_8", "seaborn-v0_8-whitegrid", "seaborn-v0_8-paper", "seaborn-v0_8-colorblind")
"""Matplotlib styles every figure here is drawn in (fonts and grid; colours come from ``PALETTE``)."""

TEXT_WIDTH = 6.5
"""The paper's text width in inches (``paper/main.tex``: letter paper, 2.4 cm margins): no figure is
drawn wider, so none is shrunk to fit the page."""

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
           "#6A3D9A", "#999933")  # fmt: skip
"""Ten colours no two alike and none faint on white (Okabe-Ito's without its yellow, then black, brown,
purple and olive): one per method while a study has at most ten."""

PALETTE_MORE = ("#117733", "#AA4499", "#332288", "#882255", "#44AA99", "#CC6677", "#661100", "#6699CC",
                "#888888", "#A6761D")  # fmt: skip
"""Ten more, none faint (from Paul Tol's muted scheme, then grey and ochre), for a study of up to twenty
methods: each keeps one colour in every figure of the study."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
"""One marker per line where lines of several methods cross (``pass_at_k_panels``)."""

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
    "js": "JS divergence from {}",
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
    """One colour per method, no two alike, the same in every panel of a figure: ``PALETTE`` in order, then
    ``PALETTE_MORE`` (up to 20 methods), else ``tab20``'s colours, repeating."""
    colours = PALETTE + PALETTE_MORE
    if len(methods) <= len(colours):
        return {method: colours[i] for i, method in enumerate(methods)}
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
        handles=handles, loc="outside lower center", ncols=legend_columns([str(n) for n in colours]),
        fontsize=7, title=title, title_fontsize=7,
    )  # fmt: skip


def title_columns(titles: Sequence[str], width: float = TEXT_WIDTH) -> int:
    """How many panels fit side by side in ``width`` inches with their 8 pt titles on one line (about
    0.05 in per character, plus 0.2 in of the axis beside each that a title may run over)."""
    longest = max((len(t) for t in titles), default=0)
    return max(1, int(width // (0.05 * longest + 0.2)))


def legend_columns(names: Sequence[str], width: float = TEXT_WIDTH, most: int = 5) -> int:
    """How many legend entries of ``names`` fit side by side in ``width`` inches at 7 pt (an entry: its
    handle, about 0.45 in, and 0.06 in per character of the longest name), at most ``most``."""
    entry = 0.45 + 0.06 * max((len(n) for n in names), default=0)
    return max(1, min(len(names), most, int(width // entry)))


def _panel_grid(
    n: int, columns: int, width: float, height: float, extra: float = 0.0, **subplot_kw
) -> tuple[Figure, np.ndarray]:
    """A figure of ``n`` panels, ``columns`` to a row at most, each ``width`` x ``height`` inches (plus
    ``extra`` inches of height for a legend), narrowed to ``TEXT_WIDTH`` in all (a narrowed panel keeps at
    least 70% of its height); the grid's unused panels hidden."""
    cols = max(1, min(columns, n))
    rows = max(1, (n + cols - 1) // cols)
    scale = min(1.0, TEXT_WIDTH / (width * cols))
    width, height = width * scale, height * max(scale, 0.7)
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
            ax.hist(data, bins=edges, histtype="stepfilled", alpha=0.35, color=colours[key])
            ax.hist(data, bins=edges, histtype="step", linewidth=1.1, color=colours[key])
        ax.set_title(label(column), fontsize=8)
        ax.set_ylabel("tasks")
    if hue is not None:
        _legend(fig, colours, title=label(hue), patches=True)
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
    bars.barh(ys, cost["rollouts_per_step"], color=[colours[k] for k in kinds], alpha=0.8)
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


ANSWER_GAP = 0.02
"""The smallest gap between the first verifying answer's pass@k and the final answer's (at some k) for
which ``answer_curves_figure`` draws a method's two curves."""


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
    k (the largest gap's method when none does); right, that gap at k = 1 for every method, so the rows
    whose curves coincide are one bar each rather than a panel each. The gap is what abandoning a
    verifying answer for a later wrong one costs."""
    gaps = answer_gaps(final, first)
    methods = list(dict.fromkeys(final["method"]))
    widest = gaps.groupby("method", sort=False)["gap"].max().reindex(methods)
    shown = [m for m in methods if widest[m] >= min_gap] or [widest.idxmax()]
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
    curves_ax.set_title(f"rows whose curves differ by {min_gap:g} or more", fontsize=8)
    handles = [Line2D([], [], color=colours[m], label=m) for m in shown]
    handles += [Line2D([], [], color="0.3", linestyle=s, label=t) for s, t in (("-", "final answer"),
                ("--", "first verifying answer"))]  # fmt: skip
    curves_ax.legend(handles=handles, fontsize=6.5, loc="lower right")
    at_one = gaps[gaps["k"] == gaps["k"].min()].set_index("method")["gap"].reindex(methods)
    ys = np.arange(len(methods))[::-1]  # the first method on top
    gap_ax.barh(ys, at_one.to_numpy(), color=[colours.get(m, "0.6") for m in methods], height=0.6)
    gap_ax.set_yticks(ys, methods, fontsize=6.5)
    gap_ax.axvline(0, color="0.3", linewidth=0.8)
    gap_ax.set_xlabel("first verifying minus final, pass@1")
    gap_ax.set_title("every row: pass@1 lost to abandoned answers", fontsize=8)
    fig.suptitle("pass@k of the final answer and of the first verifying answer", fontsize=10)
    return fig
