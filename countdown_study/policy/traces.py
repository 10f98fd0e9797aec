"""Solver-made traces: the completions the SFT stage trains the embedded policy on. Pure text, no torch.

A trace is a step list the exact solver wrote, one ``<think>`` span and one ``<answer>`` span::

    N 44 19 35 T 98 :<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer><eos>

(the prompt and ``<eos>`` are added by the SFT stage). The solution is drawn with a seeded ``Random``
among ``solver.all_solutions``, preferring those whose intermediate values are all non-negative
integers (every generated task has one: the public data's rules), which keeps the traces short and
the arithmetic learnable. A configurable share of traces are multi-attempt: one or more wrong
attempts from ``solver.random_derivation``, each with its own think and answer span, before the
correct one, so that a policy can leave an answer and write another (report 003's answer
abandonment). Non-integer values are written ``a/b`` (in parentheses as operands: ``6/(1/4)=24``).

Search traces (``make_search_trace``, the ``embedded-search`` policy's recipe) are several short
attempts, each with its own think and answer span: wrong attempts, then (unless the trace gives up)
the correct one, sometimes followed by more wrong attempts, so that the last answer is wrong although
an earlier one verified (report 003's answer abandonment). A trace stays within a token budget, so
its attempts fit the evaluation's generation budget. ``SearchRecipe`` holds the proportions.

The same task, ``Random`` state and options always give the same bytes (``tests/test_traces.py``
pins them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from random import Random

from countdown_study.countdown import Derivation, Step, Task, all_solutions, random_derivation
from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, TAGS, THINK_CLOSE, THINK_OPEN


def format_value(x: Fraction, operand: bool = False) -> str:
    """An exact value as ``7`` or ``a/b``; as an operand, non-integers and negatives go in parentheses."""
    text = str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    return f"({text})" if operand and (x.denominator != 1 or x < 0) else text


def format_step(step: Step) -> str:
    """One merge as ``44+19=63``, ``6/(1/4)=24`` or ``8-(-14)=22`` (unambiguous left to right)."""
    return (
        f"{format_value(step.left, True)}{step.op}{format_value(step.right, True)}={format_value(step.value)}"
    )


def format_attempt(derivation: Derivation) -> str:
    """One attempt: the merges as ``a+b=c, ...`` in a think span, then the expression in an answer span."""
    steps = ", ".join(format_step(step) for step in derivation.steps)
    return f"{THINK_OPEN}{steps}{THINK_CLOSE}{ANSWER_OPEN}{derivation.expression}{ANSWER_CLOSE}"


def wrong_derivation(nums: Sequence[int], target: int, rng: Random, max_draws: int = 100) -> Derivation:
    """A random merge sequence over ``nums`` whose value is not ``target`` (re-drawn when it is)."""
    for _ in range(max_draws):
        derivation = random_derivation(nums, rng)
        if derivation.value != target:
            return derivation
    raise ValueError(f"no wrong derivation found for {list(nums)} -> {target} in {max_draws} draws")


def is_clean(derivation: Derivation) -> bool:
    """Whether every merge of a derivation gives a non-negative integer (the public data's operations)."""
    return all(step.value.denominator == 1 and step.value >= 0 for step in derivation.steps)


def make_trace(
    task: Task,
    rng: Random,
    multi_attempt_share: float = 0.0,
    max_wrong_attempts: int = 2,
    solutions: Sequence[Derivation] | None = None,
    prefer_clean: bool = True,
) -> str:
    """A completion for ``task``: zero or more wrong attempts, then a solver solution drawn with ``rng``.

    With probability ``multi_attempt_share`` the trace opens with 1 to ``max_wrong_attempts`` wrong
    attempts (uniform), each a full think + answer span. The last answer span is always correct.
    ``solutions`` saves re-solving a task whose solutions the caller already has.
    """
    solutions = all_solutions(task.nums, task.target) if solutions is None else solutions
    if not solutions:
        raise ValueError(f"task {task} has no solution")
    attempts: list[Derivation] = []
    if max_wrong_attempts > 0 and rng.random() < multi_attempt_share:
        attempts = [
            wrong_derivation(task.nums, task.target, rng) for _ in range(rng.randint(1, max_wrong_attempts))
        ]
    clean = [d for d in solutions if is_clean(d)] if prefer_clean else []
    pool = clean or solutions
    attempts.append(pool[rng.randrange(len(pool))])
    return "".join(format_attempt(d) for d in attempts)


# ---------------------------------------------------------------------------------------------------
# Search traces
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchRecipe:
    """The proportions of search traces. Report 003 describes the behaviour its SFT policy shows (3.95
    answer spans per rollout; first-verifying pass@1 0.3975 against final 0.3038), not the traces that
    made it: every proportion here is ours, chosen so that the policy trained on them behaves alike."""

    give_up_share: float = 0.2
    """Share of traces with no correct attempt: wrong attempts until the budget is full, the last answer
    wrong (they teach the policy to stop when its search runs out of room)."""
    abandon_share: float = 0.3
    """Share of the other traces whose correct attempt is followed by 1 to ``max_after_correct`` wrong
    attempts (uniform) when the budget has room for them: the last answer is then wrong."""
    max_attempts: int = 5
    """Attempts in a trace, at most; a solved trace has 0 to ``max_attempts - 1`` wrong attempts before
    the correct one (uniform)."""
    max_after_correct: int = 2
    """Wrong attempts after an abandoned correct one, at most."""
    max_value: int = 999
    """Intermediate values of a wrong attempt stay at most this (short to write, near the targets'
    range; ours)."""
    token_budget: int = 190
    """Completion tokens of a trace, at most (without ``<eos>``): the wrong attempts that do not fit are
    left out (the earliest first before the correct attempt, the latest first after it). 190 keeps
    whole traces inside the evaluation's 224 new tokens (ours)."""

    def __post_init__(self) -> None:
        for name in ("give_up_share", "abandon_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.max_attempts < 1 or self.max_after_correct < 1:
            raise ValueError("max_attempts and max_after_correct must be positive")


def trace_tokens(text: str) -> int:
    """Tokens of ``text`` for the embedded tokenizer: one per character, one per tag."""
    return len(text) - sum(text.count(tag) * (len(tag) - 1) for tag in TAGS)


def search_wrong_derivation(
    nums: Sequence[int], target: int, rng: Random, max_value: int, max_draws: int = 100
) -> Derivation:
    """A wrong attempt of a search trace: a random clean merge sequence with values at most ``max_value``
    (short to write) whose value is not ``target``; after ``max_draws`` draws without one, any wrong one
    (``wrong_derivation``)."""
    for _ in range(max_draws):
        derivation = random_derivation(nums, rng)
        small = all(step.value <= max_value for step in derivation.steps)
        if derivation.value != target and is_clean(derivation) and small:
            return derivation
    return wrong_derivation(nums, target, rng)


def _fit(attempts: list[str], correct: int, budget: int) -> list[str]:
    """Drop wrong attempts until the tokens fit ``budget``: the earliest before ``correct`` first, then
    the latest after it; without a correct attempt (``correct`` = -1), keep the leading ones that fit."""
    if correct < 0:
        kept: list[str] = []
        while len(kept) < len(attempts) and trace_tokens("".join(kept + [attempts[len(kept)]])) <= budget:
            kept.append(attempts[len(kept)])
        return kept or attempts[:1]
    while trace_tokens("".join(attempts)) > budget and correct > 0:
        attempts, correct = attempts[1:], correct - 1
    while trace_tokens("".join(attempts)) > budget and len(attempts) > correct + 1:
        attempts = attempts[:-1]
    return attempts


def make_search_trace(
    task: Task,
    rng: Random,
    recipe: SearchRecipe,
    solutions: Sequence[Derivation] | None = None,
    prefer_clean: bool = True,
) -> str:
    """A search completion for ``task`` drawn with ``rng`` (see ``SearchRecipe``).

    Draws, in order: the correct attempt (as ``make_trace`` does), ``max_attempts`` wrong attempts,
    whether the trace gives up, and (when it does not) how many wrong attempts precede the correct one,
    whether it is abandoned and how many follow it.
    """
    solutions = all_solutions(task.nums, task.target) if solutions is None else solutions
    if not solutions:
        raise ValueError(f"task {task} has no solution")
    clean = [d for d in solutions if is_clean(d)] if prefer_clean else []
    pool = clean or solutions
    correct = format_attempt(pool[rng.randrange(len(pool))])
    wrong = [
        format_attempt(search_wrong_derivation(task.nums, task.target, rng, recipe.max_value))
        for _ in range(recipe.max_attempts)
    ]
    if rng.random() < recipe.give_up_share:
        return "".join(_fit(wrong, -1, recipe.token_budget))
    before = rng.randrange(recipe.max_attempts)
    room = recipe.max_attempts - 1 - before
    abandoned = rng.random() < recipe.abandon_share and room > 0
    after = rng.randint(1, min(recipe.max_after_correct, room)) if abandoned else 0
    attempts = wrong[:before] + [correct] + wrong[before : before + after]
    return "".join(_fit(attempts, before, recipe.token_budget))
