"""Executors: finished runs are skipped, failed attempts retried a bounded number of times and reported by
run id, a killed worker's run resumes to the undisturbed result; the local process pool and a real Ray
cluster on this machine (a head and a worker node) leave the same run store; runs packed K to a device
(``--runs-per-gpu``) get their slot's GPU and thread share and the results of runs made one at a time."""

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from countdown_study.cli import main
from countdown_study.runs import executor
from countdown_study.runs.events import EVENTS, progress_line, read_events
from countdown_study.runs.executor import (
    RAY_MISSING,
    ExecutorConfig,
    Job,
    RayMissingError,
    Slot,
    execute,
    import_ray,
    pack_slots,
    plan_packing,
    task_options,
    visible_gpus,
)
from countdown_study.runs.store import DONE
from countdown_study.runs.threads import THREAD_VARIABLES

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


def record_environment(root: str, run_id: str) -> str:
    """Write what the worker sees (its GPU, thread-pool size, wait policy, torch's threads), then finish."""
    import torch

    seen = {
        name: os.environ.get(name) for name in ("CUDA_VISIBLE_DEVICES", *THREAD_VARIABLES, "OMP_WAIT_POLICY")
    }
    seen["torch_threads"] = torch.get_num_threads()
    (Path(root) / f"{run_id}.env.json").write_text(json.dumps(seen))
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
        ({"runs_per_gpu": 0}, "runs per GPU must be at least 1, got 0"),
        ({"runs_per_gpu": 2, "workers": 2}, "as workers or as runs per GPU, not both"),
        ({"gpus": ("0",)}, "give runs_per_gpu with them"),
        ({"backend": "ray", "runs_per_gpu": 2, "gpus": ("0",)}, "give runs_per_gpu with them"),
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


@pytest.mark.parametrize(
    ("gpus", "gpu_if_any", "cluster_gpus", "runs_per_gpu", "asked"),
    [
        (1, False, 8, 4, 0.25),  # a run on cuda: a quarter of a GPU
        (1, False, 8, 1, 1.0),
        (0, True, 2, 8, 0.125),  # a run on auto beside a GPU
        (0, True, 0, 8, 0),  # a run on auto on a cluster without one: none
        (0, False, 8, 4, 0),  # a run on the CPU: none
    ],
)
def test_a_packed_ray_task_asks_for_a_fraction_of_a_gpu(gpus, gpu_if_any, cluster_gpus, runs_per_gpu, asked):
    job = Job("rloo-0123", call=str, cpus=2, gpus=gpus, gpu_if_any=gpu_if_any)
    options = task_options(job, cluster_gpus, runs_per_gpu)
    assert options == {"num_cpus": 2, "num_gpus": asked, "name": "rloo-0123"}


@pytest.mark.parametrize(
    ("gpus", "runs_per_gpu", "cores", "slots"),
    [
        (("0",), 1, 16, [("0", 16)]),  # a whole GPU and every core
        (("0",), 4, 16, [("0", 4)] * 4),
        (("0", "1"), 4, 16, [("0", 2), ("1", 2)] * 4),  # round-robin: the first runs spread over both
        (("0", "1"), 3, 16, [("0", 2), ("1", 2)] * 3),  # 16 // 6: two cores stay free
        (("0",), 8, 2, [("0", 1)] * 8),  # never below one thread
        (("3", "1"), 1, 2, [("3", 1), ("1", 1)]),  # CUDA_VISIBLE_DEVICES's own names, in its order
        (("GPU-a1",), 2, 3, [("GPU-a1", 1)] * 2),  # a UUID names a GPU too
    ],
)
def test_slots_take_gpus_round_robin_and_share_the_cores(gpus, runs_per_gpu, cores, slots):
    assert pack_slots(gpus, runs_per_gpu, cores) == tuple(Slot(gpu, threads) for gpu, threads in slots)


@pytest.mark.parametrize(
    ("gpus", "runs_per_gpu", "message"),
    [((), 2, "no GPU to pack runs onto"), (("0",), 0, "runs per GPU must be at least 1, got 0")],
)
def test_slots_need_a_gpu_and_a_positive_count(gpus, runs_per_gpu, message):
    with pytest.raises(ValueError, match=message):
        pack_slots(gpus, runs_per_gpu, 16)


def test_a_slot_pins_its_gpu_and_sizes_its_thread_pools():
    assert Slot("1", 4).environment == {
        "CUDA_VISIBLE_DEVICES": "1",
        "OMP_NUM_THREADS": "4",
        "MKL_NUM_THREADS": "4",
        "OPENBLAS_NUM_THREADS": "4",
        "RAYON_NUM_THREADS": "4",
    }


@pytest.mark.parametrize(
    ("cuda_visible_devices", "device_count", "gpus"),
    [
        (None, 2, ("0", "1")),  # unset: every GPU CUDA finds
        (None, 0, ()),  # a CPU-only machine or build
        ("2,3", 2, ("2", "3")),
        (" 3 , 1 ", 2, ("3", "1")),
        ("0,1,7", 2, ("0", "1")),  # CUDA stops at the first id it cannot find
        ("", 0, ()),  # every GPU hidden
    ],
)
def test_visible_gpus_follow_cuda_visible_devices(cuda_visible_devices, device_count, gpus):
    assert visible_gpus(cuda_visible_devices, device_count) == gpus


ON_CPU = Job("cpu-run", call=str, cpus=1)
ON_CUDA = Job("cuda-run", call=str, cpus=1, gpus=1)
ON_AUTO = Job("auto-run", call=str, cpus=1, gpu_if_any=True)
NO_GPU_NOTE = "this machine has no GPU and no run needs one: runs per GPU does not apply"
CPU_RUNS_NOTE = "no run asks for a GPU (device cpu): runs per GPU does not apply"


@pytest.mark.parametrize(
    ("jobs", "gpus", "slots", "note"),
    [
        ([ON_CPU], (), 0, NO_GPU_NOTE),  # CPU-only machine, CPU runs: a no-op with a note
        ([ON_AUTO, ON_CPU], (), 0, NO_GPU_NOTE),  # auto resolves to the CPU there
        ([ON_CPU], ("0",), 0, CPU_RUNS_NOTE),  # a GPU no run uses
        ([ON_AUTO], ("0", "1"), 8, ""),
        ([ON_CPU, ON_CUDA], ("0",), 4, ""),  # a CPU run among GPU runs takes a slot too
    ],
)
def test_packing_applies_where_a_run_takes_a_gpu(jobs, gpus, slots, note):
    packing = plan_packing(jobs, 4, gpus, cores=16)
    assert len(packing.slots) == slots and packing.note.startswith(note)
    assert packing.gpus == (gpus if slots else ())


def test_packing_runs_that_need_a_gpu_onto_a_machine_without_one_is_refused():
    message = "4 runs per GPU asked for, but this machine has no GPU for the 1 run(s) on device cuda"
    with pytest.raises(ValueError, match=re.escape(message)):
        plan_packing([ON_CPU, ON_CUDA], 4, (), cores=16)


def test_packed_workers_see_their_slots_gpu_and_share_before_torch_starts(tmp_path):
    jobs = [Job(f"toy{i}", record_environment, (str(tmp_path), f"toy{i}"), gpus=1) for i in range(4)]
    done = execute(jobs, tmp_path, ExecutorConfig(runs_per_gpu=2, gpus=("0", "1")))
    assert sorted(done.finished) == [f"toy{i}" for i in range(4)] and done.ok
    seen = [json.loads((tmp_path / f"toy{i}.env.json").read_text()) for i in range(4)]
    share = max(1, executor.available_cores() // 4)
    assert [s["CUDA_VISIBLE_DEVICES"] for s in seen] == ["0", "1", "0", "1"]  # all four slots at once
    assert all(s[name] == str(share) for s in seen for name in THREAD_VARIABLES)
    assert {s["torch_threads"] for s in seen} == {share}  # in place before the worker imported torch
    assert {s["OMP_WAIT_POLICY"] for s in seen} == {executor.WORKER_ENVIRONMENT["OMP_WAIT_POLICY"]}


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


def test_runs_packed_onto_one_device_equal_the_same_runs_made_one_at_a_time(tmp_path):
    """Two tiny runs on ``auto`` packed into two slots of one device at once (on a machine without a GPU
    they resolve to the CPU; the slots, their environments and the scheduling are the GPU machine's) against
    the same runs one at a time in this process: the same run ids, byte-identical per-sample tables."""
    from countdown_study.study import Method, study_preset
    from countdown_study.study.grid import grid_jobs, plan_runs, run_planned

    method = Method("RLOO uniform on auto", changes={"device": "auto"})
    planned = plan_runs([("test", method, study_preset("tiny", seeds=(0, 1)))])
    packed = tmp_path / "packed"
    done = execute(grid_jobs(planned, packed), packed, ExecutorConfig(runs_per_gpu=2, gpus=("0",)))
    assert sorted(done.finished) == sorted(run.run_id for run in planned) and done.ok
    assert len({e["pid"] for e in events_of(packed) if e["event"] == "start"}) == 2  # a worker each
    alone = tmp_path / "alone"
    for run in planned:
        run_planned(run, str(alone))
    assert run_folders(packed) == run_folders(alone) == sorted(run.run_id for run in planned)
    for run_id in run_folders(packed):
        assert_same_run(packed / run_id, alone / run_id)
        tables = sorted((packed / run_id / "tables").glob("*.parquet"))
        assert tables, f"{run_id} has no per-sample tables"
        for table in tables:
            assert table.read_bytes() == (alone / run_id / "tables" / table.name).read_bytes(), table.name


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
