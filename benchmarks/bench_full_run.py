"""Seconds of a full-preset run and of its evaluation, and the full study's projected time on 2 cores.

Three measurements, one after the other, on a machine that should be otherwise idle (the load average
is recorded before and after each):

* ``evaluation``: ``evaluate`` of the embedded policy on the full preset's 500 shared held-out tasks x 16
  samples at the reports' evaluation sampling (temperature 0.6, top-p 0.95, top-k 20, whole rollouts up
  to the preset's evaluation budget), with 2 threads and with 1;
* ``one_run_2_threads``: one full-preset RLOO run (uniform sampler, seed 0: 60 steps of 32 x 8 with the
  KL and entropy terms, then the evaluation), ``train`` in a temporary run store with 2 threads;
* ``two_runs_1_thread``: two such runs (seeds 0 and 1) side by side in two processes with 1 thread each,
  as ``countdown-study run --preset full --jobs 2`` runs the study; seconds per run = the pair's wall
  time / 2.

Each run's training seconds are the sum of its step log's step times; its evaluation and loading are the
rest of its wall time. The projection multiplies the best seconds per run by the study's runs: every
method row of every notebook (``study.methods``) x the full preset's seeds, IPO runs counted as RLOO runs
(an assumption: IPO samples and updates about as much) and the SFT row as one evaluation.
Goals: the evaluation in at most 40 s, a full-preset run in at most 2 minutes.

Run: ``python benchmarks/bench_full_run.py``. Writes ``benchmarks/results/full_run.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import bench_evaluation
import torch

from countdown_study import study
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance
from countdown_study.training.loop import train

RESULTS = Path(__file__).resolve().parent / "results" / "full_run.json"
GOAL_EVAL_SECONDS = 40.0
"""Target seconds of the evaluation (500 tasks x 16 samples)."""
GOAL_RUN_SECONDS = 120.0
"""Target seconds of one full-preset run, training and evaluation."""


def time_evaluation(threads: int) -> dict:
    """Wall seconds of the full preset's evaluation of the embedded policy with ``threads`` threads, in the
    study's float32 (``bench_evaluation.time_evaluation``)."""
    torch.set_num_threads(threads)
    return bench_evaluation.time_evaluation("float32", tasks=500)


def one_run(seed: int, threads: int, root: str) -> dict:
    """One full-preset uniform RLOO run in the run store ``root``: wall, training and other seconds."""
    preset = study.study_preset("full")
    config = replace(preset.train_config("uniform", seed), threads=threads)
    started = time.perf_counter()
    store = train(config, root=root, progress=False)
    wall = time.perf_counter() - started
    steps = [r for r in store.read_steps() if "reward_mean" in r]
    training = sum(sum(v for k, v in r.items() if k.startswith("seconds_")) for r in steps)
    return {
        "seed": seed,
        "threads": threads,
        "steps": len(steps),
        "wall_seconds": wall,
        "training_seconds": training,
        "evaluation_and_loading_seconds": wall - training,
        "median_step_seconds": sorted(
            sum(v for k, v in r.items() if k.startswith("seconds_")) for r in steps
        )[len(steps) // 2],
        "pass@1": store.load_results()["eval"]["pass@1"],
    }


def _worker(seed: int, threads: int, root: str, queue) -> None:
    queue.put(one_run(seed, threads, root))


def side_by_side(threads: int, seeds: tuple[int, ...]) -> dict:
    """Runs of ``seeds`` in parallel processes, ``threads`` threads each: the wall time of all of them."""
    context = mp.get_context("spawn")
    queue = context.Queue()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench_full_") as root:
        started = time.perf_counter()
        workers = [context.Process(target=_worker, args=(s, threads, f"{root}/{s}", queue)) for s in seeds]
        for worker in workers:
            worker.start()
        runs = [queue.get() for _ in workers]
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
    return {
        "runs": sorted(runs, key=lambda r: r["seed"]),
        "wall_seconds": wall,
        "seconds_per_run": wall / len(seeds),
        "load_average_before_after": [load, os.getloadavg()],
    }


def study_rows() -> dict[str, int]:
    """Method rows of every notebook by kind (``rloo``, ``ipo``, ``sft``), each distinct method once."""
    methods = {
        m.name: m
        for m in (
            study.SFT, study.IPO, study.UNIFORM, study.UNIFORM_REPLACEMENT, *study.REPORT_000,
            *study.REPORT_000_ABLATIONS, *study.REPORT_001, *study.REPORT_001_ABLATIONS, *study.REPORT_002,
            *study.REPORT_004,
        )
    }  # fmt: skip
    kinds = [m.kind for m in methods.values()]
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


def projection(seconds_per_run: float, eval_seconds: float, rows: dict[str, int], seeds: int) -> dict:
    """Hours of the whole study: (RLOO + IPO rows) x seeds runs, SFT rows x seeds evaluations."""
    runs = (rows.get("rloo", 0) + rows.get("ipo", 0)) * seeds
    evaluations = rows.get("sft", 0) * seeds
    seconds = runs * seconds_per_run + evaluations * eval_seconds
    return {"rows": rows, "seeds": seeds, "runs": runs, "evaluations": evaluations, "hours": seconds / 3600}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-pair", action="store_true", help="skip the two side-by-side runs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    started = time.perf_counter()
    record: dict = {"provenance": provenance(seed=0)}

    record["evaluation"] = [time_evaluation(threads) for threads in (2, 1)]
    for e in record["evaluation"]:
        print(f"evaluation, {e['threads']} thread(s): {e['seconds']:.1f} s for {e['tasks']} x "
              f"{e['samples_per_task']} (pass@1 {e['pass@1']:.4f}, truncated {e['truncated']:.3f})")  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="bench_full_") as root:
        load = os.getloadavg()
        record["one_run_2_threads"] = {
            **one_run(0, 2, root),
            "load_average_before_after": [load, os.getloadavg()],
        }
    one = record["one_run_2_threads"]
    print(f"one run, 2 threads: {one['wall_seconds']:.1f} s (training {one['training_seconds']:.1f} s, "
          f"median step {one['median_step_seconds']:.3f} s; evaluation and loading "
          f"{one['evaluation_and_loading_seconds']:.1f} s)")  # fmt: skip
    per_run = {"one_run_2_threads": one["wall_seconds"]}
    if not args.skip_pair:
        record["two_runs_1_thread"] = side_by_side(1, (0, 1))
        pair = record["two_runs_1_thread"]
        per_run["two_runs_1_thread"] = pair["seconds_per_run"]
        print(f"two runs side by side, 1 thread each: {pair['wall_seconds']:.1f} s "
              f"({pair['seconds_per_run']:.1f} s per run)")  # fmt: skip

    best = min(per_run, key=per_run.get)
    eval_seconds = min(e["seconds"] for e in record["evaluation"])
    preset = study.study_preset("full")
    record["projection"] = {
        "setting": best,
        "seconds_per_run": per_run[best],
        **projection(per_run[best], eval_seconds, study_rows(), len(preset.seeds)),
    }
    proj = record["projection"]
    print(f"full study ({proj['rows']} rows x {proj['seeds']} seeds: {proj['runs']} runs, "
          f"{proj['evaluations']} evaluations) at {proj['seconds_per_run']:.0f} s per run ({best}): "
          f"{proj['hours']:.1f} hours")  # fmt: skip
    record["goals"] = {
        "evaluation_seconds": eval_seconds,
        "evaluation_at_most_seconds": GOAL_EVAL_SECONDS,
        "evaluation_goal_met": eval_seconds <= GOAL_EVAL_SECONDS,
        "run_seconds": per_run[best],
        "run_at_most_seconds": GOAL_RUN_SECONDS,
        "run_goal_met": per_run[best] <= GOAL_RUN_SECONDS,
    }
    record["wall_seconds"] = time.perf_counter() - started
    record["provenance"]["torch_threads"] = "2 and 1 (see each measurement)"
    atomic_write_json(args.out, record)
    print(json.dumps(record["goals"], indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
