"""The opening call of each study notebook: its preset, its runs and the provenance of what it saves.

A study notebook (``notebooks/NN_name.ipynb``) starts with one call and passes the ``meta`` it gets
to every ``outputs.save_table`` / ``outputs.save_figure``:

    result, meta = run_notebook_study("02_baselines", methods, preset, policy)   # notebooks 02-04
    P, meta = notebook_preset("01_tasks_and_solver", preset, seed=seed)           # notebook 01

``meta`` holds relative facts only (notebook, preset, policy, run ids, git state of each run), never a
folder, so executed notebooks and the ``.meta.json`` sidecars read the same on every machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from countdown_study import study

if TYPE_CHECKING:
    from countdown_study.study import Method, StudyPreset, StudyResult

RUN_FIELDS = ("method", "seed", "kind", "run_id", "git_sha", "git_dirty", "started", "finished")
"""Columns of ``StudyResult.runs`` recorded in a notebook's ``meta["runs"]`` (its run folder is not)."""


def notebook_preset(notebook: str, preset: str, **fields: Any) -> tuple[StudyPreset, dict[str, Any]]:
    """The study preset ``preset`` and the notebook's provenance ``meta``.

    ``meta`` is ``{"notebook": notebook, "preset": preset, **fields}``; ``fields`` name what else the
    notebook's outputs depend on (e.g. ``seed``).
    """
    return study.study_preset(preset), {"notebook": notebook, "preset": preset, **fields}


def run_notebook_study(
    notebook: str,
    methods: Sequence[Method],
    preset: str,
    policy: str = "embedded",
    progress: bool = False,
) -> tuple[StudyResult, dict[str, Any]]:
    """Run (or load) every method at every seed of ``preset`` from ``policy``; the result and ``meta``.

    ``meta`` is ``{"notebook", "preset", "policy", "runs"}`` with one ``RUN_FIELDS`` record per
    (method, seed). ``progress`` shows the training bars (off: a notebook's outputs keep no bars).
    """
    result = study.run_study(methods, study.study_preset(preset, policy=policy), progress=progress)
    meta = {"notebook": notebook, "preset": preset, "policy": policy, "runs": run_records(result)}
    return result, meta


def run_records(result: StudyResult) -> list[dict[str, Any]]:
    """One ``RUN_FIELDS`` record per run of ``result`` (run ids, not folders)."""
    runs = result.runs
    return runs[[c for c in RUN_FIELDS if c in runs.columns]].to_dict("records")
