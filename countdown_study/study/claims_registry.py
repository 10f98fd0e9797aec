"""The claim registry (``study.claims``): ``claims_registry.csv`` beside this module, one row per
quantitative claim of the five reports, read without executing anything into ``RegistryClaim`` rows and
checked (unique ids, known kinds, signs in {-1, 0, 1}; an error names the file and the row)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

REGISTRY = Path(__file__).with_name("claims_registry.csv")
"""The claims, one row each (module docstring)."""
REGISTRY_COLUMNS = ("claim_id", "report", "source", "statement", "kind", "metric", "a", "b", "sign",
                    "report_a", "report_b", "block", "eval_set", "not_tested_why")  # fmt: skip
"""Columns of ``REGISTRY``."""
KINDS = ("pair", "best", "worst", "zero", "nonzero", "equal")
"""What a claim says of its rows."""


@dataclass(frozen=True)
class RegistryClaim:
    """One row of the registry."""

    claim_id: str
    """Unique, stable id: ``<report>.<slug>``."""
    report: str
    """``000`` ... ``004``."""
    source: str
    """Where in the report (table, figure or section)."""
    statement: str
    """The claim in short."""
    kind: str
    """One of ``KINDS``."""
    metric: str
    """The report's metric."""
    a: str
    """The row the claim is about (our method name)."""
    b: tuple[str, ...]
    """The row(s) it is compared with (empty for ``zero`` / ``nonzero`` without a control)."""
    sign: int
    """+1: a above b (or nonzero, best); -1: a below b (or zero, worst); 0: no difference."""
    report_a: float
    """The report's number for ``a`` (NaN where none)."""
    report_b: float
    """The report's number for ``b`` (NaN where none)."""
    block: str
    """``main`` (the embedded policy) or ``search`` (report 003's search-style policy)."""
    eval_set: str
    """``test`` (the shared held-out tasks) or an extra evaluation set (``ood``)."""
    not_tested_why: str
    """Why the study cannot test it; empty when it can."""

    @property
    def report_effect(self) -> float:
        """The size of the report's own effect: ``report_a - report_b``, or ``report_a`` against zero."""
        if self.kind in ("zero", "nonzero"):
            return self.report_a
        return self.report_a - self.report_b


def _number(text: str) -> float:
    return float(text) if str(text).strip() not in ("", "nan") else float("nan")


def load_registry(path: Path = REGISTRY) -> list[RegistryClaim]:
    """The registry's claims, checked: unique ids, known kinds, signs in {-1, 0, 1}; an error names the
    file and the row."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = set(REGISTRY_COLUMNS) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    claims = []
    for line, row in enumerate(table.itertuples(index=False), start=2):
        if row.kind not in KINDS or row.sign not in ("-1", "0", "1"):
            raise ValueError(f"{path}:{line}: kind {row.kind!r} / sign {row.sign!r} not allowed")
        claims.append(RegistryClaim(
            claim_id=row.claim_id, report=row.report.zfill(3), source=row.source, statement=row.statement,
            kind=row.kind, metric=row.metric, a=row.a, b=tuple(x for x in row.b.split("|") if x),
            sign=int(row.sign), report_a=_number(row.report_a), report_b=_number(row.report_b),
            block=row.block, eval_set=row.eval_set or "test", not_tested_why=row.not_tested_why,
        ))  # fmt: skip
    ids = [c.claim_id for c in claims]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"{path}: claim ids not unique: {duplicated}")
    return claims
