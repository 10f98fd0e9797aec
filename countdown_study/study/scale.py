"""The scale study (notebook 09): the headline rows at each size of the embedded policy, each size's rows
against uniform RLOO of the same size.

Three sizes of one recipe (``training.sft_recipes``: the same solver traces, batch, steps and schedule):
``embedded-small`` (0.86M parameters), ``embedded`` (3.4M, the policy of every other notebook) and
``embedded-large`` (11.5M). ``ROWS`` are the headline rows of the five reports and the field, the same
``Method`` objects the other notebooks run, so the ``embedded`` size reuses their runs (same run ids).

Each size is measured on its own: a row against the uniform RLOO row of its reward and rollouts
(``synthesis.uniform_reference``: report 001's sliding window against uniform RLOO with its binary reward,
VCC-RLOO against uniform RLOO on whole rollouts) with the study's seed-aware comparison
(``tables.paired_table``), at the metric of the report's claim and judged against its claimed sign
(``CLAIMS``, from ``synthesis.all_claims``); the baselines' claims are against the SFT policy of the same
size. A size whose policy is not shipped yet is skipped (``unshipped``), so the notebook runs at every
stage of the policies' making.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from countdown_study.policy import EMBEDDED_POLICIES, load_policy
from countdown_study.policy.model import SHIP_COMMANDS, is_shipped
from countdown_study.study.compare import compare
from countdown_study.study.methods import (
    FIELD_BASELINES,
    IPO,
    REPORT_000,
    REPORT_001,
    REPORT_002,
    REPORT_003_EMBEDDED,
    REPORT_004,
    SFT,
    UNIFORM,
    WHOLE_UNIFORM,
    Method,
    StudyResult,
)
from countdown_study.study.synthesis import CONTROLS, MAIN, all_claims, uniform_reference
from countdown_study.study.synthesis_tables import run_times
from countdown_study.study.tables import paired_table, problem_matrix, summary_table
from countdown_study.training.sft_recipes import RECIPES
from countdown_study.training.sft_ship import SHIPPED_INFO_FILE

NOTEBOOK = "09_scale"
"""The notebook of the scale study."""

# ---------------------------------------------------------------------------------------------------
# The sizes and the rows
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """One policy size of the scale study."""

    name: str
    """Its name in tables and figures (``small``, ``embedded``, ``large``)."""
    recipe: str
    """The SFT recipe that makes its policy (``training.sft.RECIPES``)."""
    parameter: str
    """The notebook parameter naming its policy (``-p large_policy ...``)."""

    @property
    def policy(self) -> str:
        """Its shipped policy's name (the notebook parameter's default)."""
        return RECIPES[self.recipe].policy

    @property
    def parameters(self) -> int:
        """Parameters of its recipe's model shape."""
        return RECIPES[self.recipe].config.model.num_parameters


SEEDS = 5
"""Training seeds per size: the preset's first five, at every size, however many the preset has (the
3.4M rows' other seeds are left out here so that every size is compared on the same seeds)."""

SIZES = (Size("small", "small", "small_policy"), Size("embedded", "solver", "policy"),
         Size("large", "large", "large_policy"))  # fmt: skip
"""The three sizes, smallest first."""

ROWS: tuple[Method, ...] = (
    SFT,
    IPO,
    UNIFORM,
    REPORT_000[2],  # Adaptive v1
    REPORT_001[0],  # uniform RLOO with report 001's binary reward: the sliding window's reference
    REPORT_001[1],  # Sliding window
    REPORT_002[0],  # Dynamic edge
    REPORT_002[5],  # Edge x feature_failure
    REPORT_003_EMBEDDED[0],  # Staged curriculum
    WHOLE_UNIFORM,  # uniform RLOO on whole rollouts: VCC-RLOO's reference
    REPORT_003_EMBEDDED[4],  # VCC-RLOO (whole rollouts)
    REPORT_004[1],  # Router, real tasks only
    FIELD_BASELINES[1],  # Band-pass 0.2-0.8
)
"""The rows run at every size: SFT, IPO and uniform RLOO; report 000's reward-adaptive v1, 001's sliding
window, 002's dynamic edge and edge x feature_failure, 003's staged curriculum and VCC-RLOO on whole
rollouts, 004's router on real tasks, the field's band-pass filter; and the two uniform RLOO rows those of
reports 001 and 003 are measured against (binary reward; whole rollouts)."""


@dataclass(frozen=True)
class ScaleClaim:
    """One comparison made at every size: ``a - b`` at ``metric``, with the report's claimed sign."""

    a: str
    """The row claimed to differ."""
    b: str
    """The row it is measured against at the same size: the SFT policy or ``a``'s uniform RLOO row."""
    metric: str
    """The claim's metric."""
    sign: int
    """Claimed sign of ``a - b`` (+1 above, -1 below; 0: no claim, the row is ordered only)."""
    report: str
    """The report making it (``field`` for an unclaimed row of the field's)."""
    source: str = ""
    """The ``synthesis.Claim`` it tests: its claims dict (``CLAIMS_002``; empty for an unclaimed row) ..."""
    key: tuple = ()
    """... and its key there (``(a, b)`` or ``(a, b, metric)``, ``b`` the report's control), so that the
    synthesis' verdict of a claim joins its verdicts at every size."""

    @property
    def text(self) -> str:
        """The claim in words: ``a above b`` / ``a below b`` / ``a vs b``."""
        relation = {1: "above", -1: "below", 0: "vs"}[self.sign]
        return f"{self.a} {relation} {self.b}"


def scale_claims(rows: Sequence[Method] = ROWS) -> tuple[ScaleClaim, ...]:
    """The comparisons of ``rows`` made at every size, from the main block's claims (``all_claims``): a claim
    against the SFT policy as it is, a claim against a uniform control (the row's uniform RLOO row or a
    report's named control, ``synthesis.CONTROLS``) against the row's uniform RLOO row; claims between two
    curricula are left out. A row with no such claim that is no one's reference is ordered at pass@1."""
    names = [m.name for m in rows]
    references = {SFT.name, *(uniform_reference(MAIN, n) for n in names)}
    found: list[ScaleClaim] = []
    for claim in all_claims():
        if claim.block != MAIN or claim.a not in names:
            continue
        reference = uniform_reference(MAIN, claim.a)
        if claim.b == SFT.name or claim.b == reference or claim.b in CONTROLS:
            b = SFT.name if claim.b == SFT.name else reference
            found.append(
                ScaleClaim(claim.a, b, claim.metric, claim.sign, claim.report, claim.source, claim.key)
            )
    claimed = {c.a for c in found}
    for name in names:
        if name not in claimed and name not in references:
            found.append(ScaleClaim(name, uniform_reference(MAIN, name), "pass@1", 0, "field"))
    order = {name: i for i, name in enumerate(names)}
    return tuple(sorted(dict.fromkeys(found), key=lambda c: order[c.a]))


CLAIMS = scale_claims()
"""The comparisons of ``ROWS`` at every size (12: the baselines' three, one per curriculum row, two of the
staged curriculum's, and the band-pass filter ordered)."""


def unshipped(policies: Mapping[str, str]) -> dict[str, str]:
    """For each size (name -> policy) whose policy is a shipped name not shipped yet, the line saying that
    its rows are skipped and the command that makes it; sizes given a folder or a hub id are not checked."""
    return {
        size: f"{size}: {policy} is not shipped yet, so its rows are skipped (make it with "
        f"`{SHIP_COMMANDS[policy]}`)"
        for size, policy in policies.items()
        if policy in EMBEDDED_POLICIES and not is_shipped(policy)
    }


def joint_study(
    studies: Mapping[str, tuple[StudyResult, Mapping[str, Any]]],
) -> tuple[dict[str, StudyResult], dict[str, Any]]:
    """The sizes' results (size -> ``StudyResult``) and one provenance ``meta`` for every output of the
    notebook: the first size's ``meta`` with ``policies`` (size -> policy) and every size's runs, each run
    record naming its starting policy. ``studies``: size -> what ``run_notebook_study`` returned."""
    if not studies:
        raise ValueError("no size was run: every policy of the scale study is missing")
    metas = {size: meta for size, (_, meta) in studies.items()}
    first = next(iter(metas.values()))
    runs = [{**run, "policy": meta["policy"]} for meta in metas.values() for run in meta["runs"]]
    meta = {**first, "policies": {size: m["policy"] for size, m in metas.items()}, "runs": runs}
    return {size: result for size, (result, _) in studies.items()}, meta


# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------

SFT_QUALITY = ("pass@1", "pass@16", "well_formed", "answer_spans_per_rollout", "truncated")
"""The shipped record's quality (``sft.json``) shown per size."""


def policy_record(policy: str) -> dict[str, Any]:
    """What a policy's ``sft.json`` records (an empty dict where it has none: a hub id, a plain folder)."""
    folder = EMBEDDED_POLICIES.get(policy, Path(policy))
    record = folder / SHIPPED_INFO_FILE
    return json.loads(record.read_text()) if record.is_file() else {}


def size_row(size: str, policy: str, parameters: int, record: Mapping[str, Any]) -> dict[str, Any]:
    """One row of ``size_table``: the size, its policy and parameters, its SFT run's steps and hours, and
    its recorded quality with the sampling it was measured at (NaN where the record lacks a value)."""
    quality = record.get("quality") or {}
    sampling = quality.get("measured_with", {}).get("sampling", {})
    wall = record.get("wall_seconds")
    return {
        "size": size,
        "policy": policy,
        "parameters": parameters,
        "sft_steps": record.get("steps_done", np.nan),
        "sft_hours": wall / 3600 if wall is not None else np.nan,
        **{f"sft_{key}": quality.get(key, np.nan) for key in SFT_QUALITY},
        "measured_temperature": sampling.get("temperature", np.nan),
        "measured_max_new_tokens": sampling.get("max_new_tokens", np.nan),
    }


def size_table(results: Mapping[str, StudyResult]) -> pd.DataFrame:
    """One row per size of ``results`` (``size_row``), smallest first; parameters are counted on the loaded
    policy, the rest read from its ``sft.json``."""
    rows = []
    for size, result in results.items():
        policy = result.preset.data.policy
        model, _ = load_policy(policy)
        count = sum(p.numel() for p in model.parameters())
        rows.append(size_row(size, policy, count, policy_record(policy)))
    return pd.DataFrame(rows).sort_values("parameters", kind="stable", ignore_index=True)


def size_columns(sizes: pd.DataFrame, size: str) -> dict[str, Any]:
    """The ``size``, ``policy`` and ``parameters`` columns of one size of a ``size_table``."""
    row = sizes.set_index("size").loc[size]
    return {"size": size, "policy": row["policy"], "parameters": int(row["parameters"])}


def _in_size_order(tables: list[pd.DataFrame], sizes: pd.DataFrame) -> pd.DataFrame:
    """``tables`` (each with a ``size`` column) in one table, sizes in ``sizes``' order (smallest first)."""
    order = {size: i for i, size in enumerate(sizes["size"])}
    table = pd.concat(tables, ignore_index=True)
    return table.sort_values("size", key=lambda s: s.map(order), kind="stable", ignore_index=True)


def scale_summary(results: Mapping[str, StudyResult], sizes: pd.DataFrame) -> pd.DataFrame:
    """``summary_table`` of every size's rows with the size columns in front (``size_columns``)."""
    tables = []
    for size, result in results.items():
        summary = summary_table(result)
        front = pd.DataFrame([size_columns(sizes, size)] * len(summary), index=summary.index)
        tables.append(pd.concat([front, summary], axis=1))
    return _in_size_order(tables, sizes)


SCALE_COLUMNS = ("size", "policy", "parameters", "report", "claim", "contrast", "a", "b", "metric", "sign",
                 "diff", "ci_low", "ci_high", "mde", "n_seeds", "verdict")  # fmt: skip
"""Columns of ``scale_paired`` (``contrast``: ``<size>: <a> vs <b>``, as every ``*_paired`` table names its
rows)."""


def scale_paired(
    results: Mapping[str, StudyResult],
    sizes: pd.DataFrame,
    claims: Sequence[ScaleClaim] = CLAIMS,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each claim at each size: ``a - b`` with the study's seed-aware interval (``paired_table``), its
    minimum detectable effect, and the verdict against the claimed sign (``holds``, ``reversed``, ``inside
    noise``; an unclaimed row: ``a above b``, ``a below b``, ``inside noise``); ``SCALE_COLUMNS``, sizes
    smallest first, claims in ``claims``' order within a size."""
    tables = []
    for size, result in results.items():
        rows = [
            {**size_columns(sizes, size), **claim_row(result, size, claim, n_resamples, seed)}
            for claim in claims
        ]
        tables.append(pd.DataFrame(rows, columns=list(SCALE_COLUMNS)))
    return _in_size_order(tables, sizes)


COMPARISON_COLUMNS = ("diff", "ci_low", "ci_high", "mde", "n_seeds", "verdict")
"""What ``scale_paired`` keeps of a ``paired_table`` row."""


def claim_row(
    result: StudyResult, size: str, claim: ScaleClaim, n_resamples: int, seed: int
) -> dict[str, Any]:
    """One claim at one size: the claim's columns and the ``COMPARISON_COLUMNS`` of its ``paired_table`` row
    (judged against the claimed sign when there is one)."""
    signed = {(claim.a, claim.b, claim.metric): claim.sign} if claim.sign else None
    ours = paired_table(result, [(claim.a, claim.b)], (claim.metric,), n_resamples, seed, signed).iloc[0]
    head = {"report": claim.report, "claim": claim.text, "contrast": f"{size}: {claim.a} vs {claim.b}",
            "a": claim.a, "b": claim.b, "metric": claim.metric, "sign": claim.sign}  # fmt: skip
    return {**head, **{key: ours[key] for key in COMPARISON_COLUMNS}}


TREND_COLUMNS = ("report", "claim", "a", "b", "metric", "smaller", "larger", "change", "ci_low", "ci_high",
                 "mde", "n_seeds", "reading")  # fmt: skip
"""Columns of ``scale_trend``."""
TREND_READINGS = ("rises", "falls", "inside noise")
"""What ``scale_trend`` says of a change: the claim's difference ``a - b`` is higher (``rises``) or lower
(``falls``) at the larger size with the interval clear of zero, or the change is ``inside noise``."""


def claim_cells(result: StudyResult, claim: ScaleClaim) -> np.ndarray:
    """The claim's difference ``a - b`` of ``claim.metric`` per task and training seed at one size, ``(T, S)``
    (``tables.problem_matrix``: tasks by task index, the result's seeds in order)."""
    return problem_matrix(result, claim.a, claim.metric) - problem_matrix(result, claim.b, claim.metric)


def scale_trend(
    results: Mapping[str, StudyResult],
    sizes: pd.DataFrame,
    claims: Sequence[ScaleClaim] = CLAIMS,
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """How each claim's difference changes from each size to the next larger one (sizes in ``sizes``'
    order, smallest first): ``change`` = (``a - b`` at the larger) - (``a - b`` at the smaller), with the
    study's seed-aware interval (``compare.compare`` on the two sizes' ``claim_cells``: every size is
    scored on the same tasks, so the task effects pair; the sizes' runs are independent, so their seeds pair
    by index only, which the interval's seed term allows for), its minimum detectable effect and a
    ``TREND_READINGS`` reading. ``TREND_COLUMNS``; empty while fewer than two sizes have run."""
    order = [size for size in sizes["size"] if size in results]
    rows = []
    for claim in claims:
        cells = {size: claim_cells(results[size], claim) for size in order}  # a middle size serves two steps
        for smaller, larger in zip(order, order[1:], strict=False):
            low, high = cells[smaller], cells[larger]
            if low.shape != high.shape:
                raise ValueError(
                    f"{claim.text} ({claim.metric}): sizes {smaller!r} and {larger!r} have (tasks, seeds) "
                    f"{low.shape} and {high.shape}; a change needs the same tasks and seeds"
                )
            c = compare(high, low, seed, n_resamples)
            reading = "rises" if c.ci_low > 0 else "falls" if c.ci_high < 0 else "inside noise"
            rows.append({"report": claim.report, "claim": claim.text, "a": claim.a, "b": claim.b,
                         "metric": claim.metric, "smaller": smaller, "larger": larger, "change": c.diff,
                         "ci_low": c.ci_low, "ci_high": c.ci_high, "mde": c.mde, "n_seeds": c.n_seeds,
                         "reading": reading})  # fmt: skip
    return pd.DataFrame(rows, columns=list(TREND_COLUMNS))


def verdicts_by_size(paired: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of ``scale_paired``: its report, claim and metric, the verdict at each size (a
    column per size, smallest first) and ``same_at_every_size`` (empty while one size alone has run: there
    is nothing to compare)."""
    keys = ["report", "claim", "metric"]
    wide = paired.pivot_table(index=keys, columns="size", values="verdict", aggfunc="first")
    order = list(dict.fromkeys(zip(*(paired[k] for k in keys), strict=True)))  # the claims' order
    wide = wide.reindex(pd.MultiIndex.from_tuples(order, names=keys))[list(dict.fromkeys(paired["size"]))]
    sizes = len(wide.columns)
    same = (wide.nunique(axis=1, dropna=False) == 1).astype("boolean")
    wide["same_at_every_size"] = same if sizes > 1 else pd.Series(pd.NA, index=wide.index, dtype="boolean")
    wide.columns.name = None
    return wide.reset_index()


def cost_by_method(results: Mapping[str, StudyResult], sizes: pd.DataFrame) -> pd.DataFrame:
    """Per size and row: the runs; ``seconds_per_run``, the median of their wall seconds
    (``synthesis_tables.run_times``: started to finished in each run's record, training and evaluation);
    and ``training_seconds_per_run``, the median of their training phases' seconds (the step log's
    sampling, grading and update timings; NaN for SFT, which only evaluates, and IPO, whose step log has no
    timings). A run interrupted and resumed later (a stopped machine, a killed worker) spans its pause in
    wall time: the median keeps a few such runs from moving a row, and the training seconds never count a
    pause. Sizes smallest first."""
    tables = []
    for size, result in results.items():
        times = run_times(result).groupby(level="method", sort=False)
        table = pd.DataFrame(
            {
                "runs": times.size(),
                "seconds_per_run": times["wall_seconds"].median(),
                "training_seconds_per_run": times["phase_seconds"].median(),
            }
        )
        table = table.reindex(list(result.methods)).reset_index()
        tables.append(pd.concat([pd.DataFrame([size_columns(sizes, size)] * len(table)), table], axis=1))
    return _in_size_order(tables, sizes)


def cost_by_size(cost: pd.DataFrame) -> pd.DataFrame:
    """Per size of ``cost_by_method``: its runs, their total hours (each row's runs at its median wall
    seconds), and the seconds of one run of each kind of row (``sft``: evaluating the policy; ``rloo``: every
    RLOO row; ``ipo``), from the rows' medians weighted by their runs."""
    kinds = {SFT.name: "sft", IPO.name: "ipo"}
    cost = cost.assign(
        kind=cost["method"].map(kinds).fillna("rloo"), total=cost["runs"] * cost["seconds_per_run"]
    )
    rows = []
    for (size, policy, parameters), group in cost.groupby(["size", "policy", "parameters"], sort=False):
        row = {"size": size, "policy": policy, "parameters": parameters, "runs": int(group["runs"].sum()),
               "total_hours": group["total"].sum() / 3600}  # fmt: skip
        for kind in ("sft", "ipo", "rloo"):
            of_kind = group[group["kind"] == kind]
            runs = int(of_kind["runs"].sum())
            row[f"{kind}_seconds_per_run"] = of_kind["total"].sum() / runs if runs else np.nan
        rows.append(row)
    return pd.DataFrame(rows)
