"""What is wrong with a finished run's folder, one line each naming the file (``RunStore.verify``).

``DONE`` records the SHA-256 of the run's result files (``CHECKED_FILES``), checked against them
(``verify_checksums``); a ``DONE`` from before checksums were recorded (a bare time stamp,
``PLAIN_MARKER``) is checked for what it implies (``verify_plain``); a marker that is neither is itself
reported (``verify_results``). The checkpoints that exist are checked against their recorded SHA-256
(``checkpoint_problems``, ``checksums``). Functions of the run folder; they read and never write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from countdown_study.checksums import (
    SIDECAR_SUFFIX,
    checksum_problems,
    sha256_file,
    sidecar_path,
    sidecar_target,
)
from countdown_study.runs.provenance import (
    environment,
    environment_mismatch,
    environment_of,
    environments_differ,
)
from countdown_study.runs.run_ids import DONE

CHECKED_FILES = ("results.json", "steps.jsonl", "tables/*.parquet")
"""The result files whose SHA-256 ``DONE`` records (patterns relative to the run folder)."""
FINAL_WEIGHTS = "final"
"""The folder under ``checkpoints/`` that holds a finished run's weights (``save_pretrained``)."""
RUN_SETTINGS = ("torch_threads", "torch_interop_threads", "device", "device_name")
"""Environment keys a run sets for itself (left out when a finished run is reused elsewhere)."""


PLAIN_MARKER = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")
"""A ``DONE`` from before checksums were recorded: the time the run finished, alone."""


def _logged_step_count(results: Any, config_file: Path) -> int | None:
    """How many step-log lines a finished run wrote, when known: ``steps`` of its results (what a run
    logging each step finishes with), else ``steps`` of a config without ``log_every`` (one that logs
    every step); None otherwise."""
    steps = results.get("steps") if isinstance(results, dict) else None
    if steps is None and config_file.is_file():
        try:
            config = json.loads(config_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            config = None
        if isinstance(config, dict) and "log_every" not in config:
            steps = config.get("steps")
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else None


def result_files(path: Path) -> list[Path]:
    """The run folder's files ``CHECKED_FILES`` names, sorted."""
    return sorted(f for pattern in CHECKED_FILES for f in path.glob(pattern) if f.is_file())


def result_checksums(folder: Path) -> dict[str, str]:
    """SHA-256 of each result file of a run folder (``result_files``), by path relative to it: what ``DONE``
    records when a run finishes."""
    return {f.relative_to(folder).as_posix(): sha256_file(f) for f in result_files(folder)}


def read_steps(folder: Path) -> list[dict[str, Any]]:
    """Every complete line of the run's ``steps.jsonl`` (a torn last line, from a crash, is skipped)."""
    log = folder / "steps.jsonl"
    if not log.exists():
        return []
    records = []
    for line in log.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            records.append(json.loads(line))
    return records


def checkpoint_problems(folder: Path) -> list[str]:
    """Every checkpoint file or weights folder under ``checkpoints/`` that exists and has a recorded
    SHA-256 (``checksums``), checked: one line per missing, changed or unrecorded file, naming it."""
    checkpoints = folder / "checkpoints"
    sidecars = sorted(checkpoints.glob(f"*{SIDECAR_SUFFIX}")) if checkpoints.is_dir() else []
    targets = [sidecar_target(sidecar) for sidecar in sidecars]
    return [line for target in targets if target.exists() for line in checksum_problems(target)]


def unchecked_weights(folder: Path) -> list[str]:
    """The final weights folder when it exists without a recorded SHA-256 (written before checksums
    were kept): a warning, not a problem, since nothing can be checked."""
    final = folder / "checkpoints" / FINAL_WEIGHTS
    if final.is_dir() and not sidecar_path(final).is_file():
        return [f"{final}: no recorded SHA-256 ({sidecar_path(final).name}); its weights are not checked"]
    return []


def verify_results(folder: Path) -> list[str]:
    """What is wrong with the result files of a finished run: the checksums ``DONE`` records
    (``verify_checksums``), or what a plain marker implies (``verify_plain``)."""
    marker_file = folder / DONE
    try:
        text = marker_file.read_text()
    except (OSError, UnicodeDecodeError) as err:
        return [f"{marker_file}: unreadable marker ({type(err).__name__})"]
    if PLAIN_MARKER.fullmatch(text.strip()):
        return verify_plain(folder)
    try:
        marker = json.loads(text)
    except json.JSONDecodeError:
        marker = None
    if not (isinstance(marker, dict) and isinstance(marker.get("sha256"), dict)):
        return [f"{marker_file}: torn or garbled marker (neither a time stamp nor checksums): {text[:40]!r}"]
    return verify_checksums(folder, marker["sha256"])


def verify_checksums(folder: Path, recorded: Mapping[str, str]) -> list[str]:
    """Every recorded result file present and unchanged, and no result file besides them."""
    problems = []
    for name, digest in recorded.items():
        file = folder / name
        if not file.is_file():
            problems.append(f"{file}: missing")
        elif sha256_file(file) != digest:
            problems.append(f"{file}: changed since the run finished")
    extra = {f.relative_to(folder).as_posix() for f in result_files(folder)} - set(recorded)
    problems.extend(f"{folder / name}: not part of the finished run" for name in sorted(extra))
    return problems


def verify_plain(folder: Path) -> list[str]:
    """A run finished with a plain marker: ``results.json`` (when there is one) parses, and when the
    number of steps N is known (``steps`` of the results, else of a config that logs every step)
    ``steps.jsonl`` holds steps 0 .. N-1 once each."""
    results_file, log = folder / "results.json", folder / "steps.jsonl"
    results, problems = {}, []
    if results_file.is_file():
        try:
            results = json.loads(results_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"{results_file}: not valid JSON ({err})")
    steps = _logged_step_count(results, folder / "config.json")
    if steps is None:
        return problems
    if not log.is_file():
        return [*problems, f"{log}: missing (the run finished {steps} steps)"]
    try:
        logged = [record["step"] for record in read_steps(folder)]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        return [*problems, f"{log}: unreadable ({type(err).__name__}: {err})"]
    if logged != list(range(steps)):
        problems.append(f"{log}: does not hold steps 0..{steps - 1} once each ({len(logged)} lines)")
    return problems


def this_environment() -> dict:
    """This process's environment as ``environment_difference`` compares it: ``RUN_SETTINGS`` left out."""
    return {key: value for key, value in environment().items() if key not in RUN_SETTINGS}


def environment_difference(record: dict, here: dict | None = None) -> list[str]:
    """How a run's provenance ``record`` differs from this process's environment (``environment_mismatch``
    over the keys this process records: packages, Python, CPU capability), or empty unless a key both record
    differs (``environments_differ``). Thread counts and the device are the run's own settings
    (``RUN_SETTINGS``), not this process's, and are not compared. ``here``: ``this_environment()``, read
    once by a caller that compares many runs."""
    here = this_environment() if here is None else here
    if not environments_differ(record, here):
        return []
    return environment_mismatch(record, here, keys=tuple(environment_of(here)))


def environment_warning(folder: Path, run_id: str) -> str | None:
    """A warning naming the run ``run_id`` in ``folder`` and how its recorded environment differs from this
    process's (``environment_difference``), or None when it does not."""
    try:
        record = json.loads((folder / "provenance.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        return (
            f"run {run_id}: provenance.json cannot be read ({type(err).__name__}); its environment is unknown"
        )
    differing = environment_difference(record)
    if not differing:
        return None
    return f"run {run_id} was made in another environment (the run's vs this one's): {'; '.join(differing)}"
