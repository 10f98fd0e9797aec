"""Reading a task source into raw rows, before validation (``countdown.load``): a ``KIND:COUNT:SEED``
generator spec, a local ``.parquet`` / ``.jsonl`` / ``.json`` / ``.csv`` file, a dataset folder, a Hugging Face
id, or a list of ``Task``.

``read_source`` dispatches on the kind of source and returns ``Rows``: the raw ``target`` and ``nums``
cells (``MISSING`` where a row has none) and why a row did not parse. Every failure to read a file is a
``ValueError`` naming it; ``datasets`` is imported only when a dataset is loaded.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from countdown_study.countdown.generate import generate_ood_target_tasks, generate_ood_tasks, generate_tasks
from countdown_study.countdown.task import Task

FIELDS = ("target", "nums")
"""The columns every source provides (the public data's names)."""
FILE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
"""Local file types ``load_tasks`` reads."""
_SPEC = re.compile(r"(generated|ood|ood_targets):(\d+):(\d+)")
_GENERATORS = {
    "generated": generate_tasks,
    "ood": generate_ood_tasks,
    "ood_targets": generate_ood_target_tasks,
}
"""The generator behind each spec kind (``KIND:COUNT:SEED``)."""
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
MISSING = object()
"""A cell a source row does not have (told apart from a cell holding ``None``)."""


@dataclass
class Rows:
    """Raw columns of a source before validation; ``broken`` maps a row to why it did not parse."""

    targets: list
    nums: list
    broken: dict[int, str]


def _rows_from_columns(columns: dict[str, list], n_rows: int) -> Rows:
    missing = [MISSING] * n_rows
    return Rows(columns.get("target", missing), columns.get("nums", missing), {})


def _rows_from_records(records: list[object]) -> Rows:
    """Rows from parsed JSON records; a record that is not an object is broken."""
    rows = Rows([], [], {})
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            rows.broken[index] = f"expected a JSON object, got {record!r}"
            record = {}
        rows.targets.append(record.get("target", MISSING))
        rows.nums.append(record.get("nums", MISSING))
    return rows


def _read_json(path: Path, limit: int | None) -> Rows:
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
        return MISSING
    text = cell.strip()
    if field == "target":
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        return value if isinstance(value, int | float) else text
    return _parse_list_text(text)


def _read_csv(path: Path, limit: int | None) -> Rows:
    rows = Rows([], [], {})
    with path.open(newline="", encoding="utf-8-sig") as handle:  # a byte-order mark is not a column name
        for index, record in enumerate(csv.DictReader(handle)):
            if limit is not None and index >= limit:
                break
            rows.targets.append(_parse_csv_cell(record.get("target"), "target"))
            rows.nums.append(_parse_csv_cell(record.get("nums"), "nums"))
    return rows


def _read_parquet(path: Path, limit: int | None) -> Rows:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    table = table.slice(0, limit) if limit is not None else table
    columns = {name: table.column(name).to_pylist() for name in FIELDS if name in table.column_names}
    return _rows_from_columns(columns, table.num_rows)


def _read_hub(source: str, split: str, limit: int | None, cache_dir: str | Path | None) -> Rows:
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


def _read_folder(folder: Path, split: str, limit: int | None, cache_dir: str | Path | None) -> Rows:
    """A dataset folder: its ``split``'s task files one by one with this module's readers (rows in file
    order, as loading the files one by one gives), else ``datasets.load_dataset`` (other formats)."""
    files = _split_files(folder, split)
    if not all(f.suffix.lower() in READERS for f in files):
        return _read_hub(str(folder), split, limit, cache_dir)
    rows = Rows([], [], {})
    for file in files:
        left = None if limit is None else limit - len(rows.targets)
        if left == 0:
            break
        part, offset = _read_file(file, left), len(rows.targets)
        rows.targets += part.targets
        rows.nums += part.nums
        rows.broken.update({offset + index: why for index, why in part.broken.items()})
    return rows


def read_tasks(tasks: Sequence[object], limit: int | None) -> Rows:
    """Rows from a list of ``Task`` (an item that is not one is a broken row), the first ``limit``."""
    rows = Rows([], [], {})
    for index, task in enumerate(tasks[:limit]):
        if not isinstance(task, Task):
            rows.broken[index] = f"expected a Task, got {task!r}"
        rows.targets.append(task.target if isinstance(task, Task) else MISSING)
        rows.nums.append(task.nums if isinstance(task, Task) else MISSING)
    return rows


READERS = {".parquet": _read_parquet, ".jsonl": _read_json, ".json": _read_json, ".csv": _read_csv}
"""This module's reader of each local file type (``FILE_SUFFIXES``)."""


def _read_file(path: Path, limit: int | None) -> Rows:
    """A local task file by its suffix; every failure to read it is a ``ValueError`` naming it."""
    suffix = path.suffix.lower()
    try:
        return READERS[suffix](path, limit)
    except (UnicodeDecodeError, csv.Error, OSError, ValueError) as error:
        message = str(error)
        raise ValueError(
            message if str(path) in message else f"{path}: cannot read as {suffix}: {message}"
        ) from error


def is_spec(source: str) -> bool:
    """Whether ``source`` is a well-formed ``KIND:COUNT:SEED`` spec (``generated``, ``ood``, ``ood_targets``),
    whose tasks are a pure function of the text."""
    return _SPEC.fullmatch(source) is not None


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


def read_source(source: str | Path, split: str, limit: int | None, cache_dir: str | Path | None) -> Rows:
    """Dispatch on the kind of source: spec, local file, dataset folder, or Hugging Face id."""
    text = str(source)
    spec = _SPEC.fullmatch(text)
    if spec:
        kind, count, seed = spec.group(1), int(spec.group(2)), int(spec.group(3))
        make = _GENERATORS[kind]
        return read_tasks(make(count, seed), limit)
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
