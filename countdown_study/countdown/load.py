"""Loading Countdown tasks: a Hugging Face id or dataset folder, a local file, a generator spec or a list.

``load_tasks`` validates row by row and raises or drops; ``load_tasks_with_report`` also says what
was read, kept and dropped (``TaskLoadReport``, one ``RowProblem`` per dropped row).
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from countdown_study.countdown.generate import (
    generate_ood_target_tasks,
    generate_ood_tasks,
    generate_tasks,
    solvable,
)
from countdown_study.countdown.task import Task

FIELDS = ("target", "nums")
"""The columns every source provides (the public data's names)."""
FILE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
"""Local file types ``load_tasks`` reads."""
MAX_TARGET = 1_000_000
"""Largest target a source may hold: far above any Countdown data (targets up to 1,000) and small enough
that every path of the package stays exact on int64 (tier labels, the vectorised solver, the features);
a target of 1e30 is refused at load, naming its row, not an ``OverflowError`` later."""
MAX_NUMBER = 1_000_000
"""Largest given number a source may hold (the public data's go up to 99), for the same reason."""
_SPEC = re.compile(r"(generated|ood|ood_targets):(\d+):(\d+)")
_GENERATORS = {
    "generated": generate_tasks,
    "ood": generate_ood_tasks,
    "ood_targets": generate_ood_target_tasks,
}
"""The generator behind each spec kind (``KIND:COUNT:SEED``)."""
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
_MISSING = object()


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


@dataclass
class _Rows:
    """Raw columns of a source before validation; ``broken`` maps a row to why it did not parse."""

    targets: list
    nums: list
    broken: dict[int, str]


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
    if target is _MISSING or target is None:
        return "target", "missing"
    value = _as_int(target)
    if value is None:
        return "target", f"{target!r} is not an integer"
    if value < 0:
        return "target", f"{value} is negative"
    if value > MAX_TARGET:
        return "target", f"{target!r} is above the largest allowed target {MAX_TARGET:,}"
    if nums is _MISSING or nums is None:
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


def _rows_from_columns(columns: dict[str, list], n_rows: int) -> _Rows:
    missing = [_MISSING] * n_rows
    return _Rows(columns.get("target", missing), columns.get("nums", missing), {})


def _rows_from_records(records: list[object]) -> _Rows:
    """Rows from parsed JSON records; a record that is not an object is broken."""
    rows = _Rows([], [], {})
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            rows.broken[index] = f"expected a JSON object, got {record!r}"
            record = {}
        rows.targets.append(record.get("target", _MISSING))
        rows.nums.append(record.get("nums", _MISSING))
    return rows


def _read_json(path: Path, limit: int | None) -> _Rows:
    """A JSON array of objects, or JSON lines (what ``Dataset.to_json`` writes)."""
    text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of the data
    if text.lstrip().startswith("["):
        try:
            return _rows_from_records(json.loads(text)[:limit])
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not a valid JSON array ({error})") from error
    records: list[object] = []
    broken: dict[int, str] = {}
    for line in text.splitlines():
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            broken[len(records)] = f"not valid JSON ({error.msg}): {line[:60]!r}"
            records.append({})
    rows = _rows_from_records(records)
    rows.broken.update(broken)
    return rows


def _parse_list_text(text: str) -> object:
    """'[1, 2, 3]' (JSON) or '[1 2 3]' (what ``Dataset.to_csv`` writes) as a list, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if not (text.startswith("[") and text.endswith("]")):
        return text
    items: list[object] = []
    for token in re.split(r"[\s,]+", text[1:-1].strip()):
        try:
            items.append(json.loads(token))
        except json.JSONDecodeError:
            items.append(token)
    return items


def _parse_csv_cell(cell: str | None, field: str) -> object:
    """A CSV cell as a Python value: '' -> missing, '12' -> 12, '[1, 2]' -> [1, 2], else the text.

    Numbers are read as JSON reads them, so CSV and JSON lines agree: '6.0' is the integral float 6.0
    (accepted), '٦' is text (refused; ``int`` would read it as 6).
    """
    if cell is None or not cell.strip():
        return _MISSING
    text = cell.strip()
    if field == "target":
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        return value if isinstance(value, int | float) else text
    return _parse_list_text(text)


def _read_csv(path: Path, limit: int | None) -> _Rows:
    rows = _Rows([], [], {})
    with path.open(newline="", encoding="utf-8-sig") as handle:  # a byte-order mark is not a column name
        for index, record in enumerate(csv.DictReader(handle)):
            if limit is not None and index >= limit:
                break
            rows.targets.append(_parse_csv_cell(record.get("target"), "target"))
            rows.nums.append(_parse_csv_cell(record.get("nums"), "nums"))
    return rows


def _read_parquet(path: Path, limit: int | None) -> _Rows:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    table = table.slice(0, limit) if limit is not None else table
    columns = {name: table.column(name).to_pylist() for name in FIELDS if name in table.column_names}
    return _rows_from_columns(columns, table.num_rows)


def _read_hub(source: str, split: str, limit: int | None, cache_dir: str | Path | None) -> _Rows:
    """A Hugging Face dataset id (or a folder of other files), through ``datasets.load_dataset``; a data
    set that does not load is refused in one ``ValueError`` naming it."""
    import datasets  # slow to import: only when a dataset is loaded

    try:
        dataset = datasets.load_dataset(
            source, split=split, cache_dir=None if cache_dir is None else str(cache_dir)
        )
    except (datasets.exceptions.DatasetsError, OSError, ValueError) as error:
        cause = f" ({error.__cause__})" if error.__cause__ is not None else ""
        raise ValueError(f"{source}: cannot load the data set: {error}{cause}") from error
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    present = [name for name in FIELDS if name in dataset.column_names]
    return _rows_from_columns(dataset.select_columns(present).to_dict(), len(dataset))


def _split_files(folder: Path, split: str) -> list[Path]:
    """The data files of ``split`` in a dataset folder, as ``datasets.load_dataset`` picks them (``train.csv``,
    ``data/train-00000-of-00001.parquet``; every file is ``train`` when no name says a split)."""
    from datasets.data_files import DataFilesDict, get_data_patterns  # slow to import: only for a folder

    files = DataFilesDict.from_patterns(get_data_patterns(str(folder)), base_path=str(folder))
    if split not in files:
        raise ValueError(f"{folder}: no {split!r} split; its files make {sorted(map(str, files))}")
    return [Path(name) for name in files[split]]


def _read_folder(folder: Path, split: str, limit: int | None, cache_dir: str | Path | None) -> _Rows:
    """A dataset folder: its ``split``'s task files one by one with this module's readers (rows in file
    order, as loading the files one by one gives), else ``datasets.load_dataset`` (other formats)."""
    files = _split_files(folder, split)
    if not all(f.suffix.lower() in READERS for f in files):
        return _read_hub(str(folder), split, limit, cache_dir)
    rows = _Rows([], [], {})
    for file in files:
        left = None if limit is None else limit - len(rows.targets)
        if left == 0:
            break
        part, offset = _read_file(file, left), len(rows.targets)
        rows.targets += part.targets
        rows.nums += part.nums
        rows.broken.update({offset + index: why for index, why in part.broken.items()})
    return rows


def _read_tasks(tasks: Sequence[object], limit: int | None) -> _Rows:
    rows = _Rows([], [], {})
    for index, task in enumerate(tasks[:limit]):
        if not isinstance(task, Task):
            rows.broken[index] = f"expected a Task, got {task!r}"
        rows.targets.append(task.target if isinstance(task, Task) else _MISSING)
        rows.nums.append(task.nums if isinstance(task, Task) else _MISSING)
    return rows


READERS = {".parquet": _read_parquet, ".jsonl": _read_json, ".json": _read_json, ".csv": _read_csv}
"""This module's reader of each local file type (``FILE_SUFFIXES``)."""


def _read_file(path: Path, limit: int | None) -> _Rows:
    """A local task file by its suffix; every failure to read it is a ``ValueError`` naming it."""
    suffix = path.suffix.lower()
    try:
        return READERS[suffix](path, limit)
    except (UnicodeDecodeError, csv.Error, OSError, ValueError) as error:
        message = str(error)
        raise ValueError(
            message if str(path) in message else f"{path}: cannot read as {suffix}: {message}"
        ) from error


def limit_spec(source: str, limit: int) -> str:
    """``source`` with at most ``limit`` tasks where it is a ``KIND:COUNT:SEED`` spec (``generated``,
    ``ood``, ``ood_targets``; its count capped at ``limit``); any other source unchanged:
    ``limit_spec("ood:200:0", 100)`` is ``"ood:100:0"``."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    spec = _SPEC.fullmatch(str(source))
    if not spec:
        return source
    return f"{spec.group(1)}:{min(int(spec.group(2)), limit)}:{spec.group(3)}"


def _read_source(source: str | Path, split: str, limit: int | None, cache_dir: str | Path | None) -> _Rows:
    """Dispatch on the kind of source: spec, local file, dataset folder, or Hugging Face id."""
    text = str(source)
    spec = _SPEC.fullmatch(text)
    if spec:
        kind, count, seed = spec.group(1), int(spec.group(2)), int(spec.group(3))
        make = _GENERATORS[kind]
        return _read_tasks(make(count, seed), limit)
    if text.startswith(tuple(f"{kind}:" for kind in _GENERATORS)):
        raise ValueError(
            f"bad task spec {text!r}: expected generated:COUNT:SEED, ood:COUNT:SEED or ood_targets:COUNT:SEED"
        )
    path = Path(text).expanduser()
    suffix = path.suffix.lower()
    if path.is_file():
        if suffix not in READERS:
            raise ValueError(
                f"unknown file type {suffix or '(none)'!r} for {text}; expected one of {FILE_SUFFIXES}"
            )
        return _read_file(path, limit)
    if path.is_dir():
        formats = sorted({f.suffix.lower() for f in path.rglob("*") if f.suffix.lower() in FILE_SUFFIXES})
        if len(formats) > 1:
            raise ValueError(
                f"{text} holds task files of several formats {formats}; keep one format per folder"
            )
        return _read_folder(path, split, limit, cache_dir)
    if isinstance(source, Path) or suffix in FILE_SUFFIXES or text.startswith(("/", ".", "~")):
        raise FileNotFoundError(f"task file not found: {text}")
    if _HUB_ID.fullmatch(text):
        return _read_hub(text, split, limit, cache_dir)
    raise ValueError(
        f"unknown task source {text!r}: expected a Hugging Face id (owner/name), a {'/'.join(FILE_SUFFIXES)} "
        "file, a dataset folder, generated:COUNT:SEED, ood:COUNT:SEED, or a list of Task"
    )


def _check_rows(
    rows: _Rows, allowed_counts: Sequence[int]
) -> tuple[list[tuple[int, Task]], list[RowProblem]]:
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
    """``load_tasks`` that also returns what was read, kept and dropped (and never warns)."""
    if on_invalid not in ("raise", "drop"):
        raise ValueError(f"on_invalid must be 'raise' or 'drop', got {on_invalid!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    from_list = not isinstance(source, str | Path)
    name = "list of tasks" if from_list else str(source)
    rows = _read_tasks(list(source), limit) if from_list else _read_source(source, split, limit, cache_dir)
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
