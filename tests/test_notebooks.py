"""Every study notebook runs top to bottom through papermill at the tiny preset into copies worth
reading (their figures, no progress bars, no folders), and the pipeline reports a failing notebook
without stopping the others."""

import json
import os
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from countdown_study.paths import notebooks_dir, project_root
from countdown_study.study.pipeline import KERNEL_ENVIRONMENT, list_notebooks, run_notebooks

NOTEBOOKS = list_notebooks()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("results")
    old = os.environ.get("COUNTDOWN_STUDY_RESULTS")
    os.environ["COUNTDOWN_STUDY_RESULTS"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("COUNTDOWN_STUDY_RESULTS")
    else:
        os.environ["COUNTDOWN_STUDY_RESULTS"] = old


def test_notebooks_are_thin_and_committed_without_outputs():
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]  # the issue order: a report's number is kept for it
    assert numbers[0] == 1 and numbers == sorted(set(numbers))
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and code[0] is tagged[0], path.name
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"
        assert not any(
            line.lstrip().startswith(("def ", "class ")) for c in code for line in c.source.splitlines()
        )
        opening = code[1].source  # one library call after the parameters: the preset, runs and meta
        assert re.search(r"^(result|P), meta = (run_notebook_study|notebook_preset)\(", opening, re.M), (
            path.name
        )
        assert "countdown_study.study.notebook import" in opening, path.name


def _saved_figures(path):
    """How many figures a notebook saves (calls of ``outputs.save_figure``)."""
    nb = nbformat.read(path, as_version=4)
    return sum(c.source.count("outputs.save_figure(") for c in nb.cells if c.cell_type == "code")


def _check_executed_copy(path, results):
    """The executed copy shows every saved figure, holds no progress bar and names no folder."""
    text = path.read_text()
    assert len(text) < 1_000_000, f"{path.name}: {len(text)} bytes"
    nb = nbformat.reads(text, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == _saved_figures(path), path.name
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "it/s]" not in streams and "%|" not in streams, f"{path.name}: progress bars {streams[:200]!r}"
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert not widgets, f"{path.name}: progress widgets {[w['data'].get('text/plain') for w in widgets]}"
    for folder in {str(results), str(results.resolve()), str(project_root()), os.path.expanduser("~")}:
        assert folder not in text, f"{path.name} names {folder}"


@pytest.mark.slow
def test_every_notebook_runs_at_the_tiny_preset(results):
    outcomes = run_notebooks(NOTEBOOKS, "tiny", jobs=2)  # two at once: shared runs go through the lock
    failed = {o.notebook: o.error for o in outcomes if not o.ok}
    assert not failed, failed
    tiny = results / "presets" / "tiny"  # apart from the paper's (full preset's) results
    tables = {p.name for p in (tiny / "tables").glob("*_paired.csv")}
    assert {"baselines_paired.csv", "curricula_000_paired.csv", "sliding_window_001_paired.csv"} <= tables
    assert not any((results / name).exists() for name in ("tables", "figures", "executed"))
    meta = json.loads((tiny / "tables" / "baselines_paired.meta.json").read_text())
    assert meta["preset"] == "tiny" and meta["runs"]
    for notebook in NOTEBOOKS:
        _check_executed_copy(tiny / "executed" / notebook.name, results)
        _check_closing_summary(tiny / "executed" / notebook.name)
    assert not (results / "runs").exists()  # the tiny preset's runs live under its own folder
    assert not (tiny / "executed" / "failed").exists() and not (tiny / ".staging").exists()
    runs = list((tiny / "runs").glob("rloo-*"))
    assert runs
    for run in runs:  # each shared run trained once, start to end
        steps = [json.loads(line)["step"] for line in (run / "steps.jsonl").read_text().splitlines()]
        assert steps == sorted(set(steps)), run.name
    _check_paper_of_the_study(results)


def _check_paper_of_the_study(results):
    """``countdown-study paper --preset tiny`` takes a whole tiny study (one training seed: no verdicts,
    an empty coverage table): every section generated, and a PDF where LaTeX is installed."""
    import shutil
    import tempfile

    from countdown_study.cli import main
    from countdown_study.paths import paper_dir

    with tempfile.TemporaryDirectory() as folder:
        paper = Path(folder) / "paper"
        shutil.copytree(paper_dir(), paper, ignore=shutil.ignore_patterns("build", "generated"))
        latex = shutil.which("latexmk") is not None and shutil.which("pdflatex") is not None
        assert (
            main(["paper", "--preset", "tiny", "--paper-dir", str(paper), *([] if latex else ["--no-pdf"])])
            == 0
        )
        generated = paper / "build" / "tiny" / "generated"
        assert not any("has not run yet" in f.read_text() for f in generated.glob("*.tex"))
        assert not latex or (paper / "build" / "tiny" / "main.pdf").read_bytes().startswith(b"%PDF")


def _check_closing_summary(path):
    """The last cell printed where the notebook's outputs went and what became of its runs."""
    nb = nbformat.read(path, as_version=4)
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    head, *folders = printed.splitlines()
    assert re.fullmatch(rf"{path.stem} at the tiny preset: \d+ tables?, \d+ figures?", head), printed
    assert f"  executed  $COUNTDOWN_STUDY_RESULTS/presets/tiny/executed/{path.stem}.ipynb" in folders
    if path.stem != "01_tasks_and_solver":  # the survey trains nothing
        assert re.search(r"runs/: \d+ runs?, \d+ trained, \d+ reused$", printed), printed


def test_a_failing_notebook_is_reported_and_the_next_still_runs(results, tmp_path, monkeypatch):
    broken = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('preset = "quick"')
    params.metadata["tags"] = ["parameters"]
    broken.cells = [params, nbformat.v4.new_code_cell("raise RuntimeError('boom ' + preset)")]
    fine = nbformat.v4.new_notebook()
    fine.cells = [
        params,
        nbformat.v4.new_code_cell("import os\nprint(os.getcwd())"),
        nbformat.v4.new_code_cell("print(preset, os.environ['TQDM_DISABLE'])"),
    ]
    for nb in (broken, fine):
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(broken, tmp_path / "01_broken.ipynb")
    nbformat.write(fine, tmp_path / "02_fine.ipynb")
    # the process's folder is shared by the threads: a notebook run never moves it elsewhere (papermill
    # re-enters the folder it is in around each read and write, which leaves it where it was)
    start, real_chdir, moves = os.getcwd(), os.chdir, []
    monkeypatch.setattr(os, "chdir", lambda path: moves.append(str(path)) or real_chdir(path))
    outcomes = run_notebooks(list_notebooks(folder=tmp_path), "tiny", jobs=2)
    assert [o.ok for o in outcomes] == [False, True], [o.error for o in outcomes]
    assert set(moves) <= {start} and os.getcwd() == start, sorted(set(moves))
    assert outcomes[0].error == "RuntimeError: boom tiny"
    executed_dir = results / "presets" / "tiny" / "executed"
    assert not (executed_dir / "01_broken.ipynb").exists()
    assert (executed_dir / "failed" / "01_broken.ipynb").exists()
    executed = nbformat.read(executed_dir / "02_fine.ipynb", as_version=4)
    assert executed.cells[-2].outputs[0].text == f"{tmp_path}\n"  # the kernel starts in the notebook's folder
    assert executed.cells[-1].outputs[0].text == f"tiny {KERNEL_ENVIRONMENT['TQDM_DISABLE']}\n"  # kernel env
    record = executed.metadata.papermill  # paths relative to the results folder, not absolute
    assert (
        record.output_path == "presets/tiny/executed/02_fine.ipynb" and record.input_path == "02_fine.ipynb"
    )
    failed = nbformat.read(executed_dir / "failed" / "01_broken.ipynb", as_version=4)
    assert failed.metadata.papermill.output_path == "presets/tiny/executed/failed/01_broken.ipynb"


@pytest.mark.parametrize("allocator", ["auto", "system"])
def test_a_kernel_starts_with_the_chosen_allocator(results, tmp_path, allocator):
    from countdown_study.runs.allocator import allocator_library

    notebook = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('preset = "quick"')
    params.metadata["tags"] = ["parameters"]
    notebook.cells = [
        params,
        nbformat.v4.new_code_cell("from countdown_study.runs.allocator import process_allocator"),
        nbformat.v4.new_code_cell("print(process_allocator())"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "01_allocator.ipynb")
    [outcome] = run_notebooks(list_notebooks(folder=tmp_path), "tiny", allocator=allocator)
    assert outcome.ok, outcome.error
    executed = nbformat.read(results / "presets" / "tiny" / "executed" / "01_allocator.ipynb", as_version=4)
    expected = "tcmalloc" if allocator == "auto" and allocator_library("tcmalloc") else "system"
    assert executed.cells[-1].outputs[0].text == f"{expected}\n"
    assert "LD_PRELOAD" not in os.environ or "tcmalloc" not in os.environ["LD_PRELOAD"]  # this process's own


def test_unknown_notebook_and_preset_are_named():
    with pytest.raises(FileNotFoundError, match="no notebook named '99'"):
        list_notebooks(["99"])
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        run_notebooks([], "huge")
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        run_notebooks([], "tiny", jobs=0)
    assert notebooks_dir().is_dir()


def test_a_failing_notebook_leaves_the_previous_tables_intact(results, tmp_path):
    source = (
        "import pandas as pd\n"
        "from countdown_study.reporting import outputs\n"
        "meta = {'notebook': '01_table', 'preset': preset}\n"
        "outputs.save_table(pd.DataFrame({'value': [value]}), 'staged_demo', meta)\n"
        "if value == 3:\n"
        "    raise RuntimeError('half way')\n"
        "outputs.save_table(pd.DataFrame({'value': [value]}), 'staged_demo_second', meta)\n"
    )
    params = nbformat.v4.new_code_cell('preset = "tiny"\nvalue = 0')
    params.metadata["tags"] = ["parameters"]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [params, nbformat.v4.new_code_cell(source)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "01_table.ipynb")
    tables = results / "presets" / "tiny" / "tables"
    read = lambda name: pd.read_csv(tables / f"{name}.csv")["value"].tolist()  # noqa: E731
    (done,) = run_notebooks(list_notebooks(folder=tmp_path), "tiny", {"value": 2})
    assert done.ok and read("staged_demo") == [2] and read("staged_demo_second") == [2]
    (failed,) = run_notebooks(list_notebooks(folder=tmp_path), "tiny", {"value": 3})
    assert not failed.ok and failed.error == "RuntimeError: half way"
    assert read("staged_demo") == [2] and read("staged_demo_second") == [2]  # the last complete set
    assert not (results / "presets" / "tiny" / ".staging" / "01_table").exists()


def _table_notebook(folder, stem="01_table"):
    """A notebook saving a table and a figure of ``value`` (raising when ``value`` is 3), then its summary."""
    source = (
        "import matplotlib.pyplot as plt\n"
        "import pandas as pd\n"
        "from countdown_study.reporting import outputs\n"
        "from countdown_study.study.notebook import notebook_summary\n"
        f"meta = {{'notebook': '{stem}', 'preset': preset}}\n"
        "outputs.save_table(pd.DataFrame({'value': [value]}), 'demo', meta)\n"
        "fig, ax = plt.subplots()\n"
        "ax.bar(['value'], [value])\n"
        "outputs.save_figure(fig, 'demo', meta)\n"
        "if value == 3:\n"
        "    raise RuntimeError('half way')\n"
        "print(notebook_summary(meta))\n"
    )
    params = nbformat.v4.new_code_cell('preset = "tiny"\nvalue = 0')
    params.metadata["tags"] = ["parameters"]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [params, nbformat.v4.new_code_cell(source)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, folder / f"{stem}.ipynb")
    return list_notebooks(folder=folder)


def _files(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_re_executing_an_unchanged_notebook_changes_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))
    notebooks = _table_notebook(tmp_path)
    (first,) = run_notebooks(notebooks, "tiny", {"value": 2})
    assert first.ok, first.error
    written = _files(tmp_path / "results")
    assert {"presets/tiny/tables/demo.meta.json", "presets/tiny/figures/demo.pdf"} <= set(written)
    executed = nbformat.reads(written["presets/tiny/executed/01_table.ipynb"].decode(), as_version=4)
    assert "start_time" not in executed.metadata.papermill and "execution" not in executed.cells[-1].metadata
    printed = "".join(o.get("text", "") for o in executed.cells[-1].outputs if o.output_type == "stream")
    assert printed.splitlines() == [
        "01_table at the tiny preset: 1 table, 1 figure",
        "  tables    $COUNTDOWN_STUDY_RESULTS/presets/tiny/tables/",
        "  figures   $COUNTDOWN_STUDY_RESULTS/presets/tiny/figures/",
        "  executed  $COUNTDOWN_STUDY_RESULTS/presets/tiny/executed/01_table.ipynb",
    ]
    (again,) = run_notebooks(notebooks, "tiny", {"value": 2})
    assert again.ok and _files(tmp_path / "results") == written


def test_a_notebook_that_succeeds_leaves_no_failed_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))
    executed = tmp_path / "results" / "presets" / "tiny" / "executed"
    notebooks = _table_notebook(tmp_path)
    (done,) = run_notebooks(notebooks, "tiny", {"value": 2})
    assert done.ok and sorted(p.name for p in executed.iterdir()) == ["01_table.ipynb"]
    (failed,) = run_notebooks(notebooks, "tiny", {"value": 3})
    assert not failed.ok and failed.output == str(executed / "failed" / "01_table.ipynb")
    assert (executed / "failed" / "01_table.ipynb").is_file()
    (fixed,) = run_notebooks(notebooks, "tiny", {"value": 4})
    assert fixed.ok and sorted(p.name for p in executed.iterdir()) == ["01_table.ipynb"]  # failed/ gone
    assert sorted(p.name for p in executed.parent.iterdir()) == ["executed", "figures", "tables"]  # no stage
