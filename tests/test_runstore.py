"""Run store: config ids, atomic writes, the DONE marker, provenance."""

import json
import subprocess
import sys
from dataclasses import dataclass

import pandas as pd
import pytest
import torch

import countdown_study
from countdown_study import paths
from countdown_study.runs import store as runstore
from countdown_study.runs.files import atomic_path, atomic_write_text, canonical_json
from countdown_study.runs.provenance import git_state
from countdown_study.runs.store import (
    RunBusyError,
    RunNotFinishedError,
    RunStore,
    run_id,
    run_or_load,
)


@dataclass(frozen=True)
class ToyConfig:
    """A stand-in for a training config."""

    name: str = "toy run"
    """Readable prefix."""
    lr: float = 1e-5
    """Learning rate."""
    seed: int = 3
    """Seed."""
    ks: tuple[int, ...] = (1, 2)
    """Anything nested."""


# ---------------------------------------------------------------------------------------------------
# Ids
# ---------------------------------------------------------------------------------------------------


def test_same_config_same_id_and_readable_prefix():
    assert run_id(ToyConfig()) == run_id(ToyConfig())
    assert run_id(ToyConfig()).startswith("toy-run-")
    assert len(run_id(ToyConfig()).rsplit("-", 1)[1]) == runstore.HASH_CHARS


def test_different_config_different_id():
    ids = {
        run_id(ToyConfig()),
        run_id(ToyConfig(lr=2e-5)),
        run_id(ToyConfig(seed=4)),
        run_id(ToyConfig(ks=(1,))),
    }
    assert len(ids) == 4
    # The same fields under another config type are another run.
    assert run_id({"name": "toy run", "lr": 1e-5, "seed": 3, "ks": [1, 2]}) != run_id(ToyConfig())


def test_identity_changes_the_id_and_is_kept_beside_the_config(tmp_path):
    plain = run_id(ToyConfig())
    old_weights = run_id(ToyConfig(), identity={"policy": "sha256:aa"})
    new_weights = run_id(ToyConfig(), identity={"policy": "sha256:bb"})
    assert len({plain, old_weights, new_weights}) == 3
    store = RunStore.open(ToyConfig(), root=tmp_path, identity={"policy": "sha256:aa"})
    assert store.run_id == old_weights
    assert json.loads((store.path / "identity.json").read_text()) == {"policy": "sha256:aa"}
    store.start(seed=0)
    assert (store.path / "identity.json").exists()  # a fresh attempt keeps it
    (store.path / "identity.json").write_text('{"policy": "sha256:cc"}')
    with pytest.raises(ValueError, match="different identity"):
        RunStore.open(ToyConfig(), root=tmp_path, identity={"policy": "sha256:aa"})


def test_dict_configs_are_canonical():
    assert run_id({"b": 1, "a": (2, 3)}) == run_id({"a": [2, 3], "b": 1})
    assert canonical_json({"b": 1, "a": (2, 3)}) == '{"a":[2,3],"b":1}'
    assert run_id({"a": 1}, prefix="My Run!").startswith("my-run-")


def test_config_refuses_unserialisable_and_nan():
    with pytest.raises(TypeError, match="cannot put a object"):
        run_id({"x": object()})
    with pytest.raises(ValueError):
        run_id({"x": float("nan")})


# ---------------------------------------------------------------------------------------------------
# Atomic writes
# ---------------------------------------------------------------------------------------------------


def test_atomic_write_leaves_no_partial_file_when_writer_raises(tmp_path):
    target = tmp_path / "table.txt"
    with pytest.raises(RuntimeError, match="crash midway"), atomic_path(target) as tmp:
        tmp.write_text("half of the ")
        raise RuntimeError("crash midway")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too


def test_atomic_write_keeps_old_content_when_writer_raises(tmp_path):
    target = tmp_path / "results.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("new but incomp")
        raise RuntimeError("crash midway")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    atomic_write_text(target, "new")
    assert target.read_text() == "new"


# ---------------------------------------------------------------------------------------------------
# Life cycle and the DONE marker
# ---------------------------------------------------------------------------------------------------


def test_open_start_log_finish_load(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    assert store.path == tmp_path / store.run_id
    assert json.loads((store.path / "config.json").read_text()) == json.loads(canonical_json(ToyConfig()))
    assert not store.is_done
    store.start()
    assert store.provenance()["seed"] == 3  # taken from the config
    store.log_step({"step": 0, "loss": 1.5})
    store.log_step({"step": 1, "loss": float("nan")})
    table = pd.DataFrame({"task_index": [0, 1], "nums": [[1, 2, 3], [4, 5, 6, 7]], "reward": [1.0, 0.1]})
    store.write_table("eval_final", table)
    with pytest.raises(RunNotFinishedError, match="not finished"):
        store.load_results()
    store.finish({"pass@1": 0.25, "by_num_count": {"3": {"pass@1": 0.5}}})
    assert store.is_done

    again = RunStore.open(ToyConfig(), root=tmp_path)
    assert again.is_done
    assert again.load_results() == {"pass@1": 0.25, "by_num_count": {"3": {"pass@1": 0.5}}}
    steps = again.read_steps()
    assert steps[0] == {"step": 0, "loss": 1.5} and steps[1]["step"] == 1
    loaded = again.read_table("eval_final")
    assert loaded["nums"].map(list).tolist() == [[1, 2, 3], [4, 5, 6, 7]]
    assert again.provenance()["finished"] is not None
    with pytest.raises(RuntimeError, match="is finished"):
        again.start()


def test_finish_needs_start(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    with pytest.raises(RuntimeError, match="never started"):
        store.finish({})
    assert not store.is_done


def test_crash_while_finishing_leaves_no_done_marker(tmp_path, monkeypatch):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    store.start()

    def failing_write(path, text):
        raise OSError("disk full")

    monkeypatch.setattr(runstore, "atomic_write_text", failing_write)
    with pytest.raises(OSError, match="disk full"):
        store.finish({"pass@1": 0.5})
    monkeypatch.undo()
    assert not store.is_done
    with pytest.raises(RunNotFinishedError):
        store.load_results()


def test_run_or_load_runs_once_and_reruns_after_a_crash(tmp_path):
    calls = []

    def crashing(store):
        store.log_step({"step": 0})
        calls.append("crash")
        raise KeyboardInterrupt

    def training(store):
        store.log_step({"step": 0})
        calls.append("train")
        return {"mean_score": 0.4}

    with pytest.raises(KeyboardInterrupt):
        run_or_load(ToyConfig(), crashing, root=tmp_path)
    assert not RunStore.open(ToyConfig(), root=tmp_path).is_done
    assert run_or_load(ToyConfig(), training, root=tmp_path) == {"mean_score": 0.4}
    assert run_or_load(ToyConfig(), training, root=tmp_path) == {"mean_score": 0.4}  # loaded, not trained
    assert calls == ["crash", "train"]
    # The crashed attempt's log was cleared when the fresh attempt started.
    assert RunStore.open(ToyConfig(), root=tmp_path).read_steps() == [{"step": 0}]


def test_complete_continues_an_attempt_only_from_its_checkpoint(tmp_path):
    def crashing(store):
        store.log_step({"step": 0})
        if with_checkpoint:
            (store.checkpoint_dir / "last.pt").write_text("weights")
        raise KeyboardInterrupt

    def resuming(store):
        steps = store.read_steps()
        store.log_step({"step": len(steps)})
        return {"steps_seen_before": len(steps)}

    for with_checkpoint, seen in ((True, 1), (False, 0)):
        store = RunStore.open(ToyConfig(lr=float(with_checkpoint)), root=tmp_path)
        with pytest.raises(KeyboardInterrupt):
            store.complete(crashing, resume_checkpoint="last.pt")
        started = store.provenance()["started"]
        assert store.complete(resuming, resume_checkpoint="last.pt") is store
        assert store.load_results() == {"steps_seen_before": seen}
        assert len(store.read_steps()) == seen + 1
        if with_checkpoint:  # the same attempt went on: its provenance was kept
            assert store.provenance()["started"] == started


def test_complete_sets_threads_before_provenance_and_loads_a_finished_run(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    before = torch.get_num_threads()
    try:
        store.complete(lambda s: {"threads": torch.get_num_threads()}, threads=1)
        assert store.provenance()["torch_threads"] == 1
        assert store.complete(lambda s: pytest.fail("a finished run ran again")).load_results() == {
            "threads": 1
        }
    finally:
        torch.set_num_threads(before)


def test_complete_without_waiting_refuses_a_held_run(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    with store.lock(), pytest.raises(RunBusyError, match=store.run_id):
        store.complete(lambda s: pytest.fail("ran a held run"), wait=False)
    assert not store.is_done


def test_torn_last_step_line_is_skipped(tmp_path):
    store = RunStore.open({"name": "torn"}, root=tmp_path)
    store.start(seed=0)
    store.log_step({"step": 0})
    with open(store.path / "steps.jsonl", "a") as handle:
        handle.write('{"step": 1, "lo')  # a crash in the middle of an append
    assert store.read_steps() == [{"step": 0}]


def test_open_refuses_a_folder_with_another_config(tmp_path):
    store = RunStore.open({"a": 1}, root=tmp_path)
    (store.path / "config.json").write_text('{"a": 2}')
    with pytest.raises(ValueError, match="different config"):
        RunStore.open({"a": 1}, root=tmp_path)


def test_default_root_is_the_runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))
    store = RunStore.open({"a": 1})
    assert store.path.parent == paths.runs_dir() == tmp_path / "runs"


def test_checkpoint_dir_is_git_ignored(tmp_path):
    store = RunStore.open({"a": 1}, root=tmp_path)
    folder = store.checkpoint_dir
    assert folder == store.path / "checkpoints"
    assert (folder / ".gitignore").read_text() == "*\n"


# ---------------------------------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------------------------------


def _head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=paths.project_root(), capture_output=True, text=True, check=True
    ).stdout.strip()


def test_provenance_fields_and_git_sha(tmp_path):
    before = _head()
    store = RunStore.open({"name": "prov"}, root=tmp_path)
    store.start(seed=11)
    after = _head()
    record = store.provenance()
    assert record["git_sha"] in {before, after}  # other commits may land meanwhile
    assert isinstance(record["git_dirty"], bool)
    packages = {"torch", "transformers", "numpy", "tokenizers", "pandas", "countdown_study"}
    assert set(record["packages"]) == packages
    assert record["packages"]["countdown_study"] == countdown_study.__version__
    assert record["seed"] == 11
    assert record["torch_threads"] >= 1
    assert record["started"] and record["finished"] is None
    store.finish()
    finished = store.provenance()
    assert finished["finished"] >= finished["started"]
    assert json.loads((store.path / "DONE").read_text())["finished"] == finished["finished"]


def test_git_state_outside_a_repository(tmp_path):
    assert git_state(tmp_path) == {"git_sha": None, "git_dirty": None}


def test_lock_is_exclusive_and_freed_on_exit(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    with store.lock(), pytest.raises(RunBusyError, match=store.run_id), store.lock(wait=False):
        pass  # another open file description: as another process would see it
    with store.lock(wait=False):
        store.start(seed=0)  # a fresh attempt keeps the lock file it runs under
        assert (store.path / runstore.LOCK).exists()


def test_a_killed_holder_frees_the_lock(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
         str(store.path / runstore.LOCK)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(RunBusyError), store.lock(wait=False):
        pass
    holder.kill()
    holder.wait()
    with store.lock(wait=False):
        pass


def test_git_state_counts_code_changes_not_study_outputs(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "table.csv").write_text("a\n1\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    assert git_state(tmp_path)["git_dirty"] is False
    (tmp_path / "results" / "table.csv").write_text("a\n2\n")  # a study rewriting its tables
    (tmp_path / "new.py").write_text("y = 2\n")  # untracked
    assert git_state(tmp_path)["git_dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_state(tmp_path)["git_dirty"] is True


def test_results_are_group_readable_and_kill_leftovers_are_cleaned(tmp_path):
    from countdown_study.runs.files import FILE_MODE, remove_temporaries

    target = tmp_path / "table.csv"
    atomic_write_text(target, "a\n")
    assert target.stat().st_mode & 0o777 == FILE_MODE and FILE_MODE & 0o040  # group can read
    left = tmp_path / "sub" / ".table.csv.abc123.tmp"  # what a kill inside atomic_path leaves
    left.parent.mkdir()
    left.write_text("half")
    assert remove_temporaries(tmp_path) == [left] and not left.exists() and target.exists()


def test_a_field_added_later_keeps_old_run_ids_at_its_default():
    import dataclasses

    from countdown_study.runs.files import OMIT_AT_DEFAULT, canonical_json

    @dataclasses.dataclass(frozen=True)
    class Before:
        seed: int = 0

    @dataclasses.dataclass(frozen=True)
    class After:
        seed: int = 0
        extra: tuple = dataclasses.field(default=(), metadata=OMIT_AT_DEFAULT)

    assert canonical_json(After()) == canonical_json(Before()) == '{"seed":0}'
    assert canonical_json(After(extra=(("ood", "ood:3:0"),))) == '{"extra":[["ood","ood:3:0"]],"seed":0}'


# ---------------------------------------------------------------------------------------------------
# Finished runs: the step log, leftovers, markers from before checksums
# ---------------------------------------------------------------------------------------------------


def test_finish_refuses_a_gapped_step_log(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)
    store.start()
    for step in (0, 2):
        store.log_step({"step": step})
    with pytest.raises(
        runstore.RunCorruptError, match=rf"run {store.run_id}: steps.jsonl does not hold steps 0..2"
    ):
        store.finish({"steps": 3}, steps=3)
    assert not store.is_done and not (store.path / "results.json").exists()


def test_resuming_a_run_removes_the_temporary_files_a_kill_left(tmp_path):
    store = RunStore.open(ToyConfig(), root=tmp_path)

    def killed(s):
        (s.checkpoint_dir / "last.pt").write_text("weights")
        (s.path / "tables").mkdir()
        for left in (s.path / ".results.json.k1.tmp", s.path / "tables" / ".eval.parquet.k2.tmp"):
            left.write_text("half")  # what a kill inside atomic_path leaves
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.complete(killed, resume_checkpoint="last.pt")
    seen = []
    store.complete(lambda s: seen.extend(s.path.rglob(".*.tmp")) or {}, resume_checkpoint="last.pt")
    assert seen == [] and not list(store.path.rglob(".*.tmp")) and store.verify() == []


def _plain_run(root, steps: list[int], results: str = '{"steps": 3}') -> RunStore:
    """A run finished the way runs finished before ``DONE`` recorded checksums: a bare time stamp."""
    store = RunStore.open(ToyConfig(), root=root)
    store.start()
    for step in steps:
        store.log_step({"step": step})
    (store.path / "results.json").write_text(results)
    (store.path / runstore.DONE).write_text("2026-11-22T11:22:37+00:00\n")
    return store


def test_a_plain_marker_run_is_checked_for_its_step_log_and_results(tmp_path):
    assert _plain_run(tmp_path / "ok", [0, 1, 2]).verify() == []
    gapped = _plain_run(tmp_path / "gap", [0, 2])
    assert gapped.verify() == [f"{gapped.path / 'steps.jsonl'}: does not hold steps 0..2 once each (2 lines)"]
    with pytest.raises(runstore.RunCorruptError, match=rf"run {gapped.run_id} is corrupt: .*steps.jsonl"):
        gapped.load_results()
    garbled = _plain_run(tmp_path / "garbled", [0, 1, 2], results='{"steps": 3, "eval": {')
    (problem,) = garbled.verify()
    assert problem.startswith(f"{garbled.path / 'results.json'}: not valid JSON")
    no_log = _plain_run(tmp_path / "no_log", [])
    assert no_log.verify() == [f"{no_log.path / 'steps.jsonl'}: missing (the run finished 3 steps)"]
    unknown = _plain_run(tmp_path / "eval_only", [], results='{"eval": {"pass@1": 0.5}}')
    assert unknown.verify() == []  # no step count to hold the log to (an evaluation run)


@pytest.mark.parametrize("marker", ["", '{"finished": "2026-11-22T1', "2026-11-2", "\ufffd\ufffd", "[]"])
def test_a_torn_or_garbled_marker_is_reported(tmp_path, marker):
    store = _plain_run(tmp_path, [0, 1, 2])
    (store.path / runstore.DONE).write_text(marker)
    (problem,) = store.verify()
    assert problem.startswith(f"{store.path / runstore.DONE}: torn or garbled marker")


def test_runs_verify_reports_plain_marker_runs(tmp_path, capsys):
    from countdown_study.cli import main

    _plain_run(tmp_path, [0, 1, 2])
    assert main(["runs", "verify", "--root", str(tmp_path)]) == 0
    gapped = _plain_run(tmp_path / "other", [1, 2])
    assert main(["runs", "verify", "--root", str(tmp_path / "other")]) == 1
    out = capsys.readouterr().out
    assert f"{gapped.path / 'steps.jsonl'}: does not hold steps 0..2" in out and "1 problems" in out
