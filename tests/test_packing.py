"""``--runs-per-gpu`` on the command line: checked in one line, refused before any run where runs need a GPU
this machine lacks, a note where no run uses one; the planner and ``runs status`` show the packing."""

import pytest

from countdown_study.cli import main
from countdown_study.runs import executor
from countdown_study.runs.executor import Execution, ExecutorConfig
from countdown_study.study import Method, grid, study_preset


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """This machine as the tests say: ``machine(gpus, cores)`` sets the GPUs torch sees and the cores; the
    results folder is a temporary one."""
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path / "results"))

    def set_machine(gpus: tuple[str, ...], cores: int) -> None:
        monkeypatch.setattr(executor, "detect_gpus", lambda: gpus)
        monkeypatch.setattr(executor, "available_cores", lambda: cores)
        monkeypatch.setattr(grid, "available_cores", lambda: cores)

    return set_machine


def runs_on(device: str, seeds=(0, 1, 2, 3), threads: int = 1) -> list[grid.PlannedRun]:
    method = Method(f"uniform on {device}", changes={"device": device, "threads": threads})
    return grid.plan_runs([("02_baselines", method, study_preset("tiny", seeds=seeds))])


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--runs-per-gpu", "2"], "--runs-per-gpu is for --executor local or ray"),
        (["--executor", "local", "--runs-per-gpu", "0"], "--runs-per-gpu must be at least 1, got 0"),
    ],
)
def test_runs_per_gpu_mistakes_are_one_line_and_exit_2(argv, error, capsys, machine):
    assert main(["run", "02", "--preset", "tiny", *argv]) == 2
    assert capsys.readouterr().err.strip() == f"countdown-study run: error: {error}"


def test_runs_needing_a_gpu_on_a_machine_without_one_are_refused_before_any_run(monkeypatch, capsys, machine):
    machine((), 16)
    monkeypatch.setattr(grid, "plan_grid", lambda *args: runs_on("cuda", seeds=(0,)))
    monkeypatch.setattr(grid, "train_grid", lambda *args: pytest.fail("a run was started"))
    assert main(["run", "02", "--preset", "tiny", "--executor", "local", "--runs-per-gpu", "4"]) == 2
    assert capsys.readouterr().err.strip() == (
        "countdown-study run: error: 4 runs per GPU asked for, but this machine has no GPU for the 1 run(s) "
        "on device cuda"
    )


def test_on_a_machine_without_a_gpu_cpu_runs_go_on_with_a_note(monkeypatch, capsys, machine):
    from countdown_study.study import pipeline

    machine((), 2)
    trained = []
    monkeypatch.setattr(grid, "train_grid", lambda *args: trained.append(args) or Execution((), (), ()))
    monkeypatch.setattr(pipeline, "run_notebooks", lambda *args: [])
    assert main(["run", "02", "--preset", "tiny", "--executor", "local", "--runs-per-gpu", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == [
        "  local: this machine has no GPU and no run needs one: runs per GPU does not apply, runs are spread "
        "over the cores",
        "  local: 2 runs at once (2 cores; torch threads per run: 1)",
    ]
    [(_, _, _, config)] = trained
    assert config == ExecutorConfig("local", runs_per_gpu=4)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--workers", "1"], "--workers is for --executor local"),
        (["--executor", "ray", "--workers", "1"], "--workers is for --executor local"),
        (["--executor", "local", "--workers", "0"], "--workers must be at least 1, got 0"),
        (
            ["--executor", "local", "--workers", "1", "--runs-per-gpu", "2"],
            "give --workers or --runs-per-gpu, not both",
        ),
    ],
)
def test_workers_mistakes_are_one_line_and_exit_2(argv, error, capsys, machine):
    assert main(["run", "02", "--preset", "tiny", *argv]) == 2
    assert capsys.readouterr().err.strip() == f"countdown-study run: error: {error}"


def test_workers_sizes_the_local_pool(monkeypatch, capsys, machine):
    """On a machine short of memory, one run at a time though the cores would take two."""
    from countdown_study.study import pipeline

    machine((), 2)
    trained = []
    monkeypatch.setattr(grid, "train_grid", lambda *args: trained.append(args) or Execution((), (), ()))
    monkeypatch.setattr(pipeline, "run_notebooks", lambda *args: [])
    assert main(["run", "02", "--preset", "tiny", "--executor", "local", "--workers", "1"]) == 0
    assert (
        "  local: 1 runs at once (2 cores; torch threads per run: 1)" in capsys.readouterr().out.splitlines()
    )
    [(_, _, _, config)] = trained
    assert config == ExecutorConfig("local", workers=1)


@pytest.mark.parametrize(
    ("planned", "config", "lines"),
    [
        (
            runs_on("auto"),
            ExecutorConfig("local", runs_per_gpu=4, gpus=("0", "1")),
            ["local: 2 GPU(s) (0, 1) x 4 runs per GPU = 8 runs at once; CPU threads per run: 2 of 16 cores; "
             "torch threads per run: 1"],
        ),
        (
            runs_on("cuda", threads=4),
            ExecutorConfig("local", runs_per_gpu=8, gpus=("0",)),
            ["local: 1 GPU(s) (0) x 8 runs per GPU = 8 runs at once; CPU threads per run: 2 of 16 cores; "
             "torch threads per run: 4 (more than its share: the cores are oversubscribed)"],
        ),
        (
            runs_on("cpu"),
            ExecutorConfig("local", runs_per_gpu=4, gpus=("0",)),
            ["local: no run asks for a GPU (device cpu): runs per GPU does not apply, runs are spread over "
             "the cores", "local: 16 runs at once (16 cores; torch threads per run: 1)"],
        ),
        (
            runs_on("cpu", threads=2),
            ExecutorConfig("local"),
            ["local: 8 runs at once (16 cores; torch threads per run: 2)"],
        ),
        (
            runs_on("auto"),
            ExecutorConfig("ray", runs_per_gpu=4),
            ["ray: each run asks for its torch threads (1) as CPUs; 4 of 4 runs on a GPU (device cuda, or "
             "auto where the cluster has one), each asking for 1/4 of one"],
        ),
    ],
)  # fmt: skip
def test_the_planner_shows_the_packing(planned, config, lines, machine):
    machine((), 16)
    assert grid.packing_lines(planned, config) == lines


def test_runs_status_shows_the_packing_of_the_runs_left(capsys, machine, tmp_path):
    machine(("0",), 2)
    argv = ["runs", "status", "02", "--preset", "tiny", "--root", str(tmp_path / "store"), "--runs-per-gpu"]
    assert main([*argv, "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        "packing with 2 runs per GPU:",
        "  local: no run asks for a GPU (device cpu): runs per GPU does not apply, runs are spread over the "
        "cores",
        "  local: 2 runs at once (2 cores; torch threads per run: 1)",
    ]
    assert main([*argv, "0"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "countdown-study runs: error: --runs-per-gpu must be at least 1, got 0"
    )
