"""``countdown-study paper``: the paper's tables, figures and macros from ``results/``, then its PDF."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from countdown_study.cli.run import PRESET_NAMES
from countdown_study.paths import (
    PAPER_PRESET,
    executed_dir,
    figures_dir,
    paper_dir,
    readme_path,
    tables_dir,
)

LATEX_MISSING = (
    "LaTeX not found (latexmk, pdflatex); install the Debian packages with: "
    "apt-get install -y --no-install-recommends latexmk texlive-latex-recommended texlive-latex-extra"
)
"""The one line printed when LaTeX is missing (``reporting.paper.LATEX_INSTALL``, written out here so that
parsing imports nothing heavy; ``tests/test_paper.py`` holds them equal)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study paper``."""
    parser.add_argument("--paper-dir", default=None, help="the paper's folder (default <root>/paper)")
    parser.add_argument(
        "--preset", default=PAPER_PRESET, choices=PRESET_NAMES,
        help="whose tables and figures (default full: results/tables, results/figures, built into "
        "paper/build/main.pdf; any other preset into paper/build/<preset>/main.pdf)",
    )  # fmt: skip
    parser.add_argument(
        "--no-pdf", action="store_true", help="write paper/generated only, without running LaTeX"
    )
    parser.add_argument(
        "--readme", nargs="?", const="", default=None, metavar="PATH",
        help="also rewrite the results table of the README (default <root>/README.md) from the preset's "
        "synthesis_verdicts.csv",
    )  # fmt: skip


def cli_main(args: argparse.Namespace) -> int:
    """Check the preset's results and write ``generated/`` from them (exit 2, one line naming the file,
    when a table a section needs is missing, truncated or malformed; with ``--readme``, also the README's
    results table); then ``latexmk -pdf`` into ``build/main.pdf``, or ``build/<preset>/main.pdf`` for a
    preset other than the full one (exit 2 without LaTeX, 1 when LaTeX fails, with the end of its log, or
    leaves a reference undefined, naming it)."""
    from countdown_study.reporting import paper
    from countdown_study.reporting.paper_inputs import ResultsError

    source = Path(args.paper_dir) if args.paper_dir else paper_dir()
    if not (source / "main.tex").is_file():
        raise FileNotFoundError(f"no main.tex in {source}")
    folder = paper.build_folder(source, args.preset, PAPER_PRESET)
    staged = folder != source
    if staged:
        paper.stage_sources(source, folder)
    tables = tables_dir(args.preset)
    try:
        written = paper.write_generated(folder, tables, figures_dir(args.preset), executed_dir(args.preset))
    except ResultsError as error:
        print(f"countdown-study paper: error: {error}", file=sys.stderr)
        return 2
    print(f"{len(written)} files written to {folder / 'generated'}")
    if args.readme is not None:
        from countdown_study.reporting.readme import CLAIMS_TABLE, refresh_readme

        readme = Path(args.readme) if args.readme else readme_path()
        if refresh_readme(readme, tables):
            print(f"results table of {readme} written from {CLAIMS_TABLE}.csv")
        else:
            print(f"{readme} left as it is: no {CLAIMS_TABLE}.csv in {tables} yet")
    if args.no_pdf:
        return 0
    if shutil.which("latexmk") is None or shutil.which("pdflatex") is None:
        print(f"countdown-study paper: error: {LATEX_MISSING}", file=sys.stderr)
        return 2
    done = paper.build_pdf(folder, staged=staged)
    pdf = paper.pdf_path(folder, staged)
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
        print(f"countdown-study paper: error: latexmk failed (exit {done.returncode})", file=sys.stderr)
        return 1
    log = pdf.with_suffix(".log")
    broken = paper.undefined_references(log.read_text(errors="replace")) if log.is_file() else []
    if broken:
        print(
            f"countdown-study paper: error: undefined references in the PDF: {', '.join(broken)}",
            file=sys.stderr,
        )
        return 1
    pages = paper.pages_written(done.stdout + done.stderr)
    print(f"{pdf}" + (f" ({pages} pages)" if pages else ""))
    return 0
