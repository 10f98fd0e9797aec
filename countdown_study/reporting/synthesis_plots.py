"""Figures of the synthesis: every row against its uniform RLOO row (a forest plot), the pass@1 vs pass@16
trade-off, the curricula's pairwise matrix and what each row's budget bought.

Each function takes a table of ``countdown_study.study.synthesis`` / ``synthesis_tables`` (with ``report``
and ``model`` columns) and returns a matplotlib ``Figure`` drawn like ``reporting.plots``' figures, at most
``plots.TEXT_WIDTH`` wide: one colour per report (the baselines grey), one marker per model, one legend
below the panels. Every row is named beside its own marks (a forest of labelled rows), never by a number
to look up in a key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from countdown_study.reporting.plots import TEXT_WIDTH, _styled, label, method_colours

BASELINE_COLOUR = "0.45"
"""Colour of the baseline rows (SFT, IPO, the uniform samplers)."""
MARKERS = ("o", "s", "^", "D")
"""Markers of the models, in order of appearance."""
ROW_HEIGHT = 0.12
"""Inches per labelled row of a forest figure (its 6.5 pt label and some air)."""


def report_colours(reports: Sequence[str]) -> dict[str, str]:
    """One colour per report in order of appearance (the style's cycle), ``baselines`` grey."""
    distinct = list(dict.fromkeys(reports))
    colours = method_colours([r for r in distinct if r != "baselines"])
    return {r: BASELINE_COLOUR if r == "baselines" else colours[r] for r in distinct}


def model_tags(models: Sequence[str]) -> dict[str, str]:
    """A short tag per model for a row's label: empty for the first model, else the words of its
    parenthesised detail that the first model's lacks (``(search-style SFT by this package)`` beside
    ``(SFT by this package)``: ``search-style``)."""
    distinct = list(dict.fromkeys(models))

    def words(model: str) -> list[str]:
        return model.partition("(")[2].rstrip(")").split()

    first = set(words(distinct[0])) if distinct else set()
    tags = {m: " ".join(w for w in words(m) if w not in first) or m for m in distinct[1:]}
    return {distinct[0]: "", **tags} if distinct else {}


def model_markers(models: Sequence[str]) -> dict[str, str]:
    """One marker per model, in order of appearance."""
    return {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(dict.fromkeys(models))}


def _errors(table: pd.DataFrame, centre: str, low: str, high: str) -> np.ndarray:
    """Asymmetric error bars ``(2, n)`` from interval columns (0 where an interval is missing)."""
    below = (table[centre] - table[low]).to_numpy(dtype=float)
    above = (table[high] - table[centre]).to_numpy(dtype=float)
    return np.nan_to_num(np.stack([below, above]), nan=0.0).clip(min=0)


def _legend(fig: Figure, colours: dict[str, str], markers: dict[str, str], fills: bool = False) -> None:
    """One legend below the panels: the reports' colours, then the models' markers, then (``fills``) what a
    filled and a hollow marker mean."""
    handles = [Patch(facecolor=c, label=f"report {r}" if r[0].isdigit() else r) for r, c in colours.items()]
    handles += [
        Line2D([], [], color="0.2", marker=m, linestyle="", label=model) for model, m in markers.items()
    ]
    if fills:
        handles += [
            Line2D([], [], color="0.2", marker="o", linestyle="", markerfacecolor=face, markeredgewidth=1.0,
                   label=text)
            for face, text in (("0.2", "interval clear of zero"), ("white", "interval covers zero"))
        ]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=7)


def _label_rows(ax, labels: Sequence[tuple[float, str, bool | str]]) -> None:
    """Name the rows of a forest on ``ax``'s y axis: (y, text, kind) each, a heading (kind True) in bold,
    a sub-heading (kind ``"sub"``) in italics, a row (False) plain."""
    ax.set_yticks([y for y, _, _ in labels], [text for _, text, _ in labels], fontsize=6.5)
    for tick, (_, _, kind) in zip(ax.get_yticklabels(), labels, strict=True):
        tick.set_fontweight("bold" if kind is True else "normal")
        tick.set_fontstyle("italic" if kind == "sub" else "normal")
    ax.set_ylim(min(y for y, _, _ in labels) - 0.8, 0.8)


def _clear(low: float, high: float) -> bool:
    """Whether an interval lies clear of zero."""
    return bool(np.isfinite(low) and np.isfinite(high) and (low > 0 or high < 0))


def _mark(ax, x: float, y: float, err: np.ndarray, colour: str, marker: str, filled: bool) -> None:
    """One row's difference with its interval: a filled marker when the interval is clear of zero."""
    ax.errorbar(x, y, xerr=err, fmt=marker, color=colour, markersize=4, capsize=1.5, linewidth=0.9,
                markerfacecolor=colour if filled else "white", markeredgecolor=colour,
                markeredgewidth=1.0, zorder=3)  # fmt: skip


@_styled
def forest_figure(
    paired: pd.DataFrame,
    metrics: Sequence[str] = ("pass@1", "pass@16"),
    title: str = "every row against its uniform RLOO row (seed-aware 95% intervals)",
) -> Figure:
    """One panel per metric: each row's difference ``a - b`` with its interval (``ci_low``, ``ci_high``),
    one line per contrast of ``paired`` (``synthesis_tables.versus_uniform``), grouped by block under a bold
    heading naming its model and, in italics, under the reference each run of rows is measured against;
    coloured by report, a filled marker where the interval is clear of zero."""
    first = paired[paired["metric"] == metrics[0]]
    labels, position, y = [], {}, 0  # (y, text, kind), (block, a, b) -> y
    for block, group in first.groupby("block", sort=False):
        labels.append((y, str(group["model"].iloc[0]), True))
        reference = None
        for row in group.itertuples(index=False):
            if row.b != reference:
                y -= 1
                labels.append((y, f"against {row.b}", "sub"))
                reference = row.b
            y -= 1
            labels.append((y, str(row.a), False))
            position[block, row.a, row.b] = y
        y -= 1.5
    colours = report_colours(list(first["report"]))
    fig = Figure(figsize=(TEXT_WIDTH, ROW_HEIGHT * len(labels) + 1.3), layout="constrained")
    axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        rows = paired[paired["metric"] == metric]
        err = _errors(rows, "diff", "ci_low", "ci_high")
        for i, row in enumerate(rows.to_dict("records")):
            _mark(ax, row["diff"], position[row["block"], row["a"], row["b"]], err[:, i : i + 1],
                  colours[row["report"]], "o", _clear(row["ci_low"], row["ci_high"]))  # fmt: skip
        ax.axvline(0, color="0.3", linewidth=0.8)
        ax.set_xlabel("difference from\nuniform RLOO", fontsize=8)
        ax.set_title(label(metric), fontsize=8)
    _label_rows(axes[0], labels)
    fig.suptitle(title, fontsize=9)
    _legend(fig, colours, {}, fills=True)
    return fig


QUADRANTS = (
    "pass@1 up, pass@16 up",
    "pass@1 up, pass@16 down",
    "pass@1 down, pass@16 up",
    "pass@1 down, pass@16 down",
)
"""The trade-off table's quadrants (``synthesis_tables.tradeoff_table``), in the order the figure shows."""


def tradeoff_rows(tradeoff: pd.DataFrame) -> pd.DataFrame:
    """The trade-off table's rows in the figure's order: by quadrant (``QUADRANTS``), then by pass@1
    difference, largest first."""
    rank = {q: i for i, q in enumerate(QUADRANTS)}
    order = tradeoff.assign(_q=tradeoff["quadrant"].map(rank).fillna(len(rank)))
    return order.sort_values(["_q", "pass@1_diff"], ascending=[True, False], kind="stable").drop(columns="_q")


@_styled
def tradeoff_figure(
    tradeoff: pd.DataFrame,
    title: str = "pass@1 and pass@16, each row minus its uniform RLOO row, by direction",
) -> Figure:
    """The trade-off between sharpening (pass@1) and coverage (pass@16) as a forest: one labelled line per
    row of ``synthesis_tables.tradeoff_table``, grouped under the quadrant its two point estimates fall in
    (``tradeoff_rows``), its pass@1 difference from uniform RLOO with the interval on the left and its
    pass@16 difference on the right; colour per report, marker per model, a filled marker where the
    interval is clear of zero."""
    rows = tradeoff_rows(tradeoff)
    colours = report_colours(list(tradeoff["report"]))
    markers = model_markers(list(tradeoff["model"]))
    tags = model_tags(list(tradeoff["model"]))
    labels, positions, y = [], [], 0.0
    for quadrant, group in rows.groupby("quadrant", sort=False):
        labels.append((y, f"{quadrant} ({len(group)})", True))
        for row in group.itertuples(index=False):
            y -= 1
            labels.append(
                (y, f"{row.method} ({tags[row.model]})" if tags[row.model] else str(row.method), False)
            )
            positions.append(y)
        y -= 1.5
    rows = rows.assign(_y=positions)
    fig = Figure(figsize=(TEXT_WIDTH, ROW_HEIGHT * len(labels) + 1.3), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, metric in zip(axes, ("pass@1", "pass@16"), strict=True):
        err = _errors(rows, f"{metric}_diff", f"{metric}_low", f"{metric}_high")
        for i, row in enumerate(rows.to_dict("records")):
            clear = _clear(row[f"{metric}_low"], row[f"{metric}_high"])
            _mark(ax, row[f"{metric}_diff"], row["_y"], err[:, i : i + 1], colours[row["report"]],
                  markers[row["model"]], clear)  # fmt: skip
        ax.axvline(0, color="0.3", linewidth=0.8)
        ax.set_xlabel("difference from\nuniform RLOO", fontsize=8)
        ax.set_title(label(metric), fontsize=8)
    _label_rows(axes[0], labels)
    fig.suptitle(title, fontsize=9)
    _legend(fig, colours, markers, fills=True)
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
    side = min(TEXT_WIDTH, 0.2 * len(names) + 2.4)
    fig = Figure(figsize=(side, side - 0.5), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(matrix.to_numpy(dtype=float), cmap="RdBu", vmin=-limit, vmax=limit)
    clear = pairs[pairs["verdict"].isin(("a above b", "a below b"))]
    for row in clear.itertuples(index=False):
        for r, c in ((row.a, row.b), (row.b, row.a)):
            ax.plot(names.index(c), names.index(r), marker=".", color="black", markersize=4)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=6.5)
    ax.set_yticks(range(len(names)), names, fontsize=6.5)
    ax.grid(False)
    fig.colorbar(image, ax=ax, shrink=0.7, label=f"{label(metric)}: row minus column")
    ax.set_title(title, fontsize=9)
    return fig


@_styled
def budget_figure(
    budget: pd.DataFrame, title: str = "what each row generated against what it gained, beside uniform RLOO"
) -> Figure:
    """Each row of ``synthesis_tables.budget_table`` as a labelled line, grouped under its starting policy:
    on the left the completion tokens it generated relative to its uniform row (1: as many), on the right
    its pass@1 difference from that row with the interval; colour per report, a filled marker where the
    interval is clear of zero."""
    colours = report_colours(list(budget["report"]))
    labels, positions, y = [], [], 0.0
    for model, group in budget.groupby("model", sort=False):
        labels.append((y, str(model), True))
        for row in group.itertuples(index=False):
            y -= 1
            labels.append((y, str(row.method), False))
            positions.append(y)
        y -= 1.5
    rows = budget.assign(_y=positions)
    fig = Figure(figsize=(TEXT_WIDTH, ROW_HEIGHT * len(labels) + 1.3), layout="constrained")
    tokens, gain = fig.subplots(1, 2, sharey=True)
    for row in rows.to_dict("records"):
        colour = colours[row["report"]]
        tokens.plot([1.0, row["tokens_vs_uniform"]], [row["_y"]] * 2, color=colour, linewidth=1.2)
        tokens.plot(row["tokens_vs_uniform"], row["_y"], "o", color=colour, markersize=3.5)
    tokens.axvline(1, color="0.3", linewidth=0.8, linestyle="--")
    tokens.set_xlabel("completion tokens per run,\nrelative to uniform RLOO", fontsize=8)
    tokens.set_title("generated", fontsize=8)
    err = _errors(rows, "gain_vs_uniform", "gain_low", "gain_high")
    for i, row in enumerate(rows.to_dict("records")):
        _mark(gain, row["gain_vs_uniform"], row["_y"], err[:, i : i + 1], colours[row["report"]], "o",
              _clear(row["gain_low"], row["gain_high"]))  # fmt: skip
    gain.axvline(0, color="0.3", linewidth=0.8)
    gain.set_xlabel("pass@1 difference\nfrom uniform RLOO", fontsize=8)
    gain.set_title("gained", fontsize=8)
    _label_rows(tokens, labels)
    fig.suptitle(title, fontsize=9)
    _legend(fig, colours, {}, fills=True)
    return fig
