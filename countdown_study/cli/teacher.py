"""``countdown-study teacher``: train the package's task proposer (report 004's teacher) as a run-store run.

The run lands in ``<root>/teacher-<hash>/`` (``training.teacher_train``; a finished run is loaded).
``--ship`` copies its weights to the package's ``checkpoints/teacher`` and measures them: at least
500 proposals per tier through the rule-based generator's checks, compared with that generator, all
recorded in ``teacher.json``. ``countdown-study teacher --ship`` regenerates the shipped teacher;
``--reproduce`` trains the shipped teacher's config again from a clean commit into another store
(``paths.remake_runs_dir``) and records in ``teacher.json`` whether its weights came out bit-identical
(``training.reproduce``).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from countdown_study.cli import ship_options
from countdown_study.cli.bounds import (
    check_batch_memory,
    check_count,
    check_output_folder,
    check_steps,
    check_threads,
    host_memory,
    kv_bytes_per_token,
)
from countdown_study.paths import remake_runs_dir, runs_dir

CONFIG_OPTIONS = ("steps", "seed", "threads", "batch_size", "lr")
"""``ProposerConfig`` fields the command line sets; an option left out keeps the config's default."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``countdown-study teacher``; parsing imports no torch."""
    parser.add_argument("--root", type=Path, default=None, help="run store folder (default: results/runs)")
    parser.add_argument("--steps", type=int, help="optimizer steps (default: ProposerConfig's)")
    parser.add_argument("--seed", type=int, help="run seed (default: ProposerConfig's)")
    parser.add_argument("--threads", type=int, help="torch threads, at most the CPUs (default: 1)")
    parser.add_argument("--batch-size", type=int, help="examples per step (default: ProposerConfig's)")
    parser.add_argument("--lr", type=float, help="peak learning rate (default: ProposerConfig's)")
    parser.add_argument("--proposals", type=int, default=512, help="proposals per tier when measuring")
    ship_options(parser, "copy the proposer to the package's checkpoints/teacher, measured", "teacher.json")
    parser.add_argument("--no-progress", action="store_true", help="print no step lines and no loading bars")


def check_args(args: argparse.Namespace) -> None:
    """The checks that need no torch: sizes within their bounds, a writable store."""
    check_steps("--steps", args.steps)
    check_threads("--threads", args.threads)
    check_count("--batch-size", args.batch_size)
    check_count("--proposals", args.proposals)
    check_output_folder("--root", args.root)


def output_folders(args: argparse.Namespace) -> list[Path]:
    """The run store (where a full disk would show)."""
    return [Path(args.root) if args.root else runs_dir()]


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study teacher``."""
    from countdown_study.cli import hide_library_bars_unless

    check_args(args)
    from countdown_study.training.teacher_train import (
        ProposerConfig,
        measure_teacher,
        record_measurement,
        ship,
        train_proposer,
    )

    changes = {name: getattr(args, name) for name in CONFIG_OPTIONS if getattr(args, name) is not None}
    config = replace(ProposerConfig(), **changes)
    check_batch_memory(  # the proposer trains on the host
        f"--batch-size {config.batch_size}",
        config.batch_size,
        config.model.max_positions,
        kv_bytes_per_token(config.model.num_layers, config.model.hidden_size),
        host_memory(),
    )
    hide_library_bars_unless(not args.no_progress)
    if args.reproduce:
        return reproduce(args, config)
    store = train_proposer(config, root=args.root, progress=not args.no_progress)
    facts = store.load_results()
    print(f"run {store.path}: {facts['steps_done']} steps in {facts['wall_seconds']:.0f} s; "
          f"final loss {facts['final_loss']:.4f}")  # fmt: skip
    if args.ship:
        dest = ship(store)
        measured = measure_teacher("teacher", config, proposals=args.proposals)
        record_measurement(measured, dest)
        rates = ", ".join(f"{tier} {rate:.3f}" for tier, rate in measured["acceptance"].items())
        print(f"shipped to {dest}: acceptance {rates}")
        if measured["acceptance"]["overall"] < measured["goal"]:
            print(f"acceptance goal missed: {measured['acceptance']['overall']:.3f} < {measured['goal']}")
    return 0


def reproduce(args: argparse.Namespace, config) -> int:
    """``--reproduce``: the shipped teacher's recorded config trained again from a clean commit, compared
    with its weights, the finding written into ``teacher.json`` (``training.reproduce.remake``); 0 when
    bit-identical, else 1."""
    import json
    from dataclasses import asdict

    from countdown_study.training.reproduce import remake, summary
    from countdown_study.training.teacher import TEACHER_INFO_FILE
    from countdown_study.training.teacher_train import TEACHER_CHECKPOINT_DIR, ship, train_proposer

    record = remake(
        "teacher",
        TEACHER_CHECKPOINT_DIR / TEACHER_INFO_FILE,
        json.loads(json.dumps(asdict(config))),
        lambda: train_proposer(config, root=args.root or remake_runs_dir(), progress=not args.no_progress),
        ship,
        "countdown-study teacher --reproduce",
    )
    print(summary("teacher", record))
    return 0 if record["identical"] else 1
