"""The claim registry: every quantitative claim of the five reports, and its verdict on our runs.

The claims are data (``claims_registry.csv`` beside this module, read without executing anything): one
row per claim with its source in the report, the report's metric, the rows it compares (our method
names), its direction, the report's own numbers, the block (starting policy) and evaluation set it is
tested on, or why it cannot be tested. ``claims_table`` tests each one with the study's comparison
(``study.compare``) and writes the columns of ``results/tables/claims.csv``.

Verdicts (``classify``), in the order they are decided:

* ``not tested``: the registry says why (a row or metric this study does not have);
* ``untestable``: both arms sit at the floor (every value 0) or at the ceiling (every value 1) under every
  seed: nothing could have moved, so the claim is not evidence either way (report 004's 5-number tasks,
  where uniform RLOO solves none either);
* ``same runs as <claim_id>``: the per-task values of both arms equal those of an earlier claim with the
  same metric and sign (a hybrid curriculum that never left the staged schedule): counted once;
* ``holds`` / ``reversed``: the interval excludes zero on the claimed / the other side;
* ``borderline``: an end of the interval is within ``BORDERLINE`` (0.001) of zero, too close for its side
  to carry a verdict;
* ``underpowered``: the interval holds zero while the minimum detectable effect exceeds the size of the
  report's own effect (the design could not have seen it);
* ``inside noise``: the interval holds zero and the design would have seen the report's effect.

Kinds: ``pair`` (``a`` above or below ``b``); ``best`` / ``worst`` (``a`` above / below each row of
``b``: tested pair by pair; the row carries the least favourable pair, ``reversed`` if any pair is,
``holds`` only if every pair does); ``zero`` / ``nonzero`` (``a``'s rate against zero, ``b`` the uniform
control whose floor makes a zero claim ``untestable``); ``equal`` (no difference claimed: ``reversed``
when the interval excludes zero, otherwise ``inside noise`` or ``underpowered``; an equality is never
proven). Report 003's validation-selection claim (``a`` is ``SELECTED``) compares the validation-selected
with the final checkpoint over the tight sweep's runs, clustered by training seed. A claim on a run's own
training mix (``TRAINING_SHARES``: the share of its drawn prompts with 4 numbers) has one value per run, not
per task, and is compared by training seed with the paired t-interval (``compare_runs``).

The registry is read by ``study.claims_registry``; the verdict of an interval is ``study.verdicts``';
``study.seed_change`` computes the table on some of the training seeds and sets two tables side by side.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from countdown_study.countdown.features import difficulty_vectors
from countdown_study.evaluation.config import DataSpec
from countdown_study.evaluation.passk import pass_at_k, problem_table
from countdown_study.evaluation.run import study_tasks
from countdown_study.reporting.references import PAPER_MODEL
from countdown_study.study.claims_registry import (
    KINDS,
    REGISTRY,
    REGISTRY_COLUMNS,
    RegistryClaim,
    load_registry,
)
from countdown_study.study.compare import Comparison, compare, compare_runs, seeds_for_effect
from countdown_study.study.methods import StudyResult, eval_set_result, model_label
from countdown_study.study.verdicts import (
    BORDERLINE,
    EVIDENCE,
    NOT_TESTED,
    ONE_SEED,
    SAME_RUNS,
    UNTESTABLE,
    VERDICTS,
    at_bound,
    classify,
    classify_interval,
)

__all__ = [
    "BORDERLINE",
    "CLAIMS_COLUMNS",
    "ClaimPair",
    "EVIDENCE",
    "KINDS",
    "NOT_TESTED",
    "PARTIAL_REASONS",
    "REGISTRY",
    "REGISTRY_COLUMNS",
    "RegistryClaim",
    "SAME_RUNS",
    "SELECTED",
    "UNTESTABLE",
    "VERDICTS",
    "Values",
    "at_bound",
    "claims_table",
    "classify",
    "classify_interval",
    "judge",
    "load_registry",
    "parseable_result",
    "result_values",
    "task_values",
    "value_matrix",
    "verdict_counts",
]

SELECTED = "Validation-selected checkpoint"
"""``a`` of report 003's validation-selection claim."""
CLAIMS_COLUMNS = ("claim_id", "report", "source", "statement", "metric", "a", "b", "sign", "report_a",
                  "report_b", "policy", "ours_a", "ours_b", "diff", "ci_low", "ci_high", "t_low", "t_high",
                  "n_tasks", "n_seeds", "mde", "seeds_needed", "verdict", "why", "report_model")  # fmt: skip
"""Columns of ``results/tables/claims.csv``: ``report_a``/``report_b`` are on ``report_model`` (the reports'
policy), ``ours_a``/``ours_b`` and the interval on ``policy`` (ours)."""


# ---------------------------------------------------------------------------------------------------
# Per-task values of a metric
# ---------------------------------------------------------------------------------------------------

PARTIAL_REASONS = ("ok", "wrong_value", "wrong_numbers")
"""Verifier reasons of an answer that parses as an arithmetic expression (its value or numbers may be
wrong): report 004's "parseable" answer, which its verifier gives a partial reward and which its nonzero
pass@16 counts. Our format score also rewards a tagged answer that does not parse, so the format score
alone would read every task as nonzero (ours: the reason, not the reward, decides)."""


def parseable_result(result: StudyResult) -> StudyResult:
    """``result`` with a sample counted correct when its answer parses (its verifier reason is one of
    ``PARTIAL_REASONS``), not when it is exact: its pass@16 is report 004's Nonzero Pass@16 (Table 4), the
    same per-task values as the ``ood_nonzero_pass@16`` metric of ``task_values``."""
    samples = result.samples.assign(correct=result.samples["reason"].isin(PARTIAL_REASONS))
    return replace(result, samples=samples)


def _avg_pass_at_k(problems: pd.DataFrame) -> np.ndarray:
    n = int(problems["n"].min())
    return np.mean(
        [[pass_at_k(int(m), int(c), k) for m, c in zip(problems["n"], problems["correct"], strict=True)]
         for k in range(1, n + 1)], axis=0)  # fmt: skip


GAP = re.compile(r"(?P<first>.+?) - (?P<second>.+)")
"""A metric minus another on each task: ``pass@16 - pass@1`` (reports 000's and 003's pass@k climb claims)."""
TASK_SIZE = re.compile(r"(?P<metric>.+) \((?P<count>\d+) numbers\)")
"""A metric on the tasks of one size only: ``pass@1 (4 numbers)`` (reports 000's and 004's per-size
claims)."""


def task_values(samples: pd.DataFrame, metric: str) -> np.ndarray:
    """Per-task ``metric`` of one run's per-sample rows, tasks in index order, ``(T,)``.

    ``pass@k``, ``mean_score``, ``exact_rate`` (the share of exact samples: pass@1's estimator),
    ``avg_pass@k`` (pass@k averaged over k = 1..n), and report 004's Table 4 metrics on any set:
    ``ood_exact_pass@16`` (pass@16) and ``ood_nonzero_pass@16`` (a sample with a ``PARTIAL_REASONS``
    answer among the task's samples); report 003's ``first_verifying_pass@1`` (the share of samples whose
    first verifying answer, not their last, is correct). Any of them followed by `` (N numbers)``
    (``TASK_SIZE``) is taken on the tasks with N numbers alone, the same tasks for every run of a shared
    evaluation set; ``X - Y`` (``GAP``, inside any size) is metric X minus metric Y task by task
    (``pass@16 - pass@1``: how much of the pass@k climb a row keeps).
    """
    size = TASK_SIZE.fullmatch(metric)
    if size:
        count, metric = int(size["count"]), size["metric"]
        samples = samples[samples["num_count"] == count]
        if samples.empty:
            raise ValueError(f"no evaluated task has {count} numbers (metric {size.string!r})")
    gap = GAP.fullmatch(metric)
    if gap:
        return task_values(samples, gap["first"]) - task_values(samples, gap["second"])
    metric = metric.removeprefix("ood_exact_")
    if metric == "ood_nonzero_pass@16":
        partial = samples["reason"].isin(PARTIAL_REASONS)
        return partial.groupby(samples["task_index"]).any().sort_index().to_numpy(dtype=float)
    problems = problem_table(samples).sort_values("task_index")
    if metric == "exact_rate":
        return (problems["correct"] / problems["n"]).to_numpy(dtype=float)
    if metric == "first_verifying_pass@1":
        if "first_verifying_correct" not in problems.columns:
            raise ValueError(
                "these samples carry no first_verifying_correct column (report 003's diagnostic)"
            )
        return (problems["first_verifying_correct"] / problems["n"]).to_numpy(dtype=float)
    if metric == "avg_pass@k":
        return _avg_pass_at_k(problems)
    if metric not in problems.columns:
        raise ValueError(f"unknown metric {metric!r}")
    return problems[metric].to_numpy(dtype=float)


TRAINING_SHARES: dict[str, tuple[str, str]] = {
    "training 4-number share": ("four", ""),
    "train_hard_share": ("four", ""),
    "train deep-expression share (4 numbers)": ("deep", "four"),
    "train all-numbers-required share (4 numbers)": ("all_numbers_required", "four"),
}
"""Metrics of a run's own training mix, one value per run (``training_shares``), compared by training seed
(``compare_runs``): ``metric -> (flag, within)``, the share of its drawn training prompts with ``flag`` among
those ``within`` (all of them when empty), flags of the pool's tasks (``pool_flags``)."""
RUN_WHY = "one value per run (a share of its drawn training prompts), compared by seed"
"""The ``why`` of a claim on a run's training mix: how it was tested (``compare_runs``)."""


@functools.lru_cache(maxsize=4)
def pool_flags(data: DataSpec) -> dict[str, np.ndarray]:
    """One flag per task of the training pool of ``data`` (``methods.training_pool``, the order a sampler log
    indexes), from its difficulty vectors: ``four`` (4 numbers: report 002's "hard"), ``deep`` (shortest
    expression depth 3 or more) and ``all_numbers_required`` (no proper subset reaches the target)."""
    vectors = difficulty_vectors(study_tasks(data)[0])
    return {
        "four": (vectors["num_count"] == 4).to_numpy(),
        "deep": (vectors["shortest_expression_depth"] >= 3).to_numpy(),
        "all_numbers_required": vectors["all_numbers_required"].to_numpy(dtype=bool),
    }


def training_shares(result: StudyResult, method: str, metric: str = "training 4-number share") -> np.ndarray:
    """Per training seed of ``result``, ``metric`` (``TRAINING_SHARES``) of ``method``'s drawn training
    prompts, repeats counted, ``(S,)``: from its sampler's observation log where it keeps one (``batch`` rows,
    which index the training pool: report 002's samplers), else, for the 4-number share, from the step log's
    per-bucket batch counts (``batch_3``, ``batch_4``: report 000's fixed curricula). A row whose runs log
    neither raises, naming it (uniform RLOO and the reward-adaptive curricula log no sizes of their batches)."""
    flag, within = TRAINING_SHARES[metric]
    runs = result.runs[result.runs["method"] == method]
    if runs.empty:
        raise ValueError(f"no results for method {method!r}; have {list(result.methods)}")
    shares = []
    for seed in result.preset.seeds:
        path = Path(runs.loc[runs["seed"] == seed, "path"].iloc[0])
        observations = path / "tables" / "sampler_observations.parquet"
        if observations.is_file():
            flags = pool_flags(result.preset.run_data)
            log = pd.read_parquet(observations)
            drawn = log.loc[log["source"] == "batch", "task_index"].to_numpy()  # (D,)
            drawn = drawn[flags[within][drawn]] if within else drawn
            shares.append(float(flags[flag][drawn].mean()))
            continue
        steps = result.steps
        steps = steps[(steps["method"] == method) & (steps["seed"] == seed)] if len(steps) else steps
        if (flag, within) != ("four", "") or "batch_3" not in steps.columns or steps["batch_3"].isna().all():
            raise ValueError(f"the runs of {method!r} do not log their drawn prompts' {metric}")
        three = steps["batch_3"].fillna(0).sum()
        fours = steps["batch_4"].fillna(0).sum() if "batch_4" in steps.columns else 0
        shares.append(float(fours / (three + fours)))
    return np.array(shares)


def value_matrix(result: StudyResult, method: str, metric: str) -> np.ndarray:
    """Per-task ``metric`` of ``method`` under every seed of ``result``, ``(T, S)``."""
    table = result.samples[result.samples["method"] == method]
    if table.empty:
        raise ValueError(f"no results for method {method!r}; have {list(result.methods)}")
    return np.stack([task_values(table[table["seed"] == s], metric) for s in result.preset.seeds], axis=1)


def _fingerprint(*arrays: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return digest.hexdigest()


Values = Callable[[str, str], np.ndarray]


@dataclass(frozen=True)
class ClaimPair:
    """One tested pair of a claim: the rows, their values and the comparison."""

    b: str
    """The row compared with (``zero`` for a rate against zero)."""
    a_values: np.ndarray
    """``(T, S)`` values of ``a``."""
    b_values: np.ndarray
    """``(T, S)`` values of ``b``."""
    comparison: Comparison
    """``compare(a_values, b_values)``."""
    controls: tuple[np.ndarray, ...] = ()
    """``(T, S)`` values of a zero claim's controls (``b``), whose floor makes it untestable."""


def _run_pairs(claim: RegistryClaim, result: StudyResult) -> list[ClaimPair]:
    """The pairs of a claim on a run's own training mix (``TRAINING_SHARES``): one value per run, ``(1, S)``."""
    a = training_shares(result, claim.a, claim.metric)
    pairs = []
    for b in claim.b:
        b_values = training_shares(result, b, claim.metric)
        pairs.append(ClaimPair(b, a[None, :], b_values[None, :], compare_runs(a, b_values)))
    return pairs


def _pairs(claim: RegistryClaim, values: Values, n_resamples: int, seed: int) -> list[ClaimPair]:
    a = values(claim.a, claim.metric)
    if claim.kind in ("zero", "nonzero"):
        zero = np.zeros_like(a)
        controls = tuple(values(b, claim.metric) for b in claim.b)
        return [ClaimPair("zero", a, zero, compare(a, zero, seed, n_resamples), controls)]
    tested = []
    for b in claim.b:
        b_values = values(b, claim.metric)
        tested.append(ClaimPair(b, a, b_values, compare(a, b_values, seed, n_resamples)))
    return tested


def _least_favourable(pairs: list[ClaimPair], sign: int) -> ClaimPair:
    return min(pairs, key=lambda t: sign * t.comparison.diff / max(t.comparison.se, 1e-12))


def judge(claim: RegistryClaim, pairs: list[ClaimPair], seen: dict[str, str]) -> tuple[str, ClaimPair, str]:
    """``(verdict, the pair the row shows, why)`` of a tested claim (module docstring); ``seen`` maps the
    fingerprints of earlier claims' values to their ids and is updated."""
    sign = claim.sign
    if claim.kind in ("zero", "nonzero"):
        shown = pairs[0]
        floor = shown.controls and all(not np.any(v > 0) for v in shown.controls)
        if claim.kind == "zero" and not np.any(shown.a_values > 0) and floor:
            return UNTESTABLE, shown, f"floor: {', '.join(claim.b)} also at zero on every task and seed"
        if claim.kind == "zero" and not np.any(shown.a_values > 0):
            return "holds", shown, ""
        verdict = classify(shown.comparison, sign if claim.kind == "nonzero" else 1, claim.report_effect)
        if claim.kind == "zero":
            verdict = {"holds": "reversed"}.get(verdict, verdict)
        return verdict, shown, ""
    shown = pairs[0] if len(pairs) == 1 else _least_favourable(pairs, sign or 1)
    if all(at_bound(t.a_values) and at_bound(t.b_values) for t in pairs):
        return UNTESTABLE, shown, "both arms at the floor or ceiling on every seed"
    key = _fingerprint(*(x for t in pairs for x in (t.a_values, t.b_values))) + f"|{claim.metric}|{sign}"
    if key in seen:
        return f"{SAME_RUNS} {seen[key]}", shown, "identical per-task results to that claim's runs"
    seen[key] = claim.claim_id
    if len(pairs) == 1:
        return classify(shown.comparison, sign, claim.report_effect), shown, ""
    verdicts = [classify(t.comparison, sign, claim.report_effect) for t in pairs]
    for outcome in ("reversed", "borderline", "underpowered", "inside noise", ONE_SEED):
        if outcome in verdicts:
            worst = [t for t, v in zip(pairs, verdicts, strict=True) if v == outcome]
            return (
                outcome,
                _least_favourable(worst, sign),
                f"{len(pairs)} pairs: "
                + ", ".join(f"{v} {verdicts.count(v)}" for v in dict.fromkeys(verdicts)),
            )
    return "holds", shown, f"all {len(pairs)} pairs hold"


def _row(claim: RegistryClaim, policy: str) -> dict[str, Any]:
    nan = float("nan")
    return {"claim_id": claim.claim_id, "report": claim.report, "source": claim.source,
            "statement": claim.statement, "metric": claim.metric, "a": claim.a, "b": "|".join(claim.b),
            "sign": claim.sign, "report_a": claim.report_a, "report_b": claim.report_b, "policy": policy,
            "ours_a": nan, "ours_b": nan, "diff": nan, "ci_low": nan, "ci_high": nan, "t_low": nan,
            "t_high": nan, "n_tasks": 0, "n_seeds": 0, "mde": nan, "seeds_needed": nan,
            "verdict": NOT_TESTED, "why": claim.not_tested_why, "report_model": PAPER_MODEL}  # fmt: skip


def _filled(
    row: dict[str, Any], claim: RegistryClaim, verdict: str, shown: ClaimPair, why: str
) -> dict[str, Any]:
    c = shown.comparison
    needed = seeds_for_effect(c, claim.report_effect)
    row.update({"b": shown.b if len(claim.b) <= 1 else f"{shown.b} (least favourable of {len(claim.b)})",
                "ours_a": float(shown.a_values.mean()), "ours_b": float(shown.b_values.mean()),
                "diff": c.diff, "ci_low": c.ci_low, "ci_high": c.ci_high, "t_low": c.t_low, "t_high": c.t_high,
                "n_tasks": c.n_tasks, "n_seeds": c.n_seeds, "mde": c.mde,
                "seeds_needed": float("nan") if needed is None else needed, "verdict": verdict,
                "why": why})  # fmt: skip
    return row


def result_values(results: Mapping[str, StudyResult]) -> Callable[[RegistryClaim], Values]:
    """For a claim, the ``(method, metric) -> (T, S)`` values it is tested on: its block's runs on its
    evaluation set; each matrix (and each set's samples) computed once across claims."""
    sets: dict[tuple[str, str], StudyResult] = {}
    matrices: dict[tuple[str, str, str, str], np.ndarray] = {}

    def values_of(claim: RegistryClaim) -> Values:
        where = (claim.block, claim.eval_set)
        if where not in sets:
            result = results[claim.block]
            sets[where] = result if claim.eval_set == "test" else eval_set_result(result, claim.eval_set)

        def values(method: str, metric: str) -> np.ndarray:
            key = (*where, method, metric)
            if key not in matrices:
                matrices[key] = value_matrix(sets[where], method, metric)
            return matrices[key]

        return values

    return values_of


def claims_table(
    results: Mapping[str, StudyResult],
    selection: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
    claims: list[RegistryClaim] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Every registry claim with its verdict on ``results`` (``{"main": ..., "search": ...}``), columns
    ``CLAIMS_COLUMNS``. A claim on a block, set or row the results lack is ``not tested`` with the reason;
    ``selection`` gives report 003's validation-selected and final checkpoints' test pass@1, each
    ``(T, seeds)`` (``selection.selection_values``)."""
    claims = load_registry() if claims is None else claims
    values_of = result_values(results)
    seen: dict[str, str] = {}
    rows = []
    for claim in claims:
        result = results.get(claim.block)
        row = _row(claim, model_label(result.preset.data.policy) if result is not None else "")
        if claim.not_tested_why:
            rows.append(row)
            continue
        try:
            if claim.a == SELECTED:
                pair = _selection_pair(selection)
                verdict, why = classify(pair.comparison, claim.sign, claim.report_effect), ""
                rows.append(_filled(row, claim, verdict, pair, why))
                continue
            if result is None:
                raise ValueError(f"no {claim.block!r} block in these results")
            if claim.metric in TRAINING_SHARES:
                pairs = _run_pairs(claim, result)
            else:
                pairs = _pairs(claim, values_of(claim), n_resamples, seed)
        except ValueError as error:  # a row or set these results lack (a smaller preset)
            row["why"] = f"not in these results: {error}"
            rows.append(row)
            continue
        verdict, shown, why = judge(claim, pairs, seen)
        if claim.metric in TRAINING_SHARES:
            why = "; ".join(part for part in (why, RUN_WHY) if part)
        rows.append(_filled(row, claim, verdict, shown, why))
    return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS))


def _selection_pair(selection: Callable[[], tuple[np.ndarray, np.ndarray]] | None) -> ClaimPair:
    if selection is None:
        raise ValueError("no tight-sweep runs given for the validation-selection claim")
    selected, final = selection()
    return ClaimPair("Final checkpoint", selected, final, compare(selected, final))


def verdict_counts(claims: pd.DataFrame) -> dict[str, int]:
    """Claims per verdict (``same runs as ...`` counted under ``same runs``), in ``VERDICTS`` order."""
    verdicts = claims["verdict"].where(~claims["verdict"].str.startswith(SAME_RUNS), "same runs")
    counts = verdicts.value_counts()
    return {v: int(counts.get(v, 0)) for v in (*VERDICTS, "same runs") if counts.get(v, 0)}
