"""The look every figure of ``reporting`` shares: style, width, colours, legends and panel grids.

Every figure is drawn at most ``TEXT_WIDTH`` wide, the paper's text width, so that the paper includes it
at its own size and its 7-9 pt text prints at 7-9 pt: a grid of panels wraps into rows (``_panel_grid``)
rather than growing wider. ``_styled`` draws a figure inside ``STYLE`` (seaborn's whitegrid theme at paper
scale, from matplotlib's bundled styles) without changing global style. Colours: ``method_colours`` (one
per method, no two alike), ``label_colours`` (one hue per group of ``group:member`` labels) and
``colours_for`` (a study's method order, kept in every figure).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
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


def _legend(
    fig: Figure, colours: dict[str, str], title: str | None = None, patches: bool = False, fill: float = 1.0
) -> None:
    """One legend for the whole figure, entries in ``colours``' order, below the panels: lines, or
    (``patches``) filled squares whose fill has the opacity ``fill`` of the areas they name (solid bars and
    stacks 1, translucent histograms their own) and whose outline is the full colour."""
    if patches:
        handles = [
            Patch(facecolor=matplotlib.colors.to_rgba(colour, fill), edgecolor=colour, label=str(name))
            for name, colour in colours.items()
        ]
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
