"""``countdown-study sft``: train a shipped policy on solver-made traces as a run-store run.

``--recipe`` picks the policy (``training.sft.RECIPES``): ``solver`` (default) makes ``embedded``,
``search`` makes ``embedded-search`` (continued from ``embedded`` on search traces), ``small`` and ``large``
make ``embedded-small`` and ``embedded-large`` (the solver recipe at other sizes). The run lands in
``<root>/sft-<hash>/`` (``training.sft``): a finished run is loaded, an unfinished one resumes from its
checkpoint. ``--resume-from`` continues another run's checkpoint whose schedule differs only in length
(before both decay starts). ``--ship`` copies the final weights to the recipe's package folder,
measures them on the held-out tasks as the recipe says and records it in ``sft.json`` (``large`` stores its
weights in bf16). ``--reproduce`` trains the shipped recipe again from a clean commit into another store
(``paths.remake_runs_dir``) and records in the shipped ``sft.json`` whether its weights came out bit-identical
(``training.reproduce``).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from countdown_study.cli import ship_options
from countdown_study.cli.bounds import (
    check_batch_memory,
    check_count,
    check_output_folder,
    check_steps,
    check_threads,
    device_memory,
    kv_bytes_per_token,
)
from countdown_study.paths import remake_runs_dir, runs_dir
from countdown_study.training.device import DEVICES

if TYPE_CHECKING:
    from countdown_study.training.sft import SFTConfig

CONFIG_OPTIONS = (
    "steps", "seed", "threads", "batch_size", "lr", "multi_attempt_share", "checkpoint_every", "device",
)  # fmt: skip
"""``SFTConfig`` fields the command line sets; an option left out keeps the recipe's value."""
RECIPE_NAMES = ("solver", "search", "small", "large")
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
        help="which shipped policy: solver (embedded, 3.4M parameters, the default), search "
        "(embedded-search), small (embedded-small, 0.86M) or large (embedded-large, 11.5M)",
    )
    parser.add_argument("--root", type=Path, default=None, help="run store folder (default: results/runs)")
    parser.add_argument("--steps", type=int, help="optimizer steps (default: the recipe's)")
    parser.add_argument("--seed", type=int, help="run seed (default: the recipe's)")
    parser.add_argument("--threads", type=int, help="torch threads, at most the CPUs (default: the recipe's)")
    parser.add_argument("--batch-size", type=int, help="traces per step (default: the recipe's)")
    parser.add_argument("--lr", type=float, help="peak learning rate (default: the recipe's)")
    parser.add_argument(
        "--multi-attempt-share", type=float, help="share of multi-attempt traces (default: the recipe's)"
    )
    parser.add_argument(
        "--checkpoint-every", type=int, help="steps between checkpoints (default: the recipe's)"
    )
    parser.add_argument(
        "--device", choices=DEVICES, help="where the model trains (default: cpu; auto: cuda if present)"
    )
    parser.add_argument(
        "--resume-from",
        type=Path,
        default=None,
        metavar="PATH",
        help="another SFT run's checkpoint (last.pt or its run folder) to continue when this run has none; "
        "only a schedule of another length, checkpointed before both decay starts (default: none)",
    )
    ship_options(parser, "save the final model to the recipe's package checkpoint", "sft.json")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar of a terminal")


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    """The run's config: the recipe's config with the command line's options."""
    from countdown_study.training.sft import RECIPES

    changes = {name: getattr(args, name) for name in CONFIG_OPTIONS if getattr(args, name) is not None}
    return replace(RECIPES[args.recipe].config, **changes)


def check_args(args: argparse.Namespace) -> None:
    """The checks that need no torch: sizes within their bounds, a writable store."""
    check_steps("--steps", args.steps)
    check_threads("--threads", args.threads)
    check_count("--batch-size", args.batch_size)
    check_count("--checkpoint-every", args.checkpoint_every)
    check_output_folder("--root", args.root)


def check_memory(config: SFTConfig) -> None:
    """Refuse a batch of ``batch_size`` traces of the model's full length that cannot fit in memory."""
    from countdown_study.training.device import resolve_device

    model = config.model
    check_batch_memory(
        f"--batch-size {config.batch_size}",
        config.batch_size,
        model.max_positions,
        kv_bytes_per_token(model.num_layers, model.hidden_size),
        device_memory(resolve_device(config.device).type),
    )


def output_folders(args: argparse.Namespace) -> list[Path]:
    """The run store (where a full disk would show)."""
    return [Path(args.root) if args.root else runs_dir()]


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study sft``."""
    from countdown_study.cli import hide_library_bars_unless, interactive

    check_args(args)
    from countdown_study.training.sft import (
        RECIPES,
        measure_quality,
        quality_shortfalls,
        record_quality,
        ship,
        train_sft,
    )

    recipe, config = RECIPES[args.recipe], config_from_args(args)
    check_memory(config)
    show = interactive() and not args.no_progress
    hide_library_bars_unless(show)
    if args.reproduce:
        return reproduce(args, recipe, config, show)
    store = train_sft(config, root=args.root, resume_from=args.resume_from, progress=show)
    facts = store.load_results()
    print(f"run {store.path}: {facts['steps_done']} steps in {facts['wall_seconds']:.0f} s; "
          f"final loss {facts['final_loss']:.4f}")  # fmt: skip
    if args.ship:
        dest = ship(store, recipe.dest, recipe.weights_dtype)
        quality = measure_quality(config, dest, store.path, sampling=recipe.sampling, policy=recipe.policy)
        record_quality(quality, dest)
        print(f"shipped {recipe.policy} to {dest}: pass@1 {quality['pass@1']:.3f}, "
              f"pass@16 {quality['pass@16']:.3f}, well-formed {quality['well_formed']:.3f}, "
              f"truncated {quality.get('truncated', float('nan')):.4f}")  # fmt: skip
        print("goal: " + ", ".join(f"{key} {quality[key]:.4f}" for key in recipe.goal))
        for problem in quality_shortfalls(quality, recipe.goal):
            print(f"quality goal missed: {problem}")
    return 0


def reproduce(args: argparse.Namespace, recipe, config: SFTConfig, show: bool) -> int:
    """``--reproduce``: the recipe's recorded config trained again from a clean commit, compared with the
    shipped weights, the finding written into its ``sft.json`` (``training.reproduce.remake``); 0 when
    bit-identical, else 1."""
    from countdown_study.training.reproduce import remake, summary
    from countdown_study.training.sft import SHIPPED_INFO_FILE, config_to_dict, ship, train_sft

    record = remake(
        recipe.policy,
        recipe.dest / SHIPPED_INFO_FILE,
        config_to_dict(config),
        lambda: train_sft(
            config, root=args.root or remake_runs_dir(), resume_from=args.resume_from, progress=show
        ),
        lambda run, dest: ship(run, dest, recipe.weights_dtype),
        f"countdown-study sft --recipe {args.recipe} --reproduce",
    )
    print(summary(recipe.policy, record))
    return 0 if record["identical"] else 1
