"""The README's results, written from the claim registry's verdicts (``claims.csv``).

The README keeps them between two marker lines (``BEGIN``, ``END``); ``countdown-study paper`` rewrites
what lies between them from the full preset's ``claims.csv`` (``study.claims``), so no number in it is
typed by hand: a sentence counting every claim of the five reports by verdict, a table of the counts per
report, and the claims that are evidence (``holds``, ``reversed``) or ``borderline`` with their numbers.
The rest (inside the noise, underpowered, untestable, the same runs as another claim, not tested) is
counted and left to the table itself. ``claims_markdown`` is pure; ``refresh_readme`` reads and writes the
files. Imports pandas, no torch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from countdown_study.reporting.latex import is_missing
from countdown_study.reporting.outputs import read_table

CLAIMS_TABLE = "claims"
"""The table (in a preset's ``tables/``) the README's results are written from."""

BEGIN = "<!-- results: begin (written by `countdown-study paper` from results/tables/claims.csv) -->"
"""The line opening the README's generated results."""
END = "<!-- results: end -->"
"""The line closing them."""

REQUIRED = ("claim_id", "report", "statement", "metric", "a", "b", "sign", "report_a", "report_b", "policy",
            "ours_a", "ours_b", "diff", "ci_low", "ci_high", "mde", "n_seeds", "seeds_needed", "verdict")  # fmt: skip
"""Columns of ``claims.csv`` the README uses (``study.claims.CLAIMS_COLUMNS`` has them all)."""
ORDER = ("holds", "reversed", "borderline", "inside noise", "underpowered", "untestable", "same runs",
         "not tested")  # fmt: skip
"""The verdict categories in the order they are counted (``same runs as <claim>`` under ``same runs``)."""
SHOWN = ("holds", "reversed", "borderline")
"""The categories whose claims the README lists one by one."""
REPORT_MODEL = "Qwen2.5-0.5B SFT"
"""Whose model the reports' numbers are on (``reporting.references.PAPER_MODEL``, shortened)."""


def category(verdict: str) -> str:
    """A verdict's counting category: ``same runs as <claim>`` counts as ``same runs``."""
    return "same runs" if verdict.startswith("same runs") else verdict


def _number(value) -> str:
    return "-" if is_missing(value) else f"{value:.3f}"


def seed_range(seeds: pd.Series) -> str:
    """``5 training seeds``, or ``5-10 training seeds`` when claims rest on different numbers."""
    low, high = int(seeds.min()), int(seeds.max())
    return f"{low} training seeds" if low == high else f"{low}-{high} training seeds"


def claim_row(row: pd.Series) -> str:
    """One claim as a Markdown row: id and statement, metric, the report's a and b, ours with the interval
    of the difference, the MDE, the seeds that would bring it to the report's effect, the verdict."""
    direction = {1: "above", -1: "below", 0: "equal to"}[int(row["sign"])]
    claim = f"`{row['claim_id']}`: {row['a']} {direction} {row['b']}"
    ours = f"{_number(row['ours_a'])} vs {_number(row['ours_b'])}: {row['diff']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    seeds = ">1000" if is_missing(row["seeds_needed"]) else str(int(row["seeds_needed"]))
    return (f"| {claim} | {row['metric']} | {_number(row['report_a'])} vs {_number(row['report_b'])} | {ours} | "
            f"{_number(row['mde'])} | {seeds} | {row['verdict']} |")  # fmt: skip


def count_table(claims: pd.DataFrame) -> list[str]:
    """Markdown lines: claims per report (rows) and verdict category (columns), with totals."""
    categories = claims["verdict"].map(category)
    counts = pd.crosstab(claims["report"].astype(str).str.zfill(3), categories)
    columns = [c for c in ORDER if c in counts.columns]
    lines = ["| report | " + " | ".join(columns) + " | all |", "|---" * (len(columns) + 2) + "|"]
    for report, row in counts.iterrows():
        lines.append(
            f"| {report} | " + " | ".join(str(int(row[c])) for c in columns) + f" | {int(row.sum())} |"
        )
    lines.append("| all | " + " | ".join(str(int(counts[c].sum())) for c in columns) + f" | {len(claims)} |")
    return lines


def claims_markdown(claims: pd.DataFrame) -> str:
    """The README's results from ``claims`` (``claims.csv``): the counts, then the claims in ``SHOWN``."""
    missing = [c for c in REQUIRED if c not in claims.columns]
    if missing:
        raise ValueError(f"the claims table lacks column(s) {', '.join(missing)}")
    if claims.empty:
        raise ValueError("the claims table has no rows")
    categories = claims["verdict"].map(category)
    tested = claims[categories != "not tested"]
    tally = ", ".join(f"{int((categories == c).sum())} {c}" for c in ORDER if (categories == c).any())
    seeds = tested["n_seeds"].astype(int)
    ours = "; ".join(sorted({str(p) for p in tested["policy"] if str(p)}))
    shown = claims[categories.isin(SHOWN)]
    lines = [
        f"Every quantitative claim of the five reports, {len(claims)} in all, is in `results/tables/claims.csv` "
        f"with its source, metric and verdict: {tally}. `underpowered`: inside the noise while the minimum "
        "detectable effect (MDE) exceeds the report's own effect; `untestable`: both arms at a floor; "
        "`same runs`: identical runs to another claim, counted once; `not tested`: the reason is in the table. "
        f"The reports' numbers are on {REPORT_MODEL} (one run, 50 test prompts); ours on {ours}, "
        f"{seed_range(seeds)}, 95% intervals over tasks and training seeds; seeds for the report's effect: "
        "the training seeds at which the MDE would reach the report's own difference (>1000: not with these "
        "tasks).",
        "",
        *count_table(claims),
        "",
        f"The {len(shown)} claims that hold, are reversed or are borderline (an end of the interval within "
        "0.001 of zero):",
        "",
        "| claim | metric | report: a vs b | ours: a vs b: a - b [95%] | MDE | seeds for the report's effect | verdict |",
        "|---|---|---|---|---|---|---|",
        *(claim_row(row) for _, row in shown.iterrows()),
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
    """Rewrite ``readme``'s results from ``tables/claims.csv``; False (nothing written) when that table is
    not there yet."""
    source = tables / f"{CLAIMS_TABLE}.csv"
    if not source.is_file():
        return False
    text = readme.read_text()
    updated = replace_block(text, claims_markdown(read_table(source)))
    if updated != text:
        readme.write_text(updated)
    return True
