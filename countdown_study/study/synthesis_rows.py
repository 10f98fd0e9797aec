"""The synthesis' rows (``study.synthesis``), in two blocks, each run from its own starting policy on the
same held-out tasks and seeds:

* ``MAIN``: the baselines, reports 000, 001, 002 and 004, report 003's curricula and VCC (also run here,
  ``REPORT_003_EMBEDDED``) and the field's methods, on the embedded policy;
* ``SEARCH``: report 003's rows on the search-style policy (``SEARCH_POLICY``), a different model, so its
  rows are compared only with each other and every table names the model of each row.

A row is measured against the uniform RLOO row of its own block and reward (``uniform_reference``) and
against the controls its report names (``contrasts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from countdown_study.study.methods import (
    CONTRASTS_000,
    CONTRASTS_001,
    CONTRASTS_002,
    CONTRASTS_003,
    CONTRASTS_003_EMBEDDED,
    CONTRASTS_004,
    CONTRASTS_FIELD,
    CONTROL_002,
    FIELD_BASELINES,
    IPO,
    REPORT_000,
    REPORT_000_ABLATIONS,
    REPORT_001,
    REPORT_001_ABLATIONS,
    REPORT_002,
    REPORT_003,
    REPORT_003_COMMIT,
    REPORT_003_EMBEDDED,
    REPORT_004,
    SFT,
    UNIFORM,
    UNIFORM_REPLACEMENT,
    UNIFORM_SEQUENCE_SUM,
    WHOLE_UNIFORM,
    Method,
    StudyResult,
    model_label,
)

MAIN = "main"
"""The block of rows run from the embedded policy."""
SEARCH = "search"
"""The block of report 003's rows, run from the search-style policy."""

Rows = tuple[tuple[str, tuple[Method, ...]], ...]
BLOCK_ROWS: dict[str, Rows] = {
    MAIN: (
        ("baselines", (SFT, IPO, UNIFORM, UNIFORM_REPLACEMENT, UNIFORM_SEQUENCE_SUM)),
        ("000", (*REPORT_000, *REPORT_000_ABLATIONS)),
        ("001", (*REPORT_001, *REPORT_001_ABLATIONS)),
        ("002", REPORT_002),
        ("003", REPORT_003_EMBEDDED),
        ("004", REPORT_004),
        ("field", FIELD_BASELINES),
    ),
    SEARCH: (("baselines", (SFT, IPO)), ("003", (*REPORT_003, *REPORT_003_COMMIT))),
}
"""Each block's rows by report (``baselines``: the starting policy, IPO and the uniform samplers)."""
MAIN_METHODS = tuple(m for _, methods in BLOCK_ROWS[MAIN] for m in methods)
"""Every row of the main block, in report order (37 rows)."""
SEARCH_METHODS = tuple(m for _, methods in BLOCK_ROWS[SEARCH] for m in methods)
"""Every row of report 003's block: SFT, IPO and its Tables 1-2 (9 rows)."""

BINARY_UNIFORM = {m.name: REPORT_001[0].name for m in (*REPORT_001[1:], *REPORT_001_ABLATIONS)}
"""Rows trained with report 001's binary reward -> the uniform row with that reward."""
WHOLE_ROLLOUT_UNIFORM = {REPORT_003[4].name: WHOLE_UNIFORM.name}
"""Main-block rows trained on whole rollouts (report 003's VCC on the embedded policy) -> the uniform row on
whole rollouts."""
OWN_CONTRASTS = {
    MAIN: (
        *CONTRASTS_000,
        *CONTRASTS_001,
        *CONTRASTS_002,
        *CONTRASTS_003_EMBEDDED,
        *CONTRASTS_004,
        *CONTRASTS_FIELD,
    ),
    SEARCH: CONTRASTS_003,
}
"""The paired contrasts each report's own notebook makes, per block."""
CONTROLS = (CONTROL_002.name, REPORT_004[0].name)
"""The uniform controls reports 002 and 004 name (with replacement; with the 5-number evaluation)."""
UNIFORM_AGAINST = "uniform RLOO"
"""``against`` of a contrast with the row's own uniform RLOO row (``uniform_reference``)."""


def report_of(block: str) -> dict[str, str]:
    """Method name -> the report its row belongs to, for the rows of ``block``."""
    return {m.name: report for report, methods in BLOCK_ROWS[block] for m in methods}


def uniform_reference(block: str, method: str) -> str:
    """The uniform RLOO row ``method`` is measured against: same block (starting policy) and reward."""
    if block == SEARCH:
        return REPORT_003[0].name  # whole rollouts on the search-style policy
    return BINARY_UNIFORM.get(method, WHOLE_ROLLOUT_UNIFORM.get(method, UNIFORM.name))


def contrasts(block: str) -> list[tuple[str, str]]:
    """Every row of ``block`` against its uniform reference, then its report's own contrasts, once each."""
    names = [m.name for _, methods in BLOCK_ROWS[block] for m in methods]
    against_uniform = [(n, uniform_reference(block, n)) for n in names if n != uniform_reference(block, n)]
    return list(dict.fromkeys([*against_uniform, *OWN_CONTRASTS[block]]))


def against(block: str, a: str, b: str) -> str:
    """What ``b`` is to ``a``: its uniform RLOO row, a report's named control, or another row."""
    if b == uniform_reference(block, a):
        return UNIFORM_AGAINST
    return "report's control" if b in CONTROLS else "report's contrast"


def blocks(result: StudyResult, search: StudyResult) -> dict[str, StudyResult]:
    """The synthesis' two blocks by name: the main study and report 003's."""
    return {MAIN: result, SEARCH: search}


def block_model(result: StudyResult) -> str:
    """The model label of a block's rows (``model_label`` of its starting policy)."""
    return model_label(result.preset.data.policy)


def joint_meta(
    meta: Mapping[str, Any], search_meta: Mapping[str, Any], *more: Mapping[str, Any]
) -> dict[str, Any]:
    """One provenance ``meta`` for every study of the notebook: ``meta`` with ``search_policy`` (of
    ``search_meta``) and every run of all of them (``more``: further studies, such as report 003's tight
    sweep), each run record naming its starting policy."""
    runs = [{**run, "policy": m["policy"]} for m in (meta, search_meta, *more) for run in m["runs"]]
    return {**meta, "search_policy": search_meta["policy"], "runs": runs}


def labelled(table: pd.DataFrame, block: str, result: StudyResult, method: str = "method") -> pd.DataFrame:
    """``table`` with ``block``, ``model`` and ``report`` columns in front."""
    labels = pd.DataFrame(
        {"block": block, "model": block_model(result), "report": table[method].map(report_of(block))},
        index=table.index,
    )
    return pd.concat([labels, table], axis=1)
