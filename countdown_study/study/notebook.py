"""The opening call of each study notebook: its preset, its runs and the provenance of what it saves.

A study notebook (``notebooks/NN_name.ipynb``) starts with one call and passes the ``meta`` it gets
to every ``outputs.save_table`` / ``outputs.save_figure``:

    result, meta = run_notebook_study("02_baselines", methods, preset, policy)   # notebooks 02-04
    P, meta = notebook_preset("01_tasks_and_solver", preset, seed=seed)           # notebook 01

``meta`` holds relative facts only (notebook, preset, policy, run ids, git state of each run), never a
folder, so executed notebooks and the ``.meta.json`` sidecars read the same on every machine.

Its last cell prints where the outputs went and how many runs were trained or reused:

    print(notebook_summary(meta, result))
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from countdown_study import paths, study
from countdown_study.reporting.outputs import STAGE_ENV, written_by
from countdown_study.study.methods import locate_config, method_config

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
    seeds: int | None = None,
) -> tuple[StudyResult, dict[str, Any]]:
    """Run (or load) every method at every seed of ``preset`` from ``policy``; the result and ``meta``.

    ``meta`` is ``{"notebook", "preset", "policy", "runs"}`` with one ``RUN_FIELDS`` record per
    (method, seed). ``progress`` shows the training bars (off: a notebook's outputs keep no bars).
    ``seeds``: only the preset's first ``seeds`` training seeds (``StudyPreset.first_seeds``; None: all).
    """
    at = study.study_preset(preset, policy=policy).first_seeds(seeds)
    root = paths.runs_dir(preset)
    finished = finished_before(methods, at, root)
    result = study.run_study(methods, at, root=root, progress=progress)
    keys = zip(result.runs["method"], result.runs["seed"], strict=True)
    reused = [finished[key] for key in keys]
    meta = {"notebook": notebook, "preset": preset, "policy": policy, "runs": run_records(result)}
    return replace(result, runs=result.runs.assign(reused=reused)), meta


def finished_before(methods: Sequence[Method], preset: StudyPreset, root) -> dict[tuple[str, int], bool]:
    """Whether each (method name, seed) run of ``preset`` is already finished in the store at ``root``."""
    return {
        (method.name, seed): locate_config(method.kind, method_config(method, preset, seed), root).is_done
        for method, seed in preset.method_seeds(methods)
    }


def run_records(result: StudyResult) -> list[dict[str, Any]]:
    """One ``RUN_FIELDS`` record per run of ``result`` (run ids, not folders)."""
    runs = result.runs
    return runs[[c for c in RUN_FIELDS if c in runs.columns]].to_dict("records")


def notebook_summary(meta: Mapping[str, Any], *results: StudyResult) -> str:
    """Where a notebook's tables and figures went, and how many of its runs were trained or reused.

    ``meta`` names the notebook and preset; ``results`` are its studies (``run_notebook_study``: a run
    counts as reused when it had finished before the notebook asked for it). Folders are shown relative to
    the project (``paths.display_path``), so executed copies name no folder of the machine.
    """
    notebook, preset = str(meta["notebook"]), str(meta["preset"])
    tables, figures = (written_by(meta, kind) for kind in ("tables", "figures"))
    lines = [
        f"{notebook} at the {preset} preset: {count(len(tables), 'table')}, {count(len(figures), 'figure')}"
    ]
    lines += [f"  tables    {paths.display_path(paths.tables_dir(preset))}/"] if tables else []
    lines += [f"  figures   {paths.display_path(paths.figures_dir(preset))}/"] if figures else []
    if os.environ.get(STAGE_ENV):  # run by ``countdown-study run``: the executed copy is kept
        lines.append(f"  executed  {paths.display_path(paths.executed_dir(preset))}/{notebook}.ipynb")
    runs = pd.concat([r.runs for r in results], ignore_index=True) if results else pd.DataFrame()
    if len(runs):
        runs = runs.drop_duplicates("run_id")
        reused = int(runs["reused"].sum()) if "reused" in runs else 0
        lines.append(
            f"  runs      {paths.display_path(paths.runs_dir(preset))}/: {count(len(runs), 'run')}, "
            f"{len(runs) - reused} trained, {reused} reused"
        )
    return "\n".join(lines)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: ``1 table``, ``0 tables``, ``3 tables``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
