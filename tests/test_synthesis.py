"""The synthesis tables from hand-made verdict tables and step logs (every claim once, the trade-off as a
plain per-seed mean, cost per million tokens on a worked example), its figures, and notebook 90 at the tiny
preset."""

import json
from dataclasses import replace

import nbformat
import numpy as np
import pandas as pd
import pytest
from test_notebooks import _check_executed_copy

from countdown_study.paths import notebooks_dir
from countdown_study.reporting import outputs, synthesis_plots
from countdown_study.study import (
    REPORT_001,
    REPORT_002,
    SFT,
    UNIFORM,
    StudyResult,
    methods,
    study_preset,
    synthesis,
    synthesis_tables,
)
from countdown_study.study.compare import zero_bound
from countdown_study.study.pipeline import list_notebooks, run_notebooks

SEEDS = (0, 1)
N = 16
"""Samples per task: pass@16 of a task is 1 when any of its 16 samples is correct."""


def _samples(method: str, seed: int, correct_per_task, n: int = N) -> list[dict]:
    """Per-sample verdict rows: the first ``c`` of each task's ``n`` samples are correct."""
    return [{"task_index": task, "num_count": 3 + task % 2, "tier": "T1", "target": 10 + task,
             "sample_index": j, "reward": 1.0 if j < c else 0.1, "correct": j < c, "well_formed": True,
             "method": method, "seed": seed}
            for task, c in enumerate(correct_per_task) for j in range(n)]  # fmt: skip


def _result(rows, policy: str, rng: int, tasks: int = 4) -> StudyResult:
    """A study of ``rows`` at two seeds with random correct counts (some tasks never solved)."""
    draw = np.random.default_rng(rng)
    samples = [
        r for m in rows for s in SEEDS for r in _samples(m.name, s, draw.integers(0, N + 1, tasks) // 2)
    ]
    preset = study_preset("tiny", seeds=SEEDS, policy=policy)
    return StudyResult(
        preset, pd.DataFrame(), pd.DataFrame(samples), pd.DataFrame(), tuple(m.name for m in rows)
    )


@pytest.fixture(scope="module")
def results():
    return synthesis.blocks(
        _result(synthesis.MAIN_METHODS, "embedded", 0),
        _result(synthesis.SEARCH_METHODS, "embedded-search", 1),
    )


@pytest.fixture(scope="module")
def paired(results):
    return synthesis.joint_paired(results, n_resamples=200)


# ---------------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------------


def test_every_claims_dict_of_the_methods_is_a_claim_set():
    dicts = {name for name in vars(methods) if name.startswith("CLAIMS_")}
    assert {source for _, source, _, _ in synthesis.CLAIM_SETS} == dicts


def test_every_claim_entry_is_pulled_exactly_once(results):
    claims = synthesis.all_claims()
    expected = [(source, key) for _, source, entries, _ in synthesis.CLAIM_SETS for key in entries]
    assert sorted((c.source, c.key) for c in claims) == sorted(expected)
    assert len(claims) == sum(len(getattr(methods, name)) for name in {s for s, _ in expected}) == 30
    table = synthesis.verdict_table(results, n_resamples=200)
    assert list(table.columns) == list(synthesis.VERDICT_COLUMNS)
    assert len(table) == len(claims) and not table.duplicated(["source", "claim", "metric"]).any()
    elsewhere = {"CLAIMS_003_EMBEDDED": ", on embedded"}  # report 003's claims off their own block
    assert list(zip(table["source"], table["claim"], strict=True)) == [
        (c.source, f"{c.a} {'above' if c.sign > 0 else 'below'} {c.b}{elsewhere.get(c.source, '')}")
        for c in claims
    ]
    assert set(table["verdict"]) <= {"holds", "reversed", "inside noise"}  # two seeds: a verdict each


def test_claims_without_a_metric_are_read_on_their_reports_headline_metric():
    metrics = {c.report: c.metric for c in synthesis.all_claims() if len(c.key) == 2}
    assert metrics == {"000": "pass@1", "001": "pass@1", "004": "mean_score"}


def test_claims_name_rows_of_their_own_block():
    blocks = ((synthesis.MAIN, synthesis.MAIN_METHODS), (synthesis.SEARCH, synthesis.SEARCH_METHODS))
    rows = {block: {m.name for m in ms} for block, ms in blocks}
    for claim in synthesis.all_claims():
        assert {claim.a, claim.b} <= rows[claim.block], claim
    blocks_003 = {(c.source, c.block) for c in synthesis.all_claims() if c.report == "003"}
    assert blocks_003 == {("CLAIMS_003", synthesis.SEARCH), ("CLAIMS_003_EMBEDDED", synthesis.MAIN)}


def test_their_numbers_agree_with_every_claimed_sign():
    for claim in synthesis.all_claims():
        theirs = synthesis.their_numbers(claim)
        assert np.isfinite(theirs["their_diff"]), claim
        assert np.sign(theirs["their_diff"]) == claim.sign, (claim, theirs)
    commit = next(c for c in synthesis.all_claims() if c.a == "Commit reward only")
    assert synthesis.their_numbers(commit) | {"their_diff": 0} == {
        "their_a": 0.2925, "their_b": 0.3063, "their_diff": 0, "their_metric": "exact_rate",
        "their_source": "Table 2", "their_model": synthesis.PAPER_MODEL,
    }  # fmt: skip
    vcc = [c for c in synthesis.all_claims() if c.a == "VCC-RLOO"]
    assert [c.b for c in vcc] == ["RLOO uniform", methods.WHOLE_UNIFORM.name]
    assert [synthesis.their_numbers(c)["their_diff"] for c in vcc] == [pytest.approx(0.78 - 0.72)] * 2


def test_our_numbers_in_the_verdicts_are_means_over_seeds(results):
    table = synthesis.verdict_table(results, synthesis.all_claims()[:1], n_resamples=200).iloc[0]
    samples = results[synthesis.MAIN].samples
    pass1 = samples.groupby(["method", "seed"])["correct"].mean().groupby("method").mean()
    assert table["our_a"] == pytest.approx(pass1[UNIFORM.name]) and table["our_b"] == pytest.approx(
        pass1[SFT.name]
    )
    assert table["our_diff"] == pytest.approx(table["our_a"] - table["our_b"])


def _with_runs(result: StudyResult, folder, ood_correct: dict[str, list[int]]) -> StudyResult:
    """``result`` with a run folder per (method, seed); the methods of ``ood_correct`` also evaluated
    the 5-number set, with those correct counts of 16 per task under every seed."""
    rows = []
    for i, method in enumerate(result.methods):
        for seed in SEEDS:
            path = folder / f"run-{i}-{seed}"
            (path / "tables").mkdir(parents=True)
            if method in ood_correct:
                samples = pd.DataFrame(_samples(method, seed, ood_correct[method]))
                samples.drop(columns=["method", "seed"]).to_parquet(path / "tables" / "eval_ood.parquet")
            rows.append({"method": method, "seed": seed, "path": str(path)})
    return replace(result, runs=pd.DataFrame(rows))


def _sweep(folder) -> StudyResult:
    """The tight sweep's runs, each with validation and test snapshots at steps 10 and 20 (4 test tasks):
    validation prefers step 10, whose test pass@1 is 0.25 below the final step's on every task."""
    rows = []
    for i, method in enumerate(synthesis.SWEEP_METHODS):
        for seed in SEEDS:
            path = folder / f"sweep-{i}-{seed}" / "tables"
            path.mkdir(parents=True)
            for kind, step, correct in (("val", 10, 3), ("val", 20, 1), ("test", 10, 1), ("test", 20, 2)):
                table = [{"task_index": t, "correct": j < correct} for t in range(4) for j in range(4)]
                pd.DataFrame(table).to_parquet(path / f"snapshot_{kind}_{step}.parquet")
            rows.append({"method": method.name, "seed": seed, "path": str(path.parent)})
    preset = study_preset("tiny", seeds=SEEDS, policy="embedded-search")
    names = tuple(m.name for m in synthesis.SWEEP_METHODS)
    return StudyResult(preset, pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(), names)


def test_the_two_claims_that_are_not_a_difference_of_rows(results, tmp_path):
    rule, teacher = methods.ZERO_CLAIMS_004
    main = _with_runs(results[synthesis.MAIN], tmp_path, {rule: [0, 0, 0], teacher: [0, 3, 0]})
    ood = synthesis.ood_verdicts(main, n_resamples=200).set_index("claim")
    assert list(ood.index) == [f"{rule} at zero on 5-number tasks", f"{teacher} at zero on 5-number tasks"]
    assert (
        set(ood["sign"]) == {0} and set(ood["their_a"]) == {0.0} and set(ood["their_source"]) == {"Table 4"}
    )
    never = ood.loc[f"{rule} at zero on 5-number tasks"]
    assert (never["verdict"], never["our_a"], never["our_b"]) == ("holds", 0.0, 0.0)
    assert never["mde"] == pytest.approx(zero_bound(3))
    once = ood.loc[f"{teacher} at zero on 5-number tasks"]  # one task of three solved under both seeds
    assert once["our_a"] == pytest.approx(1 / 3) and once["verdict"] == "inside noise"  # t(1): wide

    sweep = synthesis.selection_verdicts(_sweep(tmp_path), n_resamples=200).iloc[0]
    assert (sweep["report"], sweep["sign"], sweep["their_a"]) == ("003", -1, 0.2838)
    assert np.isnan(sweep["their_b"]) and sweep["model"] == synthesis.block_model(results[synthesis.SEARCH])
    assert (sweep["our_a"], sweep["our_b"], sweep["our_diff"]) == pytest.approx((0.25, 0.5, -0.25))
    assert sweep["n_seeds"] == len(SEEDS)  # the runs of one training seed are one cluster
    assert sweep["verdict"] == "holds"  # below the final checkpoint on every task of every run

    joined = synthesis.all_verdicts(synthesis.blocks(main, results[synthesis.SEARCH]), _sweep(tmp_path / "again"),
                                    n_resamples=200)  # fmt: skip
    assert list(joined.columns) == list(synthesis.VERDICT_COLUMNS)
    assert len(joined) == len(synthesis.all_claims()) + 3
    assert joined["report"].is_monotonic_increasing  # 000 ... 004, each report's claims in one group
    assert joined[joined["report"] == "004"]["source"].tolist()[-2:] == ["ZERO_CLAIMS_004"] * 2


# ---------------------------------------------------------------------------------------------------
# Rows, contrasts and the summary
# ---------------------------------------------------------------------------------------------------


def test_each_row_meets_its_uniform_row_once_and_each_report_contrast_is_kept():
    for block, rows in (
        (synthesis.MAIN, synthesis.MAIN_METHODS),
        (synthesis.SEARCH, synthesis.SEARCH_METHODS),
    ):
        pairs = synthesis.contrasts(block)
        assert len(pairs) == len(set(pairs)) and set(synthesis.OWN_CONTRASTS[block]) <= set(pairs)
        against_uniform = [a for a, b in pairs if b == synthesis.uniform_reference(block, a)]
        assert sorted(against_uniform) == sorted(m.name for m in rows if m.name != UNIFORM.name)
    assert synthesis.uniform_reference(synthesis.MAIN, REPORT_001[1].name) == REPORT_001[0].name
    assert synthesis.uniform_reference(synthesis.MAIN, REPORT_001[0].name) == UNIFORM.name
    vcc = methods.REPORT_003[4].name  # on the embedded policy's whole rollouts, as is its uniform row
    assert synthesis.uniform_reference(synthesis.MAIN, vcc) == methods.WHOLE_UNIFORM.name
    assert synthesis.uniform_reference(synthesis.MAIN, methods.WHOLE_UNIFORM.name) == UNIFORM.name
    assert synthesis.uniform_reference(synthesis.SEARCH, vcc) == UNIFORM.name
    assert synthesis.against(synthesis.MAIN, REPORT_002[0].name, "RLOO uniform (with replacement)") == (
        "report's control"
    )


def test_joint_summary_labels_every_row_by_model_and_report(results):
    summary = synthesis.joint_summary(results, n_resamples=200)
    assert len(summary) == len(synthesis.MAIN_METHODS) + len(synthesis.SEARCH_METHODS)
    search = summary[summary["block"] == synthesis.SEARCH]
    assert set(search["model"]) == {"embedded 3.4M Qwen2 (search-style SFT by this package)"}
    assert search.set_index("method").loc["Staged curriculum", "report"] == "003"
    for metric in synthesis.INTERVAL_METRICS:  # two seeds: intervals symmetric about the mean
        assert (summary[f"{metric}_low"] <= summary[metric]).all(), metric
        assert (summary[metric] <= summary[f"{metric}_high"]).all(), metric
    for metric in synthesis.SUMMARY_METRICS:
        assert summary[metric].notna().all(), metric


def test_level_interval_is_the_comparison_against_zero():
    values = np.array([[0.2, 0.4], [0.6, 0.8], [1.0, 0.0]])  # (tasks, seeds)
    low, high = synthesis.level_interval(values, n_resamples=200)
    assert low < values.mean() < high


def test_joint_meta_names_each_runs_policy():
    meta = {"notebook": "90", "preset": "tiny", "policy": "embedded", "runs": [{"run_id": "a"}]}
    search = {**meta, "policy": "embedded-search", "runs": [{"run_id": "b"}]}
    assert synthesis.joint_meta(meta, search) == {
        "notebook": "90", "preset": "tiny", "policy": "embedded", "search_policy": "embedded-search",
        "runs": [{"run_id": "a", "policy": "embedded"}, {"run_id": "b", "policy": "embedded-search"}],
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# The cross-report questions
# ---------------------------------------------------------------------------------------------------


def test_pairwise_table_and_ranking_on_hand_made_matrices():
    """A solves every task, B half of each, C none: constant differences, so zero-width intervals."""
    matrices = {"A": np.ones((4, 2)), "B": np.full((4, 2), 0.5), "C": np.zeros((4, 2))}  # (tasks, seeds)
    pairs = synthesis_tables.pairwise_table(matrices, n_resamples=200)
    assert list(zip(pairs["a"], pairs["b"], strict=True)) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert pairs["diff"].tolist() == [0.5, 1.0, 0.5] and (pairs["verdict"] == "a above b").all()
    ranking = synthesis_tables.curricula_ranking(pairs).set_index("method")
    assert ranking["mean_diff_vs_others"].to_dict() == {"A": 0.75, "B": 0.0, "C": -0.75}
    same = synthesis_tables.pairwise_table({**matrices, "B again": np.full((4, 2), 0.5)}, n_resamples=200)
    verdicts = dict(zip(zip(same["a"], same["b"], strict=True), same["verdict"], strict=True))
    assert (
        verdicts[("B", "B again")] == synthesis_tables.SAME_RUNS and verdicts[("A", "B again")] == "a above b"
    )
    assert ranking["above"].to_dict() == {"A": 2, "B": 1, "C": 0}
    assert ranking["below"].to_dict() == {"A": 0, "B": 1, "C": 2} and ranking["rank"].tolist() == [1, 2, 3]


def test_pairwise_curricula_covers_every_pair_of_the_curricula(results):
    names = [m.name for m in synthesis_tables.CURRICULA]
    pairs = synthesis_tables.pairwise_curricula(results[synthesis.MAIN], n_resamples=100)
    assert len(pairs) == len(names) * (len(names) - 1) // 2
    assert not set(pairs["a"]) & {m.name for m in REPORT_001}
    assert {"Staged curriculum", "Adaptive curriculum", "Hybrid curriculum"} <= {*pairs["a"], *pairs["b"]}
    assert not {*pairs["a"], *pairs["b"]} & {"VCC-RLOO", methods.WHOLE_UNIFORM.name}  # whole rollouts


def test_tradeoff_diffs_equal_a_plain_per_seed_mean_computation(results, paired):
    tradeoff = synthesis_tables.tradeoff_table(paired)
    for row in tradeoff.to_dict("records"):
        samples = results[row["block"]].samples
        per_task = samples.groupby(["method", "seed", "task_index"])["correct"].agg(["mean", "any"])
        for metric, column in (("pass@1", "mean"), ("pass@16", "any")):
            per_seed = per_task[column].astype(float).groupby(["method", "seed"]).mean()  # (method, seed)
            plain = np.mean([per_seed[row["method"], s] - per_seed[row["reference"], s] for s in SEEDS])
            assert row[f"{metric}_diff"] == pytest.approx(plain), (row["method"], metric)
    reports = set(tradeoff["report"])
    assert "baselines" not in reports and {"000", "001", "002", "003", "004", "field"} == reports
    assert not set(tradeoff["method"]) & set(synthesis_tables.UNIFORM_ROWS)
    binary = tradeoff.set_index("method").loc[REPORT_001[1].name]
    assert binary["reference"] == REPORT_001[0].name
    up_down = tradeoff[(tradeoff["pass@1_diff"] > 0) & (tradeoff["pass@16_diff"] < 0)]
    assert (up_down["quadrant"] == "pass@1 up, pass@16 down").all()


def test_cost_per_million_tokens_on_a_worked_example():
    """SFT is the starting policy (pass@1 0.25); uniform generates 220 tokens per run for pass@1 0.5; dynamic
    edge 220 tokens plus 40 probe tokens for pass@1 0.75. Runs take 60 s (seed 0) and 90 s (seed 1)."""
    rows = [SFT, UNIFORM, REPORT_002[0]]
    solved = {SFT.name: [2, 0], UNIFORM.name: [4, 0], REPORT_002[0].name: [4, 2]}  # of 4 samples per task
    samples = [r for m in rows for s in SEEDS for r in _samples(m.name, s, solved[m.name], n=4)]
    runs = [{"method": m.name, "seed": s, "started": "2026-01-01T00:00:00+00:00",
             "finished": f"2026-01-01T00:01:{30 * s:02d}+00:00"} for m in rows for s in SEEDS]  # fmt: skip
    steps = [{"method": m.name, "seed": s, "step": t, "tokens": 100 + 20 * t, "seconds_sample": 1.0,
              "seconds_update": 2.0} for m in rows[1:] for s in SEEDS for t in (0, 1)]  # fmt: skip
    for row in steps:
        if row["method"] == REPORT_002[0].name and row["step"] == 0:
            row.update(probe_tokens=40, probe_rollouts=8, seconds_probe=0.5)
    result = StudyResult(study_preset("tiny", seeds=SEEDS), pd.DataFrame(runs), pd.DataFrame(samples),
                         pd.DataFrame(steps), tuple(m.name for m in rows))  # fmt: skip
    cost = synthesis_tables.cost_table({synthesis.MAIN: result}).set_index("method")
    assert cost["wall_seconds"].tolist() == [75.0, 75.0, 75.0]
    assert np.isnan(cost.loc[SFT.name, "phase_seconds"]) and np.isnan(cost.loc[SFT.name, "tokens_per_run"])
    assert (
        cost.loc[UNIFORM.name, "phase_seconds"] == 6.0
        and cost.loc[REPORT_002[0].name, "phase_seconds"] == 6.5
    )
    assert (
        cost.loc[UNIFORM.name, "tokens_per_run"] == 220
        and cost.loc[REPORT_002[0].name, "tokens_per_run"] == 260
    )
    assert cost.loc[REPORT_002[0].name, "extra_token_share"] == pytest.approx(40 / 260)
    assert cost.loc[UNIFORM.name, "gain_per_million_tokens"] == pytest.approx(0.25 / 220e-6)
    assert cost.loc[REPORT_002[0].name, "gain_per_million_tokens"] == pytest.approx(0.5 / 260e-6)
    assert cost.loc[REPORT_002[0].name, "report"] == "002" and cost.loc[SFT.name, "report"] == "baselines"
    gain = {"pass@1_diff": 0.25, "pass@1_low": 0.1, "pass@1_high": 0.4}
    row = {"block": synthesis.MAIN, "model": "m", "report": "002", "method": REPORT_002[0].name}
    tradeoff = pd.DataFrame([{**row, "reference": UNIFORM.name, **gain}])
    budget = synthesis_tables.budget_table(cost.reset_index(), tradeoff).iloc[0]
    assert budget["tokens_vs_uniform"] == pytest.approx(260 / 220)
    assert budget["extra_million_tokens"] == pytest.approx(40e-6)
    assert budget["gain_per_extra_million"] == pytest.approx(0.25 / 40e-6)  # 6,250 pass@1 per extra million
    assert budget["uniform_gain_per_million_tokens"] == pytest.approx(0.25 / 220e-6)


# ---------------------------------------------------------------------------------------------------
# Figures and the notebook
# ---------------------------------------------------------------------------------------------------


def test_figures_draw_from_the_synthesis_tables(results, paired, tmp_path):
    tradeoff = synthesis_tables.tradeoff_table(paired)
    pairs = synthesis_tables.pairwise_table(
        {m: np.full((3, 2), v) for m, v in (("A", 0.5), ("B", 0.2), ("C", 0.3))}, n_resamples=100
    )
    cost = synthesis_tables.cost_table(
        {b: replace(r, runs=_runs(r), steps=_steps(r)) for b, r in results.items()}
    )  # fmt: skip
    figures = {
        "forest": synthesis_plots.forest_figure(synthesis_tables.versus_uniform(paired)),
        "tradeoff": synthesis_plots.tradeoff_figure(tradeoff),
        "pairs": synthesis_plots.pairwise_figure(pairs, order=["A", "C", "B"]),
        "budget": synthesis_plots.budget_figure(synthesis_tables.budget_table(cost, tradeoff)),
    }
    for name, figure in figures.items():
        assert (outputs.save_figure(figure, name, folder=tmp_path)).stat().st_size > 1000, name
    matrix = synthesis_plots.pairwise_matrix(pairs, ["A", "C", "B"])
    assert matrix.loc["A", "B"] == pytest.approx(0.3) and matrix.loc["B", "A"] == pytest.approx(-0.3)
    assert (
        synthesis_plots.report_colours(["baselines", "000"])["baselines"] == synthesis_plots.BASELINE_COLOUR
    )


def _runs(result: StudyResult) -> pd.DataFrame:
    times = {"started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:01:00Z"}
    return pd.DataFrame([{"method": m, "seed": s, **times} for m in result.methods for s in SEEDS])


def _steps(result: StudyResult) -> pd.DataFrame:
    kinds = {m.name: m.kind for m in (*synthesis.MAIN_METHODS, *synthesis.SEARCH_METHODS)}
    return pd.DataFrame([{"method": m, "seed": s, "step": 0, "tokens": 100 + 10 * i, "seconds_sample": 1.0}
                         for i, m in enumerate(result.methods) if kinds[m] == "rloo"
                         for s in SEEDS])  # fmt: skip


@pytest.fixture
def tiny_results(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))
    return tmp_path


@pytest.mark.slow
def test_the_synthesis_notebook_runs_at_the_tiny_preset(tiny_results):
    notebook = notebooks_dir() / "90_synthesis.ipynb"
    assert list_notebooks(["90"]) == [notebook]
    (outcome,) = run_notebooks([notebook], "tiny")
    assert outcome.ok, outcome.error
    tiny = tiny_results / "presets" / "tiny"
    names = (
        "summary",
        "contrasts",
        "verdicts",
        "cross_curricula",
        "curricula_ranking",
        "tradeoff",
        "cost",
        "budget",
    )
    for name in names:
        assert (tiny / "tables" / f"synthesis_{name}.csv").is_file(), name
    meta = json.loads((tiny / "tables" / "synthesis_verdicts.meta.json").read_text())
    assert meta["notebook"] == "90_synthesis" and meta["search_policy"] == "embedded-search"
    assert {run["policy"] for run in meta["runs"]} == {"embedded", "embedded-search"}
    verdicts = pd.read_csv(tiny / "tables" / "synthesis_verdicts.csv", dtype={"report": str})
    assert len(verdicts) == len(synthesis.all_claims()) + len(methods.ZERO_CLAIMS_004) + 1
    assert {"ZERO_CLAIMS_004", "selection.SELECTION_CLAIM"} <= set(verdicts["source"])
    summary = pd.read_csv(tiny / "tables" / "synthesis_summary.csv")
    assert len(summary) == len(synthesis.MAIN_METHODS) + len(synthesis.SEARCH_METHODS)
    _check_executed_copy(tiny / "executed" / notebook.name, tiny_results)
    executed = nbformat.read(tiny / "executed" / notebook.name, as_version=4)
    assert executed.metadata.papermill.parameters["preset"] == "tiny"
