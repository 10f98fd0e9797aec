"""The full preset's evaluation on the CPU: seconds against its matrix-product floor, in the study's sampling
dtype and in bf16.

One measurement per sampling dtype (``--dtypes``, default the study's ``float32`` and ``bfloat16``): the
embedded policy evaluated on the full preset's 500 shared held-out tasks x 16 samples at the reports'
evaluation sampling (temperature 0.6, top-p 0.95, top-k 20, whole rollouts up to the 224-token budget),
``evaluate`` with ``--threads`` torch threads, ``OMP_WAIT_POLICY=PASSIVE``. The run ids of the study fix
``float32`` (the evaluation's ``SamplingConfig.dtype``); ``bfloat16`` is what a study that chose it would
pay.

Beside each time: the sampled tokens, the evaluation's matrix-product FLOPs (``flop_floor.forward_flops``
of every prompt and completion) and its floor at this machine's matrix-product rate in that dtype, measured
in the same process (``flop_floor.matmul_rate``: the model's MLP projection over 2,048 tokens). The decode
cache is float32 in both (``rollout.native.CACHE_DTYPE``), so attention reads the same bytes in both: the
floor counts only the matrix products and is a lower bound. Goal: at most 40 s at 2 threads on idle
cores. Stop other work on the cores first: the load average is recorded around each measurement.

Run: ``python benchmarks/bench_evaluation.py`` (writes ``benchmarks/results/evaluation.json``);
``--tasks 64`` times a smaller slice (no JSON unless ``--out``).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
from flop_floor import forward_flops, matmul_rate, model_shape, shape_record

from countdown_study import study
from countdown_study.evaluation.evaluate import evaluate
from countdown_study.policy import load_policy, prompt_template
from countdown_study.rollout import make_engine
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance
from countdown_study.training.common import study_tasks

RESULTS = Path(__file__).resolve().parent / "results" / "evaluation.json"
GOAL_SECONDS = 40.0
"""Target seconds of the full preset's evaluation (500 tasks x 16 samples) at 2 threads on idle cores."""


class RecordingEngine:
    """A rollout engine that keeps each sample's prompt and completion length."""

    def __init__(self, engine):
        self.engine = engine
        self.lengths: list[tuple[int, int]] = []

    def sample(self, *args, **kwargs):
        rollouts = self.engine.sample(*args, **kwargs)
        self.lengths.extend(
            (len(p), len(c)) for p, c in zip(rollouts.sample_prompt_ids, rollouts.completion_ids, strict=True)
        )
        return rollouts


def time_evaluation(dtype: str, tasks: int) -> dict:
    """Seconds, tokens and matrix-product floor of the full preset's evaluation sampled in ``dtype``."""
    preset = study.study_preset("full")
    model, tokenizer = load_policy("embedded")
    _, held_out = study_tasks(preset.run_data)
    held_out = held_out[:tasks]
    sampling = replace(preset.run_eval.sampling, dtype=dtype)
    engine = RecordingEngine(make_engine(model, tokenizer, sampling))
    shape = model_shape(model)
    rate = matmul_rate(torch.device("cpu"), 2048, shape.hidden, shape.mlp, dtype=getattr(torch, dtype))
    load = os.getloadavg()
    started = time.perf_counter()
    result = evaluate(
        model,
        tokenizer,
        held_out,
        preset.eval_n,
        sampling,
        seed=0,
        template=prompt_template(model),
        engine=engine,
    )
    seconds = time.perf_counter() - started
    flops = sum(forward_flops(shape, p, c) for p, c in engine.lengths)
    return {
        "dtype": dtype,
        "threads": torch.get_num_threads(),
        "tasks": len(held_out),
        "samples_per_task": preset.eval_n,
        "max_new_tokens": sampling.max_new_tokens,
        "seconds": seconds,
        "completion_tokens": sum(c for _, c in engine.lengths),
        "gflop": flops / 1e9,
        "matmul_gflop_per_second": rate / 1e9,
        "floor_seconds": flops / rate,
        "over_floor": seconds / (flops / rate),
        "pass@1": result.summary["pass@1"],
        "truncated": result.summary["truncated"],
        "model": shape_record(shape),
        "load_average_before_after": [load, os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument(
        "--dtypes", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"]
    )
    parser.add_argument("--tasks", type=int, default=500, help="held-out tasks to evaluate (default all 500)")
    parser.add_argument("--out", type=Path, default=None, help="where the JSON goes (default: the committed "
                        "record for a run over all 500 tasks, none otherwise)")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    record: dict = {"provenance": provenance(seed=0), "goal_seconds": GOAL_SECONDS, "evaluations": []}
    for dtype in args.dtypes:
        e = time_evaluation(dtype, args.tasks)
        record["evaluations"].append(e)
        print(f"{dtype}, {e['threads']} threads: {e['seconds']:.1f} s for {e['tasks']} x {e['samples_per_task']} "
              f"({e['completion_tokens']:,} tokens, {e['completion_tokens'] / e['seconds']:,.0f}/s); matrix-product "
              f"floor {e['floor_seconds']:.1f} s at {e['matmul_gflop_per_second']:.0f} GFLOP/s "
              f"({e['over_floor']:.1f}x); pass@1 {e['pass@1']:.4f}")  # fmt: skip
    study_dtype = next((e for e in record["evaluations"] if e["dtype"] == "float32"), None)
    if study_dtype is not None and study_dtype["tasks"] == 500:
        record["goal_met"] = study_dtype["seconds"] <= GOAL_SECONDS
    out = args.out or (RESULTS if args.tasks == 500 else None)
    if out is not None:
        atomic_write_json(out, record)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
