"""The README's results, written from the claim registry's verdicts (``claims.csv``).

The README keeps them between two marker lines (``BEGIN``, ``END``); ``countdown-study paper`` rewrites
what lies between them from the full preset's ``claims.csv`` (``study.claims``), so no number in it is
typed by hand: a sentence counting every claim of the five reports by verdict, a table of the counts per
report, and the claims that are evidence (``holds``, ``reversed``) or ``borderline`` with their numbers.
The rest (inside the noise, underpowered, untestable, the same runs as another claim, not tested) is
counted and left to the table itself. Where the study has more than five training seeds, a paragraph says
which verdicts moved from the first five to all (``seed_change_markdown``). Once notebook 09 has written ``scale_verdicts.csv`` and
``scale_paired.csv``, a paragraph follows on model size (``scale_markdown``): each headline claim's verdict
at each size and whether it is the same at every size, and uniform RLOO's pass@1 and pass@16 differences
from the SFT policy of each size. ``claims_markdown`` and ``scale_markdown`` are pure; ``refresh_readme``
reads and writes the files. Imports pandas, no torch.
"""

from __future__ import annotations

from collections.abc import Callable
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
         "one seed: no verdict", "not tested")  # fmt: skip
"""The verdict categories in the order they are counted (``same runs as <claim>`` under ``same runs``; a
study of one training seed judges none)."""
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


MEANINGS = {
    "underpowered": "inside the noise while the minimum detectable effect (MDE) exceeds the report's own effect",
    "untestable": "both arms at a floor",
    "same runs": "identical runs to another claim, counted once",
    "not tested": "the reason is in the table",
}
"""What the README's results paragraph says of each verdict category that needs saying, for the
categories the claims table has."""


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
    policies = sorted({str(p) for p in tested["policy"] if str(p)})
    ours = " and ".join(filter(None, [", ".join(policies[:-1]), *policies[-1:]]))
    meanings = [f"`{c}`: {text}" for c, text in MEANINGS.items() if (categories == c).any()]
    explained = "; ".join(meanings) + ". " if meanings else ""
    shown = claims[categories.isin(SHOWN)]
    lines = [
        f"Every quantitative claim of the five reports, {len(claims)} in all, is in `results/tables/claims.csv` "
        f"with its source, metric and verdict: {tally}. {explained}"
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


# ----------------------------------------------------------------------------------------------------
# model size (notebook 09)

SCALE_VERDICTS = "scale_verdicts"
"""Notebook 09's table of each claim's verdict per size (``study.scale.verdicts_by_size``)."""
SCALE_PAIRED = "scale_paired"
"""Notebook 09's table of each claim's difference per size (``study.scale.scale_paired``)."""
SCALE_TREND = "scale_trend"
"""Notebook 09's table of how each claim's difference changes from a size to the next larger one
(``study.scale.scale_trend``)."""
SCALE_FIGURE = "results/figures/scale_claims.png"
"""Notebook 09's figure of each claim's difference by size (``reporting.scale_plots.scale_figure``)."""
VERDICT_KEYS = ("report", "claim", "metric", "same_at_every_size")
"""The columns of ``scale_verdicts`` that are not a size's verdicts."""
UNIFORM, SFT = "RLOO uniform", "SFT"
"""The rows whose difference per size the README gives (``study.methods.UNIFORM`` and ``SFT``)."""


def scale_sizes(verdicts: pd.DataFrame) -> list[str]:
    """The sizes of a ``scale_verdicts`` table (a column each, smallest first)."""
    return [c for c in verdicts.columns if c not in VERDICT_KEYS]


def is_true(value: object) -> bool:
    """A boolean cell, as written or as read back from a CSV (``True`` / ``"True"``)."""
    return str(value).strip().lower() == "true"


def _text(value: object) -> str:
    return "-" if is_missing(value) else str(value)


def _signed(value: object) -> str:
    return "-" if is_missing(value) else f"{value:+.3f}"


def _difference(row: pd.Series | None) -> str:
    """``+0.050 [+0.010, +0.090] holds``: a ``scale_paired`` row's difference, interval and verdict; ``-``
    without a row or a difference."""
    if row is None or is_missing(row["diff"]):
        return "-"
    verdict = "" if is_missing(row["verdict"]) else f" {row['verdict']}"
    return f"{plain_change(row['diff'], row['ci_low'], row['ci_high'])}{verdict}"


def _yes(value: object) -> str:
    return "yes" if is_true(value) else "no"


def verdict_lines(verdicts: pd.DataFrame) -> list[str]:
    """Markdown lines: each claim of ``scale_verdicts`` with its verdict at each size and ``yes``/``no``
    for the same verdict at every size (``-`` while one size alone has run)."""
    sizes = scale_sizes(verdicts)
    lines = [
        "| claim | metric | " + " | ".join(sizes) + " | same at every size |",
        "|---" * (len(sizes) + 3) + "|",
    ]
    for _, row in verdicts.iterrows():
        cells = [_text(row[c]) for c in ("claim", "metric", *sizes)]
        same = row["same_at_every_size"]
        lines.append("| " + " | ".join(cells) + f" | {_text(same) if is_missing(same) else _yes(same)} |")
    return lines


def baseline_lines(paired: pd.DataFrame, sizes: list[str]) -> list[str]:
    """Markdown lines: per size, its parameters and uniform RLOO's pass@1 and pass@16 differences from the
    SFT policy of that size (``scale_paired`` rows with ``a`` uniform RLOO and ``b`` SFT; ``-`` where a
    row is missing)."""
    lines = ["| size | parameters | pass@1 | pass@16 |", "|---|---|---|---|"]
    for size in sizes:
        of_size = paired[paired["size"] == size]
        parameters = f"{int(of_size['parameters'].iloc[0]):,}" if len(of_size) else "-"
        cells = [_difference(rloo_over_sft(paired, size, metric)) for metric in ("pass@1", "pass@16")]
        lines.append(f"| {size} | {parameters} | " + " | ".join(cells) + " |")
    return lines


def scale_agreement(verdicts: pd.DataFrame, name: Callable[[str], str] = str) -> str:
    """The sentence on how many claims of ``scale_verdicts`` keep their verdict at every size, naming those
    that do not (each through ``name``, e.g. a LaTeX escape), or that one size alone has run."""
    sizes = scale_sizes(verdicts)
    same = verdicts["same_at_every_size"].map(is_true)
    differ = [name(f"{row['claim']} ({row['metric']})") for _, row in verdicts[~same].iterrows()]
    if len(sizes) < 2:
        return f"Only the {sizes[0]} size has run yet, so no verdict can differ between sizes."
    if differ:
        return (f"The verdict is the same at every size for {int(same.sum())} of the {len(verdicts)} claims "
                f"and differs for {len(differ)}: {'; '.join(differ)}.")  # fmt: skip
    return f"The verdict is the same at every size for every claim ({len(verdicts)})."


def rloo_over_sft(paired: pd.DataFrame, size: str, metric: str) -> pd.Series | None:
    """The ``scale_paired`` row of uniform RLOO against the SFT policy of ``size`` at ``metric`` (None
    where it is missing)."""
    match = paired[(paired["a"] == UNIFORM) & (paired["b"] == SFT) & (paired["size"] == size)
                   & (paired["metric"] == metric)]  # fmt: skip
    return match.iloc[0] if len(match) else None


def plain_change(change: float, low: float, high: float) -> str:
    """``+0.019 [+0.002, +0.035]``: a change and its interval, as the README writes numbers."""
    return f"{_signed(change)} [{_signed(low)}, {_signed(high)}]"


def _steps(
    rows: pd.DataFrame, change: Callable[[float, float, float], str], name: Callable[[str], str] = str
) -> str:
    """``from small to embedded by +0.019 [+0.002, +0.035] (rises) and from ...``: ``scale_trend`` rows, each
    size through ``name``."""
    return " and ".join(
        f"from {name(row['smaller'])} to {name(row['larger'])} by "
        f"{change(row['change'], row['ci_low'], row['ci_high'])} ({row['reading']})"
        for _, row in rows.iterrows()
    )


def trend_sentences(
    trend: pd.DataFrame | None,
    change: Callable[[float, float, float], str] = plain_change,
    name: Callable[[str], str] = str,
) -> str:
    """How the differences change with size, from notebook 09's ``scale_trend`` (each size against the next
    smaller one): uniform RLOO's pass@1 gain over SFT and its pass@16 difference (the narrowing) at every
    step, then the other claims whose difference changes beyond the noise at some step (``rises`` /
    ``falls``), with every step of theirs; each claim goes through ``name`` and each number through
    ``change`` (LaTeX in the paper). Empty without rows."""
    if trend is None or trend.empty:
        return ""
    baseline = (trend["a"] == UNIFORM) & (trend["b"] == SFT)
    parts = []
    for metric, what in (
        ("pass@1", "uniform RLOO's pass@1 gain over the SFT policy"),
        ("pass@16", "its pass@16 difference (falls: a wider narrowing)"),
    ):
        rows = trend[baseline & (trend["metric"] == metric)]
        if len(rows):
            parts.append(f"{what} changes {_steps(rows, change, name)}")
    text = "; ".join(parts)
    text = text[:1].upper() + text[1:] + ("." if parts else "")
    others = trend[~baseline]
    keys = others[["claim", "metric"]].apply(tuple, axis=1)
    moved = others[
        keys.isin(set(keys[others["reading"] != "inside noise"]))
    ]  # every step of a claim that moves
    claims = others[["claim", "metric"]].drop_duplicates()
    if len(claims) and moved.empty:
        text += f" No other claim's difference ({len(claims)}) changes beyond the noise from one size to the next."
    elif len(claims):
        named = [
            f"{name(f'{claim} ({metric})')} {_steps(rows, change, name)}"
            for (claim, metric), rows in moved.groupby(["claim", "metric"], sort=False)
        ]
        text += (
            f" Of the other claims' differences ({len(claims)}), {len(named)} "
            f"{'changes' if len(named) == 1 else 'change'} beyond the noise from one size to the next: "
            f"{'; '.join(named)}."
        )
    return text.strip()


def scale_markdown(
    verdicts: pd.DataFrame | None, paired: pd.DataFrame | None, trend: pd.DataFrame | None = None
) -> str:
    """The README's paragraph on model size from notebook 09's ``scale_verdicts`` and ``scale_paired``: the
    sizes, how many claims keep their verdict at every size and which do not, a table of the verdicts per
    size, and uniform RLOO against SFT per size; then, from ``scale_trend`` where it has rows, how the
    differences change with size (``trend_sentences``). Empty while either of the first two is missing."""
    if verdicts is None or paired is None:
        return ""
    sizes = scale_sizes(verdicts)
    count = scale_agreement(verdicts)
    changes = trend_sentences(trend)
    return "\n".join(
        [
            f"Model size (notebook 09, `results/tables/{SCALE_VERDICTS}.csv`): the headline claims at each size "
            f"of the embedded policy ({', '.join(sizes)}), each against the row it is claimed against at the "
            f"same size. {count} The differences behind the verdicts, with their intervals, are in "
            f"`results/tables/{SCALE_PAIRED}.csv`, drawn in [`{SCALE_FIGURE}`]({SCALE_FIGURE}).",
            "",
            *verdict_lines(verdicts),
            "",
            "Uniform RLOO against the SFT policy of the same size, a - b [95%] and verdict (pass@1: the gain; "
            "pass@16: a negative difference is a narrowing):",
            "",
            *baseline_lines(paired, sizes),
            *(
                [
                    "",
                    f"How the differences change with size (`results/tables/{SCALE_TREND}.csv`: each size "
                    f"against the next smaller one, 95% intervals). {changes}",
                ]
                if changes
                else []
            ),
        ]
    )


# ----------------------------------------------------------------------------------------------------
# five seeds against more (notebook 90)

SEED_CHANGE = "claims_seed_change"
"""Notebook 90's table of the registry on the first five training seeds against all (``study.seed_change``),
written only when the study has more than five."""


def _interval(row: pd.Series, when: str) -> str:
    """``-0.031 [-0.047, -0.015], MDE 0.021``: a ``claims_seed_change`` row's difference, interval and MDE
    on the first seeds (``when`` = ``before``) or all of them (``after``)."""
    if is_missing(row[f"diff_{when}"]):
        return "-"
    low, high = row[f"ci_{when}_low"], row[f"ci_{when}_high"]
    return (
        f"{_signed(row[f'diff_{when}'])} [{_signed(low)}, {_signed(high)}], MDE {_number(row[f'mde_{when}'])}"
    )


def seed_change_markdown(change: pd.DataFrame | None) -> str:
    """The README's paragraph on what more training seeds changed, from ``claims_seed_change``: how many
    tested claims changed verdict category and which (a table), and for how many claims the MDE reaches the
    report's own difference on the first seeds and on all. Empty while the table is missing."""
    if change is None:
        return ""
    first, every = int(change["n_seeds_before"].max()), int(change["n_seeds_after"].max())
    tested = change[change["verdict_after"].astype(str) != "not tested"]
    moved = tested[tested["moved"].map(is_true)]
    known = tested["their_diff"].notna()
    reach = {
        when: int(tested[f"mde_reaches_theirs_{when}"].map(is_true).sum()) for when in ("before", "after")
    }
    lines = [
        f"From {first} training seeds to {every} (notebook 90, `results/tables/{SEED_CHANGE}.csv`): the claim "
        f"registry on the first {first} seeds against all {every}. The MDE reaches the report's own difference "
        f"for {reach['before']} claims at {first} seeds and {reach['after']} at {every} (of {int(known.sum())} "
        f"whose report gives both numbers). {len(moved)} of the {len(tested)} tested claims changed verdict "
        f"category{':' if len(moved) else '.'}",
    ]
    if len(moved):
        lines += [
            "",
            f"| claim | metric | report's a - b | first {first}: a - b [95%], MDE | verdict | all {every}: a - b "
            "[95%], MDE | verdict |",
            "|---|---|---|---|---|---|---|",
            *(f"| `{row['claim_id']}` | {row['metric']} | {_signed(row['their_diff'])} | {_interval(row, 'before')} "
              f"| {row['verdict_before']} | {_interval(row, 'after')} | {row['verdict_after']} |"
              for _, row in moved.iterrows()),
        ]  # fmt: skip
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------
# the README's block


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


def read_if_there(path: Path) -> pd.DataFrame | None:
    """A saved table (``outputs.read_table``), or None where there is none."""
    return read_table(path) if path.is_file() else None


def results_markdown(tables: Path) -> str:
    """The README's whole results block from the tables folder ``tables``: ``claims_markdown`` of its
    ``claims.csv``, then ``seed_change_markdown`` where notebook 90 compared seed counts, then
    ``scale_markdown`` where notebook 09's tables are there."""
    block = claims_markdown(read_table(tables / f"{CLAIMS_TABLE}.csv"))
    seeds = seed_change_markdown(read_if_there(tables / f"{SEED_CHANGE}.csv"))
    scale = scale_markdown(
        *(read_if_there(tables / f"{name}.csv") for name in (SCALE_VERDICTS, SCALE_PAIRED, SCALE_TREND))
    )
    return "\n\n".join(part for part in (block, seeds, scale) if part)


def refresh_readme(readme: Path, tables: Path) -> bool:
    """Rewrite ``readme``'s results from ``tables/claims.csv`` (and ``scale_markdown`` from the scale tables
    where they are there); False (nothing written) when ``claims.csv`` is not there yet."""
    source = tables / f"{CLAIMS_TABLE}.csv"
    if not source.is_file():
        return False
    text = readme.read_text()
    updated = replace_block(text, results_markdown(tables))
    if updated != text:
        readme.write_text(updated)
    return True
