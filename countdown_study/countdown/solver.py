"""Exact Countdown solver on rationals: solvability, one solution, report 003's solution count, and
derivations (all solutions, a random merge sequence).

The search is report 003's recursive pairwise procedure: take two current values a, b (positions
i < j, the merged value appended after the remaining ones), replace them by a+b, a*b, a-b, b-a, a/b,
b/a (division by zero skipped), and recurse until one value remains. Values are exact
``fractions.Fraction``; an expression counts when its value equals the target. The walk itself
(``_walk``, ``_ordered_merges``) is shared with the Difficulty Vector (``features``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from random import Random

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
