"""Running a study: every (method, seed) of its rows through the run store, and the results gathered.

A study is a list of ``Method`` rows (``study.method``; the reports' rows are in ``study.rows``) run at a
``StudyPreset``; identical configs share one run in the store (the uniform RLOO baseline is trained once
and reused by every notebook). ``run_study`` returns a ``StudyResult``: the per-sample verdict tables and
step logs of every (method, seed). The names of ``study.method`` and ``study.rows`` are importable from
here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from countdown_study import paths
from countdown_study.policy import library_bars
from countdown_study.runs.provenance import check_clean_tree
from countdown_study.runs.store import RunBusyError, RunStore
from countdown_study.study import rows
from countdown_study.study.method import (
    EMBEDDED_MODEL,
    MODEL_LABELS,
    RUN_PREFIXES,
    Method,
    evaluation_changes,
    locate_config,
    method_config,
    model_label,
)
from countdown_study.study.presets import StudyPreset, evaluate_policy_run, study_preset
from countdown_study.study.rows import *  # noqa: F403  (every row, as before the rows had a module)
from countdown_study.training.common import study_tasks
from countdown_study.training.ipo import train_ipo
from countdown_study.training.loop import train

__all__ = [
    *rows.__all__,
    "EMBEDDED_MODEL",
    "MODEL_LABELS",
    "RUN_PREFIXES",
    "Method",
    "StudyResult",
    "check_committed_provenance",
    "eval_set_result",
    "evaluation_changes",
    "gather_study",
    "locate_config",
    "method_config",
    "model_label",
    "run_all",
    "run_config",
    "run_method",
    "run_study",
    "sampler_records",
    "training_pool",
]


def check_committed_provenance(store: RunStore) -> None:
    """Refuse to make a run in the committed run store (``paths.runs_dir()``, the full preset's: its runs
    feed the committed tables) from a tree whose code differs from its commit
    (``runs.provenance.check_clean_tree``; ``$COUNTDOWN_STUDY_ALLOW_DIRTY=1`` warns instead). A finished run
    loads from any tree, and other stores (quick, tiny, tests) are not checked."""
    if store.is_done or store.path.parent.resolve() != paths.runs_dir().resolve():
        return
    check_clean_tree(f"run {store.run_id} in the committed run store {paths.display_path(store.path.parent)}")


def run_config(kind: str, config, root=None, progress: bool = True, wait: bool = True) -> RunStore:
    """Run (or load) the config ``method_config`` built for a method of ``kind``; a new run in the committed
    run store must come from a clean tree (``check_committed_provenance``)."""
    check_committed_provenance(locate_config(kind, config, root))
    if kind == "sft":
        return evaluate_policy_run(config, root=root, wait=wait)
    if kind == "ipo":
        return train_ipo(config, root=root, progress=progress, wait=wait)
    return train(config, root=root, progress=progress, wait=wait)


def run_method(
    method: Method, preset: StudyPreset, seed: int, root=None, progress: bool = True, wait: bool = True
) -> RunStore:
    """Run (or load) one method at one seed in the store at ``root`` (default: the preset's own,
    ``paths.runs_dir(preset.name)``); ``wait=False`` raises ``RunBusyError`` if it runs elsewhere."""
    config = method_config(method, preset, seed)
    root = root if root is not None else paths.runs_dir(preset.name)
    with library_bars(progress):  # a run without bars of its own: none of transformers' either
        return run_config(method.kind, config, root=root, progress=progress, wait=wait)


def run_all(
    methods: Sequence[Method], preset: StudyPreset, root=None, progress: bool = True
) -> dict[tuple[str, int], RunStore]:
    """Every (method, seed) run, finished or loaded; runs that another process holds are done last.

    Studies running in parallel (``countdown-study run --jobs 2``) share runs such as the uniform
    baseline: each takes the runs nobody holds first, then waits for the rest.
    """
    pending = preset.method_seeds(methods)
    stores: dict[tuple[str, int], RunStore] = {}
    while pending:
        busy = []
        for method, seed in pending:
            try:
                stores[method.name, seed] = run_method(method, preset, seed, root, progress, wait=False)
            except RunBusyError:
                busy.append((method, seed))
        if busy and len(busy) == len(pending):  # all held elsewhere: wait for the first
            method, seed = busy.pop(0)
            stores[method.name, seed] = run_method(method, preset, seed, root, progress, wait=True)
        pending = busy
    return stores


@dataclass(frozen=True)
class StudyResult:
    """Every (method, seed) run of a study and their verdict tables."""

    preset: StudyPreset
    """The preset the study ran at."""
    runs: pd.DataFrame
    """One row per (method, seed): run id, path, kind, status."""
    samples: pd.DataFrame
    """Every per-sample verdict row, with ``method`` and ``seed`` columns."""
    steps: pd.DataFrame
    """Every RLOO step-log row, with ``method`` and ``seed`` columns."""
    methods: tuple[str, ...]
    """Method names in study order."""


def run_study(
    methods: Sequence[Method], preset: StudyPreset | str, root=None, progress: bool = True
) -> StudyResult:
    """Run every method at every seed of ``preset`` (reusing finished runs) and gather the results."""
    preset = study_preset(preset) if isinstance(preset, str) else preset
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise ValueError(f"method names must be unique, got {names}")
    return gather_study(methods, preset, run_all(methods, preset, root=root, progress=progress))


def gather_study(
    methods: Sequence[Method], preset: StudyPreset, stores: Mapping[tuple[str, int], RunStore]
) -> StudyResult:
    """The ``StudyResult`` of finished runs ``stores`` (keyed ``(method name, seed)``) of ``methods`` at
    every seed of ``preset``: their runs, per-sample verdicts and RLOO step logs."""
    runs, samples, steps = [], [], []
    for method, seed in preset.method_seeds(methods):
        store = stores[method.name, seed]
        runs.append({"method": method.name, "seed": seed, "kind": method.kind, "run_id": store.run_id,
                     "path": str(store.path), **_provenance_fields(store)})  # fmt: skip
        table = store.read_table("eval")
        samples.append(table.assign(method=method.name, seed=seed))
        log = store.read_steps()
        if log and method.kind == "rloo":
            steps.append(pd.DataFrame(log).assign(method=method.name, seed=seed))
    return StudyResult(
        preset=preset,
        runs=pd.DataFrame(runs),
        samples=pd.concat(samples, ignore_index=True),
        steps=pd.concat(steps, ignore_index=True).copy() if steps else pd.DataFrame(),  # one block per dtype
        methods=tuple(m.name for m in methods),
    )


def _provenance_fields(store: RunStore) -> dict[str, Any]:
    record = store.provenance()
    return {key: record.get(key) for key in ("git_sha", "git_dirty", "started", "finished", "torch_threads")}


def sampler_records(result: StudyResult, name: str) -> pd.DataFrame:
    """Every run's sampler log ``name`` (``Sampler.records``, ``tables/sampler_<name>.parquet``) with
    ``method`` and ``seed`` columns; runs whose sampler keeps no such log are skipped."""
    tables = []
    for run in result.runs.itertuples(index=False):
        file = Path(run.path) / "tables" / f"sampler_{name}.parquet"
        if file.is_file():
            tables.append(pd.read_parquet(file).assign(method=run.method, seed=run.seed))
    if not tables:
        raise ValueError(f"no run of this study kept a sampler log {name!r}")
    return pd.concat(tables, ignore_index=True)


def training_pool(preset: StudyPreset | str) -> list:
    """The training pool every run of ``preset`` draws from (evaluation tasks removed), in pool order: the
    ``task_index`` of a sampler log indexes it."""
    preset = study_preset(preset) if isinstance(preset, str) else preset
    return study_tasks(preset.run_data)[0]


def eval_set_result(result: StudyResult, name: str) -> StudyResult:
    """``result`` with its per-sample verdicts taken from each run's extra evaluation set ``name``
    (``Method.eval_sets``, ``tables/eval_<name>.parquet``): summary and paired tables work on it as on the
    held-out tasks. Methods none of whose runs evaluated the set are left out."""
    samples, methods = [], []
    for run in result.runs.itertuples(index=False):
        file = Path(run.path) / "tables" / f"eval_{name}.parquet"
        if file.is_file():
            samples.append(pd.read_parquet(file).assign(method=run.method, seed=run.seed))
            methods.append(run.method)
    if not samples:
        raise ValueError(f"no run of this study evaluated the set {name!r}")
    kept = tuple(m for m in result.methods if m in methods)
    return replace(result, samples=pd.concat(samples, ignore_index=True), methods=kept)
