"""Figures from study tables: the one name notebooks draw with (``plots.pass_at_k_figure(...)``).

Each function takes a table from ``countdown_study.study`` (or a step log) and returns a matplotlib
``Figure``; notebooks save (and show) them with ``outputs.save_figure``. The figures live by family:

* ``plot_style``: the look they share (``STYLE``, ``TEXT_WIDTH``, colours, legends, panel grids);
* ``plot_labels``: axis labels (``label``) and a reader's order of group labels (``ordered_labels``);
* ``passk_plots``: pass@k curves and panels, final against first verifying answer;
* ``training_plots``: step-log curves, report 001's controller, batch composition, sampler statistics,
  a bandit's arms, a profile by training phase;
* ``table_plots``: bars by group, outcome shares, histograms of task features, generation cost.

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

from countdown_study.reporting.passk_plots import (
    ANSWER_CURVES,
    ANSWER_GAP,
    LEGEND_INSIDE,
    PANEL_LINES,
    answer_curves_figure,
    answer_gaps,
    pass_at_k_figure,
    pass_at_k_panels,
    split_panels,
)
from countdown_study.reporting.passk_plots import _curve_with_band as _curve_with_band
from countdown_study.reporting.passk_plots import _pass_at_k_axes as _pass_at_k_axes
from countdown_study.reporting.plot_labels import (
    DIAGNOSTIC_LABELS,
    DIAGNOSTIC_REFERENCES,
    KNOWN_ORDERS,
    LABELS,
    LEVEL_NAMES,
    label,
    ordered_labels,
)
from countdown_study.reporting.plot_labels import _natural_key as _natural_key
from countdown_study.reporting.plot_style import (
    MARKERS,
    PALETTE,
    PALETTE_MORE,
    SHADES,
    STYLE,
    TEXT_WIDTH,
    colours_for,
    label_colours,
    legend_columns,
    method_colours,
    title_columns,
)
from countdown_study.reporting.plot_style import _legend as _legend
from countdown_study.reporting.plot_style import _panel_grid as _panel_grid
from countdown_study.reporting.plot_style import _styled as _styled
from countdown_study.reporting.table_plots import (
    HISTOGRAM_FILL,
    cost_figure,
    grouped_bars,
    histogram_edges,
    histogram_grid,
    is_whole,
    outcome_shares_figure,
    whole_number_ticks,
)
from countdown_study.reporting.table_plots import _sd as _sd
from countdown_study.reporting.training_plots import (
    arm_state_figure,
    controller_figure,
    occupancy_figure,
    phase_profile_figure,
    sampler_stats_figure,
    training_curves,
)

__all__ = [
    "ANSWER_CURVES",
    "ANSWER_GAP",
    "DIAGNOSTIC_LABELS",
    "HISTOGRAM_FILL",
    "DIAGNOSTIC_REFERENCES",
    "KNOWN_ORDERS",
    "LABELS",
    "LEGEND_INSIDE",
    "LEVEL_NAMES",
    "MARKERS",
    "PALETTE",
    "PALETTE_MORE",
    "PANEL_LINES",
    "SHADES",
    "STYLE",
    "TEXT_WIDTH",
    "answer_curves_figure",
    "answer_gaps",
    "arm_state_figure",
    "colours_for",
    "controller_figure",
    "cost_figure",
    "grouped_bars",
    "histogram_edges",
    "histogram_grid",
    "is_whole",
    "label",
    "label_colours",
    "legend_columns",
    "method_colours",
    "occupancy_figure",
    "ordered_labels",
    "outcome_shares_figure",
    "pass_at_k_figure",
    "pass_at_k_panels",
    "phase_profile_figure",
    "sampler_stats_figure",
    "split_panels",
    "title_columns",
    "training_curves",
    "whole_number_ticks",
]
