"""Ground truth, pure Python and numpy: tasks, generators, loading, splits, difficulty labels, solver,
features, prompts, verifier and grading.

Wall: imports nothing from torch, transformers or any other layer of the package (importing it does
not import torch).

Modules, lowest first (each imports only those above it): ``task`` (the ``Task`` record), ``prompts``,
``extract`` and ``expression`` (the verifier's extraction and grammar), ``verifier``, ``grading``,
``commit`` (report 003's commit points, pairs and commit reward), ``solver``, ``features_batched`` and
``features`` (report 002's Difficulty Vector), ``generate``, ``task_readers`` (a source's raw rows),
``load``, ``splits``, ``difficulty`` (tiers and levels), ``synthetic`` (report 004's rule-based task
generator).
"""

from countdown_study.countdown.difficulty import (
    LEVELS,
    TIERS,
    LevelRule,
    TierRule,
    level_labels,
    num_count_labels,
    solution_counts,
    tier_labels,
)
from countdown_study.countdown.features import DV_COLUMNS, difficulty_vectors
from countdown_study.countdown.generate import (
    GeneratorConfig,
    generate_ood_target_tasks,
    generate_ood_tasks,
    generate_tasks,
    integer_solvable,
    solvable,
)
from countdown_study.countdown.grading import Grade, Grades, grade, grade_batch
from countdown_study.countdown.load import (
    RowProblem,
    TaskLoadReport,
    TaskRowError,
    load_tasks,
    load_tasks_with_report,
)
from countdown_study.countdown.prompts import format_prompt
from countdown_study.countdown.solver import (
    Derivation,
    Step,
    all_solutions,
    random_derivation,
    solution_count,
    solve,
)
from countdown_study.countdown.splits import dedupe, split_tasks
from countdown_study.countdown.task import Task
from countdown_study.countdown.verifier import Reason, Verdict, compute_score, scan_answers, verify

__all__ = [
    "DV_COLUMNS",
    "LEVELS",
    "TIERS",
    "Derivation",
    "GeneratorConfig",
    "Grade",
    "Grades",
    "LevelRule",
    "Reason",
    "RowProblem",
    "Step",
    "Task",
    "TaskLoadReport",
    "TaskRowError",
    "TierRule",
    "Verdict",
    "all_solutions",
    "compute_score",
    "dedupe",
    "difficulty_vectors",
    "format_prompt",
    "generate_ood_target_tasks",
    "generate_ood_tasks",
    "generate_tasks",
    "grade",
    "grade_batch",
    "integer_solvable",
    "level_labels",
    "load_tasks",
    "load_tasks_with_report",
    "num_count_labels",
    "random_derivation",
    "scan_answers",
    "solution_count",
    "solution_counts",
    "solvable",
    "solve",
    "split_tasks",
    "tier_labels",
    "verify",
]
