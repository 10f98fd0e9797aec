"""Runs used together and the environments they come from: the runs a table was built from (its
``<name>.meta.json``) grouped by the environment their provenance records (``runs.provenance``).

``countdown-study runs verify`` warns (not a problem) about each set of tables whose runs come from more
than one environment. Imports no torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from countdown_study.runs.provenance import environment_mismatch, environment_of


def _recorded_environment(folder: Path) -> dict[str, Any] | None:
    """A run folder's provenance record, or None when it has none or it does not parse."""
    try:
        record = json.loads((folder / "provenance.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def environment_split(run_ids: Sequence[str], root: str | Path) -> str | None:
    """How the runs ``run_ids`` of the store ``root`` split by environment, each group against the
    largest (``environment_mismatch``); None when they share one. Groups differ in a key every run
    records (a key some runs predate splits none); runs not in the store are left out."""
    records = {rid: _recorded_environment(Path(root) / rid) for rid in run_ids}
    envs = {rid: environment_of(record) for rid, record in records.items() if record is not None}
    if not envs:
        return None
    shared = sorted(set.intersection(*(set(env) for env in envs.values())))
    groups: dict[tuple, list[str]] = {}
    for rid, env in envs.items():
        groups.setdefault(tuple(env[key] for key in shared), []).append(rid)
    if len(groups) < 2:
        return None
    largest, *others = sorted(groups.values(), key=lambda group: -len(group))
    parts = [f"{len(largest)} such as {largest[0]}"]
    for group in others:
        differing = ", ".join(environment_mismatch(records[group[0]], records[largest[0]]))
        parts.append(f"{len(group)} such as {group[0]} ({differing})")
    return "; ".join(parts)


def _table_runs(meta_file: Path) -> tuple[str, ...]:
    """The run ids a table's ``<name>.meta.json`` lists under ``runs`` (empty when it lists none)."""
    try:
        runs = json.loads(meta_file.read_text()).get("runs")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return ()
    if not isinstance(runs, list):
        return ()
    return tuple(
        sorted({r["run_id"] for r in runs if isinstance(r, dict) and isinstance(r.get("run_id"), str)})
    )


def table_environment_warnings(tables: str | Path, root: str | Path) -> list[str]:
    """One line per set of tables built from the same runs (``tables/*.meta.json``) whose runs in the
    store ``root`` come from more than one environment (``environment_split``)."""
    by_runs: dict[tuple[str, ...], list[str]] = {}
    for meta_file in sorted(Path(tables).glob("*.meta.json")):
        run_ids = _table_runs(meta_file)
        if run_ids:
            by_runs.setdefault(run_ids, []).append(meta_file.name.removesuffix(".meta.json"))
    lines = []
    for run_ids, names in by_runs.items():
        split = environment_split(run_ids, root)
        if split is not None:
            lines.append(
                f"tables {', '.join(names)}: their {len(run_ids)} runs come from different environments: {split}"
            )
    return lines
