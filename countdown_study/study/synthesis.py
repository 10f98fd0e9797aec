"""The synthesis of the five reports: every method row on one footing, and every headline claim's verdict.

The rows fall in two blocks, each run from its own starting policy on the same held-out tasks and seeds:

* ``MAIN``: the baselines, reports 000, 001, 002 and 004, report 003's curricula and VCC (also run here,
  ``REPORT_003_EMBEDDED``) and the field's methods, on the embedded policy;
* ``SEARCH``: report 003's rows on the search-style policy (``SEARCH_POLICY``), a different model, so its
  rows are compared only with each other and every table names the model of each row.

A row is measured against the uniform RLOO row of its own block and reward (``uniform_reference``: report
001's rows against its binary-reward uniform row, rows trained on whole rollouts against uniform RLOO on
whole rollouts) and against the controls its report names (``CONTRASTS_*``). The claims come from the
``CLAIMS_*`` dicts of ``study.methods``, their one source of truth (``all_claims``). The cross-report
questions and the cost of each row are in ``study.synthesis_tables``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from countdown_study.reporting.references import PAPER_MODEL, reported
from countdown_study.study.claims import SAME_RUNS, UNTESTABLE, at_bound, classify_interval
from countdown_study.study.compare import compare
from countdown_study.study.methods import (
    CLAIMS_000,
    CLAIMS_001,
    CLAIMS_002,
    CLAIMS_003,
    CLAIMS_003_EMBEDDED,
    CLAIMS_004,
    CLAIMS_BASELINES,
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
    VCC_SWEEP,
    VCC_SWEEP_CONTROL,
    WHOLE_UNIFORM,
    ZERO_CLAIMS_004,
    Method,
    StudyResult,
    eval_set_result,
    model_label,
)
from countdown_study.study.selection import (
    SELECTION_CLAIM,
    SELECTION_CONTRAST,
    select_checkpoints,
    selection_claim,
    snapshot_table,
)
from countdown_study.study.tables import paired_table, problem_matrix, summary_table, zero_claims_table

# ---------------------------------------------------------------------------------------------------
# The rows, in two blocks
# ---------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------
# Every row in one table, and the paired comparisons
# ---------------------------------------------------------------------------------------------------

SUMMARY_METRICS = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "avg_pass@k", "mean_score",
                   "exact_rate")  # fmt: skip
"""The metrics of the joint summary (each with its seed s.d.)."""
INTERVAL_METRICS = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "mean_score")
"""The summary metrics that are means of per-task values, each given a seed-aware interval (the exact rate's
would be pass@1's: per task they are equal)."""
PAIRED_METRICS = ("pass@1", "pass@16", "mean_score")
"""The metrics of the paired comparisons."""


def level_interval(values: np.ndarray, seed: int = 0, n_resamples: int = 5000) -> tuple[float, float]:
    """Seed-aware 95% interval of a method's mean of one metric, ``values`` ``(tasks, seeds)``: the study's
    comparison (``compare``: seeds and tasks) of the method against zero."""
    c = compare(values, np.zeros_like(values), seed, n_resamples)
    return c.ci_low, c.ci_high


def block_summary(result: StudyResult, block: str, n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """``summary_table`` of one block's rows: ``SUMMARY_METRICS`` with seed s.d. and, for
    ``INTERVAL_METRICS``, ``<metric>_low`` / ``<metric>_high`` (``level_interval``)."""
    summary = summary_table(result)
    columns = ["method"]
    for metric in (m for m in SUMMARY_METRICS if m in summary):
        columns += [metric, f"{metric}_sd"]
        if metric in INTERVAL_METRICS:
            bounds = [
                level_interval(problem_matrix(result, m, metric), seed, n_resamples)
                for m in summary["method"]
            ]
            summary[f"{metric}_low"], summary[f"{metric}_high"] = zip(*bounds, strict=True)
            columns += [f"{metric}_low", f"{metric}_high"]
    return labelled(summary[[*columns, "n_seeds"]], block, result)


def joint_summary(results: Mapping[str, StudyResult], n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Every row of every block in one table (``block_summary``), labelled by block, model and report."""
    tables = [block_summary(result, block, n_resamples, seed) for block, result in results.items()]
    return pd.concat(tables, ignore_index=True)


def joint_paired(
    results: Mapping[str, StudyResult],
    metrics: Sequence[str] = PAIRED_METRICS,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """``paired_table`` of every block's ``contrasts``, with ``block``, ``model``, ``report`` (of ``a``),
    ``against`` (``UNIFORM_AGAINST``, a report's control or another row), ``a`` and ``b`` in front;
    ``verdict`` judges the contrasts a report claims (``all_claims``) and orders the others."""
    tables = []
    for block, result in results.items():
        pairs = contrasts(block)
        claimed = {c.key: c.sign for c in all_claims() if c.block == block}
        table = paired_table(result, pairs, metrics, n_resamples, seed, claims=claimed)
        a, b = ([pair[i] for pair in pairs for _ in metrics] for i in (0, 1))  # paired_table's row order
        table.insert(0, "b", b)
        table.insert(0, "a", a)
        table.insert(0, "against", [against(block, x, y) for x, y in zip(a, b, strict=True)])
        tables.append(labelled(table, block, result, method="a"))
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------------------------------
# The claims and their verdicts
# ---------------------------------------------------------------------------------------------------

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
    ("001", "Sliding window", "RLOO uniform (binary reward)", "pass@1"):
        ("Sliding window", "RLOO uniform", "pass@1"),
    ("003", "Commit reward only", "RLOO uniform", "pass@1"):
        ("Commit reward only", "RLOO uniform (Table 2 run)", "exact_rate"),
    ("003", "VCC-RLOO", "RLOO uniform (whole rollouts)", "pass@16"): ("VCC-RLOO", "RLOO uniform", "pass@16"),
}  # fmt: skip
"""Claims whose report gives its numbers under other rows or another metric (``references``): report 001
calls its binary-reward baseline RLOO uniform; report 003's Table 2 compares rollout accuracy (exact rate,
our pass@1 per rollout) with another RLOO run than its Table 1's; its RLOO baseline is on whole rollouts."""


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
"""Report 003's tight sweep on the search-style policy: the runs its validation-selection claim is judged
on (notebook 06 runs them; they are shared)."""
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
