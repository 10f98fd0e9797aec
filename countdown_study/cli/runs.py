"""``countdown-study runs verify``: check every finished run of a store against its recorded checksums."""

from __future__ import annotations

import argparse
from pathlib import Path

from countdown_study.paths import runs_dir


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study runs``."""
    parser.add_argument("action", choices=("verify",), help="verify: check every finished run")
    parser.add_argument("--root", default=None, help="run store folder (default results/runs)")


def cli_main(args: argparse.Namespace) -> int:
    """One line per problem, then a count; exit 1 when a finished run is corrupt."""
    from countdown_study.runs.store import RunStore, is_finished

    root = Path(args.root) if args.root else runs_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"no run store at {root}")
    finished = sorted(p for p in root.iterdir() if is_finished(p))
    problems = [line for path in finished for line in RunStore(path.name, path, None).verify()]
    for line in problems:
        print(line)
    print(f"{len(finished)} finished runs checked in {root}; {len(problems)} problems")
    return 1 if problems else 0
