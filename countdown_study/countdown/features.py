"""Report 002's Difficulty Vector: ``difficulty_vectors``, one row of exact features per task.

Every feature comes from the exact solver's pairwise procedure (``solver``). Tasks of up to
``FAST_MAX_NUMS`` numbers within int64 bounds go through the batched numpy path
(``features_batched``); the others through a plain recursive path on Fractions (here). Both give the
same rows.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from functools import partial
from itertools import combinations, pairwise

import numpy as np
import pandas as pd

from countdown_study.countdown.features_batched import (
    _MERGE_OPS,
    _OP_NAMES,
    FAST_MAX_NUMS,
    OP_SYMBOLS,
    _as_arrays,
    _batch_features,
    _templates,
)
from countdown_study.countdown.solver import _OPS, _ordered_merges, _strip_outer, _walk
from countdown_study.countdown.task import Task

__all__ = ["DV_COLUMNS", "FAST_MAX_NUMS", "OP_SYMBOLS", "difficulty_vectors"]

_CHUNK_ELEMENTS = 1 << 22  # tasks per chunk x final templates, bounds the chunk's working memory

DV_COLUMNS = (
    "num_count",
    "target",
    "target_log10",
    "solvable",
    "solution_count",
    "nps_capped",
    "nps_log1p",
    "shortest_operand_count",
    "shortest_expression_depth",
    "all_numbers_required",
    "op_distinct_min",
    "requires_add",
    "requires_sub",
    "requires_mul",
    "requires_div",
    "requires_fraction",
    "solution",
)
"""The columns of ``difficulty_vectors``, in order (defined in its docstring)."""
_SOLVER_COLUMNS = {
    "solvable": bool,
    "solution_count": np.int64,
    "nps_capped": np.int64,
    "shortest_operand_count": np.int64,
    "shortest_expression_depth": np.int64,
    "op_distinct_min": np.int64,
    **{f"requires_{name}": bool for name in (*_OP_NAMES, "fraction")},
    "solution": object,
}  # the columns the solver paths fill, with their dtypes


def _as_pair(task: Task | tuple[Sequence[int], int]) -> tuple[tuple[int, ...], int]:
    if isinstance(task, Task):
        return task.nums, task.target
    nums, target = task
    return tuple(int(n) for n in nums), int(target)


# --- exact Python path: the same fields by plain recursion on Fractions -----------------------------------


def _exact_merges(a: tuple, b: tuple):
    """Merges of (value, expression, depth, operator mask, has a non-integer), division by zero skipped.

    The flag covers the merge results strictly inside the expression (not the numbers, not the
    final value).
    """
    frac = a[4] or b[4] or any(x[2] > 0 and x[0].denominator != 1 for x in (a, b))
    for k, (op, x, y) in enumerate(_ordered_merges(a, b)):
        if op == "/" and y[0] == 0:
            continue
        merged = (_OPS[op](x[0], y[0]), f"({x[1]}{op}{y[1]})", max(a[2], b[2]) + 1,
                  a[3] | b[3] | (1 << _MERGE_OPS[k]), frac)  # fmt: skip
        yield merged, None


def _exact_derivations(items: list[tuple]) -> Iterator[tuple]:
    """Per derivation order, the last item of ``_exact_merges`` (the order of ``_derivations``)."""
    return (item for item, _ in _walk(items, _exact_merges))


def _leaves(nums: Sequence[int]) -> list[tuple]:
    return [(Fraction(int(v)), str(int(v)), 0, 0, False) for v in nums]


def _exact_features(nums: Sequence[int], target: int, cap: int, nps_cap: int) -> dict[str, object]:
    """The batched path's columns for one task, by plain recursion on exact Fractions."""
    goal = Fraction(int(target))
    hits = {d[1]: d for d in _exact_derivations(_leaves(nums)) if d[0] == goal}  # first-found order
    sols = list(hits.values())
    row: dict[str, object] = {
        "solvable": bool(sols),
        "solution_count": min(len(sols), cap),
        "nps_capped": min(len(sols), nps_cap),
        "op_distinct_min": min((d[3].bit_count() for d in sols), default=0),
    }
    for o, name in enumerate(_OP_NAMES):
        row[f"requires_{name}"] = bool(sols) and all(d[3] >> o & 1 for d in sols)
    row["requires_fraction"] = bool(sols) and all(d[4] for d in sols)
    row["shortest_operand_count"], row["shortest_expression_depth"] = 0, -1
    for size in range(1, len(nums) + 1):
        subs = combinations(nums, size)
        depths = [d[2] for sub in subs for d in _exact_derivations(_leaves(sub)) if d[0] == goal]
        if depths:
            row["shortest_operand_count"], row["shortest_expression_depth"] = size, min(depths)
            break
    row["solution"] = _strip_outer(sols[0][1]) if sols else None
    return row


# --- the public table --------------------------------------------------------------------------------------


def difficulty_vectors(
    tasks: Sequence[Task | tuple[Sequence[int], int]], *, cap: int = 128, nps_cap: int = 128, workers: int = 1
) -> pd.DataFrame:
    """Report 002's Difficulty Vector: one row per task, in input order, from an exact solver.

    Every count, flag and solution comes from report 003's pairwise procedure on exact rationals (the
    one ``solve`` and ``solution_count`` use): merge two current values with + * a-b b-a a/b b/a
    (division by zero skipped) until one value remains. A *solution* is a fully parenthesised expression
    string it ends with whose value equals the target and that uses every number once; expressions are
    counted once per distinct string. Columns (``DV_COLUMNS``):

    - ``num_count`` (int): how many numbers the task gives (cardinality n).
    - ``target`` (int): the target.
    - ``target_log10`` (float): log10(max(|target|, 1)), the target magnitude m.
    - ``solvable`` (bool): at least one solution exists.
    - ``solution_count`` (int): distinct solutions capped at ``cap`` (128): ``solution_count(nums, target)``.
    - ``nps_capped`` (int): the valid-solution count nps, the same distinct solutions capped at ``nps_cap``
      (report 002 gives no cap; 128 by default, so it equals ``solution_count`` unless changed).
    - ``nps_log1p`` (float): log(1 + ``nps_capped``).
    - ``shortest_operand_count`` (int): fewest numbers of any sub-multiset (1 to n numbers, each used once)
      from which the procedure reaches the target; a lone number equal to the target counts as 1; 0 when
      no subset reaches it. This is report 002's subset solver and ignores the all-numbers rule.
    - ``shortest_expression_depth`` (int): least tree depth among the expressions over subsets of that
      size reaching the target (a lone number 0, ``a+b`` 1, any 3-number expression 2, 4 numbers 2 when
      balanced ``(a.b).(c.d)`` else 3); -1 when none.
    - ``all_numbers_required`` (bool): no proper subset reaches the target (shortest count is n or 0).
    - ``op_distinct_min`` (int): operator uniqueness u, the fewest distinct symbols among + - * / that one
      solution uses (1 to 3); 0 when unsolvable (or the lone number of a 1-number task).
    - ``requires_add``, ``requires_sub``, ``requires_mul``, ``requires_div`` (bool): operator signs s, every
      solution contains that symbol (either order of - and / counts); False when unsolvable.
    - ``requires_fraction`` (bool): every solution passes through a non-integer intermediate result (a
      merge result other than the final value), like 3/4 in 6/(1-(3/4)); False when unsolvable. Always
      False on the public data, whose generator keeps only tasks with an all-integer solution. (The
      analogous negative-intermediate flag is left out: with both orders of - available it was never
      set on 200,000 random 3- and 4-number tasks.)
    - ``solution`` (str or None): the first solution in search order, exactly what ``solve`` returns.

    ``tasks`` holds ``Task`` records or ``(nums, target)`` pairs. Tasks of 1 to ``FAST_MAX_NUMS``
    non-negative numbers small enough for int64 cross-multiplication go through a batched numpy path
    (all derivation orders at once; distinct strings counted per repetition pattern of the numbers);
    the others through a plain recursive path on Fractions, which gives identical rows. ``workers`` > 1
    splits the tasks into that many contiguous parts computed in separate processes (same rows).
    """
    pairs = [_as_pair(t) for t in tasks]
    if workers > 1 and len(pairs) > 1:
        bounds = np.linspace(0, len(pairs), min(workers, len(pairs)) + 1).astype(int)
        parts = [pairs[lo:hi] for lo, hi in pairwise(bounds.tolist())]
        run = partial(difficulty_vectors, cap=cap, nps_cap=nps_cap)
        with ProcessPoolExecutor(len(parts), mp_context=multiprocessing.get_context("spawn")) as pool:
            return pd.concat(list(pool.map(run, parts)), ignore_index=True)
    n_rows = len(pairs)
    out = {name: np.zeros(n_rows, dtype=dtype) for name, dtype in _SOLVER_COLUMNS.items()}
    by_size: dict[int, list[int]] = {}
    for idx, (nums, _) in enumerate(pairs):
        by_size.setdefault(len(nums), []).append(idx)
    for k, idx_list in by_size.items():
        rows = np.array(idx_list, dtype=np.int64)  # (N_k,) positions in the output
        nums, target, fast = _as_arrays([pairs[i] for i in idx_list], k)  # (N_k, k), (N_k,), (N_k,)
        fast_at = np.flatnonzero(fast)
        step = max(1, _CHUNK_ELEMENTS // len(_templates(k).formats)) if fast_at.size else 1
        for start in range(0, fast_at.size, step):
            part = fast_at[start : start + step]
            for name, values in _batch_features(nums[part], target[part], cap, nps_cap).items():
                out[name][rows[part]] = values
        for p in np.flatnonzero(~fast).tolist():
            for name, value in _exact_features(*pairs[rows[p]], cap, nps_cap).items():
                out[name][rows[p]] = value
    num_count = np.array([len(n) for n, _ in pairs], dtype=np.int64)
    targets = [t for _, t in pairs]
    try:
        target_all = np.array(targets, dtype=np.int64)
    except OverflowError:
        target_all = np.array(targets, dtype=object)  # only for targets beyond int64
    derived = {
        "num_count": num_count,
        "target": target_all,
        "target_log10": np.log10(np.maximum(np.abs(target_all), 1).astype(np.float64))
        if target_all.dtype == np.int64
        else np.array([math.log10(max(abs(t), 1)) for t in targets], dtype=np.float64),
        "nps_log1p": np.log1p(out["nps_capped"].astype(np.float64)),
        "all_numbers_required": (out["shortest_operand_count"] == num_count)
        | (out["shortest_operand_count"] == 0),
    }
    columns = {**out, **derived}
    frame = pd.DataFrame({name: columns[name] for name in DV_COLUMNS if name != "solution"})
    frame["solution"] = pd.Series(out["solution"], dtype=object)  # keeps None, not NaN
    return frame
