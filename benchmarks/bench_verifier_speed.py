"""Speed of the reward on real rollouts: ``compute_score`` against TinyZero-style scoring, side by side.

Completions are the embedded policy's own samples (native engine, bfloat16 weights, one torch thread):
``--tasks`` tasks from ``generate_tasks`` under the compact prompt, ``--group-size`` samples each, at
each of ``--temperatures``. The training temperature (1.0) gives right answers, wrong values and wrong
numbers; the hotter draws add the malformed answers a policy writes early in training (bad
characters, unary minus, leading zeros, unbalanced parentheses, no answer). Completions holding
``**`` are set aside (counted): TinyZero's ``eval`` has no bound on a power tower.

Both scorers get the same strings, in TinyZero's layout: the ``tinyzero_base`` prompt then the
completion (TinyZero's reward decodes prompt and response together, and scores 0 at once without its
``Assistant:`` marker). TinyZero's scoring is ``tinyzero_score`` from ``bench_verifier_fuzz.py``: regex
extraction of the last answer span on the last line, ``\\d+`` number check, character-whitelist regex,
``eval``. The package is also timed on the bare completions, the strings its training loop scores.

Timing: ``--repeats`` passes over all strings, the scorers alternating within each pass, the garbage
collector off during a pass (as ``timeit`` does). Reported: median microseconds per completion for
each scorer, the first (cold) pass too, and the ratio package time / TinyZero time (goal: at most 1.0,
the package at least as fast). The 1-minute load average before and after is recorded (the machine is
shared); so are the verifier's reasons and the agreement of the two rewards.

Run: ``python benchmarks/bench_verifier_speed.py`` with the package installed (or ``PYTHONPATH=.``);
about a minute on one core, most of it sampling. Writes ``benchmarks/results/verifier_speed.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from bench_verifier_fuzz import tinyzero_score

from countdown_study.countdown.generate import generate_tasks
from countdown_study.countdown.prompts import THINK_OPEN, format_prompt
from countdown_study.countdown.verifier import compute_score, verify
from countdown_study.policy import load_policy
from countdown_study.rollout import SamplingConfig, make_engine
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import now, provenance
from countdown_study.training.common import prompts_for

RESULTS = Path(__file__).resolve().parent / "results" / "verifier_speed.json"
GOAL_RATIO = 1.0
"""Package seconds per completion over TinyZero's, at most."""

Scorer = Callable[[str, dict], float]


def sample_completions(
    tasks_per_temperature: int, group_size: int, temperatures: Sequence[float], seed: int
) -> list[dict]:
    """Rows ``{"completion", "numbers", "target", "temperature", "finish"}`` from the embedded policy."""
    model, tokenizer = load_policy("embedded")
    tasks = generate_tasks(tasks_per_temperature * len(temperatures), seed)
    rows = []
    for i, temperature in enumerate(temperatures):
        chunk = tasks[i * tasks_per_temperature : (i + 1) * tasks_per_temperature]
        engine = make_engine(model, tokenizer, SamplingConfig(dtype="bfloat16", temperature=temperature))
        rollouts = engine.sample(prompts_for(chunk, "compact"), group_size, seed + i)
        for j, (text, finish) in enumerate(zip(rollouts.texts, rollouts.finish_reasons, strict=True)):
            task = chunk[j // group_size]
            rows.append(
                {
                    "completion": text,
                    "numbers": list(task.nums),
                    "target": task.target,
                    "temperature": temperature,
                    "finish": finish,
                }
            )
    return rows


def tinyzero_transcript(row: dict) -> str:
    """The string TinyZero's reward scores: its base prompt, then the completion."""
    prompt = format_prompt(row["numbers"], row["target"], "tinyzero_base").removesuffix(THINK_OPEN)
    return prompt + row["completion"]


def one_pass(scorer: Scorer, strings: Sequence[str], truths: Sequence[dict]) -> float:
    """Seconds to score every string once, the garbage collector off."""
    gc.disable()
    try:
        start = time.perf_counter()
        for text, truth in zip(strings, truths, strict=True):
            scorer(text, truth)
        return time.perf_counter() - start
    finally:
        gc.enable()


def time_side_by_side(runs: dict[str, tuple[Scorer, list[str]]], truths: list[dict], repeats: int) -> dict:
    """Per run: first-pass and median microseconds per completion over ``repeats`` alternating passes."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (scorer, strings) in runs.items():
            seconds[name].append(one_pass(scorer, strings, truths))
    per_item = 1e6 / len(truths)
    return {
        name: {
            "median_us_per_completion": statistics.median(times) * per_item,
            "first_pass_us_per_completion": times[0] * per_item,
            "min_us_per_completion": min(times) * per_item,
            "pass_seconds": times,
        }
        for name, times in seconds.items()
    }


def agreement(transcripts: Sequence[str], truths: Sequence[dict]) -> dict:
    """How often the two rewards agree on the transcripts, with the score pairs where they differ."""
    pairs = Counter()
    examples = []
    for text, truth in zip(transcripts, truths, strict=True):
        ours, theirs = compute_score(text, truth), tinyzero_score(text, truth)
        if ours != theirs:
            pairs[f"ours={ours} tinyzero={theirs}"] += 1
            if len(examples) < 5:
                examples.append({"completion": text.rsplit("\n", 1)[-1], "ours": ours, "tinyzero": theirs})
    return {
        "agree": len(truths) - sum(pairs.values()),
        "n": len(truths),
        "differing_pairs": dict(pairs),
        "examples": examples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=192, help="tasks per temperature")
    parser.add_argument("--group-size", type=int, default=8, help="samples per task")
    parser.add_argument(
        "--temperatures", default="1.0,1.5,2.0", help="sampling temperatures, comma-separated"
    )
    parser.add_argument("--repeats", type=int, default=21, help="timed passes per scorer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", SyntaxWarning)  # TinyZero's eval warns on '8(3+4)'; the cost is kept
    record = {"config": vars(args) | {"out": str(args.out)}, "provenance": provenance(args.seed)}

    temperatures = [float(t) for t in args.temperatures.split(",")]
    start = time.perf_counter()
    sampled = sample_completions(args.tasks, args.group_size, temperatures, args.seed)
    rows = [row for row in sampled if "**" not in row["completion"]]
    sample_s = time.perf_counter() - start
    truths = [{"target": row["target"], "numbers": row["numbers"]} for row in rows]
    completions = [row["completion"] for row in rows]
    transcripts = [tinyzero_transcript(row) for row in rows]
    reasons = Counter(verify(row["completion"], row["numbers"], row["target"]).reason.value for row in rows)
    record["completions"] = {
        "sampled": len(sampled),
        "timed": len(rows),
        "set_aside_with_power": len(sampled) - len(rows),
        "sample_seconds": round(sample_s, 1),
        "mean_chars": statistics.mean(map(len, completions)),
        "mean_transcript_chars": statistics.mean(map(len, transcripts)),
        "finish_reasons": dict(Counter(row["finish"] for row in rows).most_common()),
        "verifier_reasons": dict(reasons.most_common()),
        "examples": completions[:: max(1, len(completions) // 8)][:8],
    }

    load_before = os.getloadavg()
    timings = time_side_by_side(
        {
            "tinyzero_transcript": (tinyzero_score, transcripts),
            "package_transcript": (compute_score, transcripts),
            "package_completion": (compute_score, completions),
        },
        truths,
        args.repeats,
    )
    record["load_average_before_after"] = [load_before, os.getloadavg()]
    record["timings"] = timings
    ratio = (
        timings["package_transcript"]["median_us_per_completion"]
        / timings["tinyzero_transcript"]["median_us_per_completion"]
    )
    record["package_over_tinyzero_time"] = ratio
    record["package_speed_vs_tinyzero"] = 1 / ratio
    record["goal"] = f"package time / TinyZero time <= {GOAL_RATIO} on the same strings"
    record["goal_met"] = ratio <= GOAL_RATIO
    record["agreement_on_transcripts"] = agreement(transcripts, truths)
    record["provenance"]["finished"] = now()
    atomic_write_json(args.out, record)

    c = record["completions"]
    print(
        f"{c['timed']:,} completions ({c['set_aside_with_power']} with ** set aside): {c['verifier_reasons']}"
    )
    for name, t in timings.items():
        print(
            f"  {name:>20}: {t['median_us_per_completion']:6.2f} us/completion median "
            f"(first pass {t['first_pass_us_per_completion']:.2f})"
        )
    print(f"package / TinyZero time on the same strings: {ratio:.2f} ({1 / ratio:.2f}x TinyZero's speed)")
    a = record["agreement_on_transcripts"]
    print(
        f"rewards agree on {a['agree']:,} of {a['n']:,}; load average {record['load_average_before_after']}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
