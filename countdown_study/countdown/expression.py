"""The answer grammar, the verifier's middle steps (``countdown.verifier``): tokenize -> parse -> evaluate.

A whitelist (no ``eval``): ASCII decimal literals, binary ``+ - * /``, parentheses, and ASCII space, tab,
CR and LF between tokens. Anything else is rejected with a ``Reason`` (raised internally as ``_Rejected``):
other characters, ``**``, ``//``, unary ``+``/``-``, literals with a leading zero, and inputs beyond
``MAX_DEPTH``, ``MAX_LITERAL_DIGITS`` or ``MAX_VALUE_BITS``. ``tokenize`` splits, ``to_postfix`` parses
(a shunting-yard loop checking the grammar and the nesting bound), ``evaluate`` computes the exact value
with ``fractions.Fraction`` and ``normalise`` writes the canonical spacing.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from enum import StrEnum
from fractions import Fraction

MAX_DEPTH = 32
"""Deepest parenthesis nesting accepted."""
MAX_LITERAL_DIGITS = 12
"""Most digits in one integer literal."""
MAX_VALUE_BITS = 512
"""Largest numerator or denominator, in bits, of any intermediate value."""

_WHITESPACE = " \t\r\n"
_OPERATORS = "+-*/"
_ALLOWED = frozenset("0123456789()" + _OPERATORS + _WHITESPACE)
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class Reason(StrEnum):
    """Why a response got its reward (``ok`` only for a correct answer)."""

    OK = "ok"
    NO_ANSWER = "no_answer"
    EMPTY = "empty"
    TOO_LONG = "too_long"
    BAD_CHAR = "bad_char"
    POWER = "power"
    FLOOR_DIV = "floor_div"
    LEADING_ZERO = "leading_zero"
    UNARY = "unary"
    SYNTAX = "syntax"
    TOO_DEEP = "too_deep"
    TOO_LARGE = "too_large"
    DIV_BY_ZERO = "div_by_zero"
    WRONG_NUMBERS = "wrong_numbers"
    WRONG_VALUE = "wrong_value"


Token = int | str
"""A literal (int) or one of ``+ - * / ( )``."""


class _Rejected(Exception):
    """Internal: an expression fails the grammar or a bound."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


def _literal(digits: str) -> int:
    """One ASCII decimal literal, within the digit bound and without a leading zero."""
    if len(digits) > MAX_LITERAL_DIGITS:
        raise _Rejected(Reason.TOO_LARGE)
    if len(digits) > 1 and digits[0] == "0":
        raise _Rejected(Reason.LEADING_ZERO)
    return int(digits)


def tokenize(text: str) -> list[Token]:
    """Split a whitelisted expression into literals and symbols; ``**`` and ``//`` are rejected."""
    if not set(text) <= _ALLOWED:
        raise _Rejected(Reason.BAD_CHAR)
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WHITESPACE:
            i += 1
        elif "0" <= ch <= "9":
            j = i
            while j < n and "0" <= text[j] <= "9":
                j += 1
            tokens.append(_literal(text[i:j]))
            i = j
        elif ch in "*/" and i + 1 < n and text[i + 1] == ch:
            raise _Rejected(Reason.POWER if ch == "*" else Reason.FLOOR_DIV)
        else:
            tokens.append(ch)
            i += 1
    return tokens


def to_postfix(tokens: Sequence[Token]) -> list[Token]:
    """Shunting-yard: infix tokens to postfix, checking the grammar and the nesting bound."""
    output: list[Token] = []
    stack: list[str] = []
    expect_operand, depth = True, 0
    for tok in tokens:
        if isinstance(tok, int):
            if not expect_operand:
                raise _Rejected(Reason.SYNTAX)
            output.append(tok)
            expect_operand = False
        elif tok == "(":
            if not expect_operand:
                raise _Rejected(Reason.SYNTAX)
            depth += 1
            if depth > MAX_DEPTH:
                raise _Rejected(Reason.TOO_DEEP)
            stack.append(tok)
        elif tok == ")":
            if expect_operand or depth == 0:
                raise _Rejected(Reason.SYNTAX)
            while (top := stack.pop()) != "(":
                output.append(top)
            depth -= 1
        else:
            if expect_operand:
                raise _Rejected(Reason.UNARY if tok in "+-" else Reason.SYNTAX)
            while stack and stack[-1] != "(" and _PRECEDENCE[stack[-1]] >= _PRECEDENCE[tok]:
                output.append(stack.pop())
            stack.append(tok)
            expect_operand = True
    if expect_operand or depth != 0:
        raise _Rejected(Reason.SYNTAX)
    output.extend(reversed(stack))
    return output


def evaluate(postfix: Sequence[Token]) -> Fraction:
    """Exact value of a postfix expression; division by zero and oversized values are rejected."""
    stack: list[Fraction] = []
    for tok in postfix:
        if isinstance(tok, int):
            stack.append(Fraction(tok))
            continue
        right, left = stack.pop(), stack.pop()
        if tok == "/" and right == 0:
            raise _Rejected(Reason.DIV_BY_ZERO)
        value = _APPLY[tok](left, right)
        if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_VALUE_BITS:
            raise _Rejected(Reason.TOO_LARGE)
        stack.append(value)
    return stack[0]


def normalise(tokens: Sequence[Token]) -> str:
    """Canonical spacing: one space around each operator, none inside parentheses."""
    return "".join(f" {t} " if isinstance(t, str) and t in _OPERATORS else str(t) for t in tokens)
