"""Runs per hour of a grid packed onto the GPUs: the local executor at several ``--runs-per-gpu``.

The grid is the uniform RLOO row of a study preset (``quick`` by default) at ``--runs`` seeds (0, 1, ...), on
``--device`` (``cuda``; the study presets' own runs are on the CPU, so the row asks for the GPU through its
method's config changes). For each K of ``--runs-per-gpu`` the grid is trained from scratch in a fresh
temporary run store by ``runs.executor.execute`` with ``ExecutorConfig(runs_per_gpu=K)``: K worker slots
per visible GPU, each slot's workers seeing only its GPU and starting their thread pools at the slot's share
of the cores (``study.grid.packing_lines`` prints the packing). Recorded per K: the wall seconds from the
first submission to the last run finished, runs per hour, the median seconds per RLOO step over every
run's step log, the load average, and whether every run's per-sample tables are byte-identical to those of
the first K measured (the same run ids at every K: packing enters no config).

Run on a GPU machine: ``python benchmarks/bench_packed_grid.py`` (writes
``benchmarks/results/packed_grid.json`` after each K, so a run cut short keeps what it measured; without a
GPU nothing unless ``--out``). To check the script without a GPU:
``--preset tiny --runs 2 --runs-per-gpu 1,2 --device auto --gpus 0`` (runs on ``auto`` resolve to the
CPU; the slots, their environments and the scheduling are the same).

The heavy imports stay inside ``main``: the executor's workers start by importing this file again, and
must not start torch before their slot's environment is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "packed_grid.json"


def step_seconds(root: Path) -> list[float]:
    """Seconds of every logged RLOO step (its ``seconds_*`` phases summed) of every run under ``root``."""
    seconds = []
    for log in root.glob("*/steps.jsonl"):
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if "reward_mean" in row:
                seconds.append(sum(v for k, v in row.items() if k.startswith("seconds_")))
    return seconds


def table_bytes(root: Path) -> dict[str, bytes]:
    """Every run's per-sample tables under ``root``, by ``run_id/table``."""
    return {
        f"{p.parent.parent.name}/{p.name}": p.read_bytes() for p in sorted(root.glob("*/tables/*.parquet"))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick", choices=("tiny", "quick", "full"), help="default quick")
    parser.add_argument("--runs", type=int, default=8, help="seeds of the uniform RLOO row (default 8)")
    parser.add_argument("--runs-per-gpu", default="1,4,8", help="comma-separated K values (default 1,4,8)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "auto", "cpu"), help="default cuda")
    parser.add_argument("--gpus", default=None, help="GPU ids to pack onto (default: every one torch sees)")
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON output (default {RESULTS} on a GPU machine, else none)"
    )
    args = parser.parse_args()

    import torch

    from countdown_study.runs.executor import ExecutorConfig, execute
    from countdown_study.runs.provenance import provenance
    from countdown_study.study import Method, study_preset
    from countdown_study.study.grid import grid_jobs, packing_lines, plan_runs

    method = Method("RLOO uniform", changes={"device": args.device})
    planned = plan_runs([("bench", method, study_preset(args.preset, seeds=tuple(range(args.runs))))])
    gpus = None if args.gpus is None else tuple(args.gpus.split(","))
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (torch sees none)"
    out = args.out or (RESULTS if torch.cuda.is_available() else None)  # a check without a GPU writes none
    record = {
        "preset": args.preset,
        "runs": len(planned),
        "run_ids": [run.run_id for run in planned],
        "device": args.device,
        "gpu": device,
        "cores": os.cpu_count(),
        "threads_per_run": planned[0].config.threads,
        "by_runs_per_gpu": {},
        "provenance": provenance(0),
    }
    first_tables = None
    print(f"{len(planned)} runs of the {args.preset} preset's uniform RLOO row on {args.device}; {device}")
    for k in (int(v) for v in args.runs_per_gpu.split(",")):
        config = ExecutorConfig("local", retries=0, runs_per_gpu=k, gpus=gpus)
        print(f"K={k}: " + "; ".join(packing_lines(planned, config)), flush=True)
        with tempfile.TemporaryDirectory(prefix=f"packed_{k}_") as folder:
            root = Path(folder)
            load, started = os.getloadavg(), time.perf_counter()
            done = execute(grid_jobs(planned, root), root, config)
            wall = time.perf_counter() - started
            steps, tables = step_seconds(root), table_bytes(root)
        first_tables = tables if first_tables is None else first_tables
        result = {
            "wall_seconds": wall,
            "runs_finished": len(done.finished),
            "failed": [f"{f.run_id}: {f.error}" for f in done.failed],
            "runs_per_hour": len(done.finished) / wall * 3600,
            "median_step_seconds": statistics.median(steps) if steps else None,
            "tables_identical_to_first_k": tables == first_tables,
            "load_average_before_after": [load, os.getloadavg()],
        }
        record["by_runs_per_gpu"][str(k)] = result
        rate, step = result["runs_per_hour"], result["median_step_seconds"] or 0.0
        same = tables == first_tables
        print(
            f"K={k}: {len(done.finished)} runs in {wall:.1f} s = {rate:.0f} runs/hour, median step "
            f"{step:.3f} s; tables identical to the first K: {same}; failed {len(done.failed)}",
            flush=True,
        )
        if out is not None:
            out.write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"wrote {out}" if out is not None else "no GPU: nothing written (--out to keep the check's numbers)"
    )


if __name__ == "__main__":
    main()
