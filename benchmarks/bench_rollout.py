"""Rollout engine speed: ``native`` vs ``hf`` (and ``vllm`` when installed) on one batch.

Same model and batch for every engine: 32 prompts x 8 samples, at most 96 new tokens, temperature 1.0,
stop at ``</answer>`` (the training settings), prompts from ``format_prompt`` on ``generate_tasks``.
The model is ``--policy`` when given, else the embedded SFT checkpoint when
``countdown_study/checkpoints/embedded/config.json`` exists, else a randomly initialised one (the output
says which; a random model writes shorter completions, so compare tokens/s rather than seconds).

Each (engine, dtype) runs in its own child process, one after another, so its peak resident memory
(``resource.getrusage``) is its own: one ``make_engine`` (timed as the startup for vllm), a warm-up
call, then ``--repeats`` timed batches with seeds 0..repeats-1 (medians reported). Goal: ``native`` at
least 2x ``hf`` in tokens/s at equal dtype.

Run: ``python benchmarks/bench_rollout.py`` with the package installed (or ``PYTHONPATH=.``); one
torch thread by default (the machine is shared, and one thread sampled about as fast as two).
Writes ``benchmarks/results/rollout.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import resource
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance

RESULTS = Path(__file__).resolve().parent / "results" / "rollout.json"


def _load(policy: str, seed: int):
    """(model, tokenizer, source): ``policy`` if given, else the embedded checkpoint if present, else random init."""
    from countdown_study.policy import build_model, build_tokenizer, load_policy

    if policy:
        model, tokenizer = load_policy(policy)
        return model, tokenizer, f"policy {policy}"
    if (EMBEDDED_CHECKPOINT_DIR / "config.json").exists():
        model, tokenizer = load_policy("embedded")
        return model, tokenizer, "embedded checkpoint"
    tokenizer = build_tokenizer()
    return (
        build_model(tokenizer, seed=seed).eval(),
        tokenizer,
        "random-init model (no embedded checkpoint yet)",
    )


def _prompts(model, count: int, seed: int) -> list[str]:
    """``count`` prompts in the policy's template from the package's task generator."""
    from countdown_study.countdown.generate import generate_tasks
    from countdown_study.countdown.prompts import format_prompt
    from countdown_study.policy import prompt_template

    return [format_prompt(t.nums, t.target, prompt_template(model)) for t in generate_tasks(count, seed)]


def _peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (ru_maxrss is in KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_engine(engine: str, dtype: str, args: argparse.Namespace) -> dict:
    """Time one engine in this (child) process: warm-up, then ``args.repeats`` batches."""
    import torch

    from countdown_study.rollout import SamplingConfig, make_engine

    torch.set_num_threads(args.threads)
    model, tokenizer, source = _load(args.policy, args.seed)
    prompts = _prompts(model, args.prompts, args.seed)
    config = SamplingConfig(engine=engine, dtype=dtype, max_new_tokens=args.max_new_tokens)
    rss_before = _peak_rss_mb()
    started = time.perf_counter()
    runner = make_engine(model, tokenizer, config)  # one per run: a vllm engine starts its instance here
    startup = time.perf_counter() - started
    runner.sample(prompts[:4], 2, seed=10_000)  # warm-up
    seconds, tokens, mean_lengths = [], [], []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        rollouts = runner.sample(prompts, args.group_size, seed=repeat)
        seconds.append(time.perf_counter() - started)
        tokens.append(rollouts.num_tokens)
        mean_lengths.append(rollouts.num_tokens / rollouts.num_samples)
    return {
        "engine": engine,
        "dtype": dtype,
        "model": source,
        "seconds_per_batch": seconds,
        "tokens_per_batch": tokens,
        "median_seconds_per_batch": statistics.median(seconds),
        "median_tokens_per_second": statistics.median(t / s for t, s in zip(tokens, seconds, strict=True)),
        "mean_completion_tokens": statistics.mean(mean_lengths),
        "engine_startup_seconds": startup if engine == "vllm" else 0.0,
        "torch_threads_while_sampling": torch.get_num_threads(),  # vLLM may bind its own
        "peak_rss_mb": _peak_rss_mb(),
        "peak_rss_before_sampling_mb": rss_before,
    }


def _in_child(engine: str, dtype: str, args: argparse.Namespace) -> dict:
    """Run ``_run_engine`` in a fresh process so its peak memory is its own; a missing engine is skipped."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        try:
            return pool.submit(_run_engine, engine, dtype, args).result()
        except ImportError as err:
            return {"engine": engine, "dtype": dtype, "skipped": str(err)}


def _speedups(results: list[dict]) -> dict[str, float]:
    """native over hf in tokens/s, per dtype, and vllm over hf where it ran."""
    rate = {(r["engine"], r["dtype"]): r["median_tokens_per_second"] for r in results if "skipped" not in r}
    out = {}
    for (engine, dtype), value in rate.items():
        if engine != "hf" and ("hf", dtype) in rate:
            out[f"{engine}_over_hf_{dtype}"] = value / rate[("hf", dtype)]
    if ("native", "bfloat16") in rate and ("hf", "float32") in rate:
        out["native_bfloat16_over_hf_float32"] = rate[("native", "bfloat16")] / rate[("hf", "float32")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32, help="prompts per batch")
    parser.add_argument("--group-size", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=96, help="longest completion")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches per engine")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each child")
    parser.add_argument("--seed", type=int, default=0, help="task and model seed")
    parser.add_argument(
        "--policy", default="", help="a saved policy folder (default: embedded, else random init)"
    )
    parser.add_argument("--dtypes", default="float32,bfloat16", help="sampling dtypes, comma-separated")
    parser.add_argument(
        "--engines", default="native,hf,vllm", help="engines, comma-separated (vllm if installed)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # inherited by the children
    has_vllm = importlib.util.find_spec("vllm") is not None
    engines = [e for e in args.engines.split(",") if e != "vllm" or has_vllm]
    load_before = os.getloadavg()
    results = []
    for dtype in args.dtypes.split(","):
        for engine in engines:
            result = _in_child(engine, dtype, args)
            results.append(result)
            if "skipped" in result:
                print(f"{engine:>6} {dtype:>8}: skipped ({result['skipped']})")
                continue
            print(
                f"{engine:>6} {dtype:>8}: {result['median_seconds_per_batch']:.3f} s/batch, "
                f"{result['median_tokens_per_second']:,.0f} tokens/s, "
                f"{result['mean_completion_tokens']:.1f} tokens/completion, peak RSS {result['peak_rss_mb']:.0f} MB"
            )
    speedups = _speedups(results)
    print(f"model: {results[0].get('model')}; vllm: {'installed' if has_vllm else 'not installed'}")
    for name, value in speedups.items():
        print(f"{name}: {value:.2f}x")
    record = {
        "batch": {
            "prompts": args.prompts,
            "group_size": args.group_size,
            "max_new_tokens": args.max_new_tokens,
        },
        "repeats": args.repeats,
        "threads": args.threads,
        "model": results[0].get("model"),
        "vllm_installed": has_vllm,
        "load_average_before_after": [load_before, os.getloadavg()],
        "results": results,
        "speedups_tokens_per_second": speedups,
        "goal": "native >= 2x hf tokens/s at equal dtype",
        "provenance": provenance(args.seed),
    }
    atomic_write_json(args.out, record)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
