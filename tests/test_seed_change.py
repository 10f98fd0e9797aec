"""The claim registry on a subset of training seeds, and two registries side by side claim by claim."""

import math
import shutil

import numpy as np
import pandas as pd
import pytest

from countdown_study.paths import executed_dir, figures_dir, tables_dir
from countdown_study.reporting.outputs import read_table
from countdown_study.reporting.paper_inputs import ResultsError, conditional_tables, load_results
from countdown_study.reporting.paper_sections import section_body
from countdown_study.reporting.paper_study_sections import SYNTHESIS
from countdown_study.study import study_preset
from countdown_study.study.claims import CLAIMS_COLUMNS, SELECTED, RegistryClaim, claims_table
from countdown_study.study.methods import StudyResult
from countdown_study.study.seed_change import (
    SEED_CHANGE_COLUMNS,
    claims_on_seeds,
    first_seeds_change,
    seed_change_table,
    seed_subset,
)
from countdown_study.study.selection import SELECTION_POOL, selection_values

NAN = math.nan

# ---------------------------------------------------------------------------------------------------
# seed_change_table on hand-made claims tables
# ---------------------------------------------------------------------------------------------------


def claims_row(claim_id, b, report_a, report_b, n_seeds, diff, low, high, mde, verdict):
    row = dict.fromkeys(CLAIMS_COLUMNS, NAN)
    row.update({"claim_id": claim_id, "report": claim_id[:3], "metric": "pass@1", "a": "A", "b": b,
                "report_a": report_a, "report_b": report_b, "n_seeds": n_seeds, "diff": diff, "ci_low": low,
                "ci_high": high, "mde": mde, "verdict": verdict})  # fmt: skip
    return row


BEFORE = pd.DataFrame(
    [
        # report's own +0.05; our interval holds zero, the MDE 0.03 would have seen it
        claims_row("000.gain", "U", 0.45, 0.40, 5, 0.010, -0.010, 0.030, 0.030, "inside noise"),
        # report's own +0.013; reversed with an MDE above it
        claims_row("003.small", "U", 0.413, 0.400, 5, -0.020, -0.035, -0.005, 0.030, "reversed"),
        # a hybrid that never left the staged schedule: the same runs as another claim
        claims_row("003.hybrid", "U", NAN, NAN, 5, 0.0, -0.01, 0.01, 0.02, "same runs as 003.a"),
        # a rate against zero: the report's own effect is its rate
        claims_row("004.nonzero", "zero", 0.90, NAN, 5, 0.40, 0.30, 0.50, 0.050, "holds"),
        claims_row("002.table6", "", 0.0, NAN, 0, NAN, NAN, NAN, NAN, "not tested"),
    ]
)
AFTER = pd.DataFrame(
    [
        claims_row("000.gain", "U", 0.45, 0.40, 10, 0.015, 0.004, 0.026, 0.018, "holds"),
        claims_row("003.small", "U", 0.413, 0.400, 10, -0.018, -0.028, -0.008, 0.012, "reversed"),
        claims_row("003.hybrid", "U", NAN, NAN, 10, 0.0, -0.01, 0.01, 0.015, "same runs as 003.b"),
        claims_row("004.nonzero", "zero", 0.90, NAN, 10, 0.41, 0.33, 0.49, 0.030, "holds"),
        claims_row("002.table6", "", 0.0, NAN, 0, NAN, NAN, NAN, NAN, "not tested"),
    ]
)


def test_the_seed_change_table_on_a_worked_example():
    # before given in another order: rows are matched by claim id and come in the after table's order
    table = seed_change_table(BEFORE.iloc[::-1], AFTER)
    expected = pd.DataFrame(
        {
            "claim_id": ["000.gain", "003.small", "003.hybrid", "004.nonzero", "002.table6"],
            "report": ["000", "003", "003", "004", "002"],
            "metric": "pass@1",
            "their_diff": [0.45 - 0.40, 0.413 - 0.400, NAN, 0.90, NAN],
            "n_seeds_before": [5, 5, 5, 5, 0],
            "n_seeds_after": [10, 10, 10, 10, 0],
            "diff_before": [0.010, -0.020, 0.0, 0.40, NAN],
            "diff_after": [0.015, -0.018, 0.0, 0.41, NAN],
            "ci_before_low": [-0.010, -0.035, -0.01, 0.30, NAN],
            "ci_before_high": [0.030, -0.005, 0.01, 0.50, NAN],
            "ci_after_low": [0.004, -0.028, -0.01, 0.33, NAN],
            "ci_after_high": [0.026, -0.008, 0.01, 0.49, NAN],
            "mde_before": [0.030, 0.030, 0.02, 0.050, NAN],
            "mde_after": [0.018, 0.012, 0.015, 0.030, NAN],
            # 0.03 <= 0.05 | 0.03 > 0.013 | no effect of theirs | 0.05 <= 0.9 | nothing measured
            "mde_reaches_theirs_before": pd.array([True, False, pd.NA, True, pd.NA], dtype="boolean"),
            "mde_reaches_theirs_after": pd.array([True, True, pd.NA, True, pd.NA], dtype="boolean"),
            "verdict_before": ["inside noise", "reversed", "same runs as 003.a", "holds", "not tested"],
            "verdict_after": ["holds", "reversed", "same runs as 003.b", "holds", "not tested"],
            # only the first moved: a duplicate naming another claim stays in the same category
            "moved": [True, False, False, False, False],
        }
    )
    assert tuple(table.columns) == SEED_CHANGE_COLUMNS
    pd.testing.assert_frame_equal(table, expected)


def test_tables_of_different_claims_are_refused():
    with pytest.raises(ValueError, match=r"same claims, once each; differ on \['002.table6'\]"):
        seed_change_table(BEFORE, AFTER.iloc[:4])
    with pytest.raises(ValueError, match="once each"):
        seed_change_table(pd.concat([BEFORE, BEFORE.iloc[:1]]), pd.concat([AFTER, AFTER.iloc[:1]]).iloc[1:])


# ---------------------------------------------------------------------------------------------------
# the registry on a subset of seeds is the registry of a study that ran those seeds only
# ---------------------------------------------------------------------------------------------------

METHODS = ("A", "B", "C")
NUM_TASKS, SAMPLES = 8, 4


def registry_claim(claim_id, kind, metric, a, b, sign, report_a, report_b, block="main"):
    return RegistryClaim(claim_id, claim_id[:3], "Table 1", "s", kind, metric, a, b, sign, report_a, report_b,
                         block, "test", "")  # fmt: skip


CLAIMS = [
    registry_claim("000.a-above-b", "pair", "pass@1", "A", ("B",), 1, 0.5, 0.4),
    registry_claim("002.a-best", "best", "pass@4", "A", ("B", "C"), 1, 0.6, 0.5),
    registry_claim("004.b-equals-c", "equal", "mean_score", "B", ("C",), 0, 0.3, 0.3),
    registry_claim(
        "003.selection", "pair", "pass@1", SELECTED, ("Final checkpoint",), -1, 0.28, NAN, "search"
    ),
    registry_claim("003.search-only", "pair", "pass@1", "A", ("B",), 1, 0.5, 0.4, "search"),
]


def run_samples(method: str, seed: int) -> pd.DataFrame:
    """Per-sample rows of one run, drawn from (method, seed) alone: the same whichever seeds a study holds."""
    rng = np.random.default_rng(100 * METHODS.index(method) + seed)
    correct = rng.integers(0, SAMPLES + 1, NUM_TASKS) + (METHODS.index(method) == 0)
    rows = [{"task_index": t, "num_count": 3, "tier": "T1", "target": 10 + t, "sample_index": j,
             "reward": 1.0 if j < c else 0.1, "correct": bool(j < c), "well_formed": True, "method": method,
             "seed": seed}
            for t, c in enumerate(np.minimum(correct, SAMPLES)) for j in range(SAMPLES)]  # fmt: skip
    return pd.DataFrame(rows)


def study(seeds) -> StudyResult:
    samples = pd.concat([run_samples(m, s) for m in METHODS for s in seeds], ignore_index=True)
    runs = pd.DataFrame(
        [{"method": m, "seed": s, "path": f"no-such-folder/{m}{s}"} for m in METHODS for s in seeds]
    )
    return StudyResult(study_preset("tiny", seeds=tuple(seeds)), runs, samples, pd.DataFrame(), METHODS)


def write_sweep_run(folder, seed: int) -> None:
    """Validation (2 tasks) and test (3 tasks) snapshots at steps 10 and 20, 2 samples a task."""
    rng = np.random.default_rng(1000 + seed)
    tables = folder / "tables"
    tables.mkdir(parents=True)
    for kind, tasks in (("val", 2), ("test", 3)):
        for step in (10, 20):
            rows = [{"task_index": t, "correct": bool(j < c)} for t, c in enumerate(rng.integers(0, 3, tasks))
                    for j in range(2)]  # fmt: skip
            pd.DataFrame(rows).to_parquet(tables / f"snapshot_{kind}_{step}.parquet")


def sweep(folder, seeds) -> StudyResult:
    """Runs of one of the sweep's coefficient rows (``selection.SELECTION_POOL``) at ``seeds``."""
    name = SELECTION_POOL[0]
    runs = pd.DataFrame([{"method": name, "seed": s, "path": str(folder / f"run{s}")} for s in seeds])
    return StudyResult(
        study_preset("tiny", seeds=tuple(seeds)), runs, pd.DataFrame(), pd.DataFrame(), (name,)
    )


@pytest.fixture
def sweep_folder(tmp_path):
    for seed in (0, 1, 2):
        write_sweep_run(tmp_path / f"run{seed}", seed)
    return tmp_path


def test_the_registry_on_a_subset_of_seeds_equals_the_registry_of_those_runs_alone(sweep_folder):
    subset = claims_on_seeds({"main": study((0, 1, 2))}, (0, 2), sweep(sweep_folder, (0, 1, 2)), CLAIMS, 200)
    alone = sweep(sweep_folder, (0, 2))
    direct = claims_table({"main": study((0, 2))}, lambda: selection_values(alone), CLAIMS, 200)
    pd.testing.assert_frame_equal(subset, direct)
    # four claims tested on two seeds, the one on a block these results lack says so
    assert subset["n_seeds"].tolist() == [2, 2, 2, 2, 0]
    assert subset["why"].iloc[4] == "not in these results: no 'search' block in these results"
    everything = claims_on_seeds(
        {"main": study((0, 1, 2))}, (0, 1, 2), sweep(sweep_folder, (0, 1, 2)), CLAIMS, 200
    )
    assert not np.allclose(everything["diff"].iloc[:4], subset["diff"].iloc[:4])  # seed 1 counts there


def test_a_subset_keeps_the_presets_order_and_refuses_unknown_seeds():
    kept = seed_subset(study((0, 1, 2)), (2, 0))
    assert kept.preset.seeds == (0, 2) and sorted(kept.samples["seed"].unique()) == [0, 2]
    assert kept.runs["seed"].tolist() == [0, 2, 0, 2, 0, 2]
    with pytest.raises(ValueError, match=r"seeds \[0, 7\] must be a non-empty subset of \[0, 1, 2\]"):
        seed_subset(study((0, 1, 2)), (0, 7))
    with pytest.raises(ValueError, match="non-empty subset"):
        seed_subset(study((0, 1, 2)), ())


def test_the_first_seeds_against_all_of_them(sweep_folder):
    results, runs = {"main": study((0, 1, 2))}, sweep(sweep_folder, (0, 1, 2))
    everything = claims_table(results, lambda: selection_values(runs), CLAIMS, 200)
    assert first_seeds_change(results, everything, runs, first=3, claims=CLAIMS) is None  # nothing to compare
    change = first_seeds_change(results, everything, runs, first=2, claims=CLAIMS)
    assert change["n_seeds_before"].tolist() == [2, 2, 2, 2, 0]
    assert change["n_seeds_after"].tolist() == [3, 3, 3, 3, 0]
    first_two = sweep(sweep_folder, (0, 1))
    before = claims_table({"main": study((0, 1))}, lambda: selection_values(first_two), CLAIMS, 200)
    pd.testing.assert_frame_equal(change, seed_change_table(before, everything))


# ---------------------------------------------------------------------------------------------------
# the paper: the table where it exists, its sentence where the study has five seeds
# ---------------------------------------------------------------------------------------------------


def test_the_paper_shows_the_seed_change_table_or_its_sentence_in_its_place():

    spec = next(t for t in SYNTHESIS.tables if t.name == "claims_seed_change")
    # interval_coverage is empty at one seed; scale_trend needs two sizes' runs
    assert conditional_tables() == {"claims_seed_change", "interval_coverage", "scale_trend"}
    committed = {
        t.name: read_table(tables_dir() / f"{t.name}.csv") for t in SYNTHESIS.tables if t.name != spec.name
    }
    body, fragments = section_body(SYNTHESIS, committed, {f.name: f"{f.name}.pdf" for f in SYNTHESIS.figures})
    assert spec.absent in body and "claims_seed_change" not in fragments

    changed = seed_change_table(BEFORE, AFTER)
    body, fragments = section_body(
        SYNTHESIS,
        {**committed, "claims_seed_change": changed},
        {f.name: f"{f.name}.pdf" for f in SYNTHESIS.figures},
    )
    assert spec.absent not in body and r"\input{generated/tables/claims_seed_change}" in body
    fragment = fragments["claims_seed_change"]
    assert "gain" in fragment and "inside noise" in fragment and "holds" in fragment


def test_a_missing_required_table_is_still_refused_while_a_conditional_one_is_left_out(tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(tables_dir(), tables)
    results = load_results(tables, figures_dir(), executed_dir())
    assert "claims_seed_change" not in results.tables and "claims" in results.tables
    (tables / "claims.csv").unlink()
    with pytest.raises(ResultsError, match="claims.csv is missing"):
        load_results(tables, figures_dir(), executed_dir())
