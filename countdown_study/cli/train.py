"""``countdown-study train``: one RLOO run into the run store, its evaluation summary printed as JSON.

Sizes are bounded before any run folder is made (``cli.bounds``): steps, threads and the evaluation
size before torch loads; a policy folder that cannot load is refused; the step's batch must fit in the
memory available.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from countdown_study.cli.bounds import (
    HELD_OUT_TASKS,
    PROMPT_TOKENS,
    SHIPPED_POLICIES,
    check_batch_memory,
    check_count,
    check_eval_limit,
    check_output_folder,
    check_policy_folder,
    check_steps,
    check_threads,
    device_memory,
    policy_bytes_per_token,
    shipped_policy_dir,
)
from countdown_study.paths import runs_dir
from countdown_study.rollout.sampling import ENGINES
from countdown_study.runs.device import DEVICES

PRESET_NAMES = ("cpu", "paper")
"""The names of ``training.rloo_config.PRESETS`` in sorted order, written out so that parsing imports no
torch (``tests/test_cli.py`` holds them equal)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study train``; an option left out keeps the preset's value."""
    parser.add_argument("--preset", default="cpu", choices=PRESET_NAMES, help="starting config")
    parser.add_argument(
        "--policy",
        help="starting policy: 'embedded', a Hugging Face id or a folder (default: the preset's)",
    )
    parser.add_argument("--sampler", help="sampler name (default: the preset's, uniform)")
    parser.add_argument("--steps", type=int, help="optimizer steps (default: the preset's)")
    parser.add_argument("--prompts-per-step", type=int, help="P, prompts per step (default: the preset's)")
    parser.add_argument("--group-size", type=int, help="G, samples per prompt (default: the preset's)")
    parser.add_argument("--lr", type=float, help="learning rate (default: the preset's)")
    parser.add_argument(
        "--eval-limit", type=int,
        help=f"held-out evaluation tasks, at most {HELD_OUT_TASKS:,} (default: the preset's)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, help="run seed (default: the preset's)")
    parser.add_argument("--threads", type=int, help="torch threads, at most the CPUs (default: the preset's)")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="where the run trains: cpu, cuda, or auto (cuda if present) (default: the preset's, cpu)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        help="rollout engine of training and evaluation (default: the preset's; vllm needs the vllm extra)",
    )
    parser.add_argument("--root", default=None, help="run store folder (default: results/runs)")


def check_args(args: argparse.Namespace) -> None:
    """The checks that need no torch: sizes within their bounds, a writable store, a loadable policy
    folder."""
    check_steps("--steps", args.steps)
    check_count("--prompts-per-step", args.prompts_per_step)
    check_count("--group-size", args.group_size)
    check_eval_limit("--eval-limit", args.eval_limit)
    check_threads("--threads", args.threads)
    check_output_folder("--root", args.root)
    folder = shipped_policy_dir(args.policy) if args.policy else None
    if folder is not None and (args.policy not in SHIPPED_POLICIES or folder.is_dir()):
        check_policy_folder("--policy", folder)


def output_folders(args: argparse.Namespace) -> list[Path]:
    """The run store (where a full disk would show)."""
    return [Path(args.root) if args.root else runs_dir()]


def cli_main(args: argparse.Namespace) -> int:
    """Train (or load) the run and print its evaluation summary as JSON."""
    from countdown_study.cli import hide_library_bars_unless, interactive

    check_args(args)

    from countdown_study.runs.device import resolve_device
    from countdown_study.training.loop import on_engine, preset, train

    fields = ("sampler", "steps", "prompts_per_step", "group_size", "lr", "seed", "threads", "device")
    changes = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
    base = preset(args.preset)
    data = {f: getattr(args, f) for f in ("policy", "eval_limit") if getattr(args, f) is not None}
    config = replace(base, data=replace(base.data, **data), **changes)
    if args.engine is not None:  # training and evaluation on one engine
        config = on_engine(config, args.engine)
    check_batch_memory(
        f"--prompts-per-step {config.prompts_per_step} x --group-size {config.group_size}",
        config.prompts_per_step * config.group_size,
        PROMPT_TOKENS + config.sampling.max_new_tokens,
        policy_bytes_per_token(shipped_policy_dir(config.data.policy)),
        device_memory(resolve_device(config.device).type),
    )
    hide_library_bars_unless(interactive())
    store = train(config, root=args.root, progress=interactive())
    print(json.dumps({"run": str(store.path), **store.load_results()["eval"]}, indent=1, default=str))
    return 0
