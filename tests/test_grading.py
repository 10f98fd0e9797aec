"""Tests for one-parse grading: exact table cases, equivalence with ``compute_score`` / ``verify`` /
``scan_answers`` on fuzzed completions, and the batch layout (prompt-major, (P, G) arrays)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_study.countdown.grading import Grades, grade, grade_batch
from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, answer_span
from countdown_study.countdown.task import Task
from countdown_study.countdown.verifier import Reason, compute_score, scan_answers, verify

TASK = Task((44, 19, 35), 98)
RIGHT = answer_span("(44 + 19) + 35")
WRONG = answer_span("44 * 19 - 35")

# (name, text, format_score, score, reward, correct, reason, first_verifying, answer_spans)
CASES = [
    ("correct", f"<think>add them</think>{RIGHT}", 0.1, 1.0, 1.0, True, Reason.OK, 0, 1),
    ("wrong value", answer_span("44 + 19 - 35"), 0.1, 1.0, 0.1, False, Reason.WRONG_VALUE, -1, 1),
    ("wrong value, no format score", answer_span("44 + 19 - 35"), 0.0, 1.0, 0.0, False, Reason.WRONG_VALUE, -1, 1),
    ("wrong numbers", answer_span("98"), 0.1, 1.0, 0.1, False, Reason.WRONG_NUMBERS, -1, 1),
    ("no answer", "<think>it is 98</think> 44 + 19 + 35", 0.1, 1.0, 0.0, False, Reason.NO_ANSWER, -1, 0),
    ("unclosed answer", f"{ANSWER_OPEN}44 + 19 + 35", 0.1, 1.0, 0.0, False, Reason.NO_ANSWER, -1, 0),
    ("malformed", answer_span("44 19 + 35"), 0.1, 1.0, 0.1, False, Reason.SYNTAX, -1, 1),
    ("unary", answer_span("-44 + 19 + 35"), 0.1, 1.0, 0.1, False, Reason.UNARY, -1, 1),
    ("empty", answer_span("  "), 0.1, 1.0, 0.1, False, Reason.EMPTY, -1, 1),
    ("correct then wrong final", f"{RIGHT} hmm {WRONG}", 0.1, 1.0, 0.1, False, Reason.WRONG_VALUE, 0, 2),
    ("correct then wrong final, no format score", f"{RIGHT} hmm {WRONG}", 0.0, 1.0, 0.0, False,
     Reason.WRONG_VALUE, 0, 2),
    ("wrong then correct final", f"{WRONG}{RIGHT}", 0.1, 1.0, 1.0, True, Reason.OK, 1, 2),
    ("correct twice", f"{RIGHT}{answer_span('35 + 19 + 44')}", 0.1, 1.0, 1.0, True, Reason.OK, 0, 2),
    ("custom score", RIGHT, 0.25, 2.0, 2.0, True, Reason.OK, 0, 1),
    ("custom format score", WRONG, 0.25, 2.0, 0.25, False, Reason.WRONG_VALUE, -1, 1),
    ("answer before the assistant marker", f"{RIGHT}<|im_start|>assistant none", 0.1, 1.0, 0.0, False,
     Reason.NO_ANSWER, -1, 0),
    ("answer after the assistant marker", f"{WRONG}Assistant: {RIGHT}", 0.1, 1.0, 1.0, True, Reason.OK, 0, 1),
    ("nested open tag", f"{ANSWER_OPEN}x{RIGHT}", 0.1, 1.0, 0.1, False, Reason.BAD_CHAR, -1, 1),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "format_score", "score", "reward", "correct", "reason", "first", "spans"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_table(text, format_score, score, reward, correct, reason, first, spans):
    got = grade(text, TASK, format_score, score)
    assert (got.reward, got.correct, got.reason, got.first_verifying, got.answer_spans) == (
        reward, correct, reason, first, spans,
    )  # fmt: skip
    scan = scan_answers(text, TASK.nums, TASK.target, format_score, score)
    assert got.well_formed == verify(text, TASK.nums, TASK.target, format_score, score).well_formed
    assert got.first_verifying_end == (-1 if scan.first_correct is None else scan.first_correct.end)
    truth = {"target": TASK.target, "numbers": list(TASK.nums)}
    assert compute_score(text, truth, format_score, score) == reward
    assert (compute_score(text, truth, format_score, score) >= score) == correct
    batch = grade_batch([text], [TASK], 1, format_score, score)
    assert batch.rewards.tolist() == [[reward]] and batch.correct.tolist() == [[correct]]
    assert batch.reasons.tolist() == [[reason]] and batch.first_verifying.tolist() == [[first]]
    assert batch.answer_spans.tolist() == [[spans]] and batch.well_formed.tolist() == [[got.well_formed]]


def test_format_score_is_an_argument():
    text = f"{RIGHT} hmm {WRONG}"
    assert [grade(text, TASK, f).reward for f in (0.0, 0.1, 0.3)] == [0.0, 0.1, 0.3]
    assert grade_batch([text] * 2, [TASK], 2, format_score=0.0).rewards.tolist() == [[0.0, 0.0]]


# --- equivalence on fuzzed completions ------------------------------------------------------------------

ATOMS = [
    ANSWER_OPEN,
    ANSWER_CLOSE,
    "<answer",
    "answer>",
    "</",
    "Assistant:",
    "<|im_start|>assistant",
    "<think>",
    "</think>",
    "44 + 19 + 35",
    "(44 + 19) + 35",
    "44 * 19 - 35",
    "35+19+44",
    "98",
    "44 19 + 35",
    "+",
    "(",
    ")",
    "**",
    "0",
    "07",
    " ",
    "\n",
    "x",
    "٣",
]
TASKS = [TASK, Task((1, 2, 6, 8), 24), Task((35, 19), 16), Task((44, 19, 35, 2), 196)]
SOLUTIONS = ["44 + 19 + 35", "(8 - 6 + 2) * 1 * 6", "35 - 19", "(44 + 19 + 35) * 2"]  # one per task
SPANS = [answer_span(e) for e in [*SOLUTIONS, "44 * 19 - 35", "35 + 19", "(1 + 2", ""]]
PIECES = ATOMS + SPANS * 3  # whole answer spans, so correct and abandoned answers are frequent


def _check_equivalent(text: str, task: Task, format_score: float, score: float) -> None:
    one = grade(text, task, format_score, score)
    truth = {"target": task.target, "numbers": list(task.nums)}
    reward = compute_score(text, truth, format_score, score)
    assert one.reward == reward and type(one.reward) is float
    assert one.correct == (reward >= score)
    assert one.reason is verify(text, task.nums, task.target, format_score, score).reason
    scan = scan_answers(text, task.nums, task.target, format_score, score)
    first = scan.first_correct
    assert one.first_verifying == (-1 if first is None else first.index)
    assert one.answer_spans == len(scan.spans)
    assert one.correct == (one.reason is Reason.OK)
    if one.correct:
        assert one.first_verifying >= 0


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.sampled_from(TASKS),
    st.sampled_from([0.0, 0.1, 0.5]),
    st.sampled_from([1.0, 2.0]),
)
def test_matches_compute_score_and_scan_on_fuzzed_text(text, task, format_score, score):
    _check_equivalent(text, task, format_score, score)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_matches_compute_score_on_arbitrary_text(text):
    _check_equivalent(text, TASK, 0.1, 1.0)


def _fuzzed_texts(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 8))) for _ in range(n)]


def test_batch_matches_per_completion_grading_on_seeded_texts():
    rng = random.Random(0)
    group_size = 6
    texts = _fuzzed_texts(rng, len(TASKS) * group_size * 10)
    tasks = [TASKS[i % len(TASKS)] for i in range(len(texts) // group_size)]
    grades = grade_batch(texts, tasks, group_size, format_score=0.1)
    p = len(tasks)
    assert grades.rewards.shape == grades.correct.shape == grades.reasons.shape == (p, group_size)
    assert grades.first_verifying.shape == grades.answer_spans.shape == (p, group_size)
    assert grades.rewards.dtype == np.float64 and grades.correct.dtype == bool
    assert grades.reasons.dtype == object and grades.first_verifying.dtype == np.int64
    assert grades.answer_spans.dtype == np.int64
    for i, text in enumerate(texts):
        task = tasks[i // group_size]
        row, col = divmod(i, group_size)
        expected = grade(text, task, 0.1)
        truth = {"target": task.target, "numbers": list(task.nums)}
        assert grades.rewards[row, col] == compute_score(text, truth, 0.1) == expected.reward
        assert grades.correct[row, col] == expected.correct
        assert grades.reasons[row, col] is expected.reason
        assert grades.first_verifying[row, col] == expected.first_verifying
        assert grades.answer_spans[row, col] == expected.answer_spans
    # the fuzz reaches every kind of outcome
    assert grades.correct.any() and (~grades.correct).any()
    assert (grades.first_verifying >= 0).any() and (grades.answer_spans == 0).any()
    assert ((grades.first_verifying >= 0) & ~grades.correct).any()  # abandoned correct answers


# --- batch layout ----------------------------------------------------------------------------------------


def test_batch_is_prompt_major():
    tasks = [TASK, Task((1, 2, 6, 8), 24)]
    texts = [RIGHT, WRONG, "", answer_span("(1 + 2 + 6 - 8) * 24"), answer_span("8 * 6 / 2 * 1"), ""]
    grades = grade_batch(texts, tasks, 3)
    assert isinstance(grades, Grades)
    assert grades.rewards.tolist() == [[1.0, 0.1, 0.0], [0.1, 1.0, 0.0]]
    assert grades.correct.tolist() == [[True, False, False], [False, True, False]]
    assert grades.reasons.tolist() == [
        [Reason.OK, Reason.WRONG_VALUE, Reason.NO_ANSWER],
        [Reason.WRONG_NUMBERS, Reason.OK, Reason.NO_ANSWER],
    ]
    assert grades.first_verifying.tolist() == [[0, -1, -1], [-1, 0, -1]]
    assert grades.answer_spans.tolist() == [[1, 1, 0], [1, 1, 0]]


def test_empty_batch_and_bad_layouts():
    grades = grade_batch([], [], 4)
    assert grades.rewards.shape == (0, 4) and grades.reasons.shape == (0, 4)
    with pytest.raises(ValueError, match="expected 4"):
        grade_batch([RIGHT] * 3, [TASK, TASK], 2)
    with pytest.raises(ValueError, match="group_size must be at least 1"):
        grade_batch([], [], 0)
