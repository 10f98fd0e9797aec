"""Seconds per training step of full-preset runs with another memory allocator, beside glibc's malloc.

A training step allocates and frees tensors of many sizes; glibc's malloc maps every allocation larger
than its mmap threshold (at most 32 MB on 64-bit Linux) afresh and unmaps it when freed, so the kernel
faults in and zeroes those pages again on every step. This measures what that costs, arm by arm:

* ``glibc``: the C library's malloc, as the runs use it;
* ``torch-thp``: glibc's malloc with ``THP_MEM_ALLOC_ENABLE=1``, torch's own switch: its CPU allocator
  aligns allocations of 2 MB and more to 2 MB and asks for transparent huge pages on them (``madvise``);
* ``glibc-hugepages``: the same with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc >= 2.35: malloc asks
  for transparent huge pages on what it maps, 2 MB per fault instead of 4 kB, where the kernel's
  transparent huge pages are ``madvise``);
* ``glibc-no-mmap``: the same with ``GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=
  4294967296`` (what ``mallopt`` can also set in a running process): every allocation comes from the heap
  and what is freed stays there for reuse, until ``malloc_trim`` (``runs.memory.return_free_heap``, which
  the loop calls at each checkpoint and while memory is low) hands it back;
* ``jemalloc`` and ``tcmalloc``: ``libjemalloc.so.2`` or ``libtcmalloc_minimal.so.4`` preloaded into the
  run processes (``LD_PRELOAD``; Debian packages ``libjemalloc2`` and ``libtcmalloc-minimal4``), which keep
  freed pages for reuse; an arm whose library is not installed is recorded as missing.

Each workload is a full-preset method row at seed 0 and 1 (``study.grid.grid_rows``) cut to ``--steps``
steps, trained with ``training.loop.train`` in a temporary run store, two processes at once with one
torch thread each, as ``countdown-study run --preset full --jobs 2`` runs the study; the final evaluation
is cut to one task x one sample. Per arm: the median step seconds (the step log's ``seconds_*``; every
arm trains the same steps), its ratio to glibc's, the workers' minor page faults per second of wall time,
the kernel's share of their CPU time, their peak resident memory, and whether the run's numbers are the
same as glibc's (the step log without its seconds, and the SHA-256 of each file of the final policy as
the run records it, ``checksums.recorded_digests``; the committed JSON files, from an earlier version of
this script, hold one SHA-256 over the final weights' tensors instead): an allocator moves no
arithmetic, so a difference there would be a defect. Arms run in turn, ``--rounds``
times, the order reversed every other round; the machine should be otherwise idle (the load average is
recorded). The package adopted tcmalloc where it is installed (``countdown_study.runs.allocator``).

Run: ``python benchmarks/bench_allocator.py`` (about 50 minutes on 2 cores for every arm and workload;
the committed ``allocator.json`` holds the first two workloads, ``allocator_large.json`` the third with
three arms); ``--workloads`` picks among
``embedded-uniform`` (notebook 02's uniform RLOO on the embedded policy, stopping at the first answer),
``search-vcc`` (notebook 06's VCC-RLOO on the search policy, whole rollouts) and ``large-vcc`` (notebook
09's VCC-RLOO on ``embedded-large``). Writes ``benchmarks/results/allocator.json``.
"""

from __future__ import annotations

import argparse
import ctypes.util
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from countdown_study.runs.allocator import allocator_library

RESULTS = Path(__file__).resolve().parent / "results" / "allocator.json"

WORKLOADS = {
    "embedded-uniform": ("02_baselines", "RLOO uniform", "embedded"),
    "search-vcc": ("06_solution_count_vcc_003", "VCC-RLOO", "embedded-search"),
    "large-vcc": ("09_scale", "VCC-RLOO", "embedded-large"),
}
"""Workload name: (notebook stem, method row, starting policy) of a full-preset row."""


def arm_environment(arm: str) -> dict[str, str] | None:
    """The environment variables of ``arm`` for the run processes; None where its library is missing."""
    if arm == "glibc":
        return {}
    if arm == "torch-thp":
        return {"THP_MEM_ALLOC_ENABLE": "1"}
    if arm == "glibc-hugepages":
        return {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    if arm == "glibc-no-mmap":
        return {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296"}
    library = allocator_library(arm) if arm == "tcmalloc" else ctypes.util.find_library(arm)
    return {"LD_PRELOAD": library} if library else None


ARMS = ("glibc", "torch-thp", "glibc-hugepages", "glibc-no-mmap", "jemalloc", "tcmalloc")


def workload_config(workload: str, seed: int, steps: int):
    """The ``TrainConfig`` of ``workload`` at ``seed``, cut to ``steps`` steps (checkpointing at the last)
    and a one-task, one-sample final evaluation, one torch thread."""
    from countdown_study.study.grid import grid_rows
    from countdown_study.study.method import method_config

    notebook, row, policy = WORKLOADS[workload]
    for _, method, preset in grid_rows([notebook], "full"):
        if method.name == row and preset.data.policy == policy:
            config = method_config(method, preset, seed)
            return replace(
                config,
                steps=steps,
                checkpoint_every=steps,
                threads=1,
                eval=replace(config.eval, n=1),
                data=replace(config.data, eval_limit=1),
            )
    raise ValueError(f"no row {row!r} on {policy} in notebook {notebook}")


def worker(workload: str, seed: int, steps: int) -> dict:
    """Train ``workload`` at ``seed`` for ``steps`` steps in a temporary store; its timings and digests."""
    from countdown_study.checksums import recorded_digests
    from countdown_study.training.loop import train

    config = workload_config(workload, seed, steps)
    with tempfile.TemporaryDirectory(prefix="bench_allocator_") as root:
        started = time.perf_counter()
        store = train(config, root=root, progress=False)
        wall = time.perf_counter() - started
        records = [r for r in store.read_steps() if "reward_mean" in r]
        numbers = [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in records]
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "seed": seed,
            "wall_seconds": wall,
            "step_seconds": [sum(v for k, v in r.items() if k.startswith("seconds_")) for r in records],
            "minor_faults": usage.ru_minflt,
            "user_seconds": usage.ru_utime,
            "system_seconds": usage.ru_stime,
            "max_rss_gb": usage.ru_maxrss / 2**20,
            "steps_digest": hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest(),
            "final_digests": recorded_digests(store.path / "checkpoints" / "final"),
        }


def run_arm(arm: str, workload: str, steps: int, seeds: tuple[int, ...]) -> dict:
    """``workload`` at ``seeds`` in processes side by side under ``arm``'s allocator."""
    extra = arm_environment(arm)
    if extra is None:
        return {"missing": True}
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", **extra}
    command = [sys.executable, __file__, "--worker", workload, "--steps", str(steps)]
    load = os.getloadavg()
    started = time.perf_counter()
    processes = [
        subprocess.Popen([*command, "--seed", str(seed)], env=env, stdout=subprocess.PIPE, text=True)
        for seed in seeds
    ]
    outputs = [p.communicate()[0] for p in processes]
    wall = time.perf_counter() - started
    failed = [seed for seed, p in zip(seeds, processes, strict=True) if p.returncode != 0]
    if failed:
        raise RuntimeError(f"{arm} on {workload}: the workers of seeds {failed} failed")
    workers = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    return {"wall_seconds": wall, "load_average_before": load, "workers": workers}


def summary(rounds: list[dict], reference: list[dict] | None) -> dict:
    """Medians and shares of one arm's rounds; ``same_numbers`` against the reference arm's first round."""
    workers = [w for r in rounds for w in r["workers"]]
    cpu = sum(w["user_seconds"] + w["system_seconds"] for w in workers)
    out = {
        "median_step_seconds": statistics.median(s for w in workers for s in w["step_seconds"]),
        "faults_per_second": sum(w["minor_faults"] for w in workers) / sum(r["wall_seconds"] for r in rounds),
        "system_share": sum(w["system_seconds"] for w in workers) / cpu,
        "max_rss_gb": max(w["max_rss_gb"] for w in workers),
    }
    if reference is not None:
        key = [(w["steps_digest"], w["final_digests"]) for w in reference[0]["workers"]]
        out["same_numbers"] = all(
            [(w["steps_digest"], w["final_digests"]) for w in r["workers"]] == key for r in rounds
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--steps", type=int, default=2, help="training steps of every run")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the arms, order reversed each")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument("--worker", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.seed, args.steps)))
        return

    from countdown_study.runs.files import atomic_write_json
    from countdown_study.runs.provenance import provenance

    arms = ["glibc", *(a for a in args.arms if a != "glibc")]
    record: dict = {"provenance": provenance(seed=0), "steps": args.steps, "workloads": {}}
    for workload in args.workloads:
        rounds: dict[str, list[dict]] = {arm: [] for arm in arms}
        for turn in range(args.rounds):
            for arm in arms if turn % 2 == 0 else arms[::-1]:
                result = run_arm(arm, workload, args.steps, (0, 1))
                if result.get("missing"):
                    print(f"{workload}: {arm}: library not installed")
                    continue
                rounds[arm].append(result)
                print(f"{workload}: {arm} round {turn}: {result['wall_seconds']:.0f} s", flush=True)
        base = rounds["glibc"]
        table = {arm: summary(r, base if arm != "glibc" else None) for arm, r in rounds.items() if r}
        for row in table.values():
            row["ratio_to_glibc"] = row["median_step_seconds"] / table["glibc"]["median_step_seconds"]
        record["workloads"][workload] = {"arms": table, "rounds": rounds}
        print(f"\n{workload} ({args.steps} steps, seeds 0 and 1 side by side, 1 thread each)")
        print(f"{'arm':16} {'s/step':>8} {'x glibc':>8} {'faults/s':>9} {'kernel':>7} {'peak GB':>8} same")
        for arm, row in table.items():
            same = {True: "yes", False: "NO"}.get(row.get("same_numbers"), "-")
            print(
                f"{arm:16} {row['median_step_seconds']:8.1f} {row['ratio_to_glibc']:8.2f} "
                f"{row['faults_per_second']:9.0f} {row['system_share']:7.0%} {row['max_rss_gb']:8.1f} {same}"
            )
    record["load_average_after"] = os.getloadavg()
    atomic_write_json(args.out, record)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
