"""The paper builder: LaTeX tables from CSVs, macros from paired tables, the generated sections, the
``countdown-study paper`` command and, where LaTeX is installed, the PDF."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.cli import paper as cli_paper
from countdown_study.paths import paper_dir, results_dir
from countdown_study.reporting import (
    latex,
    paper,
    paper_inputs,
    paper_prose,
    paper_provenance,
    paper_sections,
)
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
\begin{xltabular}{\linewidth}{l>{\raggedright\arraybackslash}X>{\raggedright\arraybackslash}p{0.11\linewidth}rrrr>{\raggedright\arraybackslash}p{0.16\linewidth}}
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


def test_a_lead_column_goes_on_its_own_line_above_each_row_and_never_squeezes_the_others():
    table = pd.DataFrame(
        {"claim_id": ["000.a-long-claim-id", "001.b"], "report": ["000", "001"], "metric": ["pass@1", "pass@16"],
         "mde": [0.0188, float("nan")]}
    )  # fmt: skip
    columns = (latex.Column("metric", "metric", "text", width="X"), latex.Column("mde", "MDE"))
    body = latex.long_table(
        table, columns, "C.", "tab:x", group="report", lead=latex.Column("claim_id", "", "code")
    )
    rows = body[body.index(r"\endlastfoot") + len(r"\endlastfoot") + 1 : body.index(r"\end{xltabular}")]
    assert rows == (
        r"\multicolumn{2}{@{}l}{\texttt{000.\allowbreak{}a-long-claim-id}} \\*"
        "\n"
        r"pass@1 & 0.019 \\"
        "\n"
        r"\midrule"
        "\n"
        r"\multicolumn{2}{@{}l}{\texttt{001.\allowbreak{}b}} \\*"
        "\n"
        r"pass@16 & -- \\"
        "\n"
    )
    [spec] = [t for s in paper_sections.SECTIONS for t in s.tables if t.name == "claims"]
    assert spec.lead.key == "claim_id" and "claim_id" not in [c.key for c in spec.columns]
    assert "claim_id" in paper_inputs.required_columns(spec)


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


COMMITTED = results_dir()
"""The committed results (read before any test points ``COUNTDOWN_STUDY_RESULTS`` elsewhere)."""


def copy_results(target, prefixes, exist_ok=False):
    """The committed tables and figures whose names start with one of ``prefixes``."""
    for kind in ("tables", "figures"):
        (target / kind).mkdir(parents=True, exist_ok=exist_ok)
        for path in (COMMITTED / kind).iterdir():
            if path.name.startswith(prefixes):
                shutil.copy(path, target / kind / path.name)
    return target


NOTEBOOK_01 = ("tasks_by_num_count", "tasks_by_tier", "solution_count_by_tier")
"""Name prefixes of what the paper shows from notebook 01."""


def generate(paper_copy, results, monkeypatch, *extra):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(results))
    return main(["paper", "--paper-dir", str(paper_copy), *extra])


def test_a_changed_number_in_the_results_reaches_the_paper(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", ("baselines_",))
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
    assert "uniform RLOO against SFT changes pass@1 by $+0.123$" in macros  # the headline sentence too


def test_missing_results_give_one_sentence_per_section(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", NOTEBOOK_01)
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    generated = paper_copy / "generated"
    assert (generated / "report002.tex").read_text() == paper_sections.missing_sentence("05") + "\n"
    assert "Notebook 05 has not run yet" in paper_sections.missing_sentence("05")
    assert (generated / "baselines.tex").read_text().startswith("Notebook 02 has not run yet")
    macros = (generated / "macros.tex").read_text()
    assert r"\newcommand{\RlooVsSftPassOne}{\textit{n/a}}" in macros
    # no sentence states a result the results do not carry
    assert r"\newcommand{\IntroductionHeadline}{" + paper_prose.BASELINES_NOT_RUN + "}" in macros
    assert r"\newcommand{\AbstractClaims}{" + paper_prose.CLAIMS_NOT_RUN + "}" in macros
    assert "sharpens" not in macros
    assert (
        "Notebooks 02, 03, 04, 05, 06, 07, 08 have not run yet" in (generated / "synthesis.tex").read_text()
    )
    assert (generated / "tables" / "tasks_by_tier.tex").is_file()


def test_deviations_come_from_the_saved_table_else_the_library(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", NOTEBOOK_01)
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    assert "reward-adaptive EMA signal" in (paper_copy / "generated" / "deviations_000.tex").read_text()
    saved = deviations("000")
    saved.loc[saved["what"] == "reward-adaptive EMA signal", "ours"] = "a saved choice"
    copy_results(results, ("curricula_000_",), exist_ok=True)  # notebook 03 has run
    saved.to_csv(results / "tables" / "curricula_000_deviations.csv", index=False)
    (results / "tables" / "curricula_000_deviations.md").unlink()
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    assert "a saved choice" in (paper_copy / "generated" / "deviations_000.tex").read_text()


def test_without_latex_the_command_names_the_packages_and_exits_2(tmp_path, paper_copy, monkeypatch, capsys):
    results = copy_results(tmp_path / "results", NOTEBOOK_01)
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
    """Some notebooks have run, the others not: the PDF builds, with no reference or citation undefined
    (a label of a notebook that has not run reads "not run yet")."""
    results = copy_results(
        tmp_path / "results",
        ("baselines_", "sliding_window_001_", "synthesis_", "claims", "interval_coverage"),
    )
    pd.concat([pd.read_csv(io.StringIO(VERDICTS_CSV), dtype={"report": str})] * 30).to_csv(
        results / "tables" / "synthesis_verdicts.csv", index=False
    )  # 90 rows: a long table over more than one page
    (results / "tables" / "synthesis_verdicts.md").unlink()  # its twin no longer matches
    assert generate(paper_copy, results, monkeypatch) == 0
    pdf = paper_copy / "build" / "main.pdf"
    assert pdf.is_file() and pdf.read_bytes().startswith(b"%PDF")
    assert paper.undefined_references((paper_copy / "build" / "main.log").read_text()) == []
    assert r"baselines_pass_at_k.pdf" in (paper_copy / "generated" / "baselines.tex").read_text()
    macros = (paper_copy / "generated" / "macros.tex").read_text()
    assert r"\csname notrun@tab:tasks_by_num_count\endcsname{01}" in macros  # cited in the methods


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
    pd.DataFrame({"report": ["000", "004"], "diff": [0.5, 1.0]}).to_csv(tmp_path / "v.csv", index=False)
    table = paper_inputs.read_csv_checked(tmp_path / "v.csv")
    assert list(table["report"]) == ["000", "004"]  # not 0 and 4
    assert list(table["diff"]) == [0.5, 1.0]


def test_the_abstract_counts_the_registry_claims_by_verdict():
    claims = pd.DataFrame(
        {"verdict": ["holds", "inside noise", "underpowered", "reversed", "not tested", "same runs as 000.a",
                     "borderline", "untestable", "inside noise"]}
    )  # fmt: skip
    assert paper.claim_counts(claims) == {
        "ClaimsTotal": "9", "ClaimsTested": "8", "ClaimsHolds": "1", "ClaimsReversed": "1",
        "ClaimsBorderline": "1", "ClaimsInsideNoise": "2", "ClaimsUnderpowered": "1", "ClaimsUntestable": "1",
        "ClaimsSameRuns": "1", "ClaimsOneSeedNoVerdict": "0", "ClaimsNotTested": "1",
    }  # fmt: skip
    assert set(paper.claim_counts(None).values()) == {r"\textit{n/a}"}
    text = paper.macros({"claims": claims}, {})
    assert r"\newcommand{\ClaimsInsideNoise}{2}" in text and r"\newcommand{\ClaimsTested}{8}" in text
    # the rows report 003's prose cites are defined before notebook 06 has run
    assert r"\newcommand{\VccVccRlooVsRlooUniformPassSixteenCI}{\textit{n/a}}" in text


# ----------------------------------------------------------------------------------------------------
# a run notebook's tables are whole and well formed, or the paper is refused naming the file


@pytest.fixture
def baselines_run(tmp_path):
    """Notebook 02's committed tables and figures, with its executed copy: the notebook has run."""
    results = copy_results(tmp_path / "results", ("baselines_",))
    (results / "executed").mkdir()
    (results / "executed" / "02_baselines.ipynb").write_text("{}")
    return results


def refused(paper_copy, results, monkeypatch, capsys) -> str:
    """Run the command on ``results``; assert exit 2 and one line on stderr; that line."""
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not (paper_copy / "generated").exists()  # nothing written from bad results
    return err


def test_a_deleted_table_of_a_notebook_that_ran_is_refused(baselines_run, paper_copy, monkeypatch, capsys):
    (baselines_run / "tables" / "baselines_paired.csv").unlink()
    err = refused(paper_copy, baselines_run, monkeypatch, capsys)
    assert "baselines_paired.csv is missing" in err


def test_a_deleted_table_is_refused_without_the_executed_copy(tmp_path, paper_copy, monkeypatch, capsys):
    """The synthesis' other outputs are there: notebook 90 has run, so its verdict table is needed."""
    results = copy_results(tmp_path / "results", ("synthesis_",))
    (results / "tables" / "synthesis_verdicts.csv").unlink()
    assert "synthesis_verdicts.csv is missing" in refused(paper_copy, results, monkeypatch, capsys)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text[: len(text) // 2], "is truncated: its last line has no end"),  # cut mid-line
        (lambda text: "".join(text.splitlines(keepends=True)[:5]), "is truncated: 4 rows where"),  # at a line
        (lambda text: text.replace("contrast,metric,diff,", "contrast,metric,difference,", 1), "lacks the column(s) diff"),
        (lambda text: "", "is empty"),
        (lambda text: text.splitlines(keepends=True)[0], "has a header and no rows"),
        (lambda text: "\x00garbage\xff\n;;more garbage\n", "lacks the column(s) contrast"),
        (lambda text: text.replace("0.0474", "n/a%", 1), "column diff holds 'n/a%', not a number"),
        (lambda text: text.replace("RLOO uniform vs SFT,pass@1", "RLOO vs SFT,pass@1", 1), "has no row 'RLOO uniform vs SFT at pass@1'"),
    ],
    ids=["cut-mid-line", "cut-at-line", "renamed-diff", "empty", "header-only", "garbage", "text-in-diff", "headline-row-gone"],
)  # fmt: skip
def test_a_damaged_table_is_refused_naming_the_file(
    baselines_run, paper_copy, monkeypatch, capsys, damage, message
):
    csv = baselines_run / "tables" / "baselines_paired.csv"
    csv.write_text(damage(csv.read_text()))
    err = refused(paper_copy, baselines_run, monkeypatch, capsys)
    assert str(csv) in err and message in err


def test_a_binary_table_is_refused_naming_the_file(baselines_run, paper_copy, monkeypatch, capsys):
    csv = baselines_run / "tables" / "baselines_summary.csv"
    csv.write_bytes(bytes(range(256)))
    err = refused(paper_copy, baselines_run, monkeypatch, capsys)
    assert str(csv) in err and "not a CSV table" in err


def test_a_damaged_figure_or_sidecar_is_refused(baselines_run, paper_copy, monkeypatch, capsys):
    figure = baselines_run / "figures" / "baselines_pass_at_k.pdf"
    intact = figure.read_bytes()
    figure.write_bytes(b"")
    assert f"{figure} is not a PDF" in refused(paper_copy, baselines_run, monkeypatch, capsys)
    figure.unlink()
    assert f"{figure} is missing" in refused(paper_copy, baselines_run, monkeypatch, capsys)
    figure.write_bytes(intact)
    meta = baselines_run / "tables" / "baselines_paired.meta.json"
    meta.write_text('{"git_sha": ')
    assert f"{meta} is not a JSON sidecar" in refused(paper_copy, baselines_run, monkeypatch, capsys)


def test_only_a_notebook_that_has_not_run_gets_the_not_run_sentence(baselines_run, paper_copy, monkeypatch):
    assert generate(paper_copy, baselines_run, monkeypatch, "--no-pdf") == 0
    generated = paper_copy / "generated"
    assert "has not run yet" not in (generated / "baselines.tex").read_text()
    assert (generated / "report000.tex").read_text() == paper_sections.missing_sentence("03") + "\n"
    macros = (generated / "macros.tex").read_text()
    assert r"\csname notebook@run@02\endcsname" in macros and r"notebook@run@03" not in macros


def test_has_run_reads_the_executed_copy_or_any_output(tmp_path):
    tables, figures, executed = (tmp_path / n for n in ("tables", "figures", "executed"))
    for folder in (tables, figures, executed):
        folder.mkdir()
    assert not paper_inputs.has_run("05", tables, figures, executed)
    (executed / "05_feature_space_curriculum_002.ipynb").write_text("{}")
    assert paper_inputs.has_run("05", tables, figures, executed)
    (executed / "05_feature_space_curriculum_002.ipynb").unlink()
    (figures / "fsc_002_moving_edge.pdf").write_bytes(b"%PDF-1.5")
    assert paper_inputs.has_run("05", tables, figures, executed)
    assert not paper_inputs.has_run("04", tables, figures, executed)


def test_every_committed_table_the_paper_needs_passes_its_checks():
    """The committed full-preset results are whole: the checks refuse none of them."""
    results = paper_inputs.load_results(
        COMMITTED / "tables", COMMITTED / "figures", COMMITTED / "executed", paper.cited_rows()
    )
    assert results.not_run == frozenset()
    assert {"baselines_paired", "synthesis_verdicts", "curricula_000_deviations"} <= set(results.tables)


# ----------------------------------------------------------------------------------------------------
# sentences that state a result come from the rows that carry it


def _row(diff, low, high, verdict="holds", mde=0.03):
    return {"diff": diff, "ci_low": low, "ci_high": high, "verdict": verdict, "mde": mde}


def test_the_headline_reading_follows_the_intervals_and_verdicts():
    sharper = _row(0.047, 0.019, 0.075), _row(-0.144, -0.196, -0.092)
    headline = paper_prose.introduction_headline(*sharper, _row(-0.001, -0.015, 0.014, "inside noise"))
    assert "changes pass@1 by $+0.047$ [$+0.019$, $+0.075$] (MDE 0.030; holds)" in headline
    assert (
        "it sharpens the first sample and narrows the spread of the rest, as the reports found." in headline
    )
    flat = _row(0.004, -0.01, 0.018, "inside noise"), _row(-0.144, -0.196, -0.092)
    headline = paper_prose.introduction_headline(*flat, _row(-0.001, -0.015, 0.014, "inside noise"))
    assert "sharpens" not in headline and "as the reports found" not in headline
    assert "pass@1 stays inside the noise and pass@16 falls" in headline
    against = _row(-0.03, -0.05, -0.01, "reversed"), _row(-0.144, -0.196, -0.092)
    assert "pass@1 falls and pass@16 falls, against the reports' finding" in paper_prose.abstract_baselines(
        *against, _row(0.038, 0.022, 0.054)
    )
    assert paper_prose.abstract_baselines(None, None, None) == paper_prose.BASELINES_NOT_RUN


def test_the_abstract_counts_claims_against_uniform_by_direction():
    claims = pd.DataFrame(
        [("Fixed v1 below RLOO uniform", "RLOO uniform", "pass@1", -1, "inside noise"),
         ("Adaptive v1 below RLOO uniform", "RLOO uniform", "pass@1", -1, "holds"),
         ("Staged curriculum below RLOO uniform, on embedded", "RLOO uniform", "pass@16", -1, "holds"),
         ("Staged curriculum below RLOO uniform", "RLOO uniform", "pass@16", -1, "holds"),
         ("Hybrid curriculum below RLOO uniform", "RLOO uniform", "pass@16", -1, "same runs as 003.staged"),
         ("Router below RLOO uniform", "RLOO uniform", "pass@16", -1, "not tested"),
         ("Dynamic edge above RLOO uniform (with replacement)", "RLOO uniform (with replacement)", "pass@1", 1,
          "inside noise"),
         ("RLOO uniform above SFT", "SFT", "pass@1", 1, "holds")],  # not against uniform
        columns=["claim", "b", "metric", "sign", "verdict"],
    )  # fmt: skip
    counts = paper.claim_counts(claims)
    text = paper_prose.abstract_claims(claims, counts)
    assert text.startswith(
        "Of the reports' 8 quantitative claims, 7 can be tested on our runs: 4 hold, 0 are"
    )
    assert "2 lie inside the training and task noise" in text and "1 repeat another claim's runs" in text
    # the duplicate and the untested claim are not counted against uniform
    assert "Of the 1 claims that a method raises a metric over uniform RLOO, none holds;" in text
    assert "of the 4 that one lowers a metric, 3 hold (1 at pass@1, 2 at pass@16)." in text
    raised = claims.assign(
        verdict=["inside noise", "inside noise", "reversed", "inside noise", "inside noise", "not tested",
                 "holds", "holds"]
    )  # fmt: skip
    text = paper_prose.abstract_claims(raised, paper.claim_counts(raised))
    assert "raises a metric over uniform RLOO, 1 hold, all at pass@1;" in text
    assert "lowers a metric, none holds, and 1 are reversed." in text
    assert "training seed" not in text
    assert paper_prose.abstract_claims(None, counts) == paper_prose.CLAIMS_NOT_RUN
    one_seed = claims.assign(metric="avg_pass@k", verdict=["one seed: no verdict"] * 6 + ["holds"] * 2)
    text = paper_prose.abstract_claims(one_seed, paper.claim_counts(one_seed))
    assert "2 hold," in text and "6 have one training seed, which gives no verdict." in text
    assert "raises a metric over uniform RLOO, 1 hold, all at avg\\_pass@k;" in text  # LaTeX-escaped


def test_the_abandonment_sentence_reads_the_table():
    table = pd.DataFrame({"method": ["SFT", "RLOO uniform"], "abandoned_rate": [0.0851, 0.0070]})
    assert paper_prose.abandonment(table).endswith(
        "is 0.085 for the SFT policy and 0.007 after uniform RLOO."
    )
    assert paper_prose.abandonment(None) == ""


def test_the_paper_prose_states_no_result_by_hand():
    """The result-stating sentences of the old prose are gone from ``paper/``; each now comes from a table."""
    text = "".join(
        p.read_text() for p in [paper_dir() / "main.tex", *sorted((paper_dir() / "sections").glob("*.tex"))]
    )
    for sentence in ("sharpens the first sample", "as the reports found", "none of the curricula",
                     "while both lower pass@16", "nearly\ncloses the gap", "the curriculum lowers pass@1"):  # fmt: skip
        assert sentence not in text, sentence
    assert r"\AbstractBaselines" in text and r"\AbstractClaims" in text and r"\IntroductionHeadline" in text


# ----------------------------------------------------------------------------------------------------
# tables fit the page, the bibliography is complete, a small preset builds on its own


def test_a_long_paired_table_breaks_across_pages():
    rows = [{"contrast": f"M{i} vs RLOO uniform", "metric": "pass@1", "diff": 0.01, "ci_low": -0.01,
             "ci_high": 0.03, "mde": 0.02, "n_seeds": 5, "verdict": "inside noise"}
            for i in range(paper_sections.LONG_TABLE_ROWS + 1)]  # fmt: skip
    spec = paper_sections.TableSpec(
        "fsc_002_paired", paper_sections.VERDICT_COLUMNS, "Claims.", metrics=("pass@1",)
    )
    assert r"\begin{xltabular}" in paper_sections.table_fragment(spec, pd.DataFrame(rows), "05")
    assert r"\begin{table}" in paper_sections.table_fragment(spec, pd.DataFrame(rows[:-1]), "05")


def test_the_verdict_column_keeps_a_category_on_one_line_and_wraps_a_long_verdict():
    """A category ("inside noise", 12 characters, about 0.13 of the line at the table's size) fits the
    column on one line; "same runs as <claim>" wraps inside it instead of pushing the table off the page."""
    for name in ("synthesis_verdicts", "claims"):
        [spec] = [t for s in paper_sections.SECTIONS for t in s.tables if t.name == name]
        [verdict] = [c for c in spec.columns if c.key == "verdict"]
        assert float(verdict.width) >= 0.16
        assert latex._spec(verdict) == rf">{{\raggedright\arraybackslash}}p{{{verdict.width}\linewidth}}"


def test_deviation_cells_without_a_value_print_a_dash():
    rows = deviations("000").head(2).assign(ours=["a choice", float("nan")])
    rows["where set"] = [float("nan"), "FixedConfig.threshold"]
    body = paper_sections.deviation_fragment(rows, "Deviations.", "tab:d")
    assert "nan" not in body
    assert (
        r"& a choice &" in body
        and r"& --\newline{\scriptsize \texttt{FixedConfig.\allowbreak{}threshold}} &" in body
    )
    assert r"\begin{xltabular}" in body  # a long deviations table breaks across pages


def test_no_generated_file_prints_nan(tmp_path, paper_copy, monkeypatch):
    results = copy_results(tmp_path / "results", ("baselines_", "fsc_002_", "curricula_000_"))
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    for path in (paper_copy / "generated").rglob("*.tex"):
        assert not re.search(r"\bnan\b", path.read_text(), re.IGNORECASE), path


def _cited_keys() -> set[str]:
    text = "".join(
        p.read_text() for p in [paper_dir() / "main.tex", *(paper_dir() / "sections").glob("*.tex")]
    )
    return {key.strip() for group in re.findall(r"\\cite[tp]?\{([^}]*)\}", text) for key in group.split(",")}


def test_every_citation_is_in_the_bibliography_and_every_entry_is_cited():
    bib = (paper_dir() / "references.bib").read_text()
    entries = set(re.findall(r"@\w+\{([^,\s]+),", bib))
    assert _cited_keys() == entries
    reports = {f"report{n:03d}" for n in range(5)}
    methods = {"ahmadian2024rloo", "yu2025dapo", "hu2024openrlhf", "primeintellect2025primerl", "qu2025mopps",
               "chen2025sec", "agarwal2021rliable", "qwen2024qwen25", "pan2025tinyzero", "papermill",
               "wolf2020transformers", "kwon2023vllm", "moritz2018ray"}  # fmt: skip
    assert reports | methods <= entries


def test_a_small_preset_builds_in_its_own_folder(tmp_path, paper_copy, monkeypatch):
    """``--preset quick`` reads results/presets/quick and writes paper/build/quick/, never generated/ or
    build/main.pdf of the full preset."""
    results = tmp_path / "results"
    copy_results(results / "presets" / "quick", ("baselines_",))
    (paper_copy / "build").mkdir()
    (paper_copy / "build" / "main.pdf").write_bytes(b"%PDF full preset")
    assert generate(paper_copy, results, monkeypatch, "--no-pdf", "--preset", "quick") == 0
    staged = paper_copy / "build" / "quick"
    assert (staged / "main.tex").read_text() == (paper_copy / "main.tex").read_text()
    assert (staged / "sections" / "methods.tex").is_file() and (staged / "references.bib").is_file()
    assert "has not run yet" not in (staged / "generated" / "baselines.tex").read_text()
    assert (staged / "generated" / "report000.tex").read_text().startswith("Notebook 03 has not run yet")
    assert not (paper_copy / "generated").exists()
    assert (paper_copy / "build" / "main.pdf").read_bytes() == b"%PDF full preset"
    assert paper.pdf_path(staged, staged=True) == staged / "main.pdf"


@pytest.mark.skipif(
    shutil.which("latexmk") is None or shutil.which("pdflatex") is None,
    reason=f"LaTeX is not installed ({paper.LATEX_INSTALL})",
)
def test_a_small_preset_pdf_of_what_exists(tmp_path, paper_copy, monkeypatch):
    results = tmp_path / "results"
    copy_results(results / "presets" / "tiny", NOTEBOOK_01)
    assert generate(paper_copy, results, monkeypatch, "--preset", "tiny") == 0
    pdf = paper_copy / "build" / "tiny" / "main.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")
    assert paper.undefined_references((pdf.with_suffix(".log")).read_text()) == []
    assert not (paper_copy / "build" / "main.pdf").exists()


def test_the_seed_count_macro_counts_the_training_seeds_behind_every_table():
    metas = {
        "a": {"runs": [{"seed": 0}, {"seed": 1}]},
        "b": {"runs": [{"seed": 1}, {"seed": 4}, {"seed": None}]},
    }
    macros = paper_provenance.provenance(metas)
    assert (macros["ResultsSeeds"], macros["ResultsSeedCount"]) == ("0, 1, 4", "3")
    assert paper_provenance.provenance({"a": {"runs": []}})["ResultsSeedCount"] == "--"


def test_a_table_written_without_rows_in_a_one_seed_study_says_why(tmp_path, paper_copy, monkeypatch):
    """Notebook 90's coverage table has no rows in a study of one training seed (the tiny and quick
    presets): the paper prints its header with the reason in the caption instead of refusing the
    results; a required table without rows is still refused (``test_a_damaged_table_is_refused``)."""
    results = copy_results(tmp_path / "results", ("synthesis_", "claims", "interval_coverage"))
    for suffix in (".csv", ".md"):
        table = results / "tables" / f"interval_coverage{suffix}"
        header = table.read_text().splitlines(keepends=True)[: 1 if suffix == ".csv" else 2]
        table.write_text("".join(header))
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    fragment = (paper_copy / "generated" / "tables" / "interval_coverage.tex").read_text()
    assert "there is nothing to simulate" in fragment and r"\label{tab:interval_coverage}" in fragment
