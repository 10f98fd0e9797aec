"""Report 003's Figures 3 and 5 from its tables: the values drawn, the panels, the aliases, the errors."""

import numpy as np
import pandas as pd
import pytest

from countdown_study.reporting import vcc_plots

OURS, THEIRS = "embedded 3.4M Qwen2", "Qwen2.5-0.5B SFT"


def _table() -> pd.DataFrame:
    """A ``references.side_by_side`` table: two of our rows, then the report's (one we lack)."""
    return pd.DataFrame({
        "source": ["this study", "this study", "report 003", "report 003", "report 003"],
        "model": [OURS, OURS, THEIRS, THEIRS, THEIRS],
        "method": ["RLOO uniform", "VCC-RLOO", "RLOO uniform (Table 2 run)", "VCC-RLOO", "Commit reward only"],
        "exact_rate": [0.44, 0.45, 0.3063, 0.3262, 0.2925],
        "mean_score": [0.50, 0.51, 0.3611, 0.3812, 0.3481],
        "pass@16": [0.66, 0.67, 0.78, 0.78, 0.80],
    })  # fmt: skip


def test_bar_layout_centres_the_bars_of_a_group():
    assert vcc_plots.bar_layout(2).tolist() == pytest.approx([-0.2, 0.2])
    assert vcc_plots.bar_layout(3).tolist() == pytest.approx([-0.8 / 3, 0.0, 0.8 / 3])
    with pytest.raises(ValueError, match="at least one metric"):
        vcc_plots.bar_layout(0)


def test_bar_frame_aligns_the_reports_baseline_with_ours():
    frame = vcc_plots.bar_frame(_table(), vcc_plots.FIGURE_5_METRICS, aliases=vcc_plots.TABLE_2_ALIASES)
    assert frame["source"].tolist() == ["this study"] * 3 + ["report 003"] * 3
    assert frame["method"].tolist() == ["RLOO uniform", "VCC-RLOO", "Commit reward only"] * 2
    theirs = frame[frame["source"] == "report 003"].set_index("method")
    assert theirs.loc["RLOO uniform", "exact_rate"] == 0.3063  # their Table 2 run, under our name
    ours = frame[frame["source"] == "this study"].set_index("method")
    assert np.isnan(ours.loc["Commit reward only", "pass@16"])  # a row we lack: a gap, not a zero


def test_figure_5_draws_the_tables_values_one_panel_per_source():
    fig = vcc_plots.figure_5(_table())
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split("\n") for ax in axes] == [["this study", OURS], ["report 003", THEIRS]]
    heights = [[round(p.get_height(), 4) for p in ax.patches] for ax in axes]
    # per panel: the metrics in turn, each over the methods (RLOO uniform, VCC-RLOO, Commit reward only)
    assert heights[1] == [0.3063, 0.3262, 0.2925, 0.3611, 0.3812, 0.3481, 0.78, 0.78, 0.8]
    assert heights[0][:2] == [0.44, 0.45] and np.isnan(heights[0][2])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "rollout accuracy",
        "mean reward",
        "oracle pass@16",
    ]


def test_figure_3_bars_pass_at_1_beside_pass_at_16():
    fig = vcc_plots.figure_3(
        _table().assign(**{"pass@1": [0.44, 0.45, 0.31, 0.33, 0.29]}), methods=["VCC-RLOO"]
    )
    ours = fig.axes[0]
    assert [round(p.get_height(), 2) for p in ours.patches] == [0.45, 0.67]
    assert "Figure 3" in fig._suptitle.get_text()


def test_the_bar_figures_stack_their_panels_at_the_texts_width():
    """One panel per source, one above the other, so a page shows them at full size; the methods are named
    under the last panel only."""
    from countdown_study.reporting.plots import TEXT_WIDTH

    fig = vcc_plots.figure_5(_table())
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert fig.get_size_inches()[0] == pytest.approx(TEXT_WIDTH)
    assert axes[0].get_position().y0 > axes[1].get_position().y1  # this study above the report
    fig.canvas.draw()
    assert [t.get_text() for t in axes[1].get_xticklabels()] == [
        "RLOO uniform",
        "VCC-RLOO",
        "Commit reward\nonly",
    ]
    assert not any(t.get_visible() and t.get_text() for t in axes[0].get_xticklabels())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (_table().drop(columns="model"), r"lacks column\(s\) \['model'\]"),
        (_table()[["source", "model", "method"]], "none of the metrics"),
    ],
)
def test_bar_frame_errors(table, message):
    with pytest.raises(ValueError, match=message):
        vcc_plots.bar_frame(table, vcc_plots.FIGURE_5_METRICS)
