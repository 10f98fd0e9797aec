"""Tests for the exact solver: report 003's worked examples, the cap, and the Difficulty Vector table.

The batched Difficulty Vector path is checked field by field against a brute-force reference written
here from scratch: plain recursion on ``Fraction`` over every derivation order and every subset.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from itertools import combinations
from random import Random

import numpy as np
import pytest

from countdown_study.countdown.features import DV_COLUMNS, difficulty_vectors
from countdown_study.countdown.solver import all_solutions, random_derivation, solution_count, solve
from countdown_study.countdown.task import Task

# --- brute-force reference --------------------------------------------------------------------------------

_APPLY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
}
_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


def _trees(items: list[tuple]) -> Iterator[tuple]:
    """(value, text, depth, operator set, has a non-integer intermediate) of every derivation order."""
    if len(items) == 1:
        yield items[0]
        return
    for i, j in combinations(range(len(items)), 2):
        rest = [item for k, item in enumerate(items) if k not in (i, j)]
        a, b = items[i], items[j]
        frac = a[4] or b[4] or any(x[2] > 0 and x[0].denominator != 1 for x in (a, b))
        for op, x, y in (("+", a, b), ("*", a, b), ("-", a, b), ("-", b, a), ("/", a, b), ("/", b, a)):
            if op == "/" and y[0] == 0:
                continue
            node = (
                _APPLY[op](x[0], y[0]),
                f"({x[1]}{op}{y[1]})",
                max(a[2], b[2]) + 1,
                a[3] | b[3] | {op},
                frac,
            )
            yield from _trees(rest + [node])


def _leaves(nums) -> list[tuple]:
    return [(Fraction(n), str(n), 0, frozenset(), False) for n in nums]


def _reference_row(nums: tuple[int, ...], target: int, cap: int = 128) -> dict:
    goal = Fraction(target)
    sols: dict[str, tuple] = {}
    for tree in _trees(_leaves(nums)):
        if tree[0] == goal:
            sols.setdefault(tree[1], tree)
    found = list(sols.values())
    shortest, depth = 0, -1
    for size in range(1, len(nums) + 1):
        depths = [t[2] for sub in combinations(nums, size) for t in _trees(_leaves(sub)) if t[0] == goal]
        if depths:
            shortest, depth = size, min(depths)
            break
    first = found[0][1] if found else None
    row = {
        "num_count": len(nums),
        "target": target,
        "solvable": bool(found),
        "solution_count": min(len(found), cap),
        "nps_capped": min(len(found), cap),
        "shortest_operand_count": shortest,
        "shortest_expression_depth": depth,
        "all_numbers_required": shortest in (0, len(nums)),
        "op_distinct_min": min((len(t[3]) for t in found), default=0),
        "requires_fraction": bool(found) and all(t[4] for t in found),
        "solution": first[1:-1] if first and first.startswith("(") else first,
    }
    for op, name in _NAMES.items():
        row[f"requires_{name}"] = bool(found) and all(op in t[3] for t in found)
    return row


def _random_tasks(rng: Random, count: int, num_count: int) -> list[tuple[tuple[int, ...], int]]:
    """A mix: random targets (many unsolvable), small numbers (repeats), and derived (solvable) targets."""
    tasks = []
    while len(tasks) < count:
        kind = len(tasks) % 3
        high = 12 if kind == 1 else 99
        nums = tuple(rng.randint(0 if kind == 1 else 1, high) for _ in range(num_count))
        if kind == 2:
            value = random_derivation(nums, rng).value
            if value.denominator != 1 or not 0 <= value <= 1000:
                continue
            target = int(value)
        else:
            target = rng.randint(1, 100)
        tasks.append((nums, target))
    return tasks


def _assert_rows_equal(frame, tasks) -> None:
    for i, (nums, target) in enumerate(tasks):
        expected = _reference_row(nums, target)
        got = frame.iloc[i]
        for name, value in expected.items():
            assert got[name] == value or (value is None and got[name] is None), (nums, target, name)


# --- report 003's worked examples, solve, the cap ---------------------------------------------------------


def test_worked_example_counts() -> None:
    assert solution_count([1, 2, 6, 8], 24) == 75  # report 003: 75 derivations
    assert solution_count([1, 3, 4, 6], 24) == 1  # report 003: only 6/(1-3/4)


def test_single_solution_is_six_over_one_minus_three_quarters() -> None:
    expr = solve([1, 3, 4, 6], 24)
    assert expr == "6/(1-(3/4))"
    assert Fraction(6) / (1 - Fraction(3, 4)) == 24
    assert [d.expression for d in all_solutions([1, 3, 4, 6], 24)] == ["6/(1-(3/4))"]


def test_solve_returns_none_when_unsolvable() -> None:
    assert solve([1, 1, 1], 10) is None  # at most 3 from three ones
    assert solve([2, 2], 5) is None
    assert solution_count([1, 1, 1], 10) == 0


def test_cap() -> None:
    nums, target = (1, 2, 3, 6), 6  # 149 distinct expressions
    uncapped = _reference_row(nums, target, cap=10**6)["solution_count"]
    assert uncapped == 149
    assert solution_count(nums, target) == 128
    assert solution_count(nums, target, cap=10) == 10
    frame = difficulty_vectors([(nums, target)], cap=10, nps_cap=1000)
    assert frame.loc[0, "solution_count"] == 10
    assert frame.loc[0, "nps_capped"] == uncapped
    assert frame.loc[0, "nps_log1p"] == pytest.approx(np.log1p(uncapped))


# --- Difficulty Vector fields on hand-checked tasks -------------------------------------------------------


def test_dv_one_solution_with_a_fraction() -> None:
    row = difficulty_vectors([Task((1, 3, 4, 6), 24)]).iloc[0]
    assert list(row.index) == list(DV_COLUMNS)
    assert (row.num_count, row.target, row.solvable, row.solution_count, row.nps_capped) == (
        4,
        24,
        True,
        1,
        1,
    )
    assert row.nps_log1p == pytest.approx(np.log(2))
    assert row.target_log10 == pytest.approx(np.log10(24))
    # the subset solver finds 4*6: two operands, depth 1, so not every number is needed
    assert (row.shortest_operand_count, row.shortest_expression_depth, row.all_numbers_required) == (
        2,
        1,
        False,
    )
    # 6/(1-(3/4)): two distinct operators, - and /, through the intermediate 3/4
    assert row.op_distinct_min == 2
    assert (row.requires_add, row.requires_sub, row.requires_mul, row.requires_div) == (
        False,
        True,
        False,
        True,
    )
    assert row.requires_fraction
    assert row.solution == "6/(1-(3/4))"


def test_dv_products_only() -> None:
    # 24 from [2, 3, 4]: only 2*3*4, once per pair merged first; no pair or lone number reaches 24
    row = difficulty_vectors([((2, 3, 4), 24)]).iloc[0]
    assert row.solution_count == 3
    assert (row.shortest_operand_count, row.shortest_expression_depth, row.all_numbers_required) == (
        3,
        2,
        True,
    )
    assert row.op_distinct_min == 1
    assert (row.requires_add, row.requires_sub, row.requires_mul, row.requires_div) == (
        False,
        False,
        True,
        False,
    )
    assert row.solution == "4*(2*3)"  # first pair (2, 3) merged, appended after 4


def test_dv_unsolvable_and_lone_number() -> None:
    frame = difficulty_vectors([((1, 1, 1), 10), ((24, 5), 24), ((1, 2, 6, 8), 24)])
    none, lone, example = frame.iloc[0], frame.iloc[1], frame.iloc[2]
    assert (none.solvable, none.solution_count, none.nps_log1p, none.op_distinct_min) == (False, 0, 0.0, 0)
    assert (none.shortest_operand_count, none.shortest_expression_depth, none.all_numbers_required) == (
        0,
        -1,
        True,
    )
    assert not none.requires_mul and none.solution is None
    assert (lone.solvable, lone.shortest_operand_count, lone.shortest_expression_depth) == (False, 1, 0)
    assert not lone.all_numbers_required
    assert (example.solution_count, example.solution) == (75, solve([1, 2, 6, 8], 24))


def test_dv_keeps_input_order_and_accepts_tasks_or_pairs() -> None:
    pairs = [((5, 5, 5, 5), 25), ((7, 3), 21), ((1, 2, 3), 6), ((9, 9, 9, 9, 9), 45), ((4, 4), 8)]
    frame = difficulty_vectors(pairs)
    assert frame.num_count.tolist() == [4, 2, 3, 5, 2]
    assert frame.target.tolist() == [25, 21, 6, 45, 8]
    records = difficulty_vectors([Task(n, t) for n, t in pairs])
    assert records.equals(frame)
    assert difficulty_vectors([]).columns.tolist() == list(DV_COLUMNS)


# --- equivalence with the brute-force reference -----------------------------------------------------------


def test_dv_matches_brute_force_on_random_tasks() -> None:
    rng = Random(20240531)
    tasks = _random_tasks(rng, 2000, 3) + _random_tasks(rng, 240, 4) + _random_tasks(rng, 200, 2)
    tasks += _random_tasks(rng, 60, 1)
    rng.shuffle(tasks)
    frame = difficulty_vectors(tasks)
    assert 0.1 < frame.solvable.mean() < 0.9
    assert (frame.solution_count < frame.solution_count.max()).any()
    assert frame.requires_fraction.any()
    assert any(len(set(n)) < len(n) for n, _ in tasks)
    _assert_rows_equal(frame, tasks)


def test_dv_matches_public_solver_functions() -> None:
    tasks = _random_tasks(Random(7), 80, 4) + _random_tasks(Random(8), 150, 3)
    frame = difficulty_vectors(tasks)
    assert frame.solution.tolist() == [solve(n, t) for n, t in tasks]
    assert frame.solution_count.tolist() == [solution_count(n, t) for n, t in tasks]


def test_exact_fallback_for_large_numbers_matches_reference() -> None:
    # 4 numbers near 10**5 overflow int64 cross-multiplication bounds: the recursive path takes over
    tasks = [((100000, 99999, 3, 1), 300000), ((123456, 2, 2, 7), 61728), ((-3, 5, 2), 4)]
    _assert_rows_equal(difficulty_vectors(tasks), tasks)


@pytest.mark.slow
def test_five_numbers_match_reference() -> None:
    tasks = [((6, 6, 2, 9, 9), 100)]  # repeated numbers: distinct strings counted per pattern
    _assert_rows_equal(difficulty_vectors(tasks), tasks)


def test_worker_processes_give_the_same_table() -> None:
    tasks = _random_tasks(Random(3), 90, 4) + _random_tasks(Random(4), 90, 3)
    single = difficulty_vectors(tasks)
    assert difficulty_vectors(tasks, workers=2).equals(single)
