"""The RLOO loop: a step changes the policy, runs are reproducible, and a killed run resumes exactly."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from synthetic import TINY_MODEL

from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import Rollouts, SamplingConfig, sequence_logprobs
from countdown_study.training.common import snapshot_steps, study_tasks
from countdown_study.training.group_filters import GroupFilterSpec
from countdown_study.training.loop import (
    TrainConfig,
    length_grouped,
    policy_update,
    preset,
    train,
)
from countdown_study.training.specs import AuxLossSpec, DataSpec, EvalSpec

SMALL = TINY_MODEL


def tiny_data(policy: str, **changes) -> DataSpec:
    return replace(
        DataSpec(policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4), **changes
    )


def tiny_config(policy: str, **changes) -> TrainConfig:
    base = TrainConfig(
        data=tiny_data(policy),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=4,
        prompts_per_step=4,
        group_size=4,
        micro_batch=6,
        lr=1e-2,
        loss=RLOOConfig(kl_coef=0.01, entropy_coef=0.01),
        sampling=SamplingConfig(max_new_tokens=10),
        threads=1,
        checkpoint_every=1,
    )
    return replace(base, **changes)


def test_study_tasks_keep_evaluation_out_of_the_pool(tiny_policy):
    with pytest.raises(ValueError, match="empty after removing evaluation tasks"):
        study_tasks(tiny_data(tiny_policy, train_tasks="generated:20:0", eval_tasks="generated:20:0"))
    pool, eval_tasks = study_tasks(tiny_data(tiny_policy))
    assert len(eval_tasks) == 4 and not {t.key for t in pool} & {t.key for t in eval_tasks}


def test_training_changes_parameters_and_logs_finite_metrics(tiny_policy, tmp_path):
    store = train(tiny_config(tiny_policy, steps=2), root=tmp_path, progress=False)
    steps = store.read_steps()
    assert [r["step"] for r in steps] == [0, 1]
    for record in steps:
        for key in (
            "reward_mean",
            "exact_rate",
            "mixed_groups",
            "kl",
            "entropy",
            "grad_norm",
            "ratio_mean",
            "loss",
        ):
            assert torch.isfinite(torch.tensor(float(record[key]))), key
        assert record["tokens"] > 0
    before = build_model(build_tokenizer(), SMALL, seed=0).state_dict()
    from countdown_study.policy import load_policy

    after, _ = load_policy(store.checkpoint_dir / "final")
    changed = [k for k, v in after.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) == len(before)  # every tensor moved
    summary = store.load_results()["eval"]
    assert 0.0 <= summary["pass@1"] <= summary["pass@2"] <= 1.0


def test_finished_config_is_loaded_not_retrained(tiny_policy, tmp_path):
    config = tiny_config(tiny_policy, steps=1)
    first = train(config, root=tmp_path, progress=False)
    stamp = (first.path / "DONE").stat().st_mtime_ns
    again = train(config, root=tmp_path, progress=False)
    assert again.path == first.path and (again.path / "DONE").stat().st_mtime_ns == stamp


def test_bad_config_names_the_problem(tiny_policy, tmp_path):
    with pytest.raises(ValueError, match="group_size >= 2"):
        tiny_config(tiny_policy, group_size=1)
    with pytest.raises(ValueError, match="unknown training preset 'gpu'"):
        preset("gpu")
    with pytest.raises(ValueError, match="unknown sampler 'nope'"):
        train(tiny_config(tiny_policy, sampler="nope"), root=tmp_path, progress=False)
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        tiny_config(tiny_policy, threads=0)


@pytest.mark.parametrize(
    ("source", "expected"),
    [("eval_tasks", "evaluation source '.*empty.jsonl' holds no tasks"),
     ("train_tasks", "training pool '.*empty.jsonl' is empty after removing evaluation tasks")],
)  # fmt: skip
def test_an_empty_task_source_fails_before_a_run_folder_is_made(tiny_policy, tmp_path, source, expected):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    config = tiny_config(tiny_policy, data=tiny_data(tiny_policy, **{source: str(empty)}))
    with pytest.raises(ValueError, match=expected):
        train(config, root=tmp_path / "runs", progress=False)
    assert not (tmp_path / "runs").exists()


KILL_SCRIPT = """
import sys, json
from countdown_study.training.loop import train, TrainConfig
from countdown_study.training.specs import DataSpec, EvalSpec
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import SamplingConfig
plain = json.loads(sys.argv[1])
config = TrainConfig(**plain | {
    "data": DataSpec(plain["data"], train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
    "eval": EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
    "loss": RLOOConfig(kl_coef=0.01, entropy_coef=0.01), "sampling": SamplingConfig(max_new_tokens=10)})
train(config, root=sys.argv[2], progress=False)
"""


def test_killed_run_resumes_to_the_same_metrics(tiny_policy, tmp_path):
    plain = dict(
        steps=8, prompts_per_step=4, group_size=4, micro_batch=6, lr=1e-2, threads=1, checkpoint_every=2
    )
    config = tiny_config(tiny_policy, **plain)
    plain["data"] = tiny_policy
    reference = train(config, root=tmp_path / "uninterrupted", progress=False)

    crash_root = tmp_path / "crashed"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, json.dumps(plain), str(crash_root)])
    deadline = time.time() + 120
    log = None
    while time.time() < deadline and proc.poll() is None:
        logs = list(crash_root.glob("*/steps.jsonl"))
        if logs and len(logs[0].read_text().splitlines()) >= 5:  # past the step-4 checkpoint, mid-way
            log = logs[0]
            break
        time.sleep(0.05)
    assert log is not None, "the training subprocess never got to step 5"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (log.parent / "DONE").exists()

    resumed = train(config, root=crash_root, progress=False)
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]  # noqa: E731
    assert strip(resumed.read_steps()) == strip(reference.read_steps())
    assert resumed.load_results()["eval"] == reference.load_results()["eval"]


def test_length_grouped_micro_batches_partition_by_length():
    groups = length_grouped([5, 1, 4, 1, 9, 2, 7], size=3)
    assert groups == [[1, 3, 5], [2, 0, 6], [4]]
    assert sorted(i for g in groups for i in g) == list(range(7))


def test_grouped_micro_batches_give_the_one_batch_update():
    tokenizer = build_tokenizer()
    rng = torch.Generator().manual_seed(0)
    prompts = [[1, 5, 6, 7], [1, 8, 9]]  # P = 2
    completions = [torch.randint(4, 20, (int(n),), generator=rng).tolist() for n in (3, 9, 1, 6, 2, 8)]
    behaviour_model = build_model(tokenizer, SMALL, seed=3)
    with torch.no_grad():
        per_sample = [p for p in prompts for _ in range(3)]
        old = sequence_logprobs(behaviour_model, per_sample, completions)
    rollouts = Rollouts(
        prompts=["a", "b"], group_size=3, prompt_ids=prompts, completion_ids=completions, texts=[""] * 6,
        logprobs=[old.logprobs[i, : len(c)] for i, c in enumerate(completions)],
    )  # fmt: skip
    advantages = torch.tensor([[0.5, -1.0, 0.5], [1.0, 0.2, -1.2]])
    results = []
    for micro_batch in (6, 2):
        model = build_model(tokenizer, SMALL, seed=0)
        config = TrainConfig(micro_batch=micro_batch, autocast=False, loss=RLOOConfig(kl_coef=0.0))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        stats = policy_update(model, None, optimizer, rollouts, advantages, config)
        results.append((torch.cat([p.detach().flatten() for p in model.parameters()]), stats))
    (whole, whole_stats), (grouped, grouped_stats) = results
    assert not torch.equal(
        whole, torch.cat([p.flatten() for p in build_model(tokenizer, SMALL).parameters()])
    )
    assert torch.allclose(whole, grouped, atol=1e-6)
    assert grouped_stats["grad_norm"] == pytest.approx(whole_stats["grad_norm"], rel=1e-5)


@pytest.mark.parametrize("autocast, tolerance", [(False, 1e-5), (True, 0.02)])
def test_eager_attention_update_matches_sdpa(autocast, tolerance):
    """The update's default ``attention="eager"`` computes what transformers' fused ``sdpa`` computes:
    log-probs equal to float32 rounding (to bf16 rounding under autocast) and the same gradient."""
    tokenizer = build_tokenizer()
    rng = torch.Generator().manual_seed(1)
    prompts = [[1, *torch.randint(4, 20, (int(n),), generator=rng).tolist()] for n in (3, 7, 5)]
    completions = [torch.randint(4, 20, (int(n),), generator=rng).tolist() for n in (9, 2, 6)]
    results = []
    for attention in ("eager", "sdpa"):
        model = build_model(tokenizer, TinyModelConfig(hidden_size=64, num_layers=2, num_heads=4), seed=0)
        model.set_attn_implementation(attention)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = sequence_logprobs(model, prompts, completions, with_entropy=True)
        (out.logprobs.sum() / out.mask.sum()).backward()
        grad = torch.cat([p.grad.flatten() for p in model.parameters()])
        results.append((out.logprobs.detach(), out.entropy.detach(), grad))
    (lp_e, ent_e, grad_e), (lp_s, ent_s, grad_s) = results
    assert (lp_e - lp_s).abs().max().item() < tolerance
    assert (ent_e - ent_s).abs().max().item() < tolerance
    assert ((grad_e - grad_s).norm() / grad_s.norm()).item() < tolerance
    assert torch.nn.functional.cosine_similarity(grad_e, grad_s, dim=0).item() > 1 - tolerance


def test_unknown_attention_is_refused_before_anything_loads():
    with pytest.raises(ValueError, match="unknown attention 'fast'"):
        TrainConfig(attention="fast")


class ScaledLogprob:
    """A test objective: ``coef`` times the mean sequence log-prob of the batch (logs its value)."""

    name = "scaled"
    needs_reference = False

    def __init__(self, coef: float):
        self.coef = coef

    def loss(self, model, ref_model, rollouts, grades, batch):
        out = sequence_logprobs(model, rollouts.sample_prompt_ids, rollouts.completion_ids)
        value = (out.logprobs * out.mask).sum() / out.mask.sum()
        return self.coef * value, {"logprob": float(value.detach()), "correct": float(grades.correct.mean())}


def test_auxiliary_objective_settings_change_the_run_id_and_train(tiny_policy, tmp_path):
    from countdown_study.policy import policy_identity
    from countdown_study.runs.store import run_id
    from countdown_study.training.aux import AUX_LOSSES, register_aux_loss

    register_aux_loss("scaled")(ScaledLogprob)
    try:
        ids = {
            run_id(tiny_config(tiny_policy, aux_losses=aux), identity=policy_identity(tiny_policy))
            for aux in ((), (AuxLossSpec("scaled", coef=0.1),), (AuxLossSpec("scaled", coef=0.2),))
        }
        assert len(ids) == 3
        store = train(
            tiny_config(tiny_policy, steps=1, aux_losses=(AuxLossSpec("scaled", coef=0.1),)),
            root=tmp_path, progress=False,
        )  # fmt: skip
        (record,) = store.read_steps()
        assert "scaled_loss" in record and record["scaled_logprob"] < 0
        assert record["scaled_loss"] == pytest.approx(0.1 * record["scaled_logprob"], rel=1e-3, abs=1e-3)
    finally:
        AUX_LOSSES.pop("scaled")
    with pytest.raises(ValueError, match=r"unknown auxiliary objective\(s\) \['nope'\]"):
        train(tiny_config(tiny_policy, aux_losses=(AuxLossSpec("nope"),)), root=tmp_path, progress=False)


def test_unsolvable_evaluation_tasks_are_counted_in_a_warning(tiny_policy, tmp_path):
    held_out = tmp_path / "held_out.jsonl"
    rows = [
        {"target": 6, "nums": [1, 2, 3]},
        {"target": 97, "nums": [1, 1, 1]},
        {"target": 9, "nums": [2, 3, 4]},
    ]
    held_out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(UserWarning, match=r"1 of 3 evaluation tasks from '.*held_out.jsonl' have no solution"):
        pool, eval_tasks = study_tasks(tiny_data(tiny_policy, eval_tasks=str(held_out), eval_limit=10))
    assert len(eval_tasks) == 3 and pool
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="evaluation source '.*empty.jsonl' holds no tasks"):
        study_tasks(tiny_data(tiny_policy, eval_tasks=str(empty)))


@pytest.mark.parametrize(
    ("damage", "file"),
    [
        (lambda run: (run / "results.json").write_text('{"eval": {"pass@1": 0.99}}\n'), "results.json"),
        (lambda run: (run / "steps.jsonl").write_text((run / "steps.jsonl").read_text().split("\n", 1)[1]),
         "steps.jsonl"),
        (lambda run: (run / "tables" / "eval.parquet").unlink(), "eval.parquet"),
    ],
    ids=["edited results", "truncated step log", "missing table"],
)  # fmt: skip
def test_a_damaged_finished_run_is_refused_naming_run_and_file(tiny_policy, tmp_path, damage, file, capsys):
    from countdown_study.cli import main
    from countdown_study.runs.store import RunCorruptError

    config = tiny_config(tiny_policy, steps=2)
    store = train(config, root=tmp_path, progress=False)
    assert store.verify() == []
    damage(store.path)
    with pytest.raises(RunCorruptError, match=rf"run {store.run_id} is corrupt: .*{file}"):
        train(config, root=tmp_path, progress=False)
    with pytest.raises(RunCorruptError, match=file):
        store.load_results()
    assert main(["runs", "verify", "--root", str(tmp_path)]) == 1
    assert file in capsys.readouterr().out


def _interrupted(tiny_policy, root, steps_before: int, **changes):
    """A run of 4 steps (checkpoint every 2) whose attempt stopped after ``steps_before`` steps."""
    from countdown_study.training import loop

    config = tiny_config(tiny_policy, steps=4, checkpoint_every=2, **changes)
    original = loop.rloo_step

    def stop_after(step, *args, **kwargs):
        if step == steps_before:
            raise KeyboardInterrupt
        return original(step, *args, **kwargs)

    loop.rloo_step = stop_after
    try:
        with pytest.raises(KeyboardInterrupt):
            train(config, root=root, progress=False)
    finally:
        loop.rloo_step = original
    return config


@pytest.mark.parametrize("damage", ["unreadable checkpoint", "step log lost before the checkpoint"])
def test_a_bad_checkpoint_starts_the_run_over_to_the_same_result(tiny_policy, tmp_path, damage):
    reference = train(
        tiny_config(tiny_policy, steps=4, checkpoint_every=2), root=tmp_path / "ok", progress=False
    )
    config = _interrupted(tiny_policy, tmp_path / "bad", steps_before=3)
    (run,) = [p for p in (tmp_path / "bad").iterdir() if p.is_dir()]
    checkpoint = run / "checkpoints" / "last.pt"
    assert torch.load(checkpoint, weights_only=False)["step"] == 2
    if damage == "unreadable checkpoint":
        checkpoint.write_bytes(checkpoint.read_bytes()[:1000])
        expected = "cannot be read"
    else:
        (run / "steps.jsonl").write_text("")
        expected = "is at step 2 but the step log lacks some of steps 0..1"
    with pytest.warns(UserWarning, match=rf"checkpoint {re.escape(str(checkpoint))} {expected}"):
        resumed = train(config, root=tmp_path / "bad", progress=False)
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]  # noqa: E731
    assert strip(resumed.read_steps()) == strip(reference.read_steps())
    assert resumed.load_results()["eval"] == reference.load_results()["eval"]


@pytest.mark.parametrize(
    "sampler, options, table",
    [
        ("fsc_dynamic_edge", {"total_steps": 4, "probe_size": 3, "probe_every": 2}, "sampler_observations"),
        ("adsc_rule_based", {}, "sampler_tasks"),
    ],
)
def test_sampler_logs_reach_the_run_store_and_survive_a_resume(
    tiny_policy, tmp_path, sampler, options, table
):
    """A sampler's records (report 002's observation log, report 004's synthetic-task log) are written as
    run tables, probes are counted in the step log, and an interrupted run resumes to the same tables."""
    changes = {"steps": 4, "checkpoint_every": 2, "sampler": sampler, "sampler_options": options}
    reference = train(tiny_config(tiny_policy, **changes), root=tmp_path / "ok", progress=False)
    _interrupted(tiny_policy, tmp_path / "cut", steps_before=3, sampler=sampler, sampler_options=options)
    resumed = train(tiny_config(tiny_policy, **changes), root=tmp_path / "cut", progress=False)
    logged = reference.read_table(table)
    assert len(logged) > 0
    pd.testing.assert_frame_equal(resumed.read_table(table), logged)
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]  # noqa: E731
    assert strip(resumed.read_steps()) == strip(reference.read_steps())
    if sampler.startswith("fsc_"):
        assert set(logged["source"]) == {"probe", "batch"}
        probe_steps = [r["step"] for r in reference.read_steps() if r.get("probe_rollouts")]
        assert probe_steps == [0, 2] and all(
            r["probe_rollouts"] == 3 * 4 for r in reference.read_steps() if r["step"] in probe_steps
        )
    else:
        assert {"tier", "accepted", "reason", "step"} <= set(logged.columns)


def test_extra_evaluation_sets_are_evaluated_beside_the_held_out_tasks(tiny_policy, tmp_path):
    spec = EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10), extra_sets=(("ood", "ood:3:0"),))
    store = train(tiny_config(tiny_policy, steps=1, eval=spec), root=tmp_path, progress=False)
    ood = store.read_table("eval_ood")
    assert set(ood["num_count"]) == {5} and len(ood) == 3 * 2  # 3 five-number tasks x 2 samples
    assert len(store.read_table("eval")) == 4 * 2  # the held-out evaluation is unchanged
    assert store.verify() == []  # the extra table is part of the finished run's checksums
    with pytest.raises(ValueError, match="distinct identifiers"):
        EvalSpec(extra_sets=(("ood", "ood:3:0"), ("ood", "ood:4:1")))


def test_a_filtered_run_resumes_to_the_same_draws(tiny_policy, tmp_path):
    """The refill position of uniform sampling (``UniformWithoutReplacement.refilled``) is checkpointed:
    a group-filtered run cut after step 3 resumes to the same step log (draw counts and tasks)."""
    changes = {"group_filter": GroupFilterSpec("dynamic_sampling", max_rounds=2)}
    reference = train(
        tiny_config(tiny_policy, steps=4, checkpoint_every=2, **changes), root=tmp_path / "ok", progress=False
    )
    config = _interrupted(tiny_policy, tmp_path / "cut", steps_before=3, **changes)
    resumed = train(config, root=tmp_path / "cut", progress=False)
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]  # noqa: E731
    assert strip(resumed.read_steps()) == strip(reference.read_steps())
    assert all(r["filter_rounds"] >= 1 for r in reference.read_steps())


def test_answer_metrics_count_spans_and_abandoned_answers():
    """Worked example (2 prompts x 2 rollouts): one rollout verifies first and ends wrong (abandoned), one
    verifies at the end, two never verify; 3 + 1 + 2 + 1 answer spans."""
    from countdown_study.countdown.grading import Grades
    from countdown_study.training.loop import answer_metrics

    correct = np.array([[False, True], [False, False]])
    grades = Grades(
        rewards=np.where(correct, 1.0, 0.1),
        correct=correct,
        reasons=np.full((2, 2), None, dtype=object),
        first_verifying=np.array([[0, 0], [-1, -1]]),
        answer_spans=np.array([[3, 1], [2, 1]]),
        well_formed=np.ones((2, 2), dtype=bool),
    )
    assert answer_metrics(grades) == {"answer_spans": 1.75, "abandoned_rate": 0.25}


def test_whole_rollout_runs_log_answer_structure(tiny_policy, tmp_path):
    whole = SamplingConfig(max_new_tokens=10, stop_at_answer=False)
    store = train(tiny_config(tiny_policy, steps=1, sampling=whole), root=tmp_path, progress=False)
    assert {"answer_spans", "abandoned_rate"} <= set(store.read_steps()[0])
    plain = train(tiny_config(tiny_policy, steps=1), root=tmp_path, progress=False)
    assert "abandoned_rate" not in plain.read_steps()[0]  # cut at the first answer: nothing to abandon


# ---------------------------------------------------------------------------------------------------
# Snapshots for checkpoint selection (report 003)
# ---------------------------------------------------------------------------------------------------


def test_snapshot_steps_are_every_interval_and_the_last_step():
    assert snapshot_steps(EvalSpec(), 60) == ()
    assert snapshot_steps(EvalSpec(snapshot_every=20), 60) == (20, 40, 60)
    assert snapshot_steps(EvalSpec(snapshot_every=25), 60) == (25, 50, 60)
    with pytest.raises(ValueError, match="snapshot_every must be >= 0"):
        EvalSpec(snapshot_every=-1)


def test_snapshots_leave_training_unchanged_and_resume_to_the_same_tables(tiny_policy, tmp_path):
    snap = replace(tiny_config(tiny_policy).eval, snapshot_every=2, snapshot_n=2, validation_size=5)
    # another interval, the same validation tasks out of the pool (test_validation_split): the same training
    sparse = replace(snap, snapshot_every=4)
    plain = train(
        tiny_config(tiny_policy, checkpoint_every=2, eval=sparse), root=tmp_path / "plain", progress=False
    )
    whole = train(
        tiny_config(tiny_policy, checkpoint_every=2, eval=snap), root=tmp_path / "whole", progress=False
    )
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]  # noqa: E731
    assert strip(whole.read_steps()) == strip(plain.read_steps())
    assert whole.load_results()["eval"] == plain.load_results()["eval"]
    tables = sorted(p.name for p in (whole.path / "tables").glob("snapshot_*"))
    assert tables == [f"snapshot_{s}_{k}.parquet" for s in ("test", "val") for k in (2, 4)]
    val = whole.read_table("snapshot_val_2")
    assert val["task_index"].nunique() == 5 and len(val) == 5 * 2
    assert whole.read_table("snapshot_test_4")["task_index"].nunique() == 4

    config = _interrupted(tiny_policy, tmp_path / "cut", steps_before=3, eval=snap)
    resumed = train(config, root=tmp_path / "cut", progress=False)
    for name in ("snapshot_val_2", "snapshot_val_4", "snapshot_test_4"):
        pd.testing.assert_frame_equal(resumed.read_table(name), whole.read_table(name))
