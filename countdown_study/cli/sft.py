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

from countdown_study.training.sft import (
    SFTConfig,
    measure_quality,
    quality_shortfalls,
    record_quality,
    ship,
    train_sft,
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``countdown-study sft``; unset options keep ``SFTConfig``'s defaults."""
    default = SFTConfig()
    parser.add_argument("--root", type=Path, default=None, help="run store folder (default results/runs)")
    parser.add_argument("--steps", type=int, default=default.steps, help="optimizer steps")
    parser.add_argument("--seed", type=int, default=default.seed, help="run seed")
    parser.add_argument("--threads", type=int, default=default.threads, help="torch threads")
    parser.add_argument("--batch-size", type=int, default=default.batch_size, help="traces per step")
    parser.add_argument("--lr", type=float, default=default.lr, help="peak learning rate")
    parser.add_argument(
        "--multi-attempt-share",
        type=float,
        default=default.multi_attempt_share,
        help="share of multi-attempt traces",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=default.checkpoint_every, help="steps between checkpoints"
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
        "--ship", action="store_true", help="save the final model to the package's embedded checkpoint"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    """The run's config: ``SFTConfig`` defaults with the command line's options."""
    return replace(
        SFTConfig(),
        steps=args.steps,
        seed=args.seed,
        threads=args.threads,
        batch_size=args.batch_size,
        lr=args.lr,
        multi_attempt_share=args.multi_attempt_share,
        checkpoint_every=args.checkpoint_every,
    )


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study sft``."""
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
