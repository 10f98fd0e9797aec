"""Finished runs brought from another run store into this one (``countdown-study runs import``).

A study may be trained elsewhere (a second clone at a clean commit, a cluster's scratch folder) and its
runs brought back into the store the notebooks read. A run is brought over only whole and checked:

* only a finished run (``DONE``) whose result files match the checksums ``DONE`` records;
* never one made from a dirty tree (its provenance records ``git_dirty``): a committed table must come
  from clean commits;
* what git leaves out of a run folder stays behind (``LEFT_BEHIND``: checkpoints, raw samples, the lock);
* a run this store already holds is kept when both record the same provenance and results (``same``);
  it is replaced only when this store's copy was made from a dirty tree or in another environment than
  this process's and the incoming one was made from a clean tree in this environment (a run retired and
  trained again elsewhere under the same id): the copy it replaces is moved to ``<root>.retired/``, as
  ``runs retire`` would have moved it, so nothing is lost. Any other difference is a conflict, left for
  the user to decide, and nothing is changed.

A run is copied into a hidden folder of the store, checked again there, and renamed into place, so an
interrupted import leaves no half-copied run that looks finished. Functions of folders; no torch.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from countdown_study.runs.provenance import environment_mismatch, environments_differ
from countdown_study.runs.run_checks import environment_difference, result_checksums, verify_results
from countdown_study.runs.run_ids import is_finished

LEFT_BEHIND = ("checkpoints", "samples*", ".lock")
"""What a run folder holds that is not brought over (what ``.gitignore`` leaves out of ``results/runs``)."""
ACTIONS = ("import", "replace", "same", "refuse")
"""What ``plan_import`` decides for one incoming run."""
STAGING_PREFIX = ".importing-"
"""Prefix of the hidden folder a run is copied into before it is renamed into place."""


@dataclass(frozen=True)
class Incoming:
    """What to do with one finished run of the source store."""

    run_id: str
    """The run's id (its folder name in both stores)."""
    action: str
    """One of ``ACTIONS``."""
    reason: str
    """Why, in words (empty for a plain import)."""


def _provenance(folder: Path) -> dict:
    """A run folder's ``provenance.json`` (empty when it cannot be read)."""
    try:
        record = json.loads((folder / "provenance.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def _outdated(record: dict, here: dict) -> list[str]:
    """Why a run here may be replaced by one trained again: made from a dirty tree, or in another
    environment than ``here`` (empty: neither)."""
    why = ["made from a dirty tree"] if record.get("git_dirty") else []
    differing = environment_difference(record, here)
    return [*why, f"made in another environment ({'; '.join(differing)})"] if differing else why


def _same_origin(a: dict, b: dict) -> bool:
    """Whether two provenance records name the same commit, dirty flag and environment."""
    same_commit = a.get("git_sha") == b.get("git_sha") and a.get("git_dirty") == b.get("git_dirty")
    return same_commit and not environments_differ(a, b)


def decide(incoming: Path, present: Path | None, here: dict) -> Incoming:
    """What to do with the finished run folder ``incoming`` given this store's folder of the same id
    (``present``, None when absent) and this process's environment ``here`` (``this_environment``)."""
    run_id = incoming.name
    problems = verify_results(incoming)
    if problems:
        return Incoming(run_id, "refuse", f"corrupt: {'; '.join(problems)}")
    record = _provenance(incoming)
    kept = _provenance(present) if present is not None else None
    same_results = present is not None and result_checksums(incoming) == result_checksums(present)
    if kept is not None and same_results and _same_origin(kept, record):
        return Incoming(run_id, "same", "")
    if record.get("git_dirty") is not False:
        made = "from a dirty tree" if record.get("git_dirty") else "without a recorded clean tree"
        return Incoming(run_id, "refuse", f"made {made} at {(record.get('git_sha') or 'unknown')[:12]}")
    if kept is None:
        differing = environment_difference(record, here)
        note = f"made in another environment ({'; '.join(differing)})" if differing else ""
        return Incoming(run_id, "import", note)
    outdated = _outdated(kept, here)
    if outdated and not environment_difference(record, here):
        results = "results identical" if same_results else "results differ"
        return Incoming(run_id, "replace", f"the run here was {' and '.join(outdated)}; {results}")
    differing = environment_mismatch(kept, record) or [
        "results differ" if not same_results else "same results"
    ]
    origin = f"here {str(kept.get('git_sha'))[:12]}, incoming {str(record.get('git_sha'))[:12]}"
    return Incoming(run_id, "refuse", f"conflict with the run here ({origin}; {'; '.join(differing)})")


def plan_import(source: Path, root: Path, here: dict) -> list[Incoming]:
    """``decide`` for every finished run folder of ``source`` against the store ``root``, in id order;
    unfinished runs (still running or killed) are not part of the plan."""
    if not source.is_dir():
        raise FileNotFoundError(f"no run store at {source}")
    if source.resolve() == root.resolve():
        raise ValueError(f"the source store is this store: {source}")
    plan = []
    for folder in sorted(source.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir() or not is_finished(folder):
            continue
        present = root / folder.name
        plan.append(decide(folder, present if present.is_dir() else None, here))
    return plan


def copy_run(incoming: Path, root: Path) -> Path:
    """Copy the run folder ``incoming`` into ``root`` under a hidden name, less ``LEFT_BEHIND``, and check its
    results there; return the hidden folder (the caller renames it into place). A copy that does not check
    is removed and ``RuntimeError`` names its problems."""
    staged = root / f"{STAGING_PREFIX}{incoming.name}"
    if staged.exists():
        shutil.rmtree(staged)  # left by an interrupted import: never a finished run
    shutil.copytree(incoming, staged, ignore=shutil.ignore_patterns(*LEFT_BEHIND))
    problems = verify_results(staged)
    if problems:
        shutil.rmtree(staged)
        raise RuntimeError(f"run {incoming.name} changed while it was copied: {'; '.join(problems)}")
    return staged


def apply_import(source: Path, root: Path, plan: list[Incoming]) -> None:
    """Carry out ``plan``: copy each run to import or replace (``copy_run``), move a replaced run to
    ``<root>.retired/<id>`` (refusing, before anything is copied, when a run is already retired under that
    id), then rename the copy into place."""
    retired = root.with_name(root.name + ".retired")
    taken = [item.run_id for item in plan if item.action == "replace" and (retired / item.run_id).exists()]
    if taken:
        raise FileExistsError(f"already retired under {retired}: {', '.join(taken)}")
    root.mkdir(parents=True, exist_ok=True)
    for item in plan:
        if item.action not in ("import", "replace"):
            continue
        staged = copy_run(source / item.run_id, root)
        if item.action == "replace":
            retired.mkdir(exist_ok=True)
            (root / item.run_id).rename(retired / item.run_id)
        staged.rename(root / item.run_id)
