"""``countdown-study eval``: evaluate a policy on a task source; pass@k, mean score, well-formed rate.

Sampling defaults to the study's evaluation (``evaluation.defaults.EVAL_SAMPLING``), at the policy's own
recorded budget where its folder records one (``recorded_budget``), else the study's. Before anything
loads, the counts, the output paths and a policy folder are checked; tasks repeated in the source are
evaluated once, and tasks without a solution are counted, each with a warning; so is a budget that cut
more than 5% of the rollouts.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from countdown_study.cli.bounds import (
    PROMPT_TOKENS,
    SHIPPED_POLICIES,
    check_batch_memory,
    check_output_file,
    check_policy_folder,
    device_memory,
    policy_bytes_per_token,
    shipped_policy_dir,
)
from countdown_study.evaluation.defaults import EVAL_MAX_NEW_TOKENS, EVAL_N, EVAL_SAMPLING, default_budget
from countdown_study.rollout.sampling import ENGINES
from countdown_study.runs.device import DEFAULT_DEVICE, DEVICES

if TYPE_CHECKING:
    from countdown_study.countdown.task import Task
    from countdown_study.rollout.sampling import SamplingConfig

TEMPLATE_NAMES = ("compact", "qwen_chat", "tinyzero_base")
"""The names of ``countdown.prompts.TEMPLATES`` in sorted order, written out so that parsing imports
nothing heavy (``tests/test_cli.py`` holds them equal)."""
SAMPLING_OPTIONS = ("engine", "temperature", "top_p", "top_k", "max_new_tokens")
"""``SamplingConfig`` fields the command line sets; an option left out keeps ``EVAL_SAMPLING``'s value
(``max_new_tokens``: the policy's budget, ``default_budget``)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study eval``; the sampling options default to ``EVAL_SAMPLING``'s values
    (torch-free: ``evaluation.defaults``)."""
    parser.add_argument("--policy", default="embedded", help="'embedded', a Hugging Face id or a folder")
    parser.add_argument(
        "--tokenizer", default=None, help="where the tokenizer comes from (default: the policy)"
    )
    parser.add_argument("--tasks", required=True, help="'generated:COUNT:SEED', a Hugging Face id or a file")
    parser.add_argument("--n", type=int, default=EVAL_N, help="samples per task")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--json", default=None, help="write the summary here (default: standard output)")
    parser.add_argument(
        "--table", default=None, help="write the per-sample table here, parquet (default: not written)"
    )
    parser.add_argument(
        "--engine",
        default=EVAL_SAMPLING.engine,
        choices=ENGINES,
        help=f"rollout engine (default {EVAL_SAMPLING.engine}; vllm needs the vllm extra)",
    )
    parser.add_argument(
        "--temperature", type=float, default=EVAL_SAMPLING.temperature, help="softmax temperature"
    )
    parser.add_argument(
        "--top-p", type=float, default=EVAL_SAMPLING.top_p, help="nucleus mass kept (1.0: off)"
    )
    parser.add_argument("--top-k", type=int, default=EVAL_SAMPLING.top_k, help="0: off")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="longest rollout (default: the budget the policy's folder records its quality at, else the "
        f"study's {EVAL_MAX_NEW_TOKENS})",
    )
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
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar of a terminal")


def sampling_from_args(args: argparse.Namespace) -> SamplingConfig:
    """``EVAL_SAMPLING`` with the command line's sampling options; ``--max-new-tokens`` left out is the
    policy's budget (``default_budget`` of its folder)."""
    changes = {name: getattr(args, name) for name in SAMPLING_OPTIONS if getattr(args, name) is not None}
    if args.max_new_tokens is None:
        changes["max_new_tokens"] = default_budget(shipped_policy_dir(str(args.policy)))
    return replace(EVAL_SAMPLING, **changes, stop_at_answer=args.stop_at_answer)


def check_counts(args: argparse.Namespace) -> None:
    """Refuse ``--n`` or ``--batch-size`` below 1, naming the option (before anything loads)."""
    for option, value in (("--n", args.n), ("--batch-size", args.batch_size)):
        if value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")


def check_paths(args: argparse.Namespace) -> None:
    """Refuse an output that cannot be written and a policy folder that cannot load, before the work."""
    check_output_file("--json", args.json)
    check_output_file("--table", args.table)
    folder = shipped_policy_dir(str(args.policy))
    if folder is not None and (args.policy not in SHIPPED_POLICIES or folder.is_dir()):
        check_policy_folder("--policy", folder)  # a shipped one never made: load_policy says how to make it


def output_folders(args: argparse.Namespace) -> list[Path]:
    """The folders of ``--json`` and ``--table`` (where a full disk would show)."""
    return [Path(p).expanduser().absolute().parent for p in (args.json, args.table) if p]


def task_set_warnings(tasks: list[Task]) -> tuple[list[Task], list[str]]:
    """The distinct tasks (first of each key, ``dedupe``) and a warning for repeated tasks and one for
    tasks without a solution (the exact solver, ``solvable``): they count as failures."""
    from countdown_study.countdown import dedupe, solvable

    unique = dedupe(tasks)
    found = []
    if len(unique) < len(tasks):
        found.append(
            f"{len(tasks) - len(unique)} of {len(tasks)} tasks repeat an earlier task (same numbers and "
            "target): each is evaluated once"
        )
    unsolvable = int((~solvable(unique)).sum()) if unique else 0
    if unsolvable:
        found.append(
            f"{unsolvable} of {len(unique)} tasks have no solution (exact solver): they count as failures"
        )
    return unique, found


def warn(line: str) -> None:
    """One warning line on standard error."""
    print(f"countdown-study eval: warning: {line}", file=sys.stderr)


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study eval``: load, evaluate, write the summary JSON (and the table)."""
    from countdown_study.cli import hide_library_bars_unless, interactive

    check_counts(args)
    check_paths(args)
    sampling = sampling_from_args(args)
    from countdown_study.countdown import load_tasks  # no torch: a bad task source fails at once

    tasks = load_tasks(args.tasks)
    if not tasks:
        raise ValueError(f"--tasks {args.tasks!r} holds no tasks")
    tasks, problems = task_set_warnings(tasks)
    for line in problems:
        warn(line)

    from countdown_study.evaluation.defaults import truncation_warning
    from countdown_study.evaluation.evaluate import evaluate
    from countdown_study.policy import load_policy
    from countdown_study.runs.device import describe_device, prepare_device, resolve_device
    from countdown_study.runs.files import atomic_path, atomic_write_json

    device = resolve_device(args.device)  # before the policy loads: cuda without a GPU fails at once
    check_batch_memory(
        f"--batch-size {args.batch_size} x --n {args.n}",
        min(args.batch_size, len(tasks)) * args.n,
        PROMPT_TOKENS + sampling.max_new_tokens,
        policy_bytes_per_token(shipped_policy_dir(str(args.policy))),
        device_memory(device.type),
    )
    prepare_device(device)
    show = interactive() and not args.no_progress
    hide_library_bars_unless(show)
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
        progress=show,
    )
    cut = truncation_warning(result.summary.get("truncated"), sampling.max_new_tokens)
    if cut:
        warn(cut)
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
