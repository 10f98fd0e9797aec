"""Evaluation: sample n completions per task, grade each, and summarise as pass@k and rates.

Three layers, each testable alone:

* ``pass_at_k(n, c, k)``: the unbiased estimator 1 - C(n-c, k) / C(n, k), exact.
* ``grade_samples(tasks, texts, n)``: a per-sample table (one row per task x sample) from completion
  texts; ``summarize(samples)`` and ``problem_table(samples)`` are pure functions of that table.
* ``evaluate(model, tokenizer, tasks, n)``: samples through ``rollout.sample`` and returns an
  ``EvalResult`` (samples, per-problem table, summary). ``countdown-study eval`` drives it.

Metrics (METHODS.md, "Evaluation"): pass@k for k in {1, 2, 4, 8, 16} (those <= n), the average of
pass@k over k = 1..n (report 003), mean verifier score (format credit included), exact rate (share of
samples that verify), well-formed rate (a last answer span that parses), each also by number count
and by tier; report 003's diagnostic: pass@k when the *first* verifying answer span counts instead of
the last one, answer spans per rollout, and the share of rollouts that abandon a correct answer.

Default sampling is the reports' common evaluation: temperature 0.6, top-p 0.95, top-k 20, without
stopping at the first ``</answer>`` (the reports grade whole rollouts by their last answer span).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from countdown_study.countdown.prompts import format_prompt
from countdown_study.countdown.tasks import Task, tier_labels
from countdown_study.countdown.verifier import scan_answers, verify
from countdown_study.policy import prompt_template
from countdown_study.rollout import SamplingConfig, sample
from countdown_study.seeding import derive_seed

PASS_KS = (1, 2, 4, 8, 16)
"""The k of the reported pass@k (those <= n)."""
EVAL_SAMPLING = SamplingConfig(temperature=0.6, top_p=0.95, top_k=20, stop_at_answer=False)
"""The reports' common evaluation sampling (max length: the embedded model's default)."""
SAMPLE_COLUMNS = (
    "task_index",
    "nums",
    "target",
    "num_count",
    "sample_index",
    "reward",
    "correct",
    "well_formed",
    "reason",
    "answer_spans",
    "first_verifying_correct",
    "first_correct_end",
    "completion_tokens",
    "finish_reason",
    "completion",
)
"""Columns of the per-sample table (plus ``tier`` when tier labels are known)."""


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


# ---------------------------------------------------------------------------------------------------
# Grading and the per-sample table
# ---------------------------------------------------------------------------------------------------


def grade_samples(
    tasks: Sequence[Task],
    texts: Sequence[str],
    n: int,
    completion_tokens: Sequence[int] | None = None,
    finish_reasons: Sequence[str] | None = None,
    tiers: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Grade ``n`` completions per task (``texts`` flattened task-major: sample ``i * n + j``).

    One row per sample; columns ``SAMPLE_COLUMNS`` (+ ``tier``). Final-answer columns come from
    ``verifier.verify`` (the last answer span); ``answer_spans``, ``first_verifying_correct`` and
    ``first_correct_end`` from ``verifier.scan_answers`` (report 003).
    """
    if len(texts) != len(tasks) * n:
        raise ValueError(f"{len(texts)} completions for {len(tasks)} tasks x n={n}")
    rows = []
    for flat, text in enumerate(texts):
        task = tasks[flat // n]
        verdict = verify(text, task.nums, task.target)
        scan = scan_answers(text, task.nums, task.target)
        first = scan.first_correct
        rows.append(
            {
                "task_index": flat // n,
                "nums": list(task.nums),
                "target": task.target,
                "num_count": task.num_count,
                "sample_index": flat % n,
                "reward": verdict.reward,
                "correct": verdict.correct,
                "well_formed": verdict.well_formed,
                "reason": str(verdict.reason),
                "answer_spans": len(scan.spans),
                "first_verifying_correct": first is not None,
                "first_correct_end": -1 if first is None else first.end,
                "completion_tokens": -1 if completion_tokens is None else int(completion_tokens[flat]),
                "finish_reason": "" if finish_reasons is None else finish_reasons[flat],
                "completion": text,
            }
        )
    table = pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))
    if tiers is not None:
        if len(tiers) != len(tasks):
            raise ValueError(f"{len(tiers)} tier labels for {len(tasks)} tasks")
        table.insert(4, "tier", [str(tiers[i]) for i in table["task_index"]])
    return table


# ---------------------------------------------------------------------------------------------------
# Summaries: pure functions of the per-sample table
# ---------------------------------------------------------------------------------------------------


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
        abandoned = samples["first_verifying_correct"] & ~samples["correct"].astype(bool)
        summary["abandoned_rate"] = float(abandoned.mean())
    if "answer_spans" in samples.columns:
        summary["answer_spans_per_rollout"] = float(samples["answer_spans"].mean())
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


@dataclass(frozen=True)
class EvalResult:
    """An evaluation: the per-sample table, the per-problem table and the summary."""

    samples: pd.DataFrame
    """One row per task x sample (``SAMPLE_COLUMNS``, + ``tier``)."""
    problems: pd.DataFrame
    """One row per task: n, correct, first-verifying count, mean score, pass@k."""
    summary: dict[str, Any]
    """``summarize(samples)``: JSON-ready."""

    @classmethod
    def from_samples(cls, samples: pd.DataFrame) -> EvalResult:
        """Derive the per-problem table and the summary from a per-sample table."""
        return cls(samples=samples, problems=problem_table(samples), summary=summarize(samples))

    @property
    def correct_counts(self) -> np.ndarray:
        """Correct samples per problem, in task order.  # (P,)"""
        return self.problems["correct"].to_numpy()


# ---------------------------------------------------------------------------------------------------
# Sampling + grading
# ---------------------------------------------------------------------------------------------------


def evaluate(
    model,
    tokenizer,
    tasks: Sequence[Task],
    n: int = 16,
    sampling: SamplingConfig | None = None,
    seed: int = 0,
    template: str | None = None,
    batch_size: int = 32,
    tiers: Sequence[str] | None = None,
) -> EvalResult:
    """Sample ``n`` completions per task with ``rollout.sample`` and grade them with the verifier.

    ``sampling`` defaults to ``EVAL_SAMPLING``; ``template`` to the policy's own
    (``policy.prompt_template``). Prompts go in batches of ``batch_size`` tasks, batch b seeded with
    ``derive_seed(seed, b)``: the same arguments give the same result. ``tiers`` defaults to
    ``tasks.tier_labels``.
    """
    if len(tasks) == 0:
        raise ValueError("no tasks to evaluate: the task set is empty")
    if n < 1:
        raise ValueError(f"n must be >= 1 samples per task, got {n}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    config = sampling or EVAL_SAMPLING
    prompts = [format_prompt(t.nums, t.target, template or prompt_template(model)) for t in tasks]
    texts: list[str] = []
    lengths: list[int] = []
    reasons: list[str] = []
    for b, start in enumerate(range(0, len(prompts), batch_size)):
        rollouts = sample(
            model, tokenizer, prompts[start : start + batch_size], n, config, derive_seed(seed, b)
        )
        texts.extend(rollouts.texts)
        lengths.extend(len(ids) for ids in rollouts.completion_ids)
        reasons.extend(rollouts.finish_reasons or [""] * len(rollouts.texts))
    labels = tier_labels(list(tasks)) if tiers is None else tiers
    return EvalResult.from_samples(grade_samples(tasks, texts, n, lengths, reasons, labels))
