"""The scale study: its rows are the other notebooks' own, its claims the reports', each size's comparisons
equal the study's comparison of the same rows, unshipped sizes are skipped with a message, the cost per
size on a worked example, the figure, and notebook 09's shape."""

import dataclasses
import json

import nbformat
import numpy as np
import pandas as pd
import pytest

from countdown_study.paths import notebooks_dir
from countdown_study.policy import EMBEDDED_POLICIES
from countdown_study.reporting import scale_plots
from countdown_study.study import grid, methods, scale, synthesis
from countdown_study.study.compare import compare
from countdown_study.study.method import locate_config, method_config
from countdown_study.study.methods import StudyResult
from countdown_study.study.presets import study_preset
from countdown_study.study.tables import problem_matrix
from countdown_study.training.sft import RECIPES

SEEDS = (0, 1, 2)
N = 16
NOTEBOOK = notebooks_dir() / "09_scale.ipynb"


def _samples(method: str, seed: int, correct_per_task) -> list[dict]:
    """Per-sample verdict rows: the first ``c`` of each task's ``N`` samples are correct."""
    return [{"task_index": task, "num_count": 3 + task % 2, "tier": "T1", "target": 10 + task,
             "sample_index": j, "reward": 1.0 if j < c else 0.1, "correct": j < c, "well_formed": True,
             "method": method, "seed": seed}
            for task, c in enumerate(correct_per_task) for j in range(N)]  # fmt: skip


def _result(policy: str, rng: int, tasks: int = 10, shift: dict | None = None) -> StudyResult:
    """A study of ``scale.ROWS`` from ``policy`` at three seeds with random correct counts; ``shift`` adds
    correct samples to every task of some rows (a row clearly above the others)."""
    draw = np.random.default_rng(rng)
    shift = shift or {}
    samples, runs = [], []
    for m in scale.ROWS:
        for s in SEEDS:
            counts = np.minimum(draw.integers(0, N // 2, tasks) + shift.get(m.name, 0), N)
            samples += _samples(m.name, s, counts)
            started = pd.Timestamp("2025-01-01T00:00:00Z") + pd.Timedelta(hours=s)
            seconds = 10.0 * (1 + scale.ROWS.index(m)) + s  # worked example of the cost table
            runs.append({"method": m.name, "seed": s, "kind": m.kind, "started": started.isoformat(),
                         "finished": (started + pd.Timedelta(seconds=seconds)).isoformat()})  # fmt: skip
    preset = study_preset("tiny", seeds=SEEDS, policy=policy)
    names = tuple(m.name for m in scale.ROWS)
    return StudyResult(preset, pd.DataFrame(runs), pd.DataFrame(samples), pd.DataFrame(), names)


SIZES = pd.DataFrame(
    [
        {"size": "small", "policy": "embedded-small", "parameters": 862_592},
        {"size": "embedded", "policy": "embedded", "parameters": 3_429_120},
    ]
)


@pytest.fixture(scope="module")
def results():
    return {
        "embedded": _result("embedded", 0, shift={"RLOO uniform": 8}),
        "small": _result("embedded-small", 1),
    }


@pytest.fixture(scope="module")
def paired(results):
    return scale.scale_paired(results, SIZES, n_resamples=200)


# ---------------------------------------------------------------------------------------------------
# Sizes, rows and claims
# ---------------------------------------------------------------------------------------------------


def test_the_sizes_are_the_sft_recipes_smallest_first():
    assert [(s.name, s.policy, s.parameter) for s in scale.SIZES] == [
        ("small", "embedded-small", "small_policy"),
        ("embedded", "embedded", "policy"),
        ("large", "embedded-large", "large_policy"),
    ]
    counts = [s.parameters for s in scale.SIZES]
    assert (
        counts == sorted(counts) and counts[1] == RECIPES["solver"].config.model.num_parameters == 3_429_120
    )
    assert {s.policy for s in scale.SIZES} <= set(EMBEDDED_POLICIES)


def test_the_rows_are_the_other_notebooks_method_objects():
    everywhere = [value for name, value in vars(methods).items() if name.isupper()]
    known = {id(m) for value in everywhere for m in (value if isinstance(value, tuple) else (value,))}
    assert all(id(row) in known for row in scale.ROWS)
    assert len({m.name for m in scale.ROWS}) == len(scale.ROWS)


def test_the_embedded_size_reuses_the_runs_of_notebooks_02_to_08():
    notebooks = ["02_baselines", "03_curricula_000", "04_sliding_window_001", "05_feature_space_curriculum_002",
                 "06_solution_count_vcc_003", "07_adsc_004", "08_field_baselines"]  # fmt: skip
    planned = {run.run_id for run in grid.plan_grid(notebooks, "tiny")}
    preset = study_preset("tiny")
    ours = {
        locate_config(m.kind, method_config(m, preset, s)).run_id for m in scale.ROWS for s in preset.seeds
    }
    assert ours <= planned  # the 3.4M size trains nothing new


def test_the_claims_at_every_size_are_the_reports_against_the_same_size():
    # (a, b, metric, claimed sign): from ``synthesis.all_claims``, curricula against their uniform RLOO row
    expected = [
        ("IPO", "SFT", "pass@1", 1),
        ("RLOO uniform", "SFT", "pass@1", 1),
        ("RLOO uniform", "SFT", "pass@16", -1),
        ("Adaptive v1", "RLOO uniform", "pass@1", -1),
        ("Sliding window", "RLOO uniform (binary reward)", "pass@1", -1),  # report 001's binary reward
        ("Dynamic edge", "RLOO uniform", "pass@1", 1),  # report 002 names uniform with replacement
        ("Edge x feature_failure", "RLOO uniform", "pass@1", 1),
        ("Staged curriculum", "RLOO uniform", "pass@1", 1),
        ("Staged curriculum", "RLOO uniform", "pass@16", -1),
        ("VCC-RLOO", "RLOO uniform (whole rollouts)", "pass@16", 1),  # whole rollouts on both sides
        ("Router, real tasks only", "RLOO uniform", "mean_score", 1),  # report 004's headline metric
        ("Band-pass 0.2-0.8", "RLOO uniform", "pass@1", 0),  # no claim: ordered only
    ]
    assert [(c.a, c.b, c.metric, c.sign) for c in scale.CLAIMS] == expected
    tested = {(c.source, c.key): c for c in synthesis.all_claims()}
    for claim in scale.CLAIMS[:-1]:  # each joins the synthesis' claim it tests
        origin = tested[claim.source, claim.key]
        assert (origin.a, origin.metric, origin.sign, origin.report) == (
            claim.a,
            claim.metric,
            claim.sign,
            claim.report,
        )
    assert tested["CLAIMS_002", ("Dynamic edge", "RLOO uniform (with replacement)", "pass@1")] is not None
    assert (scale.CLAIMS[-1].source, scale.CLAIMS[-1].key) == ("", ())
    assert scale.CLAIMS[4].text == "Sliding window below RLOO uniform (binary reward)"
    assert scale.CLAIMS[-1].text == "Band-pass 0.2-0.8 vs RLOO uniform" and scale.CLAIMS[-1].report == "field"


# ---------------------------------------------------------------------------------------------------
# Sizes not shipped yet
# ---------------------------------------------------------------------------------------------------


def test_an_unshipped_size_is_named_with_the_command_that_makes_it(tmp_path, monkeypatch):
    monkeypatch.setitem(EMBEDDED_POLICIES, "embedded-large", tmp_path / "embedded-large")
    policies = {"small": str(tmp_path), "embedded": "embedded", "large": "embedded-large"}
    assert scale.unshipped(policies) == {
        "large": "large: embedded-large is not shipped yet, so its rows are skipped "
        "(make it with `countdown-study sft --recipe large --ship`)"
    }  # a folder is not checked here; a shipped name is
    parameters = {"small_policy": str(tmp_path), "large_policy": "embedded-large"}
    sizes = {at.data.policy for _, _, at in grid.grid_rows(["09_scale"], "tiny", parameters)}
    assert sizes == {str(tmp_path), "embedded"}  # the unshipped size plans no runs; a folder is planned
    (tmp_path / "embedded-large").mkdir()
    (tmp_path / "embedded-large" / "config.json").write_text("{}")
    assert scale.unshipped(policies) == {}


def test_joint_study_names_each_runs_policy_and_refuses_no_size():
    one = (None, {"notebook": "09_scale", "preset": "tiny", "policy": "embedded", "runs": [{"run_id": "a"}]})
    two = (
        None,
        {"notebook": "09_scale", "preset": "tiny", "policy": "embedded-large", "runs": [{"run_id": "b"}]},
    )
    _, meta = scale.joint_study({"embedded": one, "large": two})
    assert meta["policies"] == {"embedded": "embedded", "large": "embedded-large"}
    assert meta["runs"] == [
        {"run_id": "a", "policy": "embedded"},
        {"run_id": "b", "policy": "embedded-large"},
    ]
    assert (meta["notebook"], meta["preset"], meta["policy"]) == ("09_scale", "tiny", "embedded")
    with pytest.raises(ValueError, match="no size was run"):
        scale.joint_study({})


# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------


def test_each_size_is_compared_as_the_study_compares_two_rows(results, paired):
    assert list(paired.columns) == list(scale.SCALE_COLUMNS)
    assert list(paired["size"]) == ["small"] * 12 + ["embedded"] * 12  # smallest first
    assert set(paired.loc[paired["size"] == "small", "parameters"]) == {862_592}
    for row in paired.itertuples(index=False):
        result = results[row.size]
        c = compare(
            problem_matrix(result, row.a, row.metric), problem_matrix(result, row.b, row.metric), 0, 200
        )
        assert (row.diff, row.ci_low, row.ci_high, row.mde, row.n_seeds) == pytest.approx(
            (c.diff, c.ci_low, c.ci_high, c.mde, c.n_seeds)
        )
        assert row.contrast == f"{row.size}: {row.a} vs {row.b}"
    # uniform RLOO was made clearly better at the 3.4M size: its claim over SFT holds, Adaptive v1's below it
    embedded = paired[paired["size"] == "embedded"].set_index(["a", "metric"])["verdict"]
    assert embedded["RLOO uniform", "pass@1"] == "holds" and embedded["Adaptive v1", "pass@1"] == "holds"
    assert embedded["Band-pass 0.2-0.8", "pass@1"] == "a below b"  # no claim: the order only


def test_verdicts_by_size_say_where_a_verdict_changes(paired):
    verdicts = scale.verdicts_by_size(paired)
    assert list(verdicts.columns) == ["report", "claim", "metric", "small", "embedded", "same_at_every_size"]
    assert list(verdicts["claim"]) == [c.text for c in scale.CLAIMS]  # the claims' order, not the reports'
    row = verdicts.set_index(["claim", "metric"]).loc[("RLOO uniform above SFT", "pass@1")]
    assert row["embedded"] == "holds" and row["small"] != "holds" and not row["same_at_every_size"]
    same = verdicts["small"] == verdicts["embedded"]
    assert (verdicts["same_at_every_size"] == same).all()
    alone = scale.verdicts_by_size(paired[paired["size"] == "embedded"])
    assert list(alone.columns) == ["report", "claim", "metric", "embedded", "same_at_every_size"]
    assert alone["same_at_every_size"].isna().all()  # one size: nothing to compare


def test_the_trend_is_the_change_of_each_claims_difference_from_the_smaller_size(results, paired):
    trend = scale.scale_trend(results, SIZES, n_resamples=200)
    assert list(trend.columns) == list(scale.TREND_COLUMNS)
    assert list(trend["claim"]) == [c.text for c in scale.CLAIMS]  # one pair of sizes: a row per claim
    assert set(zip(trend["smaller"], trend["larger"], strict=True)) == {("small", "embedded")}
    diffs = paired.set_index(["size", "claim", "metric"])["diff"]
    for claim, row in zip(scale.CLAIMS, trend.itertuples(index=False), strict=True):
        # the change of a mean difference is the difference of the two sizes' mean differences
        expected = diffs["embedded", row.claim, row.metric] - diffs["small", row.claim, row.metric]
        assert row.change == pytest.approx(expected, abs=1e-12)
        c = compare(scale.claim_cells(results["embedded"], claim), scale.claim_cells(results["small"], claim))
        assert (row.ci_low, row.ci_high, row.mde, row.n_seeds) == pytest.approx(
            (c.ci_low, c.ci_high, c.mde, 3)
        )
        assert row.reading == ("rises" if c.ci_low > 0 else "falls" if c.ci_high < 0 else "inside noise")
    # uniform RLOO was made 8 of 16 samples better at the 3.4M size only: its gain over SFT rises with size,
    # and every curriculum's difference from it falls
    readings = trend.set_index(["claim", "metric"])["reading"]
    assert readings["RLOO uniform above SFT", "pass@1"] == "rises"
    assert readings["Adaptive v1 below RLOO uniform", "pass@1"] == "falls"
    assert set(trend["reading"]) <= set(scale.TREND_READINGS)


def test_the_trend_needs_two_sizes_on_the_same_tasks(results):
    alone = scale.scale_trend({"embedded": results["embedded"]}, SIZES)
    assert alone.empty and list(alone.columns) == list(scale.TREND_COLUMNS)
    fewer = {"small": _result("embedded-small", 1, tasks=8), "embedded": results["embedded"]}
    with pytest.raises(ValueError, match=r"sizes 'small' and 'embedded' have \(tasks, seeds\) \(8, 3\)"):
        scale.scale_trend(fewer, SIZES, n_resamples=50)


def test_the_summary_has_every_row_at_every_size(results):
    summary = scale.scale_summary(results, SIZES)
    assert list(summary.columns[:4]) == ["size", "policy", "parameters", "method"]
    assert list(summary["size"]) == ["small"] * 13 + ["embedded"] * 13
    assert list(summary["method"][:13]) == [m.name for m in scale.ROWS]


def _paused(result: StudyResult) -> StudyResult:
    """``result`` with every seed-2 run resumed an hour after a stop (its wall time spans the pause) and a
    step log of two steps per run: row i's steps sample for i + 1 seconds and update for 2 (i + 1), ten
    times that at seed 2 (a run slowed by other work on its cores)."""
    runs = result.runs.copy()
    late = runs["seed"] == 2
    runs.loc[late, "finished"] = (pd.to_datetime(runs.loc[late, "finished"]) + pd.Timedelta(hours=1)).map(
        lambda t: t.isoformat()
    )
    steps = pd.DataFrame(
        [{"method": m.name, "seed": s, "step": k, "seconds_sample": i + 1.0,
          "seconds_update": 2.0 * (i + 1) * (10 if s == 2 else 1)}
         for i, m in enumerate(scale.ROWS) for s in SEEDS for k in range(2)]
    )  # fmt: skip
    return dataclasses.replace(result, runs=runs, steps=steps)


def test_the_cost_per_size_worked_example(results):
    cost = scale.cost_by_method({size: _paused(r) for size, r in results.items()}, SIZES)
    # row i (0-based) ran 10 (i + 1) + seed seconds at seeds 0 and 1, and that plus an hour's pause at seed
    # 2: the median, 10 (i + 1) + 1, is not moved by the pause; its two steps took 3 (i + 1) s each at seeds 0
    # and 1 (the median: seed 2's slowed steps do not move it)
    first = cost[cost["size"] == "small"].reset_index(drop=True)
    assert list(first["method"]) == [m.name for m in scale.ROWS]
    assert list(first["seconds_per_run"]) == pytest.approx([10.0 * (i + 1) + 1 for i in range(13)])
    assert list(first["training_seconds_per_run"]) == pytest.approx([2 * 3.0 * (i + 1) for i in range(13)])
    assert set(first["runs"]) == {3}
    per_size = scale.cost_by_size(cost).set_index("size")
    assert per_size.loc["small", "runs"] == 39
    assert per_size.loc["small", "total_hours"] == pytest.approx(
        3 * sum(10 * (i + 1) + 1 for i in range(13)) / 3600
    )
    assert per_size.loc["small", "sft_seconds_per_run"] == pytest.approx(11.0)  # SFT is the first row
    assert per_size.loc["small", "ipo_seconds_per_run"] == pytest.approx(21.0)
    rloo = [10.0 * (i + 1) + 1 for i in range(2, 13)]
    assert per_size.loc["small", "rloo_seconds_per_run"] == pytest.approx(sum(rloo) / len(rloo))


def test_a_size_row_reads_the_shipped_record():
    record = json.loads((EMBEDDED_POLICIES["embedded"] / "sft.json").read_text())
    assert scale.policy_record("embedded") == record and scale.policy_record("org/not-here") == {}
    row = scale.size_row("embedded", "embedded", 3_429_120, record)
    assert row["sft_steps"] == 4000 and row["sft_hours"] == pytest.approx(record["wall_seconds"] / 3600)
    assert row["sft_pass@1"] == record["quality"]["pass@1"] and row["measured_max_new_tokens"] == 96
    assert np.isnan(row["sft_truncated"])  # the 3.4M record predates the truncation share
    empty = scale.size_row("large", "org/model", 10, {})
    assert empty["policy"] == "org/model" and np.isnan(empty["sft_hours"]) and np.isnan(empty["sft_pass@1"])


# ---------------------------------------------------------------------------------------------------
# The figure
# ---------------------------------------------------------------------------------------------------


def test_the_figure_has_a_panel_per_claim_and_marks_clear_intervals(paired):
    fig = scale_plots.scale_figure(paired)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == len(scale.CLAIMS)
    assert visible[1].get_title().startswith("RLOO uniform above SFT")
    assert [t.get_text() for t in visible[0].get_xticklabels()] == ["0.863M", "3.43M"]
    assert fig.get_figwidth() <= 6.5
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['ci_low'\]"):
        scale_plots.scale_figure(paired.drop(columns="ci_low"))


@pytest.mark.parametrize(
    ("low", "high", "clear"),
    [(0.01, 0.2, True), (-0.2, -0.01, True), (-0.1, 0.1, False), (np.nan, 0.1, False)],
)
def test_clear_of_zero(low, high, clear):
    assert scale_plots.clear_of_zero(low, high) is clear


def test_parameter_labels():
    assert [scale_plots.parameter_label(n) for n in (862_592, 3_429_120, 11_537_280)] == [
        "0.863M",
        "3.43M",
        "11.5M",
    ]


# ---------------------------------------------------------------------------------------------------
# Notebook 09
# ---------------------------------------------------------------------------------------------------


def test_notebook_09_runs_the_scale_rows_from_each_sizes_parameter():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    parameters = {}
    exec(code[0].source, {}, parameters)
    assert parameters == {"preset": "quick", **{s.parameter: s.policy for s in scale.SIZES}}
    opening = code[1].source
    assert 'methods = study.notebook_methods("09_scale", "embedded")' in opening
    assert 'run_notebook_study("09_scale", methods, preset, policy, seeds=scale.SEEDS)' in opening
    for size in ("small", "large"):  # each run only when its policy is there (``scale.unshipped``)
        call = (
            f'run_notebook_study(\n        "09_scale", study.notebook_methods("09_scale", "{size}"), preset, '
            f"{size}_policy, seeds=scale.SEEDS\n    )"
        )
        assert f'if "{size}" not in missing:\n    {size} = {call}' in opening
    assert not any(
        line.lstrip().startswith(("def ", "class ")) for c in code for line in c.source.splitlines()
    )
    assert all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.slow
def test_notebook_09_runs_a_size_given_as_a_folder_through_plain_papermill(tmp_path, monkeypatch):
    """A size's policy may be any folder: its rows are planned and run beside the embedded size's, the
    tables hold every size, and the executed copy (plain papermill, no pipeline environment) shows no
    progress bars."""
    import shutil

    import papermill

    folder = tmp_path / "policy"
    shutil.copytree(EMBEDDED_POLICIES["embedded-search"], folder)
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))
    for name in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(name, raising=False)
    sizes = {
        "small_policy": str(folder),
        "policy": str(folder),
        "large_policy": str(folder),
    }  # one set of runs
    parameters = {"preset": "tiny", **sizes}
    out = tmp_path / "09.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), parameters=parameters, progress_bar=False)
    planned = grid.plan_grid(["09_scale"], "tiny", sizes)
    assert len(planned) == len(scale.ROWS)  # three sizes asking for the same runs
    tables = tmp_path / "results" / "presets" / "tiny" / "tables"
    summary = pd.read_csv(tables / "scale_summary.csv")
    assert summary.groupby("size")["method"].apply(list).to_dict() == {
        size: [m.name for m in scale.ROWS] for size in ("embedded", "small", "large")
    }
    assert set(pd.read_csv(tables / "scale_paired.csv")["size"]) == {"embedded", "small", "large"}
    streams = "".join(o.get("text", "") for c in nbformat.read(out, as_version=4).cells
                      for o in c.get("outputs", []) if o.output_type == "stream")  # fmt: skip
    assert "%|" not in streams and "Loading weights" not in streams, streams[:300]
