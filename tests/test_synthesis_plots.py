"""The synthesis' figures read at a glance: every row named beside its own marks (no numbered points and
no key to look up), grouped as the figure says, at most the text's width, a filled marker only where the
interval is clear of zero."""

from __future__ import annotations

import pandas as pd
import pytest

from countdown_study.reporting import plots, synthesis_plots

MAIN = "embedded 3.4M Qwen2 (SFT by this package)"
SEARCH = "embedded 3.4M Qwen2 (search-style SFT by this package)"


def _tradeoff_row(method, report, p1, p16, model=MAIN):
    """A trade-off row with intervals of +-0.01 around each difference."""
    quadrant = f"pass@1 {'up' if p1 > 0 else 'down'}, pass@16 {'up' if p16 > 0 else 'down'}"
    return {"block": "main" if model == MAIN else "search", "model": model, "report": report, "method": method,
            "reference": "RLOO uniform", "pass@1_diff": p1, "pass@1_low": p1 - 0.01, "pass@1_high": p1 + 0.01,
            "pass@16_diff": p16, "pass@16_low": p16 - 0.01, "pass@16_high": p16 + 0.01, "n_seeds": 5,
            "quadrant": quadrant}  # fmt: skip


@pytest.fixture
def tradeoff():
    return pd.DataFrame(
        [
            _tradeoff_row("Fixed v1", "000", -0.005, -0.02),
            _tradeoff_row("Sliding window", "001", -0.004, 0.006),
            _tradeoff_row("Adaptive v1", "000", -0.03, -0.07),
            _tradeoff_row("Staged curriculum", "003", -0.008, -0.05, model=SEARCH),
            _tradeoff_row("SEC", "field", 0.001, 0.002),
        ]
    )


def _labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def test_the_tradeoff_names_every_row_under_its_quadrant(tradeoff):
    fig = synthesis_plots.tradeoff_figure(tradeoff)
    pass_one, pass_sixteen = fig.axes
    assert _labels(pass_one) == [
        "pass@1 up, pass@16 up (1)", "SEC",
        "pass@1 down, pass@16 up (1)", "Sliding window",
        "pass@1 down, pass@16 down (3)", "Fixed v1", "Staged curriculum (search-style)", "Adaptive v1",
    ]  # fmt: skip  # within a quadrant, the largest pass@1 difference first
    assert len(pass_one.texts) == 0 and len(fig.axes) == 2  # no numbered points, no key panel
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH


def test_a_filled_marker_means_an_interval_clear_of_zero(tradeoff):
    fig = synthesis_plots.tradeoff_figure(tradeoff)
    pass_one, pass_sixteen = fig.axes
    faces = {
        round(line.get_ydata()[0]): line.get_markerfacecolor()
        for line in pass_sixteen.get_lines()
        if line.get_marker() not in ("None", "", None, "|")
    }
    ticks = dict(zip(_labels(pass_one), pass_one.get_yticks(), strict=True))  # rows share their y
    assert faces[round(ticks["Adaptive v1"])] != "white"  # -0.07 +- 0.01: clear of zero
    assert faces[round(ticks["SEC"])] == "white"  # 0.002 +- 0.01: covers zero
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"interval clear of zero", "interval covers zero", "report 000", "field", SEARCH} <= set(legend)


def test_model_tags_name_what_sets_a_model_apart():
    assert synthesis_plots.model_tags([MAIN, SEARCH, MAIN]) == {MAIN: "", SEARCH: "search-style"}


def test_the_budget_names_every_row_under_its_policy():
    budget = pd.DataFrame(
        [{"model": model, "report": report, "method": method, "tokens_vs_uniform": tokens,
          "gain_vs_uniform": gain, "gain_low": gain - 0.01, "gain_high": gain + 0.01}
         for model, report, method, tokens, gain in (
             (MAIN, "000", "Fixed v1", 1.02, -0.005), (MAIN, "field", "Band-pass 0.2-0.8", 3.67, 0.009),
             (SEARCH, "003", "VCC-RLOO", 1.0, 0.004))]
    )  # fmt: skip
    fig = synthesis_plots.budget_figure(budget)
    tokens, gain = fig.axes
    assert _labels(tokens) == [MAIN, "Fixed v1", "Band-pass 0.2-0.8", SEARCH, "VCC-RLOO"]
    band_pass = [line for line in tokens.get_lines() if list(line.get_xdata()) == [1.0, 3.67]]
    assert len(band_pass) == 1  # drawn from uniform's 1.0 to its 3.67
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH


def test_the_forest_heads_each_run_of_rows_with_its_reference():
    rows = [("main", "000", "Fixed v1", "RLOO uniform"), ("main", "001", "Sliding window", "RLOO uniform (binary reward)"),
            ("main", "002", "Dynamic edge", "RLOO uniform")]  # fmt: skip
    paired = pd.DataFrame(
        [{"block": block, "model": MAIN, "report": report, "a": a, "b": b, "metric": metric, "diff": 0.0,
          "ci_low": -0.01, "ci_high": 0.01} for block, report, a, b in rows for metric in ("pass@1", "pass@16")]
    )  # fmt: skip
    fig = synthesis_plots.forest_figure(paired)
    assert _labels(fig.axes[0]) == [
        MAIN, "against RLOO uniform", "Fixed v1", "against RLOO uniform (binary reward)", "Sliding window",
        "against RLOO uniform", "Dynamic edge",
    ]  # fmt: skip
    styles = [t.get_fontstyle() for t in fig.axes[0].get_yticklabels()]
    assert styles[1] == "italic" and styles[2] == "normal"
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH
