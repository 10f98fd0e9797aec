"""The paper's generated files: macros, synthesis and provenance tables, written from ``results/`` alone.

``paper/`` holds the prose (``main.tex``, ``sections/*.tex``); every number, table and figure in it comes
from here, written to ``paper/generated/`` by ``write_generated`` (``countdown-study paper``):

* a table fragment per CSV (``generated/tables/<name>.tex``) and a body per section
  (``generated/<section>.tex``), as ``reporting.paper_sections`` lays them out;
* ``generated/macros.tex``: headline differences from the paired tables (``\\RlooVsSftPassOne`` and its
  interval, verdict and MDE), verdict counts, and provenance (git SHA, seeds, preset);
* the deviations tables, the synthesis (verdicts per paired table) and the provenance table.

The LaTeX primitives are ``reporting.latex``. The builders here are pure; only ``load_results``,
``write_generated`` and ``build_pdf`` touch files. Imports pandas, no torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from countdown_study.reporting.latex import (
    MISSING,
    Column,
    escape,
    interval,
    is_missing,
    macro_name,
    newcommand,
    number,
    present,
    table_float,
    tabular,
)
from countdown_study.reporting.outputs import read_table
from countdown_study.reporting.paper_sections import (
    CLAIMS,
    PAIRED_TABLES,
    SECTIONS,
    VERDICT_COLUMNS,
    VERDICT_METRICS,
    deviation_files,
    section_body,
)

LATEX_INSTALL = (
    "apt-get install -y --no-install-recommends latexmk texlive-latex-recommended texlive-latex-extra"
)
"""The Debian packages that build the paper (``paper/README.md``)."""

KNOWN_VERDICTS = ("holds", "reversed", "inside noise", "a above b", "a below b")
"""Verdicts of ``study.paired_table`` (a single seed's ``one seed: no verdict`` counts as none)."""

# ----------------------------------------------------------------------------------------------------
# macros: headline numbers, verdict counts


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

CLAIM_VERDICTS = ("holds", "reversed", "inside noise")
"""The verdicts a headline claim of ``synthesis_verdicts`` can carry, counted for the abstract."""


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


def claim_counts(verdicts: pd.DataFrame | None) -> dict[str, str]:
    """``ClaimsTotal`` and ``Claims<Verdict>`` macros: how many of the reports' headline claims in the
    synthesis verdict table carry each verdict; ``n/a`` for each before notebook 90 has written it."""
    names = ["ClaimsTotal", *("Claims" + macro_name(v) for v in CLAIM_VERDICTS)]
    if verdicts is None or "verdict" not in verdicts.columns:
        return dict.fromkeys(names, r"\textit{n/a}")
    counted = verdicts["verdict"].value_counts()
    counts = [len(verdicts), *(int(counted.get(v, 0)) for v in CLAIM_VERDICTS)]
    return {name: str(n) for name, n in zip(names, counts, strict=True)}


def macros(tables: Mapping[str, pd.DataFrame], metas: Mapping[str, Mapping]) -> str:
    """``generated/macros.tex``: headline rows, every paired row, verdict counts and provenance."""
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
    lines += [newcommand(k, v) for k, v in claim_counts(tables.get("synthesis_verdicts")).items()]
    lines.append(newcommand("PairedTablesPresent", str(len(paired))))
    lines += [newcommand(k, v) for k, v in provenance(metas).items()]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# provenance


def _sha(meta: Mapping, dirty: str) -> str:
    """The short git SHA of a table's sidecar, ``dirty`` appended when the tree was dirty."""
    return str(meta.get("git_sha", ""))[:12] + (dirty if meta.get("git_dirty") else "")


def _written(meta: Mapping) -> str:
    """The date a table was written (``YYYY-MM-DD``), or empty."""
    return str(meta.get("written", ""))[:10]


def _seeds(metas) -> set[int]:
    return {int(r["seed"]) for m in metas for r in m.get("runs", []) if r.get("seed") is not None}


def provenance(metas: Mapping[str, Mapping]) -> dict[str, str]:
    """Macros of where the results came from, over every table: git SHAs, seeds, presets, latest date."""
    values = list(metas.values())
    shas = {_sha(m, "-dirty") for m in values if m.get("git_sha")}
    presets = {str(m["preset"]) for m in values if m.get("preset")}
    written = max((_written(m) for m in values), default="")
    return {
        "ResultsGitSha": escape(", ".join(sorted(shas)) or MISSING),
        "ResultsSeeds": seed_list(sorted(_seeds(values))),
        "ResultsPreset": escape(", ".join(sorted(presets)) or MISSING),
        "ResultsWritten": escape(written or MISSING),
    }


def seed_list(seeds: Sequence[int]) -> str:
    """Seeds as LaTeX text: a run as ``0--4``, else a comma list; ``--`` when there are none."""
    if not seeds:
        return MISSING
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}--{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def provenance_table(metas: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per notebook whose tables are in ``results/``: preset, seeds, git SHA (dirty flag), written."""
    rows = {}
    for meta in metas.values():
        notebook = str(meta.get("notebook", MISSING))
        row = rows.setdefault(
            notebook,
            {
                "notebook": notebook,
                "preset": meta.get("preset", MISSING),
                "seeds": set(),
                "git SHA": set(),
                "written": "",
            },
        )
        row["seeds"] |= _seeds([meta])
        row["git SHA"].add(_sha(meta, " (dirty)"))
        row["written"] = max(row["written"], _written(meta))
    for row in rows.values():
        row["seeds"] = seed_list(sorted(row["seeds"])).replace("--", "-")
        row["git SHA"] = ", ".join(sorted(row["git SHA"]))
    return pd.DataFrame(
        sorted(rows.values(), key=lambda r: r["notebook"]),
        columns=["notebook", "preset", "seeds", "git SHA", "written"],
    )


def provenance_body(metas: Mapping[str, Mapping]) -> str:
    """The provenance table float (``provenance_table``)."""
    prov = provenance_table(metas)
    columns = tuple(Column(c, c, "code" if c == "git SHA" else "text") for c in prov.columns)
    return table_float(
        tabular(prov, columns),
        "Provenance of the tables in \\texttt{results/tables}, from their \\texttt{.meta.json} sidecars.",
        "tab:provenance",
    )


# ----------------------------------------------------------------------------------------------------
# synthesis

SYNTHESIS_COLUMNS = (
    Column("table", "paired table", "code"),
    Column("comparisons", "rows", "count"),
    Column("holds", "holds", "count"),
    Column("reversed", "reversed", "count"),
    Column("inside noise", "in noise", "count"),
    Column("a above/below b", "no claim, decided", "count"),
    Column("no verdict", "no verdict", "count"),
)
"""Columns of the synthesis table (``synthesis_table``)."""


def synthesis_table(paired: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per paired table: rows at ``VERDICT_METRICS`` and how many carry each verdict (none: an older table)."""
    rows = []
    for name, table in paired.items():
        shown = table[table["metric"].isin(VERDICT_METRICS)]
        verdicts = shown["verdict"] if "verdict" in shown else pd.Series([None] * len(shown))
        rows.append(
            {
                "table": name,
                "comparisons": len(shown),
                "holds": int((verdicts == "holds").sum()),
                "reversed": int((verdicts == "reversed").sum()),
                "inside noise": int((verdicts == "inside noise").sum()),
                "a above/below b": int(verdicts.isin(["a above b", "a below b"]).sum()),
                "no verdict": int((~verdicts.isin(KNOWN_VERDICTS)).sum()),
            }
        )
    return pd.DataFrame(rows, columns=[c.key for c in SYNTHESIS_COLUMNS])


def synthesis_body(paired: Mapping[str, pd.DataFrame]) -> str:
    """The synthesis: verdict counts per paired table, every claim that holds or is reversed, and a sentence
    naming the notebooks whose paired tables are not in ``results/`` yet."""
    parts = []
    if paired:
        counts = tabular(synthesis_table(paired), SYNTHESIS_COLUMNS)
        parts.append(
            table_float(
                counts, f"Verdicts per paired table ({' and '.join(VERDICT_METRICS)}).", "tab:synthesis"
            )
        )
        decided = (
            pd.concat([t.assign(table=n) for n, t in paired.items() if "verdict" in t], ignore_index=True)
            if any("verdict" in t for t in paired.values())
            else pd.DataFrame()
        )
        if len(decided):
            decided = decided[
                decided["verdict"].isin(["holds", "reversed"]) & decided["metric"].isin(VERDICT_METRICS)
            ]
        if len(decided):
            decided = decided.assign(notebook=decided["table"].map(PAIRED_TABLES).fillna(""))
            columns = (Column("notebook", "nb", "text"), *VERDICT_COLUMNS)
            parts.append(
                table_float(
                    tabular(decided, present(decided, columns), group="table"),
                    "The reports' claims that hold or are reversed here (nb: the notebook whose paired table "
                    "holds the row). " + CLAIMS,
                    "tab:decided",
                )
            )
    waiting = [notebook for name, notebook in PAIRED_TABLES.items() if name not in paired]
    if waiting:
        parts.append(
            f"Paired tables of notebooks {', '.join(sorted(set(waiting)))} are not in \\texttt{{results/}} yet."
        )
    return "\n".join(parts) + "\n"


# ----------------------------------------------------------------------------------------------------
# files


def load_results(
    tables_dir: Path, figures_dir: Path
) -> tuple[dict[str, pd.DataFrame], dict[str, dict], dict[str, Path]]:
    """Every CSV table (by stem), its ``.meta.json`` (where present) and every figure PDF (by stem)."""
    tables = {p.stem: read_table(p) for p in sorted(tables_dir.glob("*.csv"))}
    metas = {
        p.name.removesuffix(".meta.json"): json.loads(p.read_text())
        for p in sorted(tables_dir.glob("*.meta.json"))
    }
    figures = {p.stem: p for p in sorted(figures_dir.glob("*.pdf"))}
    return tables, metas, figures


def generated_files(
    tables: Mapping[str, pd.DataFrame], metas: Mapping[str, Mapping], figures: Mapping[str, str]
) -> dict[str, str]:
    """Every generated file (path under ``paper/generated`` -> LaTeX) from the loaded results; ``figures``
    maps a figure stem to its path as the paper folder sees it."""
    files = {"macros.tex": macros(tables, metas)}
    for section in SECTIONS:
        body, fragments = section_body(section, tables, figures)
        files[f"{section.key}.tex"] = body
        files |= {f"tables/{name}.tex": text for name, text in fragments.items()}
    files |= deviation_files(tables)
    files["synthesis.tex"] = synthesis_body(paired_tables(tables))
    files["provenance.tex"] = provenance_body(metas)
    return files


def write_generated(paper_dir: Path, tables_dir: Path, figures_dir: Path) -> list[Path]:
    """Write ``paper_dir/generated`` from the results (stale files removed first); the paths written."""
    tables, metas, figures = load_results(tables_dir, figures_dir)
    relative = {stem: Path(os.path.relpath(path, paper_dir)).as_posix() for stem, path in figures.items()}
    out = paper_dir / "generated"
    if out.is_dir():
        shutil.rmtree(out)
    written = []
    for name, text in generated_files(tables, metas, relative).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def build_pdf(paper_dir: Path, latexmk: str = "latexmk") -> subprocess.CompletedProcess:
    """``latexmk -pdf`` of ``paper_dir/main.tex`` into ``paper_dir/build`` (stops at the first error)."""
    command = [
        latexmk,
        "-pdf",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        "-outdir=build",
        "main.tex",
    ]
    return subprocess.run(command, cwd=paper_dir, capture_output=True, text=True)


def undefined_references(log: str) -> list[str]:
    """The labels and citations a LaTeX log (the last pass's ``main.log``) reports undefined, in order,
    each once: a ``??`` in the PDF, which LaTeX only warns about."""
    found = re.findall(r"(?:Reference|Citation) [`']([^']+)' on page \d+ undefined", log)
    return list(dict.fromkeys(found))


def pages_written(log: str) -> int | None:
    """The page count in a LaTeX log (``Output written on main.pdf (12 pages, ...)``), or None."""
    found = re.findall(r"Output written on .*?\((\d+) pages?", log, re.S)
    return int(found[-1]) if found else None
