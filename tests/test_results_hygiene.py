"""Committed results name no folder of this machine: every file git tracks under ``results/``."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINE_PATHS = (str(ROOT), "/root/", "/home/")
"""What a path of this machine starts with: the repository's own folder, a home folder."""


def tracked_results() -> list[Path]:
    """The files git tracks under ``results/`` (skips the test outside a git checkout)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "results/"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed.stdout.split("\0") if name]


def machine_paths_in(path: Path) -> list[str]:
    """The machine paths the bytes of ``path`` contain (text or not)."""
    content = path.read_bytes()
    return [needle for needle in MACHINE_PATHS if needle.encode() in content]


def test_tracked_results_name_no_folder_of_this_machine():
    files = [path for path in tracked_results() if path.is_file()]  # a file deleted but still indexed: skip
    assert files, "git tracks no results"
    found = {str(path.relative_to(ROOT)): hits for path in files if (hits := machine_paths_in(path))}
    assert found == {}


# ---------------------------------------------------------------------------------------------------
# A small preset's runs stay out of the committed store
# ---------------------------------------------------------------------------------------------------


def git_ignores(path: str) -> bool:
    """Whether git ignores ``path`` (relative to the repository) by the rules of ``.gitignore``."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, check=False)
    if done.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    return done.returncode == 0


def test_only_the_full_presets_runs_are_committed_where_they_are(monkeypatch):
    from countdown_study import paths

    monkeypatch.delenv("COUNTDOWN_STUDY_RESULTS", raising=False)
    monkeypatch.delenv("COUNTDOWN_STUDY_ROOT", raising=False)
    assert paths.runs_dir() == paths.runs_dir("full") == ROOT / "results" / "runs"
    for preset in ("tiny", "quick"):
        store = paths.runs_dir(preset)
        assert store == ROOT / "results" / "presets" / preset / "runs"
        assert git_ignores(f"{store.relative_to(ROOT)}/rloo-0123456789ab/config.json")
        assert git_ignores(f"{paths.executed_dir(preset).relative_to(ROOT)}/failed/02_baselines.ipynb")
    assert not git_ignores("results/runs/rloo-0123456789ab/config.json")


def test_a_study_at_a_small_preset_writes_its_runs_under_the_preset(tmp_path, monkeypatch):
    from countdown_study import study

    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))
    store = study.run_method(study.SFT, study.study_preset("tiny"), seed=0, progress=False)
    assert store.path.parent == tmp_path / "presets" / "tiny" / "runs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["presets"]  # nothing in <results>/runs


def test_runs_status_reads_the_presets_own_store(tmp_path, monkeypatch, capsys):
    from countdown_study.cli import main

    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))
    assert main(["runs", "status", "02", "--preset", "tiny"]) == 0
    assert capsys.readouterr().out.startswith(
        f"runs of the tiny preset in {tmp_path / 'presets/tiny/runs'}\n"
    )
