"""``countdown-study train``: one RLOO run into the run store, its evaluation summary printed as JSON."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from countdown_study.training.device import DEVICES

PRESET_NAMES = ("cpu", "paper")
"""The names of ``training.loop.PRESETS`` in sorted order, written out so that parsing imports no torch
(``tests/test_cli.py`` holds them equal)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study train``."""
    parser.add_argument("--preset", default="cpu", choices=PRESET_NAMES, help="starting config (default cpu)")
    parser.add_argument("--policy", help="starting policy: 'embedded', a Hugging Face id or a folder")
    parser.add_argument("--sampler", help="sampler name (default uniform)")
    parser.add_argument("--steps", type=int, help="optimizer steps")
    parser.add_argument("--prompts-per-step", type=int, help="P, prompts per step")
    parser.add_argument("--group-size", type=int, help="G, samples per prompt")
    parser.add_argument("--lr", type=float, help="learning rate")
    parser.add_argument("--eval-limit", type=int, help="evaluation tasks")
    parser.add_argument("--seed", type=int, help="run seed")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="where the run trains: cpu (the presets'), cuda, or auto (cuda if present)",
    )
    parser.add_argument("--root", default=None, help="run store folder (default results/runs)")


def cli_main(args: argparse.Namespace) -> int:
    """Train (or load) the run and print its evaluation summary as JSON."""
    from countdown_study.training.loop import preset, train

    fields = ("sampler", "steps", "prompts_per_step", "group_size", "lr", "seed", "threads", "device")
    changes = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
    base = preset(args.preset)
    data = {f: getattr(args, f) for f in ("policy", "eval_limit") if getattr(args, f) is not None}
    config = replace(base, data=replace(base.data, **data), **changes)
    store = train(config, root=args.root)
    print(json.dumps({"run": str(store.path), **store.load_results()["eval"]}, indent=1, default=str))
    return 0
