"""The scale study in the paper and the README: the section shows what notebook 09 saves, by the names it
saves them under; the paper builds with notebook 09 not run, or run at some of the sizes; the README's
paragraph on model size on a worked example, and nothing of it while the scale tables are missing."""

from __future__ import annotations

import math
import re
import shutil

import nbformat
import numpy as np
import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.paths import notebooks_dir, paper_dir
from countdown_study.reporting import (
    outputs,
    paper,
    paper_inputs,
    paper_sections,
    paper_synthesis,
    readme,
    scale_plots,
)
from countdown_study.reporting.paper_study_sections import FIELD, SCALE, SCALE_SIZES, SYNTHESIS
from countdown_study.study import methods, scale
from countdown_study.study.methods import StudyResult
from countdown_study.study.presets import study_preset

NAN = math.nan
NOTEBOOK = notebooks_dir() / "09_scale.ipynb"

# ----------------------------------------------------------------------------------------------------
# the section is what notebook 09 saves


def saved_names(kind: str) -> set[str]:
    """The names notebook 09 passes to ``outputs.save_table`` / ``outputs.save_figure``."""
    code = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code")
    return set(re.findall(rf"outputs\.save_{kind}\([^\n]*?,\s*\"([a-z0-9_]+)\"", code))


def test_the_scale_section_shows_every_table_and_figure_notebook_09_saves():
    tables = saved_names("table")
    assert {"scale_sizes", "scale_paired", "scale_verdicts"} <= tables  # the pattern reads the notebook
    assert {t.name for t in SCALE.tables} == tables
    assert {f.name for f in SCALE.figures} == saved_names("figure") == {"scale_claims"}
    assert SCALE.notebook == scale.NOTEBOOK[:2]
    assert {readme.SCALE_VERDICTS, readme.SCALE_PAIRED, readme.SCALE_TREND} <= tables  # what the README reads
    assert readme.SCALE_FIGURE == "results/figures/scale_claims.png"


def test_the_scale_section_sits_between_the_field_and_the_synthesis():
    keys = [s.key for s in paper_sections.SECTIONS]
    assert keys.index(FIELD.key) + 1 == keys.index(SCALE.key) == keys.index(SYNTHESIS.key) - 1
    assert r"\input{generated/scale_study}" in (paper_dir() / "sections" / "scale.tex").read_text()
    order = re.findall(r"\\input\{sections/(\w+)\}", (paper_dir() / "main.tex").read_text())
    assert order.index("field") + 1 == order.index("scale") == order.index("synthesis") - 1


def test_the_sizes_and_rows_named_in_reporting_are_the_studys():
    assert tuple(size.name for size in scale.SIZES) == SCALE_SIZES
    assert (methods.UNIFORM.name, methods.SFT.name) == (readme.UNIFORM, readme.SFT)
    assert any(c.a == readme.UNIFORM and c.b == readme.SFT and c.metric == "pass@16" for c in scale.CLAIMS)


def test_the_scale_tables_are_not_paired_tables_of_the_verdict_counts():
    """The 3.4M size repeats rows of notebooks 02-08: counting them again would change the abstract."""
    assert not any(name.startswith("scale_") for name in paper_sections.PAIRED_TABLES)


# ----------------------------------------------------------------------------------------------------
# the README's paragraph on a worked example

VERDICTS = pd.DataFrame(
    [
        {"report": "002", "claim": "RLOO uniform above SFT", "metric": "pass@1", "small": "inside noise",
         "embedded": "holds", "large": "holds", "same_at_every_size": False},
        {"report": "000", "claim": "Adaptive v1 below RLOO uniform", "metric": "pass@1",
         "small": "inside noise", "embedded": "inside noise", "large": "inside noise", "same_at_every_size": True},
    ]
)  # fmt: skip
"""Two claims of ``scale.verdicts_by_size``: the first differs between sizes, the second does not."""


def paired_rows(sizes=(("small", 862_592), ("embedded", 3_429_120), ("large", 11_534_592))) -> pd.DataFrame:
    """Uniform RLOO against SFT at pass@1 and pass@16 per size, and a curriculum row, as ``scale_paired``."""
    values = {  # size -> (pass@1 diff, low, high, verdict), (pass@16 ...)
        "small": ((0.012, -0.004, 0.028, "inside noise"), (-0.0301, -0.05, -0.0102, "holds")),
        "embedded": ((0.0605, 0.041, 0.08, "holds"), (-0.0702, -0.09, -0.0504, "holds")),
        "large": ((0.0754, 0.0501, 0.1, "holds"), (NAN, NAN, NAN, NAN)),
    }
    rows = []
    for size, parameters in sizes:
        for metric, sign, (diff, low, high, verdict) in zip(
            ("pass@1", "pass@16"), (1, -1), values[size], strict=True
        ):
            rows.append({"size": size, "parameters": parameters, "a": "RLOO uniform", "b": "SFT",
                         "metric": metric, "sign": sign, "diff": diff, "ci_low": low, "ci_high": high,
                         "verdict": verdict})  # fmt: skip
        rows.append({"size": size, "parameters": parameters, "a": "Adaptive v1", "b": "RLOO uniform",
                     "metric": "pass@1", "sign": -1, "diff": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                     "verdict": "reversed"})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_readme_paragraph_on_model_size():
    assert readme.scale_markdown(VERDICTS, paired_rows()).split("\n") == [
        "Model size (notebook 09, `results/tables/scale_verdicts.csv`): the headline claims at each size of the "
        "embedded policy (small, embedded, large), each against the row it is claimed against at the same "
        "size. The verdict is the same at every size for 1 of the 2 claims and differs for 1: RLOO uniform "
        "above SFT (pass@1). The differences behind the verdicts, with their intervals, are in "
        "`results/tables/scale_paired.csv`, drawn in "
        "[`results/figures/scale_claims.png`](results/figures/scale_claims.png).",
        "",
        "| claim | metric | small | embedded | large | same at every size |",
        "|---|---|---|---|---|---|",
        "| RLOO uniform above SFT | pass@1 | inside noise | holds | holds | no |",
        "| Adaptive v1 below RLOO uniform | pass@1 | inside noise | inside noise | inside noise | yes |",
        "",
        "Uniform RLOO against the SFT policy of the same size, a - b [95%] and verdict (pass@1: the gain; "
        "pass@16: a negative difference is a narrowing):",
        "",
        "| size | parameters | pass@1 | pass@16 |",
        "|---|---|---|---|",
        "| small | 862,592 | +0.012 [-0.004, +0.028] inside noise | -0.030 [-0.050, -0.010] holds |",
        "| embedded | 3,429,120 | +0.060 [+0.041, +0.080] holds | -0.070 [-0.090, -0.050] holds |",
        "| large | 11,534,592 | +0.075 [+0.050, +0.100] holds | - |",  # no pass@16 difference: a dash
    ]  # fmt: skip


def test_the_readme_paragraph_with_every_verdict_the_same_or_one_size():
    same = VERDICTS.iloc[1:]
    assert "The verdict is the same at every size for every claim (1)." in readme.scale_markdown(
        same, paired_rows()
    )
    one = VERDICTS[["report", "claim", "metric", "embedded", "same_at_every_size"]]
    text = readme.scale_markdown(one, paired_rows((("embedded", 3_429_120),)))
    assert "Only the embedded size has run yet, so no verdict can differ between sizes." in text
    assert "| embedded | 3,429,120 | +0.060 [+0.041, +0.080] holds | -0.070 [-0.090, -0.050] holds |" in text
    assert "small" not in text and "large" not in text


def test_no_readme_paragraph_without_the_scale_tables():
    assert readme.scale_markdown(None, None) == ""
    assert readme.scale_markdown(VERDICTS, None) == readme.scale_markdown(None, paired_rows()) == ""


# ----------------------------------------------------------------------------------------------------
# the synthesis' paragraph on model size, on the same worked example


def test_the_synthesis_paragraph_on_model_size():
    assert paper_synthesis.scale_paragraph(VERDICTS, paired_rows()) == (
        r"\paragraph{Model size.} Section~\ref{sec:scale} runs the headline rows at each size of the embedded "
        r"policy (Table~\ref{tab:scale_verdicts}). The verdict is the same at every size for 1 of the 2 "
        r"claims and differs for 1: RLOO uniform above SFT (pass@1). Uniform RLOO against the SFT policy of "
        r"the same size (pass@1: the gain; pass@16: a negative difference is the narrowing): at small, pass@1 "
        r"$+0.012$ [$-0.004$, $+0.028$] and pass@16 $-0.030$ [$-0.050$, $-0.010$]; at embedded, pass@1 "
        r"$+0.060$ [$+0.041$, $+0.080$] and pass@16 $-0.070$ [$-0.090$, $-0.050$]; at large, pass@1 "
        r"$+0.075$ [$+0.050$, $+0.100$]."  # large has no pass@16 difference: left out, no dash, no nan
    )


def test_the_synthesis_paragraph_escapes_claims_and_waits_for_both_tables():
    differs = VERDICTS.assign(claim=["Edge x feature_failure above RLOO uniform", "Fixed v1 & v2"])
    differs["same_at_every_size"] = False
    text = paper_synthesis.scale_paragraph(differs, paired_rows())
    assert (
        r"differs for 2: Edge x feature\_failure above RLOO uniform (pass@1); Fixed v1 \& v2 (pass@1)."
        in text
    )
    one = VERDICTS[["report", "claim", "metric", "embedded", "same_at_every_size"]]
    assert "Only the embedded size has run yet" in paper_synthesis.scale_paragraph(one, paired_rows())
    assert paper_synthesis.scale_paragraph(None, paired_rows()) == ""
    assert paper_synthesis.scale_paragraph(VERDICTS, None) == ""
    assert "Model size" not in paper_synthesis.synthesis_body({})  # notebook 09 not run: no paragraph
    assert (
        paper_synthesis.synthesis_body({}, VERDICTS, paired_rows())
        .rstrip()
        .endswith(paper_synthesis.scale_paragraph(VERDICTS, paired_rows()))
    )


def trend_rows() -> pd.DataFrame:
    """``scale.scale_trend`` rows of three sizes: uniform RLOO against SFT at pass@1 (a rise, then noise) and
    pass@16 (a fall), a curriculum whose difference falls from small to embedded, and one that never moves."""
    rows = [
        ("RLOO uniform", "SFT", "pass@1", "small", "embedded", 0.0485, 0.0201, 0.0769, "rises"),
        ("RLOO uniform", "SFT", "pass@1", "embedded", "large", 0.0149, -0.0102, 0.0398, "inside noise"),
        ("RLOO uniform", "SFT", "pass@16", "small", "embedded", -0.0401, -0.0703, -0.0099, "falls"),
        ("Adaptive v1", "RLOO uniform", "pass@1", "small", "embedded", -0.0304, -0.0498, -0.0101, "falls"),
        ("Adaptive v1", "RLOO uniform", "pass@1", "embedded", "large", 0.0052, -0.0149, 0.0253, "inside noise"),
        ("Edge x feature_failure", "RLOO uniform", "pass@1", "small", "embedded", 0.0, -0.02, 0.02,
         "inside noise"),
    ]  # fmt: skip
    relation = {"SFT": "above", "RLOO uniform": "below"}
    return pd.DataFrame(
        [{"report": "000", "claim": f"{a} {relation[b]} {b}", "a": a, "b": b, "metric": metric, "smaller": small,
          "larger": large, "change": change, "ci_low": low, "ci_high": high, "mde": 0.03, "n_seeds": 5,
          "reading": reading}
         for a, b, metric, small, large, change, low, high, reading in rows],
        columns=list(scale.TREND_COLUMNS),
    )  # fmt: skip


def test_the_readme_says_how_the_differences_change_with_size():
    text = readme.scale_markdown(VERDICTS, paired_rows(), trend_rows())
    assert text.startswith(readme.scale_markdown(VERDICTS, paired_rows()) + "\n\n")
    assert text.split("\n")[-1] == (
        "How the differences change with size (`results/tables/scale_trend.csv`: each size against the next "
        "smaller one, 95% intervals). Uniform RLOO's pass@1 gain over the SFT policy changes from small to "
        "embedded by +0.049 [+0.020, +0.077] (rises) and from embedded to large by +0.015 [-0.010, +0.040] "
        "(inside noise); its pass@16 difference (falls: a wider narrowing) changes from small to embedded by "
        "-0.040 [-0.070, -0.010] (falls). Of the other claims' differences (2), 1 changes beyond the noise "
        "from one size to the next: Adaptive v1 below RLOO uniform (pass@1) from small to embedded by -0.030 "
        "[-0.050, -0.010] (falls) and from embedded to large by +0.005 [-0.015, +0.025] (inside noise)."
    )
    still = trend_rows()
    still["reading"] = still["reading"].where(still["a"] == "RLOO uniform", "inside noise")
    assert readme.trend_sentences(still).endswith(
        "No other claim's difference (2) changes beyond the noise from one size to the next."
    )
    one_size = trend_rows().iloc[:0]  # notebook 09 with one size: the table has no rows
    assert readme.scale_markdown(VERDICTS, paired_rows(), one_size) == readme.scale_markdown(
        VERDICTS, paired_rows()
    )


def test_the_synthesis_paragraph_says_how_the_differences_change_with_size():
    trend = trend_rows()
    moving = trend["a"] == "Adaptive v1"
    trend.loc[moving, "claim"] = "Adaptive_v1 & co below RLOO uniform"
    trend.loc[moving, "metric"] = "mean_score"  # every name LaTeX must escape: claim and metric
    text = paper_synthesis.scale_paragraph(VERDICTS, paired_rows(), trend)
    assert text.startswith(paper_synthesis.scale_paragraph(VERDICTS, paired_rows()) + " ")
    assert (
        r"From each size to the next larger (Table~\ref{tab:scale_trend}): Uniform RLOO's pass@1 gain over the "
        r"SFT policy changes from small to embedded by $+0.049$ [$+0.020$, $+0.077$] (rises) and from embedded "
        r"to large by $+0.015$ [$-0.010$, $+0.040$] (inside noise);"
    ) in text
    assert r"Adaptive\_v1 \& co below RLOO uniform (mean\_score) from small to embedded by $-0.030$" in text
    assert "_" not in re.sub(r"\\ref\{[^}]*\}", "", text).replace(r"\_", "")  # none bare outside labels
    body = paper_synthesis.synthesis_body({}, VERDICTS, paired_rows(), trend_rows())
    assert body.rstrip().endswith(paper_synthesis.scale_paragraph(VERDICTS, paired_rows(), trend_rows()))


def claims_table() -> pd.DataFrame:
    """One claim of the registry, as ``study.claims`` writes it."""
    return pd.DataFrame(
        [{"claim_id": "000.a", "report": "000", "statement": "s", "metric": "pass@1", "a": "Fixed v1",
          "b": "RLOO uniform", "sign": -1, "report_a": 0.381, "report_b": 0.43, "policy": "embedded",
          "ours_a": 0.418, "ours_b": 0.424, "diff": -0.006, "ci_low": -0.025, "ci_high": 0.014, "mde": 0.026,
          "n_seeds": 5, "seeds_needed": 5, "verdict": "inside noise"}]
    )  # fmt: skip


def test_the_readme_block_adds_the_paragraph_once_the_scale_tables_are_saved(tmp_path):
    """The block is the claims alone until notebook 09's tables are there, then the claims and the
    paragraph, read back from the saved CSVs (``same_at_every_size`` as read back)."""
    claims = claims_table()
    outputs.save_table(claims, readme.CLAIMS_TABLE, folder=tmp_path)
    assert readme.results_markdown(tmp_path) == readme.claims_markdown(claims)
    outputs.save_table(VERDICTS, readme.SCALE_VERDICTS, folder=tmp_path)
    assert readme.results_markdown(tmp_path) == readme.claims_markdown(claims)  # scale_paired still missing
    outputs.save_table(paired_rows(), readme.SCALE_PAIRED, folder=tmp_path)
    scale_text = readme.scale_markdown(VERDICTS, paired_rows())
    assert readme.results_markdown(tmp_path) == readme.claims_markdown(claims) + "\n\n" + scale_text
    outputs.save_table(trend_rows(), readme.SCALE_TREND, folder=tmp_path)
    scale_text = readme.scale_markdown(VERDICTS, paired_rows(), trend_rows())
    assert "How the differences change with size" in scale_text
    assert readme.results_markdown(tmp_path) == readme.claims_markdown(claims) + "\n\n" + scale_text

    text = tmp_path / "README.md"
    text.write_text(f"intro\n{readme.BEGIN}\nold\n{readme.END}\n")
    assert readme.refresh_readme(text, tmp_path)
    assert readme.readme_block(text.read_text()).endswith(scale_text)


# ----------------------------------------------------------------------------------------------------
# the paper with notebook 09 run at some sizes, or not at all

SEEDS = (0, 1, 2)
N = 16
NAMES = tuple(m.name for m in scale.ROWS)


def study_of(policy: str, rng: int, tasks: int = 6) -> StudyResult:
    """A study of ``scale.ROWS`` from ``policy`` at three seeds with random correct counts (uniform RLOO
    above the rest) and a run record per row and seed."""
    draw = np.random.default_rng(rng)
    samples, runs = [], []
    start = pd.Timestamp("2025-01-01T00:00:00Z")
    for i, m in enumerate(scale.ROWS):
        for s in SEEDS:
            correct = np.minimum(draw.integers(0, N // 2, tasks) + (3 if m.name == "RLOO uniform" else 0), N)
            samples += [{"task_index": t, "num_count": 3 + t % 2, "tier": "T1", "target": 10 + t,
                         "sample_index": j, "reward": float(j < c), "correct": j < c, "well_formed": True,
                         "method": m.name, "seed": s}
                        for t, c in enumerate(correct) for j in range(N)]  # fmt: skip
            runs.append({"method": m.name, "seed": s, "kind": m.kind, "started": start.isoformat(),
                         "finished": (start + pd.Timedelta(seconds=10 * (i + 1) + s)).isoformat()})  # fmt: skip
    preset = study_preset("tiny", seeds=SEEDS, policy=policy)
    return StudyResult(preset, pd.DataFrame(runs), pd.DataFrame(samples), pd.DataFrame(), NAMES)


@pytest.fixture(scope="module")
def scale_results(tmp_path_factory):
    """Notebook 09's tables and figure at two of the three sizes (the large policy not shipped), written
    as the notebook writes them, by the study's own functions."""
    folder = tmp_path_factory.mktemp("results")
    results = {"small": study_of("embedded-small", 1), "embedded": study_of("embedded", 0)}
    sizes = pd.DataFrame(
        [
            scale.size_row("small", "embedded-small", 862_592, {}),
            scale.size_row("embedded", "embedded", 3_429_120, scale.policy_record("embedded")),
        ]
    )
    paired = scale.scale_paired(results, sizes, n_resamples=200)
    cost = scale.cost_by_method(results, sizes)
    tables = {
        "scale_sizes": sizes,
        "scale_summary": scale.scale_summary(results, sizes),
        "scale_paired": paired,
        "scale_verdicts": scale.verdicts_by_size(paired),
        "scale_trend": scale.scale_trend(results, sizes, n_resamples=200),
        "scale_cost_by_method": cost,
        "scale_cost": scale.cost_by_size(cost),
    }
    for name, table in tables.items():
        outputs.save_table(table, name, folder=folder / "tables")
    outputs.save_figure(
        scale_plots.scale_figure(paired), "scale_claims", folder=folder / "figures", show=False
    )
    return folder


@pytest.fixture
def paper_copy(tmp_path):
    """The paper's hand-written sources, without anything generated or built."""
    target = tmp_path / "paper"
    shutil.copytree(paper_dir(), target, ignore=shutil.ignore_patterns("build", "generated"))
    return target


def generate(paper_copy, results, monkeypatch, *extra) -> int:
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(results))
    return main(["paper", "--paper-dir", str(paper_copy), *extra])


def test_before_notebook_09_has_run_its_section_is_one_sentence(tmp_path, paper_copy, monkeypatch):
    (tmp_path / "results" / "tables").mkdir(parents=True)
    assert generate(paper_copy, tmp_path / "results", monkeypatch, "--no-pdf") == 0
    generated = paper_copy / "generated"
    assert (generated / "scale_study.tex").read_text() == paper_sections.missing_sentence("09") + "\n"
    assert not list(generated.glob("tables/scale_*"))
    assert r"\csname notrun@fig:scale_claims\endcsname{09}" in (generated / "macros.tex").read_text()


def test_the_section_of_two_sizes_shows_their_tables_and_figure(scale_results, paper_copy, monkeypatch):
    assert generate(paper_copy, scale_results, monkeypatch, "--no-pdf") == 0
    generated = paper_copy / "generated"
    body = (generated / "scale_study.tex").read_text()
    for spec in SCALE.tables:
        assert rf"\input{{generated/tables/{spec.name}}}" in body
    assert "scale_claims.pdf" in body and r"\label{fig:scale_claims}" in body
    verdicts = (generated / "tables" / "scale_verdicts.tex").read_text()
    header = next(line for line in verdicts.splitlines() if line.startswith("report &"))
    assert header == r"report & claim & metric & small & embedded & same at every size \\"  # no large column
    paired = (generated / "tables" / "scale_paired.tex").read_text()
    assert "RLOO uniform above SFT" in paired and "Band-pass 0.2-0.8 vs RLOO uniform" in paired
    assert r"\begin{xltabular}" in paired  # 24 rows break across pages
    sizes = (generated / "tables" / "scale_sizes.tex").read_text()
    assert "small & 862,592 &" in sizes and "large" not in sizes
    for path in generated.rglob("*.tex"):
        assert not re.search(r"\bnan\b", path.read_text(), re.IGNORECASE), path
    synthesis = (generated / "synthesis.tex").read_text()
    assert r"\paragraph{Model size.}" in synthesis and "at small, pass@1" in synthesis
    trend = (generated / "tables" / "scale_trend.tex").read_text()
    assert r"RLOO uniform above SFT & pass@1 & small & embedded &" in trend
    assert (
        r"From each size to the next larger (Table~\ref{tab:scale_trend}): Uniform RLOO's pass@1" in synthesis
    )


def test_a_notebook_09_run_from_before_the_trend_table_prints_its_absence(
    scale_results, paper_copy, monkeypatch
):
    results = paper_copy.parent / "results"
    shutil.copytree(scale_results, results)
    (results / "tables" / "scale_trend.csv").unlink()
    (results / "tables" / "scale_trend.meta.json").unlink()
    assert generate(paper_copy, results, monkeypatch, "--no-pdf") == 0
    body = (paper_copy / "generated" / "scale_study.tex").read_text()
    assert "No change with size is measured here: fewer than two sizes of the policy have run, or" in body
    assert "tab:scale_trend" not in (paper_copy / "generated" / "synthesis.tex").read_text()


def test_a_scale_table_of_notebook_09_that_is_missing_is_refused(scale_results, tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(scale_results / "tables", tables)
    (tables / "scale_cost.csv").unlink()
    with pytest.raises(paper_inputs.ResultsError, match="scale_cost.csv is missing"):
        paper_inputs.load_results(tables, scale_results / "figures", tmp_path / "executed")


@pytest.mark.skipif(
    shutil.which("latexmk") is None or shutil.which("pdflatex") is None,
    reason=f"LaTeX is not installed ({paper.LATEX_INSTALL})",
)
def test_the_pdf_builds_with_the_scale_study_at_two_sizes(scale_results, paper_copy, monkeypatch):
    assert generate(paper_copy, scale_results, monkeypatch) == 0
    assert (paper_copy / "build" / "main.pdf").read_bytes().startswith(b"%PDF")
    assert paper.undefined_references((paper_copy / "build" / "main.log").read_text()) == []
