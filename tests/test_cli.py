"""The command line: every mistake is one line on stderr naming what is wrong, exit status 2."""

import pytest

from countdown_study.cli import main

CASES = [
    # (argv, words the one line must contain)
    (["train", "--eval-limit", "-1"], "eval_limit must be at least 1, got -1"),
    (["train", "--eval-limit", "0"], "eval_limit must be at least 1, got 0"),
    (["train", "--lr", "nan"], "lr must be a finite number > 0, got nan"),
    (["train", "--seed", "-1"], "seed must be a non-negative integer, got -1"),
    (["train", "--sampler", "nope"], "unknown sampler 'nope'"),
    (["train", "--steps", "x"], "argument --steps: invalid int value: 'x'"),
    (["train", "--policy", "/no/such/folder"], "policy '/no/such/folder' is neither an existing folder"),
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


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="lr must be a finite number"):
        main(["--debug", "train", "--lr", "nan"])


def test_runs_verify_on_a_missing_store_is_one_line(capsys, tmp_path):
    assert main(["runs", "verify", "--root", str(tmp_path / "none")]) == 2
    assert (
        capsys.readouterr().err.strip() == f"countdown-study runs: error: no run store at {tmp_path / 'none'}"
    )
