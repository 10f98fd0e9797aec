"""Re-making a shipped checkpoint: the weights compared tensor by tensor, the finding recorded in its
training record, and ``runs verify`` quiet about a dirty checkpoint only once a clean re-make matched."""

import argparse
import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_sft import TINY, TINY_MODEL

from countdown_study.cli import sft as sft_cli
from countdown_study.policy import build_model, build_tokenizer
from countdown_study.policy import model as policy_model
from countdown_study.runs import provenance
from countdown_study.runs.provenance import REPRODUCED, DirtyTreeError, shipped_dirty_warnings
from countdown_study.training import sft
from countdown_study.training.reproduce import compare_shipped, config_difference, summary


def _saved(folder, seed=0):
    build_model(build_tokenizer(), TINY_MODEL, seed=seed).save_pretrained(folder)
    return folder


def test_compare_shipped_on_a_worked_example(tmp_path):
    a, b = _saved(tmp_path / "a"), _saved(tmp_path / "b")
    same = compare_shipped(a, b)
    tensors = len(load_file(b / "model.safetensors"))
    assert same == {"identical": True, "tensors": tensors, "differing": [], "max_abs_diff": 0.0}
    weights = load_file(b / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + 0.5  # one tensor moved by exactly 0.5 (representable: no rounding)
    gone = sorted(weights)[-1]
    del weights[gone]
    save_file(weights, b / "model.safetensors", metadata={"format": "pt"})
    changed = compare_shipped(a, b)
    assert changed["identical"] is False and changed["tensors"] == tensors - 1
    assert changed["differing"] == sorted([name, gone])
    assert changed["max_abs_diff"] == pytest.approx(0.5, abs=1e-6)
    assert summary("p", {**changed, "git_sha": "abc"}) == (
        f"p: re-made from abc: 2 of {tensors - 1} tensors differ from the shipped weights (largest difference 0.5)"
    )


def test_config_difference_names_the_keys_that_differ():
    recorded = {"steps": 300, "betas": [0.9, 0.95], "lr": 5e-4}
    assert config_difference(recorded, {"steps": 300, "betas": (0.9, 0.95), "lr": 5e-4}) == []
    assert config_difference(recorded, {"steps": 7, "betas": (0.9, 0.95), "seed": 0}) == [
        "lr",
        "seed",
        "steps",
    ]


def _record(tmp_path, name, record):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "sft.json").write_text(json.dumps(record))
    return folder


def test_verify_is_quiet_only_about_a_clean_bit_identical_remake(tmp_path):
    dirty = {"git_sha": "a" * 40, "git_dirty": True}
    remade = {"git_sha": "b" * 40, "git_dirty": False, "identical": True, "differing": []}
    _record(tmp_path, "never", dirty)
    _record(tmp_path, "same", {**dirty, REPRODUCED: remade})
    _record(
        tmp_path, "differs", {**dirty, REPRODUCED: {**remade, "identical": False, "differing": ["x", "y"]}}
    )
    _record(tmp_path, "dirty-remake", {**dirty, REPRODUCED: {**remade, "git_dirty": True}})
    lines = shipped_dirty_warnings(tmp_path)
    named = [line.split()[3] for line in lines]
    assert named == ["differs", "dirty-remake", "never"]
    assert "its re-make from bbbbbbbbbbbb differs in 2 tensors" in lines[0]
    assert "`--reproduce` of the command that trained it" in lines[2]


@pytest.fixture
def shipped_tiny(tmp_path, monkeypatch, capsys):
    """The ``large`` recipe at the tiny config, shipped (bf16) into a folder of the test."""
    dest = tmp_path / "embedded-large"
    monkeypatch.setitem(policy_model.EMBEDDED_POLICIES, "embedded-large", dest)
    monkeypatch.setitem(sft.RECIPES, "large", replace(sft.RECIPES["large"], config=TINY))
    monkeypatch.setenv(provenance.ALLOW_DIRTY, "1")  # the test's tree may carry uncommitted changes
    assert sft_cli.cli_main(_args(tmp_path, "--ship", "--root", str(tmp_path / "runs"))) == 0
    capsys.readouterr()
    return dest


def _args(tmp_path, *extra) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sft_cli.configure_parser(parser)
    return parser.parse_args(["--recipe", "large", "--no-progress", *extra])


@pytest.mark.filterwarnings("ignore:DIRTY TREE")
def test_a_remade_checkpoint_is_compared_and_recorded(tmp_path, shipped_tiny, capsys):
    again = _args(tmp_path, "--reproduce", "--root", str(tmp_path / "again"))
    assert sft_cli.cli_main(again) == 0
    assert "embedded-large: re-made from" in capsys.readouterr().out
    info = json.loads((shipped_tiny / "sft.json").read_text())
    record = info[REPRODUCED]
    made = json.loads(next((tmp_path / "again").glob("sft-*/provenance.json")).read_text())
    assert record["identical"] is True and record["differing"] == [] and record["max_abs_diff"] == 0.0
    assert (record["git_sha"], record["git_dirty"]) == (made["git_sha"], made["git_dirty"])
    assert info["quality"] is not None  # the rest of the record is kept
    weights = load_file(shipped_tiny / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + torch.ones_like(weights[name])
    save_file(weights, shipped_tiny / "model.safetensors", metadata={"format": "pt"})
    assert sft_cli.cli_main(again) == 1  # the finished re-make is compared again, not retrained
    record = json.loads((shipped_tiny / "sft.json").read_text())[REPRODUCED]
    assert record["identical"] is False and record["differing"] == [name]


def test_a_remake_of_another_config_or_from_a_dirty_tree_is_refused(tmp_path, shipped_tiny, monkeypatch):
    with pytest.raises(ValueError, match="embedded-large was shipped with; these differ: steps"):
        sft_cli.cli_main(_args(tmp_path, "--reproduce", "--steps", "7"))
    monkeypatch.delenv(provenance.ALLOW_DIRTY)
    monkeypatch.setattr(provenance, "changed_files", lambda root=None: ["countdown_study/x.py"])
    with pytest.raises(DirtyTreeError, match="--reproduce: the code differs from its commit in 1 tracked"):
        sft_cli.cli_main(_args(tmp_path, "--reproduce", "--root", str(tmp_path / "again")))
    assert not (tmp_path / "again").exists()  # refused before anything trained


def test_the_teacher_command_remakes_only_its_recorded_config():
    from countdown_study.cli import build_parser
    from countdown_study.cli import teacher as teacher_cli

    args = build_parser().parse_args(["teacher", "--reproduce", "--steps", "7"])
    with pytest.raises(
        ValueError,
        match="teacher --reproduce trains the config teacher was shipped with; these differ: steps",
    ):
        teacher_cli.cli_main(args)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["teacher", "--reproduce", "--ship"])
