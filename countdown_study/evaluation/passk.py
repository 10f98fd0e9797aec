"""pass@k and the tables built on it, pure functions of a per-sample verdict table (no torch).

* ``pass_at_k(n, c, k)``: the unbiased estimator 1 - C(n-c, k) / C(n, k), exact.
* ``problem_table(samples)``: one row per task (samples, correct count, pass@k, first-verifying pass@k).
* ``summarize(samples)``: pass@k for k in {1, 2, 4, 8, 16} (those <= n), the average of pass@k over
  k = 1..n (report 003), mean verifier score, exact rate, well-formed rate, report 003's answer-span
  diagnostics, each also by number count and by tier.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

PASS_KS = (1, 2, 4, 8, 16)
"""The k of the reported pass@k (those <= n)."""
TRUNCATED = "length"
"""The finish reason of a rollout cut by the token cap (``truncated`` is their share)."""


# ---------------------------------------------------------------------------------------------------
# pass@k
# ---------------------------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from c correct of n samples: 1 - C(n-c, k) / C(n, k), in exact arithmetic.

    The probability that k samples drawn without replacement from the n include a correct one.
    """
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if n < 1:
        raise ValueError(f"pass@k needs n >= 1 samples, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"correct count c={c} must lie in [0, n={n}]")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie in [1, n={n}]: pass@k needs k <= n samples")
    total = math.comb(n, k)
    return float(Fraction(total - math.comb(n - c, k), total))


def _mean_pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> float:
    """Mean of pass@k over problems with n[i] samples and c[i] correct."""
    return float(np.mean([pass_at_k(int(ni), int(ci), k) for ni, ci in zip(n, c, strict=True)]))


def _average_pass_at_k(n: np.ndarray, c: np.ndarray) -> float:
    """Report 003's average of pass@k over k = 1..min(n), averaged over problems."""
    return float(np.mean([_mean_pass_at_k(n, c, k) for k in range(1, int(n.min()) + 1)]))


def _check_table(samples: pd.DataFrame) -> None:
    if samples.empty:
        raise ValueError("the per-sample table is empty: nothing to summarise")
    missing = {"task_index", "num_count", "reward", "correct", "well_formed"} - set(samples.columns)
    if missing:
        raise ValueError(f"the per-sample table lacks columns {sorted(missing)}")


def problem_table(samples: pd.DataFrame, ks: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per problem: n, correct count, first-verifying count, mean score, and pass@k columns.

    The correct counts (or the pass@k columns) of two runs on the same tasks feed
    ``stats.paired_bootstrap``. ``ks`` defaults to the ``PASS_KS`` <= the smallest n.
    """
    _check_table(samples)
    grouped = samples.groupby("task_index", sort=True)
    problems = grouped.agg(
        target=("target", "first"),
        num_count=("num_count", "first"),
        n=("correct", "size"),
        correct=("correct", "sum"),
        mean_score=("reward", "mean"),
    )
    if "nums" in samples.columns:
        problems.insert(0, "nums", grouped["nums"].first())
    if "tier" in samples.columns:
        problems.insert(3, "tier", grouped["tier"].first())
    if "first_verifying_correct" in samples.columns:
        problems["first_verifying_correct"] = grouped["first_verifying_correct"].sum()
    ks = _default_ks(problems["n"].to_numpy()) if ks is None else tuple(ks)
    for k in ks:
        problems[f"pass@{k}"] = [
            pass_at_k(int(n), int(c), k) for n, c in zip(problems["n"], problems["correct"], strict=True)
        ]
    return problems.reset_index()


def _default_ks(n: np.ndarray) -> tuple[int, ...]:
    return tuple(k for k in PASS_KS if k <= int(n.min()))


def _core_summary(samples: pd.DataFrame, ks: Sequence[int]) -> dict[str, Any]:
    """Pass@k, average pass@k, rates and report 003's diagnostic for one set of samples."""
    counts = samples.groupby("task_index", sort=True)["correct"].agg(["size", "sum"])
    n, c = counts["size"].to_numpy(), counts["sum"].to_numpy()  # (P,), (P,)
    summary: dict[str, Any] = {"num_tasks": int(len(counts)), "samples": int(len(samples))}
    summary.update({f"pass@{k}": _mean_pass_at_k(n, c, k) for k in ks})
    summary["avg_pass@k"] = _average_pass_at_k(n, c)
    summary["mean_score"] = float(samples["reward"].mean())
    summary["exact_rate"] = float(samples["correct"].mean())
    summary["well_formed"] = float(samples["well_formed"].mean())
    if "first_verifying_correct" in samples.columns:
        first = samples.groupby("task_index", sort=True)["first_verifying_correct"].sum().to_numpy()  # (P,)
        diagnostic = {f"pass@{k}": _mean_pass_at_k(n, first, k) for k in ks}
        diagnostic["avg_pass@k"] = _average_pass_at_k(n, first)
        summary["first_verifying"] = diagnostic
        summary["first_verifying_pass@1"] = _mean_pass_at_k(n, first, 1)
        abandoned = samples["first_verifying_correct"] & ~samples["correct"].astype(bool)
        summary["abandoned_rate"] = float(abandoned.mean())
    if "answer_spans" in samples.columns:
        summary["answer_spans_per_rollout"] = float(samples["answer_spans"].mean())
    if "finish_reason" in samples.columns and samples["finish_reason"].astype(bool).all():
        summary["truncated"] = float((samples["finish_reason"] == TRUNCATED).mean())
    return summary


def summarize(samples: pd.DataFrame, ks: Sequence[int] | None = None) -> dict[str, Any]:
    """The JSON-ready summary of a per-sample table: overall, ``by_num_count`` and ``by_tier``.

    ``ks`` defaults to the ``PASS_KS`` <= the smallest per-problem n; a k above it raises. Pass@k is
    averaged over problems; rates are averaged over samples. Group keys are strings ("3", "T1").
    """
    _check_table(samples)
    n_min = int(samples.groupby("task_index").size().min())
    ks = _default_ks(np.array([n_min])) if ks is None else tuple(ks)
    for k in ks:
        if k > n_min:
            raise ValueError(f"k={k} exceeds n={n_min} samples per problem")
    summary = {"n": n_min, **_core_summary(samples, ks)}
    summary["by_num_count"] = {
        str(key): _core_summary(group, ks) for key, group in samples.groupby("num_count", sort=True)
    }
    if "tier" in samples.columns:
        summary["by_tier"] = {
            str(key): _core_summary(group, ks) for key, group in samples.groupby("tier", sort=True)
        }
    return summary
