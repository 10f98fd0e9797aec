"""The README's results table: written from the synthesis verdict table, never typed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.paths import readme_path, tables_dir
from countdown_study.reporting.outputs import read_table
from countdown_study.reporting.readme import (
    BEGIN,
    END,
    VERDICTS_TABLE,
    readme_block,
    replace_block,
    seed_counts,
    verdict_markdown,
)

NAN = math.nan


def verdicts() -> pd.DataFrame:
    """Two claims as ``study.synthesis.verdict_table`` writes them (extra columns included)."""
    return pd.DataFrame(
        [
            {"report": "000", "source": "Table 1", "claim": "fixed_v1 below uniform", "metric": "pass@1",
             "sign": -1, "their_a": 0.381, "their_b": 0.43, "their_diff": -0.049, "their_metric": "pass@1",
             "their_source": "Table 1", "their_model": "Qwen2.5-0.5B", "model": "embedded",
             "our_a": 0.41812, "our_b": 0.4241, "our_diff": -0.00598, "ci_low": -0.0251, "ci_high": 0.01376,
             "mde": 0.0262, "n_seeds": 5, "verdict": "inside noise"},
            {"report": "004", "source": "Table 2", "claim": "adsc_real_only above uniform", "metric": "pass@16",
             "sign": 1, "their_a": NAN, "their_b": NAN, "their_diff": NAN, "their_metric": "pass@16",
             "their_source": "", "their_model": "Qwen2.5-0.5B", "model": "embedded",
             "our_a": 0.7, "our_b": 0.65, "our_diff": 0.05, "ci_low": 0.01, "ci_high": 0.09,
             "mde": NAN, "n_seeds": 5, "verdict": "holds"},
        ]
    )  # fmt: skip


def test_the_verdict_table_as_markdown_rows():
    assert verdict_markdown(verdicts()).split("\n") == [
        "2 headline claims of the reports: 1 inside noise, 1 holds. The reports' numbers are on Qwen2.5-0.5B; "
        "ours on embedded, 5 training seed(s) per method.",
        "",
        "| claim | report: a -> b | here: a -> b: a - b [95% interval] | verdict | MDE |",
        "|---|---|---|---|---|",
        "| 000: fixed_v1 below uniform (pass@1) | 0.381 -> 0.430 | 0.418 -> 0.424: -0.006 [-0.025, +0.014] "
        "| inside noise | 0.026 |",
        "| 004: adsc_real_only above uniform (pass@16) | - | 0.700 -> 0.650: +0.050 [+0.010, +0.090] | holds | - |",
    ]


def test_claims_resting_on_more_runs_than_the_seeds_per_method_are_counted_apart():
    assert seed_counts(pd.Series([5, 5, 5])) == "5 training seed(s) per method"
    assert seed_counts(pd.Series([5, 30, 5, 5, 10, 10])) == (
        "5 training seed(s) per method (10 runs for 2 claim(s); 30 runs for 1 claim(s))"
    )


def test_a_verdict_table_without_rows_or_columns_is_refused():
    with pytest.raises(ValueError, match="lacks column\\(s\\) ci_low, ci_high"):
        verdict_markdown(verdicts().drop(columns=["ci_low", "ci_high"]))
    with pytest.raises(ValueError, match="no rows"):
        verdict_markdown(verdicts().iloc[:0])


def test_only_the_lines_between_the_markers_change():
    text = f"# title\nintro\n{BEGIN}\nold | table\n{END}\nafter\n"
    assert replace_block(text, "new\nrows") == f"# title\nintro\n{BEGIN}\nnew\nrows\n{END}\nafter\n"
    assert readme_block(replace_block(text, "new\nrows")) == "new\nrows"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{BEGIN}\nrows\n", "needs the line .*results: end.* found it 0 times"),
        (f"{BEGIN}\n{BEGIN}\n{END}\n", "needs the line .*results: begin.* found it 2 times"),
        (f"{END}\nrows\n{BEGIN}\n", "end marker comes before its begin marker"),
    ],
)
def test_a_readme_without_its_markers_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        replace_block(text, "rows")


def test_the_paper_command_rewrites_the_readme_from_the_verdict_table(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nhand-typed\n{END}\n")
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(results))
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "main.tex").write_text("\\documentclass{article}\n")

    args = ["paper", "--paper-dir", str(paper), "--no-pdf", "--readme", str(readme)]
    assert main(args) == 0  # no verdict table yet: the README is left alone, and says why
    assert "hand-typed" in readme.read_text()
    assert "no synthesis_verdicts.csv" in capsys.readouterr().out

    tables_dir().mkdir(parents=True)
    verdicts().to_csv(tables_dir() / f"{VERDICTS_TABLE}.csv", index=False)
    assert main(args) == 0
    assert readme_block(readme.read_text()) == verdict_markdown(verdicts())
    assert readme.read_text().startswith(f"intro\n{BEGIN}\n2 headline claims")

    readme.write_text("no markers\n")
    assert main(args) == 2
    assert "needs the line" in capsys.readouterr().err


def test_the_committed_readme_holds_the_committed_verdicts():
    text = readme_path().read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert readme_block(text).strip(), "the README's results block is empty"
    source = tables_dir() / f"{VERDICTS_TABLE}.csv"
    if source.is_file():  # once the full synthesis is committed, the README shows exactly its verdicts
        assert readme_block(text) == verdict_markdown(read_table(source))
