"""Returning a run process's freed heap: resident memory falls back once the blocks are freed (in a fresh
process, so the test's own heap does not count)."""

import subprocess
import sys

import pytest

from countdown_study.runs import memory

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
