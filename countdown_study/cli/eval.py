"""``countdown-study eval``: evaluate a policy on a task source; pass@k, mean score, well-formed rate."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace

from countdown_study.countdown import load_tasks
from countdown_study.countdown.prompts import TEMPLATES
from countdown_study.evaluation.evaluate import EVAL_SAMPLING, evaluate
from countdown_study.policy import load_policy
from countdown_study.runs.files import atomic_path, atomic_write_json


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study eval``."""
    parser.add_argument("--policy", default="embedded", help="'embedded', a Hugging Face id or a folder")
    parser.add_argument(
        "--tokenizer", default=None, help="where the tokenizer comes from (default: the policy)"
    )
    parser.add_argument("--tasks", required=True, help="'generated:COUNT:SEED', a Hugging Face id or a file")
    parser.add_argument("--n", type=int, default=16, help="samples per task")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--json", default=None, help="write the summary here (default: standard output)")
    parser.add_argument("--table", default=None, help="write the per-sample table here (parquet)")
    parser.add_argument("--engine", default=EVAL_SAMPLING.engine, help="rollout engine: native, hf or vllm")
    parser.add_argument("--temperature", type=float, default=EVAL_SAMPLING.temperature)
    parser.add_argument("--top-p", type=float, default=EVAL_SAMPLING.top_p)
    parser.add_argument("--top-k", type=int, default=EVAL_SAMPLING.top_k, help="0: off")
    parser.add_argument("--max-new-tokens", type=int, default=EVAL_SAMPLING.max_new_tokens)
    parser.add_argument(
        "--stop-at-answer", action="store_true", help="stop each sample after its first </answer>"
    )
    parser.add_argument("--template", choices=sorted(TEMPLATES), default=None, help="default: the policy's")
    parser.add_argument("--batch-size", type=int, default=32, help="tasks per sampling call")


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study eval``: load, evaluate, write the summary JSON (and the table)."""
    sampling = replace(
        EVAL_SAMPLING,
        engine=args.engine,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        max_new_tokens=args.max_new_tokens,
        stop_at_answer=args.stop_at_answer,
    )
    tasks = load_tasks(args.tasks)  # before the policy: a bad task source fails at once
    model, tokenizer = load_policy(args.policy, tokenizer=args.tokenizer)
    result = evaluate(
        model,
        tokenizer,
        tasks,
        n=args.n,
        sampling=sampling,
        seed=args.seed,
        template=args.template,
        batch_size=args.batch_size,
    )
    output = {
        **result.summary,
        "config": {
            "policy": str(args.policy),
            "tasks": args.tasks,
            "seed": args.seed,
            "sampling": asdict(sampling),
        },
    }
    if args.table:
        with atomic_path(args.table) as tmp:
            result.samples.to_parquet(tmp, index=False)
    if args.json:
        atomic_write_json(args.json, output)
    else:
        sys.stdout.write(json.dumps(output, indent=2) + "\n")
    return 0
