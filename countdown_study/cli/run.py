"""``countdown-study run [NOTEBOOK ...] --preset tiny|quick|full``: the study notebooks through papermill.

With ``--executor local|ray`` the runs of the selected notebooks are trained first, each in a worker
(``study.grid.train_grid``: a process pool on this machine, or Ray tasks on the cluster at ``--address``);
the notebooks then find every run finished and load it. Without it each notebook trains its own runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from countdown_study.paths import display_path, figures_dir, notebooks_dir, preset_dir, runs_dir, tables_dir
from countdown_study.runs.allocator import ALLOCATORS

PRESET_NAMES = ("tiny", "quick", "full")
"""``study.pipeline.PRESETS``, written out so that parsing imports no torch (``tests/test_cli.py`` holds
them equal)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``countdown-study run``."""
    parser.add_argument(
        "notebooks", nargs="*", help="notebook names, stems or number prefixes (default: all)"
    )
    parser.add_argument(
        "--preset", default="quick", choices=PRESET_NAMES, help="size of every study (default quick)"
    )
    parser.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="extra papermill parameter (VALUE parsed as YAML), a name of the notebooks' parameters cell "
        "with a value of its default's type (default: none)",
    )  # fmt: skip
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name")
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="notebooks run at once (2 on 2 cores with the full preset's one thread per run)",
    )  # fmt: skip
    parser.add_argument(
        "--executor", choices=EXECUTOR_NAMES, default=None,
        help="train every run of the notebooks first, in a local process pool or on a Ray cluster "
        "(default: each notebook trains its own runs)",
    )  # fmt: skip
    parser.add_argument(
        "--address", default=None,
        help="--executor ray: the cluster's head node HOST:PORT (default: RAY_ADDRESS, a Ray started on "
        "this machine, else a local Ray for this command)",
    )  # fmt: skip
    parser.add_argument(
        "--retries", type=int, default=2, help="--executor: failed attempts retried per run (default 2)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="--executor local: N runs at once (default: the cores divided by each run's torch threads; a "
        "full-preset run holds up to about 10 GB, so on a 16 GB machine give 1)",
    )  # fmt: skip
    parser.add_argument(
        "--runs-per-gpu", type=int, default=None, metavar="K",
        help="--executor: K runs share each GPU at once (local: K workers per visible GPU, each seeing only "
        "its GPU, the cores divided among them; ray: a run on a GPU asks for 1/K of one). Run ids do not "
        "change. Where no run uses a GPU it does not apply (a note says so); runs that need a GPU on a "
        "machine without one are refused (default: a whole GPU per run)",
    )  # fmt: skip
    parser.add_argument(
        "--allocator", choices=ALLOCATORS, default="auto",
        help="the memory allocator of the notebook kernels and the local executor's workers: tcmalloc "
        "(apt-get install libtcmalloc-minimal4) takes 0.7-0.85x the system malloc's time per step with the "
        "same numbers; auto uses it where installed (default auto)",
    )  # fmt: skip


EXECUTOR_NAMES = ("local", "ray")
"""``runs.executor.BACKENDS``, written out so that parsing imports no torch (``tests/test_cli.py``)."""

RESERVED = ("preset",)
"""Parameters set by their own option (``--preset``), not by ``-p``."""


def parse_parameters(pairs: list[list[str]]) -> dict:
    """``-p NAME VALUE`` pairs as ``{name: value}``, each value read as YAML; one that is not YAML is
    refused naming its parameter."""
    import yaml

    extra = {}
    for name, value in pairs:
        try:
            extra[name] = yaml.safe_load(value)
        except yaml.YAMLError as err:
            why = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise ValueError(f"-p {name}: not valid YAML: {value!r} ({why})") from err
    return extra


def check_parameters(extra: dict) -> None:
    """Refuse ``-p`` parameters a notebook cannot take: reserved names and non-scalar values."""
    for name, value in extra.items():
        if name in RESERVED:
            raise ValueError(f"-p {name}: set it with --{name}")
        if not (value is None or isinstance(value, str | int | float | bool)):
            raise ValueError(f"-p {name}: a parameter must be a number, a string or a boolean, got {value!r}")


def parameter_mismatch(value: object, default_source: str) -> str | None:
    """Why ``value`` cannot stand for a parameter whose default is the source text ``default_source``
    (``'"quick"'``), or None: the value's type must be the default's (an int stands for a float); a
    default that is None or not a literal takes anything."""
    import ast

    try:
        default = ast.literal_eval(default_source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if default is None or type(value) is type(default) or (type(value) is int and type(default) is float):
        return None
    hint = " (quote it to pass text)" if isinstance(default, str) else ""
    return (
        f"takes a value of type {type(default).__name__} like its default {default_source}, "
        f"got {value!r} ({type(value).__name__}){hint}"
    )


def check_notebook_parameters(extra: dict, notebooks: list[Path]) -> None:
    """Refuse a ``-p`` name that no selected notebook's parameters cell declares, or a value whose type is
    not the declared default's (``papermill.inspect_notebook``); a notebook that is not valid JSON is
    named as such. All before any notebook runs."""
    if not extra:
        return
    import papermill
    from nbformat.reader import NotJSONError

    from countdown_study.cli import one_line

    declared: dict[str, list[tuple[str, str]]] = {}
    for notebook in notebooks:
        try:
            cell = papermill.inspect_notebook(str(notebook))
        except NotJSONError as err:
            raise ValueError(f"{notebook}: not a notebook, its JSON is corrupt or truncated") from err
        except (ValueError, KeyError, AttributeError, TypeError) as err:
            raise ValueError(f"{notebook}: cannot read its parameters cell ({one_line(err)})") from err
        for name, info in cell.items():
            declared.setdefault(name, []).append((notebook.name, info["default"]))
    for name, value in extra.items():
        if name not in declared:
            known = ", ".join(sorted(set(declared) - set(RESERVED))) or "none"
            raise ValueError(
                f"-p {name}: no such parameter in the notebooks' parameters cells (they take: {known})"
            )
        for notebook_name, default_source in declared[name]:
            why = parameter_mismatch(value, default_source)
            if why:
                raise ValueError(f"-p {name}: {notebook_name} {why}")


def output_folders(args: argparse.Namespace) -> list[Path]:
    """The preset's results folder (where a full disk would show)."""
    return [preset_dir(args.preset)]


def executor_config(args: argparse.Namespace):
    """The ``runs.executor.ExecutorConfig`` of ``--executor``, ``--address``, ``--retries``, ``--workers``,
    ``--runs-per-gpu``; None without ``--executor``. Raises ``RayMissingError`` for ``--executor ray`` without
    Ray installed."""
    from countdown_study.runs.executor import ExecutorConfig, import_ray

    if args.workers is not None and args.executor != "local":
        raise ValueError("--workers is for --executor local")
    if args.executor is None:
        if args.address is not None:
            raise ValueError("--address is for --executor ray")
        if args.runs_per_gpu is not None:
            raise ValueError("--runs-per-gpu is for --executor local or ray")
        return None
    if args.runs_per_gpu is not None and args.runs_per_gpu < 1:
        raise ValueError(f"--runs-per-gpu must be at least 1, got {args.runs_per_gpu}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if args.workers is not None and args.runs_per_gpu is not None:
        raise ValueError("give --workers or --runs-per-gpu, not both")
    config = ExecutorConfig(
        args.executor,
        args.address,
        args.retries,
        workers=args.workers,
        runs_per_gpu=args.runs_per_gpu,
        allocator=args.allocator,
    )
    if config.backend == "ray":
        import_ray()
    return config


def train_first(notebooks: list[Path], args: argparse.Namespace, extra: dict, executor) -> bool:
    """Train every run of ``notebooks`` with ``executor``; print what it did and each failure."""
    from countdown_study.study.grid import packing_lines, plan_grid, train_grid

    stems = [nb.stem for nb in notebooks]
    packing = packing_lines(plan_grid(stems, args.preset, extra), executor)  # refused here, before any run
    print(f"training the runs of {len(notebooks)} notebooks with the {executor.backend} executor", flush=True)
    if executor.backend == "local":
        from countdown_study.runs.allocator import describe_allocator

        packing = [*packing, f"local: {describe_allocator(executor.allocator)}"]
    print("\n".join(f"  {line}" for line in packing), flush=True)
    done = train_grid(stems, args.preset, extra, executor)
    print(
        f"{len(done.finished)} runs trained, {len(done.skipped)} finished before, {len(done.failed)} failed"
    )
    for failure in done.failed:
        print(f"FAILED {failure.run_id} after {failure.attempts} attempts: {failure.error}")
    return done.ok


def cli_main(args: argparse.Namespace) -> int:
    """Run the notebooks and print one line per notebook; exit 1 if any failed.

    While they run, each run's progress (trained, resumed, reused, waited for, its step and rate,
    evaluated, finished) is printed from the run store's event log (``runs.events.watch``). With
    ``--executor`` the runs are trained first; if one fails for good, no notebook runs (exit 1; the same
    command continues where it stopped).
    """
    from countdown_study.reporting.outputs import headline_contrasts, write_figure_index
    from countdown_study.runs.allocator import AllocatorMissingError, preload_environment
    from countdown_study.runs.events import watch
    from countdown_study.runs.executor import RayMissingError
    from countdown_study.study.pipeline import list_notebooks, run_notebooks

    extra = parse_parameters(args.parameter)
    check_parameters(extra)
    try:
        preload_environment(args.allocator)  # a missing allocator is refused before anything runs
        executor = executor_config(args)
    except (RayMissingError, AllocatorMissingError) as err:
        print(f"countdown-study run: error: {err}", file=sys.stderr)
        return 2
    notebooks = list_notebooks(args.notebooks)
    if not notebooks:
        print(f"no study notebooks in {notebooks_dir()}")
        return 1
    check_notebook_parameters(extra, notebooks)
    store = runs_dir(args.preset)
    store.mkdir(parents=True, exist_ok=True)
    with watch(store, write=lambda line: print(f"  {line}", flush=True)):
        if executor is not None and not train_first(notebooks, args, extra, executor):
            return 1
        outcomes = run_notebooks(notebooks, args.preset, extra, args.kernel, args.jobs, args.allocator)
    for o in outcomes:
        status = "ok    " if o.ok else "FAILED"
        print(
            f"{status} {o.notebook:40s} {o.seconds:7.1f}s  {o.output}"
            + (f"\n       {o.error}" if o.error else "")
        )
    tables = tables_dir(args.preset)
    ran = [Path(o.notebook).stem for o in outcomes if o.ok]
    headlines = headline_contrasts(tables, ran) if tables.is_dir() else []
    if headlines:
        print(f"headline contrasts (tables in {tables}):")
        print("\n".join(f"  {line}" for line in headlines))
    figures = figures_dir(args.preset)
    if figures.is_dir():
        print(f"figure index: {write_figure_index(figures)}")
    failed = [o for o in outcomes if not o.ok]
    print(
        f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran; results in "
        f"{display_path(preset_dir(args.preset))}/ (runs in {display_path(store)}/)"
    )
    return 1 if failed else 0
