"""Reporting: tables and figures round-trip into a folder with their provenance sidecars, figures show
in a notebook only when asked (or inside a kernel), and the package imports without torch."""

import json
import subprocess
import sys
from pathlib import Path

import matplotlib.colors
import numpy as np
import pandas as pd
import pytest

from countdown_study.reporting import outputs, plots

META = {"notebook": "00_test", "preset": "tiny", "runs": [{"method": "A", "seed": 0, "run_id": "rloo-abc"}]}


@pytest.fixture
def curves():
    k = [1, 2, 4]
    return pd.DataFrame(
        {"method": ["A"] * 3 + ["B"] * 3, "k": k * 2, "pass@k": [0.2, 0.3, 0.4, 0.1, 0.2, 0.3]}
    ).assign(ci_low=lambda t: t["pass@k"] - 0.05, ci_high=lambda t: t["pass@k"] + 0.05)


@pytest.fixture
def steps():
    rng = np.random.default_rng(0)
    rows = []
    for method in ("A", "B"):
        for step in range(6):
            rows.append({"method": method, "seed": 0, "step": step, "reward_mean": rng.random(),
                         "exact_rate": rng.random(), "batch_easy": rng.integers(1, 5),
                         "batch_hard": rng.integers(0, 5), "sampler_ema": rng.random()})  # fmt: skip
    return pd.DataFrame(rows)


def test_save_table_round_trip(tmp_path):
    table = pd.DataFrame({"method": ["A", "B"], "pass@1": [0.25, 0.5]})
    csv = outputs.save_table(table, "demo", META, folder=tmp_path)
    assert csv == tmp_path / "demo.csv"
    pd.testing.assert_frame_equal(pd.read_csv(csv), table)
    assert (tmp_path / "demo.md").read_text().startswith("| method")
    meta = json.loads((tmp_path / "demo.meta.json").read_text())
    assert "git_sha" in meta and "git_dirty" in meta and meta["written"]
    assert {k: meta[k] for k in META} == META


def test_save_figure_round_trip(tmp_path, curves):
    png = outputs.save_figure(plots.pass_at_k_figure(curves), "curves", META, folder=tmp_path)
    assert png == tmp_path / "curves.png"
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 1000
    assert (tmp_path / "curves.pdf").read_bytes().startswith(b"%PDF")
    meta = json.loads((tmp_path / "curves.meta.json").read_text())
    assert "git_sha" in meta and {k: meta[k] for k in META} == META
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.meta.json", "curves.pdf", "curves.png"]


def test_figures_show_in_a_notebook_only(tmp_path, curves, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    assert not outputs.in_notebook()  # pytest is no kernel: nothing is displayed by default
    outputs.save_figure(plots.pass_at_k_figure(curves), "quiet", folder=tmp_path)
    assert shown == []
    png = outputs.save_figure(plots.pass_at_k_figure(curves), "shown", folder=tmp_path, show=True)
    (image,) = shown
    assert isinstance(image, IPython.display.Image) and image.format == "png"
    assert image.data.startswith(b"\x89PNG") and len(image.data) < png.stat().st_size  # a smaller PNG


def test_plots_leave_no_figure_open_in_pyplot(curves, steps):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    table = pd.DataFrame(
        {"method": ["A", "A", "B", "B"], "num_count": [3, 4, 3, 4], "pass@1": [0.5, 0.2, 0.6, 0.1]}
    )
    dv = pd.DataFrame(
        {"target": [10, 20, 30, 40], "solution_count": [1, 5, 9, 128], "num_count": [3, 3, 4, 4]}
    )
    figures = [
        plots.pass_at_k_figure(curves),
        plots.grouped_bars(table, "num_count"),
        plots.training_curves(steps),
        plots.occupancy_figure(steps),
        plots.sampler_stats_figure(steps),
        plots.sampler_stats_figure(steps.drop(columns="sampler_ema")),
        plots.histogram_grid(dv, ["target", "solution_count"], hue="num_count", bins=4),
    ]
    assert all(f.axes for f in figures)
    assert plt.get_fignums() == before
    legend = figures[-1].legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["3", "4"]


def test_groups_keep_a_readers_order_and_one_colour_across_panels():
    assert plots.ordered_labels([10, 3, 4]) == [3, 4, 10]
    assert plots.ordered_labels(["hard", "easy", "medium"]) == ["easy", "medium", "hard"]
    assert plots.ordered_labels(["OOD", "T2", "T0"]) == ["T0", "T2", "OOD"]
    assert plots.ordered_labels(["b", "a"]) == ["a", "b"]
    shares = ["easiest 100%", "easiest 30%", "easiest 70%"]  # report 003's staged pool shares
    assert plots.ordered_labels(shares) == ["easiest 30%", "easiest 70%", "easiest 100%"]
    assert plots.ordered_labels(["row 10", "row 2", "rows", "row"]) == ["row", "row 2", "row 10", "rows"]
    dv = pd.DataFrame(
        {"target": [10, 20, 30, 40, 50], "nps": [1, 5, 9, 2, 3], "tier": ["T2", "T0", "T1", "T0", "T2"]}
    )
    fig = plots.histogram_grid(dv, ["target", "nps"], hue="tier", bins=3)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["T0", "T1", "T2"]
    colours = [[tuple(p.get_facecolor()[:3]) for p in ax.patches if p.get_fill()] for ax in fig.axes]
    assert colours[0] == colours[1] and len(set(colours[0])) == 3  # one colour per tier, the same in both
    steps = pd.DataFrame(
        {"method": ["A"] * 2 + ["B"] * 2, "step": [0, 1, 0, 1],
         "batch_hard": [1, 2, 0, 0], "batch_easy": [3, 2, 4, 4]}
    )  # fmt: skip
    fig = plots.occupancy_figure(steps)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["easy", "hard"]


def test_a_long_pass_at_k_legend_goes_beside_the_axes():
    def curves_of(n):
        return pd.DataFrame(
            [{"method": f"row {i}", "k": k, "pass@k": 0.5, "ci_low": 0.4, "ci_high": 0.6}
             for i in range(n) for k in (1, 2, 4)]
        )  # fmt: skip

    few = plots.pass_at_k_figure(curves_of(plots.LEGEND_INSIDE))
    assert few.legends == [] and len(few.axes[0].get_legend().get_texts()) == plots.LEGEND_INSIDE
    many = plots.pass_at_k_figure(curves_of(plots.LEGEND_INSIDE + 1))
    assert many.axes[0].get_legend() is None
    assert [t.get_text() for t in many.legends[0].get_texts()] == [f"row {i}" for i in range(7)]


def test_step_log_columns_get_labels_in_words():
    assert plots.label("sampler_tv_uni") == "total variation from uniform"
    assert plots.label("sampler_js_edge") == "JS divergence from edge-only"
    assert plots.label("sampler_overlap_ff") == "batch overlap with a draw from feature_failure-only"
    assert plots.label("sampler_top10") == "weight on the heaviest 10% of prompts"
    assert plots.label("sampler_ess_frac") == "effective sample size / pool size"
    assert plots.label("reward_mean") == "training-batch reward (mean)"
    assert plots.label("sampler_window_tv_edges") == "window tv edges"  # unknown reference: words only
    steps = pd.DataFrame({"method": ["A", "A"], "step": [0, 1], "sampler_observed": [0.1, 0.2],
                          "sampler_hard": [3, 4]})  # fmt: skip
    fig = plots.sampler_stats_figure(steps, labels={"sampler_observed": "share of the pool observed"})
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["share of the pool observed", "prompts in the hard pool"]


def test_occupancy_panels_wrap_into_rows_with_the_legend_in_words():
    methods = [f"M{i}" for i in range(5)]
    steps = pd.DataFrame(
        {"method": [m for m in methods for _ in range(3)], "step": [0, 1, 2] * 5,
         "batch_too_easy": [1, 0, 2] * 5, "batch_learnable": [3, 4, 2] * 5}
    )  # fmt: skip
    fig = plots.occupancy_figure(steps, legend_title="prompt category")
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in shown] == methods and len(fig.axes) == 6  # 2 rows of 3, one hidden
    rows = sorted({round(ax.get_position().y0, 3) for ax in shown})
    assert len(rows) == 2
    assert shown[0].get_xlim() == (0.0, 2.0)
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["too easy", "learnable"]  # the categories' order
    assert legend.get_title().get_text() == "prompt category"


def test_label_colours_are_distinct_and_group_source_tier_labels_by_hue():
    mix = [f"{source}:T{tier}" for source in ("real", "synthetic") for tier in range(4)]
    colours = plots.label_colours(mix)
    assert list(colours) == mix and len(set(colours.values())) == 8
    hsv = {n: matplotlib.colors.rgb_to_hsv(matplotlib.colors.to_rgb(c)) for n, c in colours.items()}
    blue, orange = (0.5, 0.75), (0.0, 0.15)  # hue ranges of the two families
    assert all(blue[0] < hsv[f"real:T{t}"][0] < blue[1] for t in range(4))
    assert all(orange[0] <= hsv[f"synthetic:T{t}"][0] < orange[1] for t in range(4))
    values = [hsv[f"real:T{t}"][2] for t in range(4)]
    assert values == sorted(values, reverse=True)  # later tiers darker
    many = plots.label_colours([f"bucket {i}" for i in range(12)])  # more than the 6-colour cycle
    assert len(set(many.values())) == 12
    assert len(set(plots.method_colours([f"row {i}" for i in range(14)]).values())) == 14  # report 002's
    few = plots.label_colours(["easy", "hard"])
    assert few == plots.method_colours(["easy", "hard"])
    steps = pd.DataFrame({"method": ["A", "A"], "step": [0, 1], **{f"batch_{n}": [1, 1] for n in mix}})
    fig = plots.occupancy_figure(steps)
    drawn = [matplotlib.colors.to_hex(c.get_facecolor()[0]) for c in fig.axes[0].collections]
    assert drawn == [colours[n] for n in mix]


def test_reporting_imports_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import countdown_study.reporting.outputs, countdown_study.reporting.plots, "
        "countdown_study.reporting.references\n"
        "print(sorted(m for m in ('torch', 'seaborn', 'scipy', 'IPython') if sys.modules.get(m)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_deviations_tables_name_report_value_ours_why_and_where():
    from countdown_study.reporting.deviations import COLUMNS, deviations

    for report in ("000", "001"):
        table = deviations(report)
        assert tuple(table.columns) == COLUMNS and (table["report"] == report).all()
        assert table.notna().all().all() and (table["why"].str.len() > 10).all()
    assert "3-number" in deviations("001").set_index("what").loc["difficulty levels", "ours"]
    assert "success rate" in deviations("000").set_index("what").loc["reward-adaptive EMA signal", "ours"]
    with pytest.raises(ValueError, match="no deviations recorded for report '009'"):
        deviations("009")


def _steps():
    rows = []
    for method, levels in (("Sliding window", [0, 0, 1, 2, 1]), ("Staged thirds", [0, 1, 1, 2, 2])):
        for seed in (0, 1):
            for step, level in enumerate(levels):
                rows.append({"method": method, "seed": seed, "step": step, "reward_mean": 0.1 * step,
                             "exact_rate": 0.05 * step, "sampler_level": level,
                             "sampler_window_mean": 0.2 + 0.03 * step})  # fmt: skip
    return pd.DataFrame(rows)


def test_training_curves_one_colour_per_method_and_one_legend():
    from countdown_study.reporting import plots

    fig = plots.training_curves(_steps(), metrics=("reward_mean", "exact_rate", "sampler_level"))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    colours = [[line.get_color() for line in ax.get_lines()] for ax in panels]
    assert all(c == colours[0] for c in colours) and len(set(colours[0])) == 2  # same method, same colour
    assert len(fig.legends) == 1 and [t.get_text() for t in fig.legends[0].get_texts()] == [
        "Sliding window", "Staged thirds",
    ]  # fmt: skip
    assert [ax.get_title() for ax in panels] == [
        "training-batch reward (mean)", "training-batch exact rate", "controller level",
    ]  # fmt: skip


def test_controller_figure_names_levels_and_draws_the_thresholds():
    from countdown_study.reporting import plots

    fig = plots.controller_figure(_steps(), low=0.24, high=0.30)
    level_ax, window_ax = fig.axes[:2]
    assert [t.get_text() for t in level_ax.get_yticklabels()] == ["easy", "medium", "hard"]
    flat = [line.get_ydata()[0] for line in window_ax.get_lines() if len(set(line.get_ydata())) == 1]
    assert sorted(flat) == [0.24, 0.30]
    assert {t.get_text() for t in window_ax.texts} == {"tau_low 0.24", "tau_high 0.30"}


def test_figure_index_lists_each_figure_with_caption_notebook_and_preset(tmp_path):
    from countdown_study.reporting import outputs, plots

    fig = plots.controller_figure(_steps(), low=0.24, high=0.30)
    outputs.save_figure(
        fig, "controller", {"notebook": "04_sliding_window_001", "preset": "tiny"}, folder=tmp_path
    )
    index = outputs.write_figure_index(tmp_path).read_text()
    row = (
        "| [controller](controller.png) | level of each training batch; recent pass rate of training batches "
    )
    assert row in index and "| 04_sliding_window_001 | tiny |" in index


def test_headline_contrasts_of_the_notebooks_that_ran(tmp_path):
    from countdown_study.reporting import outputs

    paired = pd.DataFrame({"contrast": ["A vs B", "A vs B"], "metric": ["pass@1", "pass@16"], "diff": [0.05, -0.1],
                           "ci_low": [0.01, -0.2], "ci_high": [0.09, 0.0], "verdict": ["holds", "inside noise"]})  # fmt: skip
    outputs.save_table(paired, "demo_paired", {"notebook": "03_demo"}, folder=tmp_path)
    assert outputs.headline_contrasts(tmp_path, ["03_demo"]) == [
        f"{'A vs B':55s} pass@1 +0.050 [+0.010, +0.090] holds"
    ]
    assert outputs.headline_contrasts(tmp_path, ["02_other"]) == []


def test_side_by_side_takes_one_table_of_a_report_when_asked():
    from countdown_study.reporting import references

    ours = pd.DataFrame({"method": ["RLOO uniform"], "exact_rate": [0.3], "pass@16": [0.7]})
    both = references.side_by_side(ours, "003", ("exact_rate", "pass@16"), "ours")
    table2 = references.side_by_side(ours, "003", ("exact_rate", "pass@16"), "ours", where="Table 2")
    theirs = table2[table2["source"] == "report 003"].set_index("method")
    assert list(theirs.index) == [
        "RLOO uniform (Table 2 run)",
        "Commit reward only",
        "Commit reward + VCC",
        "VCC-RLOO",
    ]
    assert (
        theirs.loc["Commit reward only", "exact_rate"] == 0.2925 and theirs.loc["VCC-RLOO", "pass@16"] == 0.78
    )
    assert "Staged curriculum" in set(both["method"])  # Table 1's rows without the filter


def test_model_labels_never_name_a_folder(tmp_path):
    from countdown_study import study

    assert study.model_label("embedded") == study.EMBEDDED_MODEL
    assert study.model_label("Qwen/Qwen2.5-0.5B") == "Qwen/Qwen2.5-0.5B"
    assert study.model_label(str(tmp_path / "my-policy")) == str(tmp_path / "my-policy")  # not a folder (yet)
    (tmp_path / "my-policy").mkdir()
    assert study.model_label(str(tmp_path / "my-policy")) == "my-policy"


def test_a_method_keeps_its_colour_across_figures_in_the_study_order(curves):
    study_order = ["SFT", "A", "B"]  # SFT has pass@k but no training curve
    with_sft = pd.concat([curves.assign(method="SFT").iloc[:3], curves], ignore_index=True)
    steps = _steps().replace({"Sliding window": "A", "Staged thirds": "B"})
    pass_at_k = plots.pass_at_k_figure(with_sft, methods=study_order)
    training = plots.training_curves(steps, metrics=("reward_mean",), methods=study_order)
    bars = plots.grouped_bars(
        pd.DataFrame({"method": ["B", "A"], "num_count": [3, 3], "pass@1": [0.5, 0.2]}), "num_count",
        methods=study_order,
    )  # fmt: skip
    line_colours = {line.get_label(): line.get_color() for line in pass_at_k.axes[0].get_lines()}
    training_colours = {t.get_text(): h.get_color() for t, h in zip(
        training.legends[0].get_texts(), training.legends[0].legend_handles, strict=True)}  # fmt: skip
    assert set(line_colours) == {"SFT", "A", "B"} and len(set(line_colours.values())) == 3
    assert training_colours == {m: line_colours[m] for m in ("A", "B")}
    bar_colours = {p.get_label(): p.patches[0].get_facecolor() for p in bars.axes[0].containers}
    assert bar_colours == {m: matplotlib.colors.to_rgba(line_colours[m]) for m in ("A", "B")}
    bands = [tuple(c.get_facecolor()[0][:3]) for c in pass_at_k.axes[0].collections]
    assert bands == [matplotlib.colors.to_rgb(c) for c in line_colours.values()]  # band in its line's colour


def test_axes_and_titles_are_labelled_for_a_reader():
    table = pd.DataFrame(
        {
            "method": ["A"] * 3,
            "tier": ["T2", "T0", "T1"],
            "num_count": [10, 3, 4],
            "mean_score": [0.1, 0.2, 0.3],
        }
    )
    bars = plots.grouped_bars(table, "num_count", metric="mean_score")
    ax = bars.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("numbers in the task", "mean score")
    assert ax.get_title() == "mean score by numbers in the task"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["3", "4", "10"]  # by value, not as text
    by_tier = plots.grouped_bars(table, "tier", metric="mean_score").axes[0]
    assert [t.get_text() for t in by_tier.get_xticklabels()] == ["T0", "T1", "T2"]
    assert by_tier.get_xlabel() == "difficulty tier"
    dv = pd.DataFrame({"solution_count": [1, 5, 9, 2], "num_count": [3, 3, 4, 4]})
    grid = plots.histogram_grid(dv, ["solution_count"], hue="num_count", bins=3, title="Difficulty Vector")
    assert grid.get_suptitle() == "Difficulty Vector"
    assert grid.axes[0].get_title() == "distinct solutions (capped at 128)"
    assert grid.legends[0].get_title().get_text() == "numbers in the task"
    fills = [h.get_facecolor()[3] for h in grid.legends[0].legend_handles]  # as translucent as the histograms
    assert fills == [plots.HISTOGRAM_FILL] * 2 == [p.get_facecolor()[3] for p in grid.axes[0].patches[::2]]
    assert plots.histogram_grid(dv, ["solution_count"]).get_suptitle() == ""  # no title unless given


def test_outcome_shares_stack_to_one_per_tier_with_the_accepted_share_at_the_bottom():
    table = pd.DataFrame(
        {"source": ["rule", "rule", "teacher"], "tier": ["T1", "T0", "T0"], "accepted": [1, 3, 2],
         "unsolvable": [3, 0, 1], "seen": [0, 1, 1], "accepted_share": [0.25, 0.75, 0.5]}
    )  # fmt: skip
    fig = plots.outcome_shares_figure(table)
    rule, teacher = fig.axes[:2]
    assert [t.get_text() for t in rule.get_xticklabels()] == ["T0", "T1"]
    heights = np.array([b.get_height() for b in rule.patches]).reshape(3, 2)  # (outcomes, tiers)
    np.testing.assert_allclose(heights.sum(axis=0), 1.0)
    np.testing.assert_allclose(heights[0], [0.75, 0.25])  # accepted first: T0 3 of 4, T1 1 of 4
    np.testing.assert_allclose(heights[1], [0.0, 0.75])  # then the largest reason overall (unsolvable)
    assert [b.get_height() for b in teacher.patches] == pytest.approx([0.5, 0.25, 0.25])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["accepted", "unsolvable", "seen"]
    assert [t.get_text() for t in rule.texts] == ["n=4", "n=4"]
    # each legend square has its bars' colour, solid (a translucent square reads as another colour)
    squares = [tuple(h.get_facecolor()) for h in fig.legends[0].legend_handles]
    assert squares == [tuple(rule.patches[2 * i].get_facecolor()) for i in range(3)]
    assert all(alpha == 1.0 for *_, alpha in squares)


def test_their_own_tables_stack_under_ours_labelled_by_model():
    from countdown_study.reporting import references

    table5 = references.reported_table("002", "Table 5")
    assert list(table5.columns) == [
        "source",
        "model",
        "field",
        "value",
        "n",
        "fail_rate",
        "ci_low",
        "ci_high",
    ]
    row = table5[(table5["field"] == "num_count") & (table5["value"] == 4)].iloc[0]
    assert (row["n"], row["fail_rate"]) == (7088, 0.750) and row["ci_low"] == pytest.approx(0.742)
    assert set(table5["source"]) == {"report 002, Table 5"} and set(table5["model"]) == {
        references.PAPER_MODEL
    }
    ours = pd.DataFrame({"field": ["num_count"], "value": [3], "n": [10], "fail_rate": [0.3], "extra": [1.0]})
    both = references.beside(ours, "002", "Table 5", "embedded")
    assert list(both.columns) == ["source", "model", "field", "value", "n", "fail_rate", "extra"]
    assert both["source"].tolist() == ["this study"] + ["report 002, Table 5"] * 6
    assert both.loc[0, "model"] == "embedded" and both["extra"].iloc[1:].isna().all()
    assert references.reported_table("002", "Table 7")["mean_gap"].tolist() == [
        0.412,
        0.421,
        0.438,
        0.402,
        0.461,
    ]
    with pytest.raises(ValueError, match="no table 'Table 9' of report 002.*002 Table 4"):
        references.reported_table("002", "Table 9")


def test_pass_at_k_panels_put_their_points_beside_our_curves(curves):
    reported = pd.DataFrame(
        {"method": ["A", "A", "A", "B"], "metric": ["pass@16", "pass@1", "mean_score", "pass@1"],
         "value": [0.9, 0.5, 0.7, 0.4], "model": "theirs"}
    )  # fmt: skip
    fig = plots.pass_at_k_panels(curves, {"first": ("A", "B"), "second": ("B",)}, reported=reported)
    first, second = fig.axes[:2]
    assert [a.get_title() for a in (first, second)] == ["first", "second"]
    lines = first.get_lines()  # A ours, A theirs, B ours, B theirs
    assert lines[0].get_ydata().tolist() == [0.2, 0.3, 0.4]
    assert lines[1].get_xdata().tolist() == [1, 16] and lines[1].get_ydata().tolist() == [0.5, 0.9]
    assert lines[1].get_linestyle() == ":" and lines[1].get_color() == lines[0].get_color()
    assert second.get_lines()[0].get_color() == lines[2].get_color()  # B keeps its colour
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["this study (95% band)", "report: theirs"]


def test_phase_profile_draws_one_line_per_source_in_phase_order():
    table = pd.DataFrame(
        {"source": ["this study"] * 3 + ["report"] * 3, "name": ["early", "mid", "late"] * 2,
         "mean_success": [0.2, 0.3, 0.4, 0.29, 0.45, 0.5]}
    )  # fmt: skip
    fig = plots.phase_profile_figure(table.iloc[[1, 0, 2, 3, 4, 5]], ("mean_success",))
    ours, theirs = fig.axes[0].get_lines()
    assert ours.get_ydata().tolist() == [0.3, 0.2, 0.4]  # the table's order of phases: mid, early, late
    assert theirs.get_ydata().tolist() == [0.45, 0.29, 0.5]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["mid", "early", "late"]


def test_arm_state_draws_each_arm_per_method_in_its_source_hue():
    steps = pd.DataFrame(
        {"method": ["A"] * 4 + ["B"] * 2, "seed": [0, 0, 1, 1, 0, 0], "step": [0, 1, 0, 1, 0, 1],
         "sampler_p_real_T0": [0.6, 0.5, 0.4, 0.5, 1.0, 1.0], "sampler_p_syn_T0": [0.4, 0.5, 0.6, 0.5, None, None],
         "sampler_q_real_T0": [0.1, 0.2, 0.3, 0.2, 0.0, 0.1], "sampler_q_syn_T0": [0.2] * 4 + [None] * 2,
         "sampler_p_3": [None] * 6}  # another sampler's column, empty here
    )  # fmt: skip
    fig = plots.arm_state_figure(steps)
    a_p, b_p, a_q, b_q = fig.axes[:4]  # rows: p, q; columns: A, B
    assert [a.get_title() for a in (a_p, b_p)] == ["A", "B"]
    real, syn = a_p.get_lines()
    assert real.get_ydata().tolist() == [0.5, 0.5]  # mean over seeds per step
    assert len(b_p.get_lines()) == 1  # B has no synthetic arm
    colours = plots.label_colours(["real:T0", "syn:T0"])
    assert matplotlib.colors.to_hex(syn.get_color()) == colours["syn:T0"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["real:T0", "syn:T0"]
    assert a_q.get_ylabel() == "arm value Q" and a_p.get_ylabel() == "arm probability"


def test_final_vs_first_answer_figure_draws_only_the_rows_that_differ(curves):
    """Report 003's Figure 6 condensed: the curves of the rows whose first verifying answer differs from
    the final one, and one bar per row for the gap at pass@1, instead of a panel per row."""
    close = curves.assign(method=curves["method"].map({"A": "C", "B": "D"}))  # two rows whose curves agree
    final = pd.concat([curves, close], ignore_index=True)
    first = final.assign(
        **{"pass@k": final["pass@k"] + np.where(final["method"].isin(["A", "B"]), 0.1, 0.01)}
    )
    fig = plots.answer_curves_figure(final, first)
    curves_ax, gap_ax = fig.axes
    drawn = [line for line in curves_ax.get_lines()]
    assert len(drawn) == 4  # A and B, final (solid) and first verifying (dashed); C and D left out
    assert [line.get_linestyle() for line in drawn] == ["-", "--", "-", "--"]
    assert list(drawn[2].get_ydata()) == [0.1, 0.2, 0.3]
    assert [t.get_text() for t in curves_ax.get_legend().get_texts()] == [
        "A", "B", "final answer", "first verifying answer",
    ]  # fmt: skip
    bars = [p.get_width() for p in gap_ax.patches]
    assert bars == pytest.approx([0.1, 0.1, 0.01, 0.01])  # every row's pass@1 gap, in the rows' order
    assert [t.get_text() for t in gap_ax.get_yticklabels()] == ["A", "B", "C", "D"]  # the first on top
    assert [p.get_y() for p in gap_ax.patches] == sorted((p.get_y() for p in gap_ax.patches), reverse=True)
    assert outputs.caption(fig).startswith("pass@k of the final answer and of the first verifying answer")
    nothing_differs = plots.answer_curves_figure(close, close.assign(**{"pass@k": close["pass@k"] + 0.01}))
    assert len(nothing_differs.axes[0].get_lines()) == 2  # the widest gap's row, so the panel is not empty


def test_final_vs_first_answer_figure_draws_the_widest_gaps_when_many_rows_differ(curves):
    """With more rows that differ than ``ANSWER_CURVES``, the curves of the widest gaps only (in the rows'
    order), the title saying how many differ; every row keeps its bar."""
    rows = [f"R{i}" for i in range(7)]
    final = pd.concat([curves[curves["method"] == "A"].assign(method=r) for r in rows], ignore_index=True)
    gaps = dict(zip(rows, [0.03, 0.09, 0.05, 0.08, 0.04, 0.07, 0.06], strict=True))
    first = final.assign(**{"pass@k": final["pass@k"] + final["method"].map(gaps)})
    fig = plots.answer_curves_figure(final, first)
    curves_ax, gap_ax = fig.axes
    assert plots.ANSWER_CURVES == 4 and len(curves_ax.get_lines()) == 2 * 4
    names = [t.get_text() for t in curves_ax.get_legend().get_texts()]
    assert names == ["R1", "R3", "R5", "R6", "final answer", "first verifying answer"]
    assert curves_ax.get_title() == "rows whose curves differ by 0.02 or more, the 4 widest of 7"
    assert len(gap_ax.patches) == 7


# ----------------------------------------------------------------------------------------------------
# figures for the page: at most the text's width, distinct colours, legends that name what is drawn


def test_no_figure_is_wider_than_the_text(curves, steps):
    many = [f"M{i}" for i in range(7)]
    wide_steps = pd.concat([steps.assign(method=m) for m in many], ignore_index=True)
    figures = [
        plots.training_curves(wide_steps, metrics=("reward_mean", "exact_rate", "sampler_ema"), columns=3),
        plots.occupancy_figure(wide_steps),
        plots.histogram_grid(steps, ["reward_mean", "exact_rate", "sampler_ema", "step"], hue="method"),
        plots.pass_at_k_panels(curves, {"one": ("A",), "two": ("B",), "three": ("A", "B")}),
        plots.controller_figure(steps.assign(sampler_level=1, sampler_window_mean=0.3), 0.24, 0.3),
    ]
    for fig in figures:
        assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH + 1e-9


def test_method_colours_are_distinct_and_none_is_faint():
    n = len(plots.PALETTE) + len(plots.PALETTE_MORE)
    colours = plots.method_colours([f"M{i}" for i in range(n)])
    assert len(set(colours.values())) == n == 20
    for colour in colours.values():
        r, g, b = matplotlib.colors.to_rgb(colour)
        assert 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.7, colour  # no pale yellow or pink on white


def test_each_panel_names_only_the_methods_it_draws():
    """A sampler's statistics exist for its own rows: each panel's legend names those, not every method."""
    steps = pd.DataFrame(
        {"method": ["RLOO uniform"] * 2 + ["Fixed v1"] * 2 + ["Adaptive v1"] * 2, "step": [0, 1] * 3,
         "sampler_ema_3": [None, None, 0.1, 0.2, None, None],
         "sampler_learnable": [None, None, None, None, 5, 6]}
    )  # fmt: skip
    fig = plots.sampler_stats_figure(steps)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert fig.legends == []
    assert [[t.get_text() for t in ax.get_legend().get_texts()] for ax in panels] == [
        ["Fixed v1"],
        ["Adaptive v1"],
    ]
    same = plots.training_curves(steps.fillna(0.5), metrics=("sampler_ema_3", "sampler_learnable"))
    assert [t.get_text() for t in same.legends[0].get_texts()] == ["RLOO uniform", "Fixed v1", "Adaptive v1"]


def test_pass_at_k_panels_give_each_method_its_colour_and_marker_and_split_long_panels(curves):
    names = [f"M{i}" for i in range(8)]
    eight = pd.concat([curves[curves["method"] == "A"].assign(method=m) for m in names], ignore_index=True)
    fig = plots.pass_at_k_panels(eight, {"first": names[:2], "fusions": names})
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["first", "fusions (1 of 2)", "fusions (2 of 2)"]
    styles = {
        (line.get_label(), line.get_color(), line.get_marker()) for ax in fig.axes for line in ax.get_lines()
    }
    assert len({label for label, _, _ in styles}) == 8
    assert len({colour for _, colour, _ in styles}) == 8 and len({marker for _, _, marker in styles}) == 8
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == names[:4]  # each panel its own
    assert plots.split_panels({"a": "xyz"}, most=2) == {"a (1 of 2)": ["x", "y"], "a (2 of 2)": ["z"]}


def test_whole_number_features_get_whole_number_ticks_and_bins():
    depth = np.array([1, 2, 2, 3, 3, 3], dtype=float)
    assert plots.histogram_edges(depth, bins=30).tolist() == [0.5, 1.5, 2.5, 3.5]
    assert len(plots.histogram_edges(np.linspace(0, 1, 50), bins=10)) == 11
    assert not plots.is_whole(np.array([1.0, 2.5]))
    table = pd.DataFrame({"depth": depth, "target": np.arange(10, 70, 10), "hue": [3, 4] * 3})
    fig = plots.histogram_grid(table, ["depth", "target"], hue="hue")
    depth_ax, target_ax = fig.axes[:2]
    assert list(depth_ax.get_xticks()) == [1, 2, 3]
    target_ax.figure.canvas.draw()
    assert all(float(t).is_integer() for t in target_ax.get_xticks())


def test_legend_columns_fit_the_text_width():
    assert plots.legend_columns(["A", "B"]) == 2
    long = ["Adaptive v1 (mean reward)"] * 6  # 25 characters: 0.45 + 1.5 in an entry
    assert plots.legend_columns(long) == 3
