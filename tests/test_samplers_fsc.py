"""Report 002's Feature-Space Curriculum on synthetic observations (no model, no rollouts)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from synthetic import grades_of

from countdown_study.countdown.generate import generate_tasks
from countdown_study.samplers import SAMPLERS, make_sampler
from countdown_study.samplers.feature_space import (
    DV_FIELDS,
    FSC_PRESETS,
    FeatureSpaceSampler,
    FSCConfig,
    fsc_deviations,
)
from countdown_study.samplers.fsc_policies import (
    batch_overlap,
    bin_codes,
    bin_failure_rates,
    compare_distributions,
    concentration,
    correlation_weights,
    edge_score,
    effective_sample_size,
    feature_failure_scores,
    fuse_scores,
    group_metadata,
    jensen_shannon,
    kernel_scores,
    normalized_entropy,
    sampling_probabilities,
    spearman,
    split_counts,
    top_mass,
    total_variation,
)
from countdown_study.seeding import SamplerStream, derive_rng

POOL = generate_tasks(200, seed=0)
FSC_NAMES = sorted(FSC_PRESETS)


def rewards_for(indices, group_size=8):
    """A deterministic reward stream per task: (index mod 9) correct samples of 8, the rest format-scored."""
    return np.array([[1.0] * (i % 9) + [0.1] * (group_size - i % 9) for i in indices])


def run(sampler, steps, batch_size=8):
    """Probe, draw and observe ``steps``; returns each step's (indices, arms, probes)."""
    out = []
    for step in steps:
        probes = sampler.probe_requests(step)
        if probes:
            sampler.observe_probe(step, probes, grades_of(rewards_for(probes)))
        batch = sampler.next_batch(step, batch_size)
        sampler.observe(step, batch, grades_of(rewards_for(batch.indices)), np.zeros((batch_size, 8)))
        out.append((batch.indices, batch.arms, tuple(probes)))
    return out


def one_field_pool(values):
    """A pool whose DV is one field (``num_count``) with the given values (tasks are placeholders)."""
    features = pd.DataFrame({"num_count": np.asarray(values, dtype=float)})
    return POOL[: len(values)], features


# ---------------------------------------------------------------------------------------------------
# Metadata and the edge (Sections 3.3-3.4)
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("success", "score"),
    [
        (0.5, 1.0),  # the edge target: the peak
        (0.25, math.exp(-0.5)),  # one width below
        (0.75, math.exp(-0.5)),  # one width above
        (0.0, math.exp(-2.0)),  # never solved: two widths away
    ],
)
def test_edge_score_values(success, score):
    assert edge_score(np.array([success]))[0] == pytest.approx(score)


def test_group_metadata_reward_mean_fail_rate_and_unbiased_pass_at_k():
    rewards = np.array([[1.0, 0.1, 0.1, 0.0], [1.0, 1.0, 1.0, 1.0], [0.1, 0.1, 0.0, 0.0]])
    meta = group_metadata(rewards, rewards >= 1.0, k=2)
    assert meta["reward_mean"].tolist() == pytest.approx([0.3, 1.0, 0.05])
    assert meta["fail_rate"].tolist() == [0.75, 0.0, 1.0]  # the 0.1 format score is a failure
    assert meta["pass_at_k"].tolist() == pytest.approx([1 - 3 / 6, 1.0, 0.0])  # 1 - C(3,2)/C(4,2)
    assert group_metadata(rewards, rewards >= 1.0, k=8)["pass_at_k"].tolist() == [1.0, 1.0, 0.0]  # k -> G


def test_unobserved_tasks_carry_the_neutral_prior_and_ema_smooths():
    sampler = make_sampler("fsc_dynamic_edge", POOL, seed=0)
    assert (sampler.fail_rates() == 0.5).all() and not sampler.observed.any()
    assert np.allclose(sampler.scores("edge"), 1.0)  # the prior sits at the edge target
    assert np.allclose(sampler.weights(0), 1 / len(POOL))
    sampler.observe_probe(0, [3], grades_of([[1.0, 1.0, 0.1, 0.1]]))  # first: replaces the prior
    assert sampler.metadata["fail_rate"][3] == 0.5 and sampler.observed.sum() == 1
    sampler.observe_probe(0, [3], grades_of([[1.0, 1.0, 1.0, 1.0]]))
    assert sampler.metadata["fail_rate"][3] == pytest.approx(0.5 * 0.5 + 0.5 * 0.0)
    assert sampler.metadata["reward_mean"][3] == pytest.approx(0.5 * 0.55 + 0.5 * 1.0)


# ---------------------------------------------------------------------------------------------------
# feature_failure (eq. 4) and correlation weights (Section 3.8)
# ---------------------------------------------------------------------------------------------------


def test_bin_codes_by_value_or_by_quantile():
    assert bin_codes(np.array([4, 3, 3, 4, 4]), 5).tolist() == [1, 0, 0, 1, 1]
    codes = bin_codes(np.arange(100.0), 4)  # 100 distinct values: 4 equal-count bins
    assert np.bincount(codes).tolist() == [25, 25, 25, 25]
    tied = bin_codes(np.array([0.0] * 90 + list(range(1, 11))), 4)  # tied quantiles: no empty bin
    assert np.bincount(tied).min() > 0


def test_feature_failure_up_weights_the_hard_bin():
    codes = np.array([[0]] * 20 + [[1]] * 20 + [[0], [1]])  # 40 observed, then one unobserved per bin
    fail = np.array([0.2] * 20 + [0.8] * 20 + [np.nan, np.nan])
    observed = ~np.isnan(fail)
    scores = feature_failure_scores(codes, observed, fail, np.ones(1), 10, 5.0, 0.5)
    easy, hard = (20 * 0.2 + 5 * 0.5) / 25, (20 * 0.8 + 5 * 0.5) / 25  # 0.26, 0.74
    assert scores.tolist() == pytest.approx([easy] * 20 + [hard] * 20 + [easy, hard])
    probabilities = sampling_probabilities(scores, 0.05)
    assert probabilities[-1] / probabilities[-2] == pytest.approx((hard + 0.05) / (easy + 0.05))


def test_sparse_bin_falls_back_to_the_prior():
    rates = bin_failure_rates(np.array([0] * 12 + [1] * 3), np.array([1.0] * 15), 3, 10, 0.0, 0.5)
    assert rates.tolist() == [1.0, 0.5, 0.5]  # 12 observations: measured; 3 and 0: the prior


def test_feature_failure_averages_over_fields_with_weights():
    codes = np.array([[0, 0], [1, 0], [0, 1], [1, 1]] * 10)  # two crossed binary fields
    fail = np.tile([0.0, 1.0, 0.0, 1.0], 10)  # field 0 decides failure, field 1 is noise
    observed = np.ones(40, dtype=bool)
    plain = feature_failure_scores(codes, observed, fail, np.ones(2), 1, 0.0, 0.5)
    assert plain[:4].tolist() == pytest.approx([0.25, 0.75, 0.25, 0.75])  # (g_0 + g_1) / 2, g_1 = 0.5
    weights = correlation_weights(codes.astype(float), fail)
    assert weights.tolist() == pytest.approx([1.0, 0.0])  # |Spearman|: signal 1, noise 0
    weighted = feature_failure_scores(codes, observed, fail, weights, 1, 0.0, 0.5)
    assert weighted[:4].tolist() == pytest.approx([0.0, 1.0, 0.0, 1.0])


def test_correlation_weighting_in_the_sampler_emphasises_the_signal_field():
    pool = POOL[:40]
    features = pd.DataFrame({"num_count": [3.0, 4.0] * 20, "target_log10": np.linspace(1, 2, 40)})
    sampler = FeatureSpaceSampler(
        pool, config=FSCConfig(dv_fields=("num_count", "target_log10"), correlation_weights=True),
        features=features,
    )  # fmt: skip
    assert sampler.field_weights().tolist() == [1.0, 1.0]  # nothing observed yet: equal
    rewards = np.array([[1.0] * 8 if i % 2 == 0 else [0.1] * 8 for i in range(40)])  # 4 numbers fail
    sampler.observe_probe(0, list(range(40)), grades_of(rewards))
    weights = sampler.field_weights()
    assert weights.sum() == pytest.approx(2.0) and weights[0] > 1.8  # rho 1 vs 0.04


# ---------------------------------------------------------------------------------------------------
# edge_dv_kernel (eq. 5) and its density correction
# ---------------------------------------------------------------------------------------------------


def test_density_correction_divides_by_kernel_mass():
    anchors = np.array([[0.0]] * 10 + [[5.0]])  # a dense cluster at 0, one anchor at 5
    values = np.array([0.5] * 10 + [1.0])  # the lone anchor is the more difficult
    points = np.array([[0.0], [5.0]])
    plain = kernel_scores(points, anchors, values, 1.0)
    corrected = kernel_scores(points, anchors, values, 1.0, density_correction=True)
    dense_sum = 10 * 0.5 + math.exp(-12.5)  # sum_j K(0, a_j) v_j
    sparse_sum = 1.0 + 10 * 0.5 * math.exp(-12.5)
    assert plain.tolist() == pytest.approx([1.0, sparse_sum / dense_sum])  # favours the dense region
    assert corrected[1] > corrected[0]  # follows anchor difficulty instead
    assert corrected.tolist() == pytest.approx(
        [dense_sum / (10 + math.exp(-12.5)), sparse_sum / (1 + 10 * math.exp(-12.5))]
    )


def test_kernel_is_a_product_over_weighted_fields():
    points, anchors = np.array([[1.0, 2.0], [0.0, 0.0]]), np.array([[0.0, 0.0], [1.0, 2.0]])
    plain = kernel_scores(points, anchors, np.array([1.0, 0.0]), 2.0)  # the maximum is at (0, 0): 1
    assert plain.tolist() == pytest.approx([math.exp(-1 / 8) * math.exp(-4 / 8), 1.0])  # prod_f K_f
    average = kernel_scores(points[:1], anchors[:1], np.array([0.3]), 2.0, density_correction=True)
    assert average[0] == pytest.approx(0.3)  # one anchor: its own value, whatever the distance
    weighted = kernel_scores(np.array([[0.0, 5.0], [1.0, 0.0]]), anchors[:1], np.ones(1), 1.0,
                             field_weights=np.array([1.0, 0.0]))  # fmt: skip
    assert weighted.tolist() == pytest.approx([1.0, math.exp(-0.5)])  # a zero weight ignores field 2


def test_sparse_kernel_anchors_fall_back_to_the_prior():
    sampler = make_sampler("fsc_kernel_density", POOL, seed=0, kernel_min_anchors=8)
    sampler.observe_probe(0, list(range(7)), grades_of(rewards_for(range(7))))
    assert np.allclose(sampler.scores("edge_dv_kernel"), 1.0)  # 7 anchors: flat, the prior's edge
    sampler.observe_probe(0, [7], grades_of(rewards_for([7])))
    assert not np.allclose(sampler.scores("edge_dv_kernel"), 1.0)


def test_kernel_prefers_regions_near_difficult_anchors_in_the_sampler():
    pool, features = one_field_pool([3.0] * 10 + [4.0] * 10)
    config = FSCConfig(policy="edge_dv_kernel", dv_fields=("num_count",), kernel_min_anchors=2,
                       kernel_density_correction=True)  # fmt: skip
    sampler = FeatureSpaceSampler(pool, config=config, features=features)
    rewards = np.array([[1.0] * 8, [1.0] * 4 + [0.1] * 4])  # task 0 solved, task 10 at the edge
    sampler.observe_probe(0, [0, 10], grades_of(rewards))
    scores = sampler.scores("edge_dv_kernel")
    assert scores[10:].min() > scores[:10].max()  # 4-number tasks sit near the edge anchor


# ---------------------------------------------------------------------------------------------------
# Fusions (Section 3.8) and sampling (Section 3.1)
# ---------------------------------------------------------------------------------------------------

PRIMARY, SECONDARY = np.array([1.0, 0.5, 0.0]), np.array([0.2, 0.4, 0.8])
OBSERVED = np.array([True, False, True])


@pytest.mark.parametrize(
    ("fusion", "options", "expected"),
    [
        ("none", {}, [1.0, 0.5, 0.0]),  # the primary alone
        ("multiply", {}, [0.2, 0.2, 0.0]),  # edge x ff
        ("weighted", {"weight": 0.25}, [0.4, 0.425, 0.6]),  # 0.25 primary + 0.75 secondary
        ("gated", {"observed": OBSERVED}, [1.0, 0.4, 0.0]),  # primary where observed
        ("schedule", {"late": False}, [1.0, 0.5, 0.0]),  # before the switch
        ("schedule", {"late": True}, [0.2, 0.4, 0.8]),  # after it
    ],
)
def test_fusions_combine_as_the_report_says(fusion, options, expected):
    assert fuse_scores(fusion, PRIMARY, SECONDARY, **options).tolist() == pytest.approx(expected)


def test_split_fusion_has_no_fused_score_and_splits_70_30():
    with pytest.raises(ValueError, match="split"):
        fuse_scores("split", PRIMARY, SECONDARY)
    assert split_counts(128, 0.7) == (90, 38) and split_counts(10, 0.7) == (7, 3)
    batch = make_sampler("fsc_split", POOL, seed=1).next_batch(0, 128)
    assert batch.arms == ("edge",) * 90 + ("feature_failure",) * 38


def test_sampling_probabilities_clip_and_add_epsilon():
    p = sampling_probabilities(np.array([-1.0, 0.0, 0.95]), 0.05)
    assert p.tolist() == pytest.approx([0.05 / 1.1, 0.05 / 1.1, 1.0 / 1.1])


def test_schedule_switches_at_half_the_run():
    assert FSCConfig(fusion="schedule", total_steps=100).switch_step == 50
    sampler = make_sampler("fsc_schedule", POOL, seed=0, total_steps=10)
    arms = [set(sampler.next_batch(step, 4).arms) for step in range(10)]
    assert arms == [{"edge"}] * 5 + [{"feature_failure"}] * 5
    assert sampler.stats()["observed"] == 0.0


def test_gated_fusion_scores_observed_by_edge_and_the_rest_by_the_dv():
    sampler = make_sampler("fsc_gated", POOL, seed=0)
    sampler.observe_probe(0, list(range(100)), grades_of(rewards_for(range(100))))
    batch = sampler.next_batch(0, 64)
    observed = sampler.observed
    labels = ["edge" if observed[i] else "feature_failure" for i in batch.indices]
    assert list(batch.arms) == labels and set(labels) == {"edge", "feature_failure"}
    fused = fuse_scores("gated", sampler.scores("edge"), sampler.scores("feature_failure"), observed=observed)
    assert np.allclose(sampler.weights(0), sampling_probabilities(fused, 0.05))


# ---------------------------------------------------------------------------------------------------
# Modes and probes (Sections 3.6 and 4)
# ---------------------------------------------------------------------------------------------------


def test_static_mode_is_uniform_with_replacement():
    sampler = make_sampler("fsc_static", POOL, seed=3)
    assert sampler.probe_requests(0) == []
    sampler.observe(0, sampler.next_batch(0, 8), grades_of(np.zeros((8, 4))), np.zeros((8, 4)))
    assert not sampler.observed.any() and np.array_equal(sampler.weights(1), np.full(200, 1 / 200))
    draws = np.concatenate([sampler.next_batch(step, 200).indices for step in range(50)])  # 10,000 draws
    counts = np.bincount(draws, minlength=200)
    chi2 = ((counts - 50.0) ** 2 / 50.0).sum()  # 199 dof: mean 199, sd about 20
    assert 120 < chi2 < 290 and len(set(sampler.next_batch(0, 200).indices)) < 200  # with replacement


@pytest.mark.parametrize(
    ("name", "options", "probe_steps"),
    [
        ("fsc_static", {}, []),
        ("fsc_once_edge", {}, [0]),
        ("fsc_dynamic_edge", {"total_steps": 20}, [0, 2, 4, 6, 8, 10]),  # a tenth of 20 steps
        ("fsc_dynamic_edge", {"total_steps": 100}, [0, 10]),  # the report's interval
        ("fsc_dynamic_edge", {"probe_every": 3}, [0, 3, 6, 9]),
    ],
)
def test_probe_requests_at_the_right_steps_with_the_right_count(name, options, probe_steps):
    sampler = make_sampler(name, POOL, seed=2, probe_size=16, **options)
    requests = {step: sampler.probe_requests(step) for step in range(12)}
    assert [step for step, probes in requests.items() if probes] == probe_steps
    for step in probe_steps:
        assert len(requests[step]) == len(set(requests[step])) == 16  # distinct tasks
        assert (
            requests[step] == derive_rng(2, step, SamplerStream.PROBE).choice(200, 16, replace=False).tolist()
        )
    assert len(make_sampler("fsc_once_edge", POOL, seed=2).probe_requests(0)) == 128  # the report's size
    assert len(make_sampler("fsc_once_edge", POOL[:50], seed=2).probe_requests(0)) == 50  # the whole pool


def test_dynamic_mode_learns_from_batches_and_static_once_freezes():
    dynamic = make_sampler("fsc_dynamic_edge", POOL, seed=0)
    frozen = make_sampler("fsc_once_edge", POOL, seed=0)
    run(dynamic, range(3))
    run(frozen, range(3))
    assert dynamic.observed.sum() > 128 and dynamic.stats()["probed"] == 128
    assert frozen.observed.sum() == 128  # the step-0 probe only (128 of 200 tasks)
    before = frozen.weights(3).copy()
    run(frozen, range(3, 6))
    assert np.array_equal(frozen.weights(6), before)
    run(dynamic, [10])  # the default interval: 10 steps
    assert dynamic.stats()["probes"] == 128 and dynamic.stats()["probed"] == 256
    run(dynamic, [11])
    assert dynamic.stats()["probes"] == 0


# ---------------------------------------------------------------------------------------------------
# Diagnostics (Section 4, App. D)
# ---------------------------------------------------------------------------------------------------


def test_diagnostics_on_worked_examples():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    assert total_variation(p, q) == pytest.approx(0.5)
    assert total_variation([1, 1], [2, 2]) == 0.0  # normalised first
    assert jensen_shannon([1, 0], [0, 1]) == pytest.approx(1.0)  # disjoint: one bit
    assert jensen_shannon(p, q) == pytest.approx(0.5)  # half the mass disjoint
    uniform = np.ones(10)
    assert effective_sample_size(uniform) == pytest.approx(10.0)
    assert normalized_entropy(uniform) == pytest.approx(1.0)
    assert effective_sample_size([1, 0, 0]) == 1.0 and normalized_entropy([1, 0, 0]) == 0.0
    assert top_mass([0.7, 0.1, 0.1, 0.1], 0.01) == pytest.approx(0.7)  # ceil(1% of 4) = 1 task
    assert top_mass(np.arange(1.0, 21.0), 0.10) == pytest.approx((20 + 19) / 210)
    assert spearman([1, 2, 3, 4], [10, 20, 25, 100]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 2]) == pytest.approx(-math.sqrt(0.75))  # ties: average ranks
    assert math.isnan(spearman([1, 1], [1, 2]))  # a constant side has no ranking
    assert batch_overlap([1, 2, 3, 3], [2, 3, 4]) == pytest.approx(0.5)  # {2, 3} of {1, 2, 3, 4}
    assert concentration(uniform) == pytest.approx(
        {"entropy": 1.0, "ess": 10.0, "ess_frac": 1.0, "top1": 0.1, "top5": 0.1, "top10": 0.1}
    )
    assert compare_distributions(p, p) == pytest.approx({"tv": 0.0, "js": 0.0, "rho": 1.0})


def test_refresh_diagnostics_against_the_three_counterfactuals():
    sampler = make_sampler("fsc_dynamic_edge", POOL, seed=0)
    run(sampler, range(2))
    stats = sampler.stats()
    assert stats["tv_edge"] == 0.0 and stats["rho_edge"] == pytest.approx(1.0)  # active is edge-only
    assert 0 < stats["tv_uni"] < 1 and 0 < stats["ess_frac"] < 1 and "rho_uni" not in stats  # flat: no rank
    assert {"tv_ff", "js_ff", "overlap_ff", "overlap_uni", "entropy", "top1", "top5", "top10"} <= set(stats)
    found = sampler.refresh_diagnostics(2, [0, 1])
    assert found["tv_uni"] == pytest.approx(total_variation(sampler.weights(2), np.ones(200)))


# ---------------------------------------------------------------------------------------------------
# Configuration, registry, resume
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mode": "frozen"}, "mode"),
        ({"policy": "loss"}, "policy"),
        ({"fusion": "max"}, "fusion"),
        ({"edge_width": 0.0}, "edge_width"),
        ({"split_fraction": 1.5}, "split_fraction"),
        ({"probe_size": 0}, "probe_size"),
        ({"ema_decay": 1.0}, "ema_decay"),
        ({"kernel_bandwidth": -1.0}, "kernel_bandwidth"),
        ({"dv_fields": ("solution",)}, "dv_fields"),
    ],
)
def test_config_validation_names_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        FSCConfig(**changes)


def test_schedule_needs_total_steps_and_features_must_match_the_pool():
    with pytest.raises(ValueError, match="total_steps"):
        make_sampler("fsc_schedule", POOL)
    with pytest.raises(ValueError, match="features has 3 rows"):
        make_sampler("fsc_static", POOL, features=pd.DataFrame({f: [0, 1, 2] for f in DV_FIELDS}))


def test_deviations_are_a_table_of_config_fields():
    rows = fsc_deviations()
    assert all(len(row) == 5 for row in rows) and len({row.what for row in rows}) == len(rows)
    assert {row.field for row in rows if row.field} <= set(FSCConfig.__dataclass_fields__)


@pytest.mark.parametrize("name", FSC_NAMES)
def test_every_fsc_sampler_builds_draws_and_logs(name):
    assert name in SAMPLERS
    sampler = make_sampler(name, POOL, seed=0, total_steps=20, probe_size=16)
    steps = run(sampler, range(4))
    assert all(len(indices) == 8 and all(0 <= i < 200 for i in indices) for indices, _, _ in steps)
    assert json.loads(json.dumps(sampler.stats())) == sampler.stats()


@pytest.mark.parametrize(
    "name", ["fsc_dynamic_edge", "fsc_once_feature_failure", "fsc_kernel", "fsc_split", "fsc_schedule"]
)
def test_resumed_sampler_makes_the_same_draws(name):
    options = {"total_steps": 12, "probe_size": 16}
    uninterrupted = make_sampler(name, POOL, seed=5, **options)
    expected = run(uninterrupted, range(12))
    first = make_sampler(name, POOL, seed=5, **options)
    head = run(first, range(5))
    state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint stores
    resumed = make_sampler(name, POOL, seed=5, **options)
    resumed.load_state_dict(state)
    assert head + run(resumed, range(5, 12)) == expected
    assert resumed.stats() == uninterrupted.stats()
    other = run(make_sampler(name, POOL, seed=6, **options), range(12))
    assert other != expected
