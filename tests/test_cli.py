"""The command line: every mistake is one line on stderr naming what is wrong, exit status 2; parsing
imports no torch."""

import argparse
import json
import subprocess
import sys
from dataclasses import replace

import pytest

from countdown_study.cli import eval as cli_eval
from countdown_study.cli import main
from countdown_study.cli import run as cli_run
from countdown_study.cli import train as cli_train

CASES = [
    # (argv, words the one line must contain)
    (["train", "--eval-limit", "-1"], "--eval-limit must be at least 1, got -1"),
    (["train", "--eval-limit", "0"], "--eval-limit must be at least 1, got 0"),
    (["train", "--lr", "nan"], "lr must be a finite number > 0, got nan"),
    (["train", "--seed", "-1"], "seed must be a non-negative integer, got -1"),
    (["train", "--sampler", "nope"], "unknown sampler 'nope'"),
    (["train", "--steps", "x"], "argument --steps: invalid int value: 'x'"),
    (["train", "--policy", "/no/such/folder"], "policy '/no/such/folder' is neither an existing folder"),
    (["train", "--threads", "0"], "threads must be at least 1, got 0"),
    (
        ["eval", "--tasks", "generated:5:0", "--tokenizer", "/no/tok"],
        "tokenizer '/no/tok' is neither an existing folder nor a Hugging Face id",
    ),
    (
        ["eval", "--tasks", "generated:5:0", "--temperature", "1e-300"],
        "temperature must lie in [0.01, 100.0]",
    ),
    (
        ["eval", "--tasks", "generated:5:0", "--temperature", "inf"],
        "temperature must lie in [0.01, 100.0], got inf",
    ),
    (["eval", "--tasks", "/no/such/tasks.csv"], "/no/such/tasks.csv"),
    (["run", "-p", "preset", "[1, 2]"], "-p preset: set it with --preset"),
    (["run", "-p", "policy", "[1, 2]"], "-p policy: a parameter must be a number, a string or a boolean"),
    (
        ["run", "-p", "foo", "[1"],
        "-p foo: not valid YAML: '[1' (expected ',' or ']', but got '<stream end>')",
    ),
    (["nope"], "invalid choice: 'nope'"),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_mistakes_are_one_line_and_exit_2(argv, expected, capsys, tmp_path):
    try:
        status = main([*argv, *(["--root", str(tmp_path)] if argv[0] == "train" else [])])
    except SystemExit as stop:  # argparse's own errors
        status = stop.code
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("countdown-study") and "error:" in err and expected in err, err
    assert not list(tmp_path.iterdir())  # refused before any run folder was made


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


EVAL_CASES = [
    # (options, the one line's message)
    (["--tasks", "generated:5:0", "--n", "0"], "--n must be at least 1, got 0"),
    (["--tasks", "generated:5:0", "--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["--tasks", "generated:0:0"], "--tasks 'generated:0:0' holds no tasks"),
]


@pytest.mark.parametrize(("options", "expected"), EVAL_CASES, ids=[c[1] for c in EVAL_CASES])
def test_eval_refuses_counts_and_an_empty_task_set_before_loading_the_policy(
    options, expected, capsys, monkeypatch
):
    import countdown_study.policy

    monkeypatch.setattr(countdown_study.policy, "load_policy", lambda *a, **k: pytest.fail("policy loaded"))
    assert main(["eval", *options]) == 2
    assert _one_line_error(capsys) == f"countdown-study eval: error: {expected}"


def _library_errors():
    import datasets
    import yaml

    from countdown_study.runs.store import RunBusyError, RunCorruptError

    corrupt = "run rloo-abc is corrupt: /runs/rloo-abc/results.json: changed since the run finished"
    try:
        yaml.safe_load("[1")
    except yaml.YAMLError as err:
        not_yaml = err
    return [
        (RunCorruptError(corrupt), corrupt),
        (
            RunBusyError("run rloo-abc is being run by another process"),
            "run rloo-abc is being run by another",
        ),
        (not_yaml, 'while parsing a flow sequence in "<unicode string>", line 1, column 1: [1 ^ expected'),
        (
            datasets.exceptions.DatasetGenerationError("An error occurred\n  while generating the dataset"),
            "An error occurred while generating the dataset",
        ),
    ]


def _raises(error: BaseException):
    def fail(*args, **kwargs):
        raise error

    return fail


def test_library_errors_are_one_line_and_exit_2(capsys, monkeypatch, tmp_path):
    from countdown_study.training import loop

    for error, expected in _library_errors():
        monkeypatch.setattr(loop, "train", _raises(error))
        assert main(["train", "--root", str(tmp_path)]) == 2, type(error).__name__
        line = _one_line_error(capsys)
        assert line.startswith("countdown-study train: error: ") and expected in line, line


def test_other_errors_keep_their_traceback(monkeypatch, tmp_path):
    from countdown_study.training import loop

    monkeypatch.setattr(loop, "train", _raises(RuntimeError("CUDA error: device-side assert triggered")))
    with pytest.raises(RuntimeError, match="device-side assert"):
        main(["train", "--root", str(tmp_path)])


def test_an_unreadable_file_in_a_task_folder_is_named_in_one_line(capsys, tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"target": 6, "nums": [1, 2, 3]}\n')
    (folder / "b.jsonl").write_bytes(b'{"target": 6, "nums": [1, 2, 3]}\n\xff\xfe\n')
    assert main(["eval", "--tasks", str(folder)]) == 2
    assert _one_line_error(capsys).startswith(
        f"countdown-study eval: error: {folder / 'b.jsonl'}: cannot read as .jsonl: 'utf-8' codec can't decode"
    )


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="lr must be a finite number"):
        main(["--debug", "train", "--lr", "nan"])


def test_runs_verify_on_a_missing_store_is_one_line(capsys, tmp_path):
    assert main(["runs", "verify", "--root", str(tmp_path / "none")]) == 2
    assert (
        capsys.readouterr().err.strip() == f"countdown-study runs: error: no run store at {tmp_path / 'none'}"
    )


def test_runs_status_counts_the_grid_and_names_started_runs(capsys, tmp_path):
    from countdown_study.study.grid import plan_grid

    [sft, *_] = plan_grid(["02_baselines"], "tiny")
    (tmp_path / sft.run_id).mkdir()
    assert main(["runs", "status", "02", "--preset", "tiny", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"runs of the tiny preset in {tmp_path}"
    assert lines[1].split()[-1] == "hours_left"
    assert lines[2].split() == ["02_baselines", "0", "1", "4", "5", "?"]  # nothing finished to go by
    assert lines[3].split() == ["all", "0", "1", "4", "5", "?"]
    assert lines[4].startswith("hours_left: run-hours of the unfinished runs")
    assert lines[5].split() == ["started", sft.run_id, "02_baselines:", "SFT", "(seed", "0)", "[0", "steps]"]
    assert len(lines) == 6  # waiting runs are listed with --runs only
    # the README's order, notebooks after the options, says the same
    assert main(["runs", "status", "--preset", "tiny", "--root", str(tmp_path), "02"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    with pytest.raises(SystemExit) as exited:
        main(["runs", "verify", "02", "--root", str(tmp_path)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == "countdown-study: error: unrecognized arguments: 02"


PARSE_ONLY = """
import sys
from countdown_study.cli import build_parser
parser = build_parser()
for argv in {argvs!r}:
    parser.parse_args(argv)
heavy = sorted(m for m in ("torch", "transformers", "pandas") if m in sys.modules)
print(",".join(heavy))
"""


def test_parsing_every_command_imports_no_torch():
    """Building the parser and parsing each command's options loads no heavy library (``--help`` is fast)."""
    argvs = [
        ["--debug", "train", "--preset", "paper", "--steps", "3", "--lr", "1e-4"],
        ["sft", "--steps", "7", "--ship"],
        ["eval", "--tasks", "generated:5:0", "--template", "qwen_chat", "--temperature", "0.6"],
        ["run", "01", "--preset", "tiny", "-p", "steps", "3"],
        ["runs", "verify"],
        ["runs", "status", "06", "08", "--preset", "full", "--runs"],
    ]
    done = subprocess.run(
        [sys.executable, "-c", PARSE_ONLY.format(argvs=argvs)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""  # none of torch, transformers, pandas was imported


def test_choices_written_out_in_the_command_line_match_the_library():
    from countdown_study.countdown.prompts import TEMPLATES
    from countdown_study.study.pipeline import PRESETS as STUDY_PRESETS
    from countdown_study.training.loop import PRESETS as TRAIN_PRESETS

    assert tuple(sorted(TRAIN_PRESETS)) == cli_train.PRESET_NAMES
    assert cli_run.PRESET_NAMES == STUDY_PRESETS
    assert tuple(sorted(TEMPLATES)) == cli_eval.TEMPLATE_NAMES


def test_eval_sampling_options_reach_the_config():
    from countdown_study.evaluation.evaluate import EVAL_SAMPLING

    parser = argparse.ArgumentParser()
    cli_eval.configure_parser(parser)
    left_out = parser.parse_args(["--tasks", "generated:5:0"])
    assert cli_eval.sampling_from_args(left_out) == EVAL_SAMPLING
    given = parser.parse_args(["--tasks", "x", "--top-k", "0", "--temperature", "1.5", "--stop-at-answer"])
    expected = replace(EVAL_SAMPLING, top_k=0, temperature=1.5, stop_at_answer=True)
    assert cli_eval.sampling_from_args(given) == expected


def _run_folder(root, run_id, dirty, finished=True, environment=None):
    folder = root / run_id
    folder.mkdir(parents=True)
    record = {"git_sha": "abcdef1234567890", "git_dirty": dirty, **(environment or {})}
    (folder / "provenance.json").write_text(json.dumps(record))
    if finished:
        (folder / "DONE").write_text("")
    return folder


def test_runs_retire_moves_only_finished_dirty_runs(capsys, tmp_path):
    root = tmp_path / "runs"
    _run_folder(root, "rloo-clean", dirty=False)
    _run_folder(root, "rloo-dirty", dirty=True)
    _run_folder(root, "rloo-started", dirty=True, finished=False)  # not finished: it resumes, not retired
    assert main(["runs", "retire", "--dirty", "--dry-run", "--root", str(root)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would retire rloo-dirty (made at abcdef123456 with changes)",
        "1 finished runs made from a dirty tree would be moved",
    ]
    assert sorted(p.name for p in root.iterdir()) == ["rloo-clean", "rloo-dirty", "rloo-started"]
    assert main(["runs", "retire", "--dirty", "--root", str(root)]) == 0
    assert sorted(p.name for p in root.iterdir()) == ["rloo-clean", "rloo-started"]
    assert (tmp_path / "runs.retired" / "rloo-dirty" / "DONE").is_file()
    _run_folder(root, "rloo-dirty", dirty=True)  # made again from a dirty tree: never overwrites the first
    assert main(["runs", "retire", "--dirty", "--root", str(root)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"countdown-study runs: error: already retired under {tmp_path / 'runs.retired'}: rloo-dirty"
    )
    assert (root / "rloo-dirty").is_dir()


def test_runs_retire_other_environment_moves_runs_whose_recorded_environment_differs(capsys, tmp_path):
    """A run is moved when a key both it and this process record differs; a record that predates a key
    (here the CPU capability) is no evidence of another environment."""
    from countdown_study.runs.provenance import environment

    here = environment()
    older = {**here["packages"], "transformers": "0.0.1"}
    root = tmp_path / "runs"
    _run_folder(root, "rloo-here", dirty=False, environment=here)
    _run_folder(root, "rloo-older", dirty=False, environment={**here, "packages": older})
    _run_folder(root, "rloo-unrecorded", dirty=False, environment={"packages": here["packages"]})
    _run_folder(root, "rloo-dirty", dirty=True, environment=here)
    assert main(["runs", "retire", "--other-environment", "--dry-run", "--root", str(root)]) == 0
    current = here["packages"]["transformers"]
    assert capsys.readouterr().out.splitlines() == [
        f"would retire rloo-older (made in another environment: transformers: 0.0.1 vs {current})",
        "1 finished runs made in another environment would be moved",
    ]
    assert main(["runs", "retire", "--dirty", "--other-environment", "--root", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"2 finished runs made from a dirty tree or in another environment moved to {tmp_path / 'runs.retired'}"
    )
    assert sorted(p.name for p in root.iterdir()) == ["rloo-here", "rloo-unrecorded"]
    assert main(["runs", "retire", "--root", str(root)]) == 2
    assert "needs --dirty, --other-environment or both" in capsys.readouterr().err
