"""Sampling-based evaluation: n completions per task from a policy, graded into an ``EvalResult``.

``evaluate(model, tokenizer, tasks, n)`` samples through the rollout engine in batches of tasks (batch
b seeded by ``derive_seed(seed, b)``), grades every completion into the per-sample table
(``samples.grade_samples``) and summarises it (``passk.summarize``, ``passk.problem_table``).

Default sampling is the reports' common evaluation (``evaluation.defaults.EVAL_SAMPLING``): temperature
0.6, top-p 0.95, top-k 20, without stopping at the first ``</answer>`` (the reports grade whole rollouts by
their last answer span), at the study's budget of ``EVAL_MAX_NEW_TOKENS`` new tokens. A progress bar shows
in a terminal once an evaluation has run ``PROGRESS_DELAY`` seconds (never in a notebook or a log file).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from countdown_study.countdown.difficulty import tier_labels
from countdown_study.countdown.prompts import format_prompt
from countdown_study.countdown.task import Task
from countdown_study.evaluation.defaults import EVAL_BATCH_SIZE, EVAL_MAX_NEW_TOKENS, EVAL_N, EVAL_SAMPLING
from countdown_study.evaluation.passk import problem_table, summarize
from countdown_study.evaluation.samples import grade_samples
from countdown_study.policy import prompt_template
from countdown_study.rollout import Engine, SamplingConfig, make_engine
from countdown_study.seeding import derive_seed

__all__ = ["EVAL_MAX_NEW_TOKENS", "EVAL_SAMPLING", "EvalResult", "evaluate"]

PROGRESS_DELAY = 3.0
"""Seconds an evaluation runs before its progress bar appears (a short one prints nothing)."""


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
    n: int = EVAL_N,
    sampling: SamplingConfig | None = None,
    seed: int = 0,
    template: str | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    tiers: Sequence[str] | None = None,
    engine: Engine | None = None,
    progress: bool | None = None,
) -> EvalResult:
    """Sample ``n`` completions per task and grade them with the verifier.

    Sampling goes through ``engine`` (a run's rollout engine, built once per run) when given, else
    through one engine made here for all batches (a ``vllm`` engine starts once, not per batch).

    ``sampling`` defaults to ``EVAL_SAMPLING``; ``template`` to the policy's own
    (``policy.prompt_template``). Prompts go in batches of ``batch_size`` tasks, batch b seeded with
    ``derive_seed(seed, b)``: the same arguments give the same result. ``tiers`` defaults to
    ``countdown.tier_labels``. ``progress``: a bar over the batches on standard error (None: only when it
    is a terminal, so notebooks and logs stay quiet), shown once the evaluation has run ``PROGRESS_DELAY``
    seconds.
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
    engine = engine or make_engine(model, tokenizer, config)
    bar = tqdm(
        total=len(prompts),
        desc=f"evaluating {len(prompts)} tasks x {n}",
        unit="task",
        delay=PROGRESS_DELAY,
        disable=not (sys.stderr.isatty() if progress is None else progress),
        file=sys.stderr,
    )
    for b, start in enumerate(range(0, len(prompts), batch_size)):
        rollouts = engine.sample(prompts[start : start + batch_size], n, derive_seed(seed, b), config)
        texts.extend(rollouts.texts)
        lengths.extend(len(ids) for ids in rollouts.completion_ids)
        reasons.extend(rollouts.finish_reasons or [""] * len(rollouts.texts))
        bar.update(len(prompts[start : start + batch_size]))
    bar.close()
    labels = tier_labels(list(tasks)) if tiers is None else tiers
    return EvalResult.from_samples(grade_samples(tasks, texts, n, lengths, reasons, labels))
