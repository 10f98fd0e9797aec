"""LaTeX text primitives: escaped text, numbers, intervals, booktabs tables, floats and macro definitions.

Everything here is a pure function of its arguments (a ``pd.DataFrame`` at most) returning LaTeX source;
what the paper shows lives in ``reporting.paper_sections``, the files in ``reporting.paper``. Imports
pandas, no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

MISSING = "--"
"""A cell whose value is missing (NaN or an empty string)."""

# ----------------------------------------------------------------------------------------------------
# text and numbers

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\u2264": r"$\leq$",
            "\u2265": r"$\geq$", "\u00d7": r"$\times$", "\u2013": "--", "\u2014": "---"}  # fmt: skip
_TRANSLATION = str.maketrans(_SPECIAL)


def escape(text: object) -> str:
    """``text`` as LaTeX text: the specials ``\\ & % $ # _ { } ~ ^ < > |`` escaped."""
    return str(text).translate(_TRANSLATION)


def texttt(text: object) -> str:
    """``text`` in typewriter, escaped."""
    return rf"\texttt{{{escape(text)}}}"


def code(text: object) -> str:
    """``text`` in typewriter, escaped, breakable after dots, underscores and commas."""
    breakable = re.sub(r"(\.|\\_|,)", r"\1\\allowbreak{}", escape(text))
    return rf"\texttt{{{breakable}}}"


def is_missing(value: object) -> bool:
    """Whether a cell holds no value (None, NaN or blank)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


def number(value: object, digits: int = 3, signed: bool = False) -> str:
    """``value`` rounded to ``digits`` decimals (``+`` in front of a positive one when ``signed``);
    ``MISSING`` when there is none. Plain text: ``in_math`` puts a signed one in math mode."""
    if is_missing(value):
        return MISSING
    rounded = round(float(value), digits) + 0.0  # + 0.0: no "-0.000"
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"


def in_math(text: str) -> str:
    """A formatted number as LaTeX: in math mode when it carries a sign (a true minus, not a hyphen)."""
    return f"${text}$" if text[:1] in "+-" else text


def count(value: object) -> str:
    """An integer with thousands separators (``244,883``); ``MISSING`` when there is none."""
    return MISSING if is_missing(value) else f"{round(float(value)):,}"


def interval(low: object, high: object, digits: int = 3, signed: bool = True) -> str:
    """A 95% interval as ``[$+0.019$, $+0.075$]``; ``MISSING`` when either end is missing."""
    if is_missing(low) or is_missing(high):
        return MISSING
    ends = (in_math(number(end, digits, signed)) for end in (low, high))
    return "[{}, {}]".format(*ends)


def short_model(label: object) -> str:
    """A model label without its parenthesised detail: ``Qwen2.5-0.5B SFT (asingh15/...)`` -> ``Qwen2.5-0.5B
    SFT``."""
    return str(label).split(" (")[0]


# ----------------------------------------------------------------------------------------------------
# tables

_NUMERIC = ("number", "signed", "count", "interval")
"""Column styles set flush right."""


@dataclass(frozen=True)
class Column:
    """One column of a LaTeX table, read from a CSV column."""

    key: str
    """CSV column; for ``style="interval"`` the prefix of ``<key>_low`` / ``<key>_high``."""
    header: str
    """Column heading (plain text, escaped when written)."""
    style: str = "number"
    """text | code | model (``short_model``) | raw (LaTeX as is) | number | signed | count | interval."""
    digits: int = 3
    """Decimals of a number, signed number or interval."""
    width: str | None = None
    """``X`` (flexible, the table spans the line) or a fraction of the line (``"0.2"``); None: natural."""

    @property
    def csv_keys(self) -> tuple[str, ...]:
        """The CSV column(s) it reads: both ends of an interval, else ``key``."""
        return (f"{self.key}_low", f"{self.key}_high") if self.style == "interval" else (self.key,)


def cell(row: Mapping[str, object], column: Column) -> str:
    """One cell of ``row`` (a CSV row as a mapping) in ``column``'s style, as LaTeX."""
    if column.style == "interval":
        low, high = (row.get(k) for k in column.csv_keys)
        return interval(low, high, column.digits)
    value = row.get(column.key)
    if is_missing(value):
        return MISSING
    if column.style in ("number", "signed"):
        return in_math(number(value, column.digits, signed=column.style == "signed"))
    if column.style == "count":
        return count(value)
    if column.style == "code":
        return code(value)
    if column.style == "raw":
        return str(value)
    return escape(short_model(value) if column.style == "model" else value)


def present(table: pd.DataFrame, columns: Sequence[Column]) -> list[Column]:
    """The columns whose CSV column(s) ``table`` has (an older table may lack a verdict or MDE)."""
    keys = set(table.columns)
    return [c for c in columns if set(c.csv_keys) <= keys]


def _spec(column: Column) -> str:
    if column.width == "X":
        return r">{\raggedright\arraybackslash}X"
    if column.width is not None:
        return rf">{{\raggedright\arraybackslash}}p{{{column.width}\linewidth}}"
    return "r" if column.style in _NUMERIC else "l"


def tabular(table: pd.DataFrame, columns: Sequence[Column], group: str | None = None) -> str:
    """A booktabs ``tabular`` (``tabularx`` across the line when a column is ``X``) of ``table``'s rows in
    ``columns``; a ``\\midrule`` wherever the value of the CSV column ``group`` changes."""
    wide = any(c.width == "X" for c in columns)
    spec = "".join(_spec(c) for c in columns)
    head = rf"\begin{{tabularx}}{{\linewidth}}{{{spec}}}" if wide else rf"\begin{{tabular}}{{{spec}}}"
    lines = [head, r"\toprule", _header(columns), r"\midrule", *_rows(table, columns, group)]
    lines += [r"\bottomrule", r"\end{tabularx}" if wide else r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _header(columns: Sequence[Column]) -> str:
    return " & ".join(escape(c.header) for c in columns) + r" \\"


def _rows(
    table: pd.DataFrame, columns: Sequence[Column], group: str | None, lead: Column | None = None
) -> list[str]:
    """One line per row of ``table``, with a ``\\midrule`` wherever the value of ``group`` changes; with a
    ``lead`` column, each row's ``lead`` cell on a line of its own across the table first (kept on the
    row's page)."""
    lines, previous = [], None
    for row in table.to_dict("records"):
        if group is not None and previous is not None and row.get(group) != previous:
            lines.append(r"\midrule")
        previous = row.get(group) if group is not None else None
        if lead is not None:
            lines.append(rf"\multicolumn{{{len(columns)}}}{{@{{}}l}}{{{cell(row, lead)}}} \\*")
        lines.append(" & ".join(cell(row, c) for c in columns) + r" \\")
    return lines


LONG_TABLE_COLSEP = "4pt"
"""Space either side of a column of a ``long_table`` (LaTeX's default is 6pt): its text column gets more."""


def long_table(
    table: pd.DataFrame,
    columns: Sequence[Column],
    caption: str,
    label: str,
    group: str | None = None,
    size: str = r"\small",
    lead: Column | None = None,
) -> str:
    """``table`` as a booktabs ``xltabular`` across the line (an ``X`` column takes what the others leave)
    that breaks across pages, for a table longer than a page: the caption above, the header repeated on
    every page, "continued" where it breaks; a ``\\midrule`` wherever the value of ``group`` changes; with
    ``lead``, each row's ``lead`` cell on a full-width line above it (a long name that would squeeze the
    other columns)."""
    spec = "".join(_spec(c) for c in columns)
    n, header = len(columns), _header(columns)
    lines = [
        r"\begingroup", size, rf"\setlength{{\tabcolsep}}{{{LONG_TABLE_COLSEP}}}",
        rf"\begin{{xltabular}}{{\linewidth}}{{{spec}}}",
        rf"\caption{{{caption}}}\label{{{label}}} \\",
        r"\toprule", header, r"\midrule", r"\endfirsthead",
        rf"\multicolumn{{{n}}}{{l}}{{\emph{{Table \thetable, continued}}}} \\",
        r"\toprule", header, r"\midrule", r"\endhead",
        r"\midrule", rf"\multicolumn{{{n}}}{{r}}{{\emph{{continued on the next page}}}} \\", r"\endfoot",
        r"\bottomrule", r"\endlastfoot",
        *_rows(table, columns, group, lead),
        r"\end{xltabular}", r"\endgroup",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# floats


def _float(environment: str, *lines: str) -> str:
    """A centred ``environment`` float (``table``, ``figure``) around ``lines``."""
    return (
        "\n".join([rf"\begin{{{environment}}}[!htbp]", r"\centering", *lines, rf"\end{{{environment}}}"])
        + "\n"
    )


def table_float(body: str, caption: str, label: str, size: str = r"\small") -> str:
    """``body`` (a tabular) in a centred ``table`` float with a caption above and a label."""
    return _float("table", size, rf"\caption{{{caption}}}", rf"\label{{{label}}}", body.rstrip("\n"))


def figure_float(path: str, caption: str, label: str, height: float = 0.85) -> str:
    """A figure float including the PDF at ``path`` (relative to the paper folder) with its caption: at its
    own size, shrunk only to the line's width or ``height`` of the text's height (``adjustbox``'s
    ``max width`` / ``max height``), so a figure drawn at the text's width prints its fonts at their size."""
    include = rf"\includegraphics[max width=\linewidth,max height={height}\textheight]{{{path}}}"
    return _float("figure", include, rf"\caption{{{caption}}}", rf"\label{{{label}}}")


# ----------------------------------------------------------------------------------------------------
# macros

_WORDS = tuple(
    [
        "Zero",
        "One",
        "Two",
        "Three",
        "Four",
        "Five",
        "Six",
        "Seven",
        "Eight",
        "Nine",
        "Ten",
        "Eleven",
        "Twelve",
        "Thirteen",
        "Fourteen",
        "Fifteen",
        "Sixteen",
        "Seventeen",
        "Eighteen",
        "Nineteen",
        "Twenty",
    ]
)


def macro_name(text: str) -> str:
    """A LaTeX command name from free text: words capitalised, numbers spelled out (``pass@16`` ->
    ``PassSixteen``)."""
    words = re.findall(r"[A-Za-z]+|\d+", text)
    return "".join(_spell(w) if w.isdigit() else w[:1].upper() + w[1:].lower() for w in words)


def _spell(digits: str) -> str:
    """A number as a word up to twenty (``16`` -> ``Sixteen``), else digit by digit (``000`` ->
    ``ZeroZeroZero``)."""
    if (digits == "0" or digits[0] != "0") and int(digits) < len(_WORDS):
        return _WORDS[int(digits)]
    return "".join(_WORDS[int(d)] for d in digits)


def newcommand(name: str, value: str) -> str:
    """One macro definition."""
    return rf"\newcommand{{\{name}}}{{{value}}}"
