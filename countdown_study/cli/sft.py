"""``countdown-study sft``: train a shipped policy on solver-made traces as a run-store run.

``--recipe`` picks the policy (``training.sft.RECIPES``): ``solver`` (default) makes ``embedded``,
``search`` makes ``embedded-search`` (continued from ``embedded`` on search traces). The run lands in
``<root>/sft-<hash>/`` (``training.sft``): a finished run is loaded, an unfinished one resumes from its
checkpoint. ``--resume-from`` continues another run's checkpoint whose schedule differs only in length
(before both decay starts). ``--ship`` copies the final weights to the recipe's package folder,
measures them on the held-out tasks as the recipe says and records it in ``sft.json``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from countdown_study.training.device import DEVICES

if TYPE_CHECKING:
    from countdown_study.training.sft import SFTConfig

CONFIG_OPTIONS = (
    "steps", "seed", "threads", "batch_size", "lr", "multi_attempt_share", "checkpoint_every", "device",
)  # fmt: skip
"""``SFTConfig`` fields the command line sets; an option left out keeps the recipe's value."""
RECIPE_NAMES = ("solver", "search")
"""The keys of ``training.sft.RECIPES`` (listed here so that parsing imports no torch; a test holds them
equal)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``countdown-study sft``; unset options keep the recipe's config.

    Parsing imports no torch: the recipe's config is read from ``training.sft`` when the command runs.
    """
    parser.add_argument(
        "--recipe",
        choices=RECIPE_NAMES,
        default="solver",
        help="which shipped policy: solver (embedded, the default) or search (embedded-search)",
    )
    parser.add_argument("--root", type=Path, default=None, help="run store folder (default results/runs)")
    parser.add_argument("--steps", type=int, help="optimizer steps")
    parser.add_argument("--seed", type=int, help="run seed")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument("--batch-size", type=int, help="traces per step")
    parser.add_argument("--lr", type=float, help="peak learning rate")
    parser.add_argument("--multi-attempt-share", type=float, help="share of multi-attempt traces")
    parser.add_argument("--checkpoint-every", type=int, help="steps between checkpoints")
    parser.add_argument(
        "--device", choices=DEVICES, help="where the model trains (default cpu; auto: cuda if present)"
    )
    parser.add_argument(
        "--resume-from",
        type=Path,
        default=None,
        metavar="PATH",
        help="another SFT run's checkpoint (last.pt or its run folder) to continue when this run has none; "
        "only a schedule of another length, checkpointed before both decay starts",
    )
    parser.add_argument(
        "--ship", action="store_true", help="save the final model to the recipe's package checkpoint"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    """The run's config: the recipe's config with the command line's options."""
    from countdown_study.training.sft import RECIPES

    changes = {name: getattr(args, name) for name in CONFIG_OPTIONS if getattr(args, name) is not None}
    return replace(RECIPES[args.recipe].config, **changes)


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study sft``."""
    from countdown_study.training.sft import (
        RECIPES,
        measure_quality,
        quality_shortfalls,
        record_quality,
        ship,
        train_sft,
    )

    recipe, config = RECIPES[args.recipe], config_from_args(args)
    store = train_sft(config, root=args.root, resume_from=args.resume_from, progress=not args.no_progress)
    facts = store.load_results()
    print(f"run {store.path}: {facts['steps_done']} steps in {facts['wall_seconds']:.0f} s; "
          f"final loss {facts['final_loss']:.4f}")  # fmt: skip
    if args.ship:
        dest = ship(store, recipe.dest)
        quality = measure_quality(config, dest, store.path, sampling=recipe.sampling, policy=recipe.policy)
        record_quality(quality, dest)
        print(f"shipped {recipe.policy} to {dest}: pass@1 {quality['pass@1']:.3f}, "
              f"pass@16 {quality['pass@16']:.3f}, well-formed {quality['well_formed']:.3f}")  # fmt: skip
        print("goal: " + ", ".join(f"{key} {quality[key]:.4f}" for key in recipe.goal))
        for problem in quality_shortfalls(quality, recipe.goal):
            print(f"quality goal missed: {problem}")
    return 0
