"""The run store: one folder per run config under ``paths.runs_dir()``, finished runs loaded not redone.

A run's id is a readable prefix plus a short hash of the canonical JSON of its config (``runs.run_ids``),
so asking twice for the same config lands in the same folder. Layout of ``<runs_dir>/<run_id>/``:

* ``config.json``: the config (canonical JSON, written when the run is opened).
* ``identity.json``: facts outside the config in the run id, e.g. the starting policy's weights digest.
* ``provenance.json``: git SHA and dirty flag, seed, wall times, and the environment (package versions,
  Python, torch's CPU capability and threads, the device; ``runs.provenance``). A finished run reused in
  another environment is reused with a warning naming the keys that differ (``environment_mismatch``).
* ``steps.jsonl``: one JSON line per logged step (appended; a torn last line from a crash is skipped).
* ``tables/<name>.parquet``: evaluation tables.
* ``results.json``: the run's final results.
* ``checkpoints/``: model weights, ignored by git (a ``.gitignore`` inside says so). Each checkpoint
  file and the ``final/`` weights folder has its SHA-256 beside it (``<name>.sha256.json``,
  ``checksums``), written after the weights and checked whenever they are loaded, by ``verify`` (the
  checkpoints that exist; a clone without weights has nothing to check) and before ``DONE`` is written.
* ``DONE``: written last, after everything else; a run is finished iff it exists. It records the
  SHA-256 of the run's results (``results.json``, ``steps.jsonl``, ``tables/*.parquet``), checked
  whenever a finished run is loaded (``verify``, ``runs.run_checks``): an edited or truncated result is
  refused, naming the run and the file (``countdown-study runs verify`` checks a whole store).
* ``.lock``: held by the process running the run, so that parallel studies never run it twice.

Beside the run folders, ``<runs_dir>/events.jsonl`` logs what every run is doing (``runs.events``).

Every file is written atomically (a temporary file in the same folder, then ``os.replace``), so a
crash leaves either the old file or the new one, never a partial one, and never a ``DONE``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from countdown_study import paths
from countdown_study.runs.events import describe, record_event
from countdown_study.runs.files import (
    atomic_path,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    plain,
    remove_temporaries,
)
from countdown_study.runs.provenance import now, provenance
from countdown_study.runs.run_checks import CHECKED_FILES as CHECKED_FILES
from countdown_study.runs.run_checks import FINAL_WEIGHTS as FINAL_WEIGHTS
from countdown_study.runs.run_checks import PLAIN_MARKER as PLAIN_MARKER
from countdown_study.runs.run_checks import RUN_SETTINGS as RUN_SETTINGS
from countdown_study.runs.run_checks import (
    checkpoint_problems,
    environment_warning,
    read_steps,
    result_checksums,
    unchecked_weights,
    verify_results,
)
from countdown_study.runs.run_ids import DONE, is_finished, run_id
from countdown_study.runs.run_ids import HASH_CHARS as HASH_CHARS

LOCK = ".lock"
"""Lock file of a run: the process running it holds an exclusive ``flock`` on it."""


class RunNotFinishedError(RuntimeError):
    """Reading results of a run that has no ``DONE`` marker."""


class RunBusyError(RuntimeError):
    """Asking, without waiting, for a run that another process is running."""


class RunCorruptError(RuntimeError):
    """A finished run whose results no longer match what was recorded when it finished."""


@dataclasses.dataclass(frozen=True)
class RunStore:
    """One run's folder. Make it with ``RunStore.open(config)``."""

    run_id: str
    """``<prefix>-<config hash>``."""
    path: Path
    """``<runs_dir>/<run_id>``."""
    config: Any
    """The config the run was opened with."""

    # -- life cycle ---------------------------------------------------------------------------------

    @classmethod
    def locate(
        cls,
        config: Any,
        root: str | Path | None = None,
        prefix: str | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> RunStore:
        """The run of ``config`` (and ``identity``, see ``run_id``) under ``root``, without making or
        reading anything (``is_done`` says whether it finished)."""
        rid = run_id(config, prefix, identity)
        path = Path(root) if root is not None else paths.runs_dir()
        return cls(run_id=rid, path=path / rid, config=config)

    @classmethod
    def open(
        cls,
        config: Any,
        root: str | Path | None = None,
        prefix: str | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> RunStore:
        """The run folder of ``config`` (and ``identity``, see ``run_id``) under ``root``, made if new.

        ``identity`` is kept in ``identity.json``. Raises if the folder holds a different config or
        identity (a hash collision or a hand-edited file).
        """
        store = cls.locate(config, root, prefix, identity)
        expected = {"config.json": json.loads(canonical_json(config))}
        if identity:
            expected["identity.json"] = dict(identity)
        for name, content in expected.items():
            file = store.path / name
            if not file.exists():
                atomic_write_json(file, content)
            elif json.loads(file.read_text()) != content:
                raise ValueError(
                    f"{file} holds a different {name[:-5]} than the one asked for run {store.run_id}"
                )
        return store

    @contextlib.contextmanager
    def lock(self, wait: bool = True) -> Iterator[RunStore]:
        """Hold the run's lock: one process at a time runs a run; the OS frees it if the process dies.

        With ``wait=False`` a run held by another process raises ``RunBusyError`` at once. Callers
        check ``is_done`` again once they hold the lock (``complete`` does): the other process may
        have finished it.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as err:
                if not wait:
                    raise RunBusyError(f"run {self.run_id} is being run by another process") from err
                self.event("wait")
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield self
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @property
    def is_done(self) -> bool:
        """Whether the run finished (its ``DONE`` marker exists)."""
        return is_finished(self.path)

    def start(self, seed: int | None = None) -> None:
        """Begin a fresh attempt: clear what an unfinished attempt left, write provenance.

        ``seed`` defaults to the config's ``seed`` field. Everything but ``config.json`` and ``identity.json`` is removed,
        checkpoints included. Refuses a finished run.
        """
        if self.is_done:
            raise RuntimeError(f"run {self.run_id} is finished; load it with load_results()")
        for child in self.path.iterdir():
            if child.name in ("config.json", "identity.json", LOCK):
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        if seed is None:
            seed = (
                self.config.get("seed")
                if isinstance(self.config, Mapping)
                else getattr(self.config, "seed", None)
            )
        atomic_write_json(self.path / "provenance.json", provenance(seed))

    def finish(self, results: Mapping[str, Any] | None = None, steps: int | None = None) -> None:
        """Write ``results.json``, stamp the end time in provenance, then the ``DONE`` marker last.

        ``steps``: the run logs one line per step, so its log must hold exactly steps 0 .. steps - 1;
        a gapped or padded log is refused and the run stays unfinished, as is a run whose checkpoints
        differ from their recorded SHA-256 (``checkpoint_problems``). ``DONE`` records the SHA-256 of
        every result file (``CHECKED_FILES``).
        """
        if not (self.path / "provenance.json").exists():
            raise RuntimeError(f"run {self.run_id} was never started; call start() before finish()")
        if steps is not None:
            logged = [r["step"] for r in self.read_steps()]
            if logged != list(range(steps)):
                raise RunCorruptError(
                    f"run {self.run_id}: steps.jsonl does not hold steps 0..{steps - 1} once each"
                )
        weights = self.checkpoint_problems()
        if weights:
            raise RunCorruptError(
                f"run {self.run_id} is not finished, its weights are corrupt: " + "; ".join(weights)
            )
        if results is not None:
            atomic_write_json(self.path / "results.json", plain(results))
        record = self.provenance()
        record["finished"] = now()
        atomic_write_json(self.path / "provenance.json", record)
        checksums = result_checksums(self.path)
        marker = {"finished": record["finished"], "steps": steps, "sha256": checksums}
        atomic_write_text(self.path / DONE, json.dumps(marker, indent=2, sort_keys=True) + "\n")

    def verify(self, weights: bool = True) -> list[str]:
        """What is wrong with a finished run, one line each naming the file (empty: intact).

        A ``DONE`` that records checksums is checked against them. One from before checksums were
        recorded (a bare time stamp, ``PLAIN_MARKER``) is checked for what it implies
        (``run_checks.verify_plain``). A marker that is neither (torn, garbled) is itself reported. ``weights``:
        the checkpoints that exist are checked against their recorded SHA-256 too (``checkpoint_problems``).
        """
        problems = verify_results(self.path)
        return problems + self.checkpoint_problems() if weights else problems

    def checkpoint_problems(self) -> list[str]:
        """Every checkpoint file or weights folder under ``checkpoints/`` that exists and has a recorded
        SHA-256, checked: one line per missing, changed or unrecorded file (``run_checks``)."""
        return checkpoint_problems(self.path)

    def unchecked_weights(self) -> list[str]:
        """The final weights folder when it exists without a recorded SHA-256 (written before checksums
        were kept): a warning, not a problem, since nothing can be checked (``run_checks``)."""
        return unchecked_weights(self.path)

    def check(self) -> None:
        """Raise ``RunCorruptError`` naming the run and its files if ``verify`` finds anything in its results
        (its weights are checked where they are loaded: ``policy.load_policy``, ``training.checkpoint``)."""
        problems = self.verify(weights=False)
        if problems:
            raise RunCorruptError(f"run {self.run_id} is corrupt: " + "; ".join(problems))

    def complete(
        self,
        run: Callable[[RunStore], Mapping[str, Any] | None],
        threads: int | None = None,
        resume_checkpoint: str | None = None,
        wait: bool = True,
        per_step_log: bool = False,
    ) -> RunStore:
        """Finish the run unless it is finished: ``run(self)`` under the lock, then ``finish`` its results.

        The one way studies run a run. Another process running it is waited for and its results used
        (``wait=False``: ``RunBusyError`` at once). ``threads`` sets torch's thread count before the
        attempt starts, so that provenance records it. With ``resume_checkpoint`` an unfinished attempt
        that left ``checkpoints/<resume_checkpoint>`` is continued (``run`` reads the checkpoint) instead
        of started over. If ``run`` raises, the run stays unfinished. ``per_step_log``: the run logs one
        line per step and its results hold ``steps``; ``finish`` checks the log holds each step once. A
        finished run is checked against its recorded checksums before it is used (``check``), and reused
        with a warning when it was made in another environment (``environment_warning``).
        """
        if self.is_done:
            return self._reuse()
        with self.lock(wait=wait):
            if self.is_done:  # finished by another process while this one waited
                return self._reuse()
            started = time.perf_counter()
            if threads is not None:
                torch.set_num_threads(threads)
            resumable = (
                resume_checkpoint is not None
                and (self.path / "provenance.json").exists()
                and (self.path / "checkpoints" / resume_checkpoint).exists()
            )
            if not resumable:
                self.start()
                self.event("start")
            else:
                remove_temporaries(self.path)  # files a killed attempt was writing
                self.event("resume")
            try:
                results = run(self)
                self.finish(results, steps=results["steps"] if per_step_log else None)
            except BaseException as err:
                self.event("failed", error=f"{type(err).__name__}: {err}")
                raise
            self.event("done", seconds=time.perf_counter() - started)
        return self

    def _reuse(self) -> RunStore:
        self.check()
        warning = self.environment_warning()
        if warning:
            warnings.warn(warning, stacklevel=3)
        self.event("reuse")
        return self

    def environment_warning(self) -> str | None:
        """A warning naming this run and how its recorded environment differs from this process's, or None
        (``run_checks.environment_warning``)."""
        return environment_warning(self.path, self.run_id)

    def event(self, kind: str, **fields: Any) -> None:
        """Record a progress event of this run in the store's event log (``runs.events``)."""
        record_event(self.path.parent, self.run_id, describe(self.config), kind, **fields)

    # -- writing ------------------------------------------------------------------------------------

    def log_step(self, record: Mapping[str, Any]) -> None:
        """Append one JSON line to ``steps.jsonl`` (a single write; flushed and synced)."""
        line = json.dumps(plain(record), sort_keys=True) + "\n"
        with open(self.path / "steps.jsonl", "a") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def truncate_steps(self, steps_done: int) -> None:
        """Keep only the step-log lines with ``step < steps_done``; ``steps.jsonl`` is rewritten atomically.

        A run resuming from a checkpoint that covers ``steps_done`` steps calls it first: lines an
        interrupted attempt logged past its last checkpoint are dropped, as the resumed attempt logs
        those steps again. ``step`` is the 0-based index of the step a line describes.
        """
        kept = [r for r in self.read_steps() if r["step"] < steps_done]
        with atomic_path(self.path / "steps.jsonl") as tmp:
            tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))

    def write_table(self, name: str, table: pd.DataFrame) -> Path:
        """Save a table as ``tables/<name>.parquet`` atomically; returns its path."""
        target = self.path / "tables" / f"{name}.parquet"
        with atomic_path(target) as tmp:
            table.to_parquet(tmp, index=False)
        return target

    def write_json(self, name: str, obj: Any) -> Path:
        """Save ``obj`` as ``<name>.json`` atomically; returns its path."""
        target = self.path / f"{name}.json"
        atomic_write_json(target, plain(obj))
        return target

    @property
    def checkpoint_dir(self) -> Path:
        """``checkpoints/``, made on first use with a ``.gitignore`` that keeps weights out of git."""
        folder = self.path / "checkpoints"
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            atomic_write_text(ignore, "*\n")
        return folder

    # -- reading ------------------------------------------------------------------------------------

    def provenance(self) -> dict[str, Any]:
        """The run's provenance record."""
        return json.loads((self.path / "provenance.json").read_text())

    def read_steps(self) -> list[dict[str, Any]]:
        """Every complete line of ``steps.jsonl`` (a torn last line, from a crash, is skipped)."""
        return read_steps(self.path)

    def read_table(self, name: str) -> pd.DataFrame:
        """Load ``tables/<name>.parquet``."""
        return pd.read_parquet(self.path / "tables" / f"{name}.parquet")

    def load_results(self) -> dict[str, Any]:
        """``results.json`` of a finished run (empty when none was written); raises if unfinished."""
        if not self.is_done:
            raise RunNotFinishedError(f"run {self.run_id} is not finished (no {DONE} marker in {self.path})")
        self.check()
        results = self.path / "results.json"
        return json.loads(results.read_text()) if results.exists() else {}


def run_or_load(
    config: Any,
    run: Callable[[RunStore], Mapping[str, Any]],
    root: str | Path | None = None,
    prefix: str | None = None,
    identity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Results of ``config``: loaded if the run finished before, else ``run(store)`` then finished.

    If ``run`` raises, the run stays unfinished and the next call starts it again.
    """
    return RunStore.open(config, root=root, prefix=prefix, identity=identity).complete(run).load_results()
