"""The verifier: table-driven cases (one comment each), bounds, span scanning, and property tests."""

from __future__ import annotations

import ast
import random
import re
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, answer_span
from countdown_study.countdown.solver import solve
from countdown_study.countdown.verifier import (
    EXACT_LITERALS,
    MAX_ANSWER_CHARS,
    MAX_DEPTH,
    MAX_LITERAL_DIGITS,
    Reason,
    compute_score,
    iter_answer_spans,
    last_answer_span,
    scan_answers,
    verify,
)

R = Reason
ABANDONED = (
    "<think>44 + 19 = 63, 63 + 35 = 98</think><answer>(44 + 19) + 35</answer> or "
    "<answer>(44 + 35) + 19</answer>. Let me try another way: 35 + 19 = 54, 54 + 9 = 63 ... "
    "<answer>(35 + 19) + (44 - 35)</answer>"
)

# (response, numbers, target, reward, reason)
CASES = [
    # report 001/003 example: three numbers, left-nested sum
    ("<answer>(44 + 19) + 35</answer>", [44, 19, 35], 98, 1.0, R.OK),
    # report 003: the only derivation of 24 from [1, 3, 4, 6] needs a non-integer intermediate (3/4)
    ("<answer>6/(1-3/4)</answer>", [1, 3, 4, 6], 24, 1.0, R.OK),
    # report 003 abandonment: two correct spans, then a wrong final one (35 reused, 19 + 44 - ... = 63)
    (ABANDONED, [44, 19, 35], 98, 0.1, R.WRONG_NUMBERS),
    # numbers given in a different order are still the same multiset
    ("<answer>35 + 44 + 19</answer>", [44, 19, 35], 98, 1.0, R.OK),
    # the think block and text around the span do not matter
    (
        "<think>try 8*(6-(1+2))</think>\nSo: <answer> 8 * (6 - (1 + 2)) </answer> done",
        [1, 2, 6, 8],
        24,
        1.0,
        R.OK,
    ),
    # right numbers, wrong value
    ("<answer>44 + 19 - 35</answer>", [44, 19, 35], 98, 0.1, R.WRONG_VALUE),
    # a number that was not given
    ("<answer>44 + 19 + 36</answer>", [44, 19, 35], 99, 0.1, R.WRONG_NUMBERS),
    # a given number reused (and another dropped)
    ("<answer>44 + 44 + 10</answer>", [44, 19, 35], 98, 0.1, R.WRONG_NUMBERS),
    # a given number missing
    ("<answer>44 + 54</answer>", [44, 19, 35], 98, 0.1, R.WRONG_NUMBERS),
    # duplicates in the task must be used as often as given
    ("<answer>(5 + 5) * 2</answer>", [5, 5, 2], 20, 1.0, R.OK),
    # ... and not fewer times
    ("<answer>5 * 2 * 2</answer>", [5, 5, 2], 20, 0.1, R.WRONG_NUMBERS),
    # division by zero with the right numbers
    ("<answer>4 / (3 - 3)</answer>", [3, 3, 4], 1, 0.1, R.DIV_BY_ZERO),
    # non-integer intermediates that end exact are allowed
    ("<answer>(1 / 3 + 2 / 3) * 7</answer>", [1, 3, 2, 3, 7], 7, 1.0, R.OK),
    # a non-integer final value never equals an integer target (no float tolerance)
    ("<answer>7 / 3</answer>", [7, 3], 2, 0.1, R.WRONG_VALUE),
    # exponentiation is rejected before anything is computed (TinyZero hangs on this)
    ("<answer>9**9**9</answer>", [9, 9, 9], 98, 0.1, R.POWER),
    # floor division is not a Countdown operator
    ("<answer>2//1</answer>", [2, 1], 2, 0.1, R.FLOOR_DIV),
    # unary minus at the start
    ("<answer>-3+5+10</answer>", [3, 5, 10], 12, 0.1, R.UNARY),
    # unary minus after an operator
    ("<answer>10 - -3 + 5</answer>", [3, 5, 10], 18, 0.1, R.UNARY),
    # unary plus
    ("<answer>+3 + 5</answer>", [3, 5], 8, 0.1, R.UNARY),
    # Arabic-Indic digit three: str.isdigit() accepts it, the grammar does not
    ("<answer>\u0663 + 5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # full-width digits
    ("<answer>\uff13 + \uff15</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # code injection
    ('<answer>__import__("os").system("ls")</answer>', [1], 1, 0.1, R.BAD_CHAR),
    # scientific notation
    ("<answer>1e5</answer>", [1, 5], 100000, 0.1, R.BAD_CHAR),
    # hexadecimal literal
    ("<answer>0x10</answer>", [16], 16, 0.1, R.BAD_CHAR),
    # names
    ("<answer>a + b</answer>", [1, 2], 3, 0.1, R.BAD_CHAR),
    # a decimal point
    ("<answer>3.0 + 5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # an equation with its result: '=' is not part of the expression grammar
    ("<answer>3 + 5 = 8</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # null byte inside the span
    ("<answer>3 +\x00 5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # null bytes around the span are just text
    ("\x00\x00<answer>3 + 5</answer>\x00", [3, 5], 8, 1.0, R.OK),
    # non-breaking space is not an accepted separator
    ("<answer>3\u00a0+ 5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # vertical tab and form feed are not accepted separators either
    ("<answer>3\x0b+\x0c5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # tabs, newlines and carriage returns are
    ("<answer>\n\t3\r\n+\t5 \n</answer>", [3, 5], 8, 1.0, R.OK),
    # no spaces at all
    ("<answer>(44+19)+35</answer>", [44, 19, 35], 98, 1.0, R.OK),
    # leading zero (Python rejects '07' too)
    ("<answer>07 + 1</answer>", [7, 1], 8, 0.1, R.LEADING_ZERO),
    # zero itself is a valid literal
    ("<answer>0 + 8</answer>", [0, 8], 8, 1.0, R.OK),
    # a literal beyond the digit bound
    ("<answer>" + "9" * (MAX_LITERAL_DIGITS + 1) + "</answer>", [1], 1, 0.1, R.TOO_LARGE),
    # 100,000 nines: over the length bound before any conversion
    ("<answer>" + "9" * 100_000 + "</answer>", [9], 9, 0.1, R.TOO_LONG),
    # 100,000 nested parentheses
    ("<answer>" + "(" * 100_000 + "1" + ")" * 100_000 + "</answer>", [1], 1, 0.1, R.TOO_LONG),
    # implicit multiplication
    ("<answer>2(3 + 4)</answer>", [2, 3, 4], 14, 0.1, R.SYNTAX),
    # two literals side by side
    ("<answer>3 5</answer>", [3, 5], 8, 0.1, R.SYNTAX),
    # dangling operator
    ("<answer>3 + 5 +</answer>", [3, 5], 8, 0.1, R.SYNTAX),
    # operator where an operand belongs
    ("<answer>3 * / 5</answer>", [3, 5], 15, 0.1, R.SYNTAX),
    # spaced stars are two multiplications, not a power
    ("<answer>3 * * 5</answer>", [3, 5], 15, 0.1, R.SYNTAX),
    # empty parentheses
    ("<answer>3 + ()</answer>", [3], 3, 0.1, R.SYNTAX),
    # unbalanced: unclosed parenthesis
    ("<answer>(3 + 5</answer>", [3, 5], 8, 0.1, R.SYNTAX),
    # unbalanced: stray closing parenthesis
    ("<answer>3 + 5)</answer>", [3, 5], 8, 0.1, R.SYNTAX),
    # redundant parentheses are fine
    ("<answer>((3)) + ((5))</answer>", [3, 5], 8, 1.0, R.OK),
    # empty span
    ("<answer></answer>", [3, 5], 8, 0.1, R.EMPTY),
    # whitespace-only span
    ("<answer> \n\t </answer>", [3, 5], 8, 0.1, R.EMPTY),
    # no span at all
    ("I think the answer is 3 + 5.", [3, 5], 8, 0.0, R.NO_ANSWER),
    # empty response
    ("", [3, 5], 8, 0.0, R.NO_ANSWER),
    # unclosed answer tag is no span
    ("<answer>3 + 5", [3, 5], 8, 0.0, R.NO_ANSWER),
    # closing tag before any opening tag is no span
    ("3 + 5</answer><answer>", [3, 5], 8, 0.0, R.NO_ANSWER),
    # a trailing unclosed tag does not hide the last closed span
    ("<answer>3 + 5</answer> then <answer>3 - 5", [3, 5], 8, 1.0, R.OK),
    # nested tags: the span runs from the outer opening tag, so the inner tag is text in it
    ("<answer>junk <answer>3 + 5</answer>", [3, 5], 8, 0.1, R.BAD_CHAR),
    # upper-case tags are not the answer tags
    ("<ANSWER>3 + 5</ANSWER>", [3, 5], 8, 0.0, R.NO_ANSWER),
    # the last span is graded even when an earlier one is correct
    ("<answer>3 + 5</answer><answer>3 * 5</answer>", [3, 5], 8, 0.1, R.WRONG_VALUE),
    # ... and a correct last span wins over earlier wrong ones
    ("<answer>3 * 5</answer>\n<answer>3 + 5</answer>", [3, 5], 8, 1.0, R.OK),
    # the answer need not be on the last line (unlike TinyZero)
    ("<answer>3 + 5</answer>\n", [3, 5], 8, 1.0, R.OK),
    # a transcript: only text after the assistant marker is graded (the prompt's example is ignored)
    ("User: e.g. <answer> (1 + 2) / 3 </answer>\nAssistant: <answer>3 + 5</answer>", [3, 5], 8, 1.0, R.OK),
    # a transcript whose completion has no span scores 0, even if the prompt shows one
    ("User: e.g. <answer> (1 + 2) / 3 </answer>\nAssistant: no idea", [1, 2, 3], 1, 0.0, R.NO_ANSWER),
    # Qwen chat marker; the last of several markers counts
    (
        "<|im_start|>assistant <answer>3 + 5</answer><|im_start|>assistant <answer>3 * 5</answer>",
        [3, 5],
        15,
        1.0,
        R.OK,
    ),
]


@pytest.mark.parametrize(("response", "nums", "target", "reward", "reason"), CASES)
def test_table(response, nums, target, reward, reason):
    verdict = verify(response, nums, target)
    assert (verdict.reward, verdict.reason) == (reward, reason)
    assert compute_score(response, {"target": target, "numbers": nums}) == reward
    final = scan_answers(response, nums, target).final
    assert (final.verdict if final else None) == (None if verdict.reason is R.NO_ANSWER else verdict)


def test_verdict_fields():
    v = verify(ABANDONED, [44, 19, 35], 98)
    assert v.expression == "(35 + 19) + (44 - 35)"
    assert v.numbers == (35, 19, 44, 35)
    assert v.value == Fraction(63)
    assert v.well_formed and not v.correct
    ok = verify("<answer>6/(1-3/4)</answer>", [1, 3, 4, 6], 24)
    assert (ok.expression, ok.value, ok.well_formed, ok.correct) == ("6 / (1 - 3 / 4)", 24, True, True)
    bad = verify("<answer>3 +</answer>", [3], 3)
    assert (bad.expression, bad.numbers, bad.value, bad.well_formed) == (None, (3,), None, False)
    zero = verify("<answer>4 / (3 - 3)</answer>", [3, 3, 4], 1)
    assert (zero.value, zero.well_formed) == (None, True)
    assert verify("nothing", [1], 1).well_formed is False


def test_abandonment_scan():
    scan = scan_answers(ABANDONED, [44, 19, 35], 98)
    assert len(scan.spans) == 3
    assert [s.verdict.reward for s in scan.spans] == [1.0, 1.0, 0.1]
    assert scan.first_correct is scan.spans[0]
    assert scan.final is scan.spans[2]
    first = scan.spans[0]
    assert ABANDONED[first.start : first.end] == answer_span("(44 + 19) + 35")
    assert ABANDONED[first.inner_start : first.inner_end] == first.text == "(44 + 19) + 35"
    committed = ABANDONED[: scan.first_correct_end]
    assert (
        committed.endswith(ANSWER_CLOSE)
        and compute_score(committed, {"target": 98, "numbers": [44, 19, 35]}) == 1.0
    )
    assert [s.index for s in scan.spans] == [0, 1, 2]


def test_scan_without_correct_span_and_offsets_after_marker():
    response = "<answer>1</answer>Assistant: <answer>2 + 2</answer>"
    scan = scan_answers(response, [2, 2], 5)
    assert len(scan.spans) == 1 and scan.spans[0].start == response.index("<answer>2")
    assert scan.first_correct is None and scan.first_correct_end is None
    assert scan_answers("no tags", [1], 1).final is None


def test_custom_scores():
    assert compute_score("<answer>3 + 5</answer>", {"target": 8, "numbers": [3, 5]}, 0.0, 2.0) == 2.0
    assert compute_score("<answer>3 - 5</answer>", {"target": 8, "numbers": [3, 5]}, format_score=0.0) == 0.0
    assert (
        compute_score("<answer>3 - 5</answer>", {"target": 8, "numbers": [3, 5]}, format_score=0.25) == 0.25
    )


def test_numpy_ground_truth_bytes_and_none():
    truth = {"target": np.int64(8), "numbers": np.array([3, 5])}
    assert compute_score(b"<answer>3 + 5</answer>", truth) == 1.0
    assert compute_score(b"\xff\xfe<answer>3 + 5</answer>\x80", truth) == 1.0
    assert compute_score(None, truth) == 0.0
    with pytest.raises(TypeError, match="response must be str or bytes"):
        compute_score(42, truth)
    with pytest.raises(TypeError, match="target must be an integer"):
        verify("<answer>3 + 5</answer>", [3, 5], 8.5)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # exactly at the length bound: accepted
        ("1" + " " * (MAX_ANSWER_CHARS - 1), R.OK),
        # one character over: rejected
        ("1" + " " * MAX_ANSWER_CHARS, R.TOO_LONG),
        # nesting exactly at the depth bound: accepted
        ("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, R.OK),
        # one level deeper: rejected
        ("(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1), R.TOO_DEEP),
    ],
)
def test_length_and_depth_bounds(text, reason):
    assert verify(answer_span(text), [1], 1).reason is reason


def test_value_bound():
    big = "9" * MAX_LITERAL_DIGITS  # about 40 bits each; 13 factors exceed MAX_VALUE_BITS
    nums = [int(big)] * 13
    assert verify(answer_span(" * ".join([big] * 13)), nums, 1).reason is R.TOO_LARGE
    assert verify(answer_span(" * ".join([big] * 12)), nums[:12], int(big) ** 12).reason is R.OK


def test_literal_digit_bound():
    assert (
        verify(answer_span("9" * MAX_LITERAL_DIGITS), [int("9" * MAX_LITERAL_DIGITS)], 1).reason
        is R.WRONG_VALUE
    )


HUGE_INPUT_SECONDS = 1.0
"""Bound on grading one huge input; the verifier takes milliseconds, so this holds on a loaded machine."""


# (response, reward, reason) for numbers [1, 2] and target 3
@pytest.mark.parametrize(
    ("response", "reward", "reason"),
    [
        # 10 MB of text without a tag: no span
        pytest.param("x" * 10_000_000, 0.0, R.NO_ANSWER, id="10MB-text"),
        # 200k spans: the last one, "1+2", is correct
        pytest.param("<answer>1+2</answer>" * 200_000, 1.0, R.OK, id="many-spans"),
        # 500k opening tags, one closing tag: one span from the first opening tag, its inner text
        # holds 499,999 opening tags (4 MB), beyond MAX_ANSWER_CHARS
        pytest.param("<answer>" * 500_000 + "</answer>", 0.1, R.TOO_LONG, id="many-unclosed-tags"),
        # stray closing tags after one span: the span is "1", which misses the number 2
        pytest.param(
            "<answer>1</answer>" + "</answer>" * 500_000, 0.1, R.WRONG_NUMBERS, id="many-stray-closes"
        ),
        # 500k assistant markers: only the (empty) text after the last one is graded
        pytest.param("Assistant:" * 500_000, 0.0, R.NO_ANSWER, id="many-markers"),
    ],
)
def test_huge_inputs_are_graded(response, reward, reason):
    start = time.perf_counter()
    score = compute_score(response, {"target": 3, "numbers": [1, 2]})
    seconds = time.perf_counter() - start
    assert score == reward
    assert seconds < HUGE_INPUT_SECONDS, f"graded in {seconds:.2f} s"
    verdict = verify(response, [1, 2], 3)
    assert (verdict.reward, verdict.reason) == (reward, reason)


def test_solver_solutions_verify():
    for nums, target in [((1, 2, 6, 8), 24), ((1, 3, 4, 6), 24), ((44, 19, 35), 98), ((25, 5, 3, 7), 100)]:
        expr = solve(nums, target)
        assert expr is not None and verify(answer_span(expr), nums, target).correct


# --- properties -----------------------------------------------------------------------------------


def independent_value(text: str) -> tuple[Fraction, list[int]] | None:
    """Python's own parser on the text, evaluated with Fraction: ``None`` outside + - * / on ints."""
    try:
        tree = ast.parse(re.sub(r"[\t\r\n]", " ", text).strip(), mode="eval")
    except SyntaxError:
        return None
    literals: list[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            literals.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
            left, right = value(node.left), value(node.right)
            ops = {ast.Add: left.__add__, ast.Sub: left.__sub__, ast.Mult: left.__mul__}
            return ops[type(node.op)](right) if type(node.op) in ops else left / right
        raise ValueError("outside the arithmetic subset")

    try:
        return value(tree.body), literals
    except (ValueError, ZeroDivisionError):
        return None


leaves = st.integers(1, 99).map(str)
expressions = st.recursive(
    leaves,
    lambda sub: st.tuples(sub, st.sampled_from("+-*/"), sub, st.booleans()).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})" if t[3] else f"{t[0]}{t[1]}{t[2]}"
    ),
    max_leaves=5,
)


@settings(max_examples=300, deadline=None)
@given(expressions, st.integers(-5, 200), st.booleans(), st.randoms(use_true_random=False))
def test_reward_matches_independent_evaluation(expr, other_target, use_value, rnd):
    """On generated expressions (precedence included) the reward is 1.0 exactly when Python agrees."""
    reference = independent_value(expr)
    literals = [int(x) for x in re.findall(r"[0-9]+", expr)]
    target = other_target
    if use_value and reference is not None and reference[0].denominator == 1:
        target = int(reference[0])
    nums = list(literals)
    rnd.shuffle(nums)
    verdict = verify(f"<think>...</think>{answer_span(expr)}", nums, target)
    expected = reference is not None and reference[0] == target
    assert (verdict.reward == 1.0) == expected
    if reference is not None:
        assert verdict.value == reference[0]
        # the normalised expression grades the same
        assert verify(answer_span(verdict.expression), nums, target) == verdict


soup_atoms = st.sampled_from(
    ["1", "2", "3", "12", "0", "+", "-", "*", "/", "(", ")", " ", "**", "//", "\n", "x", "٣", "=", ".", "07"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(soup_atoms, max_size=12).map("".join), st.sampled_from([3, 6, 7, 12, 36, 15, 2]))
def test_full_reward_implies_independent_agreement(text, target):
    """On operator soup: reward 1.0 implies Python's parser agrees on value and numbers."""
    nums = [1, 2, 3] if "12" not in text else [12, 3]
    verdict = verify(answer_span(text), nums, target)
    assert verdict.reward in (0.1, 1.0)
    if verdict.reward == 1.0:
        reference = independent_value(text)
        assert reference is not None and reference[0] == target
        assert sorted(reference[1]) == sorted(nums)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary()), st.floats(0.0, 0.5), st.floats(0.6, 3.0))
def test_arbitrary_input_never_raises(response, format_score, score):
    reward = compute_score(response, {"target": 24, "numbers": [1, 2, 6, 8]}, format_score, score)
    assert isinstance(reward, float) and reward in (0.0, format_score, score)


tag_atoms = st.sampled_from(
    [
        ANSWER_OPEN,
        ANSWER_CLOSE,
        "<answer",
        "answer>",
        "</",
        "Assistant:",
        "<|im_start|>assistant",
        "1+2",
        "3",
        " ",
        "\n",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(tag_atoms, max_size=14).map("".join))
def test_span_finders_agree_with_regex(response):
    """Forward scan = non-greedy regex; the backward last-span search = the forward scan's last span."""
    regex = [m.span() for m in re.finditer(r"<answer>(.*?)</answer>", response, re.DOTALL)]
    assert list(iter_answer_spans(response)) == regex
    assert last_answer_span(response) == (regex[-1] if regex else None)
    scan = scan_answers(response, [1, 2], 3)
    verdict = verify(response, [1, 2], 3)
    assert verdict == (scan.final.verdict if scan.final else verify("", [1, 2], 3))
    for span in scan.spans:
        assert response[span.start : span.end] == ANSWER_OPEN + span.text + ANSWER_CLOSE


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), expressions.map(answer_span)), max_size=6).map("".join))
def test_global_random_state_untouched(response):
    before = random.getstate()
    compute_score(response, {"target": 10, "numbers": [1, 2, 3, 4]})
    scan_answers(response, [1, 2, 3, 4], 10)
    assert random.getstate() == before


# --- the reward's fast path: compute_score against verify --------------------------------------------

HOSTILE_ATOMS = [
    "+", "-", "*", "/", "(", ")", " ", "\n", "\t", "\r", "**", "//", "0", "00", "07", "n", "x", "=", ".",
    "\u0663", "\uff13", "\x0b", "\u00a0", "9" * (MAX_LITERAL_DIGITS + 1), "9" * MAX_LITERAL_DIGITS,
    ANSWER_OPEN, ANSWER_CLOSE, "Assistant:",
]  # fmt: skip


def random_answer(rng: random.Random, nums: list[int]) -> str:
    """A random expression over ``nums`` (each once): random tree, parentheses, operators and spacing."""
    items = [str(n) for n in nums]
    while len(items) > 1:
        a, b = items.pop(rng.randrange(len(items))), items.pop(rng.randrange(len(items)))
        space = rng.choice(["", "", " ", "\n "])
        expr = f"{a}{space}{rng.choice('+-*/')}{space}{b}"
        items.append(f"({expr})" if rng.random() < 0.7 else expr)
    return items[0]


def mutate(rng: random.Random, text: str) -> str:
    """One random edit: insert, replace or delete a character, or repeat a slice."""
    i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
    kind = rng.randrange(4)
    if kind == 0:
        return text[:i] + rng.choice(HOSTILE_ATOMS) + text[i:]
    if kind == 1:
        return text[:i] + rng.choice(HOSTILE_ATOMS) + text[j:]
    if kind == 2:
        return text[:i] + text[j:]
    return text[:j] + text[i:j] * rng.randint(2, 40) + text[j:]


def fast_path_case(rng: random.Random) -> tuple[str, list[int], int]:
    """A response, its task's numbers and a target: ordinary answers, edits, bounds and hostile text."""
    family = rng.randrange(6)
    if family == 0:  # many literals around EXACT_LITERALS and MAX_VALUE_BITS
        sizes = [1, 2, 9, int("9" * MAX_LITERAL_DIGITS), 10**MAX_LITERAL_DIGITS]
        nums = [rng.choice(sizes) for _ in range(rng.randint(1 if rng.random() < 0.2 else 10, 15))]
    elif family == 1:  # deep nesting around MAX_DEPTH
        nums = [rng.randint(1, 9)]
    else:
        nums = [rng.randint(0, 99) for _ in range(rng.randint(1, 5))]
    answer = random_answer(rng, nums)
    if family == 1:
        depth = rng.randint(MAX_DEPTH - 2, MAX_DEPTH + 2)
        answer = "(" * depth + answer + ")" * rng.choice([depth, depth - 1, depth + 1])
    value = verify(answer_span(answer), nums, 0).value
    target = int(value) if value is not None and value.denominator == 1 else rng.randint(0, 100)
    if family == 2:  # edits to the answer
        for _ in range(rng.randint(1, 3)):
            answer = mutate(rng, answer)
    given = list(nums)
    if family == 3 and given:  # the task's numbers differ from the literals
        given[rng.randrange(len(given))] = rng.choice([0, 7, 100, 10**MAX_LITERAL_DIGITS, -3])
    if family == 4:  # whitespace padding to the length bound
        answer = " " * (MAX_ANSWER_CHARS - len(answer) + rng.randint(-1, 1)) + answer
    response = rng.choice(["", "<think>1+2=3</think>", "Assistant: ", ANSWER_OPEN + "1" + ANSWER_CLOSE])
    response += answer_span(answer) + rng.choice(["", "\n", ANSWER_OPEN, " Assistant: "])
    if family == 5:  # edits anywhere, tags included
        response = mutate(rng, response)
    return response, given, target


def test_compute_score_equals_verify_on_generated_and_hostile_strings():
    """The reward's fast path against the careful pipeline (``verify``): identical on 30,000 strings."""
    rng = random.Random(0)
    correct = 0
    for _ in range(30_000):
        response, nums, target = fast_path_case(rng)
        careful = verify(response, nums, target, 0.25, 2.0)
        assert compute_score(response, {"target": target, "numbers": nums}, 0.25, 2.0) == careful.reward, (
            response,
            nums,
            target,
            careful.reason,
        )
        correct += careful.correct
    assert correct > 3_000  # the set exercises correct answers, not only rejections


def test_compute_score_at_the_value_bound():
    """Past EXACT_LITERALS the careful evaluation decides, bit bound included."""
    big = "9" * MAX_LITERAL_DIGITS
    for count in (EXACT_LITERALS, EXACT_LITERALS + 1, 13, 14):
        nums = [int(big)] * count
        response = answer_span(" * ".join([big] * count))
        for target in (1, int(big) ** count):
            truth = {"target": target, "numbers": nums}
            assert compute_score(response, truth) == verify(response, nums, target).reward


def test_compute_score_argument_errors_match_verify():
    with pytest.raises(TypeError, match="each number must be an integer, not 5.5"):
        compute_score("<answer>3 + 5</answer>", {"target": 8, "numbers": [3, 5.5]})
    with pytest.raises(TypeError, match="target must be an integer"):
        compute_score("<answer>3 + 5</answer>", {"target": 8.5, "numbers": [3, 5]})
    # without an answer span the ground truth is not read, as in verify
    assert compute_score("no span", {"target": 8.5, "numbers": [3, 5.5]}) == 0.0


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([*HOSTILE_ATOMS, "1", "2", "3", "12", "6", "8"]), max_size=16).map("".join),
    st.sampled_from([[1, 2, 3], [12, 3], [1, 2, 6, 8], [0, 7], []]),
    st.sampled_from([0, 3, 6, 7, 9, 24, 36]),
)
def test_compute_score_equals_verify_on_soup(text, nums, target):
    for response in (answer_span(text), text):
        assert (
            compute_score(response, {"target": target, "numbers": nums})
            == verify(response, nums, target).reward
        )
