"""``countdown-study sft``: train the embedded policy on solver-made traces as a run-store run.

The run lands in ``<root>/sft-<hash>/`` (``training.sft``): a finished run is loaded, an unfinished
one resumes from its checkpoint. ``--resume-from`` continues another run's checkpoint whose schedule
differs only in length (before both decay starts). ``--ship`` copies the final weights to the
package's embedded checkpoint, measures them on the held-out tasks and records it in ``sft.json``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from countdown_study.training.sft import SFTConfig

CONFIG_OPTIONS = ("steps", "seed", "threads", "batch_size", "lr", "multi_attempt_share", "checkpoint_every")
"""``SFTConfig`` fields the command line sets; an option left out keeps the config's default."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``countdown-study sft``; unset options keep ``SFTConfig``'s defaults.

    Parsing imports no torch: the defaults are read from ``SFTConfig`` when the command runs.
    """
    parser.add_argument("--root", type=Path, default=None, help="run store folder (default results/runs)")
    parser.add_argument("--steps", type=int, help="optimizer steps")
    parser.add_argument("--seed", type=int, help="run seed")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument("--batch-size", type=int, help="traces per step")
    parser.add_argument("--lr", type=float, help="peak learning rate")
    parser.add_argument("--multi-attempt-share", type=float, help="share of multi-attempt traces")
    parser.add_argument("--checkpoint-every", type=int, help="steps between checkpoints")
    parser.add_argument(
        "--resume-from",
        type=Path,
        default=None,
        metavar="PATH",
        help="another SFT run's checkpoint (last.pt or its run folder) to continue when this run has none; "
        "only a schedule of another length, checkpointed before both decay starts",
    )
    parser.add_argument(
        "--ship", action="store_true", help="save the final model to the package's embedded checkpoint"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    """The run's config: ``SFTConfig`` defaults with the command line's options."""
    from countdown_study.training.sft import SFTConfig

    changes = {name: getattr(args, name) for name in CONFIG_OPTIONS if getattr(args, name) is not None}
    return replace(SFTConfig(), **changes)


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study sft``."""
    from countdown_study.training.sft import (
        measure_quality,
        quality_shortfalls,
        record_quality,
        ship,
        train_sft,
    )

    config = config_from_args(args)
    store = train_sft(config, root=args.root, resume_from=args.resume_from, progress=not args.no_progress)
    facts = store.load_results()
    print(f"run {store.path}: {facts['steps_done']} steps in {facts['wall_seconds']:.0f} s; "
          f"final loss {facts['final_loss']:.4f}")  # fmt: skip
    if args.ship:
        dest = ship(store)
        quality = measure_quality(config, dest, store.path)
        record_quality(quality, dest)
        print(f"shipped to {dest}: pass@1 {quality['pass@1']:.3f}, pass@16 {quality['pass@16']:.3f}, "
              f"well-formed {quality['well_formed']:.3f}")  # fmt: skip
        for problem in quality_shortfalls(quality):
            print(f"quality goal missed: {problem}")
    return 0
