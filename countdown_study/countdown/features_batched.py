"""The Difficulty Vector's batched path: derivation templates evaluated exactly on int64 arrays.

The fixed derivation orders ("templates") of the pairwise procedure are enumerated once per task size
and evaluated for many tasks at once on int64 numerator / denominator arrays (exact:
cross-multiplication, no rounding). ``features.difficulty_vectors`` sends the tasks within
``FAST_MAX_NUMS`` numbers and int64 bounds here and the others to its exact Python path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations

import numpy as np

from countdown_study.countdown.solver import _ordered_merges, _strip_outer, _walk

OP_SYMBOLS = ("+", "-", "*", "/")
"""Operator symbols, in the order of the ``requires_*`` columns and of the template operator masks."""
# merge k of ``_ordered_merges`` (a+b, a*b, a-b, b-a, a/b, b/a) -> its OP_SYMBOLS index
_MERGE_OPS = (0, 2, 1, 1, 3, 3)
FAST_MAX_NUMS = 5
"""Largest task size the batched path evaluates; larger tasks go to the exact Python path."""
_OP_NAMES = ("add", "sub", "mul", "div")  # column suffixes, in OP_SYMBOLS order
_NEVER = -(2**62) - 1  # below every value the batched path can form (all stay within +-2**62)

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
