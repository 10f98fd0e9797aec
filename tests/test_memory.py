"""Returning a run process's freed heap: resident memory falls back once the blocks are freed (in a fresh
process, so the test's own heap does not count)."""

import os
import subprocess
import sys

import pytest

from countdown_study.runs import memory
from countdown_study.runs.allocator import allocator_library

PROBE = """
import numpy as np
from countdown_study.runs.memory import return_free_heap

def resident_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 // 2**20

warm = np.ones(16 * 2**20 // 8); del warm  # freeing a 16 MB block raises glibc's mapping threshold past 4 MB
blocks, keep = [], []
for _ in range(150):
    blocks.append(np.ones(4 * 2**20 // 8))  # 600 MB of 4 MB blocks on the heap ...
    keep.append(np.ones(2000))  # ... each followed by a small array that outlives them
del blocks
before = resident_mb()
released = return_free_heap()
print(before, resident_mb(), released)
"""


@pytest.mark.skipif(
    memory._malloc_trim() is None, reason="the C library cannot return free heap pages (not glibc)"
)
def test_freed_blocks_pinned_by_small_survivors_go_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    before, after, released = out.split()
    assert int(before) > 500, "the freed blocks should still be resident before the trim"
    assert int(before) - int(after) > 500 and released == "True"


@pytest.mark.skipif(
    allocator_library("tcmalloc") is None, reason="tcmalloc is not installed (libtcmalloc-minimal4)"
)
def test_tcmalloc_hands_the_freed_blocks_back_like_glibc():
    env = {**os.environ, "LD_PRELOAD": allocator_library("tcmalloc")}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env)
    before, after, released = out.stdout.split()
    assert int(before) > 500, "tcmalloc should keep the freed blocks until asked"
    assert int(before) - int(after) > 500 and released == "True"


# ----------------------------------------------------------------------------------------------------
# returning the heap while memory is low


def meminfo(total_gb: float, available_gb: float) -> str:
    """``/proc/meminfo`` text (KiB) with the two fields ``memory_is_low`` reads among others."""
    kib = 2**20
    return (
        f"MemTotal:       {int(total_gb * kib)} kB\nMemFree:         {int(available_gb * kib // 2)} kB\n"
        f"MemAvailable:   {int(available_gb * kib)} kB\nBuffers:           1024 kB\n"
    )


@pytest.mark.parametrize(
    ("text", "low"),
    [
        (meminfo(24, 5.9), True),  # below a quarter of 24 GB
        (meminfo(24, 6.1), False),
        (meminfo(16, 3.9), True),
        (meminfo(16, 12.0), False),
        ("MemTotal:       25165824 kB\n", False),  # no MemAvailable: never low
        ("", False),
        ("MemTotal: x kB\nMemAvailable: 1 kB\n", False),
    ],
)
def test_memory_is_low_below_a_quarter_of_the_machine(text, low):
    assert memory.LOW_MEMORY_SHARE == 0.25
    assert memory.memory_is_low(text) is low


def test_meminfo_fields_are_read_in_kib_by_name():
    assert memory.meminfo_kib(meminfo(24, 6)) == {
        "MemTotal": 24 * 2**20,
        "MemFree": 3 * 2**20,
        "MemAvailable": 6 * 2**20,
        "Buffers": 1024,
    }
    assert memory.meminfo_kib("MemTotal: x kB\nHugePages_Total:       0\n") == {"HugePages_Total": 0}


def test_the_machine_memory_is_read_once_for_the_run_store_and_the_command_line_bounds():
    from countdown_study.cli import bounds

    fields = memory.meminfo_kib()
    assert fields["MemTotal"] * 1024 == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < bounds.host_memory() <= fields["MemTotal"] * 1024


def test_the_heap_goes_back_only_while_memory_is_low(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "return_free_heap", lambda: calls.append(1) or True)
    assert memory.return_free_heap_when_low(meminfo(24, 12)) is False and calls == []
    assert memory.return_free_heap_when_low(meminfo(24, 2)) is True and calls == [1]


WHEN_LOW = PROBE.replace(
    "released = return_free_heap()",
    "from countdown_study.runs.memory import return_free_heap_when_low\n"
    "released = return_free_heap_when_low(MEMINFO)",
)


@pytest.mark.skipif(
    memory._malloc_trim() is None, reason="the C library cannot return free heap pages (not glibc)"
)
@pytest.mark.parametrize(("available_gb", "returned"), [(2.0, True), (20.0, False)])
def test_freed_blocks_go_back_only_when_memory_is_low(available_gb, returned):
    code = f"MEMINFO = {meminfo(24, available_gb)!r}\n" + WHEN_LOW
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after, released = out.split()
    assert int(before) > 500
    assert (int(before) - int(after) > 500) is returned and released == str(returned)


def test_an_rloo_run_returns_its_heap_each_step_when_memory_is_low_with_the_same_numbers(
    tiny_policy, tmp_path, monkeypatch
):
    from dataclasses import replace

    from countdown_study.rollout import SamplingConfig
    from countdown_study.training.loop import TrainConfig, train
    from countdown_study.training.rloo_config import RLOOConfig
    from countdown_study.training.specs import DataSpec, EvalSpec

    config = TrainConfig(
        data=DataSpec(tiny_policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=3, prompts_per_step=4, group_size=4, micro_batch=8, lr=1e-2,
        loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0), sampling=SamplingConfig(max_new_tokens=10), threads=1,
    )  # fmt: skip
    trims = []
    real = memory.return_free_heap
    monkeypatch.setattr(memory, "return_free_heap", lambda: trims.append(1) or real())
    runs = {}
    for available in (20.0, 2.0):
        (tmp_path / "meminfo").write_text(meminfo(24, available))
        monkeypatch.setattr(memory, "MEMINFO", tmp_path / "meminfo")
        before = len(trims)
        store = train(replace(config), root=tmp_path / f"runs-{available}", progress=False)
        runs[available] = (store, len(trims) - before)
    assert runs[20.0][1] == 0 and runs[2.0][1] == 3  # one at the end of each step, only while memory is low

    def numbers(store):
        steps = [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in store.read_steps()]
        return steps, (store.path / "results.json").read_text()

    assert numbers(runs[20.0][0]) == numbers(runs[2.0][0])  # the trim moves no data
