"""Countdown task data: the ``Task`` record, the package's own generator, loading, splits, labels.

Four parts, in order: the vectorised integer reachability check behind the generator; the generator
(``generate_tasks``, ``generate_ood_tasks``); loading from a Hugging Face id, a local file, a
``generated:COUNT:SEED`` spec or a list (``load_tasks``, ``load_tasks_with_report``); splits by
canonical key and the difficulty labels of reports 000/001/004 (``tier_labels``, ``level_labels``).
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class Task:
    """One Countdown problem: reach ``target`` using each of ``nums`` exactly once with + - * /."""

    nums: tuple[int, ...]
    """The given numbers, in the order shown to the policy."""
    target: int
    """The value the expression must equal."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nums", tuple(int(n) for n in self.nums))
        object.__setattr__(self, "target", int(self.target))

    @property
    def key(self) -> tuple[tuple[int, ...], int]:
        """Canonical key (sorted numbers, target): reordered duplicates share it."""
        return (tuple(sorted(self.nums)), self.target)

    @property
    def num_count(self) -> int:
        """How many numbers the task gives (3 or 4 in the public data)."""
        return len(self.nums)


# ---------------------------------------------------------------------------------------------------
# Integer reachability (the Stream-of-Search rules), vectorised over tasks
# ---------------------------------------------------------------------------------------------------


_STACK_ROWS = 1 << 16
"""Batches with at most this many children are searched stacked (one numpy call per level)."""


def _pair_hits(a: np.ndarray, b: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Whether one allowed merge of the last two values gives ``target``.  # (B,), (B,), (B,) -> (B,)"""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    hit = (a + b == target) | (a * b == target) | (hi - lo == target)
    return hit | ((lo != 0) & (lo * target == hi))


def _merges(a: np.ndarray, b: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The four allowed merges (value, validity or None when always valid): a+b, a*b, |a-b|, exact hi/lo."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    quotient = hi // np.maximum(lo, 1)
    return [(a + b, None), (a * b, None), (hi - lo, None), (quotient, (lo != 0) & (quotient * lo == hi))]


def _children(values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Every (pair, merge) child of each row, with its validity.  # (B, k) -> [((B, k - 1), (B,) or None)]"""
    k = values.shape[1]
    out = []
    for i, j in combinations(range(k), 2):
        rest = values[:, [m for m in range(k) if m not in (i, j)]]  # (B, k - 2)
        out += [
            (np.column_stack([rest, merged]), valid) for merged, valid in _merges(values[:, i], values[:, j])
        ]
    return out


def _three_hits(values: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``_reachable`` for three values, without building children.  # (B, 3), (B,) -> (B,)"""
    hit = np.zeros(len(values), dtype=bool)
    for i, j, other in ((0, 1, 2), (0, 2, 1), (1, 2, 0)):
        for merged, valid in _merges(values[:, i], values[:, j]):
            reached = _pair_hits(merged, values[:, other], target)
            hit |= reached if valid is None else reached & valid
    return hit


def _reachable(values: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Whether some merge order reaches ``target``.  # (B, k), (B,) -> (B,)

    The Stream-of-Search search over (pair, merge) for all rows at once. Small batches stack every
    child into one batch (few numpy calls); large ones walk the children in turn, dropping rows
    already reached.
    """
    k = values.shape[1]
    if k == 1:
        return values[:, 0] == target
    if k == 2:
        return _pair_hits(values[:, 0], values[:, 1], target)
    if k == 3:
        return _three_hits(values, target)
    if len(values) * 2 * k * (k - 1) <= _STACK_ROWS:
        children = _children(values)
        parent = np.concatenate(
            [np.flatnonzero(valid) if valid is not None else np.arange(len(values)) for _, valid in children]
        )  # (R,) the row each child comes from
        stacked = np.concatenate([child if valid is None else child[valid] for child, valid in children])
        reached = _reachable(stacked, target[parent])  # (R,)
        return np.bincount(parent[reached], minlength=len(values)) > 0
    hit = np.zeros(len(values), dtype=bool)
    for i, j in combinations(range(k), 2):
        rest = [m for m in range(k) if m not in (i, j)]
        for merged, valid in _merges(values[:, i], values[:, j]):
            rows = np.flatnonzero(~hit if valid is None else ~hit & valid)
            if rows.size:
                reduced = np.column_stack([values[rows][:, rest], merged[rows]])  # (R, k - 1)
                hit[rows] = _reachable(reduced, target[rows])
    return hit


def _value_dtype(count: int, max_number: int, max_target: int) -> type | None:
    """Smallest integer dtype no intermediate overflows (values are at most (M+1)^count), None if none."""
    bound = max((max_number + 1) ** count, (max_number + 1) ** (count // 2) * max(max_target, 1))
    if bound < 2**31:
        return np.int32
    return np.int64 if bound < 2**63 else None


def integer_solvable(tasks: Sequence[Task]) -> np.ndarray:
    """Whether each task is solvable with every intermediate a non-negative integer.  # (N,) bool

    The Stream-of-Search rules the public data was made with: merge two values into a+b, a*b, the
    larger minus the smaller, or the larger divided by the smaller when exact. Integer-solvable implies
    solvable (``solver.solve``); a few tasks solvable only through fractions are False here.
    """
    result = np.zeros(len(tasks), dtype=bool)
    by_count: dict[int, list[int]] = {}
    for index, task in enumerate(tasks):
        by_count.setdefault(task.num_count, []).append(index)
    for count, rows in by_count.items():
        nums = [tasks[r].nums for r in rows]
        targets = [tasks[r].target for r in rows]
        dtype = _value_dtype(count, max(max(n) for n in nums), max(targets)) or object
        result[rows] = _reachable(np.array(nums, dtype=dtype), np.array(targets, dtype=dtype))
    return result


def solvable(tasks: Sequence[Task]) -> np.ndarray:
    """Whether ``solver.solve`` finds an expression (exact rationals).  # (N,) bool

    The vectorised integer check first; only the tasks it rejects go through the exact solver.
    """
    from countdown_study.countdown import solver

    result = integer_solvable(tasks)
    for index in np.flatnonzero(~result):
        result[index] = solver.solve(tasks[index].nums, tasks[index].target) is not None
    return result


# ---------------------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------------------

_CANDIDATES_PER_ROUND = 1 << 18
_MAX_DRAWS_PER_TASK = 200_000


@dataclass(frozen=True)
class GeneratorConfig:
    """Ranges of ``generate_tasks``; the defaults are the public data's."""

    min_target: int = 10
    """Smallest target (inclusive)."""
    max_target: int = 100
    """Largest target (inclusive)."""
    max_number: int = 99
    """Numbers are drawn uniformly from 1..max_number."""

    def __post_init__(self) -> None:
        if not 0 <= self.min_target <= self.max_target:
            raise ValueError(f"need 0 <= min_target <= max_target, got {self.min_target}, {self.max_target}")
        if self.max_number < 1:
            raise ValueError(f"max_number must be at least 1, got {self.max_number}")


def _draw_solvable_numbers(
    targets: np.ndarray, count: int, config: GeneratorConfig, rng: np.random.Generator
) -> np.ndarray:
    """For each target, numbers redrawn until the target is reachable.  # (N,) -> (N, count)"""
    dtype = _value_dtype(count, config.max_number, config.max_target)
    if dtype is None:
        raise ValueError(f"{count} numbers up to {config.max_number} overflow 64-bit integers")
    nums = np.zeros((len(targets), count), dtype=np.int64)
    pending = np.arange(len(targets))
    drawn, per_task = 0, 1
    while pending.size:
        if drawn > _MAX_DRAWS_PER_TASK:
            raise ValueError(
                f"targets {sorted(set(targets[pending].tolist()))[:5]} stay unreachable with {count} "
                f"numbers in 1..{config.max_number} after {drawn} draws each"
            )
        draws = rng.integers(1, config.max_number + 1, size=(pending.size, per_task, count))
        flat_targets = np.repeat(targets[pending], per_task).astype(dtype)
        ok = _reachable(draws.reshape(-1, count).astype(dtype), flat_targets).reshape(pending.size, per_task)
        found = ok.any(axis=1)
        first = ok.argmax(axis=1)  # the first reachable draw: the rejection sampler's own order
        nums[pending[found]] = draws[found, first[found]]
        pending = pending[~found]
        drawn += per_task
        # next round: about 1 / acceptance draws per pending task, within the round budget
        wanted = int(np.ceil(ok.size / ok.sum())) if ok.any() else 2 * per_task
        per_task = int(np.clip(wanted, 1, max(1, _CANDIDATES_PER_ROUND // max(pending.size, 1))))
    return nums


def generate_tasks(
    n: int, seed: int, num_counts: Sequence[int] = (3, 4), config: GeneratorConfig = GeneratorConfig()
) -> list[Task]:
    """``n`` solvable tasks from the Stream-of-Search Countdown generator's distribution.

    Construction (the generator behind the public ``Countdown-Tasks-3to4`` data):

    1. each task's number count is drawn uniformly from ``num_counts`` (3 or 4: about half each);
    2. its target is drawn uniformly from ``min_target..max_target`` (10..100);
    3. its numbers are drawn uniformly and independently from ``1..max_number`` (1..99), in the order
       shown, and redrawn until the target is reachable under the integer rules: merge two values into
       a+b, a*b, the larger minus the smaller, or the larger divided by the smaller when exact, so every
       intermediate value is a non-negative integer (``integer_solvable``).

    Every task is therefore solvable (by ``solver.solve`` too), targets are uniform and numbers follow
    the conditional law of the original rejection sampler. Deterministic in ``seed`` (a non-negative
    int, through ``numpy.random.default_rng``). The rejection runs vectorised: 490,000 tasks take about
    5 s of CPU time.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if not num_counts or min(num_counts) < 2:
        raise ValueError(f"num_counts must be non-empty counts of at least 2, got {tuple(num_counts)}")
    rng = np.random.default_rng(seed)
    counts = rng.choice(np.asarray(num_counts), size=n)  # (n,)
    targets = rng.integers(config.min_target, config.max_target + 1, size=n)  # (n,)
    nums_of: list[tuple[int, ...]] = [()] * n
    for count in dict.fromkeys(num_counts):
        rows = np.flatnonzero(counts == count)
        for row, nums in zip(
            rows, _draw_solvable_numbers(targets[rows], count, config, rng).tolist(), strict=True
        ):
            nums_of[row] = tuple(nums)
    return [Task(nums, target) for nums, target in zip(nums_of, targets.tolist(), strict=True)]


def generate_ood_tasks(
    n: int, seed: int, num_count: int = 5, config: GeneratorConfig = GeneratorConfig()
) -> list[Task]:
    """Report 004's out-of-distribution set: ``num_count`` (5) numbers, otherwise ``generate_tasks``' rules.

    Numbers 1..99, target uniform in 10..100 (the training range, so only the length is out of
    distribution), reachable with non-negative integer intermediates.
    """
    return generate_tasks(n, seed, num_counts=(num_count,), config=config)


# ---------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------

FIELDS = ("target", "nums")
"""The columns every source provides (the public data's names)."""
FILE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
"""Local file types ``load_tasks`` reads."""
_SPEC = re.compile(r"(generated|ood):(\d+):(\d+)")
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
    text = path.read_text()
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
    """A CSV cell as a Python value: '' -> missing, '12' -> 12, '[1, 2]' -> [1, 2], else the text."""
    if cell is None or not cell.strip():
        return _MISSING
    text = cell.strip()
    if field == "target" and re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return _parse_list_text(text) if field == "nums" else text


def _read_csv(path: Path, limit: int | None) -> _Rows:
    rows = _Rows([], [], {})
    with path.open(newline="") as handle:
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
    """A Hugging Face dataset id or a local dataset folder, through ``datasets.load_dataset``."""
    import datasets  # slow to import: only when a dataset is loaded

    dataset = datasets.load_dataset(
        source, split=split, cache_dir=None if cache_dir is None else str(cache_dir)
    )
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    present = [name for name in FIELDS if name in dataset.column_names]
    return _rows_from_columns(dataset.select_columns(present).to_dict(), len(dataset))


def _read_tasks(tasks: Sequence[object], limit: int | None) -> _Rows:
    rows = _Rows([], [], {})
    for index, task in enumerate(tasks[:limit]):
        if not isinstance(task, Task):
            rows.broken[index] = f"expected a Task, got {task!r}"
        rows.targets.append(task.target if isinstance(task, Task) else _MISSING)
        rows.nums.append(task.nums if isinstance(task, Task) else _MISSING)
    return rows


def _read_source(source: str | Path, split: str, limit: int | None, cache_dir: str | Path | None) -> _Rows:
    """Dispatch on the kind of source: spec, local file, dataset folder, or Hugging Face id."""
    text = str(source)
    spec = _SPEC.fullmatch(text)
    if spec:
        kind, count, seed = spec.group(1), int(spec.group(2)), int(spec.group(3))
        make = generate_tasks if kind == "generated" else generate_ood_tasks
        return _read_tasks(make(count, seed), limit)
    if text.startswith(("generated:", "ood:")):
        raise ValueError(f"bad task spec {text!r}: expected generated:COUNT:SEED or ood:COUNT:SEED")
    path = Path(text).expanduser()
    suffix = path.suffix.lower()
    if path.is_file():
        readers = {".parquet": _read_parquet, ".jsonl": _read_json, ".json": _read_json, ".csv": _read_csv}
        if suffix not in readers:
            raise ValueError(
                f"unknown file type {suffix or '(none)'!r} for {text}; expected one of {FILE_SUFFIXES}"
            )
        return readers[suffix](path, limit)
    if path.is_dir():
        return _read_hub(text, split, limit, cache_dir)
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

    ``source`` is one of: a Hugging Face dataset id such as ``asingh15/countdown_tasks_3to4`` or a local
    dataset folder (``datasets.load_dataset(source, split=split, cache_dir=cache_dir)``); a local
    ``.parquet``, ``.jsonl`` / ``.json`` (JSON lines or an array of objects) or ``.csv`` file (``nums``
    written as ``[1, 2, 3]`` or ``[1 2 3]``) with the columns ``target`` and ``nums``; the spec
    ``generated:COUNT:SEED`` (``generate_tasks(COUNT, SEED)``) or ``ood:COUNT:SEED``
    (``generate_ood_tasks``); or a list of Task. Only the first ``limit`` rows are read.

    A row is valid when ``target`` is a non-negative integer and ``nums`` a list of positive integers
    whose length is in ``allowed_counts`` (integral floats such as 12.0 count as integers; bools,
    3.5 and text do not), and, with ``require_solvable``, some expression reaches the target
    (``solvable``). With ``on_invalid="raise"`` the first invalid row raises ``TaskRowError`` (a
    ValueError naming the source, row and field; structure is checked before solvability). With
    ``"drop"`` invalid rows are dropped and a warning says how many; ``load_tasks_with_report`` returns
    the full list. A missing file raises FileNotFoundError; an unknown suffix or source, ValueError.
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


# ---------------------------------------------------------------------------------------------------
# Splits and deduplication by canonical key
# ---------------------------------------------------------------------------------------------------


def dedupe(tasks: Sequence[Task]) -> list[Task]:
    """The first task of each canonical key, in the original order (reordered duplicates removed)."""
    seen: set[tuple[tuple[int, ...], int]] = set()
    unique: list[Task] = []
    for task in tasks:
        if task.key not in seen:
            seen.add(task.key)
            unique.append(task)
    return unique


def _key_rows(tasks: Sequence[Task]) -> np.ndarray:
    """Canonical keys as integer rows: sorted numbers, -1 padding, target.  # (N, max count + 1)"""
    width = max((task.num_count for task in tasks), default=0)
    rows = [sorted(task.nums) + [-1] * (width - task.num_count) + [task.target] for task in tasks]
    return np.array(rows, dtype=np.int64).reshape(len(tasks), width + 1)


def split_tasks(
    tasks: Sequence[Task], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> tuple[list[Task], ...]:
    """Disjoint splits (train, val, test by default) by canonical key, so no key lands in two splits.

    The distinct keys (sorted numbers and target, as sorted integer rows) are permuted by
    ``numpy.random.default_rng(seed)`` and cut at the rounded cumulative ``fractions`` (fractions of
    keys, not of rows); every task follows its key, in the original order. The result depends only
    on the set of tasks and the seed.
    """
    if not fractions or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {tuple(fractions)}")
    keys, key_of_task = np.unique(_key_rows(tasks), axis=0, return_inverse=True)  # (K, w), (N,)
    position = np.empty(len(keys), dtype=np.int64)
    position[np.random.default_rng(seed).permutation(len(keys))] = np.arange(len(keys))  # (K,)
    ends = np.round(np.cumsum(fractions) * len(keys)).astype(int)  # (S,)
    ends[-1] = len(keys)
    part_of_key = np.searchsorted(ends, position, side="right")  # (K,)
    parts: tuple[list[Task], ...] = tuple([] for _ in fractions)
    for task, part in zip(tasks, part_of_key[key_of_task.reshape(-1)].tolist(), strict=True):
        parts[part].append(task)
    return parts


# ---------------------------------------------------------------------------------------------------
# Difficulty labels
# ---------------------------------------------------------------------------------------------------

TIERS = ("T0", "T1", "T2", "T3", "OOD")
"""Report 004's tiers, made a partition by ``tier_labels``."""
LEVELS = ("easy", "medium", "hard")
"""Report 001's difficulty levels, as ``level_labels`` defines them."""


@dataclass(frozen=True)
class TierRule:
    """Thresholds of ``tier_labels`` (defaults: ours; report 004 gives T1 <= 75 and T2 <= 150)."""

    t0_max_target: int = 50
    """A task with 3 or fewer numbers is T0 up to this target, T1 above."""
    t1_max_target: int = 75
    """A dense 4-number task is T1 up to this target."""
    t2_max_target: int = 150
    """A dense 4-number task is T2 up to this target, T3 above."""
    sparse_max_solutions: int = 2
    """A 4-number task with at most this many solutions (``solver.solution_count``) is sparse: T3."""


@dataclass(frozen=True)
class LevelRule:
    """Threshold of ``level_labels``."""

    hard_max_solutions: int = 4
    """A 4-number task with at most this many solutions is hard, with more it is medium."""


def solution_counts(tasks: Sequence[Task], cap: int = 128) -> np.ndarray:
    """Report 003's solution count per task, capped at ``cap``.  # (N,) int

    From ``solver.difficulty_vectors`` (batched) when the solver has it, else ``solver.solution_count``.
    """
    from countdown_study.countdown import solver

    if not tasks:
        return np.zeros(0, dtype=np.int64)
    if hasattr(solver, "difficulty_vectors"):
        counts = solver.difficulty_vectors(list(tasks), cap=cap)["solution_count"]
        return counts.to_numpy().astype(np.int64)
    return np.array([solver.solution_count(t.nums, t.target, cap=cap) for t in tasks], dtype=np.int64)


def _four_number_counts(tasks: Sequence[Task], counts: Sequence[int] | np.ndarray | None) -> np.ndarray:
    """Solution counts where the labels need them (4-number tasks), -1 elsewhere.  # (N,)"""
    if counts is not None:
        if len(counts) != len(tasks):
            raise ValueError(f"got {len(counts)} solution counts for {len(tasks)} tasks")
        return np.asarray(counts, dtype=np.int64)
    result = np.full(len(tasks), -1, dtype=np.int64)
    rows = [i for i, task in enumerate(tasks) if task.num_count == 4]
    result[rows] = solution_counts([tasks[i] for i in rows])
    return result


def num_count_labels(tasks: Sequence[Task]) -> np.ndarray:
    """Report 000's buckets: the number count as text ("3" easy, "4" hard).  # (N,) str"""
    return np.array([str(task.num_count) for task in tasks], dtype=str)


def tier_labels(
    tasks: Sequence[Task],
    counts: Sequence[int] | np.ndarray | None = None,
    rule: TierRule = TierRule(),
) -> np.ndarray:
    """Report 004's tiers as a partition: one of ``TIERS`` per task.  # (N,) str

    Report 004's tiers overlap (T0 3 numbers, small targets; T1 3-4 numbers, target <= 75; T2 4
    numbers, target <= 150; T3 4 numbers, larger or sparse targets). Ours, first rule that applies:

    - OOD: 5 or more numbers;
    - 3 or fewer numbers: T0 when target <= ``t0_max_target`` (50), else T1;
    - 4 numbers: T3 when sparse (solution count <= ``sparse_max_solutions``, 2) or target >
      ``t2_max_target`` (150); else T1 when target <= ``t1_max_target`` (75); else T2.

    On generated data (targets 10..100) this gives about 22% T0, 53% T1, 10% T2, 15% T3.
    ``counts`` (solution counts aligned with ``tasks``) are computed for the 4-number tasks when not given.
    """
    counts = _four_number_counts(tasks, counts)
    sizes = np.array([task.num_count for task in tasks], dtype=np.int64)  # (N,)
    targets = np.array([task.target for task in tasks], dtype=np.int64)  # (N,)
    four = sizes == 4
    sparse_or_large = four & ((counts <= rule.sparse_max_solutions) | (targets > rule.t2_max_target))
    conditions = [
        sizes >= 5,
        (sizes <= 3) & (targets <= rule.t0_max_target),
        sizes <= 3,
        sparse_or_large,
        four & (targets <= rule.t1_max_target),
    ]
    return np.select(conditions, ["OOD", "T0", "T1", "T3", "T1"], default="T2").astype(str)


def level_labels(
    tasks: Sequence[Task],
    counts: Sequence[int] | np.ndarray | None = None,
    rule: LevelRule = LevelRule(),
) -> np.ndarray:
    """Report 001's easy / medium / hard, ours from solver structure: one of ``LEVELS`` per task.  # (N,)

    Report 001 does not give its rule (its bucket sizes, 240,608 / 249,706 / 490,314, read like
    3 numbers / 4 numbers / everything). Ours is a partition:

    - easy: 3 or fewer numbers;
    - medium: 4 numbers with more than ``hard_max_solutions`` (4) solutions (report 003's count);
    - hard: 4 numbers with at most ``hard_max_solutions`` solutions, or 5 or more numbers.

    On generated data this gives about 50% easy, 31% medium, 19% hard.
    """
    counts = _four_number_counts(tasks, counts)
    sizes = np.array([task.num_count for task in tasks], dtype=np.int64)  # (N,)
    conditions = [sizes <= 3, (sizes == 4) & (counts > rule.hard_max_solutions)]
    return np.select(conditions, ["easy", "medium"], default="hard").astype(str)
