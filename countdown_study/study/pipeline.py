"""Run the study notebooks in order with papermill: ``countdown-study run [NOTEBOOK ...] --preset quick|full``.

Notebooks live in ``paths.notebooks_dir()`` and are named ``NN_name.ipynb``; they run in that order.
Each receives the papermill parameters ``preset`` (and any ``-p name value`` given here) in its
cell tagged ``parameters``; the executed copy goes to ``paths.executed_dir(preset)`` (``results/executed/``
for the full preset, ``results/presets/<preset>/executed/`` for the others). A failing notebook is
reported with its error and does not stop the others. papermill writes the copy into the notebook's
staging folder (``paths.staging_dir``) as it goes; it moves to ``executed/`` when the notebook succeeds and,
with its traceback, to ``executed/failed/`` when it fails, so that nothing half-written looks finished and
a successful run leaves no ``failed/`` folder behind.

Executed copies are meant to be read: each kernel starts with ``KERNEL_ENVIRONMENT`` (no third-party
progress bars, no tqdm notice about ipywidgets), the notebooks themselves pass ``progress=False`` to
the study (tqdm's environment switch cannot turn off a bar whose caller passes ``disable=False``), and
the papermill metadata of a copy names its notebook and copy by relative path, not by folder.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import nbformat

from countdown_study.paths import (
    executed_dir,
    figures_dir,
    notebooks_dir,
    project_root,
    results_dir,
    staging_dir,
    tables_dir,
)
from countdown_study.reporting.outputs import STAGE_ENV
from countdown_study.runs.allocator import joined_preload, preload_environment
from countdown_study.runs.threads import wait_policy

PRESETS = ("tiny", "quick", "full")
"""``tiny`` is for tests (seconds), ``quick`` for a 2-core machine (minutes), ``full`` for the paper."""

KERNEL_ENVIRONMENT = {
    STAGE_ENV: "1",  # outputs staged per notebook, published only when it succeeds
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' "Loading weights" bars ignore TQDM_DISABLE in a notebook
    "PYTHONWARNINGS": "ignore:IProgress not found",  # tqdm.auto without ipywidgets, printed with its path
    **wait_policy(),  # OpenMP threads sleep when idle (runs.threads): the user's value, else PASSIVE
}
"""Environment variables every notebook kernel starts with (added to the kernel spec's own)."""


@dataclass(frozen=True)
class NotebookRun:
    """Outcome of executing one notebook."""

    notebook: str
    """Notebook file name."""
    ok: bool
    """Whether it ran top to bottom."""
    seconds: float
    """Wall time."""
    output: str
    """Path of the executed copy."""
    error: str = ""
    """The exception's name and message when it failed."""


def list_notebooks(names: list[str] | None = None, folder: Path | None = None) -> list[Path]:
    """The study notebooks in run order; ``names`` selects some by file name, stem or number prefix."""
    folder = folder or notebooks_dir()
    available = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return available
    chosen = []
    for name in names:
        hits = [p for p in available if name in (p.name, p.stem) or p.name.startswith(f"{name}_")]
        if not hits:
            raise FileNotFoundError(
                f"no notebook named {name!r} in {folder}; have {[p.name for p in available]}"
            )
        chosen.extend(h for h in hits if h not in chosen)
    return sorted(chosen)


def execute_notebook(
    notebook: Path,
    preset: str,
    parameters: dict | None = None,
    kernel: str = "python3",
    progress: bool = True,
    allocator: str = "auto",
) -> NotebookRun:
    """Execute one notebook with papermill, its kernel started with ``allocator``'s library preloaded
    (``runs.allocator``); a failure is returned, not raised."""
    import papermill as pm

    out = executed_dir(preset) / notebook.name
    failed = executed_dir(preset) / "failed" / notebook.name
    staged = staging_dir(preset, notebook.stem)
    shutil.rmtree(staged, ignore_errors=True)  # what a killed earlier attempt staged
    tmp = staged / notebook.name  # the copy papermill writes as it goes
    tmp.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if not progress:  # several at once: a line per start instead of interleaved bars
        print(f"started {notebook.name} at {time.strftime('%H:%M:%S')}\n", end="", flush=True)  # one write
    try:
        pm.execute_notebook(
            str(notebook),
            str(tmp),
            parameters={"preset": preset, **(parameters or {})},
            kernel_name=kernel,
            # the kernel starts in the notebook's folder; papermill's own ``cwd`` would chdir this whole
            # process, which threads running notebooks side by side would leave in another's folder
            resources={"metadata": {"path": str(notebook.parent)}},
            progress_bar=progress,
            kernel_manager_class=kernel_manager_class(allocator),
        )
    except pm.PapermillExecutionError as err:  # a cell raised: the executed copy shows where
        error = f"{err.ename}: {err.evalue}"
    except (pm.exceptions.PapermillException, ValueError, OSError, KeyError) as err:  # it could not start
        error = f"{type(err).__name__}: {err}"  # (an unknown kernel is a KeyError, NoSuchKernel)
    else:
        _relative_papermill_paths(tmp, notebook, out)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out)
        publish_staged(staged, preset)
        _drop_failed_copy(failed)
        return NotebookRun(notebook.name, True, time.time() - start, str(out))
    if tmp.exists():
        _relative_papermill_paths(tmp, notebook, failed)
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, failed)
    shutil.rmtree(staged, ignore_errors=True)  # the previous complete set of tables and figures stays
    return NotebookRun(notebook.name, False, time.time() - start, str(failed), error)


def publish_staged(staged: Path, preset: str) -> None:
    """Move a succeeded notebook's staged tables and figures into the preset's folders, then drop the stage."""
    for kind, final in (("tables", tables_dir(preset)), ("figures", figures_dir(preset))):
        files = sorted((staged / kind).glob("*")) if (staged / kind).is_dir() else []
        if files:
            final.mkdir(parents=True, exist_ok=True)
        for file in files:
            os.replace(file, final / file.name)
    shutil.rmtree(staged, ignore_errors=True)


def _drop_failed_copy(failed: Path) -> None:
    """Remove an earlier failure's copy of a notebook that now succeeded, and ``failed/`` once empty."""
    failed.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # absent, or holding another notebook's failed copy
        failed.parent.rmdir()


@functools.cache
def kernel_manager_class(allocator: str = "auto") -> type:
    """The kernel manager of every notebook run: its kernel starts with ``KERNEL_ENVIRONMENT`` added, and
    ``allocator``'s library first in ``LD_PRELOAD`` (``runs.allocator.preload_environment``; a library the
    user preloads stays after it).

    The variables go into the manager's own copy of the kernel spec (the launch environment is the
    inherited one plus the spec's ``env``), so neither this process's environment nor the installed
    kernel spec changes. nbclient creates, owns and shuts down each manager as usual.
    """
    from jupyter_client.manager import AsyncKernelManager

    preload = preload_environment(allocator)

    class StudyKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            spec = super().kernel_spec
            if spec is not None and not getattr(spec, "_study_environment", False):
                before = spec.env.get("LD_PRELOAD") or os.environ.get("LD_PRELOAD")
                env = {**spec.env, **KERNEL_ENVIRONMENT, **joined_preload(preload, before)}
                inherited = spec.env.get("PYTHONWARNINGS") or os.environ.get("PYTHONWARNINGS")
                if inherited:  # the spec's variables replace inherited ones: keep the caller's filters
                    env["PYTHONWARNINGS"] = f"{inherited},{KERNEL_ENVIRONMENT['PYTHONWARNINGS']}"
                spec.env = env
                spec._study_environment = True
            return spec

    return StudyKernelManager


TIMING_FIELDS = ("start_time", "end_time", "duration")
"""papermill's clock readings in a copy's metadata and each cell's, removed (with the kernel's ``execution``
time stamps; the injected parameters cell gets a fixed id) so that re-executing a notebook whose outputs
did not change gives the same file."""


def _relative_papermill_paths(copy: Path, notebook: Path, final: Path) -> None:
    """Rewrite the copy's ``papermill.input_path`` / ``output_path`` as paths relative to the project
    root and the results folder (papermill records the absolute paths it was given), drop its clock
    readings (``TIMING_FIELDS``; ``NotebookRun.seconds`` and the command's output say how long it took) and
    give the injected parameters cell a fixed id."""
    nb = nbformat.read(copy, as_version=4)
    record = nb.metadata.get("papermill")
    if record is None:
        return
    record["input_path"] = _relative(notebook, project_root())
    record["output_path"] = _relative(final, results_dir())
    for metadata in (nb.metadata, *(cell.metadata for cell in nb.cells)):
        metadata.pop("execution", None)
        for field in TIMING_FIELDS:
            metadata.get("papermill", {}).pop(field, None)
    for cell in nb.cells:  # papermill gives the cell it adds a random id
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell["id"] = "injected-parameters"
    nbformat.write(nb, copy)


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when inside it, else its file name."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.name


def run_notebooks(
    notebooks: list[Path],
    preset: str,
    parameters: dict | None = None,
    kernel: str = "python3",
    jobs: int = 1,
    allocator: str = "auto",
) -> list[NotebookRun]:
    """Execute ``notebooks``; every notebook runs even when another fails.

    ``jobs=1`` runs them in order. ``jobs > 1`` runs that many at once, each in its own kernel, taking
    them in order as slots free; runs they share are run once (the run store's lock) and the others
    wait for it. Outcomes come back in notebook order.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if jobs == 1:
        outcomes = [execute_notebook(nb, preset, parameters, kernel, allocator=allocator) for nb in notebooks]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each thread waits on its own kernel process
            futures = [
                pool.submit(execute_notebook, nb, preset, parameters, kernel, False, allocator)
                for nb in notebooks
            ]
            for future in as_completed(futures):
                done = future.result()
                print(
                    f"{'finished' if done.ok else 'FAILED'} {done.notebook} in {done.seconds:.0f} s\n",
                    end="",
                    flush=True,
                )
            outcomes = [f.result() for f in futures]
    with contextlib.suppress(OSError):  # the staging folders' parent, once every notebook has left it
        staging_dir(preset, "-").parent.rmdir()
    return outcomes
