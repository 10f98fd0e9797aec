"""The README's results table, written from the synthesis verdict table (``synthesis_verdicts.csv``).

The README keeps the table between two marker lines (``BEGIN``, ``END``); ``countdown-study paper``
rewrites what lies between them from the full preset's verdict table, so no number in it is typed by
hand. ``verdict_markdown`` is pure; ``refresh_readme`` reads and writes the files. Imports pandas, no torch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from countdown_study.reporting.latex import is_missing
from countdown_study.reporting.outputs import read_table

VERDICTS_TABLE = "synthesis_verdicts"
"""The table (in a preset's ``tables/``) the README's results are written from."""

BEGIN = (
    "<!-- results: begin (written by `countdown-study paper` from results/tables/synthesis_verdicts.csv) -->"
)
"""The line opening the README's generated results."""
END = "<!-- results: end -->"
"""The line closing them."""

REQUIRED = ("report", "claim", "metric", "their_a", "their_b", "their_model", "model", "our_a", "our_b",
            "our_diff", "ci_low", "ci_high", "mde", "n_seeds", "verdict")  # fmt: skip
"""Columns of the verdict table the README uses (``study.synthesis.VERDICT_COLUMNS`` has them all)."""


def _pair(a, b) -> str:
    return "-" if is_missing(a) or is_missing(b) else f"{a:.3f} -> {b:.3f}"


def verdict_row(row: pd.Series) -> str:
    """One claim as a Markdown row: the claim, the report's numbers, ours with the seed-aware interval,
    the verdict and the minimum detectable effect."""
    claim = f"{row['report']}: {row['claim']} ({row['metric']})"
    ours = f"{_pair(row['our_a'], row['our_b'])}: {row['our_diff']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    mde = "-" if is_missing(row["mde"]) else f"{row['mde']:.3f}"
    return f"| {claim} | {_pair(row['their_a'], row['their_b'])} | {ours} | {row['verdict']} | {mde} |"


def seed_counts(n_seeds: pd.Series) -> str:
    """How many training seeds (or runs) stand behind the claims: the most common count per method,
    then any other count with the number of claims resting on it."""
    counts = n_seeds.astype(int).value_counts()
    common = int(counts.index[0])
    text = f"{common} training seed(s) per method"
    others = [f"{int(n)} runs for {c} claim(s)" for n, c in sorted(counts.iloc[1:].items())]
    return f"{text} ({'; '.join(others)})" if others else text


def verdict_markdown(verdicts: pd.DataFrame) -> str:
    """The README's results: a sentence counting the verdicts, then one row per claim of ``verdicts``
    (the synthesis verdict table), labelled with whose model each number is on."""
    missing = [c for c in REQUIRED if c not in verdicts.columns]
    if missing:
        raise ValueError(f"the verdict table lacks column(s) {', '.join(missing)}")
    if verdicts.empty:
        raise ValueError("the verdict table has no rows")
    theirs = "; ".join(sorted({str(m) for m in verdicts["their_model"].dropna()})) or "-"
    ours = "; ".join(sorted({str(m) for m in verdicts["model"].dropna()}))
    seeds = seed_counts(verdicts["n_seeds"])
    tally = ", ".join(f"{n} {verdict}" for verdict, n in verdicts["verdict"].value_counts().items())
    lines = [
        f"{len(verdicts)} headline claims of the reports: {tally}. The reports' numbers are on {theirs}; "
        f"ours on {ours}, {seeds}.",
        "",
        "| claim | report: a -> b | here: a -> b: a - b [95% interval] | verdict | MDE |",
        "|---|---|---|---|---|",
        *(verdict_row(row) for _, row in verdicts.iterrows()),
    ]
    return "\n".join(lines)


def block_bounds(lines: list[str]) -> tuple[int, int]:
    """The indices of the ``BEGIN`` and ``END`` lines among the README's ``lines`` (each exactly once, in
    that order)."""
    where = {marker: [i for i, line in enumerate(lines) if line.strip() == marker] for marker in (BEGIN, END)}
    for marker, found in where.items():
        if len(found) != 1:
            raise ValueError(
                f"the README needs the line {marker!r} exactly once, found it {len(found)} times"
            )
    begin, end = where[BEGIN][0], where[END][0]
    if end < begin:
        raise ValueError("the README's results end marker comes before its begin marker")
    return begin, end


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the ``BEGIN`` and ``END`` lines replaced by ``block``."""
    lines = text.split("\n")
    begin, end = block_bounds(lines)
    return "\n".join([*lines[: begin + 1], block, *lines[end:]])


def readme_block(text: str) -> str:
    """What lies between the ``BEGIN`` and ``END`` lines of ``text`` (the README)."""
    lines = text.split("\n")
    begin, end = block_bounds(lines)
    return "\n".join(lines[begin + 1 : end])


def refresh_readme(readme: Path, tables: Path) -> bool:
    """Rewrite ``readme``'s results from ``tables/synthesis_verdicts.csv``; False (nothing written) when
    that table is not there yet."""
    source = tables / f"{VERDICTS_TABLE}.csv"
    if not source.is_file():
        return False
    text = readme.read_text()
    updated = replace_block(text, verdict_markdown(read_table(source)))
    if updated != text:
        readme.write_text(updated)
    return True
