"""The Countdown reward: a total, exact verifier. Pipeline: extract -> tokenize -> parse -> evaluate -> score.

Semantics follow the reports' verifier (TinyZero's ``compute_score``), made exact and total:

* **Extraction.** Policies here return completions only. If a response still holds a chat transcript,
  only the text after the *last* assistant marker (``<|im_start|>assistant`` or ``Assistant:``) is
  graded. Answer spans are matched like the regex ``<answer>(.*?)</answer>`` (DOTALL): from an opening
  tag to the next closing tag, then on. A nested opening tag therefore lands inside the span and makes
  it fail (``bad_char``); an unclosed tag is no span. Unlike TinyZero, the span need not sit on the
  response's last line (report 003 scans whole rollouts). The last span is graded.
* **Reward.** ``score`` when the expression uses exactly the given numbers (as a multiset) and equals the
  target exactly; ``format_score`` when a span exists but is empty, unparsable, uses other numbers,
  divides by zero or has the wrong value; ``0.0`` with no span.
* **Grammar** (a whitelist; no ``eval``): ASCII decimal literals, binary ``+ - * /``, parentheses, and
  ASCII space, tab, CR and LF between tokens. Rejected, each with a ``Reason``: other characters
  (unicode digits such as '٣' or full-width digits, names, calls, '.', 'e', 'x', '=', '^', NUL),
  ``**``, ``//``, unary ``+``/``-`` (the task's numbers are positive and no answer needs them),
  literals with a leading zero (``07``; Python rejects them too, and we also reject ``00``), and
  inputs beyond ``MAX_ANSWER_CHARS``, ``MAX_DEPTH``, ``MAX_LITERAL_DIGITS`` or ``MAX_VALUE_BITS``.
* **Arithmetic** is exact with ``fractions.Fraction``: non-integer intermediate values are allowed when
  the result is exact (``6/(1-3/4) = 24``); there is no float tolerance.

Every step is iterative and linear: tags are found with ``str.find``/``str.rfind`` loops, the parser
is a shunting-yard loop, and the expression length is bounded before it is tokenized, so any input
(megabytes of text, deep nesting, huge literals, thousands of tags) is graded in bounded time.

``compute_score`` needs only the reward, so it asks one question of the final span, ``answer_is_correct``,
answered without building a ``Verdict``: compiled regexes check the characters and the literals, each
expression *shape* (``(n+n)+n``) goes through the same shunting-yard parser once and is cached, and the
value is computed with ``int`` arithmetic until a division is inexact, then with ``Fraction``. With at
most ``EXACT_LITERALS`` literals no value can exceed ``MAX_VALUE_BITS``; longer expressions take the
careful path. It equals ``verify(...).reward`` on every input (``tests/test_verifier.py``).

The steps live in ``countdown.extract`` (extraction) and ``countdown.expression`` (the grammar:
``tokenize``, ``to_postfix``, ``evaluate``, ``normalise``, ``Reason``); the verdicts, the scoring and the
fast path are here.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from countdown_study.countdown.expression import (
    _WHITESPACE,
    MAX_DEPTH,
    MAX_LITERAL_DIGITS,
    MAX_VALUE_BITS,
    Reason,
    Token,
    _Rejected,
    evaluate,
    normalise,
    to_postfix,
    tokenize,
)
from countdown_study.countdown.extract import (
    ASSISTANT_MARKERS,
    _as_text,
    grading_start,
    iter_answer_spans,
    last_answer_span,
)
from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN

__all__ = [
    "ASSISTANT_MARKERS",
    "AnswerScan",
    "AnswerSpan",
    "EXACT_LITERALS",
    "MAX_ANSWER_CHARS",
    "MAX_DEPTH",
    "MAX_LITERAL_DIGITS",
    "MAX_VALUE_BITS",
    "Reason",
    "SHAPE_CACHE_SIZE",
    "Token",
    "Verdict",
    "answer_is_correct",
    "compute_score",
    "evaluate",
    "grading_start",
    "iter_answer_spans",
    "last_answer_span",
    "normalise",
    "scan_answers",
    "to_postfix",
    "tokenize",
    "verify",
    "verify_expression",
]

MAX_ANSWER_CHARS = 256
"""Longest answer span (inner text, whitespace included); real answers are under 60 characters."""

_LITERAL_BITS = (10**MAX_LITERAL_DIGITS - 1).bit_length()
EXACT_LITERALS = (MAX_VALUE_BITS + 1) // (_LITERAL_BITS + 1)
"""Most literals for which no value can pass ``MAX_VALUE_BITS``: a value of k literals below ``2**B`` has
numerator and denominator below ``2**(k - 1 + k * B)`` (one operation on two values at most doubles the
product of their bounds), and ``k - 1 + k * B <= MAX_VALUE_BITS`` for k up to this."""
SHAPE_CACHE_SIZE = 4096
"""Expression shapes whose parse ``answer_is_correct`` keeps (a few hundred cover real rollouts)."""
_PLAIN = re.compile(r"[0-9()+\-*/ \t\r\n]*")
_LITERAL = re.compile(r"([0-9]+)")
_NON_CANONICAL = re.compile(rf"(?<![0-9])0[0-9]|[0-9]{{{MAX_LITERAL_DIGITS + 1}}}")
"""A literal with a leading zero or over ``MAX_LITERAL_DIGITS`` digits."""


@dataclass(frozen=True)
class Verdict:
    """The grade of one answer span (or of a response's last span)."""

    expression: str | None
    """The parsed expression, normalised (``(44 + 19) + 35``); ``None`` unless it parsed."""
    numbers: tuple[int, ...]
    """Literals in order of appearance; empty unless the span tokenized."""
    value: Fraction | None
    """Exact value; ``None`` unless it parsed and evaluated within bounds."""
    reward: float
    """``score``, ``format_score`` or ``0.0``."""
    reason: Reason
    """Why: ``ok`` or the first failure found."""
    well_formed: bool
    """A span exists and parses under the grammar (numbers and value not checked)."""

    @property
    def correct(self) -> bool:
        """The answer uses exactly the given numbers and equals the target."""
        return self.reason is Reason.OK


@dataclass(frozen=True)
class AnswerSpan:
    """One ``<answer>...</answer>`` span of a response, with character offsets into the response."""

    index: int
    """Position among the response's spans (0 = first)."""
    start: int
    """Offset of the opening tag."""
    end: int
    """Offset just past the closing tag: ``response[:end]`` is the response committed to this answer."""
    inner_start: int
    """Offset of the first character between the tags."""
    inner_end: int
    """Offset of the closing tag."""
    text: str
    """The text between the tags, as written."""
    verdict: Verdict
    """This span's grade."""


@dataclass(frozen=True)
class AnswerScan:
    """Every answer span of a response in order (report 003's abandonment diagnostic)."""

    spans: tuple[AnswerSpan, ...]
    """All spans, first to last."""

    @property
    def final(self) -> AnswerSpan | None:
        """The last span, the one the reward grades."""
        return self.spans[-1] if self.spans else None

    @property
    def verdict(self) -> Verdict:
        """The response's grade, exactly what ``verify`` returns: the last span's verdict, else no answer."""
        return self.spans[-1].verdict if self.spans else _NO_ANSWER

    @property
    def first_correct(self) -> AnswerSpan | None:
        """The first span that verifies, or ``None``."""
        return next((s for s in self.spans if s.verdict.correct), None)

    @property
    def first_correct_end(self) -> int | None:
        """Where to truncate the response to commit to its first correct answer."""
        span = self.first_correct
        return None if span is None else span.end


# --- scoring --------------------------------------------------------------------------------------


def _as_int(x: object, what: str) -> int:
    """An integer argument (numpy integers accepted); anything else is a caller error."""
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {x!r}") from None


def _as_ints(xs: Iterable[object], what: str) -> list[int]:
    """``_as_int`` of each item, converted in one call when all are integers."""
    items = list(xs)
    try:
        return list(map(operator.index, items))
    except TypeError:
        return [_as_int(x, what) for x in items]  # raises, naming the first non-integer


def verify_expression(
    text: str, nums: Sequence[int], target: int, format_score: float = 0.1, score: float = 1.0
) -> Verdict:
    """Grade the text of one answer span (the span exists, so the reward is at least ``format_score``).

    Checks, in order: length, emptiness, characters, tokens, grammar, numbers (multiset), value.
    """
    given = sorted(_as_ints(nums, "each number"))
    goal = _as_int(target, "target")

    def failed(
        reason: Reason, numbers: tuple[int, ...] = (), expr: str | None = None, value: Fraction | None = None
    ) -> Verdict:
        return Verdict(expr, numbers, value, float(format_score), reason, expr is not None)

    if len(text) > MAX_ANSWER_CHARS:
        return failed(Reason.TOO_LONG)
    if not text.strip(_WHITESPACE):
        return failed(Reason.EMPTY)
    try:
        tokens = tokenize(text)
    except _Rejected as err:
        return failed(err.reason)
    numbers = tuple(t for t in tokens if isinstance(t, int))
    try:
        postfix = to_postfix(tokens)
    except _Rejected as err:
        return failed(err.reason, numbers)
    expr = normalise(tokens)
    try:
        value = evaluate(postfix)
    except _Rejected as err:
        reason = Reason.WRONG_NUMBERS if sorted(numbers) != given else err.reason
        return failed(reason, numbers, expr)
    if sorted(numbers) != given:
        return failed(Reason.WRONG_NUMBERS, numbers, expr, value)
    if value != goal:
        return failed(Reason.WRONG_VALUE, numbers, expr, value)
    return Verdict(expr, numbers, value, float(score), Reason.OK, True)


_NO_ANSWER = Verdict(None, (), None, 0.0, Reason.NO_ANSWER, False)


def verify(
    response: str | bytes | None,
    nums: Sequence[int],
    target: int,
    format_score: float = 0.1,
    score: float = 1.0,
) -> Verdict:
    """Grade a response by its last answer span (after the last assistant marker, if any)."""
    text = _as_text(response)
    span = last_answer_span(text, grading_start(text))
    if span is None:
        return _NO_ANSWER
    inner = text[span[0] + len(ANSWER_OPEN) : span[1] - len(ANSWER_CLOSE)]
    return verify_expression(inner, nums, target, format_score, score)


def scan_answers(
    response: str | bytes | None,
    nums: Sequence[int],
    target: int,
    format_score: float = 0.1,
    score: float = 1.0,
) -> AnswerScan:
    """Every answer span of a response in order, each graded; offsets index the (decoded) response."""
    text = _as_text(response)
    spans = []
    graded: dict[str, Verdict] = {}  # repeated answers are graded once
    for index, (start, end) in enumerate(iter_answer_spans(text, grading_start(text))):
        inner_start, inner_end = start + len(ANSWER_OPEN), end - len(ANSWER_CLOSE)
        inner = text[inner_start:inner_end]
        if inner not in graded:
            graded[inner] = verify_expression(inner, nums, target, format_score, score)
        spans.append(AnswerSpan(index, start, end, inner_start, inner_end, inner, graded[inner]))
    return AnswerScan(tuple(spans))


# --- the reward's fast path ----------------------------------------------------------------------


@functools.lru_cache(maxsize=SHAPE_CACHE_SIZE)
def _shape_program(shape: str) -> tuple[Token, ...] | None:
    """Postfix program of an expression shape, or ``None`` when the shape fails the grammar.

    A shape is a whitelisted expression with each literal written ``n`` (``(44 + 19)+35`` ->
    ``(n + n)+n``; ``3 5`` -> ``n n``, still a syntax error). Its tokens are parsed by ``to_postfix``;
    the program's ints index the literals in order of appearance.
    """
    index = itertools.count()
    tokens = [next(index) if ch == "n" else ch for ch in shape if ch not in _WHITESPACE]
    try:
        return tuple(to_postfix(tokens))
    except _Rejected:
        return None


def _exact_value(program: Sequence[Token], literals: Sequence[int]) -> int | Fraction | None:
    """Value of a shape program on its literals, ``None`` on division by zero.

    ``int`` arithmetic while every division is exact, ``Fraction`` from the first inexact one on: the
    value ``evaluate`` gives, without the bit bound (callers keep within ``EXACT_LITERALS``).
    """
    stack: list[int | Fraction] = []
    for tok in program:
        if type(tok) is int:
            stack.append(literals[tok])
            continue
        right = stack.pop()
        left = stack[-1]
        if tok == "+":
            stack[-1] = left + right
        elif tok == "-":
            stack[-1] = left - right
        elif tok == "*":
            stack[-1] = left * right
        elif right == 0:
            return None
        elif type(left) is int and type(right) is int:
            quotient, rest = divmod(left, right)
            stack[-1] = Fraction(left, right) if rest else quotient
        else:
            stack[-1] = left / right
    return stack[0]


def answer_is_correct(text: str, nums: Sequence[int], target: int) -> bool:
    """``verify_expression(text, nums, target).correct``, decided without building a ``Verdict``.

    The same checks (characters, length, numbers as a multiset, literal form, grammar, exact value) in
    the order cheapest first, which only the reason would show; the same ``TypeError`` on bad arguments.
    """
    given = sorted(_as_ints(nums, "each number"))
    goal = _as_int(target, "target")
    if len(text) > MAX_ANSWER_CHARS or not _PLAIN.fullmatch(text):
        return False
    parts = _LITERAL.split(text)  # "(44+19)+35" -> ["(", "44", "+", "19", ")+", "35", ""]
    literals = list(map(int, parts[1::2]))
    if sorted(literals) != given or _NON_CANONICAL.search(text):
        return False
    if len(literals) > EXACT_LITERALS:
        return verify_expression(text, given, goal).correct
    program = _shape_program("n".join(parts[::2]))
    return program is not None and _exact_value(program, literals) == goal


def compute_score(
    response: str | bytes | None,
    ground_truth: Mapping[str, object],
    format_score: float = 0.1,
    score: float = 1.0,
) -> float:
    """The reward, TinyZero's signature: ``ground_truth = {"target": int, "numbers": list[int]}``.

    Equals ``verify(response, numbers, target, format_score, score).reward``.
    """
    nums, target = ground_truth["numbers"], ground_truth["target"]
    text = _as_text(response)
    span = last_answer_span(text, grading_start(text))
    if span is None:
        return _NO_ANSWER.reward
    inner = text[span[0] + len(ANSWER_OPEN) : span[1] - len(ANSWER_CLOSE)]
    return float(score) if answer_is_correct(inner, nums, target) else float(format_score)
