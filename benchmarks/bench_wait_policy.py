"""OpenMP's wait policy side by side: ``OMP_WAIT_POLICY=PASSIVE`` against the default (the variable unset),
for a few RLOO steps and for one evaluation, on the cores as they are and beside a competing busy process.

Each measurement is a fresh process (the policy is read once, when torch starts OpenMP) running one
workload with 2 torch threads on the embedded policy:

* ``step``: ``rloo_step`` of the CPU preset (32 prompts x 8, 96 new tokens, the update under bf16
  autocast), ``--warmup`` untimed steps then ``--steps`` timed ones; seconds per step and sampled tokens
  per second;
* ``eval``: ``evaluate`` of ``--eval-tasks`` generated tasks x 16 samples at the study's evaluation
  sampling (224 new tokens); seconds and sampled tokens per second.

Conditions: ``as_is`` (whatever else the machine runs) and ``busy`` (plus one process of this benchmark
spinning a pure-Python loop, one core's worth of competing work). Within a condition the two policies
alternate, in swapped order every repeat, so that both see the same drift in the machine's load; the load
average is recorded around every measurement. On a machine other people use, read the numbers as
indicative.

Run: ``python benchmarks/bench_wait_policy.py`` (writes ``benchmarks/results/wait_policy.json``);
``--quick`` is a smaller check of the script (1 step, 16 tasks, 1 repeat; no JSON unless ``--out``).
The committed JSON is the default run: 1 warm-up and 2 timed steps, 16 tasks, 2 repeats (29 minutes
beside other work).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "wait_policy.json"
POLICIES = ("default", "PASSIVE")
"""``default``: ``OMP_WAIT_POLICY`` unset (libgomp spins a while, then sleeps); ``PASSIVE``: sleep at once."""
CONDITIONS = ("as_is", "busy")
"""The machine as it is, and with one more core's worth of competing work."""
SPINNER = "while True:\n    pass\n"
"""The competing process: one pure-Python busy loop."""


# ---------------------------------------------------------------------------------------------------
# One measurement (a child process)
# ---------------------------------------------------------------------------------------------------


def measure_step(args: argparse.Namespace) -> dict:
    """Seconds per RLOO step of the CPU preset and sampled tokens per second (the step's own timings)."""
    import torch

    from countdown_study.countdown.generate import generate_tasks
    from countdown_study.policy import load_policy, prompt_template
    from countdown_study.rollout import make_engine
    from countdown_study.samplers import make_sampler
    from countdown_study.training.loop import preset, rloo_step

    config = preset("cpu", threads=args.threads)
    model, tokenizer = load_policy("embedded", attention=config.attention)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True
    )
    sampler = make_sampler(config.sampler, generate_tasks(2000, seed=1), config.seed)
    engine = make_engine(model, tokenizer, config.sampling)
    template = prompt_template(model)
    steps = []
    for step in range(args.warmup + args.steps):
        started = time.perf_counter()
        record = rloo_step(step, model, None, engine, optimizer, sampler, config, template)
        steps.append(
            {
                "seconds": time.perf_counter() - started,
                "sample": record["seconds_sample"],
                "update": record["seconds_update"],
                "tokens": record["tokens"],
            }
        )
    timed = steps[args.warmup :]
    return {
        "seconds": statistics.median(s["seconds"] for s in timed),
        "sample_seconds": statistics.median(s["sample"] for s in timed),
        "update_seconds": statistics.median(s["update"] for s in timed),
        "tokens_per_second": statistics.median(s["tokens"] / s["sample"] for s in timed),
        "steps": steps,
    }


def measure_eval(args: argparse.Namespace) -> dict:
    """Seconds of one evaluation and its sampled tokens per second."""
    from countdown_study.countdown.generate import generate_tasks
    from countdown_study.evaluation.evaluate import EVAL_SAMPLING, evaluate
    from countdown_study.policy import load_policy

    model, tokenizer = load_policy("embedded")
    tasks = generate_tasks(args.eval_tasks, seed=7)
    started = time.perf_counter()
    result = evaluate(model, tokenizer, tasks, 16, EVAL_SAMPLING, seed=0, progress=False)
    seconds = time.perf_counter() - started
    tokens = int(result.samples["completion_tokens"].sum())
    return {
        "seconds": seconds,
        "tokens_per_second": tokens / seconds,
        "max_new_tokens": EVAL_SAMPLING.max_new_tokens,
        "samples": 16 * len(tasks),
    }


def child(args: argparse.Namespace) -> None:
    """Run one workload and print its record as one JSON line."""
    import torch

    torch.set_num_threads(args.threads)
    load, cpu = os.getloadavg(), time.process_time()
    record = (measure_step if args.child == "step" else measure_eval)(args)
    record.update(
        cpu_seconds=time.process_time() - cpu,
        torch_threads=torch.get_num_threads(),
        omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"),
        load_average_before_after=[load, os.getloadavg()],
    )
    print(json.dumps(record))


# ---------------------------------------------------------------------------------------------------
# The driver (imports no torch)
# ---------------------------------------------------------------------------------------------------


def run_child(workload: str, policy: str, args: argparse.Namespace) -> dict:
    """One measurement in a fresh process with ``policy``."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    command = [
        sys.executable,
        __file__,
        "--child",
        workload,
        "--threads",
        str(args.threads),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--eval-tasks",
        str(args.eval_tasks),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(records: list[dict]) -> dict:
    """Median seconds and tokens per second of one (condition, workload, policy) over its repeats."""
    rates = [r["tokens_per_second"] for r in records if r["tokens_per_second"] is not None]
    return {
        "median_seconds": statistics.median(r["seconds"] for r in records),
        "median_tokens_per_second": statistics.median(rates) if rates else None,
        "seconds": [round(r["seconds"], 3) for r in records],
        "load_average_1min": [r["load_average_before_after"][0][0] for r in records],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("step", "eval"), help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed RLOO steps (default 1)")
    parser.add_argument("--steps", type=int, default=2, help="timed RLOO steps (default 2)")
    parser.add_argument(
        "--eval-tasks", type=int, default=16, help="evaluation tasks x 16 samples (default 16)"
    )
    parser.add_argument("--repeats", type=int, default=2, help="measurements per policy and case (default 2)")
    parser.add_argument("--workloads", default="step,eval", help="comma-separated: step, eval")
    parser.add_argument("--quick", action="store_true", help="a small check of the script")
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON output (default {RESULTS}; --quick: none)"
    )
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.quick:
        args.warmup, args.steps, args.eval_tasks, args.repeats = 0, 1, 16, 1
    started, load_before = time.perf_counter(), os.getloadavg()
    results: dict = {}
    for condition in CONDITIONS:
        spinner = subprocess.Popen([sys.executable, "-c", SPINNER]) if condition == "busy" else None
        try:
            for workload in args.workloads.split(","):
                records: dict[str, list[dict]] = {policy: [] for policy in POLICIES}
                for repeat in range(args.repeats):
                    order = POLICIES if repeat % 2 == 0 else POLICIES[::-1]
                    for policy in order:
                        records[policy].append(run_child(workload, policy, args))
                        print(
                            f"{condition:6} {workload:5} {policy:8} {records[policy][-1]['seconds']:8.2f} s  "
                            f"load {os.getloadavg()[0]:.2f}",
                            flush=True,
                        )
                summary = {policy: summarise(records[policy]) for policy in POLICIES}
                default, passive = (summary[p]["median_seconds"] for p in POLICIES)
                summary["passive_over_default"] = passive / default
                summary["faster"] = "PASSIVE" if passive < default else "default"
                summary["records"] = records
                results.setdefault(condition, {})[workload] = summary
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    for condition, workloads in results.items():
        for workload, summary in workloads.items():
            default, passive = (summary[p]["median_seconds"] for p in POLICIES)
            print(
                f"{condition:6} {workload:5} default {default:7.2f} s  PASSIVE {passive:7.2f} s  "
                f"PASSIVE/default {passive / default:.2f}"
            )
    record = {
        "threads": args.threads,
        "workloads": {
            "step": f"CPU preset step (32 x 8, 96 tokens): {args.warmup} warm-up, {args.steps} timed",
            "eval": f"evaluate {args.eval_tasks} generated tasks x 16 samples at the study's sampling",
        },
        "repeats": args.repeats,
        "cores": os.cpu_count(),
        "results": results,
        "load_average_before_after": [load_before, os.getloadavg()],
        "wall_seconds": time.perf_counter() - started,
        "note": "measured on a machine other work shared: indicative",
    }
    out = args.out or (None if args.quick else RESULTS)
    if out is not None:
        out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
