"""``countdown-study runs``: check the run store (``verify``: every finished run against its recorded
checksums) or say how far the study grid has come (``status``: the notebooks' planned runs, finished,
started or waiting, at a preset)."""

from __future__ import annotations

import argparse
from pathlib import Path

from countdown_study.cli.run import PRESET_NAMES
from countdown_study.paths import runs_dir


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study runs``: an action, each with its own options, so that notebooks
    may follow the options (``runs status --preset full 06``) as well as precede them."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(parser))
    verify = actions.add_parser("verify", help="check every finished run against its recorded checksums")
    status = actions.add_parser("status", help="the notebooks' planned runs at a preset and where they stand")
    status.add_argument(
        "notebooks", nargs="*", help="notebook names, stems or number prefixes (default: all)"
    )
    status.add_argument("--preset", choices=PRESET_NAMES, default="quick", help="the preset (default quick)")
    status.add_argument("--runs", action="store_true", help="also list every unfinished run")
    for action in (verify, status):
        action.add_argument("--root", default=None, help="run store folder (default results/runs)")


def cli_main(args: argparse.Namespace) -> int:
    """``verify``: one line per problem, then a count; exit 1 when a finished run is corrupt. ``status``:
    runs per state for each notebook and in all, with the started runs' steps; exit 0."""
    root = Path(args.root) if args.root else runs_dir()
    if args.action == "status":
        return status(args, root)
    from countdown_study.runs.store import RunStore, is_finished

    if not root.is_dir():
        raise FileNotFoundError(f"no run store at {root}")
    finished = sorted(p for p in root.iterdir() if is_finished(p))
    problems = [line for path in finished for line in RunStore(path.name, path, None).verify()]
    for line in problems:
        print(line)
    print(f"{len(finished)} finished runs checked in {root}; {len(problems)} problems")
    return 1 if problems else 0


def status(args: argparse.Namespace, root: Path) -> int:
    """Print ``study.grid.progress_summary`` of the notebooks at the preset, each started run's steps, and
    (``--runs``) every unfinished run."""
    import pandas as pd

    from countdown_study.study.grid import grid_progress, plan_grid, progress_summary
    from countdown_study.study.pipeline import list_notebooks

    notebooks = [nb.stem for nb in list_notebooks(args.notebooks)]
    progress = grid_progress(plan_grid(notebooks, args.preset), root)
    print(f"runs of the {args.preset} preset in {root}")
    print(progress_summary(progress).to_string(index=False))
    unfinished = progress[progress["state"] != "finished"].drop_duplicates("run_id")
    shown = unfinished if args.runs else unfinished[unfinished["state"] == "started"]
    for run in shown.itertuples():
        planned = "" if run.steps is pd.NA else f"/{run.steps}"
        steps = f"{run.steps_logged}{planned} steps"
        print(f"  {run.state:8} {run.run_id}  {run.notebook}: {run.rows}  [{steps}]")
    return 0
