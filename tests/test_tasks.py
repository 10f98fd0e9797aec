"""Tests for task data: generator, integer reachability, loading, splits, difficulty labels."""

from __future__ import annotations

import json
import re
from itertools import combinations

import datasets
import numpy as np
import pandas as pd
import pytest

from countdown_study.countdown import generate as generate_module
from countdown_study.countdown import load as load_module
from countdown_study.countdown import solver, task_readers
from countdown_study.countdown.difficulty import (
    LEVELS,
    TIERS,
    LevelRule,
    TierRule,
    level_labels,
    num_count_labels,
    solution_counts,
    tier_labels,
)
from countdown_study.countdown.generate import (
    GeneratorConfig,
    generate_ood_tasks,
    generate_tasks,
    integer_solvable,
    solvable,
)
from countdown_study.countdown.load import TaskRowError, limit_spec, load_tasks, load_tasks_with_report
from countdown_study.countdown.splits import dedupe, split_tasks
from countdown_study.countdown.task import Task

# ---------------------------------------------------------------------------------------------------
# A plain reference for the integer rules: depth-first, returns the merges it used
# ---------------------------------------------------------------------------------------------------


def _integer_merges(a: int, b: int) -> list[tuple[str, int]]:
    lo, hi = min(a, b), max(a, b)
    merges = [(f"{a}+{b}", a + b), (f"{a}*{b}", a * b), (f"{hi}-{lo}", hi - lo)]
    if lo != 0 and hi % lo == 0:
        merges.append((f"{hi}/{lo}", hi // lo))
    return merges


def integer_witness(values: list[int], target: int) -> list[tuple[str, int]] | None:
    """Merges (text, value) reaching ``target`` with non-negative integer intermediates, or None."""
    if len(values) == 1:
        return [] if values[0] == target else None
    for i, j in combinations(range(len(values)), 2):
        rest = [values[k] for k in range(len(values)) if k not in (i, j)]
        for text, value in _integer_merges(values[i], values[j]):
            tail = integer_witness(rest + [value], target)
            if tail is not None:
                return [(text, value)] + tail
    return None


@pytest.fixture(scope="module")
def generated() -> list[Task]:
    return generate_tasks(2000, 0)


# ---------------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------------


def test_generator_is_deterministic_in_seed():
    assert generate_tasks(300, 7) == generate_tasks(300, 7)
    assert generate_tasks(300, 7) != generate_tasks(300, 8)
    assert generate_ood_tasks(20, 7) == generate_ood_tasks(20, 7)


def test_generator_ranges_and_half_three_half_four(generated):
    assert len(generated) == 2000
    assert {t.num_count for t in generated} == {3, 4}
    share_three = np.mean([t.num_count == 3 for t in generated])
    assert 0.45 < share_three < 0.55  # 2000 draws: 4.5 standard deviations
    targets = np.array([t.target for t in generated])
    assert targets.min() >= 10 and targets.max() <= 100
    assert len(set(targets.tolist())) > 85  # uniform over 91 targets
    numbers = np.concatenate([t.nums for t in generated])
    assert numbers.min() >= 1 and numbers.max() <= 99


def test_generated_tasks_solvable_with_non_negative_integer_steps(generated):
    for task in generated[:150]:
        steps = integer_witness(list(task.nums), task.target)
        assert steps is not None, task
        assert all(isinstance(value, int) and value >= 0 for _, value in steps)
        assert steps[-1][1] == task.target
        assert len(steps) == task.num_count - 1
    for task in generated[:40]:
        assert solver.solve(task.nums, task.target) is not None


@pytest.mark.parametrize("stack_rows", [0, 1 << 16])  # children walked in turn / stacked into one batch
def test_integer_solvable_matches_plain_search(monkeypatch, stack_rows):
    monkeypatch.setattr(generate_module, "_STACK_ROWS", stack_rows)
    rng = np.random.default_rng(3)
    tasks = [
        Task(tuple(rng.integers(1, 30, size=count).tolist()), int(rng.integers(0, 120)))
        for count in [3] * 250 + [4] * 100
    ] + [Task(tuple(rng.integers(1, 10, size=5).tolist()), int(rng.integers(100, 400))) for _ in range(12)]
    expected = [integer_witness(list(t.nums), t.target) is not None for t in tasks]
    assert integer_solvable(tasks).tolist() == expected
    for count in (3, 4, 5):  # both outcomes are exercised for every count
        outcomes = {e for t, e in zip(tasks, expected, strict=True) if t.num_count == count}
        assert outcomes == {True, False}, count


def test_fraction_only_task_is_solvable_but_not_integer_solvable():
    tasks = [Task((1, 3, 4, 6), 24), Task((1, 2, 6, 8), 24), Task((1, 1, 1), 100)]
    assert integer_solvable(tasks).tolist() == [False, True, False]  # 24 = 6/(1-3/4) needs fractions
    assert solvable(tasks).tolist() == [True, True, False]


def test_ood_tasks_have_five_numbers_in_range():
    tasks = generate_ood_tasks(30, 1)
    assert {t.num_count for t in tasks} == {5}
    assert all(10 <= t.target <= 100 and min(t.nums) >= 1 and max(t.nums) <= 99 for t in tasks)
    assert all(integer_witness(list(t.nums), t.target) is not None for t in tasks[:10])


def test_generator_config_and_arguments():
    assert generate_tasks(0, 1) == []
    tasks = generate_tasks(50, 2, num_counts=(4,), config=GeneratorConfig(min_target=24, max_target=24))
    assert {t.target for t in tasks} == {24} and {t.num_count for t in tasks} == {4}
    with pytest.raises(ValueError, match="min_target <= max_target"):
        GeneratorConfig(min_target=50, max_target=10)
    with pytest.raises(ValueError, match="non-negative"):
        generate_tasks(-1, 0)
    with pytest.raises(ValueError, match="num_counts"):
        generate_tasks(5, 0, num_counts=())
    with pytest.raises(ValueError, match="unreachable"):
        generate_tasks(1, 0, num_counts=(2,), config=GeneratorConfig(97, 97, max_number=1))


# ---------------------------------------------------------------------------------------------------
# Loading: local files in the public format
# ---------------------------------------------------------------------------------------------------

ROWS = {"target": [24, 10, 98], "nums": [[1, 2, 6, 8], [2, 5, 1], [44, 19, 35]]}
EXPECTED = [Task((1, 2, 6, 8), 24), Task((2, 5, 1), 10), Task((44, 19, 35), 98)]


def _write_jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_load_local_parquet_jsonl_json_csv(tmp_path):
    frame = pd.DataFrame(ROWS)
    frame.to_parquet(tmp_path / "t.parquet")
    frame.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    frame.to_json(tmp_path / "t.json", orient="records")  # a JSON array
    pd.DataFrame({"target": ROWS["target"], "nums": [str(n) for n in ROWS["nums"]]}).to_csv(
        tmp_path / "t.csv", index=False
    )  # nums as '[1, 2, 6, 8]'
    for name in ("t.parquet", "t.jsonl", "t.json", "t.csv"):
        assert load_tasks(tmp_path / name) == EXPECTED, name
        assert load_tasks(str(tmp_path / name), limit=2) == EXPECTED[:2], name


def test_load_files_written_by_datasets(tmp_path):
    dataset = datasets.Dataset.from_dict(ROWS)
    dataset.to_parquet(str(tmp_path / "d.parquet"))
    dataset.to_json(str(tmp_path / "d.jsonl"))
    dataset.to_csv(str(tmp_path / "d.csv"))  # writes nums as '[1 2 6 8]'
    for name in ("d.parquet", "d.jsonl", "d.csv"):
        assert load_tasks(tmp_path / name) == EXPECTED, name


def test_load_dataset_folder_in_the_hub_layout(tmp_path):
    folder = tmp_path / "countdown_tasks" / "data"
    folder.mkdir(parents=True)
    datasets.Dataset.from_dict(ROWS).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    tasks = load_tasks(tmp_path / "countdown_tasks", split="train", cache_dir=tmp_path / "cache")
    assert tasks == EXPECTED


BAD_ROWS = [
    # (row 1 as JSON, field named, words in the reason)
    ({"nums": [1, 2, 3]}, "target", "missing"),
    ({"target": 3.5, "nums": [1, 2, 3]}, "target", "3.5 is not an integer"),
    ({"target": "a", "nums": [1, 2, 3]}, "target", "'a' is not an integer"),
    ({"target": True, "nums": [1, 2, 3]}, "target", "True is not an integer"),
    ({"target": -4, "nums": [1, 2, 3]}, "target", "negative"),
    ({"target": 6}, "nums", "missing"),
    ({"target": 6, "nums": "1 2 3"}, "nums", "expected a list"),
    ({"target": 6, "nums": [1, 2.5, 3]}, "nums", "number 1 (2.5) is not an integer"),
    ({"target": 6, "nums": [1, "a", 3]}, "nums", "number 1 ('a') is not an integer"),
    ({"target": 6, "nums": [1, 2, False]}, "nums", "number 2 (False) is not an integer"),
    ({"target": 6, "nums": [1, 0, 3]}, "nums", "number 1 (0) is not positive"),
    ({"target": 6, "nums": [1, -2, 3]}, "nums", "number 1 (-2) is not positive"),
    ({"target": 6, "nums": [6, 1]}, "nums", "has 2 numbers"),
    ({"target": 6, "nums": [1, 1, 1, 1, 1, 1]}, "nums", "has 6 numbers"),
    ([6, [1, 2, 3]], "row", "expected a JSON object"),
]


@pytest.mark.parametrize(("bad", "field", "reason"), BAD_ROWS)
def test_bad_row_error_names_row_and_field(tmp_path, bad, field, reason):
    path = _write_jsonl(tmp_path / "bad.jsonl", [{"target": 6, "nums": [1, 2, 3]}, bad])
    with pytest.raises(TaskRowError, match=f"row 1, field '{field}'") as caught:
        load_tasks(path)
    assert reason in str(caught.value)
    assert caught.value.problem.row == 1 and caught.value.problem.field == field


def test_bad_csv_cells_and_bad_json_line(tmp_path):
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text('target,nums\n6,"[1, 2, 3]"\n3.5,"[1, 2, 3]"\n6,"[1, 2, a]"\n,"[1, 2, 3]"\n')
    with pytest.raises(
        TaskRowError, match=r"row 1, field 'target': 3.5 is not an integer"
    ):  # as JSON reads it
        load_tasks(csv_path)
    tasks, report = load_tasks_with_report(csv_path, on_invalid="drop")
    assert tasks == [Task((1, 2, 3), 6)]
    assert [(p.row, p.field) for p in report.problems] == [(1, "target"), (2, "nums"), (3, "target")]
    json_path = tmp_path / "bad.jsonl"
    json_path.write_text('{"target": 6, "nums": [1, 2, 3]}\n{"target": 6, "nums": [1, 2\n')
    with pytest.raises(TaskRowError, match="row 1, field 'row': not valid JSON"):
        load_tasks(json_path)
    array_path = tmp_path / "bad.json"
    array_path.write_text('[{"target": 6, "nums": [1, 2, 3]},')
    with pytest.raises(ValueError, match="not a valid JSON array"):
        load_tasks(array_path)


def test_csv_and_json_lines_agree_on_integers(tmp_path):
    # '6.0' is the integral number 6 in both; the Arabic-Indic digit '٦' is text in both
    for target, expected in (("6.0", [Task((1, 2, 3), 6)]), ("٦", None)):
        csv_path = tmp_path / "t.csv"
        csv_path.write_text(f'target,nums\n{target},"[1, 2, 3]"\n', encoding="utf-8")
        json_path = tmp_path / "t.jsonl"
        json_value = target if target == "6.0" else json.dumps(target)
        json_path.write_text(f'{{"target": {json_value}, "nums": [1, 2, 3]}}\n', encoding="utf-8")
        for path in (csv_path, json_path):
            if expected is None:
                with pytest.raises(TaskRowError, match="field 'target'.* is not an integer"):
                    load_tasks(path)
            else:
                assert load_tasks(path) == expected, path.name


def test_byte_order_mark_and_unreadable_files_are_named(tmp_path):
    bom = tmp_path / "bom.csv"
    bom.write_bytes('\ufefftarget,nums\n6,"[1, 2, 3]"\n'.encode())
    assert load_tasks(bom) == [Task((1, 2, 3), 6)]
    bom_lines = tmp_path / "bom.jsonl"
    bom_lines.write_bytes('\ufeff{"target": 6, "nums": [1, 2, 3]}\n'.encode())
    assert load_tasks(bom_lines) == [Task((1, 2, 3), 6)]
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b'target,nums\n6,"[1, 2, 3]"\n\xff\xfe,x\n')
    with pytest.raises(ValueError, match=f"{latin}: cannot read as .csv"):
        load_tasks(latin)
    huge = tmp_path / "huge.csv"
    huge.write_text('target,nums\n6,"' + "1" * 200_000 + '"\n')
    with pytest.raises(ValueError, match=f"{huge}: cannot read as .csv: field larger than field limit"):
        load_tasks(huge)
    torn = tmp_path / "torn.parquet"
    pd.DataFrame(ROWS).to_parquet(torn)
    torn.write_bytes(torn.read_bytes()[:-40])
    with pytest.raises(ValueError, match=re.escape(str(torn))):  # pyarrow's message, which names it
        load_tasks(torn)
    torn.write_bytes(b"PAR1" + bytes(64) + b"PAR1")  # magic bytes, garbage footer
    with pytest.raises(ValueError, match=re.escape(str(torn))):
        load_tasks(torn)


def test_a_folder_of_csv_files_gives_the_tasks_of_its_files_one_by_one(tmp_path):
    folder = tmp_path / "csv_tasks"
    folder.mkdir()
    (folder / "a.csv").write_text('target,nums\n24,"[1, 2, 6, 8]"\n10,"[2, 5, 1]"\n')
    datasets.Dataset.from_dict({"target": [98], "nums": [[44, 19, 35]]}).to_csv(
        str(folder / "b.csv")
    )  # '[44 19 35]'
    (folder / "README.md").write_text("not data\n")
    one_by_one = load_tasks(folder / "a.csv") + load_tasks(folder / "b.csv")
    assert one_by_one == EXPECTED
    assert load_tasks(folder) == one_by_one
    assert load_tasks(folder, limit=2) == EXPECTED[:2] and load_tasks(folder, limit=3) == EXPECTED
    (folder / "c.csv").write_text('target,nums\n6,"[1, 2, 3]"\n3.5,"[1, 2, 3]"\n')
    with pytest.raises(TaskRowError, match=rf"{re.escape(str(folder))}: row 4, field 'target': 3.5"):
        load_tasks(folder)  # rows count on across the files


def test_a_folder_reads_the_files_of_the_split_asked_for(tmp_path):
    folder = tmp_path / "splits"
    folder.mkdir()
    (folder / "train.csv").write_text('target,nums\n24,"[1, 2, 6, 8]"\n')
    (folder / "test.csv").write_text('target,nums\n10,"[2, 5, 1]"\n')
    assert load_tasks(folder) == EXPECTED[:1] and load_tasks(folder, split="test") == EXPECTED[1:2]
    with pytest.raises(ValueError, match=rf"{re.escape(str(folder))}: no 'validation' split"):
        load_tasks(folder, split="validation")


def test_an_unreadable_file_in_a_folder_is_named(tmp_path):
    folder = tmp_path / "lines"
    folder.mkdir()
    _write_jsonl(folder / "a.jsonl", [{"target": 6, "nums": [1, 2, 3]}])
    (folder / "b.jsonl").write_bytes(b'{"target": 6, "nums": [1, 2, 3]}\n\xff\xfe\n')  # not UTF-8
    with pytest.raises(ValueError, match=rf"^{re.escape(str(folder / 'b.jsonl'))}: cannot read as .jsonl"):
        load_tasks(folder)


def test_a_data_set_that_does_not_load_is_named_in_one_error(monkeypatch):
    def generation_fails(*args, **kwargs):
        try:
            raise OSError("JSON parse error: Invalid value. in row 1")
        except OSError as cause:
            raise datasets.exceptions.DatasetGenerationError("An error occurred while generating") from cause

    monkeypatch.setattr(datasets, "load_dataset", generation_fails)
    with pytest.raises(ValueError, match=r"^owner/tasks: cannot load the data set: An error .*row 1\)$"):
        load_tasks("owner/tasks")


def test_folder_of_several_formats_is_refused(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    _write_jsonl(folder / "a.jsonl", [{"target": 6, "nums": [1, 2, 3]}])
    (folder / "b.csv").write_text('target,nums\n6,"[1, 2, 3]"\n')
    with pytest.raises(ValueError, match=r"several formats \['.csv', '.jsonl'\]"):
        load_tasks(folder)


def test_float_column_in_parquet(tmp_path):
    pd.DataFrame({"target": [6.0, 3.5], "nums": [[1, 2, 3], [1, 2, 3]]}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(TaskRowError, match="row 1, field 'target': 3.5 is not an integer"):
        load_tasks(tmp_path / "f.parquet")
    assert load_tasks(tmp_path / "f.parquet", limit=1) == [Task((1, 2, 3), 6)]  # 6.0 is integral


def test_missing_column_names_the_field(tmp_path):
    pd.DataFrame({"target": [6], "numbers": [[1, 2, 3]]}).to_parquet(tmp_path / "m.parquet")
    with pytest.raises(TaskRowError, match="row 0, field 'nums': missing"):
        load_tasks(tmp_path / "m.parquet")


def test_require_solvable(tmp_path):
    path = _write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"target": 6, "nums": [1, 2, 3]},
            {"target": 100, "nums": [1, 1, 1]},
            {"target": 24, "nums": [1, 3, 4, 6]},
        ],
    )
    assert len(load_tasks(path)) == 3
    with pytest.raises(TaskRowError, match="row 1, field 'target': unreachable"):
        load_tasks(path, require_solvable=True)
    tasks, report = load_tasks_with_report(path, require_solvable=True, on_invalid="drop")
    assert tasks == [Task((1, 2, 3), 6), Task((1, 3, 4, 6), 24)]  # fractions are allowed
    assert (report.rows, report.kept, report.dropped) == (3, 2, 1)


def test_drop_mode_counts_and_warns(tmp_path):
    records = [
        {"target": 6, "nums": [1, 2, 3]},
        {"target": 6, "nums": [1, 0, 3]},
        {"target": 24, "nums": [1, 2, 6, 8]},
        {"target": "x", "nums": [1, 2, 3]},
        {"nums": [1, 2, 3]},
    ]
    path = _write_jsonl(tmp_path / "d.jsonl", records)
    with pytest.warns(UserWarning, match=r"dropped 3 of 5 rows \(first: row 1, field 'nums'"):
        tasks = load_tasks(path, on_invalid="drop")
    assert tasks == [Task((1, 2, 3), 6), Task((1, 2, 6, 8), 24)]
    _, report = load_tasks_with_report(path, on_invalid="drop")
    assert [(p.row, p.field) for p in report.problems] == [(1, "nums"), (3, "target"), (4, "target")]
    assert (report.rows, report.kept, report.dropped) == (5, 2, 3)


def test_allowed_counts_are_configurable(tmp_path):
    path = _write_jsonl(
        tmp_path / "c.jsonl", [{"target": 6, "nums": [1, 2, 3]}, {"target": 8, "nums": [4, 2]}]
    )
    assert load_tasks(path, allowed_counts=(2, 3)) == [Task((1, 2, 3), 6), Task((4, 2), 8)]
    with pytest.raises(TaskRowError, match=r"row 0, field 'nums': has 3 numbers; allowed counts are \(4,\)"):
        load_tasks(path, allowed_counts=(4,))


def test_generated_spec_and_task_lists():
    assert load_tasks("generated:40:3") == generate_tasks(40, 3)
    assert load_tasks("generated:40:3", limit=5) == generate_tasks(40, 3)[:5]
    assert load_tasks("ood:6:2") == generate_ood_tasks(6, 2)
    assert load_tasks(EXPECTED) == EXPECTED
    assert limit_spec("ood:200:0", 100) == "ood:100:0"
    assert limit_spec("generated:40:3", 500) == "generated:40:3"
    assert limit_spec("data/tasks.parquet", 5) == "data/tasks.parquet"
    with pytest.raises(ValueError, match="limit must be at least 1, got 0"):
        limit_spec("ood:200:0", 0)
    with pytest.raises(TaskRowError, match="list of tasks: row 1, field 'row': expected a Task"):
        load_tasks([EXPECTED[0], (1, 2, 3)])
    with pytest.raises(TaskRowError, match="row 0, field 'nums': number 1 \\(0\\) is not positive"):
        load_tasks([Task((1, 0, 3), 3)])


def test_unknown_sources_are_clear_errors(tmp_path):
    (tmp_path / "tasks.txt").write_text("24 1 2 6 8\n")
    with pytest.raises(ValueError, match="unknown file type '.txt'"):
        load_tasks(tmp_path / "tasks.txt")
    with pytest.raises(FileNotFoundError, match="task file not found"):
        load_tasks(tmp_path / "missing.parquet")
    with pytest.raises(FileNotFoundError, match="task file not found"):
        load_tasks("missing.csv")
    with pytest.raises(ValueError, match="unknown task source 'no source here'"):
        load_tasks("no source here")
    with pytest.raises(ValueError, match="expected generated:COUNT:SEED"):
        load_tasks("generated:ten:1")
    with pytest.raises(ValueError, match="on_invalid"):
        load_tasks(EXPECTED, on_invalid="skip")


# ---------------------------------------------------------------------------------------------------
# Splits and deduplication
# ---------------------------------------------------------------------------------------------------


def test_dedupe_by_canonical_key():
    tasks = [Task((1, 2, 3), 6), Task((3, 2, 1), 6), Task((1, 2, 3), 7), Task((2, 1, 3), 7)]
    assert dedupe(tasks) == [Task((1, 2, 3), 6), Task((1, 2, 3), 7)]


def test_split_never_leaks_reordered_duplicates():
    base = generate_tasks(300, 5)
    tasks = base + [Task(tuple(reversed(t.nums)), t.target) for t in base[::2]]  # reordered copies
    train, val, test = split_tasks(tasks, (0.8, 0.1, 0.1), seed=1)
    keys = [{t.key for t in part} for part in (train, val, test)]
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    assert sorted(train + val + test, key=tasks.index) == sorted(tasks, key=tasks.index)
    n_keys = len({t.key for t in tasks})
    assert [len(k) for k in keys] == [
        round(0.8 * n_keys),
        round(0.9 * n_keys) - round(0.8 * n_keys),
        n_keys - round(0.9 * n_keys),
    ]
    shuffled = list(reversed(tasks))
    assert [{t.key for t in p} for p in split_tasks(shuffled, seed=1)] == keys  # set and seed decide
    assert [{t.key for t in p} for p in split_tasks(tasks, seed=2)] != keys


def test_split_fractions_must_sum_to_one():
    with pytest.raises(ValueError, match="sum to 1"):
        split_tasks(EXPECTED, (0.5, 0.2))
    with pytest.raises(ValueError, match="non-negative"):
        split_tasks(EXPECTED, (1.2, -0.2))


# ---------------------------------------------------------------------------------------------------
# Difficulty labels
# ---------------------------------------------------------------------------------------------------

TIER_CASES = [
    # (nums, target, solution count, tier)
    ((10, 5, 2), 50, 2, "T0"),  # 3 numbers, target at the T0 bound
    ((25, 2, 1), 51, 1, "T1"),  # 3 numbers above it
    ((3, 4, 5, 6), 75, 10, "T1"),  # dense 4 numbers at the T1 bound
    ((3, 4, 5, 6), 76, 10, "T2"),  # dense 4 numbers above it
    ((3, 4, 5, 6), 80, 3, "T2"),  # three solutions is not sparse
    ((3, 4, 5, 6), 60, 2, "T3"),  # sparse
    ((90, 80, 2, 1), 151, 40, "T3"),  # above the T2 bound
    ((1, 2, 3, 4, 5), 15, 128, "OOD"),
]


def test_tier_labels_on_hand_made_tasks():
    tasks = [Task(nums, target) for nums, target, _, _ in TIER_CASES]
    counts = [count for _, _, count, _ in TIER_CASES]
    assert tier_labels(tasks, counts).tolist() == [tier for *_, tier in TIER_CASES]
    stricter = TierRule(t0_max_target=40, sparse_max_solutions=3)
    assert tier_labels(tasks, counts, stricter).tolist() == ["T1", "T1", "T1", "T2", "T3", "T3", "T3", "OOD"]


def test_labels_from_computed_solution_counts():
    # report 003's examples: 75 solutions (dense) and 1 solution (sparse)
    tasks = [Task((1, 2, 6, 8), 24), Task((1, 3, 4, 6), 24), Task((4, 9, 2), 17)]
    assert solution_counts(tasks).tolist() == [75, 1, solver.solution_count((4, 9, 2), 17)]
    assert tier_labels(tasks).tolist() == ["T1", "T3", "T0"]
    assert level_labels(tasks).tolist() == ["medium", "hard", "easy"]


def test_level_labels_on_hand_made_tasks():
    tasks = [Task((1, 2, 3), 6), Task((1, 2, 3, 4), 10), Task((1, 2, 3, 4), 10), Task((1, 2, 3, 4, 5), 15)]
    assert level_labels(tasks, [5, 5, 4, 100]).tolist() == ["easy", "medium", "hard", "hard"]
    assert level_labels(tasks, [5, 5, 4, 100], LevelRule(hard_max_solutions=5)).tolist() == [
        "easy",
        "hard",
        "hard",
        "hard",
    ]
    with pytest.raises(ValueError, match="got 2 solution counts for 4 tasks"):
        level_labels(tasks, [1, 2])


def test_num_count_labels():
    assert num_count_labels(EXPECTED).tolist() == ["4", "3", "3"]


def test_tiers_and_levels_partition_generated_data(generated):
    tasks = generated[:600] + generate_ood_tasks(5, 0)
    tiers, levels = tier_labels(tasks), level_labels(tasks)  # counts computed for the 4-number tasks
    assert len(tiers) == len(levels) == len(tasks)
    assert set(tiers.tolist()) == set(TIERS)  # every tier non-empty, nothing else
    assert set(levels.tolist()) == set(LEVELS)
    assert (tiers == "OOD").sum() == 5
    three = np.array([t.num_count == 3 for t in tasks])
    assert set(tiers[three].tolist()) == {"T0", "T1"} and set(levels[three].tolist()) == {"easy"}


def test_a_generated_spec_is_made_once_per_process_and_each_caller_gets_its_own_list(monkeypatch):
    made = []
    generate = task_readers._GENERATORS["generated"]
    monkeypatch.setitem(
        task_readers._GENERATORS, "generated", lambda count, seed: made.append(seed) or generate(count, seed)
    )
    load_module._spec_tasks.cache_clear()
    first = load_tasks("generated:50:123")
    first.clear()  # a caller changing its list changes no other caller's
    second, report = load_tasks_with_report("generated:50:123")
    assert made == [123] and len(second) == 50 and report.kept == 50
    assert second == generate_tasks(50, 123)
    assert load_tasks("generated:50:124") == generate_tasks(50, 124) and made == [123, 124]
    assert load_tasks("generated:50:123", limit=10) == second[:10] and made == [123, 124, 123]
    load_module._spec_tasks.cache_clear()
