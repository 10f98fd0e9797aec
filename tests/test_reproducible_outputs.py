"""Writing the same result twice gives the same bytes: tables keep their sidecar (provenance included) when
their content and description are unchanged, figures carry no dates, and a notebook's closing summary says
where its outputs went and how many runs it trained or reused."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from countdown_study import paths  # noqa: E402
from countdown_study.reporting import outputs  # noqa: E402
from countdown_study.study.notebook import notebook_summary  # noqa: E402

META = {"notebook": "02_demo", "preset": "tiny", "runs": [{"method": "A", "seed": 0, "run_id": "rloo-abc"}]}
TABLE = pd.DataFrame({"method": ["A", "B"], "pass@1": [0.25, 0.5]})


@pytest.fixture
def clock(monkeypatch):
    """Control the time and git SHA every new provenance record carries."""
    state = {"written": "2026-01-01T00:00:00+00:00", "git_sha": "a" * 40}
    monkeypatch.setattr(outputs, "now", lambda: state["written"])
    monkeypatch.setattr(outputs, "git_state", lambda: {"git_sha": state["git_sha"], "git_dirty": False})
    return state


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv(outputs.STAGE_ENV, raising=False)
    return tmp_path / "results"


def figure(title: str):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0.1, 0.3, 0.2])
    ax.set_title(title)
    return fig


def snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_an_unchanged_table_keeps_its_sidecar_byte_for_byte(tmp_path, clock):
    outputs.save_table(TABLE, "demo", META, folder=tmp_path)
    first = snapshot(tmp_path)
    clock.update(written="2026-02-02T00:00:00+00:00", git_sha="b" * 40)  # a later commit, a later time
    outputs.save_table(TABLE.copy(), "demo", META, folder=tmp_path)
    assert snapshot(tmp_path) == first
    assert json.loads(first["demo.meta.json"])["git_sha"] == "a" * 40  # the provenance of the first write


@pytest.mark.parametrize(
    ("table", "meta"),
    [
        (TABLE.assign(**{"pass@1": [0.25, 0.75]}), META),  # a number changed
        (
            TABLE,
            {**META, "runs": [{"method": "A", "seed": 0, "run_id": "rloo-new"}]},
        ),  # same bytes, other runs
    ],
    ids=["content", "description"],
)
def test_a_changed_table_or_description_gets_fresh_provenance(tmp_path, clock, table, meta):
    outputs.save_table(TABLE, "demo", META, folder=tmp_path)
    clock.update(written="2026-02-02T00:00:00+00:00", git_sha="b" * 40)
    outputs.save_table(table, "demo", meta, folder=tmp_path)
    record = json.loads((tmp_path / "demo.meta.json").read_text())
    assert (record["written"], record["git_sha"], record["runs"]) == (
        "2026-02-02T00:00:00+00:00",
        "b" * 40,
        meta["runs"],
    )


def test_an_unreadable_sidecar_is_replaced_by_a_fresh_one(tmp_path, clock):
    outputs.save_table(TABLE, "demo", META, folder=tmp_path)
    (tmp_path / "demo.meta.json").write_text("{torn")
    outputs.save_table(TABLE, "demo", META, folder=tmp_path)
    assert json.loads((tmp_path / "demo.meta.json").read_text())["written"] == clock["written"]


def test_the_same_figure_gives_the_same_files(tmp_path, clock):
    outputs.save_figure(figure("pass@k"), "curves", META, folder=tmp_path, show=False)
    first = snapshot(tmp_path)
    clock.update(written="2026-02-02T00:00:00+00:00", git_sha="b" * 40)
    outputs.save_figure(figure("pass@k"), "curves", META, folder=tmp_path, show=False)
    assert snapshot(tmp_path) == first
    assert b"CreationDate" not in first["curves.pdf"] and b"Software" not in first["curves.png"]
    outputs.save_figure(figure("pass@k, redrawn"), "curves", META, folder=tmp_path, show=False)
    assert json.loads((tmp_path / "curves.meta.json").read_text())["written"] == clock["written"]


def test_a_staged_table_takes_the_published_sidecar_when_unchanged(results, clock, monkeypatch):
    outputs.save_table(TABLE, "demo", META)  # published: <results>/presets/tiny/tables
    published = paths.tables_dir("tiny") / "demo.meta.json"
    monkeypatch.setenv(outputs.STAGE_ENV, "1")
    clock.update(written="2026-02-02T00:00:00+00:00")
    staged = outputs.save_table(TABLE, "demo", META)
    assert staged == paths.staging_dir("tiny", "02_demo") / "tables" / "demo.csv"
    assert staged.with_name("demo.meta.json").read_bytes() == published.read_bytes()


class Result:
    """The one attribute of a ``StudyResult`` the summary reads."""

    def __init__(self, run_ids, reused):
        self.runs = pd.DataFrame({"run_id": run_ids, "reused": reused})


def test_the_summary_names_the_folders_and_counts_the_runs(results):
    outputs.save_table(TABLE, "demo_summary", META)
    outputs.save_table(TABLE, "other_notebooks_table", {**META, "notebook": "03_other"})
    outputs.save_figure(figure("f"), "demo_curves", META, show=False)
    first = Result(["rloo-a", "rloo-b", "eval-c"], [False, True, True])
    second = Result(["rloo-a", "rloo-d"], [False, False])  # rloo-a shared: counted once
    assert notebook_summary(META, first, second).split("\n") == [
        "02_demo at the tiny preset: 1 table, 1 figure",
        "  tables    $COUNTDOWN_STUDY_RESULTS/presets/tiny/tables/",
        "  figures   $COUNTDOWN_STUDY_RESULTS/presets/tiny/figures/",
        "  runs      $COUNTDOWN_STUDY_RESULTS/presets/tiny/runs/: 4 runs, 2 trained, 2 reused",
    ]


def test_a_summary_without_runs_or_outputs_says_so(results):
    summary = notebook_summary({"notebook": "01_demo", "preset": "quick"})
    assert summary == "01_demo at the quick preset: 0 tables, 0 figures"


def test_folders_are_shown_relative_to_the_project(monkeypatch):
    monkeypatch.delenv("COUNTDOWN_STUDY_RESULTS", raising=False)
    assert paths.display_path(paths.runs_dir("quick")) == "results/presets/quick/runs"
    assert paths.display_path(paths.tables_dir()) == "results/tables"
    outside = paths.project_root().parent / "elsewhere"
    assert paths.display_path(outside) == str(outside.resolve())
