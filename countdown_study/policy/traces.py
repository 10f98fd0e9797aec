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

The same task, ``Random`` state and options always give the same bytes (``tests/test_traces.py``
pins two traces).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from random import Random

from countdown_study.countdown import Derivation, Step, Task, all_solutions, random_derivation
from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN


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
