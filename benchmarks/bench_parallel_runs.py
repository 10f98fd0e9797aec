"""Throughput of RLOO runs on 2 cores: one run with 2 torch threads, or two runs side by side with 1 each.

The full study preset runs its notebooks two at a time (``countdown-study run --preset full --jobs 2``)
with one thread per run. This measures whether that is worth it: RLOO steps completed per minute by

* ``one_run_2_threads``: one process, ``torch.set_num_threads(2)``;
* ``two_runs_1_thread``: two processes at once, each ``torch.set_num_threads(1)``.

Each process runs ``train.rloo_step`` with the CPU preset (32 prompts x 8, 96 new tokens, bf16 sampling
and autocast update) on its own copy of the embedded checkpoint, a uniform sampler and its own seed,
``--warmup`` steps, then ``--steps`` timed steps; processes start together (a barrier) and throughput is
timed steps over the wall time of the slowest process. The two settings run one after the other, on a
machine that should be otherwise idle (the load average is recorded).

Run: ``python benchmarks/bench_parallel_runs.py``. Writes ``benchmarks/results/parallel_runs.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "parallel_runs.json"


def worker(threads: int, seed: int, warmup: int, steps: int, barrier, queue) -> None:
    """Run ``warmup + steps`` RLOO steps; put (timed-phase start, end, per-step seconds) on ``queue``."""
    import torch

    from countdown_study.countdown.generate import generate_tasks
    from countdown_study.policy import load_policy, prompt_template
    from countdown_study.rollout import make_engine
    from countdown_study.samplers import make_sampler
    from countdown_study.training.loop import preset, rloo_step

    torch.set_num_threads(threads)
    config = preset("cpu", seed=seed, threads=threads)
    model, tokenizer = load_policy("embedded", attention=config.attention)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    sampler = make_sampler("uniform", generate_tasks(2000, seed=100 + seed), seed)
    template = prompt_template(model)
    engine = make_engine(model, tokenizer, config.sampling)
    barrier.wait()
    for step in range(warmup):
        rloo_step(step, model, None, engine, optimizer, sampler, config, template)
    barrier.wait()
    start, seconds = time.perf_counter(), []
    for step in range(warmup, warmup + steps):
        clock = time.perf_counter()
        rloo_step(step, model, None, engine, optimizer, sampler, config, template)
        seconds.append(time.perf_counter() - clock)
    queue.put((start, time.perf_counter(), seconds))


def measure(processes: int, threads: int, warmup: int, steps: int) -> dict:
    """Steps per minute of ``processes`` simultaneous workers with ``threads`` threads each."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(threads, seed, warmup, steps, barrier, queue))
        for seed in range(processes)
    ]
    for p in procs:
        p.start()
    outcomes = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall = max(end for _, end, _ in outcomes) - min(start for start, _, _ in outcomes)
    per_step = [s for _, _, seconds in outcomes for s in seconds]
    return {
        "processes": processes,
        "threads_each": threads,
        "timed_steps": len(per_step),
        "wall_seconds": round(wall, 2),
        "steps_per_minute": round(60 * len(per_step) / wall, 2),
        "median_step_seconds": round(statistics.median(per_step), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per process")
    args = parser.parse_args()

    from countdown_study.runs.files import atomic_write_json
    from countdown_study.runs.provenance import provenance

    load_before = os.getloadavg()
    one = measure(1, 2, args.warmup, args.steps)
    two = measure(2, 1, args.warmup, args.steps)
    result = {
        "one_run_2_threads": one,
        "two_runs_1_thread": two,
        "throughput_ratio": round(two["steps_per_minute"] / one["steps_per_minute"], 3),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "settings": {"steps": args.steps, "warmup": args.warmup, "preset": "cpu"},
        "provenance": provenance(seed=0),
    }
    atomic_write_json(RESULTS, result)
    print(
        f"one run x 2 threads: {one['steps_per_minute']} steps/min (median step {one['median_step_seconds']} s)"
    )
    print(
        f"two runs x 1 thread: {two['steps_per_minute']} steps/min (median step {two['median_step_seconds']} s)"
    )
    print(f"ratio {result['throughput_ratio']}; written to {RESULTS}")


if __name__ == "__main__":
    main()
