"""The paper's sections of notebooks 08, 09 and 90 (``reporting.paper_sections.SECTIONS``): the field's own
prompt-selection rules, the headline claims at three policy sizes and the synthesis of the five reports,
each a ``Section`` of the tables and figures its notebook saves, by the names it saves them under. Data
only."""

from __future__ import annotations

from countdown_study.reporting.latex import Column
from countdown_study.reporting.paper_specs import (
    CLAIMS,
    METHOD_COLUMN,
    SUMMARY_COLUMNS,
    VERDICT_COLUMNS,
    FigureSpec,
    Section,
    TableSpec,
    metric_columns,
    verdict_spec,
)

FIELD = Section(
    "field",
    "08",
    (
        TableSpec(
            "field_ranking",
            (
                METHOD_COLUMN,
                Column("source", "from", "text"),
                *metric_columns("pass@1", "pass@16"),
                Column("gain_per_million_tokens", "gain / M tokens"),
            ),
            "The field's methods and the reports' curricula, ranked by pass@1.",
        ),
        verdict_spec("field_paired", "Each of the field's methods against uniform RLOO. " + CLAIMS),
        verdict_spec(
            "field_vs_best_curriculum", "Each against the best of the reports' curricula. " + CLAIMS
        ),
    ),
    (
        FigureSpec("field_pass_at_k", "pass@k of the field's methods and the reports' curricula."),
        FigureSpec(
            "field_sec_arms", "SEC's arms (number count $\\times$ tier) over training: probability and value."
        ),
    ),
)
SCALE_SIZES = ("small", "embedded", "large")
"""The sizes of the scale study, smallest first (``study.scale.SIZES``' names): ``scale_verdicts`` has a
column of verdicts per size that ran."""
SCALE = Section(
    "scale_study",
    "09",
    (
        TableSpec(
            "scale_sizes",
            (
                Column("size", "size", "text"),
                Column("parameters", "params", "count"),
                Column("sft_steps", "steps", "count"),
                Column("sft_hours", "hours", digits=1),
                *(Column(f"sft_{m}", m) for m in ("pass@1", "pass@16")),
                Column("sft_well_formed", "formed"),
                Column("sft_answer_spans_per_rollout", "spans", digits=2),
                Column("sft_truncated", "cut"),
                Column("measured_temperature", "temp.", digits=1),
                Column("measured_max_new_tokens", "tokens", "count"),
            ),
            "The policy of each size, made by the package's SFT stage with the same recipe on the same solver "
            "traces: its parameters, its SFT run's steps and wall hours, and its quality on held-out tasks as "
            "its shipped record gives it (pass@1, pass@16, the share of well-formed rollouts, answer spans per "
            "rollout, the share cut at the token budget), measured at the sampling temperature and token budget "
            "of the last two columns; a dash where the record lacks a value. The CSV names each size's policy.",
        ),
        TableSpec(
            "scale_verdicts",
            (
                Column("report", "report", "text"),
                Column("claim", "claim", "text", width="X"),
                Column("metric", "metric", "text"),
                *(Column(size, size, "text") for size in SCALE_SIZES),
                Column("same_at_every_size", "same at every size", "text"),
            ),
            "Each headline claim's verdict at each size (a column per size that ran), against the row it is "
            "claimed against at the same size, and whether the verdict is the same at every size.",
            optional=SCALE_SIZES,
        ),
        TableSpec(
            "scale_trend",
            (
                Column("claim", "claim", "text", width="X"),
                Column("metric", "metric", "text"),
                Column("smaller", "from", "text"),
                Column("larger", "to", "text"),
                Column("change", "change", "signed"),
                Column("ci", "95% interval", "interval"),
                Column("mde", "MDE", "number"),
                Column("reading", "reading", "text"),
            ),
            "How each headline claim's difference changes from a size to the next larger one: its difference at "
            "the larger size minus its difference at the smaller, per task and training seed, with the study's "
            "seed-aware interval and MDE (the sizes share the tasks; their runs are independent); "
            "\\emph{rises} or \\emph{falls} where the interval is clear of zero. For uniform RLOO against "
            "SFT at pass@16, where the difference is negative, \\emph{falls} is a wider narrowing.",
            absent="No change with size is measured here: fewer than two sizes of the policy have run, or "
            "notebook 09 ran before it measured one (\\texttt{study.scale.scale\\_trend}).",
        ),
        TableSpec(
            "scale_paired",
            (
                Column("size", "size", "text"),
                Column("claim", "claim", "text", width="X"),
                *VERDICT_COLUMNS[1:],
            ),
            "Each headline claim at each size: the baselines against the SFT policy of the same size, each "
            "curriculum against uniform RLOO of the same size, reward and rollouts, at the metric of the "
            "report's claim; the band-pass filter, which no report makes a claim of, ordered. " + CLAIMS,
            group="size",
            long=True,
        ),
        TableSpec(
            "scale_summary",
            (Column("size", "size", "text"), *SUMMARY_COLUMNS),
            "Every row at each size on the shared held-out tasks: mean over training seeds.",
            group="size",
            long=True,
        ),
        TableSpec(
            "scale_cost",
            (
                Column("size", "size", "text"),
                Column("parameters", "parameters", "count"),
                Column("runs", "runs", "count"),
                Column("total_hours", "hours", digits=1),
                *(
                    Column(f"{kind}_seconds_per_run", f"s per {kind.upper()} run", digits=0)
                    for kind in ("sft", "ipo", "rloo")
                ),
            ),
            "What each size cost: its runs, their wall hours in all, and the wall seconds of one run of each "
            "kind (SFT: evaluating the policy; RLOO: any RLOO row), from each run's record (started to "
            "finished; each row at the median of its runs, so that a run resumed after a pause does not "
            "move it).",
        ),
        TableSpec(
            "scale_cost_by_method",
            (
                Column("size", "size", "text"),
                METHOD_COLUMN,
                Column("runs", "runs", "count"),
                Column("seconds_per_run", "s per run", digits=0),
                Column("training_seconds_per_run", "training s", digits=0),
            ),
            "The seconds of one run of each row at each size: its wall seconds from each run's record, "
            "training and evaluation (the median over its runs: a run resumed after a pause spans the pause), "
            "and the seconds of its training steps alone (the median over its runs of the step log's "
            "sampling, grading and update timings; none for SFT, which only evaluates, and IPO, whose step log "
            "records no timings).",
            group="size",
        ),
    ),
    (
        FigureSpec(
            "scale_claims",
            "Each headline claim's difference ($a - b$) by the policy's parameters, with seed-aware 95\\% "
            "intervals: a filled marker where the interval is clear of zero, the colour the claimed sign.",
        ),
    ),
)
SYNTHESIS = Section(
    "synthesis_study",
    "90",
    (
        TableSpec(
            "synthesis_verdicts",
            (
                Column("report", "report", "text"),
                Column("claim", "claim", "text", width="X"),
                Column("metric", "metric", "text", width="0.11"),
                Column("their_diff", "theirs", "signed"),
                Column("our_diff", "ours", "signed"),
                Column("ci", "95% interval", "interval"),
                Column("mde", "MDE", "number"),
                Column("verdict", "verdict", "text", width="0.16"),
            ),
            "Every headline claim of the five reports: their difference on their model, ours on ours with its "
            "seed-aware interval and minimum detectable effect, and the verdict.",
            group="report",
            long=True,
        ),
        TableSpec(
            "interval_coverage",
            (
                Column("metric", "metric", "text"),
                Column("n_seeds", "seeds", "count"),
                Column("n_studies", "studies", "count"),
                Column("coverage", "coverage"),
                Column("coverage_se", "MC s.e."),
                Column("power_at_mde", "power at MDE", digits=2),
                Column("mean_mde", "mean MDE"),
                Column("seed_t_coverage", "seed t coverage"),
            ),
            "The default interval on simulated studies shaped like ours (per-task rates of uniform RLOO with "
            "its floors and ceilings, 16 samples per task, shared tasks, per-run shifts fitted to the runs): "
            "the share of null studies whose 95\\% interval holds zero, its Monte Carlo standard error, the "
            "share that detect a true difference the size of the mean MDE, and the seed-paired t-interval's "
            "coverage beside it.",
            absent="The study has one training seed, which shows no seed noise to fit: there is nothing to "
            "simulate (\\texttt{study.coverage}).",
        ),
        TableSpec(
            "claims",
            (
                Column("metric", "metric", "text", width="X"),
                Column("report_a", "theirs a"),
                Column("report_b", "b"),
                Column("ours_a", "ours a"),
                Column("ours_b", "b"),
                Column("ci", "95% interval", "interval"),
                Column("mde", "MDE"),
                Column("seeds_needed", "seeds", "count"),
                Column("verdict", "verdict", "text", width="0.16"),
            ),
            "The claim registry: every quantitative claim of the five reports (\\texttt{study/claims\\_registry.csv}), "
            "the report's numbers on its model (Qwen2.5-0.5B SFT, one run), ours on ours (\\ResultsSeedCount{} training "
            "seeds), the interval of our difference, the MDE, the training seeds at which the MDE would reach "
            "the report's own difference, and the verdict; claims not tested give their reason in "
            "\\texttt{results/tables/claims.csv}. Each claim's id is on the line above its numbers.",
            group="report",
            long=True,
            lead=Column("claim_id", "claim", "code"),
        ),
        TableSpec(
            "claims_seed_change",
            (
                Column("metric", "metric", "text", width="X"),
                Column("their_diff", "theirs", "signed"),
                Column("ci_before", "95% interval, first 5", "interval"),
                Column("mde_before", "MDE", "number"),
                Column("verdict_before", "verdict", "text", width="0.13"),
                Column("ci_after", "95% interval, all", "interval"),
                Column("mde_after", "MDE", "number"),
                Column("verdict_after", "verdict", "text", width="0.13"),
            ),
            "The claim registry on the first five training seeds and on all of them: the report's own "
            "difference, our interval, MDE and verdict on each; \\texttt{moved} in "
            "\\texttt{results/tables/claims\\_seed\\_change.csv} marks a claim whose verdict changed. Each "
            "claim's id is on the line above its numbers.",
            group="report",
            long=True,
            lead=Column("claim_id", "claim", "code"),
            absent="The study has no more than five training seeds, so the registry is not compared between "
            "five seeds and more (\\texttt{study.seed\\_change}).",
        ),
        TableSpec(
            "synthesis_curricula_ranking",
            (
                Column("rank", "rank", "count"),
                METHOD_COLUMN,
                Column("mean_diff_vs_others", "mean difference", "signed"),
                Column("above", "above", "count"),
                Column("below", "below", "count"),
            ),
            "The curricula on the embedded policy that share uniform RLOO's reward and rollouts, ranked by "
            "their mean pass@1 difference from the others; \\emph{above} and \\emph{below} count the rows "
            "each is above or below with a seed-aware interval clear of zero.",
        ),
        TableSpec(
            "synthesis_budget",
            (
                Column("report", "report", "text"),
                Column("method", "method", "text", width="X"),
                Column("tokens_vs_uniform", "tokens / uniform", digits=2),
                Column("gain_vs_uniform", "pass@1 gain", "signed"),
                Column("gain", "95% interval", "interval"),
                Column("gain_per_million_tokens", "gain / M tokens", "signed"),
            ),
            "What each row generated against what it gained: its completion tokens per run relative to its "
            "uniform RLOO row, its pass@1 difference from that row with the seed-aware interval, and its pass@1 "
            "gain over the starting policy per million generated tokens. The rows of the embedded policy come "
            "first, then (after a rule) report 003's rows on the search-style policy.",
            group="model",
            long=True,
        ),
    ),
    (
        FigureSpec(
            "synthesis_forest",
            "Every row against the uniform RLOO row of its starting policy, with seed-aware 95\\% intervals.",
        ),
        FigureSpec(
            "synthesis_tradeoff",
            "Sharpening against coverage: each row's pass@1 and pass@16 differences from its uniform RLOO row "
            "with seed-aware 95\\% intervals, grouped by the direction of the two point estimates.",
        ),
        FigureSpec(
            "synthesis_cross_curricula",
            "The curricula against each other at pass@1 (row minus column); a dot marks a pair whose "
            "seed-aware interval is clear of zero.",
        ),
        FigureSpec(
            "synthesis_budget",
            "What each row generated (completion tokens per run relative to its uniform RLOO row) and what it "
            "gained (its pass@1 difference from that row, with the seed-aware 95\\% interval).",
        ),
    ),
)
