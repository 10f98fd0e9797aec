"""The paper's generated files: macros, synthesis and provenance tables, written from ``results/`` alone.

``paper/`` holds the prose (``main.tex``, ``sections/*.tex``); every number, table and figure in it comes
from here, written to ``paper/generated/`` by ``write_generated`` (``countdown-study paper``):

* a table fragment per CSV (``generated/tables/<name>.tex``) and a body per section
  (``generated/<section>.tex``), as ``reporting.paper_sections`` lays them out;
* ``generated/macros.tex``: headline differences from the paired tables (``\\RlooVsSftPassOne`` and its
  interval, verdict and MDE), verdict counts, and provenance (git SHA, seeds, preset);
* the deviations tables, the synthesis (verdicts per paired table) and the provenance table;
* sentences that state a result (``reporting.paper_prose``), as macros the prose uses;
* which notebooks have run: a label of a notebook that has not run is defined as "not run yet" for
  ``\\resultref`` (``main.tex``), and ``\\ifnotebookrun`` keeps a paragraph that cites its numbers out.

The results are read and checked by ``reporting.paper_inputs.load_results`` (a missing, truncated or
malformed table is refused there, naming the file); the LaTeX primitives are ``reporting.latex``. The
builders here are pure; only ``write_generated``, ``stage_sources`` and ``build_pdf`` touch files. A
preset other than the full one builds in a folder of its own (``build_folder``) and never touches
``build/main.pdf``. Imports pandas, no torch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from countdown_study.reporting import paper_prose
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
from countdown_study.reporting.paper_inputs import Results, load_results
from countdown_study.reporting.paper_sections import (
    CLAIMS,
    PAIRED_TABLES,
    SECTIONS,
    VERDICT_COLUMNS,
    VERDICT_METRICS,
    deviation_files,
    fitted_table,
    section_body,
    section_labels,
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

CLAIM_VERDICTS = ("holds", "reversed", "borderline", "inside noise", "underpowered", "untestable", "same runs",
                  "not tested")  # fmt: skip
"""The verdict categories of the claim registry (``claims.csv``), counted for the abstract (``same runs as
<claim>`` under ``same runs``)."""
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
        parts.append(verdict_sentence(verdict_counts(paired)))
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
            caption = (
                "The reports' claims that hold or are reversed here (nb: the notebook whose paired table holds "
                "the row). " + CLAIMS
            )
            parts.append(fitted_table(decided, present(decided, columns), caption, "tab:decided", "table"))
    waiting = [notebook for name, notebook in PAIRED_TABLES.items() if name not in paired]
    if waiting:
        parts.append(
            f"Notebooks {', '.join(sorted(set(waiting)))} have not run yet for these results: their paired "
            "tables are not counted here."
        )
    return "\n\n".join(parts) + "\n"


def verdict_sentence(counts: Mapping[str, int]) -> str:
    """The synthesis' opening: how many comparisons at ``VERDICT_METRICS`` carry each verdict."""
    return (
        rf"Table~\ref{{tab:synthesis}} counts the verdicts of every paired table at "
        rf"{' and '.join(VERDICT_METRICS)}: {counts['holds']} comparisons confirm a report's claim, "
        rf"{counts['reversed']} reverse one and {counts['inside noise']} lie inside the noise; "
        rf"{counts['a above b']} and {counts['a below b']} contrasts without a claim put the first method "
        r"above or below the second. A verdict of \emph{inside noise} is not evidence of no effect: the MDE "
        r"beside it says which effects the design would have detected."
    )


# ----------------------------------------------------------------------------------------------------
# files

SOURCES = ("main.tex", "references.bib", "sections")
"""The paper's hand-written sources, copied into a preset's own build folder (``stage_sources``)."""


def generated_files(results: Results, figures: Mapping[str, str]) -> dict[str, str]:
    """Every generated file (path under ``generated/`` -> LaTeX) from the checked results; ``figures``
    maps a figure stem to its path as the LaTeX run sees it."""
    tables = results.tables
    files = {"macros.tex": macros(tables, results.metas, sorted(results.not_run))}
    for section in SECTIONS:
        body, fragments = section_body(section, tables, figures)
        files[f"{section.key}.tex"] = body
        files |= {f"tables/{name}.tex": text for name, text in fragments.items()}
    files |= deviation_files(tables)
    files["synthesis.tex"] = synthesis_body(paired_tables(tables))
    files["provenance.tex"] = provenance_body(results.metas)
    return files


def write_generated(paper_dir: Path, tables_dir: Path, figures_dir: Path, executed_dir: Path) -> list[Path]:
    """Check the results (``paper_inputs.ResultsError`` naming the first bad file, before anything is
    written), then write ``paper_dir/generated`` from them (stale files removed first); the paths written."""
    results = load_results(tables_dir, figures_dir, executed_dir, cited_rows())
    relative = {
        stem: Path(os.path.relpath(path, paper_dir)).as_posix() for stem, path in results.figures.items()
    }
    out = paper_dir / "generated"
    if out.is_dir():
        shutil.rmtree(out)
    written = []
    for name, text in generated_files(results, relative).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def build_folder(paper_dir: Path, preset: str, paper_preset: str) -> Path:
    """Where a preset's paper is built: ``paper_dir`` itself for the paper's own preset (its PDF is
    ``build/main.pdf``), ``paper_dir/build/<preset>`` for any other (``stage_sources``)."""
    return paper_dir if preset == paper_preset else paper_dir / "build" / preset


def stage_sources(paper_dir: Path, folder: Path) -> None:
    """Copy the paper's hand-written ``SOURCES`` into ``folder`` (replacing older copies), so that a preset
    builds there with its own ``generated/`` and PDF."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        source, target = paper_dir / name, folder / name
        if target.is_dir():
            shutil.rmtree(target)
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.is_file():
            shutil.copy2(source, target)


def pdf_path(folder: Path, staged: bool) -> Path:
    """The PDF ``build_pdf`` writes for ``folder``: ``build/main.pdf``, or ``main.pdf`` in a staged folder."""
    return folder / "main.pdf" if staged else folder / "build" / "main.pdf"


def build_pdf(folder: Path, staged: bool = False, latexmk: str = "latexmk") -> subprocess.CompletedProcess:
    """``latexmk -pdf`` of ``folder/main.tex`` (bibliography included) into ``pdf_path`` (stops at the
    first error)."""
    command = [
        latexmk,
        "-pdf",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        f"-outdir={'.' if staged else 'build'}",
        "main.tex",
    ]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True)


def undefined_references(log: str) -> list[str]:
    """The labels and citations a LaTeX log (the last pass's ``main.log``) reports undefined, in order,
    each once: a ``??`` in the PDF, which LaTeX only warns about."""
    found = re.findall(r"(?:Reference|Citation) [`']([^']+)' on page \d+ undefined", log)
    return list(dict.fromkeys(found))


def pages_written(log: str) -> int | None:
    """The page count in a LaTeX log (``Output written on main.pdf (12 pages, ...)``), or None."""
    found = re.findall(r"Output written on .*?\((\d+) pages?", log, re.S)
    return int(found[-1]) if found else None
