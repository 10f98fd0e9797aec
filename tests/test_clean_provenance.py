"""Runs that feed the committed tables come from a clean tree: a new run in the committed store is refused
from a dirty one (or made with a loud warning on request), and ``runs verify`` counts the dirty runs."""

import json
import subprocess
import warnings

import pytest

from countdown_study import paths
from countdown_study.cli import main
from countdown_study.runs import provenance
from countdown_study.runs.provenance import (
    ALLOW_DIRTY,
    DirtyTreeError,
    changed_files,
    check_clean_tree,
    dirty_provenance_warnings,
    shipped_dirty_warnings,
)
from countdown_study.runs.store import RunStore
from countdown_study.study import methods
from countdown_study.training.loop import TrainConfig


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_changed_files_are_the_tracked_code_outside_results(tmp_path):
    _git(tmp_path, "init", "-q")
    for name in ("code.py", "results/table.csv"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("a\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    assert changed_files(tmp_path) == []
    (tmp_path / "results/table.csv").write_text("b\n")  # outputs a study writes: not dirty
    (tmp_path / "notes.txt").write_text("untracked\n")  # untracked: not dirty
    assert changed_files(tmp_path) == []
    (tmp_path / "code.py").write_text("b\n")
    assert changed_files(tmp_path) == ["code.py"]


def test_a_dirty_tree_is_refused_or_warned_about(monkeypatch):
    monkeypatch.setattr(provenance, "changed_files", lambda root=None: ["a.py", "b.py", "c.py", "d.py"])
    monkeypatch.delenv(ALLOW_DIRTY, raising=False)
    with pytest.raises(DirtyTreeError, match=r"run x: .* 4 tracked files \(a.py, b.py, c.py and 1 more\).*"):
        check_clean_tree("run x")
    monkeypatch.setenv(ALLOW_DIRTY, "1")
    with pytest.warns(UserWarning, match=f"DIRTY TREE: run x: .*{ALLOW_DIRTY}=1"):
        check_clean_tree("run x")
    monkeypatch.setattr(provenance, "changed_files", lambda root=None: [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_clean_tree("run x")  # clean: nothing to say


def test_only_new_runs_in_the_committed_store_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv(ALLOW_DIRTY, raising=False)
    monkeypatch.setattr(provenance, "changed_files", lambda root=None: ["a.py"])
    made = []
    monkeypatch.setattr(methods, "train", lambda config, root=None, **kw: made.append(root) or "trained")
    config = TrainConfig()
    with pytest.raises(DirtyTreeError, match="committed run store"):
        methods.run_config("rloo", config, root=paths.runs_dir())
    assert made == []
    other = tmp_path / "quick-runs"
    assert methods.run_config("rloo", config, root=other) == "trained"  # not the committed store
    store = methods.locate_config("rloo", config, root=paths.runs_dir())
    store.path.mkdir(parents=True)
    (store.path / "DONE").write_text("")  # finished: it loads from any tree
    assert methods.run_config("rloo", config, root=paths.runs_dir()) == "trained"
    assert made == [other, paths.runs_dir()]


def _finished(root, name, dirty):
    store = RunStore.open({"name": name}, root=root)
    store.start(seed=0)
    store.finish({"pass@1": 0.5})
    record = store.provenance()
    (store.path / "provenance.json").write_text(json.dumps({**record, "git_dirty": dirty, "git_sha": "abc"}))
    return store


def test_verify_counts_dirty_runs_as_a_warning_and_passes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(paths, "CHECKPOINTS_DIR", tmp_path / "no-checkpoints")
    (tmp_path / "no-checkpoints").mkdir()
    for name, dirty in (("a", True), ("b", False), ("c", True)):
        _finished(tmp_path, name, dirty)
    assert main(["runs", "verify", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: 2 of 3 finished runs were made from a tree with uncommitted code changes" in out
    assert "(git_dirty in provenance.json; 1 commits): a-" in out and "; 0 problems; 1 warnings" in out
    assert dirty_provenance_warnings({"r": {"git_dirty": False}, "s": {}}) == []


def test_verify_names_each_shipped_checkpoint_trained_from_a_dirty_tree(tmp_path, capsys, monkeypatch):
    checkpoints = tmp_path / "checkpoints"
    for name, record, body in (
        ("clean", "sft.json", {"git_sha": "1111", "git_dirty": False}),
        ("dirty", "sft.json", {"git_sha": "abcdef1234567890", "git_dirty": True}),
        ("proposer", "teacher.json", {"git_sha": "2222", "git_dirty": True}),
        ("unreadable", "sft.json", None),
    ):
        (checkpoints / name).mkdir(parents=True)
        (checkpoints / name / record).write_text("{not json" if body is None else json.dumps(body))
    assert shipped_dirty_warnings(checkpoints) == [
        "the shipped checkpoint dirty was trained from a tree with uncommitted code changes (sft.json: git_dirty "
        "at abcdef123456) (`--reproduce` of the command that trained it checks whether a clean commit makes the "
        "same weights); the runs that start from it inherit this, and training it again from a clean commit to "
        "other weights changes its digest and so their run ids",
        "the shipped checkpoint proposer was trained from a tree with uncommitted code changes (teacher.json: "
        "git_dirty at 2222) (`--reproduce` of the command that trained it checks whether a clean commit makes "
        "the same weights); the runs that start from it inherit this, and training it again from a clean commit "
        "to other weights changes its digest and so their run ids",
    ]
    monkeypatch.setattr(paths, "CHECKPOINTS_DIR", checkpoints)
    (tmp_path / "runs").mkdir()
    assert main(["runs", "verify", "--root", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: the shipped checkpoint") == 2 and "; 0 problems; 2 warnings" in out
