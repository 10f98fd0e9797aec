"""Where an RLOO step's time goes: torch profiler tables of its two phases, sampling and the update.

One step of the CPU preset (32 prompts x 8, 96 new tokens, embedded policy, 2 threads) after two warm-up
steps: the rollout engine's ``sample`` and ``policy_update`` each run once under
``torch.profiler.profile``; the top operators by self CPU time are printed and written with the
phase's wall seconds (the profiler's own overhead included, so read shares, not absolute times).

Run: ``python benchmarks/profile_step.py``. Writes ``benchmarks/results/profile_step.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
from torch.profiler import ProfilerActivity, profile

from countdown_study.countdown.generate import generate_tasks
from countdown_study.countdown.grading import grade_batch
from countdown_study.objectives.rloo import rloo_advantages
from countdown_study.policy import load_policy, prompt_template
from countdown_study.rollout import make_engine
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance
from countdown_study.samplers import make_sampler
from countdown_study.training.common import prompts_for
from countdown_study.training.loop import policy_update, preset, rloo_step

RESULTS = Path(__file__).resolve().parent / "results" / "profile_step.json"


def top_operators(prof, rows: int) -> list[dict]:
    """The ``rows`` operators with the most self CPU time: name, calls, self and total milliseconds."""
    averages = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in averages) or 1.0
    return [
        {
            "operator": e.key,
            "calls": e.count,
            "self_ms": e.self_cpu_time_total / 1e3,
            "total_ms": e.cpu_time_total / 1e3,
            "self_share": e.self_cpu_time_total / total,
        }
        for e in averages[:rows]
    ]


def profiled(fn, rows: int) -> tuple[object, dict]:
    """Run ``fn()`` under the profiler: its value and ``{"seconds", "top"}``."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        started = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - started
    return value, {"seconds": seconds, "top": top_operators(prof, rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--rows", type=int, default=12, help="operators listed per phase")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = preset("cpu", threads=args.threads)
    model, tokenizer = load_policy("embedded", attention=config.attention)
    template = prompt_template(model)
    sampler = make_sampler("uniform", generate_tasks(2000, seed=1), seed=0)
    engine = make_engine(model, tokenizer, config.sampling)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    for step in range(2):
        rloo_step(step, model, None, engine, optimizer, sampler, config, template)
    load = os.getloadavg()
    tasks = sampler.next_batch(2, config.prompts_per_step).tasks
    rollouts, sample_record = profiled(
        lambda: engine.sample(prompts_for(tasks, template), config.group_size, 2), args.rows
    )
    grades = grade_batch(rollouts.texts, tasks, rollouts.group_size, config.format_score)
    advantages = rloo_advantages(torch.from_numpy(grades.rewards).float())
    _, update_record = profiled(
        lambda: policy_update(model, None, optimizer, rollouts, advantages, config), args.rows
    )
    record = {
        "config": {"preset": "cpu", "threads": args.threads, "attention": config.attention,
                   "micro_batch": config.micro_batch, "completion_tokens": rollouts.num_tokens},
        "sample": sample_record,
        "update": update_record,
        "load_average_before_after": [load, os.getloadavg()],
        "provenance": provenance(seed=0),
    }  # fmt: skip
    for phase in ("sample", "update"):
        print(f"{phase}: {record[phase]['seconds']:.3f} s under the profiler")
        for row in record[phase]["top"]:
            print(
                f"  {row['operator']:<45}{row['calls']:>7}{row['self_ms']:>10.1f} ms{row['self_share']:>7.1%}"
            )
    atomic_write_json(args.out, record)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
