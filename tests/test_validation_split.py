"""Report 003's checkpoint selection: the validation tasks (their ``train[:200]``) are out of the pool a run
trains on (their ``train[200:]``), and a run with snapshots says so in its run id."""

from dataclasses import replace

import pytest

from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.policy import policy_identity
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.store import run_id
from countdown_study.training import loop
from countdown_study.training.common import study_tasks
from countdown_study.training.loop import TrainConfig, run_identity, train
from countdown_study.training.specs import VALIDATION_SPLIT, DataSpec, EvalSpec, split_validation


def tiny_config(policy: str, **changes) -> TrainConfig:
    """Two RLOO steps of 4 x 4 rollouts on the tiny policy, over a 200-task pool."""
    base = TrainConfig(
        data=DataSpec(policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=2,
        prompts_per_step=4,
        group_size=4,
        micro_batch=8,
        lr=1e-2,
        loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0),
        sampling=SamplingConfig(max_new_tokens=10),
        threads=1,
    )
    return replace(base, **changes)


def test_the_first_tasks_validate_and_the_rest_train():
    pool = list(range(10))
    assert split_validation(pool, EvalSpec(snapshot_every=2, validation_size=3)) == (
        list(range(3, 10)),
        [0, 1, 2],
    )
    assert split_validation(pool, EvalSpec()) == (pool, [])  # no snapshots: the whole pool trains
    with pytest.raises(ValueError, match="none left to train on after the first 10 .*validation_size"):
        split_validation(pool, EvalSpec(snapshot_every=2, validation_size=10))


def test_a_run_never_trains_on_its_validation_tasks(tiny_policy, tmp_path, monkeypatch):
    given = []

    def spy(name, pool, seed, **options):
        given.append(list(pool))
        return make_sampler(name, pool, seed, **options)

    make_sampler = loop.make_sampler
    monkeypatch.setattr(loop, "make_sampler", spy)
    snap = replace(tiny_config(tiny_policy).eval, snapshot_every=2, snapshot_n=2, validation_size=5)
    config = tiny_config(tiny_policy, eval=snap)
    store = train(config, root=tmp_path, progress=False)

    whole, _ = study_tasks(config.data)
    [trained] = given
    validation = store.read_table("snapshot_val_2")
    validated = {(tuple(n), t) for n, t in zip(validation["nums"], validation["target"], strict=True)}
    assert validated == {(task.nums, task.target) for task in whole[:5]}
    assert trained == whole[5:] and not {task.key for task in trained} & {task.key for task in whole[:5]}


def test_runs_with_snapshots_change_id_and_others_keep_theirs():
    plain = TrainConfig()
    assert run_identity(plain) == policy_identity(plain.data.policy)  # the id every committed run has
    snapshots = replace(plain, eval=EvalSpec(snapshot_every=10))
    identity = run_identity(snapshots)
    assert identity == {**policy_identity(plain.data.policy), "validation": VALIDATION_SPLIT}
    before = run_id(
        snapshots, identity=policy_identity(plain.data.policy)
    )  # how the first sweep runs were named
    assert run_id(snapshots, identity=identity) != before
