"""The device of a run: named in its config (``cpu`` by default, left out of its id), resolved at run start,
refused before a run folder is made when the machine lacks it, recorded in provenance."""

import argparse
import json
from dataclasses import replace

import pytest
import torch
from synthetic import TINY_MODEL

from countdown_study.cli import main
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.files import plain
from countdown_study.runs.store import run_id
from countdown_study.training import sft
from countdown_study.training.device import DEVICES, check_device, describe_device, resolve_device
from countdown_study.training.ipo import IPOConfig, train_ipo
from countdown_study.training.loop import PRESETS, TrainConfig, train
from countdown_study.training.specs import DataSpec, EvalSpec

SMALL = TINY_MODEL


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without a CUDA device, whatever this one has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def tiny_config(policy: str, **changes) -> TrainConfig:
    base = TrainConfig(
        data=DataSpec(policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=2),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=6)),
        steps=1,
        prompts_per_step=2,
        group_size=2,
        loss=RLOOConfig(kl_coef=0.01, entropy_coef=0.01),
        sampling=SamplingConfig(max_new_tokens=6),
        threads=1,
    )
    return replace(base, **changes)


# ---------------------------------------------------------------------------------------------------
# Names and resolution


@pytest.mark.parametrize("make", [TrainConfig, IPOConfig, sft.SFTConfig], ids=lambda c: c.__name__)
def test_every_config_that_loads_a_model_takes_a_device_and_refuses_unknown_names(make):
    assert make().device == "cpu"
    for name in DEVICES:
        assert make(device=name).device == name  # cuda is a valid name on any machine
    with pytest.raises(ValueError, match=r"unknown device 'tpu'; choose one of \('cpu', 'cuda', 'auto'\)"):
        make(device="tpu")


def test_the_default_device_leaves_configs_and_run_ids_as_they_were():
    """``device`` and ``logprob_chunk`` stay out of a config's JSON at their defaults: every existing run
    keeps its id (the shipped SFT run's id is pinned in test_sft.py, the tiny study's numbers in
    test_golden.py)."""
    added = {"device", "logprob_chunk"}
    for config in (PRESETS["cpu"], IPOConfig(), sft.SFTConfig()):
        assert not added & set(plain(config))
    assert plain(PRESETS["paper"])["device"] == "auto"  # the GPU road takes a GPU where there is one
    assert run_id(sft.run_config(sft.SFTConfig()), "sft") == "sft-61bfe0563a72"
    cpu = PRESETS["cpu"]
    others = {run_id(replace(cpu, device=d)) for d in ("cuda", "auto")} | {
        run_id(replace(cpu, logprob_chunk=8))
    }
    assert run_id(cpu) not in others and len(others) == 3


def test_resolution(no_cuda):
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="device 'cuda' was asked for but torch .* sees no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        check_device("gpu")
    assert describe_device(torch.device("cpu")) == {"device": "cpu"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: auto resolves to the CPU here")
def test_auto_takes_the_gpu_where_there_is_one():
    assert resolve_device("auto").type == "cuda"
    assert describe_device(resolve_device("cuda"))["device_name"]


# ---------------------------------------------------------------------------------------------------
# Runs


def test_cuda_without_a_gpu_fails_before_a_run_folder_is_made(tiny_policy, tmp_path, no_cuda):
    ipo = IPOConfig(data=tiny_config(tiny_policy).data, prompts=2, group_size=2, threads=1, device="cuda")
    sft_config = replace(sft.SFTConfig(), steps=1, model=SMALL, heldout_count=5, device="cuda")
    runs = {
        "rloo": lambda root: train(tiny_config(tiny_policy, device="cuda"), root=root, progress=False),
        "ipo": lambda root: train_ipo(ipo, root=root, progress=False),
        "sft": lambda root: sft.train_sft(sft_config, root=root, progress=False),
    }
    for name, run in runs.items():
        with pytest.raises(ValueError, match="sees no CUDA device"):
            run(tmp_path / name)
        assert not (tmp_path / name).exists(), name


def test_a_run_records_the_device_it_resolved_to(tiny_policy, tmp_path, no_cuda):
    store = train(tiny_config(tiny_policy, device="auto"), root=tmp_path, progress=False)
    assert store.is_done and store.provenance()["device"] == "cpu"
    assert store.load_results()["steps"] == 1 and store.verify() == []
    default = train(tiny_config(tiny_policy), root=tmp_path, progress=False)
    assert default.run_id != store.run_id and default.provenance()["device"] == "cpu"


# ---------------------------------------------------------------------------------------------------
# The command line


def test_cli_device_option_reaches_the_config_and_cuda_fails_in_one_line(
    tiny_policy, tmp_path, no_cuda, capsys
):
    from countdown_study.cli import sft as cli_sft
    from countdown_study.cli import train as cli_train

    parser = argparse.ArgumentParser()
    cli_sft.configure_parser(parser)
    assert cli_sft.config_from_args(parser.parse_args(["--device", "auto"])).device == "auto"
    parser = argparse.ArgumentParser()
    cli_train.configure_parser(parser)
    assert parser.parse_args(["--device", "cuda"]).device == "cuda"
    for argv in (
        ["train", "--policy", tiny_policy, "--device", "cuda", "--root", str(tmp_path / "runs")],
        ["eval", "--policy", tiny_policy, "--tasks", "generated:2:0", "--n", "1", "--device", "cuda"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "sees no CUDA device" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()
    with pytest.raises(SystemExit) as refused:
        main(["eval", "--tasks", "generated:2:0", "--device", "tpu"])
    assert refused.value.code == 2 and "invalid choice: 'tpu'" in capsys.readouterr().err


def test_cli_eval_on_auto_records_the_device(tiny_policy, tmp_path, no_cuda):
    out = tmp_path / "eval.json"
    argv = ["eval", "--policy", tiny_policy, "--tasks", "generated:2:0", "--n", "1", "--max-new-tokens", "4"]
    assert main([*argv, "--device", "auto", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["device"] == "cpu"
    assert main([*argv, "--json", str(out)]) == 0
    assert "device" not in json.loads(out.read_text())["config"]  # the default output is as before
