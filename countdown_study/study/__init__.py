"""Studies: presets, method rows per report, the notebooks' tables, seed-aware statistics.

May import every layer but ``cli``. The names notebooks use are re-exported here
(``study.study_preset``, ``study.run_study``, ``study.summary_table``, every row of ``study.rows`` such as
``study.UNIFORM``, and ``study.notebook_methods``, the rows a notebook runs).
"""

from countdown_study.study import rows
from countdown_study.study.claims import parseable_result
from countdown_study.study.grid import notebook_methods
from countdown_study.study.method import EMBEDDED_MODEL, Method, model_label
from countdown_study.study.methods import (
    StudyResult,
    eval_set_result,
    run_all,
    run_method,
    run_study,
    sampler_records,
    training_pool,
)
from countdown_study.study.presets import (
    STUDY_PRESETS,
    EvalRunConfig,
    StudyPreset,
    evaluate_policy,
    evaluate_policy_run,
    study_preset,
)
from countdown_study.study.rows import *  # noqa: F403  (every report's rows: study.rows.__all__)
from countdown_study.study.synthesis import (
    Claim,
    all_claims,
    all_verdicts,
    joint_paired,
    joint_summary,
    verdict_table,
)
from countdown_study.study.synthesis_tables import cost_table, tradeoff_table
from countdown_study.study.tables import (
    METRICS,
    generation_cost,
    paired_beside,
    paired_table,
    pass_at_k_curves,
    problem_matrix,
    run_summaries,
    summary_table,
    zero_claims_table,
)

__all__ = [
    *rows.__all__,
    "EMBEDDED_MODEL",
    "METRICS",
    "STUDY_PRESETS",
    "EvalRunConfig",
    "Method",
    "StudyPreset",
    "StudyResult",
    "evaluate_policy",
    "eval_set_result",
    "parseable_result",
    "model_label",
    "evaluate_policy_run",
    "generation_cost",
    "paired_beside",
    "paired_table",
    "pass_at_k_curves",
    "problem_matrix",
    "run_all",
    "run_method",
    "run_study",
    "run_summaries",
    "sampler_records",
    "study_preset",
    "summary_table",
    "zero_claims_table",
    "training_pool",
    "Claim",
    "all_claims",
    "all_verdicts",
    "cost_table",
    "joint_paired",
    "joint_summary",
    "tradeoff_table",
    "verdict_table",
    "notebook_methods",
]
