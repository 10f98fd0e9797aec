"""Time the Difficulty Vector table on a public-sized pool, against the plain recursive Fraction solver.

A pool of 490,000 tasks from ``generate_tasks`` (the public data's distribution: 3 or 4 numbers, about
half each, numbers 1-99, targets 10-100, all solvable) goes through ``difficulty_vectors`` (the batched
numpy path) twice: in one process (wall and CPU seconds) and with 2 worker processes. The pool goal is
judged on the faster wall time. The machine is shared, so the 1-minute load average is recorded
beside the timings; the CPU seconds of the one-process run are the load-independent figure. A random
sample of 2,000 of the same tasks goes through the plain recursive path on ``Fraction`` that computes
the same fields (``solver._exact_features``), and, as a second baseline, through report 003's
reference functions ``solve`` + ``solution_count`` alone. Reported:
seconds, tasks per second, per-task speed ratios, and how many sampled rows differ between the two
paths (must be 0). Goals: the whole pool in at most 60 s on 2 cores; at least 100x faster per task
than the plain recursive path.

Run: ``python benchmarks/bench_solver.py`` with the package installed (or ``PYTHONPATH=.``); two to
four minutes, most of it the recursive sample. Writes ``benchmarks/results/solver.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from countdown_study.countdown.features import _exact_features, difficulty_vectors
from countdown_study.countdown.generate import generate_tasks
from countdown_study.countdown.solver import solution_count, solve
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance

RESULTS = Path(__file__).resolve().parent / "results" / "solver.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=490_000, help="pool size")
    parser.add_argument("--sample", type=int, default=2_000, help="tasks timed on the recursive path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="processes for the headline run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    record = {"config": vars(args) | {"out": str(args.out)}, "provenance": provenance(args.seed)}

    start = time.perf_counter()
    tasks = generate_tasks(args.n, args.seed)
    generate_s = time.perf_counter() - start

    load_before = os.getloadavg()[0]
    start, cpu_start = time.perf_counter(), time.process_time()
    frame = difficulty_vectors(tasks)
    single_s, single_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    start = time.perf_counter()
    pooled = difficulty_vectors(tasks, workers=args.workers)
    pooled_s = time.perf_counter() - start
    load_after = os.getloadavg()[0]
    fast_s = min(single_s, pooled_s)
    fast_per_task = fast_s / len(tasks)

    rng = np.random.default_rng(args.seed + 1)
    sample = rng.choice(len(tasks), size=min(args.sample, len(tasks)), replace=False).tolist()
    start, cpu_start = time.perf_counter(), time.process_time()
    rows = [_exact_features(tasks[i].nums, tasks[i].target, 128, 128) for i in sample]
    plain_s, plain_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    start = time.perf_counter()
    for i in sample:
        solve(tasks[i].nums, tasks[i].target), solution_count(tasks[i].nums, tasks[i].target)
    reference_s = time.perf_counter() - start
    mismatched = sum(
        any(frame.iloc[i][name] != value for name, value in row.items())
        for i, row in zip(sample, rows, strict=True)
    )  # fmt: skip

    by_count = frame.groupby("num_count")
    record["results"] = {
        "tasks": len(tasks),
        "num_count_shares": (by_count.size() / len(frame)).round(4).to_dict(),
        "generate_seconds": round(generate_s, 2),
        "fast_seconds": round(fast_s, 2),
        "fast_tasks_per_second": round(len(tasks) / fast_s),
        "one_process_seconds": round(single_s, 2),
        "one_process_cpu_seconds": round(single_cpu_s, 2),
        "one_process_cpu_tasks_per_second": round(len(tasks) / single_cpu_s),
        "workers": args.workers,
        "workers_seconds": round(pooled_s, 2),
        "workers_equal_one_process": bool(pooled.equals(frame)),
        "load_average_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "plain_sample": len(sample),
        "plain_seconds": round(plain_s, 2),
        "plain_tasks_per_second": round(len(sample) / plain_s, 1),
        "speedup_vs_plain_per_task": round(plain_s / len(sample) / fast_per_task, 1),
        "cpu_speedup_vs_plain_per_task": round(plain_cpu_s / len(sample) / (single_cpu_s / len(tasks)), 1),
        "solve_plus_count_seconds": round(reference_s, 2),
        "speedup_vs_solve_plus_count_per_task": round(reference_s / len(sample) / fast_per_task, 1),
        "sample_rows_differing": mismatched,
        "goal_pool_within_60s": fast_s <= 60.0,
        "goal_speedup_at_least_100x": plain_s / len(sample) / fast_per_task >= 100.0,
        "pool_summary": {
            "solvable": float(frame.solvable.mean()),
            "solution_count_mean_by_num_count": by_count.solution_count.mean().round(2).to_dict(),
            "shortest_operand_count": frame.shortest_operand_count.value_counts().sort_index().to_dict(),
            "all_numbers_required": float(frame.all_numbers_required.mean()),
            "requires_fraction": float(frame.requires_fraction.mean()),
        },
    }
    record["provenance"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    for key, value in record["results"].items():
        print(f"{key}: {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out, record)


if __name__ == "__main__":
    main()
