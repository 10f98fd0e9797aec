"""The run processes' memory allocator (``runs.allocator``): the choice and its errors, the local executor's
workers starting with tcmalloc while the driver keeps its own, and a run's numbers the same bit for bit
under either allocator (where tcmalloc is installed; ``tests/test_memory.py`` hands tcmalloc's free memory
back)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_study.runs import allocator
from countdown_study.runs.allocator import (
    AllocatorMissingError,
    loaded_allocator,
    preload_environment,
    preloaded,
)
from countdown_study.runs.executor import ExecutorConfig, Job, execute
from countdown_study.runs.store import DONE

TCMALLOC = allocator.allocator_library("tcmalloc")
needs_tcmalloc = pytest.mark.skipif(
    TCMALLOC is None, reason="tcmalloc is not installed (libtcmalloc-minimal4)"
)


def test_an_unknown_allocator_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match=r"unknown allocator 'mimalloc'; choose one of \('auto', 'tcmalloc'"):
        preload_environment("mimalloc")
    with pytest.raises(ValueError, match="unknown allocator 'jemalloc'"):
        ExecutorConfig("local", allocator="jemalloc")


def test_system_preloads_nothing_and_a_missing_tcmalloc_is_named(monkeypatch):
    assert preload_environment("system") == {}
    monkeypatch.setitem(allocator.LIBRARIES, "tcmalloc", "no_such_allocator_library")
    assert preload_environment("auto") == {}  # auto falls back to the system's malloc
    with pytest.raises(AllocatorMissingError, match="apt-get install libtcmalloc-minimal4, or choose"):
        preload_environment("tcmalloc")
    assert "apt-get install libtcmalloc-minimal4" in allocator.describe_allocator("auto")


@needs_tcmalloc
def test_auto_and_tcmalloc_preload_its_library():
    assert preload_environment("auto") == preload_environment("tcmalloc") == {"LD_PRELOAD": TCMALLOC}
    assert allocator.describe_allocator("auto").startswith(f"workers' allocator: tcmalloc ({TCMALLOC};")


def test_preloaded_puts_the_library_first_and_restores_the_environment(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    with preloaded({"LD_PRELOAD": "liba.so"}):
        assert os.environ["LD_PRELOAD"] == "liba.so"
    assert "LD_PRELOAD" not in os.environ
    monkeypatch.setenv("LD_PRELOAD", "libuser.so")
    with preloaded({"LD_PRELOAD": "liba.so"}):
        assert os.environ["LD_PRELOAD"] == "liba.so libuser.so"
    assert os.environ["LD_PRELOAD"] == "libuser.so"
    with preloaded({}):
        assert os.environ["LD_PRELOAD"] == "libuser.so"


@pytest.mark.parametrize(
    ("maps", "name"),
    [
        ("7f00-7f01 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10\n", "tcmalloc"),
        ("7f00-7f01 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n", "jemalloc"),
        ("7f00-7f01 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n", "system"),
        ("", "system"),
    ],
)
def test_the_loaded_allocator_is_read_from_the_mapped_libraries(maps, name):
    assert loaded_allocator(maps) == name


# ---------------------------------------------------------------------------------------------------
# The local executor's workers (module-level job: the pool's fresh workers import it by name)
# ---------------------------------------------------------------------------------------------------


def record_allocator(root: str, run_id: str) -> str:
    """Write the worker's allocator and provenance record beside its run folder, then finish."""
    from countdown_study.runs.provenance import provenance

    record = {"allocator": allocator.process_allocator(), "provenance": provenance(seed=0)["allocator"]}
    (Path(root) / f"{run_id}.json").write_text(json.dumps(record))
    (Path(root) / run_id).mkdir(parents=True, exist_ok=True)
    (Path(root) / run_id / DONE).write_text("{}")
    return run_id


@pytest.mark.parametrize("choice", ["auto", "system"])
def test_local_workers_start_with_the_chosen_allocator_and_the_driver_keeps_its_environment(tmp_path, choice):
    before = os.environ.get("LD_PRELOAD")
    jobs = [Job(run_id=f"r{i}", call=record_allocator, args=(str(tmp_path), f"r{i}")) for i in range(2)]
    done = execute(jobs, tmp_path, ExecutorConfig("local", workers=2, allocator=choice))
    assert done.ok and sorted(done.finished) == ["r0", "r1"]
    expected = "tcmalloc" if choice == "auto" and TCMALLOC else "system"
    for i in range(2):
        assert json.loads((tmp_path / f"r{i}.json").read_text()) == {
            "allocator": expected,
            "provenance": expected,
        }
    assert os.environ.get("LD_PRELOAD") == before


# ---------------------------------------------------------------------------------------------------
# A run's numbers
# ---------------------------------------------------------------------------------------------------

TRAIN = """
import json, sys
from countdown_study.checksums import digests
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.allocator import process_allocator
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.rloo_config import RLOOConfig
from countdown_study.training.specs import DataSpec, EvalSpec

policy, root = sys.argv[1:3]
config = TrainConfig(
    data=DataSpec(policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
    eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
    steps=3, prompts_per_step=4, group_size=4, micro_batch=8, lr=1e-2,
    loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0), sampling=SamplingConfig(max_new_tokens=10), threads=1,
)
store = train(config, root=root, progress=False)
steps = [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in store.read_steps()]
final = digests(store.path / "checkpoints" / "final")  # every file of the final policy, by SHA-256
print(json.dumps({"allocator": process_allocator(), "steps": steps, "results": json.loads(
    (store.path / "results.json").read_text())["eval"], "weights": final}))
"""


@needs_tcmalloc
def test_a_run_has_the_same_numbers_under_tcmalloc_and_glibc(tiny_policy, tmp_path):
    runs = {}
    for name, extra in (("system", {}), ("tcmalloc", {"LD_PRELOAD": TCMALLOC})):
        env = {**os.environ, **extra}
        command = [sys.executable, "-c", TRAIN, tiny_policy, str(tmp_path / name)]
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    assert runs["system"].pop("allocator") == "system" and runs["tcmalloc"].pop("allocator") == "tcmalloc"
    assert any(name.endswith(".safetensors") for name in runs["system"]["weights"])
    assert runs["system"] == runs["tcmalloc"]


def test_the_command_refuses_a_missing_allocator_before_anything_runs(monkeypatch, capsys, tmp_path):
    from countdown_study.cli import main

    monkeypatch.setitem(allocator.LIBRARIES, "tcmalloc", "no_such_allocator_library")
    monkeypatch.setenv("COUNTDOWN_STUDY_RESULTS", str(tmp_path))
    assert main(["run", "02", "--preset", "tiny", "--allocator", "tcmalloc"]) == 2
    err = capsys.readouterr().err
    assert "the allocator 'tcmalloc' is not installed: apt-get install libtcmalloc-minimal4" in err
    assert not (tmp_path / "presets").exists()
