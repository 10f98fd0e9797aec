"""The study grid: the notebooks run the registry's rows, read from it; planned run ids are the ones run_method
gives."""

import ast
import json
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from countdown_study.paths import notebooks_dir, runs_dir, tables_dir
from countdown_study.runs.store import is_finished
from countdown_study.study import grid, scale
from countdown_study.study.methods import (
    REPORT_003_EMBEDDED,
    REPORT_003_THRESHOLD_EMBEDDED,
    REPORT_004,
    SFT,
    UNIFORM,
    Method,
    locate_config,
    method_config,
    run_method,
)
from countdown_study.study.presets import study_preset

NOTEBOOKS = sorted(notebooks_dir().glob("[0-9][0-9]_*.ipynb"))
CALL = "run_notebook_study"


def _parameters(nb) -> dict:
    """The defaults of the notebook's papermill ``parameters`` cell."""
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    values: dict = {}
    exec(cell.source, {}, values)
    return values


def _calls(cell_source: str) -> tuple[list[ast.stmt], list[ast.Call]]:
    """The cell's statements up to its last ``run_notebook_study`` call, and the calls in order."""
    body = ast.parse(cell_source).body
    has_call = [
        any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == CALL for n in ast.walk(s)) for s in body
    ]
    last = max(i for i, hit in enumerate(has_call) if hit)
    calls = [
        n
        for s in body[: last + 1]
        for n in ast.walk(s)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == CALL
    ]
    return body[: last + 1], calls  # fmt: skip


def _recorder(into: list):
    """Stands in for ``run_notebook_study``: records (notebook, methods, policy, the caller's line), trains
    nothing."""

    def record(notebook, methods, preset, policy="embedded", seeds=None, **_):
        into.append((notebook, tuple(methods), policy, seeds, sys._getframe(1).f_lineno))
        return None, {}

    return record


def notebook_calls(path: Path) -> list[grid.NotebookStudy]:
    """What ``path`` passes to ``run_notebook_study``, read by running its cells up to each call with the
    call replaced by a recorder (no run is trained)."""
    nb = nbformat.read(path, as_version=4)
    defaults = _parameters(nb)
    found = []
    space = {**defaults}  # one namespace: a later call's cell uses the names an earlier one imported
    for cell in nb.cells:
        if cell.cell_type != "code" or CALL not in cell.source:
            continue
        statements, calls = _calls(cell.source)
        recorded: list = []
        space[CALL] = _recorder(recorded)  # a cell may open with the call (notebook 06's second)
        for statement in statements:
            exec(compile(ast.Module([statement], []), str(path), "exec"), space)
            space[CALL] = _recorder(recorded)  # after each statement: the cell's import binds the real one
        assert len(recorded) <= len(calls)  # a call under an ``if`` (an unshipped size) may not run
        for notebook, methods, policy, seeds, line in recorded:
            [call] = [c for c in calls if c.lineno <= line <= c.end_lineno]
            assert notebook == path.stem
            given = (
                call.args[3]
                if len(call.args) > 3
                else next((k.value for k in call.keywords if k.arg == "policy"), None)
            )
            parameter = given.id if isinstance(given, ast.Name) else "policy"
            assert policy == defaults[parameter]
            found.append(grid.NotebookStudy(methods, parameter, policy, seeds=seeds))
    return found


def test_the_registry_names_every_notebook():
    assert sorted(grid.NOTEBOOK_STUDIES) == [p.stem for p in NOTEBOOKS]
    with pytest.raises(ValueError, match="no entry in study.grid.NOTEBOOK_STUDIES"):
        grid.plan_grid(["99_unknown"], "tiny")


def _fields(study: grid.NotebookStudy) -> tuple:
    return study.methods, study.policy_parameter, study.default_policy, study.seeds


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_registry_is_what_each_notebook_runs(path):
    """At the notebook's defaults: an optional study whose policy is not shipped is skipped by both."""
    assert [_fields(s) for s in notebook_calls(path)] == [
        _fields(s)
        for s in grid.NOTEBOOK_STUDIES[path.stem]
        if not (s.optional and scale.unshipped({s.block: s.default_policy}))
    ]


def _row_source(path: Path, call: ast.Call, statements: list[ast.stmt]) -> ast.expr:
    """The expression a ``run_notebook_study`` call's methods come from: the argument, or the value last
    assigned to the name it passes."""
    given = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "methods")
    if not isinstance(given, ast.Name):
        return given
    assigned = [s.value for s in statements if isinstance(s, ast.Assign) and s.end_lineno < call.lineno
                and any(isinstance(t, ast.Name) and t.id == given.id for t in s.targets)]  # fmt: skip
    assert assigned, f"{path.stem}: {given.id} is not assigned before the call"
    return assigned[-1]


def notebook_row_sources(path: Path) -> list[tuple]:
    """Per ``run_notebook_study`` call of ``path``, in order, where its rows come from: the arguments of the
    ``notebook_methods`` call that gives them (notebook stem and block), else the source of the list."""
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or CALL not in cell.source:
            continue
        statements, calls = _calls(cell.source)
        for call in calls:
            source = _row_source(path, call, statements)
            func = source.func if isinstance(source, ast.Call) else None
            if getattr(func, "id", getattr(func, "attr", "")) == "notebook_methods":
                found.append(tuple(ast.literal_eval(a) for a in source.args))
            else:
                found.append((ast.unparse(source),))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_notebook_reads_its_rows_from_the_registry(path):
    """The rows are written once, in ``grid.NOTEBOOK_STUDIES``: every call takes its own block's."""
    expected = [(path.stem, s.block) if s.block else (path.stem,) for s in grid.NOTEBOOK_STUDIES[path.stem]]
    assert notebook_row_sources(path) == expected


def test_a_list_written_in_the_notebook_is_caught(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('preset = "tiny"\npolicy = "embedded"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "methods = study.notebook_methods('02_baselines')\n"
            f"result, meta = {CALL}('02_baselines', methods, preset, policy)\n"
            "methods = [study.SFT, study.UNIFORM]\n"
            f"again, _ = {CALL}('02_baselines', methods, preset, policy)"
        ),
    ]
    path = tmp_path / "02_baselines.ipynb"
    nbformat.write(nb, path)
    assert notebook_row_sources(path) == [("02_baselines",), ("[study.SFT, study.UNIFORM]",)]


def test_notebook_methods_gives_a_blocks_rows_and_names_the_blocks():
    assert grid.notebook_methods("03_curricula_000") == grid.NOTEBOOK_STUDIES["03_curricula_000"][0].methods
    embedded = grid.notebook_methods("06_solution_count_vcc_003", "embedded")
    assert embedded == (UNIFORM, *REPORT_003_EMBEDDED, *REPORT_003_THRESHOLD_EMBEDDED)
    with pytest.raises(ValueError, match=r"no study block ''; its blocks: \['search', 'embedded'\]"):
        grid.notebook_methods("06_solution_count_vcc_003")
    with pytest.raises(ValueError, match="no entry in study.grid.NOTEBOOK_STUDIES"):
        grid.notebook_methods("99_unknown")


@pytest.mark.parametrize(
    ("notebook", "table"),
    [
        ("02_baselines", "baselines_paired"),
        ("03_curricula_000", "curricula_000_paired"),
        ("04_sliding_window_001", "sliding_window_001_paired"),
    ],
)
def test_planned_run_ids_are_the_committed_full_preset_runs(notebook, table):
    """The full preset's committed tables record the run id of each (method, seed) the notebook ran; a
    planned row they do not record yet (a row added since) has no finished run in the committed store, so
    a table is never older than the runs it could read."""
    meta = json.loads((tables_dir("full") / f"{table}.meta.json").read_text())
    recorded = {(r["method"], r["seed"]): r["run_id"] for r in meta["runs"]}
    planned = {row[1:]: run.run_id for run in grid.plan_grid([notebook], "full") for row in run.rows}
    assert {key: planned.get(key) for key in recorded} == recorded
    pending = {key: run_id for key, run_id in planned.items() if key not in recorded}
    assert not [key for key, run_id in pending.items() if is_finished(runs_dir("full") / run_id)]


def test_a_run_two_notebooks_share_is_planned_once():
    planned = grid.plan_grid(["02_baselines", "03_curricula_000"], "tiny")
    assert len(planned) == 5 + 6  # uniform RLOO is in both
    assert len({run.run_id for run in planned}) == len(planned)
    [shared] = [run for run in planned if len(run.rows) > 1]
    assert shared.rows == (("02_baselines", UNIFORM.name, 0), ("03_curricula_000", UNIFORM.name, 0))
    assert shared.kind == "rloo" and shared.run_id.startswith("rloo-")


def test_progress_counts_each_run_by_its_state_in_the_store(tmp_path):
    planned = grid.plan_grid(["02_baselines", "03_curricula_000"], "tiny")
    [shared] = [run for run in planned if len(run.rows) > 1]
    [fixed] = [run for run in planned if run.rows[0][1] == "Fixed v1"]
    (tmp_path / shared.run_id).mkdir()
    (tmp_path / shared.run_id / "DONE").write_text("")
    (tmp_path / fixed.run_id).mkdir()  # killed at step 3, mid-line
    (tmp_path / fixed.run_id / "steps.jsonl").write_text('{"step": 0}\n{"step": 1}\n{"step": 2}\n{"st')

    progress = grid.grid_progress(planned, tmp_path)
    assert list(progress["notebook"]) == ["02_baselines"] * 5 + ["03_curricula_000"] * 7
    state = {(r.notebook, r.run_id): r.state for r in progress.itertuples()}
    assert state["02_baselines", shared.run_id] == state["03_curricula_000", shared.run_id] == "finished"
    [started] = progress[progress["state"] == "started"].itertuples()
    assert (started.run_id, started.rows, started.steps_logged) == (fixed.run_id, "Fixed v1 (seed 0)", 3)
    assert started.steps == fixed.config.steps and pd.isna(progress.loc[0, "steps"])  # SFT: evaluation only

    summary = grid.progress_summary(progress).set_index("notebook")
    assert summary.loc["02_baselines"].to_dict() == {"finished": 1, "started": 0, "waiting": 4, "planned": 5}
    curricula = {"finished": 1, "started": 1, "waiting": 5, "planned": 7}
    assert summary.loc["03_curricula_000"].to_dict() == curricula
    assert summary.loc["all"].to_dict() == {"finished": 1, "started": 1, "waiting": 9, "planned": 11}


def test_hours_left_prices_each_unfinished_run_at_the_finished_runs_of_its_row_or_kind(tmp_path):
    planned = grid.plan_grid(["02_baselines", "03_curricula_000"], "tiny")
    [shared] = [run for run in planned if len(run.rows) > 1]
    [fixed] = [run for run in planned if run.rows[0][1] == "Fixed v1"]
    (tmp_path / shared.run_id).mkdir()
    (tmp_path / shared.run_id / "DONE").write_text("")
    (tmp_path / shared.run_id / "provenance.json").write_text(
        '{"started": "2026-01-01T10:00:00+00:00", "finished": "2026-01-01T10:12:00+00:00"}'
    )
    (tmp_path / fixed.run_id).mkdir()
    (tmp_path / fixed.run_id / "steps.jsonl").write_text('{"step": 0}\n')
    progress = grid.grid_progress(planned, tmp_path)
    assert progress.loc[progress["run_id"] == shared.run_id, "wall_seconds"].tolist() == [720.0, 720.0]
    left = grid.hours_left(progress)
    # notebook 03: six more RLOO rows at the finished RLOO run's 12 minutes, Fixed v1 at its steps left
    steps = fixed.config.steps
    assert left["03_curricula_000"] == pytest.approx(0.2 * 5 + 0.2 * (1 - 1 / steps))
    assert pd.isna(left["02_baselines"])  # its SFT and IPO rows have nothing finished to go by
    assert pd.isna(left["all"]) and list(left.index)[-1] == "all"


def test_hours_left_prices_each_policys_runs_at_that_policys_finished_runs(tmp_path):
    planned = [run for run in grid.plan_grid(["90_synthesis"], "tiny") if run.kind == "rloo"]
    by_policy = {policy: [run for run in planned if run.config.data.policy == policy]
                 for policy in ("embedded", "embedded-search")}  # fmt: skip
    for policy, minutes in (("embedded", 12), ("embedded-search", 30)):
        folder = tmp_path / by_policy[policy][0].run_id
        folder.mkdir()
        (folder / "DONE").write_text("")
        (folder / "provenance.json").write_text(
            f'{{"started": "2026-01-01T10:00:00+00:00", "finished": "2026-01-01T10:{minutes}:00+00:00"}}'
        )
    progress = grid.grid_progress(planned, tmp_path)
    assert set(progress["policy"]) == {"embedded", "embedded-search"}
    waiting = {policy: len(runs) - 1 for policy, runs in by_policy.items()}
    assert min(waiting.values()) >= 1
    # each waiting row is priced at its own policy's finished run (12 or 30 minutes), not at the median of both
    expected = waiting["embedded"] * 12 / 60 + waiting["embedded-search"] * 30 / 60
    assert grid.hours_left(progress)["all"] == pytest.approx(expected)


def test_the_policy_parameter_reaches_only_the_studies_it_names():
    default = grid.plan_grid(["90_synthesis"], "tiny")
    assert {run.config.data.policy for run in default} == {"embedded", "embedded-search"}
    changed = grid.plan_grid(["90_synthesis"], "tiny", {"search_policy": "embedded"})
    assert {run.config.data.policy for run in changed} == {"embedded"}
    main = {run.run_id for run in default if run.config.data.policy == "embedded"}
    assert main <= {run.run_id for run in changed}  # the main block's runs are unchanged
    assert grid.plan_grid(["06_solution_count_vcc_003"], "tiny", {"search_policy": "embedded"}) == (
        grid.plan_grid(["06_solution_count_vcc_003"], "tiny")
    )  # notebook 06 names its policy "policy"


def test_report_003s_rows_on_the_embedded_policy_share_uniform_rloo_with_notebook_02():
    planned = grid.plan_grid(["02_baselines", "06_solution_count_vcc_003"], "tiny")
    [shared] = [run for run in planned if len(run.rows) > 1]
    assert shared.rows == (("02_baselines", UNIFORM.name, 0), ("06_solution_count_vcc_003", UNIFORM.name, 0))
    on_embedded = {row[1] for run in planned for row in run.rows
                   if row[0].startswith("06") and run.config.data.policy == "embedded"}  # fmt: skip
    assert on_embedded == {
        UNIFORM.name,
        *(m.name for m in (*REPORT_003_EMBEDDED, *REPORT_003_THRESHOLD_EMBEDDED)),
    }
    moved = grid.plan_grid(["06_solution_count_vcc_003"], "tiny", {"embedded_policy": "embedded-search"})
    assert {run.config.data.policy for run in moved} == {"embedded-search"}
    assert len(moved) < len(grid.plan_grid(["06_solution_count_vcc_003"], "tiny"))  # rows now shared


def test_a_planned_run_is_the_run_run_method_makes(tmp_path, capfd):
    """... and a run without bars of its own prints none of transformers' (a notebook's plain papermill)."""
    from transformers.utils import logging

    logging.enable_progress_bar()
    preset = study_preset("tiny")
    [planned] = grid.plan_runs([("02_baselines", SFT, preset)])
    store = run_method(SFT, preset, seed=0, root=tmp_path, progress=False)
    assert store.run_id == planned.run_id == locate_config("sft", method_config(SFT, preset, 0)).run_id
    assert store.is_done
    assert "Loading weights" not in capfd.readouterr().err
    assert logging.is_progress_bar_enabled()


def test_grid_jobs_ask_for_the_runs_threads_and_a_gpu_only_on_cuda():
    preset = study_preset("full")
    planned = grid.plan_runs([("x", UNIFORM, preset)])
    jobs = grid.grid_jobs(planned, "store")
    assert [(job.cpus, job.gpus) for job in jobs] == [(1, 0)] * len(preset.seeds)
    assert jobs[0].args[1] == str(Path("store").resolve())  # workers get an absolute store path
    assert jobs[0].label == "uniform, seed 0"
    on_gpu = grid.plan_runs([("x", Method("gpu", changes={"device": "cuda", "threads": 4}), preset)])
    assert {(job.cpus, job.gpus) for job in grid.grid_jobs(on_gpu, "store")} == {(4, 1)}
    assert not any(job.gpu_if_any for job in jobs + grid.grid_jobs(on_gpu, "store"))
    auto = grid.plan_runs([("x", Method("auto", changes={"device": "auto"}), preset)])
    assert {(job.gpus, job.gpu_if_any) for job in grid.grid_jobs(auto, "store")} == {(0, True)}


def test_a_worker_computing_another_run_id_refuses_the_run(tmp_path):
    [planned] = grid.plan_runs([("02_baselines", SFT, study_preset("tiny"))])
    skewed = grid.PlannedRun("eval-000000000000", planned.kind, planned.config, planned.rows)
    with pytest.raises(RuntimeError, match="run eval-000000000000 is eval-.* on this worker"):
        grid.run_planned(skewed, str(tmp_path))
    assert not list(tmp_path.iterdir())  # refused before a run folder was made


def test_an_extra_set_is_never_larger_than_the_presets_held_out_set():
    ood_row = next(m for m in REPORT_004 if m.eval_sets)
    sets = {
        name: method_config(ood_row, study_preset(name), 0).eval.extra_sets
        for name in ("full", "quick", "tiny")
    }
    assert sets == {
        "full": (("ood", "ood:200:0"), ("ood_targets", "ood_targets:200:0")),
        "quick": (("ood", "ood:8:0"), ("ood_targets", "ood_targets:8:0")),
        "tiny": (("ood", "ood:6:0"), ("ood_targets", "ood_targets:6:0")),
    }


def test_a_study_of_fixed_seeds_plans_the_presets_first_ones(monkeypatch):
    """With ten training seeds in the preset, notebook 09 still runs every size on the first five, and
    the other notebooks on all ten."""
    from dataclasses import replace

    from countdown_study.study import presets

    ten = replace(presets.STUDY_PRESETS["tiny"], seeds=tuple(range(10)))
    monkeypatch.setitem(presets.STUDY_PRESETS, "tiny", ten)
    seeds = {notebook: at.seeds for notebook, _, at in grid.grid_rows(["02_baselines", "09_scale"], "tiny")}
    assert seeds == {"02_baselines": tuple(range(10)), "09_scale": (0, 1, 2, 3, 4)}
    assert ten.first_seeds(None) is ten and ten.first_seeds(20) is ten
