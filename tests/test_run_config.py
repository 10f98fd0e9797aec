"""The config core: the fields every run shares are declared once (``evaluation.config.RunConfig``), the
study presets derive from the ``cpu`` training preset, and a config's canonical JSON (its run id) is what
it was before the fields were shared."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields, replace

import pytest

from countdown_study.evaluation.config import DataSpec, EvalRunConfig, EvalSpec, RunConfig
from countdown_study.runs.files import canonical_json
from countdown_study.study.presets import STUDY_PRESETS, study_preset
from countdown_study.training.ipo import IPOConfig
from countdown_study.training.rloo_config import CPU_LOSS, PRESETS, REPORTS_LOSS, TrainConfig, preset

SHARED = ("data", "eval", "seed", "threads", "device")

# The canonical JSON of each default config, as written before the shared fields moved to ``RunConfig``
# (the body of every committed run id: a change here changes run ids).
DATA = '"data":{"eval_limit":500,"eval_tasks":"generated:1000:0","policy":"embedded","template":null,'
DATA += '"tokenizer":null,"train_tasks":"generated:20000:1"}'
EVAL = '"eval":{"batch_size":64,"n":16,"sampling":{"dtype":"float32","engine":"native","max_new_tokens":224,'
EVAL += '"stop_at_answer":false,"temperature":0.6,"top_k":20,"top_p":0.95}}'
TRAIN_SAMPLING = '{"dtype":"bfloat16","engine":"native","max_new_tokens":96,"stop_at_answer":true,'
TRAIN_SAMPLING += '"temperature":1.0,"top_k":0,"top_p":1.0}'
BEFORE = {
    "EvalRunConfig": "{" + DATA + "," + EVAL + ',"seed":0,"threads":2}',
    "IPOConfig": "{" + ",".join([
        '"batch_pairs":64', DATA, '"epochs":2', EVAL, '"format_score":0.1', '"group_size":8',
        '"length_normalize":true', '"lr":5e-05', '"max_pairs_per_prompt":2', '"prompts":1024',
        f'"sampling":{TRAIN_SAMPLING}', '"seed":0', '"tau":0.1', '"threads":2',
    ]) + "}",
    "TrainConfig": "{" + ",".join([
        '"attention":"eager"', '"autocast":true', '"aux_losses":[]', '"checkpoint_every":10', DATA, EVAL,
        '"format_score":0.1', '"grad_clip":1.0', '"group_size":8',
        '"loss":{"aggregation":"token_mean","entropy_coef":0.0,"kl_coef":0.0,"kl_estimator":"k3",'
        + '"ratio_clip":2.0}',
        '"lr":0.0001', '"micro_batch":64', '"prompts_per_step":32', '"sampler":"uniform"',
        '"sampler_options":{}', f'"sampling":{TRAIN_SAMPLING}', '"seed":0', '"steps":60', '"threads":2',
        '"weight_decay":0.0',
    ]) + "}",
}  # fmt: skip


@pytest.mark.parametrize(
    "config", [EvalRunConfig(), IPOConfig(), TrainConfig()], ids=lambda c: type(c).__name__
)
def test_default_configs_keep_their_canonical_json(config):
    assert canonical_json(config) == BEFORE[type(config).__name__]


@pytest.mark.parametrize("kind", [EvalRunConfig, IPOConfig, TrainConfig], ids=lambda k: k.__name__)
def test_the_shared_fields_are_the_run_configs(kind):
    by_name = {f.name: f for f in fields(kind)}
    for name in SHARED:  # the same field objects: declared once, in RunConfig
        assert by_name[name] is RunConfig.__dataclass_fields__[name]
    assert not set(SHARED) & set(vars(kind).get("__annotations__", {}))


@pytest.mark.parametrize("kind", [EvalRunConfig, IPOConfig, TrainConfig], ids=lambda k: k.__name__)
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
        ({"seed": True}, "seed must be a non-negative integer, got True"),
        ({"threads": 0}, "threads must be at least 1, got 0"),
        ({"device": "tpu"}, "unknown device 'tpu'; choose one of"),
    ],
)
def test_every_run_config_refuses_a_bad_shared_field(kind, changes, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        kind(**changes)


def test_a_device_other_than_cpu_enters_the_canonical_json_of_every_run():
    for kind in (EvalRunConfig, IPOConfig, TrainConfig):
        assert "device" not in json.loads(canonical_json(kind(device="cpu")))
        assert json.loads(canonical_json(kind(device="auto")))["device"] == "auto"


def test_data_and_eval_stay_positional_and_the_shared_scalars_are_keywords():
    data, spec = DataSpec(eval_limit=3), EvalSpec(n=2)
    config = TrainConfig(data, spec, "uniform", {}, 5)  # as before: data, eval, sampler, options, steps
    assert (config.data, config.eval, config.sampler, config.steps) == (data, spec, "uniform", 5)
    with pytest.raises(TypeError):
        EvalRunConfig(data, spec, 1)  # seed is keyword-only


# ---------------------------------------------------------------------------------------------------
# One preset system
# ---------------------------------------------------------------------------------------------------


def _changed(a, b) -> set[str]:
    return {f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)}


def test_the_full_study_runs_are_the_cpu_preset_with_the_reports_loss_on_one_thread():
    config = study_preset("full").train_config("uniform", seed=0)
    assert _changed(config, PRESETS["cpu"]) == {"loss", "threads"}
    assert (config.loss, config.threads) == (REPORTS_LOSS, 1)
    assert REPORTS_LOSS.kl_coef == REPORTS_LOSS.entropy_coef == 0.001
    assert PRESETS["cpu"].loss == CPU_LOSS and CPU_LOSS.kl_coef == CPU_LOSS.entropy_coef == 0.0


def test_a_study_preset_leaves_out_only_what_the_cpu_preset_gives():
    full, cpu = STUDY_PRESETS["full"], PRESETS["cpu"]
    sizes = (full.steps, full.prompts_per_step, full.group_size, full.max_new_tokens, full.eval_n)
    assert sizes == (cpu.steps, cpu.prompts_per_step, cpu.group_size, cpu.sampling.max_new_tokens, cpu.eval.n)
    assert (full.eval_limit, full.validation_size) == (cpu.data.eval_limit, cpu.eval.validation_size)
    assert full.run_eval == cpu.eval and full.run_data == cpu.data


def test_the_ipo_and_evaluation_runs_of_a_study_share_its_run_fields():
    quick = study_preset("quick")
    rloo, ipo, sft = quick.train_config(seed=3), quick.ipo_config(seed=3), quick.eval_config(seed=3)
    for name in SHARED:
        assert getattr(rloo, name) == getattr(ipo, name) == getattr(sft, name), name
    assert ipo.sampling == rloo.sampling and ipo.group_size == rloo.group_size


def test_changes_to_a_study_run_win_over_its_sizes():
    config = study_preset("tiny").train_config("uniform", seed=1, steps=7, threads=3)
    assert (config.steps, config.threads, config.seed) == (7, 3, 1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: preset("gpu"), "unknown training preset 'gpu'; choose one of ['cpu', 'paper']"),
        (
            lambda: study_preset("huge"),
            "unknown study preset 'huge'; choose one of ['full', 'quick', 'tiny']",
        ),
    ],
)
def test_unknown_preset_names_fail_listing_the_known_ones(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == message


def test_method_seeds_lists_every_run_of_a_study_method_by_method():
    at = study_preset("tiny", seeds=(0, 2))
    assert at.method_seeds(["a", "b"]) == [("a", 0), ("a", 2), ("b", 0), ("b", 2)]
    assert at.method_seeds([]) == []


def test_the_training_config_checks_its_registries_in_a_fresh_interpreter():
    """Neither the sampler registry nor the auxiliary objectives depend on another module imported first."""
    code = (
        "from countdown_study.training.rloo_config import TrainConfig\n"
        "from countdown_study.training.specs import AuxLossSpec\n"
        "TrainConfig(sampler='adsc_teacher', aux_losses=(AuxLossSpec('vcc'),))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------------------------------
# Names kept where they were imported from
# ---------------------------------------------------------------------------------------------------

MOVED = [
    ("countdown_study.training.loop", "TrainConfig", "countdown_study.training.rloo_config"),
    ("countdown_study.training.loop", "PRESETS", "countdown_study.training.rloo_config"),
    ("countdown_study.training.loop", "preset", "countdown_study.training.rloo_config"),
    ("countdown_study.training.loop", "on_engine", "countdown_study.training.rloo_config"),
    ("countdown_study.training.loop", "rloo_step", "countdown_study.training.rloo"),
    ("countdown_study.training.loop", "policy_update", "countdown_study.training.rloo"),
    ("countdown_study.training.loop", "draw_groups", "countdown_study.training.rloo"),
    ("countdown_study.training.common", "evaluate_run", "countdown_study.evaluation.run"),
    ("countdown_study.training.common", "study_tasks", "countdown_study.evaluation.run"),
    ("countdown_study.training.common", "snapshot_steps", "countdown_study.evaluation.run"),
    ("countdown_study.training.specs", "DataSpec", "countdown_study.evaluation.config"),
    ("countdown_study.training.specs", "HELD_OUT", "countdown_study.evaluation.config"),
    ("countdown_study.training.device", "resolve_device", "countdown_study.runs.device"),
    ("countdown_study.study.presets", "EvalRunConfig", "countdown_study.evaluation.config"),
    ("countdown_study.study.presets", "evaluate_policy_run", "countdown_study.evaluation.run"),
]


@pytest.mark.parametrize(("old", "name", "home"), MOVED, ids=[f"{o}.{n}" for o, n, _ in MOVED])
def test_moved_names_are_importable_from_their_old_path(old, name, home):
    import importlib

    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(home), name)


def test_an_evaluation_run_on_cuda_without_one_fails_before_a_run_folder(tmp_path, monkeypatch):
    import torch

    from countdown_study.evaluation.run import evaluate_policy_run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device 'cuda' was asked for"):
        evaluate_policy_run(EvalRunConfig(device="cuda"), root=tmp_path)
    assert not any(tmp_path.iterdir())


def test_an_evaluation_run_records_its_device(tiny_policy, tmp_path):
    from countdown_study.evaluation.run import evaluate_policy_run

    data = DataSpec(policy=tiny_policy, train_tasks="generated:50:1", eval_limit=2)
    config = EvalRunConfig(data=data, eval=replace(EvalSpec(n=2), batch_size=2), threads=1)
    store = evaluate_policy_run(config, root=tmp_path)
    assert json.loads((store.path / "provenance.json").read_text())["device"] == "cpu"
    assert len(store.read_table("eval")) == 2 * 2  # tasks x samples
