"""The paper builder: LaTeX tables from CSVs, macros from paired tables, the generated sections, the
``countdown-study paper`` command and, where LaTeX is installed, the PDF."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.cli import paper as cli_paper
from countdown_study.paths import paper_dir, results_dir
from countdown_study.reporting import latex, paper, paper_sections
from countdown_study.reporting.deviations import deviations

# ----------------------------------------------------------------------------------------------------
# a worked example: CSV -> LaTeX table

PAIRED_CSV = """contrast,metric,diff,ci_low,ci_high,n_seeds,verdict,mde
Edge_x & 50% #1 vs RLOO uniform,pass@1,0.04744,0.01921,0.07549,5,holds,0.03771
Edge_x & 50% #1 vs RLOO uniform,pass@16,-0.1440,-0.1959,-0.0921,5,,0.0695
Edge_x & 50% #1 vs RLOO uniform,mean_score,0.0426,0.0172,0.0680,5,a above b,0.0340
"""

PAIRED_FRAGMENT = r"""\begin{table}[!htbp]
\centering
\small
\caption{Claims. Source: notebook 05, \texttt{fsc\_002\_paired}.}
\label{tab:fsc_002_paired}
\begin{tabularx}{\linewidth}{>{\raggedright\arraybackslash}Xlrrrrl}
\toprule
contrast & metric & difference & 95\% interval & MDE & seeds & verdict \\
\midrule
Edge\_x \& 50\% \#1 vs RLOO uniform & pass@1 & $+0.047$ & [$+0.019$, $+0.075$] & 0.038 & 5 & holds \\
Edge\_x \& 50\% \#1 vs RLOO uniform & pass@16 & $-0.144$ & [$-0.196$, $-0.092$] & 0.070 & 5 & -- \\
\bottomrule
\end{tabularx}
\end{table}
"""


def test_paired_csv_to_exact_fragment():
    """Escaping, rounding, signs in math mode, the interval, a missing verdict, the mean_score row left out."""
    table = pd.read_csv(io.StringIO(PAIRED_CSV))
    spec = paper_sections.TableSpec(
        "fsc_002_paired", paper_sections.VERDICT_COLUMNS, "Claims.", metrics=paper_sections.VERDICT_METRICS
    )
    assert paper_sections.table_fragment(spec, table, "05") == PAIRED_FRAGMENT


VERDICTS_CSV = """report,claim,metric,their_diff,our_diff,ci_low,ci_high,mde,verdict
000,Fixed v1 below RLOO uniform,pass@1,-0.0488,-0.0063,-0.0254,0.0136,0.0261,inside noise
003,VCC-RLOO above RLOO uniform (whole rollouts),pass@16,0.06,0.0112,-0.0101,0.0323,0.0304,inside noise
003,Staged curriculum above RLOO uniform,pass@1,0.0125,,,,,
"""

VERDICTS_FRAGMENT = r"""\begingroup
\small
\setlength{\tabcolsep}{4pt}
\begin{xltabular}{\linewidth}{l>{\raggedright\arraybackslash}X>{\raggedright\arraybackslash}p{0.11\linewidth}rrrr>{\raggedright\arraybackslash}p{0.08\linewidth}}
\caption{Every headline claim of the five reports: their difference on their model, ours on ours with its seed-aware interval and minimum detectable effect, and the verdict. Source: notebook 90, \texttt{synthesis\_verdicts}.}\label{tab:synthesis_verdicts} \\
\toprule
report & claim & metric & theirs & ours & 95\% interval & MDE & verdict \\
\midrule
\endfirsthead
\multicolumn{8}{l}{\emph{Table \thetable, continued}} \\
\toprule
report & claim & metric & theirs & ours & 95\% interval & MDE & verdict \\
\midrule
\endhead
\midrule
\multicolumn{8}{r}{\emph{continued on the next page}} \\
\endfoot
\bottomrule
\endlastfoot
000 & Fixed v1 below RLOO uniform & pass@1 & $-0.049$ & $-0.006$ & [$-0.025$, $+0.014$] & 0.026 & inside noise \\
\midrule
003 & VCC-RLOO above RLOO uniform (whole rollouts) & pass@16 & $+0.060$ & $+0.011$ & [$-0.010$, $+0.032$] & 0.030 & inside noise \\
003 & Staged curriculum above RLOO uniform & pass@1 & $+0.013$ & -- & -- & -- & -- \\
\end{xltabular}
\endgroup
"""


def test_a_long_table_breaks_across_pages_with_its_header_repeated():
    """The verdict table as an ``xltabular``: caption and label first, the header on every page, a rule
    between reports, missing values as dashes."""
    table = pd.read_csv(io.StringIO(VERDICTS_CSV), dtype={"report": str})
    [spec] = [t for s in paper_sections.SECTIONS for t in s.tables if t.name == "synthesis_verdicts"]
    assert spec.long
    assert paper_sections.table_fragment(spec, table, "90") == VERDICTS_FRAGMENT


def test_an_older_paired_table_shows_the_columns_it_has():
    table = pd.read_csv(io.StringIO(PAIRED_CSV)).drop(columns=["verdict", "mde"])
    body = latex.tabular(table, latex.present(table, paper_sections.VERDICT_COLUMNS))
    assert "verdict" not in body and "MDE" not in body
    assert r"[$+0.019$, $+0.075$]" in body


def test_model_labelled_table_shortens_the_model_and_separates_the_sources():
    table = pd.DataFrame(
        {
            "model": ["embedded 3.4M Qwen2 (SFT by this package)", "Qwen2.5-0.5B SFT (asingh15/x)"],
            "method": ["RLOO uniform", "RLOO uniform"],
            "pass@1": [0.3981, 0.43],
        }
    )
    body = latex.tabular(
        table,
        (paper_sections.MODEL_COLUMN, paper_sections.METHOD_COLUMN, *paper_sections.metric_columns("pass@1")),
        "model",
    )
    assert body.splitlines()[4:7] == [
        r"embedded 3.4M Qwen2 & RLOO uniform & 0.398 \\",
        r"\midrule",
        r"Qwen2.5-0.5B SFT & RLOO uniform & 0.430 \\",
    ]


def test_row_macros_and_their_absence():
    row = pd.read_csv(io.StringIO(PAIRED_CSV)).iloc[0].to_dict()
    lines = paper.row_macros("RlooVsSftPassOne", row)
    assert r"\newcommand{\RlooVsSftPassOne}{\ensuremath{+0.047}}" in lines
    assert r"\newcommand{\RlooVsSftPassOneCI}{[$+0.019$, $+0.075$]}" in lines
    assert r"\newcommand{\RlooVsSftPassOneVerdict}{holds}" in lines
    assert r"\newcommand{\RlooVsSftPassOne}{\textit{n/a}}" in paper.row_macros("RlooVsSftPassOne", None)


def test_pages_written():
    assert paper.pages_written("Output written on build/main.pdf (16 pages, 812345 bytes).") == 16
    assert paper.pages_written("no output") is None


# ----------------------------------------------------------------------------------------------------
# the command on a results folder of our own


@pytest.fixture
def paper_copy(tmp_path):
    """The paper's hand-written sources, without anything generated or built."""
    target = tmp_path / "paper"
    shutil.copytree(paper_dir(), target, ignore=shutil.ignore_patterns("build", "generated"))
    return target


def copy_results(target, prefixes):
    """The committed tables and figures whose names start with one of ``prefixes``."""
    for kind in ("tables", "figures"):
        (target / kind).mkdir(parents=True)
        for path in (results_dir() / kind).iterdir():
            if path.name.startswith(prefixes):
                shutil.copy(path, target / kind / path.name)
    return target


def generate(paper_copy, results, monkeypatch, *extra):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(results))
    return main(["paper", "--paper-dir", str(paper_copy), *extra])


def test_a_changed_number_in_the_results_reaches_the_paper(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", ("baselines_paired",))
    csv = results / "tables" / "baselines_paired.csv"
    table = pd.read_csv(csv)
    row = (table["contrast"] == "RLOO uniform vs SFT") & (table["metric"] == "pass@1")
    assert latex.number(table.loc[row, "diff"].item(), signed=True) != "+0.123"
    table.loc[row, "diff"] = 0.1234
    table.to_csv(csv, index=False)

    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    fragment = (paper_copy / "generated" / "tables" / "baselines_paired.tex").read_text()
    assert r"RLOO uniform vs SFT & pass@1 & $+0.123$ &" in fragment
    macros = (paper_copy / "generated" / "macros.tex").read_text()
    assert r"\newcommand{\RlooVsSftPassOne}{\ensuremath{+0.123}}" in macros
    # the notebook's other tables and figures are missing: one sentence names them
    body = (paper_copy / "generated" / "baselines.tex").read_text()
    assert r"Not in \texttt{results/} yet from notebook 02: \texttt{baselines\_summary}" in body


def test_missing_results_give_one_sentence_per_section(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", ("tasks_",))
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    generated = paper_copy / "generated"
    assert (
        generated / "report002.tex"
    ).read_text() == "Results of notebook 05 are not in \\texttt{results/} yet.\n"
    assert (generated / "baselines.tex").read_text().startswith("Results of notebook 02 are not in")
    assert r"\newcommand{\RlooVsSftPassOne}{\textit{n/a}}" in (generated / "macros.tex").read_text()
    assert (
        "Paired tables of notebooks 02, 03, 04, 05, 06, 07, 08" in (generated / "synthesis.tex").read_text()
    )
    assert (generated / "tables" / "tasks_by_tier.tex").is_file()


def test_deviations_come_from_the_saved_table_else_the_library(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", ("tasks_",))
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    assert "reward-adaptive EMA signal" in (paper_copy / "generated" / "deviations_000.tex").read_text()
    saved = deviations("000")
    saved.loc[saved["what"] == "reward-adaptive EMA signal", "ours"] = "a saved choice"
    saved.to_csv(results / "tables" / "curricula_000_deviations.csv", index=False)
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    assert "a saved choice" in (paper_copy / "generated" / "deviations_000.tex").read_text()


def test_without_latex_the_command_names_the_packages_and_exits_2(tmp_path, paper_copy, monkeypatch, capsys):
    results = copy_results(tmp_path / "results", ("tasks_",))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert generate(paper_copy, results, monkeypatch) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and paper.LATEX_INSTALL in err


def test_the_command_line_names_the_librarys_latex_packages():
    assert paper.LATEX_INSTALL in cli_paper.LATEX_MISSING  # written out so that parsing imports no pandas


def test_parsing_the_paper_command_imports_nothing_heavy():
    code = (
        "import sys\nfrom countdown_study.cli import build_parser\n"
        "build_parser().parse_args(['paper', '--no-pdf', '--preset', 'quick'])\n"
        "print(','.join(m for m in ('torch', 'transformers', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


@pytest.mark.skipif(
    shutil.which("latexmk") is None or shutil.which("pdflatex") is None,
    reason=f"LaTeX is not installed ({paper.LATEX_INSTALL})",
)
def test_the_pdf_builds_from_partial_results(tmp_path, paper_copy, monkeypatch):
    """Some notebooks' tables and figures present, the others' missing: the PDF still builds."""
    results = copy_results(tmp_path / "results", ("baselines_", "sliding_window_001_", "tasks_"))
    pd.concat([pd.read_csv(io.StringIO(VERDICTS_CSV), dtype={"report": str})] * 30).to_csv(
        results / "tables" / "synthesis_verdicts.csv", index=False
    )  # 90 rows: a long table over more than one page
    assert generate(paper_copy, results, monkeypatch) == 0
    pdf = paper_copy / "build" / "main.pdf"
    assert pdf.is_file() and pdf.read_bytes().startswith(b"%PDF")
    assert paper.undefined_references((paper_copy / "build" / "main.log").read_text()) == []
    assert r"baselines_pass_at_k.pdf" in (paper_copy / "generated" / "baselines.tex").read_text()


def test_decided_claims_name_their_notebook_and_are_grouped_by_table():
    def paired(*rows):
        return pd.DataFrame(
            [{"contrast": c, "metric": "pass@1", "diff": d, "ci_low": d - 0.01, "ci_high": d + 0.01,
              "mde": 0.02, "n_seeds": 5, "verdict": v} for c, d, v in rows]
        )  # fmt: skip

    body = paper.synthesis_body(
        {
            "baselines_paired": paired(("IPO vs SFT", 0.038, "holds"), ("X vs Y", 0.001, "inside noise")),
            "adsc_004_paired": paired(("Router vs RLOO", -0.05, "reversed")),
        }
    )
    [_, _, decided] = body.split(r"\begin{table}")  # the verdict counts, then the decided claims
    assert "tab:decided" in decided
    rows = [line for line in decided.splitlines() if "pass@1 &" in line]
    assert [row.split(" & ")[:2] for row in rows] == [["02", "IPO vs SFT"], ["07", "Router vs RLOO"]]
    assert decided.count(r"\midrule") == 2  # under the header, and between the two tables' rows
    assert "X vs Y" not in decided


def test_undefined_references_are_read_from_the_last_pass_log():
    log = (
        "LaTeX Warning: Reference `tab:synthesis_verdicts' on page 18 undefined on input line 12.\n"
        "LaTeX Warning: Citation `rloo2024' on page 2 undefined on input line 40.\n"
        "LaTeX Warning: Reference `tab:synthesis_verdicts' on page 19 undefined on input line 30.\n"
        "LaTeX Warning: There were undefined references.\n"
    )
    assert paper.undefined_references(log) == ["tab:synthesis_verdicts", "rloo2024"]
    assert paper.undefined_references("Output written on build/main.pdf (20 pages, 1 bytes).") == []


def test_report_numbers_are_read_back_as_names(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "figures").mkdir()
    pd.DataFrame({"report": ["000", "004"], "diff": [0.5, 1.0]}).to_csv(
        tmp_path / "tables" / "v.csv", index=False
    )
    tables, _, _ = paper.load_results(tmp_path / "tables", tmp_path / "figures")
    assert list(tables["v"]["report"]) == ["000", "004"]  # not 0 and 4
    assert list(tables["v"]["diff"]) == [0.5, 1.0]


def test_the_abstract_counts_the_headline_claims_by_verdict():
    verdicts = pd.DataFrame(
        {"verdict": ["holds", "inside noise", "inside noise", "reversed", "inside noise"]}
    )
    assert paper.claim_counts(verdicts) == {
        "ClaimsTotal": "5", "ClaimsHolds": "1", "ClaimsReversed": "1", "ClaimsInsideNoise": "3"
    }  # fmt: skip
    assert set(paper.claim_counts(None).values()) == {r"\textit{n/a}"}
    text = paper.macros({"synthesis_verdicts": verdicts}, {})
    assert r"\newcommand{\ClaimsInsideNoise}{3}" in text
    # the rows report 003's prose cites are defined before notebook 06 has run
    assert r"\newcommand{\VccVccRlooVsRlooUniformPassSixteenCI}{\textit{n/a}}" in text
