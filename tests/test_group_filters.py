"""Group filters (DAPO's dynamic sampling, OpenRLHF's band-pass): the rules, the refill draws of the
samplers that support them, and a filtered run of the embedded policy."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from countdown_study.countdown import generate_tasks
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import SamplingConfig
from countdown_study.samplers import REFILLABLE, SAMPLERS, make_sampler
from countdown_study.training.group_filters import GroupFilterSpec, band_pass, fill, keep_groups, mixed_groups
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.specs import DataSpec, EvalSpec

POOL = generate_tasks(60, seed=3)


def correct_counts(counts, group_size=8):
    """A (P, G) correctness array with ``counts[p]`` correct completions in row p."""
    return np.array([[g < k for g in range(group_size)] for k in counts])


def test_dynamic_sampling_drops_groups_that_all_agree():
    correct = correct_counts([0, 1, 4, 7, 8])
    assert mixed_groups(correct).tolist() == [False, True, True, True, False]
    assert keep_groups(correct, GroupFilterSpec("dynamic_sampling")).tolist() == [
        False,
        True,
        True,
        True,
        False,
    ]


def test_band_pass_keeps_success_strictly_inside_the_range():
    correct = correct_counts(range(9))  # success 0, 1/8, ..., 1
    kept = band_pass(correct, 0.2, 0.8)
    assert np.flatnonzero(kept).tolist() == [2, 3, 4, 5, 6]  # 0.25 .. 0.75; 0.125 and 0.875 are out
    edges = band_pass(correct, 0.25, 0.75)  # open interval: the edges themselves are dropped
    assert np.flatnonzero(edges).tolist() == [3, 4, 5]
    spec = GroupFilterSpec("band_pass", low=0.25, high=0.75)
    assert keep_groups(correct, spec).tolist() == edges.tolist()


def test_fill_takes_kept_rows_in_order_until_the_batch_is_full():
    keep = np.array([True, False, True, True, False, True])
    assert fill(0, keep, 8).tolist() == [0, 2, 3, 5]
    assert fill(6, keep, 8).tolist() == [0, 2]  # two places left
    assert fill(8, keep, 8).tolist() == []


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"name": "filter_groups"}, "unknown group filter 'filter_groups'"),
        ({"low": 0.8, "high": 0.2}, "low=0.8, high=0.2"),
        ({"max_rounds": 0}, "max_rounds must be at least 1"),
    ],
)
def test_bad_filter_settings_are_refused_naming_them(changes, message):
    with pytest.raises(ValueError, match=message):
        GroupFilterSpec(**{"name": "band_pass"} | changes)


def test_a_filter_needs_a_sampler_that_refills():
    with pytest.raises(ValueError, match="'fixed_v1' draws one"):
        TrainConfig(sampler="fixed_v1", group_filter=GroupFilterSpec("dynamic_sampling"))
    with pytest.raises(NotImplementedError, match="'fixed_buckets' draws one batch per step"):
        make_sampler("fixed_v1", POOL, seed=0).refill_batch(0, 1, 4)
    assert set(REFILLABLE) <= set(SAMPLERS)


def test_refills_walk_on_through_the_epoch_stream_and_resume():
    """Uniform without replacement: step 0's batch, its refill and step 1's batch are the first three
    batches of the unfiltered stream; the position survives a state round-trip."""
    plain = make_sampler("uniform", POOL, seed=5)
    reference = np.concatenate([plain.choose(s, 8) for s in range(3)])  # (24,)
    sampler = make_sampler("uniform", POOL, seed=5)
    first = sampler.next_batch(0, 8)
    refill = sampler.refill_batch(0, 1, 8)
    resumed = make_sampler("uniform", POOL, seed=5)
    resumed.load_state_dict(sampler.state_dict())
    second = resumed.next_batch(1, 8)
    assert [*first.indices, *refill.indices, *second.indices] == reference.tolist()
    assert sampler.next_batch(1, 8).indices == second.indices


def test_replacement_refills_are_their_own_reproducible_draws():
    sampler = make_sampler("uniform_replacement", POOL, seed=5)
    first, refill = sampler.next_batch(4, 16), sampler.refill_batch(4, 1, 16)
    assert refill.indices != first.indices
    assert refill.indices == make_sampler("uniform_replacement", POOL, seed=5).refill_batch(4, 1, 16).indices
    with pytest.raises(ValueError, match="numbered from 1"):
        sampler.refill_batch(4, 0, 16)


def embedded_config(**changes) -> TrainConfig:
    """Two steps of the embedded SFT policy (it solves some tasks, so groups are mixed)."""
    base = TrainConfig(
        data=DataSpec(train_tasks="generated:300:1", eval_tasks="generated:20:0", eval_limit=2),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=8)),
        steps=2,
        prompts_per_step=6,
        group_size=4,
        loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0),
        threads=1,
    )
    return replace(base, **changes)


def test_a_filtered_run_trains_on_kept_groups_and_counts_the_discarded(tmp_path):
    plain = train(embedded_config(), root=tmp_path, progress=False)
    spec = GroupFilterSpec("dynamic_sampling", max_rounds=3)
    filtered = train(embedded_config(group_filter=spec), root=tmp_path, progress=False)
    assert filtered.run_id != plain.run_id
    assert "group_filter" not in (plain.path / "config.json").read_text()  # unfiltered run ids unchanged
    for record in filtered.read_steps():
        rounds, kept = record["filter_rounds"], record["kept_groups"]
        assert 1 <= rounds <= 3 and record["generated_groups"] == 6 * rounds
        assert record["discarded_groups"] == 6 * rounds - kept
        assert record["discarded_rollouts"] == 4 * record["discarded_groups"]
        assert kept == 6 or rounds == 3  # it stops drawing once the batch is full
        if kept:
            assert record["mixed_groups"] == 1.0 and "skipped_update" not in record
    assert any(r["discarded_groups"] > 0 for r in filtered.read_steps())
    one_round = replace(spec, max_rounds=1)
    first = train(embedded_config(steps=1, group_filter=one_round), root=tmp_path, progress=False)
    # the first draw is the unfiltered step: same tasks, rollout seed and policy
    assert first.read_steps()[0]["generated_exact_rate"] == plain.read_steps()[0]["exact_rate"]


def test_a_step_that_keeps_no_group_makes_no_update(tmp_path):
    spec = GroupFilterSpec("band_pass", low=0.99, high=1.0, max_rounds=2)  # nothing passes
    store = train(embedded_config(steps=1, group_filter=spec), root=tmp_path, progress=False)
    (record,) = store.read_steps()
    assert record["skipped_update"] == 1.0 and record["kept_groups"] == 0
    assert record["generated_groups"] == 12 and record["discarded_rollouts"] == 48
    from countdown_study.policy import load_policy

    start, _ = load_policy("embedded")
    final, _ = load_policy(store.checkpoint_dir / "final")
    assert all(torch.equal(v, start.state_dict()[k]) for k, v in final.state_dict().items())
