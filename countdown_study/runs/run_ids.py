"""Run ids and the finished marker: a run's folder is named by its config, and ``DONE`` marks it finished.

A run's id is a readable prefix plus a short hash of the canonical JSON of its config (``run_id``), so
asking twice for the same config lands in the same folder (``runs.store``). A run is finished iff its
folder holds ``DONE`` (``is_finished``), written last. Imports no torch.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from countdown_study.runs.files import canonical_json

DONE = "DONE"
"""Name of the marker file written last."""
HASH_CHARS = 12
"""Hex characters of the config hash in a run id."""


def is_finished(folder: str | Path) -> bool:
    """Whether the run in ``folder`` finished (its ``DONE`` marker exists); no lock is taken."""
    return (Path(folder) / DONE).is_file()


def _prefix(config: Any, prefix: str | None) -> str:
    """Readable part of a run id: ``prefix``, else the config's ``name`` field, else its class name."""
    if prefix is None:
        name = config.get("name") if isinstance(config, Mapping) else getattr(config, "name", None)
        prefix = str(name) if name else type(config).__name__
    cleaned = re.sub(r"[^A-Za-z0-9_.]+", "-", prefix).strip("-.").lower()
    return cleaned or "run"


def run_id(config: Any, prefix: str | None = None, identity: Mapping[str, str] | None = None) -> str:
    """``<prefix>-<hash>``: the hash covers the config's type name, its canonical JSON and ``identity``.

    ``identity`` holds facts outside the config that decide a run's results, such as the digest of
    the starting policy's weights; without it the id depends on the config alone.
    """
    body: dict[str, Any] = {"type": type(config).__name__, "config": json.loads(canonical_json(config))}
    if identity:
        body["identity"] = dict(sorted(identity.items()))
    payload = json.dumps(body, sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:HASH_CHARS]
    return f"{_prefix(config, prefix)}-{digest}"
