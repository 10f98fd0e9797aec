"""The default interval's coverage of a null, on simulated studies shaped like the committed runs.

The bounds are the study's requirement, not outputs of the code under test: a 95% interval must cover a
null difference in 93-97% of studies, for pass@1, pass@16 and the mean score, at 5 and at 10 training
seeds, with a Monte Carlo standard error of at most 0.01, and detect a true difference equal to its MDE
about 80% of the time.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import special

from countdown_study.study.coverage import (
    StudyShape,
    coverage_table,
    finished_samples,
    fit_shape,
    observed_moments,
    simulate_null,
    task_rates,
)
from countdown_study.study.methods import REPORT_000, REPORT_002, UNIFORM, UNIFORM_REPLACEMENT


def synthetic_samples(p, shift_sd, cell_sd, seeds, n, rng, method="m"):
    """Per-sample rows of one method drawn from a known shape (``coverage``'s model, written out)."""
    rows = []
    logits = special.logit(np.clip(p, 1e-9, 1 - 1e-9))
    for seed in range(seeds):
        probs = special.expit(logits + rng.normal(0, shift_sd) + rng.normal(0, cell_sd, p.shape))
        for task, prob in enumerate(probs):
            correct = rng.random(n) < prob
            rows.append(pd.DataFrame({"method": method, "seed": seed, "task_index": task, "correct": correct,
                                      "reward": np.where(correct, 1.0, 0.1)}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def test_task_rates_and_moments_on_a_worked_example():
    # two tasks, two seeds, 4 samples: task 0 solved 1/4 and 3/4 -> p 0.5; task 1 never -> p 0, q 1
    rows = []
    for seed, c0 in ((0, 1), (1, 3)):
        rows += [
            {"seed": seed, "task_index": 0, "correct": i < c0, "reward": 1.0 if i < c0 else 0.1}
            for i in range(4)
        ]
        rows += [{"seed": seed, "task_index": 1, "correct": False, "reward": 0.1} for _ in range(4)]
    p, q, n = task_rates(pd.DataFrame(rows))
    assert (p.tolist(), q.tolist(), n) == ([0.5, 0.0], [1.0, 1.0], 4)
    per_task, per_mean = observed_moments(pd.DataFrame(rows))
    # task 0: rates 0.25, 0.75 -> var 0.125, binomial 0.1875 / 3 = 0.0625 -> 0.0625; task 1: 0
    assert per_task == pytest.approx((0.0625 + 0.0) / 2)
    # run means 0.125, 0.375 -> var 0.03125; binomial part mean(0.0625, 0, 0.0625, 0) / 2 = 0.015625
    assert per_mean == pytest.approx(0.03125 - 0.015625)


def test_fit_recovers_known_spreads():
    rng = np.random.default_rng(0)
    p = rng.beta(0.6, 0.6, 300)
    samples = pd.concat(
        [synthetic_samples(p, 0.3, 0.8, 8, 16, rng, method=f"m{i}") for i in range(6)], ignore_index=True
    )
    shape = fit_shape(samples, "m0")
    assert shape.shift_sd == pytest.approx(0.3, abs=0.1)
    assert shape.cell_sd == pytest.approx(0.8, abs=0.15)


def test_simulated_null_keeps_floors_and_ceilings():
    shape = StudyShape(p=np.array([0.0, 1.0, 0.5]), q=np.array([1.0, 0.0, 0.5]), shift_sd=0.5, cell_sd=1.0,
                       n_samples=16)  # fmt: skip
    diffs = simulate_null(shape, 200, 5, np.random.default_rng(1))
    tasks = np.random.default_rng(1).integers(0, 3, size=(200, 3))  # the same draw of tasks per study
    for metric in ("pass@1", "pass@16"):
        assert np.all(diffs[metric][tasks != 2] == 0)  # a floor or ceiling task never differs
        assert np.any(diffs[metric][tasks == 2] != 0)


@pytest.fixture(scope="module")
def committed_shape():
    methods = [UNIFORM, UNIFORM_REPLACEMENT, *REPORT_000, *REPORT_002]
    return fit_shape(finished_samples(methods, "full"), UNIFORM.name)


def test_the_committed_runs_have_floors_and_ceilings(committed_shape):
    assert committed_shape.p.shape == (500,)
    assert 0.2 < committed_shape.floor_share < 0.35 and 0.12 < committed_shape.ceiling_share < 0.25
    assert committed_shape.shift_sd > 0 and committed_shape.cell_sd > 0


@pytest.mark.slow
def test_default_interval_covers_a_null_95_percent_at_5_and_10_seeds(committed_shape):
    table = coverage_table(committed_shape, seed_counts=(5, 10), n_studies=2000, seed=0)
    assert set(zip(table["metric"], table["n_seeds"], strict=True)) == {
        (m, s) for m in ("pass@1", "pass@16", "mean_score") for s in (5, 10)
    }
    for row in table.itertuples(index=False):
        assert row.coverage_se <= 0.01
        assert 0.93 <= row.coverage <= 0.97, row
        assert 0.7 <= row.power_at_mde <= 0.9, row
