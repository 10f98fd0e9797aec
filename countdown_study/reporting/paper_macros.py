"""The paper's ``generated/macros.tex``: headline differences from the paired tables (``\\RlooVsSftPassOne``
and its interval, verdict and MDE), every other paired row under its ``paired_macro`` name, verdict counts,
the claim registry's counts, the sentences that state a result (``reporting.paper_prose``), which notebooks
have run, and provenance (``reporting.paper_provenance``). Pure: tables in, LaTeX text out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from countdown_study.reporting import paper_prose
from countdown_study.reporting.latex import (
    MISSING,
    escape,
    interval,
    is_missing,
    macro_name,
    newcommand,
    number,
)
from countdown_study.reporting.paper_provenance import provenance
from countdown_study.reporting.paper_sections import PAIRED_TABLES, SECTIONS, VERDICT_METRICS, section_labels

KNOWN_VERDICTS = ("holds", "reversed", "inside noise", "a above b", "a below b")
"""Verdicts of ``study.paired_table`` (a single seed's ``one seed: no verdict`` counts as none)."""


def row_macros(name: str, row: Mapping[str, object] | None) -> list[str]:
    """``\\<name>`` (the difference), ``Low``, ``High``, ``CI``, ``Mde`` and ``Verdict`` of one paired row;
    ``n/a`` for each when the row is not in ``results/``."""
    if row is None:
        return [
            newcommand(name + part, r"\textit{n/a}") for part in ("", "Low", "High", "CI", "Mde", "Verdict")
        ]
    values = {
        "": number(row.get("diff"), signed=True),
        "Low": number(row.get("ci_low"), signed=True),
        "High": number(row.get("ci_high"), signed=True),
        "Mde": number(row.get("mde")),
    }
    lines = [
        newcommand(name + part, rf"\ensuremath{{{v}}}" if v != MISSING else MISSING)
        for part, v in values.items()
    ]
    lines.append(newcommand(name + "CI", interval(row.get("ci_low"), row.get("ci_high"))))
    verdict = row.get("verdict")
    return [*lines, newcommand(name + "Verdict", MISSING if is_missing(verdict) else escape(verdict))]


def paired_macro(table: str, contrast: str, metric: str) -> str:
    """The macro name of a paired table's row: ``<Table><Contrast><Metric>``, the table's name without its
    report number and ``_paired`` (``vcc_003_paired`` -> ``Vcc``)."""
    return macro_name(re.sub(r"\d+|_paired$", "", table)) + macro_name(f"{contrast} {metric}")


@dataclass(frozen=True)
class Headline:
    """A paired row the abstract and introduction cite by name."""

    macro: str
    """Command name, without the backslash."""
    table: str
    """Paired table (CSV stem)."""
    contrast: str
    """Its ``contrast`` value."""
    metric: str
    """Its ``metric`` value."""


HEADLINES = (
    Headline("RlooVsSftPassOne", "baselines_paired", "RLOO uniform vs SFT", "pass@1"),
    Headline("RlooVsSftPassSixteen", "baselines_paired", "RLOO uniform vs SFT", "pass@16"),
    Headline("IpoVsSftPassOne", "baselines_paired", "IPO vs SFT", "pass@1"),
    Headline(
        "ReplacementPassOne", "baselines_paired", "RLOO uniform (with replacement) vs RLOO uniform", "pass@1"
    ),
    *(
        Headline(paired_macro("vcc_003_paired", contrast, metric), "vcc_003_paired", contrast, metric)
        for contrast in (
            "Staged curriculum vs RLOO uniform",
            "Adaptive curriculum vs RLOO uniform",
            "VCC-RLOO vs RLOO uniform",
            "Commit reward only vs RLOO uniform",
        )
        for metric in ("pass@1", "pass@16")
    ),
    Headline(
        paired_macro("vcc_003_selection_claim", "validation-selected vs final checkpoint", "pass@1"),
        "vcc_003_selection_claim",
        "validation-selected vs final checkpoint",
        "pass@1",
    ),
)
"""The rows the prose cites; those after the first four under their ``paired_macro`` names, so that they
are defined (``n/a``) before their notebook has run; every other paired row gets its ``paired_macro``."""

CLAIM_VERDICTS = ("holds", "reversed", "borderline", "inside noise", "underpowered", "untestable", "same runs",
                  "one seed: no verdict", "not tested")  # fmt: skip
"""The verdict categories of the claim registry (``claims.csv``), counted for the abstract (``same runs as
<claim>`` under ``same runs``; ``one seed: no verdict`` only in a study of one training seed)."""
CLAIMS_TABLE = "claims"
"""The table the headline counts come from: every claim of the reports (``study.claims``)."""


def find_row(table: pd.DataFrame | None, contrast: str, metric: str) -> dict[str, object] | None:
    """The row of a paired table with this contrast and metric, or None."""
    if table is None:
        return None
    match = table[(table["contrast"] == contrast) & (table["metric"] == metric)]
    return match.iloc[0].to_dict() if len(match) else None


def paired_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every paired table in ``tables`` (``paper_sections.PAIRED_TABLES``), by name."""
    return {name: tables[name] for name in PAIRED_TABLES if name in tables}


def verdict_counts(paired: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """How many rows of the paired tables (``VERDICT_METRICS`` only) carry each verdict."""
    verdicts = [
        v
        for t in paired.values()
        for v in t[t["metric"].isin(VERDICT_METRICS)].get("verdict", pd.Series(dtype=str))
    ]
    counted = pd.Series(verdicts, dtype=str).value_counts()
    return {v: int(counted.get(v, 0)) for v in KNOWN_VERDICTS}


def claim_counts(claims: pd.DataFrame | None) -> dict[str, str]:
    """``ClaimsTotal``, ``ClaimsTested`` and ``Claims<Category>`` macros: how many claims of the registry
    (``claims.csv``) carry each verdict category; ``n/a`` for each before notebook 90 has written it."""
    names = ["ClaimsTotal", "ClaimsTested", *("Claims" + macro_name(v) for v in CLAIM_VERDICTS)]
    if claims is None or "verdict" not in claims.columns:
        return dict.fromkeys(names, r"\textit{n/a}")
    categories = claims["verdict"].astype(str).map(lambda v: "same runs" if v.startswith("same runs") else v)
    counted = categories.value_counts()
    tested = len(claims) - int(counted.get("not tested", 0))
    counts = [len(claims), tested, *(int(counted.get(v, 0)) for v in CLAIM_VERDICTS)]
    return {name: str(n) for name, n in zip(names, counts, strict=True)}


def cited_rows() -> dict[str, list[tuple[str, str]]]:
    """The paired rows the prose cites by name (``HEADLINES``), per table: a table without one of them is
    refused (``paper_inputs.check_rows``) rather than printed as n/a."""
    rows: dict[str, list[tuple[str, str]]] = {}
    for h in HEADLINES:
        rows.setdefault(h.table, []).append((h.contrast, h.metric))
    return rows


def prose_macros(tables: Mapping[str, pd.DataFrame], counts: Mapping[str, str]) -> dict[str, str]:
    """The sentences that state a result (``reporting.paper_prose``), by macro name."""
    baselines = tables.get("baselines_paired")

    def row(contrast: str, metric: str) -> dict[str, object] | None:
        return find_row(baselines, contrast, metric)

    rloo_one, rloo_sixteen = row("RLOO uniform vs SFT", "pass@1"), row("RLOO uniform vs SFT", "pass@16")
    replacement = row("RLOO uniform (with replacement) vs RLOO uniform", "pass@1")
    return {
        "AbstractBaselines": paper_prose.abstract_baselines(
            rloo_one, rloo_sixteen, row("IPO vs SFT", "pass@1")
        ),
        "AbstractClaims": paper_prose.abstract_claims(tables.get(CLAIMS_TABLE), counts),
        "IntroductionHeadline": paper_prose.introduction_headline(rloo_one, rloo_sixteen, replacement),
        "VccAbandonment": paper_prose.abandonment(tables.get("vcc_003_abandonment")),
    }


def run_macros(not_run: Sequence[str]) -> list[str]:
    """For ``\\ifnotebookrun{NN}`` and ``\\resultref``: a flag per notebook that has run, and every label of
    a notebook that has not, defined as that notebook's number."""
    lines = []
    for section in SECTIONS:
        if section.notebook in not_run:
            lines += [rf"\expandafter\def\csname notrun@{label}\endcsname{{{section.notebook}}}"
                      for label in section_labels(section)]  # fmt: skip
        else:
            lines.append(rf"\expandafter\def\csname notebook@run@{section.notebook}\endcsname{{}}")
    return list(dict.fromkeys(lines))


def macros(
    tables: Mapping[str, pd.DataFrame], metas: Mapping[str, Mapping], not_run: Sequence[str] = ()
) -> str:
    """``generated/macros.tex``: headline rows, every paired row, verdict counts, the sentences that state
    a result, which notebooks have run, and provenance."""
    paired = paired_tables(tables)
    lines = ["% Generated by countdown_study.reporting.paper from results/; do not edit."]
    for h in HEADLINES:
        lines += row_macros(h.macro, find_row(paired.get(h.table), h.contrast, h.metric))
    seen = {h.macro for h in HEADLINES}
    for name, table in paired.items():
        for row in table.to_dict("records"):
            base = paired_macro(name, row["contrast"], row["metric"])
            if base not in seen:
                seen.add(base)
                lines += row_macros(base, row)
    for verdict, n in verdict_counts(paired).items():
        lines.append(newcommand("Verdicts" + macro_name(verdict), str(n)))
    counts = claim_counts(tables.get(CLAIMS_TABLE))
    lines += [newcommand(k, v) for k, v in counts.items()]
    lines += [newcommand(k, v) for k, v in prose_macros(tables, counts).items()]
    lines.append(newcommand("PairedTablesPresent", str(len(paired))))
    lines += run_macros(not_run)
    lines += [newcommand(k, v) for k, v in provenance(metas).items()]
    return "\n".join(lines) + "\n"
