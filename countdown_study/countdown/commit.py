"""Report 003's commit signals, read from whole rollouts: the commit reward and VCC's preference pairs.

A completion *commits* at its first answer span that verifies (``verifier.scan_answers``):
``text[:end]`` is the completion cut right after that span's closing tag. Both signals need rollouts
that go on past their first ``</answer>``, so the run samples with ``SamplingConfig(stop_at_answer=False)``.

* ``commit_reward`` (report 003, Sec. 3.3): ``score * (1 - (L - e) / L)`` for a first correct answer
  ending at character e of a completion of L characters, never below ``format_score``;
  ``format_score`` when answer spans exist but none verifies; 0.0 without any span. A completion whose
  final answer is wrong after an earlier correct one still gets e/L: text after the commit costs
  reward, whether it rambles or abandons the answer. Choices where the report is silent: offsets
  count from where the graded text starts (after the last assistant marker, as the verifier grades;
  0 for completions), and L ends at the last non-whitespace character (a trailing newline is not
  "text after the first correct answer").
* ``commit_pairs`` (report 003, Sec. 3.3): for each prompt, the chosen response is a committing
  rollout cut at its commit; the rejected one is that same rollout in full when non-whitespace text
  follows the commit (``continuation``), or a same-prompt rollout that never verifies (``sibling``).
  At most ``max_pairs_per_prompt`` pairs per prompt, deterministically: continuation pairs first (the
  answer-abandonment signal the method is built on), in sample order, then sibling pairs in diagonal
  order (committing rollout c with never-verifying rollout (c + d) mod n, d = 0, 1, ...), so the first
  pairs spread over distinct rollouts. Pairs are in characters; the trainer maps ``chosen_end`` to a
  token count (``training.vcc``).

No torch: ground truth on strings, like the verifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from countdown_study.countdown.task import Task
from countdown_study.countdown.verifier import grading_start, scan_answers

CONTINUATION = "continuation"
"""Pair kind: the rejected response is the chosen rollout itself, in full."""
SIBLING = "sibling"
"""Pair kind: the rejected response is a same-prompt rollout that never verifies."""
_WHITESPACE = " \t\r\n"


@dataclass(frozen=True)
class Commit:
    """Where one completion commits to its first correct answer (one scan of its answer spans)."""

    end: int
    """Offset just past the first verifying span's closing tag (``text[:end]`` is the commit); -1: none."""
    continues: bool
    """Non-whitespace text follows the commit (False when nothing verifies)."""
    final_correct: bool
    """The last answer span verifies (the outcome reward's verdict)."""
    answer_spans: int
    """How many answer spans the graded text holds."""

    @property
    def verifies(self) -> bool:
        """Some answer span verifies."""
        return self.end >= 0

    @property
    def abandoned(self) -> bool:
        """A correct answer was found, then the final answer is wrong (report 003's failure mode)."""
        return self.verifies and not self.final_correct


@dataclass(frozen=True)
class CommitPair:
    """One VCC preference pair: a commit preferred to a response that does not commit."""

    prompt: int
    """Index of the prompt in its batch."""
    chosen: int
    """Flat sample index (``prompt * G + g``) of the committing rollout."""
    chosen_end: int
    """The chosen response is ``texts[chosen][:chosen_end]``, the rollout cut at its commit."""
    rejected: int
    """Flat sample index of the rejected rollout, taken in full (``chosen`` itself for a continuation)."""
    kind: str
    """``continuation`` or ``sibling``."""


def find_commit(text: str, task: Task) -> Commit:
    """The commit of one completion against its task."""
    scan = scan_answers(text, task.nums, task.target)
    first = scan.first_correct
    if first is None:
        return Commit(-1, False, False, len(scan.spans))
    continues = bool(text[first.end :].strip(_WHITESPACE))
    return Commit(first.end, continues, scan.verdict.correct, len(scan.spans))


def find_commits(texts: Sequence[str], tasks: Sequence[Task], group_size: int) -> list[Commit]:
    """``find_commit`` of a prompt-major batch: ``texts[i]`` is a completion of ``tasks[i // group_size]``."""
    if group_size < 1 or len(texts) != len(tasks) * group_size:
        raise ValueError(f"got {len(texts)} texts for {len(tasks)} tasks x group_size {group_size}")
    return [find_commit(text, tasks[i // group_size]) for i, text in enumerate(texts)]


def commit_pairs(
    commits: Sequence[Commit],
    group_size: int,
    max_pairs_per_prompt: int = 2,
    continuation: bool = True,
    siblings: bool = True,
) -> list[CommitPair]:
    """VCC's pairs of a prompt-major batch of commits (module docstring), at most the cap per prompt."""
    if max_pairs_per_prompt < 1:
        raise ValueError(f"max_pairs_per_prompt must be at least 1, got {max_pairs_per_prompt}")
    if group_size < 1 or len(commits) % group_size:
        raise ValueError(f"{len(commits)} commits do not split into groups of {group_size}")
    pairs: list[CommitPair] = []
    for p in range(len(commits) // group_size):
        group = range(p * group_size, (p + 1) * group_size)
        committed = [i for i in group if commits[i].verifies]
        never = [i for i in group if not commits[i].verifies]
        candidates = []
        if continuation:
            candidates += [
                CommitPair(p, i, commits[i].end, i, CONTINUATION) for i in committed if commits[i].continues
            ]
        if siblings:
            candidates += [
                CommitPair(p, c, commits[c].end, never[(k + d) % len(never)], SIBLING)
                for d in range(len(never))
                for k, c in enumerate(committed)
            ]
        pairs += candidates[:max_pairs_per_prompt]
    return pairs


def commit_reward(text: str, task: Task, format_score: float = 0.1, score: float = 1.0) -> float:
    """Report 003's commit-aware reward of one completion (module docstring)."""
    scan = scan_answers(text, task.nums, task.target, format_score, score)
    if not scan.spans:
        return 0.0
    first = scan.first_correct
    if first is None:
        return float(format_score)
    start = grading_start(text)
    length = len(text.rstrip(_WHITESPACE)) - start  # L: the graded text, trailing whitespace aside
    end = first.end - start  # e
    return max(float(score) * (1.0 - (length - end) / length), float(format_score))


def commit_rewards(
    texts: Sequence[str],
    tasks: Sequence[Task],
    group_size: int,
    format_score: float = 0.1,
    score: float = 1.0,
) -> np.ndarray:
    """``commit_reward`` of a prompt-major batch  # (P, G) float64."""
    if group_size < 1 or len(texts) != len(tasks) * group_size:
        raise ValueError(f"got {len(texts)} texts for {len(tasks)} tasks x group_size {group_size}")
    rewards = [commit_reward(t, tasks[i // group_size], format_score, score) for i, t in enumerate(texts)]
    return np.asarray(rewards, dtype=np.float64).reshape(len(tasks), group_size)
