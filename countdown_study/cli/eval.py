"""``countdown-study eval``: evaluate a policy on a task source; pass@k, mean score, well-formed rate."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from countdown_study.training.device import DEFAULT_DEVICE, DEVICES

if TYPE_CHECKING:
    from countdown_study.rollout.sampling import SamplingConfig

TEMPLATE_NAMES = ("compact", "qwen_chat", "tinyzero_base")
"""The names of ``countdown.prompts.TEMPLATES`` in sorted order, written out so that parsing imports
nothing heavy (``tests/test_cli.py`` holds them equal)."""
SAMPLING_OPTIONS = ("engine", "temperature", "top_p", "top_k", "max_new_tokens")
"""``SamplingConfig`` fields the command line sets; an option left out keeps ``EVAL_SAMPLING``'s value."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study eval``; sampling options left out keep ``EVAL_SAMPLING``'s values.

    Parsing imports no torch: ``EVAL_SAMPLING`` is read when the command runs.
    """
    parser.add_argument("--policy", default="embedded", help="'embedded', a Hugging Face id or a folder")
    parser.add_argument(
        "--tokenizer", default=None, help="where the tokenizer comes from (default: the policy)"
    )
    parser.add_argument("--tasks", required=True, help="'generated:COUNT:SEED', a Hugging Face id or a file")
    parser.add_argument("--n", type=int, default=16, help="samples per task")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--json", default=None, help="write the summary here (default: standard output)")
    parser.add_argument("--table", default=None, help="write the per-sample table here (parquet)")
    parser.add_argument("--engine", help="rollout engine: native, hf or vllm")
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--top-k", type=int, help="0: off")
    parser.add_argument("--max-new-tokens", type=int)
    parser.add_argument(
        "--stop-at-answer", action="store_true", help="stop each sample after its first </answer>"
    )
    parser.add_argument("--template", choices=TEMPLATE_NAMES, default=None, help="default: the policy's")
    parser.add_argument("--batch-size", type=int, default=32, help="tasks per sampling call")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=DEFAULT_DEVICE,
        help="where the policy samples (auto: cuda if present)",
    )


def sampling_from_args(args: argparse.Namespace) -> SamplingConfig:
    """``EVAL_SAMPLING`` with the command line's sampling options."""
    from countdown_study.evaluation.evaluate import EVAL_SAMPLING

    changes = {name: getattr(args, name) for name in SAMPLING_OPTIONS if getattr(args, name) is not None}
    return replace(EVAL_SAMPLING, **changes, stop_at_answer=args.stop_at_answer)


def check_counts(args: argparse.Namespace) -> None:
    """Refuse ``--n`` or ``--batch-size`` below 1, naming the option (before anything loads)."""
    for option, value in (("--n", args.n), ("--batch-size", args.batch_size)):
        if value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study eval``: load, evaluate, write the summary JSON (and the table)."""
    from countdown_study.countdown import load_tasks
    from countdown_study.evaluation.evaluate import evaluate
    from countdown_study.policy import load_policy
    from countdown_study.runs.files import atomic_path, atomic_write_json
    from countdown_study.training.device import describe_device, prepare_device, resolve_device

    check_counts(args)
    sampling = sampling_from_args(args)
    device = resolve_device(args.device)  # before anything loads: cuda without a GPU fails at once
    tasks = load_tasks(args.tasks)  # before the policy: a bad or empty task source fails at once
    if not tasks:
        raise ValueError(f"--tasks {args.tasks!r} holds no tasks")
    prepare_device(device)
    model, tokenizer = load_policy(args.policy, tokenizer=args.tokenizer, device=device)
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
            **(describe_device(device) if args.device != DEFAULT_DEVICE else {}),
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
