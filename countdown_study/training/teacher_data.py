"""The teacher generator's text and numbers (report 004, Section 3.4): tier prompts, the proposal parser,
the proposer's training examples, and the comparison of two generators' logs: pure functions.

A teacher is prompted with a tier's specification and answers with one task in the embedded policy's
own notation, ``N 44 19 35 T 98`` (numbers, then target). The specification is read off the rules
that decide the tier (``difficulty.TierRule``) and the rule-based generator's ranges
(``synthetic.RuleBasedConfig``), so prompt and acceptance checks never disagree:

- ``compact`` (the package's character-level proposer): ``T2 N 4 T 76:150 :``, one clause per
  (number count, target range) of the tier; the solution-count condition (dense T1/T2, sparse T3) is
  not written, the proposer learns it from the pool's tasks of that tier;
- any other template (a Hugging Face LM such as report 004's Qwen3-8B): the same clauses in words,
  solution counts included, wrapped in the Qwen chat format for ``qwen_chat``.

``parse_proposal`` reads the first ``N <numbers> T <target>`` of an output as exact rationals; the
generator (``training.teacher``) then puts it through the rule-based generator's checks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdown_study.countdown.difficulty import TierRule
from countdown_study.countdown.solver import Derivation, all_solutions, solution_count
from countdown_study.countdown.synthetic import ACCEPTED, DEFAULT_RULE, RuleBasedConfig, normalize_key
from countdown_study.countdown.task import Task
from countdown_study.policy.traces import format_step

TEACHER_TIERS = ("T0", "T1", "T2", "T3")
"""The tiers a teacher is asked for (the router's; OOD is evaluation only)."""
TEACHER_REASONS = (
    ACCEPTED, "unparsed", "wrong_count", "non_integer", "out_of_range", "unsolvable", "wrong_tier", "seen",
)  # fmt: skip
"""Outcome of a proposal: accepted, or the first check it fails. ``unparsed`` (no ``N .. T ..``),
``wrong_count`` (a number count the tier does not have), ``non_integer`` / ``out_of_range`` (numbers
first, then the target); the rest are ``RuleBasedGenerator.check``'s, in its order."""


DEFAULT_RANGES = RuleBasedConfig()
"""The rule-based generator's default number and target ranges."""

# ---------------------------------------------------------------------------------------------------
# Tier specifications and prompts
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """One way a task falls in a tier: a number count, a target range, a solution-count condition."""

    count: int
    """How many numbers."""
    low: int
    """Smallest target (inclusive)."""
    high: int
    """Largest target (inclusive)."""
    solutions: str = ""
    """``""`` (any), ``dense`` (more than ``sparse_max_solutions``) or ``sparse`` (at most that many)."""


def tier_clauses(tier: str, rule: TierRule = DEFAULT_RULE, ranges: RuleBasedConfig = DEFAULT_RANGES):
    """``tier_labels``' definition of ``tier`` as clauses, within the generator's target range."""
    lo, hi = ranges.min_target, ranges.max_target
    clauses = {
        "T0": (Clause(3, lo, rule.t0_max_target),),
        "T1": (Clause(3, rule.t0_max_target + 1, hi), Clause(4, lo, rule.t1_max_target, "dense")),
        "T2": (Clause(4, rule.t1_max_target + 1, rule.t2_max_target, "dense"),),
        "T3": (Clause(4, rule.t2_max_target + 1, hi), Clause(4, lo, rule.t2_max_target, "sparse")),
    }
    if tier not in clauses:
        raise ValueError(f"unknown teacher tier {tier!r}; tiers: {TEACHER_TIERS}")
    return clauses[tier]


def compact_prompt(tier: str, rule: TierRule = DEFAULT_RULE, ranges: RuleBasedConfig = DEFAULT_RANGES) -> str:
    """The character-level proposer's prompt: ``T1 N 3 T 51:300 , N 4 T 10:75 :``."""
    clauses = " , ".join(f"N {c.count} T {c.low}:{c.high}" for c in tier_clauses(tier, rule, ranges))
    return f"{tier} {clauses} :"


def _clause_words(clause: Clause, rule: TierRule, ranges: RuleBasedConfig) -> str:
    words = (
        f"{clause.count} numbers from {ranges.min_number} to {ranges.max_number} and a target from "
        f"{clause.low} to {clause.high}"
    )
    bound = rule.sparse_max_solutions
    if clause.solutions == "dense":
        words += f" that has more than {bound} distinct solutions"
    elif clause.solutions == "sparse":
        words += f" that has at most {bound} distinct solutions"
    return words


def language_prompt(
    tier: str, rule: TierRule = DEFAULT_RULE, ranges: RuleBasedConfig = DEFAULT_RANGES
) -> str:
    """The instruction for a general language model: the tier's clauses in words and the answer form."""
    clauses = " or ".join(_clause_words(c, rule, ranges) for c in tier_clauses(tier, rule, ranges))
    return (
        f"Propose one new Countdown task of difficulty tier {tier}: {clauses}. The target must be "
        "reachable by combining all the numbers with +, -, * and /, each number used exactly once. "
        "Reply with a single line of the form N a b c T t (the numbers after N, the target after T)."
    )


def teacher_prompt(
    tier: str, template: str, rule: TierRule = DEFAULT_RULE, ranges: RuleBasedConfig = DEFAULT_RANGES
) -> str:
    """The prompt of ``tier`` for a teacher trained with ``template`` (``policy.prompt_template``)."""
    if template == "compact":
        return compact_prompt(tier, rule, ranges)
    text = language_prompt(tier, rule, ranges)
    if template == "qwen_chat":
        return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"
    return text + "\n"


def task_text(nums: Sequence[int], target: int, work: str = "") -> str:
    """A task in the proposer's notation, ``N 57 38 58 2 : <work> T 79`` (``N 57 38 58 2 T 79`` without)."""
    numbers = " ".join(str(int(n)) for n in nums)
    return f"N {numbers} : {work} T {int(target)}" if work else f"N {numbers} T {int(target)}"


def _clean(derivation: Derivation) -> bool:
    return all(step.value.denominator == 1 and step.value >= 0 for step in derivation.steps)


def solution_work(task: Task, cap: int = 16) -> str:
    """The merges of one solution of ``task`` as ``57-38=19, 58+19=77, 77+2=79`` (``traces.format_step``):
    the first the solver finds, or among the first ``cap`` the first whose values are all non-negative
    integers (every generated task has one)."""
    solutions = all_solutions(task.nums, task.target, cap=1)
    if solutions and not _clean(solutions[0]):
        solutions = [d for d in all_solutions(task.nums, task.target, cap=cap) if _clean(d)] or solutions
    if not solutions:
        raise ValueError(f"task {task} has no solution")
    return ", ".join(format_step(step) for step in solutions[0].steps)


# ---------------------------------------------------------------------------------------------------
# Parsing and the checks before the rule-based ones
# ---------------------------------------------------------------------------------------------------

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:/\d+)?"
_PROPOSAL = re.compile(rf"N((?:\s+{_NUMBER})+)\s*(?::[^NT]*)?T\s+({_NUMBER})(?![\d.])")
"""``N <numbers> [: <scratch work without N or T>] T <target>``."""


def parse_proposal(text: str) -> tuple[tuple[Fraction, ...], Fraction] | None:
    """The first ``N <numbers> T <target>`` of ``text`` as exact rationals, None when there is none.

    Scratch work between the numbers and the target (``N 57 38 2 : 57-38=19, 19+2=21 T 21``) is
    skipped unread: only the numbers and the target make the task.
    """
    match = _PROPOSAL.search(text)
    if match is None:
        return None
    try:
        nums = tuple(Fraction(n) for n in match.group(1).split())
        return nums, Fraction(match.group(2))
    except ZeroDivisionError:  # "3/0" is written like a number but is none
        return None


def precheck(
    parsed: tuple[tuple[Fraction, ...], Fraction] | None, counts: Sequence[int], ranges: RuleBasedConfig
) -> str | None:
    """The teacher-only checks on a parsed proposal: its first failure, None when they pass."""
    if parsed is None:
        return "unparsed"
    nums, _ = parsed
    if len(nums) not in counts:
        return "wrong_count"
    if any(n.denominator != 1 for n in nums):
        return "non_integer"
    if any(not ranges.min_number <= n <= ranges.max_number for n in nums):
        return "out_of_range"
    return None


# ---------------------------------------------------------------------------------------------------
# Training examples of the proposer
# ---------------------------------------------------------------------------------------------------


def proposer_examples(
    by_tier: dict[str, Sequence[tuple[Task, str]]], batch_size: int, rng: np.random.Generator
) -> list[tuple[str, str]]:
    """``batch_size`` (prompt, completion) pairs from (task, ``solution_work``) pairs per tier: tier
    uniform over ``by_tier``, a task uniform within it, the numbers listed in a random order (so the
    proposer learns sets, not the pool's sequences), then the solution's merges and the target."""
    tiers = sorted(by_tier)
    examples = []
    for t in rng.integers(len(tiers), size=batch_size):
        tier = tiers[int(t)]
        task, work = by_tier[tier][int(rng.integers(len(by_tier[tier])))]
        nums = rng.permutation(np.asarray(task.nums)).tolist()
        examples.append((compact_prompt(tier), task_text(nums, task.target, work)))
    return examples


# ---------------------------------------------------------------------------------------------------
# Comparing two generators
# ---------------------------------------------------------------------------------------------------

TARGET_BINS = tuple(range(0, 301, 25))
"""Target histogram edges of ``compare_generators`` (the generators' targets lie in 10..300)."""


def _accepted_summary(rows: Sequence[dict]) -> dict:
    """Target and number distribution of the accepted rows, their solution counts."""
    accepted = [r for r in rows if r["accepted"]]
    if not accepted:
        return {"accepted": 0}
    targets = np.array([r["target"] for r in accepted], dtype=np.float64)  # (A,)
    numbers = np.concatenate([np.asarray(r["nums"], dtype=np.float64) for r in accepted])  # (sum counts,)
    solutions = np.array([solution_count(r["nums"], r["target"], cap=128) for r in accepted])  # (A,)
    counts = Counter(len(r["nums"]) for r in accepted)
    return {
        "accepted": len(accepted),
        "target_mean": float(targets.mean()),
        "target_quantiles": [float(q) for q in np.quantile(targets, (0.1, 0.5, 0.9))],
        "number_mean": float(numbers.mean()),
        "numbers_below_10": float((numbers < 10).mean()),
        "three_number_share": counts[3] / len(accepted),
        "solutions_median": float(np.median(solutions)),
        "solutions_mean": float(solutions.mean()),
    }


def _target_histogram(rows: Sequence[dict]) -> np.ndarray:
    targets = [r["target"] for r in rows if r["accepted"]]
    hist, _ = np.histogram(targets, bins=TARGET_BINS)  # (bins,)
    return hist / max(hist.sum(), 1)


def compare_generators(teacher_rows: Sequence[dict], rule_rows: Sequence[dict], pool_keys) -> dict:
    """Per tier: each generator's acceptance, outcome shares, share of proposals that repeat a pool task,
    accepted-task distribution (``_accepted_summary``), and the total-variation distance between the two
    accepted target histograms (``TARGET_BINS``). Rows are ``propose``'s log rows."""
    pool = {normalize_key(k) for k in pool_keys}
    result = {}
    for tier in sorted({r["tier"] for r in [*teacher_rows, *rule_rows]}):
        teacher = [r for r in teacher_rows if r["tier"] == tier]
        rules = [r for r in rule_rows if r["tier"] == tier]
        distance = 0.5 * np.abs(_target_histogram(teacher) - _target_histogram(rules)).sum()
        result[tier] = {
            "teacher": _source_summary(teacher, pool),
            "rule_based": _source_summary(rules, pool),
            "target_tv_distance": float(distance),
        }
    return result


def _source_summary(rows: Sequence[dict], pool: set) -> dict:
    """One generator's rows of one tier: acceptance, outcome shares, pool repeats, accepted tasks."""
    reasons = Counter(r["reason"] for r in rows)
    in_pool = sum(r["reason"] == "seen" and normalize_key((r["nums"], r["target"])) in pool for r in rows)
    n = max(len(rows), 1)
    return {
        "proposals": len(rows),
        "acceptance": reasons[ACCEPTED] / n,
        "outcomes": {k: v / n for k, v in sorted(reasons.items())},
        "pool_duplicates": in_pool / n,
        **_accepted_summary(rows),
    }
