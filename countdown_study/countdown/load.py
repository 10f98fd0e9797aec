"""Loading Countdown tasks: a Hugging Face id or dataset folder, a local file, a generator spec or a list.

``load_tasks`` validates row by row and raises or drops; ``load_tasks_with_report`` also says what
was read, kept and dropped (``TaskLoadReport``, one ``RowProblem`` per dropped row). Sources are read into
raw rows by ``countdown.task_readers``; here each row is checked.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from countdown_study.countdown.generate import solvable
from countdown_study.countdown.task import Task
from countdown_study.countdown.task_readers import FIELDS as FIELDS
from countdown_study.countdown.task_readers import FILE_SUFFIXES as FILE_SUFFIXES
from countdown_study.countdown.task_readers import MISSING, Rows, is_spec, read_source, read_tasks
from countdown_study.countdown.task_readers import READERS as READERS
from countdown_study.countdown.task_readers import limit_spec as limit_spec

MAX_TARGET = 1_000_000
"""Largest target a source may hold: far above any Countdown data (targets up to 1,000) and small enough
that every path of the package stays exact on int64 (tier labels, the vectorised solver, the features);
a target of 1e30 is refused at load, naming its row, not an ``OverflowError`` later."""
MAX_NUMBER = 1_000_000
"""Largest given number a source may hold (the public data's go up to 99), for the same reason."""


@dataclass(frozen=True)
class RowProblem:
    """Why one source row is not a valid task."""

    row: int
    """0-based row index in the source (data rows; a CSV header is not a row)."""
    field: str
    """The offending field: ``target``, ``nums``, or ``row`` when the row itself does not parse."""
    reason: str
    """What is wrong, with the offending value."""


class TaskRowError(ValueError):
    """A source row that is not a valid task; the message names the source, row and field."""

    def __init__(self, source: str, problem: RowProblem) -> None:
        super().__init__(f"{source}: row {problem.row}, field '{problem.field}': {problem.reason}")
        self.problem = problem


@dataclass(frozen=True)
class TaskLoadReport:
    """What ``load_tasks_with_report`` read, kept and dropped."""

    source: str
    """The source as given (``list of tasks`` for a list)."""
    rows: int
    """Rows read (after ``limit``)."""
    kept: int
    """Tasks returned."""
    problems: tuple[RowProblem, ...]
    """One entry per dropped row, in row order (empty unless ``on_invalid="drop"``)."""

    @property
    def dropped(self) -> int:
        """How many rows were dropped."""
        return len(self.problems)


def _as_int(value: object) -> int | None:
    """The integer a cell holds (ints, integral floats), or None (bools, 3.5, strings, missing)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    return None


def _check_row(target: object, nums: object, allowed_counts: Sequence[int]) -> tuple[str, str] | None:
    """(field, reason) of the first problem of one row, or None when it is a valid task."""
    if target is MISSING or target is None:
        return "target", "missing"
    value = _as_int(target)
    if value is None:
        return "target", f"{target!r} is not an integer"
    if value < 0:
        return "target", f"{value} is negative"
    if value > MAX_TARGET:
        return "target", f"{target!r} is above the largest allowed target {MAX_TARGET:,}"
    if nums is MISSING or nums is None:
        return "nums", "missing"
    if not isinstance(nums, list | tuple | np.ndarray):
        return "nums", f"expected a list of integers, got {nums!r}"
    if len(nums) not in allowed_counts:
        return "nums", f"has {len(nums)} numbers; allowed counts are {tuple(allowed_counts)}"
    for position, number in enumerate(nums):
        as_int = _as_int(number)
        if as_int is None:
            return "nums", f"number {position} ({number!r}) is not an integer"
        if as_int <= 0:
            return "nums", f"number {position} ({as_int}) is not positive"
        if as_int > MAX_NUMBER:
            return (
                "nums",
                f"number {position} ({number!r}) is above the largest allowed number {MAX_NUMBER:,}",
            )
    return None


def _check_rows(rows: Rows, allowed_counts: Sequence[int]) -> tuple[list[tuple[int, Task]], list[RowProblem]]:
    """The valid rows as (row, Task) and one problem per invalid row, both in row order."""
    kept: list[tuple[int, Task]] = []
    problems: list[RowProblem] = []
    for index, (target, nums) in enumerate(zip(rows.targets, rows.nums, strict=True)):
        found = (
            ("row", rows.broken[index]) if index in rows.broken else _check_row(target, nums, allowed_counts)
        )
        if found is None:
            kept.append((index, Task(tuple(_as_int(x) for x in nums), _as_int(target))))
        else:
            problems.append(RowProblem(index, *found))
    return kept, problems


def _check_solvable(kept: list[tuple[int, Task]]) -> tuple[list[tuple[int, Task]], list[RowProblem]]:
    """The solvable rows and one ``target`` problem per unsolvable row (``solvable``)."""
    reachable = solvable([task for _, task in kept]) if kept else np.zeros(0, dtype=bool)
    problems = [
        RowProblem(index, "target", f"unreachable: no expression over {list(task.nums)} equals {task.target}")
        for (index, task), ok in zip(kept, reachable, strict=True)
        if not ok
    ]
    return [pair for pair, ok in zip(kept, reachable, strict=True) if ok], problems


def load_tasks_with_report(
    source: str | Path | Sequence[Task],
    *,
    split: str = "train",
    require_solvable: bool = False,
    on_invalid: Literal["raise", "drop"] = "raise",
    limit: int | None = None,
    allowed_counts: Sequence[int] = (3, 4, 5),
    cache_dir: str | Path | None = None,
) -> tuple[list[Task], TaskLoadReport]:
    """``load_tasks`` that also returns what was read, kept and dropped (and never warns).

    A ``KIND:COUNT:SEED`` spec is a pure function of its arguments: its tasks are made and checked once per
    process (``SPEC_CACHE`` of them kept) and every later call gets a new list of the same tasks, so the runs
    of one notebook do not regenerate their shared pool."""
    if on_invalid not in ("raise", "drop"):
        raise ValueError(f"on_invalid must be 'raise' or 'drop', got {on_invalid!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    if isinstance(source, str) and is_spec(source):
        tasks, report = _spec_tasks(source, split, require_solvable, on_invalid, limit, tuple(allowed_counts))
        return list(tasks), report
    return _load(source, split, require_solvable, on_invalid, limit, allowed_counts, cache_dir)


SPEC_CACHE = 8
"""Generated task sets (``KIND:COUNT:SEED`` specs with their load options) kept per process: a notebook's
training pool, held-out set and OOD sets."""


@functools.lru_cache(maxsize=SPEC_CACHE)
def _spec_tasks(
    source: str,
    split: str,
    require_solvable: bool,
    on_invalid: str,
    limit: int | None,
    allowed_counts: tuple[int, ...],
) -> tuple[tuple[Task, ...], TaskLoadReport]:
    """A spec's tasks (immutable) and report, made once per process for the same arguments."""
    tasks, report = _load(source, split, require_solvable, on_invalid, limit, allowed_counts, None)
    return tuple(tasks), report


def _load(
    source: str | Path | Sequence[Task],
    split: str,
    require_solvable: bool,
    on_invalid: str,
    limit: int | None,
    allowed_counts: Sequence[int],
    cache_dir: str | Path | None,
) -> tuple[list[Task], TaskLoadReport]:
    """The tasks of ``source`` read, checked and reported (``load_tasks_with_report``'s body)."""
    from_list = not isinstance(source, str | Path)
    name = "list of tasks" if from_list else str(source)
    rows = read_tasks(list(source), limit) if from_list else read_source(source, split, limit, cache_dir)
    kept, problems = _check_rows(rows, allowed_counts)
    if problems and on_invalid == "raise":
        raise TaskRowError(name, problems[0])
    if require_solvable:
        kept, unsolvable = _check_solvable(kept)
        if unsolvable and on_invalid == "raise":
            raise TaskRowError(name, unsolvable[0])
        problems = sorted(problems + unsolvable, key=lambda problem: problem.row)
    report = TaskLoadReport(name, len(rows.targets), len(kept), tuple(problems))
    return [task for _, task in kept], report


def load_tasks(
    source: str | Path | Sequence[Task],
    *,
    split: str = "train",
    require_solvable: bool = False,
    on_invalid: Literal["raise", "drop"] = "raise",
    limit: int | None = None,
    allowed_counts: Sequence[int] = (3, 4, 5),
    cache_dir: str | Path | None = None,
) -> list[Task]:
    """Tasks from a source, validated row by row.

    ``source`` is one of: a Hugging Face dataset id such as ``asingh15/countdown_tasks_3to4``
    (``datasets.load_dataset(source, split=split, cache_dir=cache_dir)``); a local dataset folder (the
    files of ``split`` as ``load_dataset`` picks them, each read as a file below, rows in file order); a local
    ``.parquet``, ``.jsonl`` / ``.json`` (JSON lines or an array of objects) or ``.csv`` file (``nums``
    written as ``[1, 2, 3]`` or ``[1 2 3]``) with the columns ``target`` and ``nums``; the spec
    ``generated:COUNT:SEED`` (``generate_tasks(COUNT, SEED)``), ``ood:COUNT:SEED`` (``generate_ood_tasks``)
    or ``ood_targets:COUNT:SEED`` (``generate_ood_target_tasks``); or a list of Task. Only the first
    ``limit`` rows are read.

    A row is valid when ``target`` is an integer in [0, ``MAX_TARGET``] and ``nums`` a list of integers
    in [1, ``MAX_NUMBER``] whose length is in ``allowed_counts`` (integral floats such as 12.0 count as
    integers; bools, 3.5 and text do not), and, with ``require_solvable``, some expression reaches the target
    (``solvable``). With ``on_invalid="raise"`` the first invalid row raises ``TaskRowError`` (a
    ValueError naming the source, row and field; structure is checked before solvability). With
    ``"drop"`` invalid rows are dropped and a warning says how many; ``load_tasks_with_report`` returns
    the full list. A missing file raises FileNotFoundError; an unknown suffix or source, a file or data
    set that cannot be read, ValueError naming it.
    """
    tasks, report = load_tasks_with_report(
        source,
        split=split,
        require_solvable=require_solvable,
        on_invalid=on_invalid,
        limit=limit,
        allowed_counts=allowed_counts,
        cache_dir=cache_dir,
    )
    if report.dropped:
        first = report.problems[0]
        warnings.warn(
            f"{report.source}: dropped {report.dropped} of {report.rows} rows "
            f"(first: row {first.row}, field '{first.field}': {first.reason})",
            stacklevel=2,
        )
    return tasks
