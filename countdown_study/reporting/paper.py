"""The paper's generated files: macros, synthesis and provenance tables, written from ``results/`` alone.

``paper/`` holds the prose (``main.tex``, ``sections/*.tex``); every number, table and figure in it comes
from here, written to ``paper/generated/`` by ``write_generated`` (``countdown-study paper``):

* a table fragment per CSV (``generated/tables/<name>.tex``) and a body per section
  (``generated/<section>.tex``), as ``reporting.paper_sections`` lays them out;
* ``generated/macros.tex`` (``reporting.paper_macros``): headline differences from the paired tables
  (``\\RlooVsSftPassOne`` and its interval, verdict and MDE), verdict counts, and provenance (git SHA,
  seeds, preset; ``reporting.paper_provenance``);
* the deviations tables, the synthesis (verdicts per paired table, ``reporting.paper_synthesis``) and the
  provenance table;
* sentences that state a result (``reporting.paper_prose``), as macros the prose uses;
* which notebooks have run: a label of a notebook that has not run is defined as "not run yet" for
  ``\\resultref`` (``main.tex``), and ``\\ifnotebookrun`` keeps a paragraph that cites its numbers out.

The results are read and checked by ``reporting.paper_inputs.load_results`` (a missing, truncated or
malformed table is refused there, naming the file); the LaTeX primitives are ``reporting.latex``. The
builders are pure; only ``write_generated``, ``stage_sources`` and ``build_pdf`` touch files. A
preset other than the full one builds in a folder of its own (``build_folder``) and never touches
``build/main.pdf``. Imports pandas, no torch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from countdown_study.reporting.paper_inputs import Results, load_results
from countdown_study.reporting.paper_macros import (
    CLAIM_VERDICTS,
    CLAIMS_TABLE,
    HEADLINES,
    KNOWN_VERDICTS,
    Headline,
    cited_rows,
    claim_counts,
    find_row,
    macros,
    paired_macro,
    paired_tables,
    prose_macros,
    row_macros,
    run_macros,
    verdict_counts,
)
from countdown_study.reporting.paper_provenance import (
    provenance,
    provenance_body,
    provenance_table,
    seed_list,
)
from countdown_study.reporting.paper_sections import SECTIONS, deviation_files, section_body
from countdown_study.reporting.paper_synthesis import (
    SYNTHESIS_COLUMNS,
    synthesis_body,
    synthesis_table,
    verdict_sentence,
)
from countdown_study.reporting.readme import SCALE_PAIRED, SCALE_TREND, SCALE_VERDICTS

__all__ = [
    "CLAIMS_TABLE",
    "CLAIM_VERDICTS",
    "HEADLINES",
    "Headline",
    "KNOWN_VERDICTS",
    "LATEX_INSTALL",
    "SOURCES",
    "SYNTHESIS_COLUMNS",
    "build_folder",
    "build_pdf",
    "cited_rows",
    "claim_counts",
    "find_row",
    "generated_files",
    "macros",
    "pages_written",
    "paired_macro",
    "paired_tables",
    "pdf_path",
    "prose_macros",
    "provenance",
    "provenance_body",
    "provenance_table",
    "row_macros",
    "run_macros",
    "seed_list",
    "stage_sources",
    "synthesis_body",
    "synthesis_table",
    "undefined_references",
    "verdict_counts",
    "verdict_sentence",
    "write_generated",
]

LATEX_INSTALL = (
    "apt-get install -y --no-install-recommends latexmk texlive-latex-recommended texlive-latex-extra"
)
"""The Debian packages that build the paper (``paper/README.md``)."""


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
    files["synthesis.tex"] = synthesis_body(
        paired_tables(tables), tables.get(SCALE_VERDICTS), tables.get(SCALE_PAIRED), tables.get(SCALE_TREND)
    )
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
