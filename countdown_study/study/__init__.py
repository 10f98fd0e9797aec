"""Studies: presets, method rows per report, the notebooks' tables, seed-aware statistics.

May import every layer but ``cli``. The names notebooks use are re-exported here
(``study.study_preset``, ``study.run_study``, ``study.summary_table``, ``study.UNIFORM``, ...).
"""

from countdown_study.study.methods import (
    CLAIMS_000,
    CLAIMS_001,
    CONTRASTS_000,
    CONTRASTS_001,
    EMBEDDED_MODEL,
    IPO,
    REPORT_000,
    REPORT_000_ABLATIONS,
    REPORT_001,
    REPORT_001_ABLATIONS,
    SFT,
    UNIFORM,
    UNIFORM_REPLACEMENT,
    Method,
    StudyResult,
    run_all,
    run_method,
    run_study,
)
from countdown_study.study.presets import (
    STUDY_PRESETS,
    EvalRunConfig,
    StudyPreset,
    evaluate_policy,
    evaluate_policy_run,
    study_preset,
)
from countdown_study.study.tables import (
    METRICS,
    paired_table,
    pass_at_k_curves,
    problem_matrix,
    run_summaries,
    summary_table,
)

__all__ = [
    "CLAIMS_000",
    "CLAIMS_001",
    "CONTRASTS_000",
    "CONTRASTS_001",
    "EMBEDDED_MODEL",
    "IPO",
    "METRICS",
    "REPORT_000",
    "REPORT_000_ABLATIONS",
    "REPORT_001",
    "REPORT_001_ABLATIONS",
    "SFT",
    "STUDY_PRESETS",
    "UNIFORM",
    "UNIFORM_REPLACEMENT",
    "EvalRunConfig",
    "Method",
    "StudyPreset",
    "StudyResult",
    "evaluate_policy",
    "evaluate_policy_run",
    "paired_table",
    "pass_at_k_curves",
    "problem_matrix",
    "run_all",
    "run_method",
    "run_study",
    "run_summaries",
    "study_preset",
    "summary_table",
]
