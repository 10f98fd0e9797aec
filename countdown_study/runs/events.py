"""Run events: what each run in a store is doing, for progress shown outside the process that runs it.

Every run appends one JSON line per event to ``<runs_dir>/events.jsonl`` (ignored by git):
``reuse`` (a finished run is loaded), ``wait`` (another process holds it), ``start`` / ``resume``
(from the last checkpoint), ``step`` (step, steps, seconds), ``evaluate``, ``done`` (wall seconds)
and ``failed``; an executor's driver (``runs.executor``) adds ``retry`` (a failed attempt is tried
again) and ``gave_up`` (the last attempt failed). ``countdown-study run`` follows the file while notebook
kernels or executor workers write to it (``watch``) and prints ``progress_line`` of the events worth a
line: notebooks and workers themselves stay quiet.

Writing an event never fails a run: a store that cannot take the line (read-only, disk full) loses
only the progress line. One ``write`` of one line in append mode keeps lines of concurrent processes
whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

EVENTS = "events.jsonl"
"""The event log's file name in the runs folder."""

STEP_EVERY = 10
"""``progress_line`` shows every this many steps (and the first and last) of a training run."""


def describe(config: Any) -> str:
    """A short label of a run's config for progress lines: its sampler and group filter (if any) and seed."""
    get = config.get if isinstance(config, Mapping) else lambda key: getattr(config, key, None)
    parts = [str(get(key)) for key in ("sampler",) if get(key) is not None]
    group_filter = get("group_filter")  # a spec or its JSON form
    if parts and group_filter is not None:
        name = group_filter["name"] if isinstance(group_filter, Mapping) else group_filter.name
        parts[0] += f" + {name}"
    if get("seed") is not None:
        parts.append(f"seed {get('seed')}")
    return ", ".join(parts) or type(config).__name__


def record_event(root: Path, run: str, label: str, event: str, **fields: Any) -> None:
    """Append one event of run ``run`` to ``root/events.jsonl``; an ``OSError`` loses only this line."""
    line = json.dumps(
        {"time": time.time(), "pid": os.getpid(), "run": run, "label": label, "event": event, **fields}
    )
    try:
        with open(Path(root) / EVENTS, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except OSError:
        pass


def progress_line(event: Mapping[str, Any]) -> str | None:
    """One line for a terminal, or None for an event not worth one (most steps)."""
    who = f"{event['run']} ({event.get('label', '')})"
    kind = event["event"]
    if kind == "step":
        step, steps, seconds = event["step"] + 1, event["steps"], event.get("seconds", 0.0)
        if not (step in (1, steps) or step % STEP_EVERY == 0):
            return None
        left = (steps - step) * seconds / 60
        return f"train    {who}: step {step}/{steps}, {seconds:.2f} s/step, ~{left:.1f} min left"
    texts = {
        "reuse": "finished earlier, reused",
        "wait": "another process is running it; waiting",
        "start": "started",
        "resume": "resuming from its last checkpoint",
        "evaluate": "evaluating",
        "done": f"finished in {event.get('seconds', 0.0) / 60:.1f} min",
        "failed": f"failed: {event.get('error', '')}",
        "retry": f"attempt {event.get('attempt')} of {event.get('attempts')} after {event.get('error', '')}",
        "gave_up": f"given up after {event.get('attempts')} attempts: {event.get('error', '')}",
    }
    if kind not in texts:
        return None
    verb = {"evaluate": "eval", "failed": "FAILED", "gave_up": "FAILED"}.get(kind, kind)
    return f"{verb:<8} {who}: {texts[kind]}"


def read_events(path: Path, offset: int) -> tuple[list[dict], int]:
    """Whole lines of the event log from byte ``offset`` on, and the offset after the last whole one."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
    events = []
    for raw in data[:end].splitlines():
        with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
            events.append(json.loads(raw))
    return events, offset + end


@contextlib.contextmanager
def watch(root: Path, write: Callable[[str], None] = print, interval: float = 1.0) -> Iterator[None]:
    """While the block runs, ``write`` the ``progress_line`` of each event appended to ``root``'s log.

    Events already in the log when the block starts are skipped; the last ones are written after it.
    """
    path = Path(root) / EVENTS
    offset = path.stat().st_size if path.exists() else 0
    stop = threading.Event()

    def drain() -> None:
        nonlocal offset
        events, offset = read_events(path, offset)
        for event in events:
            line = progress_line(event)
            if line is not None:
                write(line)

    def loop() -> None:
        while not stop.wait(interval):
            drain()

    thread = threading.Thread(target=loop, name="run-events", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        drain()
