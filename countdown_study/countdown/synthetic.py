"""Report 004's rule-based task generator (ADSC's synthetic arms) and its held-out 5-number set.

Report 004 (Sections 3.4 and 4): "Numbers are sampled uniformly for the target tier, assembled into a
random binary expression tree with operators drawn from {+, -, x, /}, and evaluated using exact
Fraction arithmetic to produce an integer target." A candidate is accepted only if the target is an
integer, the task is solvable, its tier is the requested one, and its key (sorted numbers, target) has
not been seen before. Tiers are ours (``difficulty.tier_labels``, a partition):

- T0: 3 numbers, target <= 50;  T1: 3 numbers above 50, or 4 numbers, dense, target <= 75;
- T2: 4 numbers, dense, 75 < target <= 150;  T3: 4 numbers, sparse (<= 2 solutions) or target > 150;
- OOD: 5 numbers (evaluation only: the router never asks for it).

One candidate, step by step (``RuleBasedGenerator.propose``):

1. its number count is drawn uniformly from the tier's (``TIER_NUM_COUNTS``: T1 takes 3 or 4, every
   other tier one count), its numbers uniformly and independently from ``min_number..max_number``
   (1..99, the public data's);
2. the tree: while more than one value is left, two distinct values are drawn (in order: left, right)
   and replaced by ``left op right`` with ``op`` uniform over ``+ - * /`` (``expression_value``);
3. checks, in this order, the first that fails being the rejection reason (``REASONS``):
   ``division_by_zero`` (the tree divides by a zero subtree), ``non_integer``, ``out_of_range`` (target
   outside ``min_target..max_target``, 10..300: the data's smallest target, and room above T2's 150
   for T3's "larger targets"), ``unsolvable`` (``generate.solvable``; cannot fail by construction, kept
   as the report's check), ``wrong_tier`` (``tier_labels`` with the solution count it needs), ``seen``.

Accepted keys join the ``seen`` set at once (no duplicate within a run). Every candidate is counted
(``counts``) and logged (``propose``'s rows). Randomness comes only from the ``rng`` argument, so a
seeded generator gives the same tasks and rows; a request fails with the tier named after
``max_attempts_per_task * count`` candidates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from countdown_study.countdown.difficulty import TIERS, TierRule, tier_labels
from countdown_study.countdown.generate import generate_ood_tasks, solvable
from countdown_study.countdown.solver import solution_count
from countdown_study.countdown.task import Task
from countdown_study.seeding import derive_seed

Key = tuple[tuple[int, ...], int]

TIER_NUM_COUNTS = {"T0": (3,), "T1": (3, 4), "T2": (4,), "T3": (4,), "OOD": (5,)}
"""Number counts a tier's candidates are drawn with (``tier_labels``: T0 is 3 numbers only, T1 both)."""
ACCEPTED = "accepted"
REASONS = (ACCEPTED, "division_by_zero", "non_integer", "out_of_range", "unsolvable", "wrong_tier", "seen")
"""Outcome of a candidate: accepted, or the first check it fails (in check order)."""
SOURCE = "rule_based"
"""The ``source`` field of the generator's log rows."""
DEFAULT_RULE = TierRule()
"""``tier_labels``' default thresholds."""


@dataclass(frozen=True)
class RuleBasedConfig:
    """Ranges and limits of the rule-based generator (ours: report 004 gives none)."""

    min_number: int = 1
    """Numbers are drawn uniformly from ``min_number..max_number`` (the public data's 1..99)."""
    max_number: int = 99
    """Largest number (inclusive)."""
    min_target: int = 10
    """Smallest accepted target (the public data's)."""
    max_target: int = 300
    """Largest accepted target: twice T2's ceiling, so T3 gets "larger targets" of a modest size."""
    max_attempts_per_task: int = 2000
    """A request for ``count`` tasks fails after ``max_attempts_per_task * count`` candidates."""
    rule: TierRule = field(default_factory=TierRule)
    """The tier thresholds (``difficulty.tier_labels``)."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_number <= self.max_number:
            raise ValueError(f"need 1 <= min_number <= max_number, got {self.min_number}, {self.max_number}")
        if not self.min_target <= self.max_target:
            raise ValueError(f"need min_target <= max_target, got {self.min_target}, {self.max_target}")
        if self.max_attempts_per_task < 1:
            raise ValueError(f"max_attempts_per_task must be at least 1, got {self.max_attempts_per_task}")


# ---------------------------------------------------------------------------------------------------
# One candidate: pure functions
# ---------------------------------------------------------------------------------------------------

_OPS = "+-*/"


def expression_value(nums: Sequence[int], rng: np.random.Generator) -> Fraction | None:
    """Value of a random binary expression tree using each of ``nums`` once, None on division by zero.

    While more than one value is left: draw two distinct positions (left, right) and an operator
    uniform over ``+ - * /``; the result replaces both. Exact rationals throughout.
    """
    values: list[Fraction | None] = [Fraction(int(n)) for n in nums]
    while len(values) > 1:
        i, j = (int(k) for k in rng.choice(len(values), size=2, replace=False))
        left, right, op = values[i], values[j], _OPS[int(rng.integers(4))]
        values = [v for k, v in enumerate(values) if k not in (i, j)] + [_apply(left, op, right)]
    return values[0]


def _apply(left: Fraction | None, op: str, right: Fraction | None) -> Fraction | None:
    if left is None or right is None or (op == "/" and right == 0):
        return None
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    return left * right if op == "*" else left / right


def task_tier(task: Task, rule: TierRule = DEFAULT_RULE) -> str:
    """``tier_labels`` of one task, counting solutions only as far as the rule needs (sparse or not)."""
    counts = [solution_count(task.nums, task.target, cap=rule.sparse_max_solutions + 1)]
    return str(tier_labels([task], counts=counts if task.num_count == 4 else [-1], rule=rule)[0])


def normalize_key(key: Iterable) -> Key:
    """A task key ``(sorted numbers, target)`` from any sequence pair (JSON gives lists)."""
    nums, target = key
    return tuple(sorted(int(n) for n in nums)), int(target)


# ---------------------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------------------


class AcceptanceLog:
    """What a task source keeps of its run: ``accepted_keys`` (normalised, in order) and ``counts`` (per
    tier, a ``Counter`` of outcomes). The rule-based and the teacher generator share it."""

    accepted_keys: list
    counts: dict[str, Counter]

    def acceptance_rates(self) -> dict[str, float]:
        """Share of checked candidates accepted so far, per tier that was asked for."""
        return {tier: c[ACCEPTED] / c.total() for tier, c in self.counts.items() if c.total()}

    def state_dict(self) -> dict:
        """JSON-able: the keys accepted so far and the outcome counts."""
        return {
            "accepted_keys": [[list(nums), target] for nums, target in self.accepted_keys],
            "counts": {tier: dict(c) for tier, c in self.counts.items() if c},
        }


class RuleBasedGenerator(AcceptanceLog):
    """Report 004's rule-based synthetic task source: ``propose(tier, count, rng) -> (tasks, log rows)``."""

    source = SOURCE

    def __init__(self, config: RuleBasedConfig = RuleBasedConfig(), seen_keys: Iterable = ()) -> None:
        self.config = config
        self.seen: set[Key] = {normalize_key(k) for k in seen_keys}  # pool, evaluation set, accepted
        self.accepted_keys: list[Key] = []  # accepted so far, in order (the resume state)
        self.counts: dict[str, Counter] = {tier: Counter() for tier in TIERS}  # tier -> reason -> n

    def candidate(self, tier: str, rng: np.random.Generator) -> tuple[tuple[int, ...], Fraction | None]:
        """Numbers for ``tier`` and the value of a random expression tree over them."""
        count = int(rng.choice(TIER_NUM_COUNTS[tier]))
        nums = rng.integers(self.config.min_number, self.config.max_number + 1, size=count)
        return tuple(int(n) for n in nums), expression_value(nums, rng)

    def check(self, tier: str, nums: tuple[int, ...], value: Fraction | None) -> str:
        """The candidate's outcome: ``accepted`` or the first failed check (``REASONS``)."""
        if value is None:
            return "division_by_zero"
        if value.denominator != 1:
            return "non_integer"
        if not self.config.min_target <= value <= self.config.max_target:
            return "out_of_range"
        task = Task(nums, int(value))
        if not solvable([task])[0]:
            return "unsolvable"
        if task_tier(task, self.config.rule) != tier:
            return "wrong_tier"
        return "seen" if task.key in self.seen else ACCEPTED

    def propose(self, tier: str, count: int, rng: np.random.Generator) -> tuple[list[Task], list[dict]]:
        """``count`` accepted tasks of ``tier`` and one log row per candidate tried.

        Row: ``{source, tier, accepted, reason, nums, target}``; ``target`` is None when the tree's
        value is undefined or not an integer.
        """
        if tier not in TIER_NUM_COUNTS:
            raise ValueError(f"unknown tier {tier!r}; tiers: {TIERS}")
        tasks: list[Task] = []
        rows: list[dict] = []
        budget = self.config.max_attempts_per_task * count
        while len(tasks) < count:
            if len(rows) >= budget:
                raise ValueError(self._starved(tier, count, tasks, rows))
            nums, value = self.candidate(tier, rng)
            reason = self.check(tier, nums, value)
            integer = value is not None and value.denominator == 1
            rows.append(self._row(tier, reason, nums, int(value) if integer else None))
            self.counts[tier][reason] += 1
            if reason == ACCEPTED:
                tasks.append(Task(nums, int(value)))
                self.seen.add(tasks[-1].key)
                self.accepted_keys.append(tasks[-1].key)
        return tasks, rows

    @staticmethod
    def _row(tier: str, reason: str, nums: tuple[int, ...], target: int | None) -> dict:
        return {
            "source": SOURCE,
            "tier": tier,
            "accepted": reason == ACCEPTED,
            "reason": reason,
            "nums": list(nums),
            "target": target,
        }

    @staticmethod
    def _starved(tier: str, count: int, tasks: list, rows: list[dict]) -> str:
        reasons = dict(Counter(row["reason"] for row in rows).most_common())
        return (
            f"tier {tier}: only {len(tasks)} of {count} tasks accepted after {len(rows)} candidates "
            f"(outcomes: {reasons}); acceptance is too low for this RuleBasedConfig"
        )

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict`` (on a generator built with the same ``seen_keys``)."""
        self.accepted_keys = [normalize_key(k) for k in state["accepted_keys"]]
        self.seen |= set(self.accepted_keys)
        self.counts = {tier: Counter(state["counts"].get(tier, {})) for tier in TIERS}


# ---------------------------------------------------------------------------------------------------
# The held-out 5-number evaluation set
# ---------------------------------------------------------------------------------------------------

_OOD_ROUNDS = 100


def five_number_ood_set(n: int, seed: int, exclude_keys: Iterable = ()) -> list[Task]:
    """Report 004's held-out OOD set: ``n`` distinct 5-number tasks whose keys are not in ``exclude_keys``.

    Tasks from ``generate.generate_ood_tasks`` (numbers 1..99, targets 10..100 as in the training data,
    so only the length is out of distribution; the router never trains on 5-number tasks). Round r
    draws from seed ``derive_seed(seed, r)``; excluded and repeated keys are dropped until ``n`` remain.
    """
    excluded = {normalize_key(k) for k in exclude_keys}
    tasks: dict[Key, Task] = {}
    for round_ in range(_OOD_ROUNDS):
        missing = n - len(tasks)
        if missing <= 0:
            break
        for task in generate_ood_tasks(missing, derive_seed(seed, round_)):
            if task.key not in excluded:
                tasks.setdefault(task.key, task)
    if len(tasks) < n:
        raise ValueError(f"only {len(tasks)} of {n} new 5-number tasks after {_OOD_ROUNDS} rounds")
    return list(tasks.values())
