"""Solver-made traces (``policy.traces``): true arithmetic, the multi-attempt layout, pinned bytes."""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from pathlib import Path
from random import Random

import pytest

from countdown_study.countdown import Derivation, Step, Task, all_solutions, generate_tasks
from countdown_study.countdown.prompts import ANSWER_OPEN, THINK_OPEN
from countdown_study.countdown.verifier import compute_score, scan_answers
from countdown_study.policy import traces

TASKS = generate_tasks(24, seed=7)

_STEP = re.compile(
    r"^(-?\d+(?:/\d+)?|\(-?\d+(?:/\d+)?\))([-+*/])(-?\d+(?:/\d+)?|\(-?\d+(?:/\d+)?\))=(-?\d+(?:/\d+)?)$"
)
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


def _value(text: str) -> Fraction:
    return Fraction(text.strip("()"))


def _think_steps_hold(trace: str) -> bool:
    """Every ``a op b = c`` written in a think span is exact arithmetic."""
    for think in re.findall(r"<think>(.*?)</think>", trace):
        for step in think.split(", "):
            match = _STEP.match(step)
            if match is None:
                return False
            left, op, right, value = match.groups()
            if _OPS[op](_value(left), _value(right)) != _value(value):
                return False
    return True


def _truth(task: Task) -> dict:
    return {"target": task.target, "numbers": list(task.nums)}


# Made by the code before the traces left ``training/sft.py`` (commit 0f3f1c4): the bytes must not change.
PINNED_SINGLE = "<think>44+35=79, 19+79=98</think><answer>19+(44+35)</answer>"
PINNED_MULTI = (
    "<think>1*2=2, 6*2=12, 12-8=4</think><answer>(6*(1*2))-8</answer>"
    "<think>2/8=1/4, 1+(1/4)=5/4, 6-(5/4)=19/4</think><answer>6-(1+(2/8))</answer>"
    "<think>6/1=6, 8/2=4, 6*4=24</think><answer>(6/1)*(8/2)</answer>"
)


def test_traces_are_byte_identical_to_pinned_ones():
    assert traces.make_trace(Task((44, 19, 35), 98), Random(0), 0.0) == PINNED_SINGLE
    assert traces.make_trace(Task((1, 2, 6, 8), 24), Random(5), 1.0, max_wrong_attempts=2) == PINNED_MULTI


def test_the_module_imports_no_torch():
    tree = ast.parse(Path(traces.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {name for name in imported if name.split(".")[0] in ("torch", "transformers", "numpy")}
    assert all(
        not name.startswith("countdown_study.") or name.startswith("countdown_study.countdown")
        for name in imported
    )


def test_single_attempt_traces_verify_and_show_true_arithmetic():
    rng = Random(0)
    for task in TASKS:
        trace = traces.make_trace(task, rng, multi_attempt_share=0.0)
        assert compute_score(trace, _truth(task)) == 1.0
        assert trace.count(ANSWER_OPEN) == 1 and trace.count(THINK_OPEN) == 1
        assert _think_steps_hold(trace)
        assert len(re.findall(r"<think>(.*?)</think>", trace)[0].split(", ")) == task.num_count - 1


def test_multi_attempt_traces_end_with_the_only_correct_answer():
    rng = Random(1)
    for task in TASKS:
        trace = traces.make_trace(task, rng, multi_attempt_share=1.0, max_wrong_attempts=2)
        spans = scan_answers(trace, task.nums, task.target).spans
        assert 2 <= len(spans) <= 3
        assert [s.verdict.correct for s in spans] == [False] * (len(spans) - 1) + [True]
        assert all(s.verdict.well_formed for s in spans)
        assert trace.count(THINK_OPEN) == len(spans)
        assert _think_steps_hold(trace)
        assert compute_score(trace, _truth(task)) == 1.0


def test_multi_attempt_share_is_respected():
    rng = Random(2)
    task = Task((3, 5, 7), 22)
    several = sum(
        traces.make_trace(task, rng, multi_attempt_share=0.2).count(ANSWER_OPEN) > 1 for _ in range(2000)
    )
    assert 340 <= several <= 460  # binomial(2000, 0.2): mean 400, sd 18


def test_same_rng_seed_gives_the_same_trace_and_solutions_vary():
    task = Task((1, 2, 6, 8), 24)
    solutions = all_solutions(task.nums, task.target)
    first = [traces.make_trace(task, Random(s), 0.3, solutions=solutions) for s in range(20)]
    again = [traces.make_trace(task, Random(s), 0.3, solutions=solutions) for s in range(20)]
    assert first == again
    assert len(set(first)) > 5


def test_clean_solutions_are_preferred_when_present():
    task = Task((40, 26, 8), 22)  # 40-(26-8) is clean; 40+(8-26) goes through -18
    assert any(not traces.is_clean(d) for d in all_solutions(task.nums, task.target))
    for seed in range(30):
        trace = traces.make_trace(task, Random(seed), 0.0)
        values = [Fraction(v) for v in re.findall(r"=(-?\d+(?:/\d+)?)", trace)]
        assert values and all(v >= 0 and v.denominator == 1 for v in values)
    unclean = {traces.make_trace(task, Random(seed), 0.0, prefer_clean=False) for seed in range(60)}
    assert any("-18" in trace for trace in unclean)


def test_a_task_without_solution_is_refused():
    with pytest.raises(ValueError, match="no solution"):
        traces.make_trace(Task((2, 2), 5), Random(0))


@pytest.mark.parametrize(
    ("left", "op", "right", "value", "text"),
    [
        (44, "+", 19, 63, "44+19=63"),  # integers as written
        (3, "/", 4, Fraction(3, 4), "3/4=3/4"),  # a fraction as a result is bare
        (6, "/", Fraction(1, 4), 24, "6/(1/4)=24"),  # a fraction as an operand is parenthesised
        (8, "-", -14, 22, "8-(-14)=22"),  # so is a negative operand
        (5, "-", 9, -4, "5-9=-4"),  # a negative result is bare
    ],
)
def test_format_step(left, op, right, value, text):
    step = Step(Fraction(left), op, Fraction(right), Fraction(value))
    assert traces.format_step(step) == text


def test_format_attempt_layout():
    derivation = Derivation(
        (
            Step(Fraction(44), "+", Fraction(19), Fraction(63)),
            Step(Fraction(63), "+", Fraction(35), Fraction(98)),
        ),
        "(44+19)+35",
        Fraction(98),
    )
    assert traces.format_attempt(derivation) == "<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer>"


def test_wrong_derivation_never_hits_the_target():
    rng = Random(3)
    for _ in range(200):
        assert traces.wrong_derivation((1, 2, 3), 6, rng).value != 6


# --- search traces ------------------------------------------------------------------------------------

SEARCH = traces.SearchRecipe(
    give_up_share=0.3,
    abandon_share=0.25,
    max_attempts=5,
    max_after_correct=2,
    max_value=999,
    token_budget=190,
)
# A correct attempt (the third) abandoned for a wrong one, and a trace that gives up after five attempts.
PINNED_ABANDONED = (
    "<think>6-2=4, 4/1=4, 8/4=2</think><answer>8/((6-2)/1)</answer>"
    "<think>8-2=6, 6/6=1, 1-1=0</think><answer>((8-2)/6)-1</answer>"
    "<think>1*8=8, 6/2=3, 8*3=24</think><answer>(1*8)*(6/2)</answer>"
    "<think>8-2=6, 6/6=1, 1-1=0</think><answer>(6/(8-2))-1</answer>"
)
PINNED_GIVE_UP = (
    "<think>2+6=8, 1+8=9, 9-8=1</think><answer>(1+8)-(2+6)</answer>"
    "<think>8/2=4, 4-1=3, 6-3=3</think><answer>6-((8/2)-1)</answer>"
    "<think>2*6=12, 8+12=20, 1*20=20</think><answer>1*(8+(2*6))</answer>"
    "<think>6*8=48, 1+48=49, 49-2=47</think><answer>(1+(6*8))-2</answer>"
    "<think>6/1=6, 2+6=8, 8-8=0</think><answer>8-(2+(6/1))</answer>"
)


def _verdicts(trace: str, task: Task) -> list[bool]:
    return [span.verdict.correct for span in scan_answers(trace, task.nums, task.target).spans]


def test_search_traces_are_byte_identical_to_pinned_ones():
    task = Task((1, 2, 6, 8), 24)
    assert traces.make_search_trace(task, Random(3), SEARCH) == PINNED_ABANDONED
    assert _verdicts(PINNED_ABANDONED, task) == [False, False, True, False]
    assert traces.make_search_trace(task, Random(1), SEARCH) == PINNED_GIVE_UP
    assert _verdicts(PINNED_GIVE_UP, task) == [False] * 5


def test_search_traces_are_true_arithmetic_within_the_budget():
    rng = Random(5)
    for task in TASKS:
        trace = traces.make_search_trace(task, rng, SEARCH)
        spans = scan_answers(trace, task.nums, task.target).spans
        assert 1 <= len(spans) <= SEARCH.max_attempts and trace.count(THINK_OPEN) == len(spans)
        assert all(s.verdict.well_formed for s in spans) and _think_steps_hold(trace)
        assert sum(s.verdict.correct for s in spans) <= 1  # wrong attempts never hit the target
        assert traces.trace_tokens(trace) <= SEARCH.token_budget


def test_search_trace_shares_over_many_seeds():
    task = Task((3, 5, 7), 22)
    solutions = all_solutions(task.nums, task.target)
    rng = Random(4)
    verdicts = [_verdicts(traces.make_search_trace(task, rng, SEARCH, solutions), task) for _ in range(2000)]
    abandoned = sum(any(v) and not v[-1] for v in verdicts)
    given_up = sum(not any(v) for v in verdicts)
    assert (abandoned, given_up) == (295, 575)  # these seeds' counts
    assert 250 <= abandoned <= 310  # binomial(2000, 0.7 * 0.25 * 4/5 = 0.14): mean 280, sd 16
    assert 555 <= given_up <= 645  # binomial(2000, 0.3): mean 600, sd 20
    assert sum(map(len, verdicts)) == 7538  # 3.77 answer spans per trace


def test_a_tight_budget_drops_the_earliest_wrong_attempts_first():
    task = Task((1, 2, 6, 8), 24)
    tight = traces.SearchRecipe(give_up_share=0.3, abandon_share=0.25, token_budget=80)
    trace = traces.make_search_trace(task, Random(3), tight)  # PINNED_ABANDONED's draws, cut to fit
    assert trace == PINNED_ABANDONED[PINNED_ABANDONED.index("<think>1*8") :]
    assert traces.trace_tokens(trace) == 35 + 34 and _verdicts(trace, task) == [True, False]
    tighter = traces.SearchRecipe(give_up_share=0.3, abandon_share=0.25, token_budget=40)
    alone = traces.make_search_trace(task, Random(3), tighter)  # then the wrong ones after it
    assert alone == "<think>1*8=8, 6/2=3, 8*3=24</think><answer>(1*8)*(6/2)</answer>"


def test_search_wrong_attempts_are_clean_small_and_wrong():
    rng = Random(6)
    for _ in range(200):
        derivation = traces.search_wrong_derivation((25, 50, 75, 100), 60, rng, max_value=999)
        assert derivation.value != 60 and traces.is_clean(derivation)
        assert all(step.value <= 999 for step in derivation.steps)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("1+2=3", 5),  # one token per character
        ("<think>1+2=3</think><answer>1+2</answer>", 12),  # one per tag
        ("", 0),
    ],
)
def test_trace_tokens(text, tokens):
    assert traces.trace_tokens(text) == tokens


def test_a_search_recipe_refuses_shares_outside_zero_one():
    with pytest.raises(ValueError, match="abandon_share"):
        traces.SearchRecipe(abandon_share=1.5)
