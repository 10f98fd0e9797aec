"""The paper's sections of notebooks 01-07 (``reporting.paper_sections.SECTIONS``): the task pool, the
baselines and reports 000-004, each a ``Section`` of the tables and figures its notebook saves, by the
names it saves them under. Data only."""

from __future__ import annotations

from countdown_study.reporting.latex import Column
from countdown_study.reporting.paper_specs import (
    BY_COUNT_COLUMNS,
    CLAIMS,
    METHOD_COLUMN,
    ON_OURS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    THEIRS,
    FigureSpec,
    Section,
    TableSpec,
    metric_columns,
    side_by_side_spec,
    verdict_spec,
)

TASKS = Section(
    "tasks",
    "01",
    (
        TableSpec(
            "tasks_by_num_count",
            (
                Column("num_count", "numbers", "count"),
                *TASK_COLUMNS,
                Column("single_solution", "single solution"),
                Column("depth_mean", "mean depth", digits=2),
            ),
            "The task pool by number count, from the exact solver.",
        ),
        TableSpec(
            "tasks_by_tier",
            (
                Column("tier", "tier", "text"),
                Column("num_count", "numbers", "count"),
                *TASK_COLUMNS,
                Column("share", "share"),
            ),
            "Report 004's tiers, made a partition of the pool.",
        ),
    ),
    (FigureSpec("solution_count_by_tier", "Solution counts (distinct derivations) by tier."),),
)
BASELINES = Section(
    "baselines",
    "02",
    (
        TableSpec(
            "baselines_summary", SUMMARY_COLUMNS, "SFT, IPO and uniform RLOO on the shared held-out tasks."
        ),
        verdict_spec("baselines_paired", "Baselines against each other. " + CLAIMS),
        side_by_side_spec(
            "baselines_vs_reports", ("pass@1", "pass@8", "pass@16"), "Beside report 002's Table 1. " + THEIRS
        ),
    ),
    (
        FigureSpec("baselines_pass_at_k", "pass@k of the baselines with Wilson 95\\% intervals."),
        FigureSpec("baselines_pass1_by_tier", "pass@1 of the baselines by tier."),
    ),
)
REPORT_000 = Section(
    "report000",
    "03",
    (
        side_by_side_spec(
            "curricula_000_table1", ("pass@1", "pass@4", "pass@16"), "Report 000's Table 1 " + ON_OURS
        ),
        verdict_spec("curricula_000_paired", "Report 000's curricula against uniform RLOO. " + CLAIMS),
        TableSpec(
            "curricula_000_by_num_count", BY_COUNT_COLUMNS, "Per difficulty: 3-number and 4-number tasks."
        ),
    ),
    (
        FigureSpec("curricula_000_occupancy", "What the curricula sampled over training."),
        FigureSpec("curricula_000_training", "Training curves of report 000's rows."),
    ),
)
REPORT_001 = Section(
    "report001",
    "04",
    (
        side_by_side_spec(
            "sliding_window_001_vs_report",
            ("pass@1", "pass@16", "mean_score"),
            "Report 001's comparison " + ON_OURS,
        ),
        verdict_spec(
            "sliding_window_001_paired", "Report 001's rows against uniform RLOO (binary reward). " + CLAIMS
        ),
    ),
    (
        FigureSpec("sliding_window_001_levels", "The difficulty level the controller chose over training."),
        FigureSpec(
            "sliding_window_001_pass_at_k", "pass@k of report 001's rows with Wilson 95\\% intervals."
        ),
    ),
)
REPORT_002 = Section(
    "report002",
    "05",
    (
        side_by_side_spec(
            "fsc_002_table1", ("pass@1", "pass@8", "pass@16"), "Report 002's Table 1 " + ON_OURS
        ),
        verdict_spec(
            "fsc_002_paired",
            "Report 002's rows against its uniform control, and the dynamic edge and frozen feature-failure policy against the frozen edge: the contrasts behind claims R1--R4. "
            + CLAIMS,
        ),
        TableSpec(
            "fsc_002_table4",
            (
                Column("contrast", "contrast", "text", width="X"),
                Column("metric", "metric", "text"),
                Column("diff", "ours", "signed"),
                Column("ci", "our 95% interval", "interval"),
                Column("their_diff", "theirs", "signed"),
                Column("their", "their 95% interval", "interval"),
            ),
            "Report 002's Table 4 redone: ours with the seed-aware interval (\\ResultsSeedCount{} training seeds), theirs a "
            "paired bootstrap over their 50 problems from single runs (training seed fixed).",
        ),
    ),
    (
        FigureSpec(
            "fsc_002_figures_3_5",
            "Report 002's Figures 3--5 on our model: pass@k of the rows each "
            "compares, ours with 95\\% bands, theirs (Qwen2.5-0.5B) as open markers.",
        ),
        FigureSpec(
            "fsc_002_moving_edge",
            "Report 002's Figure 6 on our model beside theirs: the dynamic edge's "
            "probe rows by training phase.",
        ),
        FigureSpec("fsc_002_diagnostics", "Refresh diagnostics of the samplers over training."),
    ),
)
REPORT_003 = Section(
    "report003",
    "06",
    (
        side_by_side_spec(
            "vcc_003_table1", ("avg_pass@k", "pass@1", "pass@16"), "Report 003's Table 1 " + ON_OURS
        ),
        side_by_side_spec(
            "vcc_003_table2", ("exact_rate", "mean_score", "pass@16"), "Report 003's Table 2 " + ON_OURS
        ),
        verdict_spec("vcc_003_paired", "Report 003's claims. " + CLAIMS),
        TableSpec(
            "vcc_003_abandonment",
            (
                METHOD_COLUMN,
                Column("answer_spans_per_rollout", "spans per rollout", digits=2),
                *metric_columns("pass@1", "first_verifying_pass@1", "abandoned_rate"),
            ),
            "Answer abandonment: the final answer against the first verifying one.",
        ),
        TableSpec(
            "vcc_003_frontier_mix",
            (
                Column("frontier", "easiest share of the pool", digits=1),
                Column("tasks", "tasks", "count"),
                Column("four_number_share", "four-number share"),
                Column("median_solutions", "median solutions", digits=0),
            ),
            "What the solution-count curricula draw from: the easiest part of the training pool by solution "
            "count, its share of four-number tasks (the harder half for the policy) and its median count.",
        ),
        TableSpec(
            "vcc_003_training_mix",
            (
                METHOD_COLUMN,
                Column("prompts", "prompts drawn", "count"),
                Column("four_number_share", "four-number share"),
                Column("pool_four_number_share", "pool's share"),
            ),
            "The share of four-number prompts each curriculum drew over its runs (from the frontier of every "
            "step), beside the pool's.",
        ),
        TableSpec(
            "vcc_003_frontier_moves_summary",
            (
                METHOD_COLUMN,
                Column("runs", "runs", "count"),
                Column("runs_moved", "runs widened", "count"),
                Column("mean_final_share", "final share", digits=2),
                Column("max_success_ema", "highest success EMA"),
                Column("runs_ahead", "runs ahead of staged", "count"),
            ),
            "Did the adaptive rules adapt? Runs whose adaptive frontier ever widened (at a training success "
            "EMA of 0.5), its mean final share of the pool, the highest success EMA, and the runs whose "
            "frontier was ever wider than the staged schedule's: a hybrid run never ahead drew the staged "
            "curriculum's prompts seed for seed, and its results are the staged row's.",
        ),
        TableSpec(
            "vcc_003_sweep_selection_summary",
            (
                METHOD_COLUMN,
                Column("n_seeds", "seeds", "count"),
                Column("picked_best_share", "picked best"),
                Column("mean_regret", "regret"),
                Column("selected_test", "selected"),
                Column("best_test", "best"),
                Column("final_test", "final"),
            ),
            "The tight sweep's checkpoint selection on validation: the share of seeds where it picked a best "
            "test checkpoint, its mean cost on test (regret), and the test pass@1 of the selected, the best "
            "and the final checkpoints.",
        ),
        verdict_spec(
            "vcc_003_selection_claim",
            "Validation selection against the final checkpoint, test pass@1 over the tight sweep's runs "
            "(a null claim: \\emph{holds} and \\emph{inside noise} agree with it). " + CLAIMS,
        ),
        side_by_side_spec(
            "vcc_003_embedded_table1",
            ("avg_pass@k", "pass@1", "pass@16"),
            "Report 003's curricula and VCC also on the embedded policy, the other reports' starting policy "
            "(curricula on rollouts cut at the first answer, VCC-RLOO on whole rollouts) " + ON_OURS,
        ),
        verdict_spec(
            "vcc_003_embedded_paired",
            "Report 003's claims on the embedded policy: the curricula against uniform RLOO, VCC-RLOO "
            "against uniform RLOO on whole rollouts. " + CLAIMS,
        ),
    ),
    (
        FigureSpec(
            "vcc_003_figure_3",
            "Report 003's Figure 3 redrawn from its Table 1: pass@1 against oracle pass@16 for each row, this "
            "study on the search-style embedded policy above the report's on Qwen2.5-0.5B.",
        ),
        FigureSpec(
            "vcc_003_figure_5",
            "Report 003's Figure 5 redrawn from its Table 2, the VCC ablation: rollout accuracy, mean reward "
            "and oracle pass@16 for each row, this study above the report's.",
        ),
        FigureSpec(
            "vcc_003_final_vs_first",
            "The final answer against the first verifying one. Left: pass@k of each (solid and dashed) for "
            "the rows whose two curves differ by 0.02 or more (the four widest gaps at most); right: the "
            "pass@1 the first verifying answer would add, for every row.",
        ),
        FigureSpec(
            "vcc_003_training",
            "Over training: answer spans per rollout, the share of rollouts that abandon a verifying answer, "
            "and the training batches' exact rate, for the rows of report 003's Tables 1 and 2.",
        ),
    ),
)
REPORT_004 = Section(
    "report004",
    "07",
    (
        side_by_side_spec(
            "adsc_004_table2", ("mean_score", "exact_rate", "pass@16"), "Report 004's Table 2 " + ON_OURS
        ),
        verdict_spec(
            "adsc_004_paired",
            "Report 004's claims (its headline metric is the mean score). " + CLAIMS,
            metrics=("mean_score", "pass@16"),
        ),
        TableSpec(
            "adsc_004_ood",
            (METHOD_COLUMN, *metric_columns("pass@1", "pass@16", "nonzero_pass_at_16")),
            "5-number tasks never trained on (their Table 4).",
        ),
        verdict_spec(
            "adsc_004_ood_claims",
            "Report 004's Table 4 claim: each synthetic student's exact pass@16 on the 5-number tasks against "
            "zero. Where no task was solved under any seed, the MDE column is the smallest per-task rate that "
            "would have shown one (Clopper-Pearson bound).",
        ),
        TableSpec(
            "adsc_004_ood_targets",
            (METHOD_COLUMN, *metric_columns("pass@1", "pass@16", "mean_score")),
            "The second out-of-distribution set, on which uniform RLOO scores above the floor: 200 tasks of 3 "
            "and 4 numbers with targets 101-200, above the training range.",
        ),
        verdict_spec(
            "adsc_004_ood_targets_paired",
            "Each router row against uniform RLOO on the above-floor OOD set (no report claim: the verdicts "
            "only order the rows).",
            metrics=("pass@1", "pass@16"),
        ),
        TableSpec(
            "adsc_004_teacher_quality",
            (
                Column("tier", "tier", "text"),
                Column("source", "source", "text"),
                Column("proposals", "proposed", "count"),
                Column("acceptance", "accepted share", digits=2),
                Column("target_median", "median target", digits=0),
                Column("number_mean", "mean number", digits=1),
                Column("three_number_share", "3-number share", digits=2),
                Column("solutions_median", "median solutions", digits=0),
            ),
            "What the teacher (a 3.4M copy of the embedded policy trained by the package, not the report's "
            "instructed 8B model) proposes per tier, beside the rule-based generator asked for as many "
            "accepted tasks and the training pool's own tasks of the tier.",
            group="tier",
        ),
    ),
    (
        FigureSpec("adsc_004_router_state", "The router's arm probabilities and values Q over training."),
        FigureSpec("adsc_004_batch_mix", "The training batches' mix of sources and tiers over training."),
        FigureSpec(
            "adsc_004_generator_acceptance",
            "The generators' candidates per tier: the share accepted, and why the others were rejected.",
        ),
    ),
)
