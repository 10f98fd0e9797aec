"""The study grid: every (notebook, method, seed) run of some notebooks at a preset, planned without a model.

``NOTEBOOK_STUDIES`` names the method rows of each notebook's ``run_notebook_study`` calls and the
notebook parameter naming their starting policy; the notebooks take their rows from it
(``notebook_methods``), so each list is written once. ``plan_grid`` turns notebooks at a preset into
``PlannedRun``s, one per run id (a run several notebooks share, such as uniform RLOO, once), each with the
config and run id ``run_method`` gives it (``method.method_config``, ``method.locate_config``). ``train_grid`` runs the planned runs
with an executor (``runs.executor``: a local process pool or a Ray cluster); the notebooks then find
every run finished and load it. ``packing_lines`` says how an executor places the runs on this machine
(runs at once, runs per GPU, CPU threads per run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from countdown_study import paths
from countdown_study.runs.events import describe
from countdown_study.runs.executor import (
    Execution,
    ExecutorConfig,
    Job,
    available_cores,
    execute,
    local_packing,
)
from countdown_study.runs.store import is_finished
from countdown_study.study import rows, scale
from countdown_study.study.method import Method, locate_config, method_config
from countdown_study.study.methods import run_config
from countdown_study.study.presets import StudyPreset, study_preset
from countdown_study.study.synthesis import MAIN_METHODS, SEARCH_METHODS, SWEEP_METHODS

# ---------------------------------------------------------------------------------------------------
# What each notebook runs
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotebookStudy:
    """One ``run_notebook_study`` call of a notebook."""

    methods: tuple[Method, ...]
    """Its method rows, in the notebook's order."""
    policy_parameter: str = "policy"
    """The notebook parameter naming the rows' starting policy (``-p policy ...``)."""
    default_policy: str = "embedded"
    """That parameter's value in the notebook."""
    block: str = ""
    """Its name among the notebook's calls where it makes more than one (``notebook_methods``)."""
    seeds: int | None = None
    """At most this many training seeds, the preset's first (``StudyPreset.first_seeds``; None: all of
    them): notebook 09 compares every size on the same five, however many the preset has."""
    optional: bool = False
    """Skipped, with no runs planned, while its policy is a shipped name not shipped yet (``scale.unshipped``):
    the notebook skips such a call with a message (notebook 09's other sizes); a folder or hub id is run."""


NOTEBOOK_STUDIES: dict[str, tuple[NotebookStudy, ...]] = {
    "01_tasks_and_solver": (),
    "02_baselines": (
        NotebookStudy(
            (rows.SFT, rows.IPO, rows.UNIFORM, rows.UNIFORM_REPLACEMENT, rows.UNIFORM_SEQUENCE_SUM)
        ),
    ),
    "03_curricula_000": (NotebookStudy((rows.UNIFORM, *rows.REPORT_000, *rows.REPORT_000_ABLATIONS)),),
    "04_sliding_window_001": (NotebookStudy((*rows.REPORT_001, *rows.REPORT_001_ABLATIONS)),),
    "05_feature_space_curriculum_002": (
        NotebookStudy((rows.SFT, rows.IPO, rows.UNIFORM, rows.CONTROL_002, *rows.REPORT_002)),
    ),
    "06_solution_count_vcc_003": (
        NotebookStudy(
            (
                rows.SFT,
                rows.IPO,
                *rows.REPORT_003,
                *rows.REPORT_003_THRESHOLD,
                *rows.REPORT_003_COMMIT,
                *SWEEP_METHODS,
            ),
            default_policy=rows.SEARCH_POLICY,
            block="search",
        ),
        NotebookStudy(
            (rows.UNIFORM, *rows.REPORT_003_EMBEDDED, *rows.REPORT_003_THRESHOLD_EMBEDDED),
            policy_parameter="embedded_policy",
            block="embedded",
        ),
    ),
    "07_adsc_004": (NotebookStudy(rows.REPORT_004),),
    "08_field_baselines": (
        NotebookStudy((rows.SFT, rows.UNIFORM, *rows.FIELD_BASELINES, *rows.FIELD_CURRICULA)),
    ),
    "90_synthesis": (
        NotebookStudy(MAIN_METHODS, block="main"),
        NotebookStudy(
            SEARCH_METHODS,
            policy_parameter="search_policy",
            default_policy=rows.SEARCH_POLICY,
            block="search",
        ),
        NotebookStudy(
            SWEEP_METHODS, policy_parameter="search_policy", default_policy=rows.SEARCH_POLICY, block="sweep"
        ),
    ),
    "09_scale": tuple(
        NotebookStudy(scale.ROWS, size.parameter, size.policy, size.name, scale.SEEDS, optional=True)
        for size in sorted(scale.SIZES, key=lambda size: size.name != "embedded")  # the notebook's order
    ),
}
"""Each study notebook's ``run_notebook_study`` calls, by notebook stem, in the notebook's order: the one
list of the rows each notebook runs (the notebooks read theirs with ``notebook_methods``)."""


def notebook_studies(notebook: str) -> tuple[NotebookStudy, ...]:
    """The studies of the notebook with stem ``notebook``; one missing from the registry fails."""
    if notebook not in NOTEBOOK_STUDIES:
        raise ValueError(f"notebook {notebook!r} has no entry in study.grid.NOTEBOOK_STUDIES")
    return NOTEBOOK_STUDIES[notebook]


def notebook_methods(notebook: str, block: str = "") -> tuple[Method, ...]:
    """The method rows the notebook ``notebook`` (stem) runs in its study ``block`` (``NotebookStudy.block``;
    "" for a notebook with one study), in order: what the notebook passes to ``run_notebook_study``."""
    studies = notebook_studies(notebook)
    found = [study for study in studies if study.block == block]
    if len(found) != 1:
        blocks = [study.block for study in studies]
        raise ValueError(f"notebook {notebook!r} has no study block {block!r}; its blocks: {blocks}")
    return found[0].methods


# ---------------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRun:
    """One run of the grid: the config ``run_method`` runs and the rows that ask for it."""

    run_id: str
    """Its id in the run store."""
    kind: str
    """``sft``, ``ipo`` or ``rloo`` (``Method.kind``)."""
    config: Any
    """``EvalRunConfig``, ``IPOConfig`` or ``TrainConfig`` (``methods.method_config``)."""
    rows: tuple[tuple[str, str, int], ...]
    """(notebook, method name, seed) of every row asking for this run."""


def grid_rows(
    notebooks: Iterable[str], preset: str, parameters: Mapping[str, Any] | None = None
) -> list[tuple[str, Method, StudyPreset]]:
    """(notebook, method, study preset) of every method row of ``notebooks`` (stems) at ``preset``, the
    preset's policy set from ``parameters`` (the notebooks' ``-p`` values) as the notebook sets it; an
    optional study whose policy is not shipped yet is left out (``NotebookStudy.optional``)."""
    parameters = parameters or {}
    rows = []
    for notebook in notebooks:
        for study in notebook_studies(notebook):
            policy = parameters.get(study.policy_parameter, study.default_policy)
            if study.optional and scale.unshipped({study.block: policy}):
                continue
            at = study_preset(preset, policy=policy).first_seeds(study.seeds)
            rows.extend((notebook, method, at) for method in study.methods)
    return rows


def plan_runs(rows: Iterable[tuple[str, Method, StudyPreset]]) -> list[PlannedRun]:
    """One ``PlannedRun`` per run id of ``rows`` at every seed of each row's preset, in row order."""
    planned: dict[str, PlannedRun] = {}
    for notebook, method, preset in rows:
        for seed in preset.seeds:  # each row has its own preset: no list of methods to pair
            config = method_config(method, preset, seed)
            run_id = locate_config(method.kind, config).run_id
            asked = (notebook, method.name, seed)
            known = planned.get(run_id)
            rows_of = (*known.rows, asked) if known else (asked,)
            planned[run_id] = PlannedRun(run_id, method.kind, config, rows_of)
    return list(planned.values())


def plan_grid(
    notebooks: Iterable[str], preset: str, parameters: Mapping[str, Any] | None = None
) -> list[PlannedRun]:
    """Every run the notebooks (stems) ask for at ``preset``, once each (``grid_rows``, ``plan_runs``)."""
    return plan_runs(grid_rows(notebooks, preset, parameters))


# ---------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------


def run_planned(run: PlannedRun, root: str) -> str:
    """Finish ``run`` in the store at ``root`` (in a worker) and return its run id.

    A worker whose package or starting policy differs from the driver's would compute another run id:
    it is refused before anything runs.
    """
    here = locate_config(run.kind, run.config, root).run_id
    if here != run.run_id:
        raise RuntimeError(
            f"run {run.run_id} is {here} on this worker: "
            "its package or starting policy differs from the driver's"
        )
    return run_config(run.kind, run.config, root=root, progress=False).run_id


def grid_jobs(planned: Sequence[PlannedRun], root: str | Path) -> list[Job]:
    """An executor job per planned run: its CPUs are its torch threads, a GPU when it runs on ``cuda``, a
    GPU where the cluster has one when it runs on ``auto``."""
    jobs = []
    for run in planned:
        device = getattr(run.config, "device", "cpu")
        jobs.append(
            Job(
                run_id=run.run_id,
                call=run_planned,
                args=(run, str(Path(root).resolve())),
                label=describe(run.config),
                cpus=run.config.threads,
                gpus=int(device == "cuda"),
                gpu_if_any=device == "auto",
            )
        )
    return jobs


def train_grid(
    notebooks: Iterable[str],
    preset: str,
    parameters: Mapping[str, Any] | None = None,
    executor: ExecutorConfig | None = None,
    root: str | Path | None = None,
) -> Execution:
    """Plan the notebooks' grid and finish every run with ``executor`` in the store at ``root``
    (the preset's, ``paths.runs_dir(preset)``, by default); runs finished before are skipped, failures are
    returned."""
    root = Path(root) if root is not None else paths.runs_dir(preset)
    planned = plan_grid(notebooks, preset, parameters)
    return execute(grid_jobs(planned, root), root, executor)


def packing_lines(planned: Sequence[PlannedRun], executor: ExecutorConfig) -> list[str]:
    """How ``executor`` runs ``planned`` on this machine, for the command's output: runs at once, GPUs and
    runs per GPU, CPU threads per run (``runs.executor.local_packing``; raises where it refuses)."""
    jobs = grid_jobs(planned, ".")
    torch_threads = "/".join(str(t) for t in sorted({job.cpus for job in jobs}))
    on_gpu = sum(job.gpus > 0 or job.gpu_if_any for job in jobs)
    if executor.backend == "ray":
        share = "a whole one" if executor.runs_per_gpu is None else f"1/{executor.runs_per_gpu} of one"
        return [
            f"ray: each run asks for its torch threads ({torch_threads}) as CPUs; {on_gpu} of {len(jobs)} "
            f"runs on a GPU (device cuda, or auto where the cluster has one), each asking for {share}"
        ]
    cores = available_cores()
    packing = local_packing(jobs, executor)
    if packing is None or not packing.slots:
        workers = executor.workers or max(1, cores // max(job.cpus for job in jobs))
        unpacked = f"local: {workers} runs at once ({cores} cores; torch threads per run: {torch_threads})"
        return [unpacked] if packing is None else [f"local: {packing.note}", unpacked]
    gpus, slots = packing.gpus, packing.slots
    threads = slots[0].threads
    line = (
        f"local: {len(gpus)} GPU(s) ({', '.join(gpus)}) x {packing.runs_per_gpu} runs per GPU = {len(slots)} "
        f"runs at once; CPU threads per run: {threads} of {cores} cores; "
        f"torch threads per run: {torch_threads}"
    )
    if max(job.cpus for job in jobs) > threads:
        line += " (more than its share: the cores are oversubscribed)"
    return [line]


# ---------------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------------

RUN_STATES = ("finished", "started", "waiting")
"""A planned run's state in the store: finished (``DONE``), started (its folder exists: running, or killed
and resumable) or waiting (no folder yet)."""


def grid_progress(planned: Sequence[PlannedRun], root: str | Path) -> pd.DataFrame:
    """Where each planned run stands in the store at ``root``: one row per (notebook, run) with the
    notebook's method rows (``rows``; ``method``, the first one's name), its starting ``policy``, ``run_id``,
    ``kind``, ``state``
    (``RUN_STATES``), ``steps_logged`` (complete lines of its step log), ``steps`` (the run's planned steps
    where its config names them: RLOO runs) and ``wall_seconds`` (a finished run's, ``_wall_seconds``), in
    the notebooks' order."""
    root = Path(root)
    rows = []
    for run in planned:
        folder = root / run.run_id
        state = "finished" if is_finished(folder) else "started" if folder.is_dir() else "waiting"
        logged = _complete_lines(folder / "steps.jsonl")
        notebooks = dict.fromkeys(notebook for notebook, _, _ in run.rows)
        wall = _wall_seconds(folder) if state == "finished" else None
        for notebook in notebooks:
            names = ", ".join(dict.fromkeys(f"{m} (seed {s})" for nb, m, s in run.rows if nb == notebook))
            method = next(m for nb, m, _ in run.rows if nb == notebook)
            rows.append(
                {"notebook": notebook, "rows": names, "method": method, "policy": run.config.data.policy,
                 "run_id": run.run_id, "kind": run.kind,
                 "state": state, "steps_logged": logged, "steps": getattr(run.config, "steps", None),
                 "wall_seconds": wall}
            )  # fmt: skip
    columns = [
        "notebook",
        "rows",
        "method",
        "policy",
        "run_id",
        "kind",
        "state",
        "steps_logged",
        "steps",
        "wall_seconds",
    ]
    table = pd.DataFrame(rows, columns=columns).astype({"steps": "Int64", "wall_seconds": "Float64"})
    return table.sort_values("notebook", kind="stable", ignore_index=True)  # stems start with their number


def progress_summary(progress: pd.DataFrame) -> pd.DataFrame:
    """Runs per state for each notebook of ``grid_progress``, in its order, and a last row ``all`` counting
    each distinct run once (a run several notebooks share counts in each of theirs)."""

    def counts(table: pd.DataFrame) -> dict[str, int]:
        by_state = table["state"].value_counts()
        return {state: int(by_state.get(state, 0)) for state in RUN_STATES} | {"planned": len(table)}

    rows = [{"notebook": nb, **counts(g)} for nb, g in progress.groupby("notebook", sort=False)]
    rows.append({"notebook": "all", **counts(progress.drop_duplicates("run_id"))})
    return pd.DataFrame(rows, columns=["notebook", *RUN_STATES, "planned"])


def hours_left(progress: pd.DataFrame) -> pd.Series:
    """Estimated run-hours of the unfinished runs of ``grid_progress``, per notebook and ``all`` (each distinct
    run once): each run at the median wall time of the finished runs of its method row from its policy (any
    notebook; a larger policy's runs take longer), else of its notebook's finished runs of its kind from its
    policy, a started RLOO run at the share of its steps left; NA where
    a notebook has unfinished runs and nothing to estimate them from. Wall times include waiting for the
    cores the runs shared, and a run resumed across sessions counts its pause: a rough estimate."""
    finished = progress[progress["state"] == "finished"].dropna(subset="wall_seconds")
    by_method = finished.drop_duplicates("run_id").groupby(["method", "policy"])["wall_seconds"].median()
    by_kind = finished.groupby(["notebook", "kind", "policy"])["wall_seconds"].median()  # each notebook's own

    def estimate(run) -> float:
        kind = by_kind.get((run.notebook, run.kind, run.policy), float("nan"))
        seconds = by_method.get((run.method, run.policy), kind)
        if run.state == "started" and not pd.isna(run.steps) and run.steps > 0:
            seconds *= max(0.0, 1.0 - run.steps_logged / run.steps)
        return seconds / 3600

    left = progress[progress["state"] != "finished"]
    hours = pd.Series([estimate(run) for run in left.itertuples()], index=left.index, dtype=float)

    def total(index) -> float:
        return float(hours.loc[index].sum(skipna=False)) if len(index) else 0.0

    per_notebook = {
        nb: total(left.index[left["notebook"] == nb]) for nb in dict.fromkeys(progress["notebook"])
    }
    per_notebook["all"] = total(left.drop_duplicates("run_id").index)
    return pd.Series(per_notebook, name="hours_left")


def _wall_seconds(folder: Path) -> float | None:
    """Seconds from a finished run's ``started`` to its ``finished`` (``provenance.json``), or None."""
    try:
        record = json.loads((folder / "provenance.json").read_text())
        seconds = datetime.fromisoformat(record["finished"]) - datetime.fromisoformat(record["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return seconds.total_seconds()


def _complete_lines(path: Path) -> int:
    """Newline-terminated lines of a file (0 when it does not exist): a torn last line is not counted."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0
