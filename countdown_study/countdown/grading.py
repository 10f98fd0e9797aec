"""Grading completions in one parse: reward, correctness, reason and the first verifying answer span.

``grade`` grades one completion, ``grade_batch`` a prompt-major batch (``group_size`` completions per
task) into (P, G) arrays. Each completion is scanned once (``verifier.scan_answers``): the scan's last
span gives the reward and reason exactly as ``verifier.compute_score`` / ``verify`` give them (text
after the last assistant marker, last answer span, TinyZero's ``score`` / ``format_score`` / 0.0), and
the same scan gives the first span that verifies and the number of spans.

``correct`` is the final answer's verdict (``Reason.OK``): it equals ``compute_score(...) >= score``
whenever ``format_score < score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from countdown_study.countdown.task import Task
from countdown_study.countdown.verifier import Reason, scan_answers


@dataclass(frozen=True)
class Grade:
    """The grade of one completion."""

    reward: float
    """``compute_score``'s reward: ``score``, ``format_score`` (an answer span exists) or 0.0 (none)."""
    correct: bool
    """The final answer uses exactly the given numbers and equals the target (``reason`` is ``ok``)."""
    reason: Reason
    """The verifier's reason for the final answer (``no_answer`` without an answer span)."""
    first_verifying: int
    """Index of the first answer span that verifies, or -1 when none does."""
    answer_spans: int
    """How many answer spans the graded text holds."""
    well_formed: bool
    """Whether the final answer span parses as an expression (right or wrong)."""
    first_verifying_end: int
    """End offset of the first verifying answer span, -1 when none does."""


@dataclass(frozen=True)
class Grades:
    """The grades of a batch, one row per task and one column per completion of its group."""

    rewards: np.ndarray
    """``compute_score``'s reward per completion.  # (P, G) float64"""
    correct: np.ndarray
    """Whether the final answer verifies.  # (P, G) bool"""
    reasons: np.ndarray
    """The verifier's ``Reason`` for the final answer.  # (P, G) object"""
    first_verifying: np.ndarray
    """Index of the first answer span that verifies, -1 when none does.  # (P, G) int64"""
    answer_spans: np.ndarray
    """Number of answer spans.  # (P, G) int64"""
    well_formed: np.ndarray
    """Whether the final answer span parses.  # (P, G) bool"""

    def take_groups(self, groups: Sequence[int]) -> Grades:
        """The rows of some tasks (``groups``: row indices, in the order wanted)."""
        rows = np.asarray(groups, dtype=np.int64)
        return Grades(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    @staticmethod
    def concat(parts: Sequence[Grades]) -> Grades:
        """The grades of several batches of one group size, row after row."""
        return Grades(**{f.name: np.concatenate([getattr(g, f.name) for g in parts]) for f in fields(Grades)})


def grade(text: str, task: Task, format_score: float = 0.1, score: float = 1.0) -> Grade:
    """Grade one completion against one task in a single scan of its answer spans."""
    scan = scan_answers(text, task.nums, task.target, format_score, score)
    verdict = scan.verdict  # the last span's verdict, exactly what ``verify`` returns
    first = scan.first_correct
    return Grade(
        reward=verdict.reward,
        correct=verdict.correct,
        reason=verdict.reason,
        first_verifying=-1 if first is None else first.index,
        answer_spans=len(scan.spans),
        well_formed=verdict.well_formed,
        first_verifying_end=-1 if first is None else first.end,
    )


def grade_batch(
    texts: Sequence[str],
    tasks: Sequence[Task],
    group_size: int,
    format_score: float = 0.1,
    score: float = 1.0,
) -> Grades:
    """Grade a prompt-major batch: ``texts[i]`` is a completion of ``tasks[i // group_size]``.

    Returns (P, G) arrays with P = ``len(tasks)`` and G = ``group_size``; ``len(texts)`` must be P * G.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if len(texts) != len(tasks) * group_size:
        raise ValueError(
            f"got {len(texts)} texts for {len(tasks)} tasks x group_size {group_size} "
            f"(expected {len(tasks) * group_size})"
        )
    shape = (len(tasks), group_size)
    rewards = np.zeros(shape, dtype=np.float64)
    correct = np.zeros(shape, dtype=bool)
    reasons = np.empty(shape, dtype=object)
    first_verifying = np.full(shape, -1, dtype=np.int64)
    answer_spans = np.zeros(shape, dtype=np.int64)
    well_formed = np.zeros(shape, dtype=bool)
    for i, text in enumerate(texts):
        p, g = divmod(i, group_size)
        one = grade(text, tasks[p], format_score, score)
        rewards[p, g] = one.reward
        correct[p, g] = one.correct
        reasons[p, g] = one.reason
        first_verifying[p, g] = one.first_verifying
        answer_spans[p, g] = one.answer_spans
        well_formed[p, g] = one.well_formed
    return Grades(rewards, correct, reasons, first_verifying, answer_spans, well_formed)
