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
