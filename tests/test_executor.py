"""Executors: finished runs are skipped, failed attempts retried a bounded number of times and reported by
run id, a killed worker's run resumes to the undisturbed result; the local process pool and a real Ray
cluster on this machine (a head and a worker node) leave the same run store."""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.runs.events import EVENTS, progress_line, read_events
from countdown_study.runs.executor import (
    RAY_MISSING,
    ExecutorConfig,
    Job,
    RayMissingError,
    execute,
    import_ray,
    task_options,
)
from countdown_study.runs.store import DONE

# ---------------------------------------------------------------------------------------------------
# Toy jobs (module-level: the pool's fresh worker processes import them by name)
# ---------------------------------------------------------------------------------------------------


def _attempt(root: str, run_id: str) -> int:
    """Count this attempt of ``run_id`` in a file beside its folder; the attempt's number."""
    tally = Path(root) / f"{run_id}.attempts"
    with open(tally, "a") as handle:
        handle.write("x")
    return len(tally.read_text())


def finish(root: str, run_id: str) -> str:
    (Path(root) / run_id).mkdir(parents=True, exist_ok=True)
    (Path(root) / run_id / DONE).write_text("{}")
    return run_id


def fail_first(root: str, run_id: str, failures: int) -> str:
    """Raise on the first ``failures`` attempts, then finish."""
    if _attempt(root, run_id) <= failures:
        raise ValueError(f"attempt of {run_id} failed on purpose")
    return finish(root, run_id)


def die_first(root: str, run_id: str) -> str:
    """The first attempt kills its own worker process; the next one finishes."""
    if _attempt(root, run_id) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return finish(root, run_id)


def events_of(root: Path) -> list[dict]:
    path = root / EVENTS
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def job(call, root: Path, run_id: str, *extra) -> Job:
    return Job(run_id, call, (str(root), run_id, *extra), label=f"toy {run_id}")


# ---------------------------------------------------------------------------------------------------
# The driver, on toy jobs
# ---------------------------------------------------------------------------------------------------


def test_finished_and_repeated_runs_are_skipped_in_the_driver(tmp_path):
    finish(str(tmp_path), "old")
    jobs = [job(finish, tmp_path, "old"), job(finish, tmp_path, "new"), job(finish, tmp_path, "new")]
    done = execute(jobs, tmp_path, ExecutorConfig(workers=1))
    assert (done.finished, done.skipped, done.failed) == (("new",), ("old",), ())
    assert not (tmp_path / "old.attempts").exists()
    assert execute(jobs, tmp_path).finished == ()  # nothing left: no worker is started


def test_a_failed_attempt_is_retried_and_a_run_failing_every_attempt_is_reported(tmp_path):
    jobs = [job(fail_first, tmp_path, "flaky", 1), job(fail_first, tmp_path, "broken", 99)]
    done = execute(jobs, tmp_path, ExecutorConfig(retries=2, workers=2))
    assert done.finished == ("flaky",) and not done.ok
    [failure] = done.failed
    assert (failure.run_id, failure.attempts) == ("broken", 3)
    assert failure.error == "ValueError: attempt of broken failed on purpose"
    assert (tmp_path / "broken.attempts").read_text() == "xxx"  # bounded: retries + 1 attempts
    lines = [progress_line(e) for e in events_of(tmp_path)]
    assert (
        "retry    flaky (toy flaky): attempt 2 of 3 after ValueError: attempt of flaky failed on purpose"
        in lines
    )
    broken = [line for line in lines if line.startswith(("retry    broken", "FAILED   broken"))]
    assert [line.split(":")[0] for line in broken] == ["retry    broken (toy broken)"] * 2 + [
        "FAILED   broken (toy broken)"
    ]
    assert broken[-1].endswith("given up after 3 attempts: ValueError: attempt of broken failed on purpose")


def test_a_killed_local_worker_is_retried_in_a_new_pool(tmp_path):
    jobs = [job(die_first, tmp_path, "killed"), job(finish, tmp_path, "bystander")]
    done = execute(jobs, tmp_path, ExecutorConfig(retries=1, workers=2))
    assert sorted(done.finished) == ["bystander", "killed"] and done.ok
    [retry] = [e for e in events_of(tmp_path) if e["run"] == "killed"]
    assert retry["event"] == "retry" and retry["error"].startswith("BrokenProcessPool")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "spark"}, "unknown executor 'spark'"),
        ({"retries": -1}, "retries must be >= 0"),
        ({"workers": 0}, "workers must be at least 1"),
        ({"address": "10.0.0.1:6379"}, "an address is for the ray executor"),
    ],
)
def test_executor_configs_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        ExecutorConfig(**fields)


@pytest.mark.parametrize(
    ("gpus", "gpu_if_any", "cluster_gpus", "asked"),
    [
        (0, False, 8, 0),
        (1, False, 0, 1),
        (1, False, 8, 1),
        (0, True, 0, 0),
        (0, True, 0.5, 0),
        (0, True, 2, 1),
    ],
)
def test_a_ray_task_asks_for_a_gpu_when_its_run_needs_one_or_runs_on_auto_beside_one(
    gpus, gpu_if_any, cluster_gpus, asked
):
    job = Job("rloo-0123", call=str, cpus=3, gpus=gpus, gpu_if_any=gpu_if_any)
    assert task_options(job, cluster_gpus) == {"num_cpus": 3, "num_gpus": asked, "name": "rloo-0123"}


def test_without_ray_the_ray_executor_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RayMissingError, match="pip install"):
        import_ray()
    assert main(["run", "02", "--preset", "tiny", "--executor", "ray", "--address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"countdown-study run: error: {RAY_MISSING}"
    assert 'pip install "countdown_study[ray]"' in err


def test_the_command_line_names_the_executors_the_library_has():
    from countdown_study.cli import run as cli_run
    from countdown_study.runs.executor import BACKENDS

    assert cli_run.EXECUTOR_NAMES == BACKENDS


def test_an_address_without_the_ray_executor_is_one_line_and_exit_2(capsys):
    assert main(["run", "02", "--preset", "tiny", "--address", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.strip() == "countdown-study run: error: --address is for --executor ray"


# ---------------------------------------------------------------------------------------------------
# The study grid at the tiny preset: the local pool, then a Ray cluster on this machine
# ---------------------------------------------------------------------------------------------------

GRID_NOTEBOOKS = ("02_baselines", "03_curricula_000")
"""Nine runs, one of them (uniform RLOO) asked for by both notebooks."""


def run_folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def assert_same_run(a: Path, b: Path) -> None:
    """Two stores' copies of one run hold the same config and results (step timings aside)."""
    for name in ("config.json", "identity.json", "results.json"):
        assert json.loads((a / name).read_text()) == json.loads((b / name).read_text()), name
    tables = sorted(p.name for p in (a / "tables").glob("*.parquet"))
    assert tables == sorted(p.name for p in (b / "tables").glob("*.parquet"))
    for name in tables:
        pd.testing.assert_frame_equal(
            pd.read_parquet(a / "tables" / name), pd.read_parquet(b / "tables" / name)
        )
    assert untimed_steps(a) == untimed_steps(b)


def untimed_steps(run: Path) -> list[dict]:
    """The run's step log without its ``seconds_*`` timings (empty for a run that logs no steps)."""
    log = run / "steps.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [{k: v for k, v in row.items() if not k.startswith("seconds_")} for row in rows]


def starts(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in events_of(root):
        if event["event"] == "start":
            counts[event["run"]] = counts.get(event["run"], 0) + 1
    return counts


@pytest.fixture(scope="module")
def local_grid(tmp_path_factory):
    """The grid trained by the local process pool: (store root, planned runs, execution)."""
    from countdown_study.study.grid import plan_grid, train_grid

    root = tmp_path_factory.mktemp("local") / "runs"
    done = train_grid(GRID_NOTEBOOKS, "tiny", executor=ExecutorConfig("local"), root=root)
    return root, plan_grid(GRID_NOTEBOOKS, "tiny"), done


def test_the_local_executor_runs_every_run_of_the_grid_once(local_grid):
    from countdown_study.study import run_study
    from countdown_study.study.grid import NOTEBOOK_STUDIES

    root, planned, done = local_grid
    assert sorted(done.finished) == sorted(run.run_id for run in planned) and done.ok
    assert starts(root) == {run.run_id: 1 for run in planned}
    assert all((root / run.run_id / DONE).is_file() for run in planned)
    for notebook in GRID_NOTEBOOKS:  # each notebook's own study finds every run finished
        [block] = NOTEBOOK_STUDIES[notebook]
        run_study(block.methods, "tiny", root=root, progress=False)
    assert starts(root) == {run.run_id: 1 for run in planned}


@pytest.fixture(scope="module")
def ray_address():
    """A Ray cluster on this machine: a head node and a worker node of one CPU each, processes of the
    test's own (``ray.cluster_utils.Cluster``), shut down after the module."""
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        yield cluster.address
    finally:
        cluster.shutdown()


def test_the_ray_executor_leaves_the_store_the_local_executor_leaves(local_grid, ray_address, tmp_path):
    from countdown_study.study.grid import train_grid

    local_root, planned, _ = local_grid
    root = tmp_path / "runs"
    began = time.perf_counter()
    done = train_grid(GRID_NOTEBOOKS, "tiny", executor=ExecutorConfig("ray", ray_address), root=root)
    print(f"ray executor: {len(done.finished)} runs in {time.perf_counter() - began:.1f} s")
    assert sorted(done.finished) == sorted(run.run_id for run in planned) and done.ok
    assert starts(root) == {run.run_id: 1 for run in planned}  # every run done once
    assert run_folders(root) == run_folders(local_root)
    for run_id in run_folders(root):
        assert_same_run(root / run_id, local_root / run_id)
    again = train_grid(GRID_NOTEBOOKS, "tiny", executor=ExecutorConfig("ray", ray_address), root=root)
    assert again.finished == () and len(again.skipped) == len(planned)


def _kill_at_step(root: Path, run_id: str, step: int, killed: list, stop: threading.Event) -> None:
    """Kill the worker process running ``run_id`` once it logs ``step`` (the pid its events carry); give up
    when ``stop`` is set (the execution ended). No deadline of its own: on a busy machine Ray may take
    minutes to start the worker."""
    while not stop.is_set():
        for event in read_events(root / EVENTS, 0)[0]:  # whole lines only
            if event["run"] == run_id and event["event"] == "step" and event["step"] >= step:
                os.kill(event["pid"], signal.SIGKILL)
                killed.append(event["pid"])
                return
        time.sleep(0.02)


def test_a_killed_ray_worker_is_retried_and_its_run_equals_an_undisturbed_one(ray_address, tmp_path):
    from countdown_study.study import Method, study_preset
    from countdown_study.study.grid import grid_jobs, plan_runs, run_planned

    method = Method("RLOO uniform (checkpoint every step)", changes={"checkpoint_every": 1})
    planned = plan_runs([("test", method, study_preset("tiny", steps=6))])
    [run] = planned
    undisturbed = tmp_path / "undisturbed"
    run_planned(run, str(undisturbed))  # in this process

    root = tmp_path / "killed"
    root.mkdir()
    killed: list = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_at_step, args=(root, run.run_id, 2, killed, stop))
    killer.start()
    try:
        done = execute(grid_jobs(planned, root), root, ExecutorConfig("ray", ray_address, retries=1))
    finally:
        stop.set()
        killer.join()
    assert killed, "the run finished before its worker could be killed"
    assert done.finished == (run.run_id,) and done.ok
    events = [e for e in events_of(root) if e["run"] == run.run_id]
    kinds = [e["event"] for e in events]
    assert kinds.count("start") == 1 and kinds.count("retry") == 1 and kinds.count("resume") == 1
    [retry] = [e for e in events if e["event"] == "retry"]
    assert retry["error"].startswith("WorkerCrashedError")  # reported with the run id, attempt 2 of 2
    assert kinds.index("retry") < kinds.index("resume")  # the retry continued from the last checkpoint
    assert_same_run(root / run.run_id, undisturbed / run.run_id)
