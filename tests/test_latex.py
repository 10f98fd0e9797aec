"""LaTeX text primitives: escaping, numbers, intervals, counts and macro names."""

from __future__ import annotations

import pytest

from countdown_study.reporting import latex

# ----------------------------------------------------------------------------------------------------
# text and numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fsc_002", r"fsc\_002"),  # underscore
        ("95% & #1", r"95\% \& \#1"),  # percent, ampersand, hash
        ("{a} ~ b^2", r"\{a\} \textasciitilde{} b\textasciicircum{}2"),  # braces, tilde, caret
        ("target <= 75", r"target \textless{}= 75"),  # no T1 encoding: < and > as commands
        ("a\\b", r"a\textbackslash{}b"),  # a backslash is escaped once, not twice
        ("$x$", r"\$x\$"),
    ],
)
def test_escape(text, expected):
    assert latex.escape(text) == expected


@pytest.mark.parametrize(
    ("value", "digits", "signed", "expected"),
    [
        (0.04744, 3, True, "+0.047"),
        (-0.14396, 3, True, "-0.144"),
        (0.37654, 3, False, "0.377"),
        (-0.0001, 3, True, "+0.000"),  # rounds to zero: no "-0.000"
        (55.1167, 1, False, "55.1"),
        (float("nan"), 3, False, latex.MISSING),
        (None, 3, True, latex.MISSING),
    ],
)
def test_number(value, digits, signed, expected):
    assert latex.number(value, digits, signed) == expected


def test_interval_and_count():
    assert latex.interval(0.0192, 0.0755) == "[$+0.019$, $+0.075$]"
    assert latex.interval(-0.1959, float("nan")) == latex.MISSING
    assert latex.count(244883.0) == "244,883"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RLOO uniform vs SFT pass@1", "RlooUniformVsSftPassOne"),
        ("pass@16", "PassSixteen"),
        ("Split batch 70/30", "SplitBatchSevenZeroThreeZero"),  # above twenty: digit by digit
        ("curricula 000", "CurriculaZeroZeroZero"),  # a leading zero: digit by digit
        ("a above b", "AAboveB"),
    ],
)
def test_macro_name_has_letters_only(text, expected):
    assert latex.macro_name(text) == expected
