"""Bounds of the command line: sizes from the machine and the data, output paths, policy folders, a full
disk, ``-p`` against the notebooks' parameters cells, repeated and unsolvable evaluation tasks, task values
at load. Each refusal is one line, exit status 2, before any run folder is made or any work is done."""

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from countdown_study.cli import bounds, main
from countdown_study.cli import run as cli_run
from countdown_study.countdown import Task, load_tasks
from countdown_study.countdown.load import MAX_NUMBER, MAX_TARGET, TaskRowError
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR

GIB = 1 << 30


def _fail(*args, **kwargs):
    pytest.fail("the work started")


@pytest.fixture
def no_work(monkeypatch):
    """Every command's work fails the test if it starts; the machine has 16 GiB available."""
    from countdown_study.policy import model
    from countdown_study.study import pipeline
    from countdown_study.training import loop, sft, teacher_train

    for module, name in (
        (loop, "train"),
        (sft, "train_sft"),
        (teacher_train, "train_proposer"),
        (model, "load_policy"),
        (pipeline, "run_notebooks"),
    ):
        monkeypatch.setattr(module, name, _fail)
    import countdown_study.policy

    monkeypatch.setattr(countdown_study.policy, "load_policy", _fail)
    monkeypatch.setattr(bounds, "host_memory", lambda: 16 * GIB)


def _refused(argv, capsys) -> str:
    """Run ``argv``; it must exit 2 with one line on stderr, which is returned."""
    try:
        status = main(argv)
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert len(err.splitlines()) == 1, err
    return err


# ---------------------------------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------------------------------

CPUS = os.cpu_count()
SIZE_CASES = [
    # (argv, the one line's message after "error: "). Batches: sequences x (32 prompt + new tokens) x bytes
    # per token, 8,212 for the embedded policy (8,192 of keys and values + 20 of rollout), 8,192 for the
    # SFT and proposer model (no rollout): 8e9 x 128 x 8,212 B = 7.5 PiB; 3.2e9 x 128 x 8,212 = 3.0 PiB;
    # 1e8 x 256 x 8,192 = 190.7 TiB; eval, 5 tasks x 1e8 x (32 + 224) x 8,212 = 956.0 TiB.
    (["train", "--steps", "1000000000000"], "--steps must be at most 100,000 (the cap: about a week of "
     "6-second steps), got 1,000,000,000,000"),
    (["train", "--threads", "10000"],
     f"--threads must be at most {CPUS:,} (the CPUs of this machine), got 10,000"),
    (["train", "--eval-limit", "1000000"],
     "--eval-limit must be at most 1,000 (the held-out tasks that exist), got 1,000,000"),
    (["train", "--prompts-per-step", "1000000000"],
     "--prompts-per-step 1000000000 x --group-size 8: 8,000,000,000 sequences x 128 tokens need at least "
     "7.5 PB for one batch, more than the 16.0 GB of memory available"),
    (["train", "--group-size", "100000000"],
     "--prompts-per-step 32 x --group-size 100000000: 3,200,000,000 sequences x 128 tokens need at least "
     "3.0 PB for one batch, more than the 16.0 GB of memory available"),
    (["sft", "--steps", "1000000"], "--steps must be at most 100,000"),
    (["sft", "--threads", "10000"], "--threads must be at most"),
    (["sft", "--batch-size", "100000000"],
     "--batch-size 100000000: 100,000,000 sequences x 256 tokens need at least 190.7 TB for one batch"),
    (["teacher", "--steps", "1000000"], "--steps must be at most 100,000"),
    (["teacher", "--threads", "10000"], "--threads must be at most"),
    (["teacher", "--batch-size", "100000000"], "--batch-size 100000000: 100,000,000 sequences x 256 tokens"),
    (["eval", "--tasks", "generated:5:0", "--n", "100000000"],
     "--batch-size 32 x --n 100000000: 500,000,000 sequences x 256 tokens need at least 956.0 TB"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), SIZE_CASES, ids=[" ".join(c[0][:3]) for c in SIZE_CASES])
def test_sizes_beyond_the_machine_or_the_data_are_refused_before_any_run_folder(
    argv, expected, capsys, tmp_path, no_work
):
    root = ["--root", str(tmp_path)] if argv[0] != "eval" else []
    line = _refused([*argv, *root], capsys)
    assert line.startswith(f"countdown-study {argv[0]}: error: {expected}"), line
    assert not list(tmp_path.iterdir())


def test_the_held_out_count_and_shipped_names_match_the_library():
    from countdown_study.countdown.load import limit_spec
    from countdown_study.policy import EMBEDDED_POLICIES
    from countdown_study.training.specs import HELD_OUT

    assert limit_spec(HELD_OUT, bounds.HELD_OUT_TASKS) == HELD_OUT  # the source holds that many ...
    assert limit_spec(HELD_OUT, bounds.HELD_OUT_TASKS - 1) != HELD_OUT  # ... and no fewer
    assert {name: bounds.shipped_policy_dir(name) for name in bounds.SHIPPED_POLICIES} == EMBEDDED_POLICIES


def test_memory_floor_of_a_batch_worked_example():
    # The embedded policy: 4 layers, 4 key/value heads of 64 -> 2 x 4 x 256 x 4 bytes = 8,192 per token.
    config = json.loads((EMBEDDED_CHECKPOINT_DIR / "config.json").read_text())
    assert bounds.model_kv_shape(config) == (4, 256)
    assert bounds.kv_bytes_per_token(4, 256) == 8192
    assert bounds.policy_bytes_per_token(EMBEDDED_CHECKPOINT_DIR) == 8192 + bounds.ROLLOUT_BYTES_PER_TOKEN
    assert bounds.policy_bytes_per_token(None) == bounds.ROLLOUT_BYTES_PER_TOKEN  # a hub id: rollouts only
    # Grouped-query attention (Qwen2.5-0.5B's shape): 2 key/value heads of 896 / 14 = 64.
    qwen = {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896}
    assert bounds.model_kv_shape(qwen) == (24, 128)
    assert bounds.model_kv_shape({"hidden_size": 8}) is None
    # The full preset's step, 32 prompts x 8 x (32 + 96) tokens: 268.4 MB, far below any machine here.
    assert bounds.batch_memory_bytes(32 * 8, 128, 8212) == 269_090_816
    bounds.check_batch_memory("P x G", 32 * 8, 128, 8212, available=1 * GIB)
    with pytest.raises(ValueError, match=r"^P x G: 256 sequences x 128 tokens need at least 256.6 MB"):
        bounds.check_batch_memory("P x G", 32 * 8, 128, 8212, available=100 << 20)
    bounds.check_batch_memory("P x G", 10**12, 128, 8212, available=None)  # unknown memory: not checked


def test_host_memory_is_what_the_machine_says():
    available = bounds.host_memory()
    assert available is not None and 0 < available <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


FAST_CHECK = """
import sys
from countdown_study.cli import main
status = main({argv!r})
print(status, ",".join(sorted(m for m in ("torch", "transformers") if m in sys.modules)))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--steps", "1000000000000"],
        ["train", "--threads", "10000"],
        ["sft", "--steps", "1000000"],
        ["teacher", "--threads", "10000"],
        ["eval", "--tasks", "generated:5:0", "--json", "{tmp}/missing/out.json"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_argument_errors_come_before_torch_loads(argv, tmp_path):
    argv = [a.format(tmp=tmp_path) for a in argv]
    argv = [*argv, "--root", str(tmp_path)] if argv[0] != "eval" else argv  # a store of its own, whatever
    done = subprocess.run(  # happens (a refusal that failed would start the work: the timeout stops it)
        [sys.executable, "-c", FAST_CHECK.format(argv=argv)], capture_output=True, text=True, check=True,
        timeout=120,
    )  # fmt: skip
    assert done.stdout.split() == ["2"], done.stdout  # exit 2 and none of torch, transformers imported
    assert len(done.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------------
# Output paths and policy folders
# ---------------------------------------------------------------------------------------------------


def test_eval_output_into_a_missing_folder_is_refused_before_the_evaluation(capsys, tmp_path, no_work):
    out = tmp_path / "missing" / "out.json"
    line = _refused(["eval", "--tasks", "generated:5:0", "--json", str(out)], capsys)
    assert line == f"countdown-study eval: error: --json {out}: folder {out.parent} does not exist"
    line = _refused(["eval", "--tasks", "generated:5:0", "--table", str(tmp_path)], capsys)
    assert line == f"countdown-study eval: error: --table {tmp_path}: is a folder; give a file name"


def test_a_run_store_that_is_a_file_is_refused(capsys, tmp_path, no_work):
    store = tmp_path / "store"
    store.write_text("")
    line = _refused(["train", "--root", str(store)], capsys)
    assert line == f"countdown-study train: error: --root {store}: is a file, not a folder"


def _policy_copy(tiny_policy: str, folder: Path) -> Path:
    shutil.copytree(tiny_policy, folder)
    return folder


def _corrupt_config(folder: Path) -> str:
    (folder / "config.json").write_text('{"model_type": "qwen2",')
    return f"--policy {folder}: config.json is not valid JSON"


def _no_weights(folder: Path) -> str:
    (folder / "model.safetensors").unlink()
    return f"--policy {folder}: no weights (*.safetensors or *.bin) in the folder"


def _truncated_weights(folder: Path) -> str:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    return f"--policy: {weights}: truncated (tensor data ends at byte"


@pytest.mark.parametrize(
    "damage", [_corrupt_config, _no_weights, _truncated_weights], ids=lambda f: f.__name__
)
def test_train_from_a_broken_policy_folder_leaves_no_run_folder(
    damage, tiny_policy, capsys, tmp_path, monkeypatch
):
    from countdown_study.training import loop

    folder = _policy_copy(tiny_policy, tmp_path / "policy")
    expected = damage(folder)
    store = tmp_path / "runs"
    store.mkdir()
    monkeypatch.setattr(loop, "run_training", _fail)  # the real train() up to its run body
    line = _refused(["train", "--policy", str(folder), "--root", str(store)], capsys)
    assert line.startswith(f"countdown-study train: error: {expected}"), line
    assert not list(store.iterdir())  # no orphan run folder


def test_an_intact_policy_folder_passes(tiny_policy):
    bounds.check_policy_folder("--policy", Path(tiny_policy))
    bounds.check_policy_folder("--policy", EMBEDDED_CHECKPOINT_DIR)


# ---------------------------------------------------------------------------------------------------
# A full disk
# ---------------------------------------------------------------------------------------------------

TORCH_SAVE_ON_A_FULL_DISK = RuntimeError(
    "[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534"
)
"""What ``torch.save`` raised on a full 64 KiB tmpfs (it does not say why)."""
SAFETENSORS_ON_A_FULL_DISK = "Error while serializing: I/O error: No space left on device (os error 28)"
"""What ``safetensors.torch.save_file`` raised there."""


def _raises(error):
    def fail(*args, **kwargs):
        raise error

    return fail


def test_a_full_disk_is_one_line_naming_the_run_store(capsys, monkeypatch, tmp_path):
    from countdown_study.training import loop

    monkeypatch.setattr(loop, "train", _raises(TORCH_SAVE_ON_A_FULL_DISK))
    monkeypatch.setattr(bounds, "free_bytes", lambda path: 0)
    line = _refused(["train", "--root", str(tmp_path)], capsys)
    assert line.startswith(f"countdown-study train: error: no space left on device writing {tmp_path} (")


def test_a_full_disk_named_by_the_error_itself(capsys, monkeypatch, tmp_path):
    from countdown_study.training import loop

    monkeypatch.setattr(loop, "train", _raises(Exception(SAFETENSORS_ON_A_FULL_DISK)))
    line = _refused(["train", "--root", str(tmp_path)], capsys)
    assert line == (f"countdown-study train: error: no space left on device writing {tmp_path} "
                    f"({SAFETENSORS_ON_A_FULL_DISK})")  # fmt: skip
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "runs" / "steps.jsonl"))
    monkeypatch.setattr(loop, "train", _raises(full))
    line = _refused(["train", "--root", str(tmp_path)], capsys)
    assert line.startswith(f"countdown-study train: error: no space left on device writing {full.filename} (")


def test_a_full_results_folder_is_named_not_a_json_error(capsys, monkeypatch, tmp_path, no_work):
    from countdown_study.paths import preset_dir
    from countdown_study.study import pipeline

    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))

    truncated = nbformat.reader.NotJSONError("Notebook does not appear to be JSON: ''")
    monkeypatch.setattr(pipeline, "run_notebooks", _raises(truncated))
    monkeypatch.setattr(bounds, "free_bytes", lambda path: 512)
    line = _refused(["run", "01", "--preset", "tiny"], capsys)
    assert line.startswith(
        f"countdown-study run: error: no space left on device writing {preset_dir('tiny')} ("
    )


def test_a_refusal_on_a_nearly_full_disk_says_what_it_refused(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bounds, "free_bytes", lambda path: 0)
    line = _refused(["train", "--eval-limit", "0", "--root", str(tmp_path)], capsys)
    assert line == "countdown-study train: error: --eval-limit must be at least 1, got 0"


def test_other_errors_with_room_on_disk_keep_their_traceback(monkeypatch, tmp_path):
    from countdown_study.training import loop

    monkeypatch.setattr(loop, "train", _raises(TORCH_SAVE_ON_A_FULL_DISK))
    with pytest.raises(RuntimeError, match="enforce fail"):
        main(["train", "--root", str(tmp_path)])


# ---------------------------------------------------------------------------------------------------
# run -p against the notebooks' parameters cells
# ---------------------------------------------------------------------------------------------------

MISMATCHES = [
    # (value, the default's source, refused)
    ("embedded-search", '"embedded"', False),
    (123, '"embedded"', True),  # a number where text is expected
    (True, '"embedded"', True),  # YAML's yes / true
    (3, "0", False),
    (3, "0.5", False),  # an int stands for a float
    (1.5, "0", True),
    (True, "0", True),  # a bool is not a count
    ("x", "None", False),  # a None default takes anything
    ("x", "make_default()", False),  # not a literal: not checked
]


@pytest.mark.parametrize(("value", "default", "refused"), MISMATCHES)
def test_parameter_types_follow_the_cell_defaults(value, default, refused):
    assert (cli_run.parameter_mismatch(value, default) is not None) == refused


def test_run_p_with_a_wrong_type_or_name_is_refused_before_any_notebook_runs(capsys, no_work):
    line = _refused(["run", "02", "--preset", "tiny", "-p", "policy", "123"], capsys)
    assert line == (
        "countdown-study run: error: -p policy: 02_baselines.ipynb takes a value of type str like its "
        'default "embedded", got 123 (int) (quote it to pass text)'
    )
    line = _refused(["run", "02", "--preset", "tiny", "-p", "no_such_param", "3"], capsys)
    assert line == (
        "countdown-study run: error: -p no_such_param: no such parameter in the notebooks' parameters "
        "cells (they take: policy)"
    )


def _notebook(path: Path, source: str) -> Path:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": kernel}), path)
    return path


def test_parameters_are_checked_against_every_selected_notebook_and_a_corrupt_one_is_named(tmp_path):
    a = _notebook(tmp_path / "01_a.ipynb", 'preset = "quick"\nseed = 0')
    b = _notebook(tmp_path / "02_b.ipynb", 'preset = "quick"\nseed = 0.5')
    cli_run.check_notebook_parameters({"seed": 2}, [a, b])
    with pytest.raises(
        ValueError, match=r"^-p seed: 01_a\.ipynb takes a value of type int like its default 0, got 0\.25"
    ):
        cli_run.check_notebook_parameters({"seed": 0.25}, [a, b])
    broken = tmp_path / "03_c.ipynb"
    broken.write_text('{"cells": [')
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(broken))}: not a notebook, its JSON is corrupt or truncated$"
    ):
        cli_run.check_notebook_parameters({"seed": 2}, [a, broken])


# ---------------------------------------------------------------------------------------------------
# Evaluation tasks: repeated, unsolvable, values bounded at load
# ---------------------------------------------------------------------------------------------------


def test_repeated_tasks_count_once_and_unsolvable_ones_are_counted():
    from countdown_study.cli.eval import task_set_warnings

    tasks = [Task((1, 2, 3), 6), Task((3, 2, 1), 6), Task((1, 1, 1), 100), Task((2, 3, 4), 24)]
    unique, found = task_set_warnings(tasks)
    assert unique == [tasks[0], tasks[2], tasks[3]]  # the reordered repeat of task 0 is dropped
    assert found == [
        "1 of 4 tasks repeat an earlier task (same numbers and target): each is evaluated once",
        "1 of 3 tasks have no solution (exact solver): they count as failures",
    ]
    assert task_set_warnings(tasks[:1]) == (tasks[:1], [])


def test_eval_warns_and_evaluates_each_task_once(tiny_policy, capsys, tmp_path):
    rows = [([1, 2, 3], 6), ([3, 2, 1], 6), ([1, 1, 1], 100)]
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps({"nums": n, "target": t}) + "\n" for n, t in rows))
    out = tmp_path / "out.json"
    argv = ["eval", "--policy", tiny_policy, "--tasks", str(source), "--n", "2", "--max-new-tokens", "4"]
    assert main([*argv, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["num_tasks"] == 2
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert warnings[:2] == [
        "countdown-study eval: warning: 1 of 3 tasks repeat an earlier task (same numbers and target): "
        "each is evaluated once",
        "countdown-study eval: warning: 1 of 2 tasks have no solution (exact solver): they count as failures",
    ]


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        (
            {"target": 1e30, "nums": [1, 2, 3]},
            "target",
            "1e+30 is above the largest allowed target 1,000,000",
        ),
        ({"target": MAX_TARGET + 1, "nums": [1, 2, 3]}, "target", "is above the largest allowed target"),
        (
            {"target": 6, "nums": [1, 2, 10**7]},
            "nums",
            "number 2 (10000000) is above the largest allowed number",
        ),
    ],
)
def test_targets_and_numbers_are_bounded_at_load(row, field, reason, tmp_path):
    source = tmp_path / "tasks.jsonl"
    source.write_text(json.dumps({"target": 6, "nums": [1, 2, 3]}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(TaskRowError, match=re.escape(f"row 1, field '{field}': ") + ".*" + re.escape(reason)):
        load_tasks(source)
    edge = [Task((1, 2, MAX_NUMBER), MAX_TARGET)]
    assert load_tasks(edge) == edge  # the bounds themselves are allowed


def test_eval_refuses_a_huge_target_at_load_in_one_line(capsys, tmp_path, no_work):
    source = tmp_path / "tasks.jsonl"
    source.write_text(json.dumps({"target": 1e30, "nums": [1, 2, 3]}) + "\n")
    line = _refused(["eval", "--tasks", str(source)], capsys)
    assert line == (
        f"countdown-study eval: error: {source}: row 0, field 'target': 1e+30 is above the largest allowed "
        "target 1,000,000"
    )
