"""The per-sample verdict table: one row per (task, sample) from completion texts (no torch).

Final-answer columns come from the verifier's last answer span, report 003's columns from every
answer span, in one pass (``countdown.grading.grade``). ``passk.summarize`` and
``passk.problem_table`` read this table.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from countdown_study.countdown.grading import grade
from countdown_study.countdown.task import Task

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

    One row per sample; columns ``SAMPLE_COLUMNS`` (+ ``tier``), all from one ``countdown.grading.grade``
    per completion: final-answer columns from the last answer span, ``answer_spans``,
    ``first_verifying_correct`` and ``first_correct_end`` from every span (report 003).
    """
    if len(texts) != len(tasks) * n:
        raise ValueError(f"{len(texts)} completions for {len(tasks)} tasks x n={n}")
    rows = []
    for flat, text in enumerate(texts):
        task = tasks[flat // n]
        graded = grade(text, task)
        rows.append(
            {
                "task_index": flat // n,
                "nums": list(task.nums),
                "target": task.target,
                "num_count": task.num_count,
                "sample_index": flat % n,
                "reward": graded.reward,
                "correct": graded.correct,
                "well_formed": graded.well_formed,
                "reason": str(graded.reason),
                "answer_spans": graded.answer_spans,
                "first_verifying_correct": graded.first_verifying >= 0,
                "first_correct_end": graded.first_verifying_end,
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
