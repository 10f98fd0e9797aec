"""``countdown-study runs``: check the run store (``verify``: every finished run against its recorded
checksums), say how far the study grid has come (``status``: the notebooks' planned runs, finished,
started or waiting, at a preset), or set aside the finished runs made from a dirty tree or in another
environment than this one (``retire --dirty``, ``retire --other-environment``: moved out of the store, so that
the next ``countdown-study run`` trains them again from a clean commit, here)."""

from __future__ import annotations

import argparse
from pathlib import Path

from countdown_study.cli.run import PRESET_NAMES
from countdown_study.paths import runs_dir


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study runs``: an action, each with its own options, so that notebooks
    may follow the options (``runs status --preset full 06``) as well as precede them."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(parser))
    verify = actions.add_parser(
        "verify", help="check every finished run against its recorded checksums",
        description="Check every finished run of the store against the checksums recorded when it finished: "
        "one line per file that changed, then the count; exit 1 when a run is corrupt.",
    )  # fmt: skip
    status = actions.add_parser(
        "status", help="the notebooks' planned runs at a preset and where they stand",
        description="The runs the notebooks plan at a preset, counted per notebook as finished, started or "
        "waiting in the store, with each started run's steps (--runs: every unfinished run too).",
    )  # fmt: skip
    status.add_argument(
        "notebooks", nargs="*", help="notebook names, stems or number prefixes (default: all)"
    )
    status.add_argument("--preset", choices=PRESET_NAMES, default="quick", help="the preset (default quick)")
    status.add_argument("--runs", action="store_true", help="also list every unfinished run")
    status.add_argument(
        "--runs-per-gpu", type=int, default=None, metavar="K",
        help="also say how the local executor packs the runs here with K runs per GPU (runs at once, GPUs, "
        "CPU threads per run), as countdown-study run --executor local --runs-per-gpu K would (default: not)",
    )  # fmt: skip
    retire = actions.add_parser(
        "retire", help="move the finished runs made from a dirty tree or in another environment out of the store",
        description="Move every finished run whose provenance records uncommitted code changes (--dirty: "
        "git_dirty) or another environment than this process's (--other-environment: a package version, the "
        "Python version or the CPU capability that both record differs) out of the store into ROOT.retired/, "
        "so that the notebooks train it again under the same run id from a clean commit in this environment; "
        "one line per run with the reason, then the count.",
    )  # fmt: skip
    retire.add_argument("--dirty", action="store_true", help="runs made from a dirty tree")
    retire.add_argument(
        "--other-environment", action="store_true",
        help="runs made in another environment (packages, Python, CPU capability) than this one",
    )  # fmt: skip
    retire.add_argument("--dry-run", action="store_true", help="only list the runs (default: move them)")
    bring = actions.add_parser(
        "import", help="copy finished runs from another run store into this one",
        description="Copy every finished run of SOURCE (another clone's results/runs, a cluster's store) that "
        "checks against its recorded checksums and was made from a clean tree into the store, without its "
        "checkpoints or raw samples. A run the store holds with the same provenance and results is left as it "
        "is; one made here from a dirty tree or in another environment is replaced by an incoming run made "
        "from a clean tree in this environment (the old copy moved to ROOT.retired/); any other difference is "
        "a conflict and nothing is changed. One line per run not already here, then the counts; exit 1 when a "
        "run was refused.",
    )  # fmt: skip
    bring.add_argument("source", metavar="SOURCE", help="the run store to copy from")
    bring.add_argument("--dry-run", action="store_true", help="only list what would be copied")
    bring.add_argument("--root", default=None, help="run store folder to copy into (default results/runs)")
    retire.add_argument("--root", default=None, help="run store folder (default results/runs)")
    verify.add_argument("--root", default=None, help="run store folder (default results/runs)")
    status.add_argument(
        "--root", default=None,
        help="run store folder (default: the preset's, results/runs for full, results/presets/NAME/runs else)",
    )  # fmt: skip


def cli_main(args: argparse.Namespace) -> int:
    """``verify``: one line per problem (results or weights that differ from their recorded checksums), one
    per warning (final weights without checksums; tables in ``<root>/../tables`` whose runs come from
    different environments; one line counting the runs made from a dirty tree), then the counts; exit 1 when a finished run is corrupt. ``status``: runs per
    state for each notebook and in all, with the started runs' steps; exit 0."""
    root = Path(args.root) if args.root else runs_dir(getattr(args, "preset", "full"))
    if args.action == "status":
        return status(args, root)
    if args.action == "retire":
        return retire(root, args.dirty, args.other_environment, dry_run=args.dry_run)
    if args.action == "import":
        return import_runs(Path(args.source), root, dry_run=args.dry_run)
    from countdown_study import paths
    from countdown_study.runs.environments import table_environment_warnings
    from countdown_study.runs.provenance import dirty_provenance_warnings, shipped_dirty_warnings
    from countdown_study.runs.store import RunStore, is_finished

    if not root.is_dir():
        raise FileNotFoundError(f"no run store at {root}")
    finished = [RunStore(p.name, p, None) for p in sorted(root.iterdir()) if is_finished(p)]
    problems = [line for store in finished for line in store.verify()]
    notes = [line for store in finished for line in store.unchecked_weights()]
    notes += table_environment_warnings(root.parent / "tables", root)
    notes += dirty_provenance_warnings({store.run_id: store.provenance() for store in finished})
    notes += shipped_dirty_warnings(paths.CHECKPOINTS_DIR)
    for line in problems:
        print(line)
    for line in notes:
        print(f"warning: {line}")
    print(f"{len(finished)} finished runs checked in {root}; {len(problems)} problems; {len(notes)} warnings")
    return 1 if problems else 0


def status(args: argparse.Namespace, root: Path) -> int:
    """Print ``study.grid.progress_summary`` of the notebooks at the preset, each started run's steps,
    (``--runs``) every unfinished run, and (``--runs-per-gpu K``) how the local executor would pack the runs
    left on this machine."""
    import pandas as pd

    from countdown_study.study.grid import grid_progress, hours_left, plan_grid, progress_summary
    from countdown_study.study.pipeline import list_notebooks

    if args.runs_per_gpu is not None and args.runs_per_gpu < 1:
        raise ValueError(f"--runs-per-gpu must be at least 1, got {args.runs_per_gpu}")
    notebooks = [nb.stem for nb in list_notebooks(args.notebooks)]
    planned = plan_grid(notebooks, args.preset)
    progress = grid_progress(planned, root)
    print(f"runs of the {args.preset} preset in {root}")
    summary = progress_summary(progress)
    summary["hours_left"] = summary["notebook"].map(hours_left(progress)).round(1)
    print(summary.to_string(index=False, na_rep="?"))
    print(
        "hours_left: run-hours of the unfinished runs, each at the median wall time of finished runs of its row"
        " (? where none has finished); divide by the runs that go at once"
    )
    unfinished = progress[progress["state"] != "finished"].drop_duplicates("run_id")
    shown = unfinished if args.runs else unfinished[unfinished["state"] == "started"]
    for run in shown.itertuples():
        planned = "" if run.steps is pd.NA else f"/{run.steps}"
        steps = f"{run.steps_logged}{planned} steps"
        print(f"  {run.state:8} {run.run_id}  {run.notebook}: {run.rows}  [{steps}]")
    if args.runs_per_gpu is not None:
        left = set(unfinished["run_id"])
        print(packing_status([run for run in planned if run.run_id in left], args.runs_per_gpu))
    return 0


def packing_status(planned, runs_per_gpu: int) -> str:
    """The local executor's packing of the runs still to do (``study.grid.packing_lines``), or why it would be
    refused, after ``packing with K runs per GPU:``."""
    from countdown_study.runs.executor import ExecutorConfig
    from countdown_study.study.grid import packing_lines

    head = f"packing with {runs_per_gpu} runs per GPU:"
    if not planned:
        return f"{head} no run left to do"
    try:
        lines = packing_lines(planned, ExecutorConfig("local", runs_per_gpu=runs_per_gpu))
    except ValueError as err:
        return f"{head} refused here: {err}"
    return "\n".join([head, *(f"  {line}" for line in lines)])


def retire(root: Path, dirty: bool = False, other_environment: bool = False, dry_run: bool = False) -> int:
    """Move each finished run of ``root`` whose ``provenance.json`` records ``git_dirty`` (``dirty``) or another
    environment than this process's (``other_environment``: ``run_checks.environment_difference``) into
    ``<root>.retired/<run id>`` (``dry_run``: list them only); a run already retired under that id is an
    error, so nothing is overwritten. Prints one line per run with its reasons and the count; exit 0."""
    from countdown_study.runs.run_checks import environment_difference, this_environment
    from countdown_study.runs.store import RunStore, is_finished

    if not (dirty or other_environment):
        raise ValueError(
            "runs retire needs --dirty, --other-environment or both: which finished runs to move"
        )
    if not root.is_dir():
        raise FileNotFoundError(f"no run store at {root}")
    records = {p: RunStore(p.name, p, None).provenance() for p in sorted(root.iterdir()) if is_finished(p)}
    here = this_environment() if other_environment else None  # read once, not per run
    reasons: dict[Path, list[str]] = {}
    for path, record in records.items():
        why = []
        if dirty and record.get("git_dirty"):
            why.append(f"made at {(record.get('git_sha') or 'unknown')[:12]} with changes")
        differing = environment_difference(record, here) if other_environment else []
        if differing:
            why.append(f"made in another environment: {'; '.join(differing)}")
        if why:
            reasons[path] = why
    retired = root.with_name(root.name + ".retired")
    taken = [p.name for p in reasons if (retired / p.name).exists()]
    if taken:
        raise FileExistsError(f"already retired under {retired}: {', '.join(taken)}")
    for path, why in reasons.items():
        print(f"{'would retire' if dry_run else 'retired'} {path.name} ({'; '.join(why)})")
        if not dry_run:
            retired.mkdir(exist_ok=True)
            path.rename(retired / path.name)
    made = " or ".join(["from a dirty tree"] * dirty + ["in another environment"] * other_environment)
    verb = "would be moved" if dry_run else f"moved to {retired}"
    print(f"{len(reasons)} finished runs made {made} {verb}")
    return 0


IMPORT_VERBS = {"import": ("would import", "imported"), "replace": ("would replace", "replaced")}
"""How ``import_runs`` names each action that changes the store, in a dry run and otherwise."""


def import_runs(source: Path, root: Path, dry_run: bool = False) -> int:
    """Copy the finished runs of the store ``source`` into ``root`` as ``runs.transfer.plan_import`` decides
    (``dry_run``: list them only). Prints one line per run imported, replaced or refused, with its reason,
    then the counts; exit 1 when a run was refused, else 0."""
    from countdown_study.runs.run_checks import this_environment
    from countdown_study.runs.transfer import apply_import, plan_import

    plan = plan_import(source, root, this_environment())
    if not dry_run:
        apply_import(source, root, plan)
    for item in plan:
        if item.action == "same":
            continue
        verb = "refused" if item.action == "refuse" else IMPORT_VERBS[item.action][0 if dry_run else 1]
        print(f"{verb} {item.run_id}" + (f" ({item.reason})" if item.reason else ""))
    counts = {
        action: sum(item.action == action for item in plan)
        for action in ("import", "replace", "same", "refuse")
    }
    done = "would be" if dry_run else "were"
    print(
        f"{len(plan)} finished runs in {source}: {counts['import']} {done} imported, {counts['replace']} {done} "
        f"replaced, {counts['same']} already here, {counts['refuse']} refused"
    )
    return 1 if counts["refuse"] else 0
