"""The README's results: written from the claim registry's verdicts, never typed by hand."""

from __future__ import annotations

import math
import shutil

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.paths import readme_path, tables_dir
from countdown_study.reporting.outputs import read_table
from countdown_study.reporting.readme import (
    BEGIN,
    CLAIMS_TABLE,
    END,
    claims_markdown,
    count_table,
    readme_block,
    replace_block,
    results_markdown,
    seed_change_markdown,
)

NAN = math.nan


def claims() -> pd.DataFrame:
    """Four claims as ``study.claims.claims_table`` writes them (extra columns included)."""
    base = {"source": "Table 1", "statement": "s", "policy": "embedded", "t_low": NAN, "t_high": NAN,
            "n_tasks": 500, "why": ""}  # fmt: skip
    return pd.DataFrame(
        [
            {**base, "claim_id": "000.a", "report": "000", "metric": "pass@1", "a": "Fixed v1", "b": "RLOO uniform",
             "sign": -1, "report_a": 0.381, "report_b": 0.43, "ours_a": 0.41812, "ours_b": 0.4241,
             "diff": -0.00598, "ci_low": -0.0251, "ci_high": 0.01376, "mde": 0.0262, "n_seeds": 5,
             "seeds_needed": 5, "verdict": "inside noise"},
            {**base, "claim_id": "004.b", "report": "004", "metric": "pass@16", "a": "Router", "b": "RLOO uniform",
             "sign": 1, "report_a": NAN, "report_b": NAN, "ours_a": 0.7, "ours_b": 0.65, "diff": 0.05,
             "ci_low": 0.01, "ci_high": 0.09, "mde": 0.03, "n_seeds": 5, "seeds_needed": NAN, "verdict": "holds"},
            {**base, "claim_id": "004.c", "report": "004", "metric": "pass@16", "a": "Router", "b": "RLOO uniform",
             "sign": 1, "report_a": NAN, "report_b": NAN, "ours_a": 0.7, "ours_b": 0.65, "diff": 0.05,
             "ci_low": 0.01, "ci_high": 0.09, "mde": 0.03, "n_seeds": 5, "seeds_needed": NAN,
             "verdict": "same runs as 004.b"},
            {**base, "claim_id": "004.d", "report": "004", "metric": "pass@16", "a": "Teacher", "b": "",
             "sign": 1, "report_a": NAN, "report_b": NAN, "ours_a": NAN, "ours_b": NAN, "diff": NAN,
             "ci_low": NAN, "ci_high": NAN, "mde": NAN, "n_seeds": 0, "seeds_needed": NAN,
             "verdict": "not tested", "why": "no such row"},
        ]
    )  # fmt: skip


def test_the_counts_per_report_and_verdict():
    assert count_table(claims()) == [
        "| report | holds | inside noise | same runs | not tested | all |",
        "|---|---|---|---|---|---|",
        "| 000 | 0 | 1 | 0 | 0 | 1 |",
        "| 004 | 1 | 0 | 1 | 1 | 3 |",
        "| all | 1 | 1 | 1 | 1 | 4 |",
    ]


def test_the_claims_as_markdown():
    lines = claims_markdown(claims()).split("\n")
    assert lines[0].startswith(
        "Every quantitative claim of the five reports, 4 in all, is in `results/tables/claims.csv` with its "
        "source, metric and verdict: 1 holds, 1 inside noise, 1 same runs, 1 not tested."
    )
    assert "ours on embedded, 5 training seeds, 95% intervals" in lines[0]
    # only the categories the table has are explained
    assert (
        "`same runs`: identical runs to another claim, counted once; `not tested`: the reason is in the "
        "table. The reports'" in lines[0]
    )
    assert "`underpowered`" not in lines[0] and "`untestable`" not in lines[0]
    two = claims().assign(policy=["embedded", "embedded-search", "embedded", "embedded"])
    assert "ours on embedded and embedded-search, 5 training seeds" in claims_markdown(two)
    # only the evidence is listed one by one; the untested row's empty interval is never printed
    assert lines[-3:] == [
        "| claim | metric | report: a vs b | ours: a vs b: a - b [95%] | MDE | seeds for the report's effect | verdict |",
        "|---|---|---|---|---|---|---|",
        "| `004.b`: Router above RLOO uniform | pass@16 | - vs - | 0.700 vs 0.650: +0.050 [+0.010, +0.090] | 0.030 "
        "| >1000 | holds |",
    ]


def test_a_claims_table_without_rows_or_columns_is_refused():
    with pytest.raises(ValueError, match="lacks column\\(s\\) ci_low, ci_high"):
        claims_markdown(claims().drop(columns=["ci_low", "ci_high"]))
    with pytest.raises(ValueError, match="no rows"):
        claims_markdown(claims().iloc[:0])


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


def test_the_paper_command_rewrites_the_readme_from_the_claims_table(tmp_path, monkeypatch, capsys):
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
    assert "no claims.csv" in capsys.readouterr().out

    committed = readme_path().parent / "results"  # notebook 90's outputs, its claims table replaced
    for kind in ("tables", "figures"):
        (results / kind).mkdir(parents=True)
        for path in (committed / kind).iterdir():
            if path.name.startswith(("synthesis_", "claims", "interval_coverage")):
                shutil.copy(path, results / kind / path.name)
    claims().to_csv(tables_dir() / f"{CLAIMS_TABLE}.csv", index=False)
    (tables_dir() / f"{CLAIMS_TABLE}.md").unlink()  # its twin no longer matches
    assert main(args) == 0
    assert readme_block(readme.read_text()) == claims_markdown(
        read_table(tables_dir() / f"{CLAIMS_TABLE}.csv")
    )
    assert readme.read_text().startswith(
        f"intro\n{BEGIN}\nEvery quantitative claim of the five reports, 4 in all"
    )

    readme.write_text("no markers\n")
    assert main(args) == 2
    assert "needs the line" in capsys.readouterr().err


def test_the_committed_readme_holds_the_committed_claims():
    text = readme_path().read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert readme_block(text).strip(), "the README's results block is empty"
    source = tables_dir() / f"{CLAIMS_TABLE}.csv"
    assert source.is_file(), "the full preset's claims.csv is committed"
    assert readme_block(text) == results_markdown(tables_dir())


def test_what_ten_seeds_changed_as_markdown(tmp_path):
    """Claim 000.a (the report's difference -0.049) moves from inside noise to holds with ten seeds and its
    MDE comes within the report's effect; 004.b's report gives no numbers; the untested claim is left out.
    Read back from the CSV notebook 90 writes, as the README is."""
    from countdown_study.study.seed_change import seed_change_table

    before = claims()
    after = before.assign(n_seeds=[10, 10, 10, 0])
    after.loc[0, ["diff", "ci_low", "ci_high", "mde", "verdict"]] = [-0.012, -0.02, -0.004, 0.011, "holds"]
    table = seed_change_table(before, after)
    table.to_csv(tmp_path / "claims_seed_change.csv", index=False)
    text = seed_change_markdown(read_table(tmp_path / "claims_seed_change.csv"))
    assert text.split("\n") == [
        "From 5 training seeds to 10 (notebook 90, `results/tables/claims_seed_change.csv`): the claim registry "
        "on the first 5 seeds against all 10. The MDE reaches the report's own difference for 1 claims at 5 seeds "
        "and 1 at 10 (of 1 whose report gives both numbers). 1 of the 3 tested claims changed verdict category:",
        "",
        "| claim | metric | report's a - b | first 5: a - b [95%], MDE | verdict | all 10: a - b [95%], MDE | verdict |",
        "|---|---|---|---|---|---|---|",
        "| `000.a` | pass@1 | -0.049 | -0.006 [-0.025, +0.014], MDE 0.026 | inside noise | -0.012 [-0.020, -0.004], "
        "MDE 0.011 | holds |",
    ]
    assert seed_change_markdown(None) == ""


def test_a_one_seed_study_counts_every_claim():
    one = claims().assign(verdict=["one seed: no verdict", "holds", "same runs as 004.b", "not tested"])
    assert count_table(one)[0] == "| report | holds | same runs | one seed: no verdict | not tested | all |"
    assert count_table(one)[-1] == "| all | 1 | 1 | 1 | 1 | 4 |"
