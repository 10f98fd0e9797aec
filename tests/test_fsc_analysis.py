"""Report 002's offline analyses: worked examples, a plain-loop reference, bootstrap coverage, errors."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from countdown_study.countdown.features import DV_COLUMNS, difficulty_vectors
from countdown_study.samplers.fsc_policies import spearman
from countdown_study.samplers.observations import LOG_COLUMNS, observation_rows
from countdown_study.study.fsc_analysis import (
    BANDS,
    COMPLEXITY_COLUMNS,
    SignalGain,
    diet_makeup,
    difficulty_band,
    edge_profile,
    fail_rate,
    failure_by_bin,
    failure_spearman,
    gain_table,
    pairwise_interactions,
    per_seed_table,
    refresh_diagnostics,
    sample_complexity,
    signal_gain,
    success_by_phase,
    training_diet,
    training_phase,
    value_range,
    variance_by_band,
    welch_gap,
    with_features,
)

G = 8


def _log(fail_counts, group=G, **columns) -> pd.DataFrame:
    """A batch log at step 0 with binary rewards: row i fails ``fail_counts[i]`` of ``group`` rollouts."""
    fails = np.asarray(fail_counts)
    correct = np.arange(group)[None, :] >= fails[:, None]  # (P, G): the first fails[i] rollouts fail
    log = observation_rows(0, "batch", np.arange(fails.size), correct.astype(float), correct)
    return log.assign(**columns)


def _edge(success: np.ndarray) -> np.ndarray:
    """The report's edge sampling weight, Eq. (1) plus the 0.05 floor."""
    return np.exp(-0.5 * ((success - 0.5) / 0.25) ** 2) + 0.05


# ---------------------------------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------------------------------


def test_observation_rows_worked_example():
    rewards = np.array([[1.0, 1.0, 0.1, 0.0], [1.0, 1.0, 1.0, 1.0]])  # (2, 4)
    correct = rewards == 1.0
    log = observation_rows(7, "probe", [5, 2], rewards, correct)
    assert tuple(log.columns) == LOG_COLUMNS
    assert log["step"].tolist() == [7, 7] and log["source"].tolist() == ["probe", "probe"]
    assert log["task_index"].tolist() == [5, 2] and log["n"].tolist() == [4, 4]
    assert log["n_correct"].tolist() == [2, 4]
    assert log["reward_mean"].tolist() == pytest.approx([0.525, 1.0])
    # deviations 0.475, 0.475, -0.425, -0.525: (0.225625 * 2 + 0.180625 + 0.275625) / 4 (ddof=0)
    assert log["reward_var"].tolist() == pytest.approx([0.226875, 0.0])


@pytest.mark.parametrize(
    ("source", "indices", "rewards", "message"),
    [
        ("train", [0], np.zeros((1, 2)), "source must be one of"),
        ("batch", [0, 1], np.zeros((1, 2)), "indices must be"),
        ("batch", [0], np.zeros(2), "rewards and correct"),
        ("batch", [-1], np.zeros((1, 2)), "pool indices"),
    ],
)
def test_observation_rows_errors(source, indices, rewards, message):
    with pytest.raises(ValueError, match=message):
        observation_rows(0, source, indices, rewards, rewards > 0)


def test_with_features_joins_the_difficulty_vector_by_task_index():
    dv = difficulty_vectors([([1, 2, 6, 8], 24), ([3, 4, 5], 12), ([1, 3, 4, 6], 24)])
    log = _log([0, 8, 4, 2]).assign(task_index=[2, 0, 2, 1])
    joined = with_features(log, dv)
    assert list(joined.columns) == [*LOG_COLUMNS, *DV_COLUMNS]
    assert joined["num_count"].tolist() == [4, 4, 4, 3]
    assert joined["nps_capped"].tolist() == [1, 75, 1, 3]  # report 003's worked counts: 75 and 1
    assert joined["n_correct"].tolist() == log["n_correct"].tolist()


def test_with_features_errors():
    dv = pd.DataFrame({"task_index": [10, 11], "num_count": [3, 4]})
    assert with_features(_log([0]).assign(task_index=[11]), dv)["num_count"].tolist() == [4]
    with pytest.raises(ValueError, match=r"\[3\] are not in dv_table"):
        with_features(_log([0]).assign(task_index=[3]), dv)
    with pytest.raises(ValueError, match="already has DV column"):
        with_features(_log([0], num_count=3).assign(task_index=[10]), dv)
    with pytest.raises(ValueError, match="none of the DV columns"):
        with_features(_log([0]), pd.DataFrame({"x": [1]}))


# ---------------------------------------------------------------------------------------------------
# Table 5
# ---------------------------------------------------------------------------------------------------


def test_failure_by_bin_worked_example_with_wilson_intervals():
    # One rollout per row: bin 3 fails 3 of 4 rows, bin 4 fails 1 of 4.
    log = _log([1, 1, 1, 0, 1, 0, 0, 0], group=1, num_count=[3, 3, 3, 3, 4, 4, 4, 4])
    table = failure_by_bin(log, ["num_count"], method="wilson")
    assert table["value"].tolist() == [3, 4]
    assert table["n"].tolist() == [4, 4]
    assert table["fail_rate"].tolist() == [0.75, 0.25]
    # Wilson 95% for 3 of 4: (0.3006, 0.9544); 1 of 4 mirrors it.
    assert table[["ci_low", "ci_high"]].round(4).values.tolist() == [[0.3006, 0.9544], [0.0456, 0.6994]]


def test_failure_by_bin_weighs_rows_equally_and_bins_each_field():
    # Rows of 8 rollouts failing 2 and 8: the bin's rate is the mean of the rows' rates, 0.625.
    log = _log([2, 8, 0, 0], num_count=[4, 4, 3, 3], all_numbers_required=[True, True, True, False])
    table = failure_by_bin(log, ["num_count", "all_numbers_required"], method="wilson")
    assert table["field"].tolist() == [
        "num_count",
        "num_count",
        "all_numbers_required",
        "all_numbers_required",
    ]
    assert table["fail_rate"].tolist() == pytest.approx([0.0, 0.625, 0.0, 1.25 / 3])
    assert table["n"].tolist() == [2, 2, 1, 3]


def test_failure_by_bin_quantile_bins_for_a_continuous_field():
    log = _log(np.zeros(100, dtype=int), target_log10=np.linspace(0, 3, 100))
    table = failure_by_bin(log, ["target_log10"], n_bins=4, n_resamples=50)
    assert table["n"].tolist() == [25, 25, 25, 25]
    assert all(isinstance(v, pd.Interval) for v in table["value"])


def test_failure_by_bin_bootstrap_is_seeded_and_has_the_normal_width():
    # The report's +-0.009 at n = 6,992 is 1.96 sd / sqrt(n) of the per-row rates: so is the bootstrap's.
    rng = np.random.default_rng(0)
    log = _log(rng.binomial(G, rng.uniform(size=3000)), num_count=3)
    first = failure_by_bin(log, ["num_count"], seed=1, n_resamples=1000)
    assert first.equals(failure_by_bin(log, ["num_count"], seed=1, n_resamples=1000))
    fail = 1 - log["n_correct"] / G
    half = 1.959964 * fail.std() / math.sqrt(len(fail))
    assert first["ci_high"].iloc[0] - first["ci_low"].iloc[0] == pytest.approx(2 * half, rel=0.1)
    assert first["ci_low"].iloc[0] < fail.mean() < first["ci_high"].iloc[0]


# ---------------------------------------------------------------------------------------------------
# Table 6
# ---------------------------------------------------------------------------------------------------


def test_difficulty_band_edges_go_to_the_band_nearer_one_half():
    fail = np.array([0.0, 0.09, 0.1, 0.3, 0.5, 0.7, 0.71, 0.9, 0.91, 1.0])
    expected = [
        "solved",
        "solved",
        "easy",
        "edge",
        "edge",
        "edge",
        "hard",
        "hard",
        "impossible",
        "impossible",
    ]
    assert difficulty_band(fail).tolist() == expected
    eighths = np.arange(9) / 8  # exact in binary: the bands mirror under fail <-> success
    mirror = dict(zip(BANDS, BANDS[::-1], strict=True))
    assert difficulty_band(1 - eighths).tolist() == [mirror[b] for b in difficulty_band(eighths)]
    assert fail_rate(_log([1], group=10)).tolist() == [0.1]  # a count ratio: on the edge, not below it


def _loop_variance_by_band(fail, reward_var, reward_mean):
    """Plain-loop reference for Table 6, band by an if/elif chain."""
    acc = {band: [] for band in BANDS}
    for f, v, m in zip(fail, reward_var, reward_mean, strict=True):
        if f < 0.1:
            band = "solved"
        elif f < 0.3:
            band = "easy"
        elif f <= 0.7:
            band = "edge"
        elif f <= 0.9:
            band = "hard"
        else:
            band = "impossible"
        acc[band].append((v, m))
    rows = []
    for band, items in acc.items():
        rows.append([
            band, len(items), len(items) / len(fail),
            sum(v > 1e-12 for v, _ in items) / len(items) if items else math.nan,
            sum(v for v, _ in items) / len(items) if items else math.nan,
            sum(m for _, m in items) / len(items) if items else math.nan,
        ])  # fmt: skip
    return rows


def test_variance_by_band_equals_a_plain_loop():
    rng = np.random.default_rng(3)
    rewards = rng.choice([0.0, 0.1, 1.0], size=(400, 10), p=[0.3, 0.2, 0.5])  # G = 10: rates on the edges
    rewards[:60] = 1.0  # some solved groups with zero variance
    log = observation_rows(0, "batch", np.arange(400), rewards, rewards == 1.0)
    table = variance_by_band(log)
    fail = (10 - log["n_correct"].to_numpy()) / 10
    expected = _loop_variance_by_band(fail, log["reward_var"], log["reward_mean"])
    assert table["band"].tolist() == list(BANDS)
    assert table["rows"].tolist() == [r[1] for r in expected]
    for column, position in [("share", 2), ("nonzero_share", 3), ("mean_reward_var", 4), ("mean_reward", 5)]:
        np.testing.assert_allclose(table[column], [r[position] for r in expected], rtol=1e-12)


def test_variance_by_band_worked_example_and_empty_bands():
    # Binary rewards, G = 8: a solved row (var 0), an edge row 4/8 (var 1/4), an impossible row (var 0).
    table = variance_by_band(_log([0, 4, 8])).set_index("band")
    assert table["rows"].tolist() == [1, 0, 1, 0, 1]
    assert table.loc["edge", "mean_reward_var"] == 0.25 and table.loc["edge", "nonzero_share"] == 1.0
    assert table.loc["solved", "nonzero_share"] == 0.0 and table.loc["solved", "mean_reward"] == 1.0
    assert math.isnan(table.loc["easy", "mean_reward_var"])
    assert table["share"].sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------------
# The "+69% usable signal" bootstrap
# ---------------------------------------------------------------------------------------------------


def test_signal_gain_worked_example():
    # Variances 7/64, 1/4, 1/4, 7/64 (uniform mean 46/256); weights 1, 3, 3, 1 give 110/512: +9/46.
    log = _log([1, 4, 4, 7])
    result = signal_gain(log, [1.0, 3.0, 3.0, 1.0], n_resamples=200)
    assert (result.uniform, result.weighted, result.n) == (46 / 256, 110 / 512, 4)
    assert result.gain == pytest.approx(9 / 46)
    # A resample of one kind of row only has gain 0: the interval reaches it.
    assert 0 <= result.ci_low < result.gain < result.ci_high < 1
    uniform = signal_gain(log, np.ones(4), n_resamples=200)  # constant weights change nothing
    assert uniform.gain == pytest.approx(0.0, abs=1e-12)
    assert (uniform.ci_low, uniform.ci_high) == pytest.approx((0.0, 0.0), abs=1e-12)


def test_signal_gain_is_seeded():
    rng = np.random.default_rng(0)
    log = _log(rng.binomial(G, rng.uniform(size=128)))
    weights = _edge(log["n_correct"].to_numpy() / G)
    first = signal_gain(log, weights, n_resamples=300, seed=4)
    assert first == signal_gain(log, weights, n_resamples=300, seed=4)
    assert first != signal_gain(log, weights, n_resamples=300, seed=5)
    assert first.gain > 0 and first.ci_low < first.gain < first.ci_high and first.prob_positive == 1.0


# Simulated probes: a task's success probability from a five-point mixture, G = 8 binary rewards.
P_VALUES = np.array([0.0, 0.2, 0.5, 0.8, 1.0])
P_WEIGHTS = np.array([0.3, 0.15, 0.15, 0.15, 0.25])


def _true_gain() -> float:
    """E[w v] / E[w] / E[v] - 1 by exact enumeration over p and the binomial count."""
    k = np.arange(G + 1)
    prob = (P_WEIGHTS[:, None] * scipy_stats.binom.pmf(k[None, :], G, P_VALUES[:, None])).sum(
        axis=0
    )  # (G+1,)
    success = k / G
    var, w = success * (1 - success), _edge(success)
    return float((prob * w * var).sum() / (prob * w).sum() / (prob * var).sum() - 1)


def test_signal_gain_interval_covers_the_true_gain_about_95_percent():
    truth = _true_gain()
    datasets, covered = 200, 0
    for d in range(datasets):
        rng = np.random.default_rng(1000 + d)
        log = _log(rng.binomial(G, rng.choice(P_VALUES, size=128, p=P_WEIGHTS)))
        result = signal_gain(log, _edge(log["n_correct"].to_numpy() / G), n_resamples=500, seed=d)
        covered += result.ci_low <= truth <= result.ci_high
    low, high = scipy_stats.binom.ppf([0.0005, 0.9995], datasets, 0.95)  # 99.9% band for a 95% interval
    assert low <= covered <= high, f"{covered} of {datasets} intervals cover the true gain {truth:.3f}"


@pytest.mark.parametrize(
    ("weights", "message"),
    [(np.ones(3), "one per row"), (-np.ones(4), "non-negative"), (np.zeros(4), "not all zero")],
)
def test_signal_gain_errors(weights, message):
    with pytest.raises(ValueError, match=message):
        signal_gain(_log([0, 4, 4, 8]), weights)
    with pytest.raises(ValueError, match="nonzero reward variance"):
        signal_gain(_log([0, 8]), np.ones(2))


# ---------------------------------------------------------------------------------------------------
# Figure 6
# ---------------------------------------------------------------------------------------------------


def test_training_phase_thirds_and_the_reports_bounds():
    steps = np.array([0, 19, 20, 33, 34, 49, 50, 66, 67, 99])
    assert training_phase(steps, [100 / 3, 200 / 3]).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert training_phase(steps, [20, 50]).tolist() == [0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    with pytest.raises(ValueError, match="increasing"):
        training_phase(steps, [50, 20])


def _moving_edge_log() -> pd.DataFrame:
    """Probes every 10 steps of 0..89 on a 3-number task and a 4-number task, plus confusing batch rows.

    Early (0-20) the 3-number task is at the edge and the 4-number one impossible; middle (30-50) the
    3-number one is mastered and the 4-number one hard; late (60-80) the 4-number one is at the edge.
    """
    fails_4 = {0: 8, 10: 8, 20: 8, 30: 7, 40: 7, 50: 7, 60: 4, 70: 4, 80: 4}
    parts = []
    for step, fail_4 in fails_4.items():
        fail_3 = 4 if step < 30 else 0
        correct = np.arange(G)[None, :] >= np.array([fail_3, fail_4])[:, None]  # (2, G)
        probe = observation_rows(step, "probe", [0, 1], correct.astype(float), correct)
        batch = observation_rows(step + 5, "batch", [1], np.ones((1, G)), np.ones((1, G), dtype=bool))
        parts += [probe.assign(num_count=[3, 4]), batch.assign(num_count=[4])]
    return pd.concat(parts, ignore_index=True)


def test_edge_profile_shows_the_edge_moving_to_four_numbers():
    log = _moving_edge_log()
    log["four"] = log["num_count"] == 4
    table = edge_profile(log, ["num_count", "four"], phase_bounds=(25, 55))
    assert table["name"].tolist() == ["early", "mid", "late"]
    assert table[["first_step", "last_step", "rows"]].values.tolist() == [
        [0, 20, 6],
        [30, 50, 6],
        [60, 80, 6],
    ]
    assert table["mean_success"].tolist() == pytest.approx([0.25, 9 / 16, 0.75])
    assert table["mastered_share"].tolist() == [0.0, 0.5, 0.5]
    assert table["edge_rows"].tolist() == [3, 0, 3]
    assert table["edge_mean_num_count"].iloc[[0, 2]].tolist() == [3.0, 4.0]
    assert math.isnan(table["edge_mean_num_count"].iloc[1])
    assert table["edge_mean_four"].iloc[[0, 2]].tolist() == [0.0, 1.0]


def test_the_default_phases_are_the_reports_shares_of_the_run():
    """Steps 0..59: the report's phases (0-20, 20-50, 50-100 of 100 steps) start at steps 12 and 30."""
    log = _moving_edge_log()
    log = log.assign(step=(log["step"] * 59 / 85).round().astype(int))  # steps 0..59
    table = edge_profile(log, ["num_count"])
    steps = sorted(log.loc[log["source"] == "probe", "step"].unique())
    early = [s for s in steps if s < 12]
    mid = [s for s in steps if 12 <= s < 30]
    late = [s for s in steps if s >= 30]
    assert table[["first_step", "last_step"]].values.tolist() == [
        [early[0], early[-1]], [mid[0], mid[-1]], [late[0], late[-1]]
    ]  # fmt: skip
    assert (early[-1], mid[0], mid[-1], late[0]) == (7, 14, 28, 35)


def test_success_by_phase_marks_the_bin_nearest_one_half():
    table = success_by_phase(_moving_edge_log(), "num_count", phase_bounds=(30, 60))
    assert table[["name", "value", "success"]].values.tolist() == [
        ["early", 3, 0.5], ["early", 4, 0.0], ["mid", 3, 1.0], ["mid", 4, 0.125],
        ["late", 3, 1.0], ["late", 4, 0.5],
    ]  # fmt: skip
    assert table.loc[table["nearest_edge"], "value"].tolist() == [3, 4, 4]


# ---------------------------------------------------------------------------------------------------
# Table 7
# ---------------------------------------------------------------------------------------------------


def test_welch_gap_equals_scipy():
    rng = np.random.default_rng(0)
    values = rng.uniform(size=(30, 40))  # (T, n)
    low = rng.uniform(size=(30, 40)) < 0.5
    gap, p = welch_gap(values, low, ~low)
    for t in range(30):
        a, b = values[t, ~low[t]], values[t, low[t]]
        assert gap[t] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
        assert p[t] == pytest.approx(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


def test_welch_gap_degenerate_groups():
    values = np.array(
        [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.5, 0.5], [1.0, 0.0, 0.0, 0.0]]
    )
    low = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0]], dtype=bool)
    high = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0]], dtype=bool)
    gap, p = welch_gap(values, low, high)
    assert gap[:3].tolist() == [1.0, 0.0, 0.5] and math.isnan(gap[3])
    assert p[:2].tolist() == [0.0, 1.0]  # constant groups: apart, then equal
    assert math.isnan(p[2]) and math.isnan(p[3])  # one high row; no low row


def _gap_log(rows: int = 4000, gap: float = 0.1, seed: int = 0) -> pd.DataFrame:
    """Half 3-number rows failing with probability 0.45, half 4-number rows with 0.45 + gap."""
    rng = np.random.default_rng(seed)
    num_count = np.repeat([3, 4], rows // 2)
    return _log(rng.binomial(G, np.where(num_count == 4, 0.45 + gap, 0.45)), num_count=num_count)


def test_sample_complexity_recovery_rises_with_the_budget():
    # A 0.1 gap, per-row sd ~0.18: Welch's power is ~0.2 at 20 rows, ~0.7 at 80, ~1 at 640.
    table = sample_complexity(_gap_log(), budgets=(20, 40, 80, 160, 640), n_trials=60, seed=0)
    recovered = table["p_recovered"].to_numpy()
    assert np.all(np.diff(recovered) >= 0) and np.all(np.diff(recovered[:4]) > 0), recovered
    assert recovered[0] < 0.5 and recovered[-1] >= 0.95
    assert np.all(table["p_correct_sign"] >= table["p_recovered"])
    assert table["sd_gap"].is_monotonic_decreasing


def test_sample_complexity_full_budget_recovers_the_gap_exactly():
    log = _log([6, 6, 2, 3, 1, 2], num_count=[4, 4, 3, 3, 3, 3])
    table = sample_complexity(log, budgets=(6,), n_trials=5, pool_size=600)
    row = table.iloc[0]
    assert row["true_gap"] == pytest.approx(0.75 - 0.25)
    assert row["mean_gap"] == pytest.approx(0.5) and row["sd_gap"] == pytest.approx(0.0, abs=1e-12)
    assert (row["correct_sign"], row["trials"], row["undefined"], row["pool_share"]) == (5, 5, 0, 0.01)


def test_sample_complexity_trials_depend_on_budget_and_seed_only():
    log = _gap_log(rows=400)
    alone = sample_complexity(log, budgets=(50,), n_trials=10, seed=3)
    in_grid = sample_complexity(log, budgets=(20, 50, 100), n_trials=10, seed=3)
    pd.testing.assert_frame_equal(alone, in_grid.iloc[[1]].reset_index(drop=True))
    assert not alone.equals(sample_complexity(log, budgets=(50,), n_trials=10, seed=4))


def test_sample_complexity_errors():
    with pytest.raises(ValueError, match="budget 7 must lie"):
        sample_complexity(_log([1, 1, 1, 2, 2, 2], num_count=[3, 3, 3, 4, 4, 4]), budgets=(7,))
    with pytest.raises(ValueError, match="no gap"):
        sample_complexity(_log([1] * 6, num_count=[3, 3, 3, 4, 4, 4]), budgets=(6,))
    with pytest.raises(ValueError, match="== 3 and == 4"):
        sample_complexity(_log([1] * 2, num_count=[3, 3]), budgets=(2,))


# ---------------------------------------------------------------------------------------------------
# The training diet
# ---------------------------------------------------------------------------------------------------


def _diet_log(indices) -> pd.DataFrame:
    """Batch rows drawing ``indices`` plus probe rows on hard tasks only (which the diet ignores)."""
    batch = _log(np.zeros(len(indices), dtype=int)).assign(task_index=indices)
    probe = _log([0, 0, 0, 0]).assign(source="probe", task_index=[0, 1, 2, 3])
    return pd.concat([batch, probe], ignore_index=True)


def test_training_diet_labels_constructed_policies():
    hard = np.arange(10) < 5  # a pool of 10 tasks, half hard
    logs = {
        "edge": _diet_log([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),  # 50% hard
        "corr_ff": _diet_log([0, 1, 2, 3, 4, 0, 1, 2, 5, 6]),  # 80%
        "kernel": _diet_log([0, 5, 6, 7, 8, 9, 5, 6, 7, 8]),  # 10%: repeats count
        "at_tolerance": _diet_log([0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 5, 6, 7, 8, 9, 5, 6, 7, 8]),  # 55%
    }
    table = training_diet(logs, hard, tolerance=0.05).set_index("policy")
    assert table["hard_share"].tolist() == pytest.approx([0.5, 0.8, 0.1, 0.55])
    assert table["label"].tolist() == ["preserve", "amplify", "suppress", "preserve"]
    assert table["pool_share"].unique().tolist() == [0.5]
    assert table.loc["edge", "rows"] == 10
    assert (table.loc["edge", "ci_low"], table.loc["edge", "ci_high"]) == pytest.approx(
        (0.2366, 0.7634), abs=1e-4
    )


def test_training_diet_errors():
    with pytest.raises(ValueError, match="outside the pool"):
        training_diet({"p": _diet_log([0, 12])}, np.ones(10, dtype=bool))
    with pytest.raises(ValueError, match=r"training_diet\['p'\]: .*lacks column\(s\) \['task_index'\]"):
        training_diet({"p": _diet_log([0]).drop(columns="task_index")}, np.ones(10, dtype=bool))


# ---------------------------------------------------------------------------------------------------
# A malformed log names what it lacks
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "dropped"),
    [
        (lambda log: failure_by_bin(log, ["num_count"]), "n_correct"),
        (lambda log: failure_by_bin(log, ["shortest_operand_count"]), "shortest_operand_count"),
        (variance_by_band, "reward_var"),
        (lambda log: signal_gain(log, np.ones(len(log))), "reward_var"),
        (edge_profile, "step"),
        (lambda log: success_by_phase(log, "num_count"), "source"),
        (lambda log: sample_complexity(log, budgets=(2,)), "num_count"),
        (lambda log: with_features(log, pd.DataFrame({"num_count": [3]})), "task_index"),
    ],
)
def test_a_malformed_log_names_the_missing_column(call, dropped):
    log = _log([0, 4, 8, 2], num_count=[3, 3, 4, 4], shortest_operand_count=[2, 3, 3, 4])
    with pytest.raises(ValueError, match=rf"lacks column\(s\) \['{dropped}'\]"):
        call(log.drop(columns=dropped))
    with pytest.raises(ValueError, match="empty"):
        variance_by_band(log.head(0))


def test_sample_complexity_without_budgets_keeps_its_columns():
    log = pd.DataFrame({"n": [4, 4], "n_correct": [3, 1], "num_count": [3, 4]})
    table = sample_complexity(log, budgets=())
    assert table.empty and tuple(table.columns) == COMPLEXITY_COLUMNS


# ---------------------------------------------------------------------------------------------------
# Section 5.2: Spearman correlations, pairwise interactions, the kernel's 4-number diet
# ---------------------------------------------------------------------------------------------------


def test_failure_spearman_worked_example():
    # fail rates 0, .25, .5, 1 against num_count 3, 3, 4, 4: ranks (1.5, 1.5, 3.5, 3.5) vs (1, 2, 3, 4),
    # centred (-1, -1, 1, 1) and (-1.5, -.5, .5, 1.5): rho = 1 / sqrt(1.25).
    log = _log([0, 2, 4, 8], num_count=[3, 3, 4, 4], depth=[2, 2, 2, 2])
    table = failure_spearman(log, ["num_count", "depth"], by=None)
    assert list(table.columns) == ["field", "n", "rho", "p_value"]
    assert table["field"].tolist() == ["num_count", "depth"] and table["n"].tolist() == [4, 4]
    assert table["rho"].iloc[0] == pytest.approx(1 / math.sqrt(1.25))
    assert table["p_value"].iloc[0] == pytest.approx(
        scipy_stats.spearmanr([3, 3, 4, 4], [0, 0.25, 0.5, 1]).pvalue
    )
    assert np.isnan(table["rho"].iloc[1]) and np.isnan(table["p_value"].iloc[1])  # a constant field


def test_failure_spearman_per_run_group_equals_the_samplers_spearman():
    rng = np.random.default_rng(0)
    fails = rng.integers(0, 9, size=60)
    field = rng.integers(1, 5, size=60)
    log = _log(fails, f=field, method=["a"] * 30 + ["b"] * 30)
    table = failure_spearman(log, ["f"])
    assert table["method"].tolist() == ["a", "b"]
    for method, rows in (("a", slice(0, 30)), ("b", slice(30, 60))):
        expected = spearman(field[rows].astype(float), fails[rows] / G)
        assert table.set_index("method").loc[method, "rho"] == pytest.approx(expected)


def test_value_range_across_runs():
    table = pd.DataFrame({
        "method": ["a", "b", "c", "a", "b"],
        "field": ["x", "x", "x", "y", "y"],
        "rho": [0.22, 0.31, 0.25, -0.2, np.nan],
    })  # fmt: skip
    ranges = value_range(table, ["field"], "rho")
    assert ranges.to_dict("list") == {
        "field": ["x", "y"], "rho_low": [0.22, -0.2], "rho_high": [0.31, -0.2], "groups": [3, 1],
    }  # fmt: skip


def _cells(counts: dict[tuple[int, int], tuple[int, int]]) -> pd.DataFrame:
    """A log with ``rows`` rows failing ``fails`` of 8 in each cell (a, b) of ``counts``, c constant."""
    fails, a, b = [], [], []
    for (va, vb), (rows, fail) in counts.items():
        fails += [fail] * rows
        a += [va] * rows
        b += [vb] * rows
    return _log(fails, a=a, b=b, c=[1] * len(fails))


def test_pairwise_interactions_worked_example():
    # failure 0 / .5 / .5 / 1 in the four cells: the pair spreads 1.0, each field alone 0.75 - 0.25 = 0.5
    log = _cells({(0, 0): (30, 0), (0, 1): (30, 4), (1, 0): (30, 4), (1, 1): (30, 8)})
    table = pairwise_interactions(log, ["a", "b", "c"], by=None, min_rows=30)
    first = table.iloc[0]
    assert (first["field_a"], first["field_b"], first["cells"]) == ("a", "b", 4)
    assert (first["spread"], first["low_cell"], first["high_cell"]) == pytest.approx((1.0, 0.0, 1.0))
    assert (first["spread_a"], first["spread_b"]) == pytest.approx((0.5, 0.5))
    rest = table.iloc[1:].set_index(["field_a", "field_b"])
    assert rest.loc[("a", "c"), "spread"] == pytest.approx(0.5) and rest.loc[("a", "c"), "cells"] == 2
    assert np.isnan(rest.loc[("a", "c"), "spread_b"])  # c alone has one bin: no spread


def test_pairwise_interactions_leave_out_thin_cells():
    log = _cells({(0, 0): (30, 0), (0, 1): (30, 4), (1, 0): (30, 4), (1, 1): (10, 8)})
    table = pairwise_interactions(log, ["a", "b"], by=None, min_rows=30)
    assert table["cells"].tolist() == [3] and table["spread"].tolist() == pytest.approx([0.5])
    with pytest.raises(ValueError, match="min_rows must be >= 1"):
        pairwise_interactions(log, ["a", "b"], by=None, min_rows=0)


def test_diet_makeup_worked_example():
    within = np.array([False, True, True, True, False, True])  # the 4-number tasks of a pool of 6
    deep = np.array([True, True, False, False, True, True])
    log = _diet_log([0, 1, 1, 2, 5, 4])  # inside: 1, 1, 2, 5 (repeats count); the probe rows are ignored
    table = diet_makeup({"kernel": log}, within, {"deep": deep})
    assert table.to_dict("list") == {"policy": ["pool", "kernel"], "rows": [4, 4], "deep": [0.5, 0.75]}
    with pytest.raises(ValueError, match=r"subset\(s\) \['deep'\] must hold one flag per pool task"):
        diet_makeup({"kernel": log}, within, {"deep": deep[:3]})
    with pytest.raises(ValueError, match="outside the pool of 6"):
        diet_makeup({"kernel": _diet_log([7])}, within, {"deep": deep})


# ---------------------------------------------------------------------------------------------------
# Tables of single numbers
# ---------------------------------------------------------------------------------------------------


def test_gain_table_holds_every_field():
    gain = SignalGain(0.084, 0.143, 0.69, 0.54, 0.89, 1.0, 128, 0.95)
    table = gain_table({"Dynamic edge": gain})
    assert table.to_dict("records") == [{
        "weights": "Dynamic edge", "uniform": 0.084, "weighted": 0.143, "gain": 0.69, "ci_low": 0.54,
        "ci_high": 0.89, "prob_positive": 1.0, "n": 128, "confidence": 0.95,
    }]  # fmt: skip
    with pytest.raises(ValueError, match="no signal gain"):
        gain_table({})


def test_refresh_diagnostics_worked_example():
    steps = pd.DataFrame({
        "method": ["edge"] * 4 + ["uniform"] * 2,
        "seed": [0, 0, 1, 1, 0, 0],
        "step": [0, 1, 0, 1, 0, 1],
        "sampler_ess_frac": [1.0, 0.98, 0.99, 0.96, np.nan, np.nan],
    })  # fmt: skip
    table = refresh_diagnostics(steps, ["sampler_ess_frac"])
    assert table[["method", "steps"]].to_dict("list") == {"method": ["edge"], "steps": [4]}
    row = table.iloc[0]
    assert row["sampler_ess_frac_mean"] == pytest.approx(0.9825)  # every step of every seed
    assert row["sampler_ess_frac_min"] == pytest.approx(0.96)
    assert row["sampler_ess_frac_last"] == pytest.approx(0.97)  # step 1: (0.98 + 0.96) / 2
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['sampler_tv_uni'\]"):
        refresh_diagnostics(steps, ["sampler_tv_uni"])


def test_per_seed_table_on_the_reports_own_control():
    # Report 002's Table 8, uniform control: seeds 54.38 / 48.25 pass@1 give mean 51.31 and s.d. 4.33.
    summaries = pd.DataFrame({
        "method": ["control", "control", "edge"], "seed": [1, 0, 0],
        "pass@1": [0.4825, 0.5438, 0.57], "pass@16": [0.72, 0.72, 0.74],
    })  # fmt: skip
    table = per_seed_table(summaries, ("pass@1", "pass@16"), methods=["control", "edge"])
    assert table["seed"].tolist() == ["0", "1", "mean", "s.d.", "0", "mean", "s.d."]
    control = table[table["method"] == "control"].set_index("seed")
    assert control.loc["mean", "pass@1"] == pytest.approx(0.51315)
    assert control.loc["s.d.", "pass@1"] == pytest.approx(abs(0.5438 - 0.4825) / math.sqrt(2))
    assert round(100 * control.loc["s.d.", "pass@1"], 2) == 4.33 and control.loc["s.d.", "pass@16"] == 0.0
    assert np.isnan(table.iloc[-1]["pass@1"])  # one seed: no s.d.
    with pytest.raises(ValueError, match=r"no summaries for method\(s\) \['kernel'\]"):
        per_seed_table(summaries, ("pass@1",), methods=["kernel"])
