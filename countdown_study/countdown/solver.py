"""Exact Countdown solver on rationals: solvability, one solution, report 003's solution count, and
report 002's Difficulty Vector.

The search is report 003's recursive pairwise procedure: take two current values a, b (positions
i < j, the merged value appended after the remaining ones), replace them by a+b, a*b, a-b, b-a, a/b,
b/a (division by zero skipped), and recurse until one value remains. Values are exact
``fractions.Fraction``; an expression counts when its value equals the target.

``difficulty_vectors`` computes the Difficulty Vector of a whole pool. Its batched path enumerates the
fixed derivation orders ("templates") once per task size and evaluates all of them for many tasks at
once on int64 numerator / denominator arrays (exact: cross-multiplication, no rounding); tasks outside
its bounds go through a plain recursive path on Fractions. Both give the same rows.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, partial
from itertools import combinations, pairwise
from random import Random

import numpy as np
import pandas as pd

from countdown_study.countdown.tasks import Task

_Item = tuple[Fraction, str]


@dataclass(frozen=True)
class Step:
    """One merge of a derivation: ``left op right = value`` (exact rationals)."""

    left: Fraction
    """First operand, as written."""
    op: str
    """One of ``+ - * /``."""
    right: Fraction
    """Second operand, as written."""
    value: Fraction
    """The exact result."""

    def __str__(self) -> str:
        return f"{_fmt(self.left)}{self.op}{_fmt(self.right)}={_fmt(self.value)}"


@dataclass(frozen=True)
class Derivation:
    """A full derivation: the merges in order and the final expression (outer parentheses dropped)."""

    steps: tuple[Step, ...]
    """The merges, first to last."""
    expression: str
    """The expression the merges build."""
    value: Fraction
    """Its exact value."""


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _ordered_merges(a, b):
    """The six merges of a pair in search order, as (operator, left, right): a+b, a*b, a-b, b-a, a/b, b/a."""
    return (("+", a, b), ("*", a, b), ("-", a, b), ("-", b, a), ("/", a, b), ("/", b, a))


def _walk(items: list, merge, path: tuple = ()) -> Iterator[tuple[object, tuple]]:
    """The pairwise procedure over any kind of item: every derivation order, in search order.

    ``merge(a, b)`` yields ``(merged item, record)`` for the pair at positions i < j (the merged item
    is appended after the remaining ones). Yields ``(last item, records of the merges in order)``.
    """
    if len(items) == 1:
        yield items[0], path
        return
    n = len(items)
    for i in range(n):
        for j in range(i + 1, n):
            rest = [items[k] for k in range(n) if k != i and k != j]
            for merged, record in merge(items[i], items[j]):
                yield from _walk(rest + [merged], merge, path + (record,))


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


def _value_merges(a: _Item, b: _Item) -> Iterator[tuple[_Item, tuple]]:
    """(value, expression) merges, division by zero skipped; the record is ``Step``'s fields."""
    for op, (x, ex), (y, ey) in _ordered_merges(a, b):
        if op == "/" and y == 0:
            continue
        value = _OPS[op](x, y)
        yield (value, f"({ex}{op}{ey})"), (x, op, y, value)


def _derivations(nums: Sequence[int]) -> Iterator[tuple[_Item, tuple[tuple, ...]]]:
    """Every ((value, expression), steps) the pairwise procedure ends with, one per derivation order."""
    return _walk([(Fraction(int(n)), str(int(n))) for n in nums], _value_merges)


def all_solutions(nums: Sequence[int], target: int, cap: int = 128) -> list[Derivation]:
    """Up to ``cap`` derivations reaching ``target``, one per distinct expression, in search order."""
    goal = Fraction(int(target))
    seen: dict[str, Derivation] = {}
    for (value, expr), steps in _derivations(nums):
        expression = _strip_outer(expr)
        if value == goal and expression not in seen:
            seen[expression] = Derivation(tuple(Step(*step) for step in steps), expression, value)
            if len(seen) >= cap:
                break
    return list(seen.values())


def random_derivation(nums: Sequence[int], rng: Random) -> Derivation:
    """One uniformly chosen merge sequence over ``nums`` (any value; division by zero re-drawn)."""
    items = [(Fraction(int(n)), str(int(n))) for n in nums]
    steps: list[Step] = []
    while len(items) > 1:
        i, j = sorted(rng.sample(range(len(items)), 2))
        rest = [items[k] for k in range(len(items)) if k != i and k != j]
        merges = [m for m in _ordered_merges(items[i], items[j]) if not (m[0] == "/" and m[2][0] == 0)]
        op, (x, ex), (y, ey) = rng.choice(merges)
        value = _OPS[op](x, y)
        steps.append(Step(x, op, y, value))
        items = rest + [(value, f"({ex}{op}{ey})")]
    return Derivation(tuple(steps), _strip_outer(items[0][1]), items[0][0])


def _strip_outer(expr: str) -> str:
    return expr[1:-1] if expr.startswith("(") and expr.endswith(")") and len(expr) > 2 else expr


def solve(nums: Sequence[int], target: int) -> str | None:
    """One expression using every number once that equals ``target`` exactly, or ``None``."""
    goal = Fraction(int(target))
    for (value, expr), _ in _derivations(nums):
        if value == goal:
            return _strip_outer(expr)
    return None


def solution_count(nums: Sequence[int], target: int, cap: int = 128) -> int:
    """Report 003's count: distinct fully parenthesised expressions reaching ``target``, capped at ``cap``.

    Distinct expression strings (with the actual numbers) produced by the pairwise procedure, not
    derivation orders: 24 from [1, 2, 6, 8] gives 75 (83 derivation orders), from [1, 3, 4, 6] gives 1.
    """
    goal = Fraction(int(target))
    found: set[str] = set()
    for (value, expr), _ in _derivations(nums):
        if value == goal:
            found.add(expr)
            if len(found) >= cap:
                return cap
    return len(found)


# ---------------------------------------------------------------------------------------------------------
# Difficulty Vector (report 002): exact features per task, a batched numpy path and an exact Python path
# ---------------------------------------------------------------------------------------------------------

OP_SYMBOLS = ("+", "-", "*", "/")
"""Operator symbols, in the order of the ``requires_*`` columns and of the template operator masks."""
# merge k of ``_ordered_merges`` (a+b, a*b, a-b, b-a, a/b, b/a) -> its OP_SYMBOLS index
_MERGE_OPS = (0, 2, 1, 1, 3, 3)
FAST_MAX_NUMS = 5
"""Largest task size the batched path evaluates; larger tasks go to the exact Python path."""
_CHUNK_ELEMENTS = 1 << 22  # tasks per chunk x final templates, bounds the chunk's working memory
_OP_NAMES = ("add", "sub", "mul", "div")  # column suffixes, in OP_SYMBOLS order
_NEVER = -(2**62) - 1  # below every value the batched path can form (all stay within +-2**62)

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


# --- templates: every derivation order of the pairwise procedure over k positions, in search order ------


@dataclass(frozen=True)
class _Templates:
    """The derivation orders over k positions, indexed in the order ``_derivations`` visits them."""

    formats: tuple[str, ...]
    """Fully parenthesised expression per template, positions as ``{0}`` ... ``{k-1}``."""
    answers: tuple[str, ...]
    """The same without the outer parentheses, as ``solve`` returns it."""
    depth: np.ndarray
    """Expression tree depth per template (a lone number has depth 0).  # (T,)"""
    ops: np.ndarray
    """Whether the template uses each of ``OP_SYMBOLS``.  # (T, 4) bool"""
    op_count: np.ndarray
    """How many distinct symbols the template uses.  # (T,)"""


def _symbolic_merges(a: tuple[str, int, int], b: tuple[str, int, int]):
    """(expression template, depth, operator bit mask) merges, without skipping division by zero."""
    depth = max(a[1], b[1]) + 1
    for k, (op, x, y) in enumerate(_ordered_merges(a, b)):
        yield (f"({x[0]}{op}{y[0]})", depth, a[2] | b[2] | (1 << _MERGE_OPS[k])), None


@cache
def _templates(k: int) -> _Templates:
    rows = [item for item, _ in _walk([(f"{{{p}}}", 0, 0) for p in range(k)], _symbolic_merges)]
    masks = np.array([m for _, _, m in rows], dtype=np.int64)
    ops = (masks[:, None] >> np.arange(len(OP_SYMBOLS))) & 1 == 1  # (T, 4)
    depth = np.array([d for _, d, _ in rows], dtype=np.int64)  # (T,)
    formats = tuple(e for e, _, _ in rows)
    return _Templates(formats, tuple(_strip_outer(e) for e in formats), depth, ops, ops.sum(axis=1))


@cache
def _representatives(first_equal: tuple[int, ...]) -> np.ndarray:
    """Templates that give a new expression string when the numbers repeat as ``first_equal`` says.

    ``first_equal[p]`` is the first position holding the same number as position p; templates whose
    strings coincide after that substitution have the same value, so counting one per string counts
    distinct expressions.  # (T,) bool
    """
    fmts = _templates(len(first_equal)).formats
    seen: set[str] = set()
    keep = np.zeros(len(fmts), dtype=bool)
    labels = [f"x{q}" for q in first_equal]
    for t, fmt in enumerate(fmts):
        expr = fmt.format(*labels)
        if expr not in seen:
            seen.add(expr)
            keep[t] = True
    return keep


# --- batched exact evaluation on int64 numerator / denominator arrays -------------------------------------
# A value is an unreduced fraction n/d; (0, 0) marks a derivation that divided by zero, and stays (0, 0)
# through every later merge. Equality is tested by cross-multiplication, so nothing is ever rounded.


@cache
def _pairs(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair choices of ``_derivations`` over m items: first index, second index, the rest in order."""
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    rest = [[k for k in range(m) if k != i and k != j] for i, j in pairs]
    return np.array([i for i, _ in pairs]), np.array([j for _, j in pairs]), np.array(rest, dtype=np.int64)


def _merge_all(an, ad, bn, bd):
    """The six merges of a with b, stacked last: a+b, a*b, a-b, b-a, a/b, b/a.  # (..., 6)"""
    x, y = an * bd, bn * ad
    d = ad * bd
    num = np.stack([x + y, an * bn, x - y, y - x, x * (y != 0), y * (x != 0)], axis=-1)
    den = np.stack([d, d, d, d, y, x], axis=-1)
    return num, den


def _non_integer(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Whether each (valid) fraction is not an integer.  # (...) -> (...) bool"""
    return np.fmod(num, np.where(den == 0, 1, den)) != 0


def _merge_level(num, den, frac):
    """Pair choice and merge of every state: the rest (B, S, P, m - 2) and the merged value (B, S, P, 6).

    num, den (B, S, m); frac (B, S) or None -> rest_n, rest_d, new_n, new_d, frac (B, S * P * 6) or None
    """
    first, second, rest = _pairs(num.shape[2])
    new_n, new_d = _merge_all(num[:, :, first], den[:, :, first], num[:, :, second], den[:, :, second])
    if frac is not None:
        frac = (frac[:, :, None, None] | _non_integer(new_n, new_d)).reshape(num.shape[0], -1)
    return num[:, :, rest], den[:, :, rest], new_n, new_d, frac


def _final_hits(an, ad, bn, bd, target: np.ndarray) -> np.ndarray:
    """Which of the six last merges of a with b equal the target.  # (B, ...) x 4, (B,) -> (B, S, 6)"""
    x, y, d = an * bd, bn * ad, ad * bd
    t = target.reshape((-1,) + (1,) * (x.ndim - 1))
    goal = t * d
    np.putmask(goal, d == 0, _NEVER)  # an operand divided by zero: (0, 0) must not match
    planes = np.empty((6, *x.shape), dtype=bool)  # one plane per merge, in merge order
    np.equal(x + y, goal, out=planes[0])
    np.equal(an * bn, goal, out=planes[1])
    np.equal(x - y, goal, out=planes[2])
    np.equal(y - x, goal, out=planes[3])
    np.equal(x, t * y, out=planes[4])
    np.equal(y, t * x, out=planes[5])
    planes[4] &= y != 0  # also false when an operand divided by zero: x = y = 0
    planes[5] &= x != 0
    return np.moveaxis(planes, 0, -1).reshape(x.shape[0], -1, 6)


def _evaluate(nums: np.ndarray, target: np.ndarray, flags: bool = True):
    """Which templates reach the target, and which pass a non-integer intermediate.

    nums (B, k) int64, target (B,) int64 -> hit (B, S, 6), template index s * 6 + last merge (for k = 1,
    (B, 1, 1)), and per state s whether it holds a non-integer merge result (B, S) (``None`` without
    ``flags``). The level before the last is not materialised: its rest item and merged value are
    broadcast into the final test.
    """
    b, k = nums.shape
    if k == 1:
        return (nums == target[:, None])[:, :, None], np.zeros((b, 1), dtype=bool)
    num = nums[:, None, :]  # (B, 1, k)
    den = np.ones_like(num)
    frac = np.zeros((b, 1), dtype=bool) if flags else None
    while num.shape[2] > 3:
        rest_n, rest_d, new_n, new_d, frac = _merge_level(num, den, frac)
        shape = (*new_n.shape, rest_n.shape[-1])  # (B, S, P, 6, m - 2)
        rest_n = np.broadcast_to(rest_n[:, :, :, None, :], shape)
        rest_d = np.broadcast_to(rest_d[:, :, :, None, :], shape)
        num = np.concatenate([rest_n, new_n[..., None]], axis=-1).reshape(b, -1, shape[-1] + 1)
        den = np.concatenate([rest_d, new_d[..., None]], axis=-1).reshape(b, -1, shape[-1] + 1)
    if num.shape[2] == 2:
        return _final_hits(num[:, :, 0], den[:, :, 0], num[:, :, 1], den[:, :, 1], target), frac
    rest_n, rest_d, new_n, new_d, frac = _merge_level(num, den, frac)  # (B, S, 3, 1), (B, S, 3, 6)
    return _final_hits(rest_n, rest_d, new_n, new_d, target), frac


def _fits_int64(nums: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Tasks whose cross-multiplications stay below 2**62: 2**(k-1) * M**k * (|target| + 1).  # (B,) bool

    An unreduced k-leaf value has |numerator|, |denominator| <= 2**(k-1) * M**k (M = largest |number|),
    and the final test multiplies two such bounds by the target.
    """
    k = nums.shape[1]
    big = np.maximum(np.abs(nums).max(axis=1), 1).astype(np.float64)
    log2 = (k - 1) + k * np.log2(big) + np.log2(np.abs(target).astype(np.float64) + 1)
    return (log2 < 61) & (nums >= 0).all(axis=1)


def _patterns(nums: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Distinct repetition patterns (per position, the first position holding the same number) and the
    pattern index of each task.  # (B, k) -> list of U tuples, (B,)"""
    first_equal = (nums[:, :, None] == nums[:, None, :]).argmax(axis=2)  # (B, k)
    codes = first_equal @ (nums.shape[1] ** np.arange(nums.shape[1]))  # (B,) base-k code
    _, where, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return [tuple(first_equal[i].tolist()) for i in where], inverse.ravel()


def _segment_min(values: np.ndarray, rows: np.ndarray, b: int, empty: int) -> np.ndarray:
    """Minimum of ``values`` per row for entries sorted by row; ``empty`` for rows with none.

    values (H,), rows (H,) non-decreasing in 0..b-1 -> (b,)
    """
    out = np.full(b, empty, dtype=np.int64)
    if rows.size:
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])  # first entry of each row present
        out[rows[starts]] = np.minimum.reduceat(values, starts)
    return out


def _subset_shortest(
    nums: np.ndarray, target: np.ndarray, full_depth: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Fewest numbers (any subset) reaching the target, and the least depth at that size; 0 / -1 if none.

    nums (B, k), target (B,), full_depth (B,) least depth with all k numbers (-1 if none) -> (B,), (B,)
    """
    b, k = nums.shape
    shortest = np.zeros(b, dtype=np.int64)
    depth = np.full(b, -1, dtype=np.int64)
    for size in range(1, k + 1):
        least = full_depth if size == k else np.full(b, -1, dtype=np.int64)
        for subset in combinations(range(k), size) if size < k else ():
            rows, cols = np.nonzero(_evaluate(nums[:, list(subset)], target, flags=False)[0].reshape(b, -1))
            found = _segment_min(_templates(size).depth[cols], rows, b, -1)
            least = np.where((least < 0) | ((found >= 0) & (found < least)), found, least)
        new = (shortest == 0) & (least >= 0)
        shortest[new], depth[new] = size, least[new]
    return shortest, depth


def _batch_features(nums: np.ndarray, target: np.ndarray, cap: int, nps_cap: int) -> dict[str, np.ndarray]:
    """Difficulty Vector columns for a chunk of same-size tasks on the batched path.

    nums (B, k) int64, target (B,) int64 -> column name -> (B,) array (``solution`` as an object array).
    Hits are sparse (a few dozen of up to 3,888 templates), so the reductions run on their list.
    """
    b, k = nums.shape
    tpl = _templates(k)
    hit3, frac = _evaluate(nums, target)  # (B, S, 6), (B, S)
    rows, cols = np.nonzero(hit3.reshape(b, -1))  # (H,) each, by task then template order
    patterns, inverse = _patterns(nums)
    reps = np.stack([_representatives(p) for p in patterns])  # (U, T)
    count = np.bincount(rows, weights=reps[inverse[rows], cols], minlength=b).astype(np.int64)  # distinct
    total = np.bincount(rows, minlength=b)  # (B,) derivation orders reaching the target
    solvable = count > 0
    cols_out: dict[str, np.ndarray] = {
        "solvable": solvable,
        "solution_count": np.minimum(count, cap),
        "nps_capped": np.minimum(count, nps_cap),
        "op_distinct_min": _segment_min(tpl.op_count[cols], rows, b, 0),
    }
    for o, name in enumerate(_OP_NAMES):
        with_op = np.bincount(rows, weights=tpl.ops[cols, o], minlength=b)
        cols_out[f"requires_{name}"] = solvable & (with_op == total)
    integral = np.bincount(rows, weights=~frac[rows, cols // hit3.shape[2]], minlength=b)  # no fraction
    cols_out["requires_fraction"] = solvable & (integral == 0)
    full_depth = _segment_min(tpl.depth[cols], rows, b, -1)
    cols_out["shortest_operand_count"], cols_out["shortest_expression_depth"] = _subset_shortest(
        nums, target, full_depth
    )
    first = np.zeros(b, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.size else rows
    first[rows[starts]] = cols[starts]  # the first hit in search order
    cols_out["solution"] = np.array(
        [tpl.answers[f].format(*row) if ok else None for f, row, ok in
         zip(first.tolist(), nums.tolist(), solvable.tolist(), strict=True)],
        dtype=object,
    )  # fmt: skip
    return cols_out


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


def _as_arrays(pairs: list[tuple[tuple[int, ...], int]], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Same-size tasks as int64 arrays, and which of them the batched path may take.

    -> nums (N, k), target (N,), fast (N,) bool; rows with a value beyond int64 are zeros, not fast.
    """
    if not 1 <= k <= FAST_MAX_NUMS:
        return (
            np.zeros((len(pairs), k), dtype=np.int64),
            np.zeros(len(pairs), dtype=np.int64),
            np.zeros(len(pairs), dtype=bool),
        )
    try:
        nums = np.array([n for n, _ in pairs], dtype=np.int64).reshape(len(pairs), k)
        target = np.array([t for _, t in pairs], dtype=np.int64)
    except OverflowError:
        small = [max(abs(t), *map(abs, n)) < 2**62 for n, t in pairs]
        nums = np.array(
            [n if ok else (0,) * k for (n, _), ok in zip(pairs, small, strict=True)], dtype=np.int64
        )
        target = np.array([t if ok else 0 for (_, t), ok in zip(pairs, small, strict=True)], dtype=np.int64)
        return nums.reshape(len(pairs), k), target, _fits_int64(nums.reshape(len(pairs), k), target) & small
    return nums, target, _fits_int64(nums, target)


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
