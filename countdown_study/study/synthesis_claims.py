"""The synthesis' headline claims and their verdicts (``study.synthesis``): every ``CLAIMS_*`` dict of
``study.methods`` (their one source of truth, ``all_claims``), each judged on its block's runs beside the
report's own numbers (``verdict_table``), report 004's 5-number claim (``ood_verdicts``) and report 003's
validation-selection claim (``selection_verdicts``), in one table (``all_verdicts``) with
``study.claims``' categories (``honest_verdicts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from countdown_study.reporting.references import PAPER_MODEL, reported
from countdown_study.study.methods import (
    CLAIMS_000,
    CLAIMS_001,
    CLAIMS_002,
    CLAIMS_003,
    CLAIMS_003_EMBEDDED,
    CLAIMS_004,
    CLAIMS_BASELINES,
    REPORT_004,
    VCC_SWEEP,
    VCC_SWEEP_CONTROL,
    ZERO_CLAIMS_004,
    StudyResult,
    eval_set_result,
)
from countdown_study.study.selection import (
    SELECTION_CLAIM,
    SELECTION_CONTRAST,
    select_checkpoints,
    selection_claim,
    snapshot_table,
)
from countdown_study.study.synthesis_rows import MAIN, SEARCH, block_model
from countdown_study.study.tables import paired_table, problem_matrix, summary_table, zero_claims_table
from countdown_study.study.verdicts import SAME_RUNS, UNTESTABLE, at_bound, classify_interval

HEADLINE_METRICS = {"000": "pass@1", "001": "pass@1", "004": "mean_score"}
"""The metric of a claim keyed without one: report 000's Table 1 and report 001's Sec. 1 lead with pass@1,
report 004's Table 2 with the mean score (their notebooks also test the other metrics)."""


@dataclass(frozen=True)
class Claim:
    """One headline claim of a report: row ``a`` above (``sign`` +1) or below (-1) row ``b`` at ``metric``."""

    report: str
    """The report making it (``000`` ... ``004``)."""
    source: str
    """The ``study.methods`` dict it is an entry of (e.g. ``CLAIMS_002``)."""
    key: tuple
    """Its key there: ``(a, b)`` or ``(a, b, metric)``."""
    sign: int
    """Claimed sign of ``a - b``."""
    block: str
    """The block it is tested on (``MAIN`` or ``SEARCH``)."""

    @property
    def a(self) -> str:
        """The row claimed to differ."""
        return self.key[0]

    @property
    def b(self) -> str:
        """The row it is compared with."""
        return self.key[1]

    @property
    def metric(self) -> str:
        """The key's metric, else the report's headline metric (``HEADLINE_METRICS``)."""
        return self.key[2] if len(self.key) == 3 else HEADLINE_METRICS[self.report]


HOME_BLOCK = {"003": SEARCH}
"""The block a report's claims are first tested on, where not ``MAIN``; a claim tested on another block too
(report 003's on the embedded policy) names that block's starting policy in its verdict row."""

CLAIM_SETS = (
    ("002", "CLAIMS_BASELINES", CLAIMS_BASELINES, MAIN),
    ("000", "CLAIMS_000", CLAIMS_000, MAIN),
    ("001", "CLAIMS_001", CLAIMS_001, MAIN),
    ("002", "CLAIMS_002", CLAIMS_002, MAIN),
    ("003", "CLAIMS_003", CLAIMS_003, SEARCH),
    ("003", "CLAIMS_003_EMBEDDED", CLAIMS_003_EMBEDDED, MAIN),
    ("004", "CLAIMS_004", CLAIMS_004, MAIN),
)
"""Every claims dict of ``study.methods`` with its report and block (the baselines' claims are report 002's
Table 1)."""


def all_claims() -> list[Claim]:
    """One ``Claim`` per entry of every ``CLAIM_SETS`` dict, in report order."""
    return [
        Claim(report, source, key, sign, block)
        for report, source, claims, block in CLAIM_SETS
        for key, sign in claims.items()
    ]


REPORTED_AS = {
    ("003", "Commit reward only", "RLOO uniform", "pass@1"):
        ("Commit reward only", "RLOO uniform (Table 2 run)", "exact_rate"),
    ("003", "VCC-RLOO", "RLOO uniform (whole rollouts)", "pass@16"): ("VCC-RLOO", "RLOO uniform", "pass@16"),
}  # fmt: skip
"""Claims whose report gives its numbers under other rows or another metric (``references``): report 003's
Table 2 compares rollout accuracy (exact rate, our pass@1 per rollout) with another RLOO run than its Table
1's; its RLOO baseline is on whole rollouts. (Report 001's baseline, binary reward like every row of its
notebook, is listed under our row's name.)"""


def their_numbers(claim: Claim) -> dict[str, Any]:
    """The report's own ``a``, ``b``, their difference and where they are given (NaN where not given)."""
    a, b, metric = REPORTED_AS.get(
        (claim.report, claim.a, claim.b, claim.metric), (claim.a, claim.b, claim.metric)
    )
    table = reported((claim.report,), (a, b))
    table = table[table["metric"] == metric]

    def value(method: str) -> float:
        rows = table[table["method"] == method]
        return float(rows["value"].iloc[0]) if len(rows) else float("nan")

    where = table[table["method"] == a]["source"]
    return _theirs(value(a), value(b), metric, where.iloc[0] if len(where) else "")


def _theirs(a: float, b: float, metric: str, source: str) -> dict[str, Any]:
    """A verdict row's report columns: its ``a``, ``b`` and their difference on ``metric``, from ``source``."""
    return {"their_a": a, "their_b": b, "their_diff": a - b, "their_metric": metric, "their_source": source,
            "their_model": PAPER_MODEL}  # fmt: skip


VERDICT_COLUMNS = ("report", "source", "claim", "metric", "sign", "their_a", "their_b", "their_diff",
                   "their_metric", "their_source", "their_model", "model", "our_a", "our_b", "our_diff",
                   "ci_low", "ci_high", "mde", "n_seeds", "verdict")  # fmt: skip
"""Columns of the verdict table."""


def verdict_table(
    results: Mapping[str, StudyResult],
    claims: Sequence[Claim] | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per claim (default ``all_claims``): what the report claimed (``a`` above/below ``b`` at
    ``metric``), its numbers on its model, ours on our model (means over seeds), our seed-aware interval
    of ``a - b`` (``compare``), the minimum detectable effect and the verdict (``compare.verdict``)."""
    claims = all_claims() if claims is None else claims
    means = {block: summary_table(result).set_index("method") for block, result in results.items()}
    rows = []
    for claim in claims:
        result = results[claim.block]
        key = (claim.a, claim.b, claim.metric)
        ours = paired_table(result, [key[:2]], (claim.metric,), n_resamples, seed, {key: claim.sign}).iloc[0]
        our_a, our_b = (float(means[claim.block].loc[m, claim.metric]) for m in key[:2])
        text = f"{claim.a} {'above' if claim.sign > 0 else 'below'} {claim.b}"
        if claim.block != HOME_BLOCK.get(claim.report, MAIN):
            text += f", on {result.preset.data.policy}"
        head = {"report": claim.report, "source": claim.source, "claim": text, "metric": claim.metric,
                "sign": claim.sign}  # fmt: skip
        rows.append(claim_row(head, their_numbers(claim), block_model(result), our_a, our_b, ours))
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def claim_row(
    head: Mapping[str, Any],
    theirs: Mapping[str, Any],
    model: str,
    our_a: float,
    our_b: float,
    ours: pd.Series,
) -> dict[str, Any]:
    """One ``VERDICT_COLUMNS`` row: the claim (``head``: report, source, claim, metric, sign), the report's
    numbers (``their_numbers``' keys), our means and a ``PAIRED_COLUMNS`` row ``ours`` of the comparison."""
    return {**head, **theirs, "model": model, "our_a": our_a, "our_b": our_b, "our_diff": ours["diff"],
            "ci_low": ours["ci_low"], "ci_high": ours["ci_high"], "mde": ours["mde"],
            "n_seeds": ours["n_seeds"], "verdict": ours["verdict"]}  # fmt: skip


OOD_METRIC = "OOD exact pass@16"
"""Report 004's Table 4 metric, under the name ``references`` gives it."""
SWEEP_METHODS = (VCC_SWEEP_CONTROL, *VCC_SWEEP)
"""Report 003's tight sweep on the search-style policy, its control included (notebook 06 runs them; they
are shared); the validation-selection claim is judged on the coefficients' runs (``selection.SELECTION_POOL``)."""
SELECTED = "Validation-selected checkpoint"
"""The name ``references`` gives report 003's validation-selected checkpoint."""


def ood_verdicts(result: StudyResult, n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Report 004's Table 4 claim, one ``VERDICT_COLUMNS`` row per synthetic student (``ZERO_CLAIMS_004``):
    its exact pass@16 on the 5-number set stays at zero (``tables.zero_claims_table``; ``sign`` 0, ``b``
    is zero, ``mde`` what an all-zero result rules out)."""
    table = zero_claims_table(
        eval_set_result(result, "ood"), ZERO_CLAIMS_004, "pass@16", "zero", n_resamples, seed
    )
    reports = reported(("004",), ZERO_CLAIMS_004).set_index(["method", "metric"])["value"]
    ood = eval_set_result(result, "ood")
    control = REPORT_004[0].name
    floor = control in ood.methods and at_bound(problem_matrix(ood, control, "pass@16"))
    if floor:  # the control solves nothing either: a zero there says nothing of synthetic tasks
        table["verdict"] = UNTESTABLE
    rows = []
    for method, (_, ours) in zip(ZERO_CLAIMS_004, table.iterrows(), strict=True):
        head = {"report": "004", "source": "ZERO_CLAIMS_004", "claim": f"{method} at zero on 5-number tasks",
                "metric": OOD_METRIC, "sign": 0}  # fmt: skip
        theirs = _theirs(float(reports[(method, OOD_METRIC)]), 0.0, OOD_METRIC, "Table 4")
        rows.append(claim_row(head, theirs, block_model(result), ours["diff"], 0.0, ours))
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def selection_verdicts(sweep: StudyResult, n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Report 003's claim that validation selection is unreliable, as one ``VERDICT_COLUMNS`` row from the
    tight sweep's runs (``selection.selection_claim``: the validation-selected minus the final checkpoint's
    test pass@1; their number is their selected checkpoint's, they give no final one)."""
    chosen = select_checkpoints(snapshot_table(sweep))
    ours = selection_claim(sweep, chosen, n_resamples, seed).iloc[0]
    head = {"report": "003", "source": "selection.SELECTION_CLAIM",
            "claim": f"{SELECTION_CONTRAST.replace(' vs ', ' not above ')} (tight sweep, test tasks)",
            "metric": "pass@1", "sign": SELECTION_CLAIM}  # fmt: skip
    their_a = float(reported(("003",), (SELECTED,)).set_index("metric").loc["pass@1", "value"])
    theirs = _theirs(their_a, float("nan"), "pass@1", "Sec. 5.2, tight sweep")
    our_a, our_b = float(chosen["selected_test"].mean()), float(chosen["final_test"].mean())
    return pd.DataFrame([claim_row(head, theirs, block_model(sweep), our_a, our_b, ours)],
                        columns=list(VERDICT_COLUMNS))  # fmt: skip


def all_verdicts(
    results: Mapping[str, StudyResult],
    sweep: StudyResult | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """Every headline claim in one table, ordered by report: ``verdict_table``, report 004's 5-number claim
    (``ood_verdicts``, where the main block has report 004's synthetic students) and, given the tight sweep,
    report 003's validation-selection claim (``selection_verdicts``)."""
    tables = [verdict_table(results, n_resamples=n_resamples, seed=seed)]
    main = results[MAIN]
    if set(ZERO_CLAIMS_004) <= set(main.methods):
        tables.append(ood_verdicts(main, n_resamples, seed))
    if sweep is not None:
        tables.append(selection_verdicts(sweep, n_resamples, seed))
    table = pd.concat(tables, ignore_index=True).sort_values("report", kind="stable", ignore_index=True)
    return honest_verdicts(table)


def honest_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (``VERDICT_COLUMNS``) with ``study.claims``' categories: a row whose numbers repeat an
    earlier row's exactly (same metric, sign, model and per-task results) is ``same runs as <claim>``;
    a signed claim inside the noise whose MDE exceeds the report's own effect is ``underpowered``; an end
    within ``claims.BORDERLINE`` of zero is ``borderline``; ``untestable`` rows stay so."""
    table = table.copy()
    seen: dict[tuple, str] = {}
    for i, row in table.iterrows():
        if row["verdict"] == UNTESTABLE:
            continue
        key = (
            row["metric"],
            row["sign"],
            row["model"],
            row["our_a"],
            row["our_b"],
            row["ci_low"],
            row["ci_high"],
        )
        if key in seen:
            table.at[i, "verdict"] = f"{SAME_RUNS} {seen[key]}"
            continue
        seen[key] = f"{row['report']}: {row['claim']}"
        if row["sign"] != 0:
            table.at[i, "verdict"] = classify_interval(
                row["ci_low"],
                row["ci_high"],
                row["mde"],
                int(row["n_seeds"]),
                int(row["sign"]),
                float(row["their_diff"]),
            )
    return table
