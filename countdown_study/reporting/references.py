"""The reports' own numbers, to print beside ours (their model: Qwen2.5-0.5B SFT, 50 test prompts x 16).

Every value is copied from the report named in its row; ``model`` says whose policy produced it so a
table never mixes their numbers with ours unlabelled. ``reported(...)`` filters them as a DataFrame.
"""

from __future__ import annotations

import pandas as pd

PAPER_MODEL = "Qwen2.5-0.5B SFT (asingh15/qwen-sft-countdown-defaultproj)"
"""The policy behind every reported number."""

# (report, method, metric, value, where in the report)
_ROWS: tuple[tuple[str, str, str, float, str], ...] = (
    # report 000, Table 1 (pass@1 / 2 / 4 / 8 / 16)
    *[("000", "RLOO uniform", f"pass@{k}", v, "Table 1") for k, v in zip((1, 2, 4, 8, 16), (0.4300, 0.5512, 0.6214, 0.6582, 0.6800), strict=True)],
    *[("000", "Fixed v1", f"pass@{k}", v, "Table 1") for k, v in zip((1, 2, 4, 8, 16), (0.3812, 0.5042, 0.5888, 0.6370, 0.6600), strict=True)],
    *[("000", "Fixed v2", f"pass@{k}", v, "Table 1") for k, v in zip((1, 2, 4, 8, 16), (0.3762, 0.4932, 0.5723, 0.6226, 0.6600), strict=True)],
    *[("000", "Adaptive v1", f"pass@{k}", v, "Table 1") for k, v in zip((1, 2, 4, 8, 16), (0.3312, 0.4680, 0.5769, 0.6359, 0.6600), strict=True)],
    *[("000", "Adaptive v2", f"pass@{k}", v, "Table 1") for k, v in zip((1, 2, 4, 8, 16), (0.3425, 0.4573, 0.5424, 0.6040, 0.6400), strict=True)],
    # report 000, section 5.2-5.3: per-difficulty pass@1 (the baseline's are given as approximate)
    ("000", "RLOO uniform", "pass@1 (3 numbers)", 0.65, "Sec. 5.2, approximate"),
    ("000", "RLOO uniform", "pass@1 (4 numbers)", 0.23, "Sec. 5.2, approximate"),
    ("000", "Fixed v2", "pass@1 (3 numbers)", 0.5391, "Sec. 5.2"),
    ("000", "Fixed v2", "pass@1 (4 numbers)", 0.2260, "Sec. 5.2"),
    ("000", "Adaptive v1", "pass@1 (3 numbers)", 0.5104, "Sec. 5.3"),
    ("000", "Adaptive v1", "pass@1 (4 numbers)", 0.1659, "Sec. 5.3"),
    ("000", "Adaptive v2", "pass@1 (3 numbers)", 0.6068, "Sec. 5.3"),
    ("000", "Adaptive v2", "pass@1 (4 numbers)", 0.0986, "Sec. 5.3"),
    # report 001: SFT/IPO reference counts out of 50, and the 128-step comparison
    *[("001", "SFT", f"pass@{k}", v / 50, "Extended Abstract; Table 1 (x/50)") for k, v in zip((1, 2, 4, 8, 16), (19, 27, 33, 33, 38), strict=True)],
    ("001", "RLOO uniform (binary reward)", "pass@1", 0.18, "Extended Abstract; Abstract"),
    ("001", "RLOO uniform (binary reward)", "pass@16", 0.66, "Extended Abstract; Abstract"),
    ("001", "RLOO uniform (binary reward)", "mean_score", 0.256, "Extended Abstract; Abstract"),
    ("001", "Sliding window", "pass@1", 0.12, "Extended Abstract; Abstract"),
    ("001", "Sliding window", "pass@16", 0.60, "Extended Abstract; Abstract"),
    ("001", "Sliding window", "mean_score", 0.205, "Extended Abstract; Abstract"),
    # report 002, Table 1 (pass@1 / 8 / 16, percent -> fraction)
    *[("002", m, f"pass@{k}", v / 100, "Table 1") for m, vals in (
        ("SFT", (34.38, 71.27, 76.00)), ("IPO", (36.12, 72.05, 76.00)), ("RLOO uniform", (50.62, 65.93, 68.00)),
        ("RLOO uniform (with replacement)", (51.31, 69.27, 72.00)), ("Dynamic edge", (56.88, 72.65, 75.00)),
        ("Static-once edge", (49.38, 67.37, 68.00)), ("Static-once feature_failure", (52.56, 73.61, 78.00)),
        ("DV kernel", (56.38, 70.82, 72.00)), ("Edge x feature_failure", (57.75, 73.38, 74.00)),
        ("Split batch 70/30", (57.88, 71.90, 74.00)),
    ) for k, v in zip((1, 8, 16), vals, strict=True)],
    # report 002, Table 3: the fusions Table 1 leaves out (fsc_043-045, one seed each)
    *[("002", m, f"pass@{k}", v / 100, "Table 3") for m, vals in (
        ("DV kernel (density-corrected)", (53.25, 68.90, 70.00)), ("Gated", (52.62, 68.50, 70.00)),
        ("Schedule", (50.88, 69.00, 70.00)),
    ) for k, v in zip((1, 8, 16), vals, strict=True)],
    # report 003, Table 1 (avg pass@k, pass@1 / 2 / 4 / 8 / 16) and Table 2 (rollout accuracy, mean reward,
    # pass@16); their "Curriculum RLOO step90" (step 90) is our staged row and their "Selected Hybrid" (a
    # selected checkpoint) our hybrid row, both at our final checkpoint (deviations("003"), "Table 1
    # checkpoints")
    *[("003", m, metric, v, "Table 1") for m, vals in (
        ("RLOO uniform", (0.6756, 0.4963, 0.5935, 0.6542, 0.6956, 0.7200)),
        ("IPO", (0.6831, 0.3750, 0.5350, 0.6524, 0.7178, 0.7600)),
        ("Staged curriculum", (0.6580, 0.5088, 0.5993, 0.6406, 0.6699, 0.7000)),
        ("SFT", (0.6454, 0.3038, 0.4567, 0.5943, 0.6883, 0.7400)),
        ("VCC-RLOO", (0.6732, 0.3263, 0.4847, 0.6174, 0.7101, 0.7800)),
        ("Adaptive curriculum", (0.6298, 0.4638, 0.5447, 0.5991, 0.6472, 0.6800)),
        ("Hybrid curriculum", (0.6703, 0.5150, 0.6077, 0.6577, 0.6890, 0.7000)),
    ) for metric, v in zip(("avg_pass@k", "pass@1", "pass@2", "pass@4", "pass@8", "pass@16"), vals, strict=True)],
    # (Table 2's RLOO baseline is another run than Table 1's: 0.3063 against 0.4963)
    *[("003", m, metric, v, "Table 2") for m, vals in (
        ("RLOO uniform (Table 2 run)", (0.3063, 0.3611, 0.78)), ("Commit reward only", (0.2925, 0.3481, 0.80)),
        ("Commit reward + VCC", (0.3125, 0.3694, 0.80)), ("VCC-RLOO", (0.3262, 0.3812, 0.78)),
    ) for metric, v in zip(("exact_rate", "mean_score", "pass@16"), vals, strict=True)],
    # report 003's tight sweep: the checkpoint validation selected (c = 0.005, seed 37, step 60), on test
    ("003", "Validation-selected checkpoint", "pass@1", 0.2838, "Sec. 5.2, tight sweep"),
    ("003", "Validation-selected checkpoint", "pass@16", 0.74, "Sec. 5.2, tight sweep"),
    # report 004 (75 steps): mean score, exact rate, pass@16
    ("004", "RLOO uniform", "mean_score", 0.5156, "Results"),
    ("004", "RLOO uniform", "exact_rate", 0.4800, "Results"),
    ("004", "RLOO uniform", "pass@16", 0.68, "Results"),
    *[("004", m, metric, v, "Table 2") for m, vals in (
        ("RLOO uniform (+OOD)", (0.5156, 0.4800, 0.68)), ("Router, real tasks only", (0.5247, 0.5075, 0.70)),
        ("Router + rule-based tasks", (0.5025, 0.4775, 0.68)), ("Router + teacher tasks", (0.5280, 0.5075, 0.72)),
    ) for metric, v in zip(("mean_score", "exact_rate", "pass@16"), vals, strict=True)],
    ("004", "Router + rule-based tasks", "OOD exact pass@16", 0.0, "Table 4"),
    ("004", "Router + rule-based tasks", "OOD nonzero pass@16", 0.90, "Table 4"),
    ("004", "Router + teacher tasks", "OOD exact pass@16", 0.0, "Table 4"),
    ("004", "Router + teacher tasks", "OOD nonzero pass@16", 0.82, "Table 4"),
)  # fmt: skip


_NAN = float("nan")

_TABLES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[tuple, ...]]] = {
    # report 002, Table 4: paired bootstrap on its 50 problems, single runs ("edge" is fsc_027, the dynamic
    # edge; "kernel" the uncorrected DV kernel; percent -> fraction)
    ("002", "Table 4"): (("a", "b", "metric", "diff", "ci_low", "ci_high"), (
        ("Dynamic edge", "RLOO uniform", "pass@1", 0.064, -0.004, 0.138),
        ("Dynamic edge", "RLOO uniform (with replacement)", "pass@1", 0.026, -0.024, 0.079),
        ("Dynamic edge", "DV kernel", "pass@1", 0.006, -0.036, 0.052),
        ("Dynamic edge", "DV kernel", "pass@16", 0.040, -0.040, 0.080),
        ("Static-once feature_failure", "DV kernel", "pass@16", 0.080, 0.000, 0.140),
        ("Static-once feature_failure", "Dynamic edge", "pass@1", -0.052, -0.104, -0.002),
    )),
    # report 002, Table 2: the controlled comparison, dynamic minus static-once edge (no interval given)
    ("002", "Table 2"): (("a", "b", "metric", "diff", "ci_low", "ci_high"), (
        ("Dynamic edge", "Static-once edge", "pass@1", 0.0750, _NAN, _NAN),
        ("Dynamic edge", "Static-once edge", "pass@8", 0.0528, _NAN, _NAN),
        ("Dynamic edge", "Static-once edge", "pass@16", 0.0700, _NAN, _NAN),
    )),
    # report 002, Table 8 (App. C): per-seed pass@k of its four two-seed configurations, mean and s.d.;
    # "Static-once edge (basic)" is fsc_022, an edge score other than fsc_028's (our "Static-once edge")
    ("002", "Table 8"): (("method", "seed", "pass@1", "pass@8", "pass@16"), tuple(
        (method, seed, *(v / 100 for v in values)) for method, rows in (
            ("RLOO uniform (with replacement)", (("r001", (54.38, 68.72, 72.00)), ("r002", (48.25, 69.82, 72.00)),
                                                 ("mean", (51.31, 69.27, 72.00)), ("s.d.", (4.33, 0.78, 0.00)))),
            ("Static-once edge (basic)", (("r001", (49.50, 71.10, 72.00)), ("r002", (47.88, 66.79, 68.00)),
                                          ("mean", (48.69, 68.95, 70.00)), ("s.d.", (1.15, 3.05, 2.83)))),
            ("Dynamic edge", (("r001", (56.75, 72.76, 74.00)), ("r002", (57.00, 72.53, 76.00)),
                              ("mean", (56.88, 72.65, 75.00)), ("s.d.", (0.18, 0.16, 1.41)))),
            ("Static-once feature_failure", (("r001", (51.75, 75.19, 80.00)), ("r002", (53.37, 72.03, 76.00)),
                                             ("mean", (52.56, 73.61, 78.00)), ("s.d.", (1.15, 2.23, 2.83)))),
        ) for seed, values in rows
    )),
    # report 002, Section 5.2: Spearman rho of DV fields with the failure rate, as ranges across its
    # dynamic, static-once and kernel runs (num_count given as ~0.5)
    ("002", "Sec. 5.2 Spearman"): (("field", "rho_low", "rho_high"), (
        ("num_count", 0.5, 0.5), ("shortest_operand_count", 0.22, 0.31), ("all_numbers_required", -0.28, -0.25),
        ("nps_log1p", -0.27, -0.22), ("shortest_expression_depth", 0.16, 0.22),
    )),
    # report 002, Section 5.2: the strongest pairwise interactions, failure-rate spread ("nps_*": our
    # nps_log1p; the second given as ~0.77)
    ("002", "Sec. 5.2 interactions"): (("field_a", "field_b", "spread_low", "spread_high"), (
        ("nps_log1p", "shortest_operand_count", 0.80, 0.82), ("nps_log1p", "shortest_expression_depth", 0.77, 0.77),
    )),
    # report 002, Section 5.2: the 4-number part of the training diet, uncorrected kernel (fsc_032) against
    # edge: all-numbers-required 4-operand share, shortest_expression_depth >= 3 share
    ("002", "Sec. 5.2 kernel diet"): (("policy", "all_numbers_four_operands", "depth_3_or_more"), (
        ("DV kernel", 0.78, 0.18), ("Dynamic edge", 0.73, 0.28),
    )),
    # report 002, Section 5.2: the edge reweighting of fsc_027's step-0 probe (128 rows), 5,000 resamples
    ("002", "Sec. 5.2 signal"): (("weights", "uniform", "weighted", "gain", "ci_low", "ci_high",
                                  "prob_positive", "n"), (
        ("Dynamic edge", 0.084, 0.143, 0.69, 0.54, 0.89, 1.0, 128),
    )),
    # report 002, Sections 4 and 5.2: the dynamic edge's distribution "stays essentially uniform" (one value
    # per run, beside our mean over the run)
    ("002", "Sec. 5.2 diagnostics"): (("method", "sampler_ess_frac_mean", "sampler_entropy_mean"), (
        ("Dynamic edge", 0.995, 1.00),
    )),
    # report 002, Table 5: failure rate per bin over fsc_027's observed rows (mean +- half-width; their 0/1 of
    # all_numbers_required as the booleans our difficulty vectors hold)
    ("002", "Table 5"): (("field", "value", "n", "fail_rate", "ci_low", "ci_high"), (
        ("num_count", 3, 6992, 0.338, 0.329, 0.347), ("num_count", 4, 7088, 0.750, 0.742, 0.758),
        ("shortest_operand_count", 3, 7390, 0.381, 0.372, 0.390),
        ("shortest_operand_count", 4, 5192, 0.720, 0.710, 0.730),
        ("all_numbers_required", False, 2506, 0.778, 0.766, 0.790),
        ("all_numbers_required", True, 11574, 0.495, 0.487, 0.503),
    )),
    # report 002, Table 6: within-group reward variance by band over fsc_027's 14,080 observed rows
    ("002", "Table 6"): (("band", "share", "mean_reward_var", "mean_reward"), (
        ("solved", 0.189, 0.000, 1.00), ("easy", 0.207, 0.118, 0.84), ("edge", 0.150, 0.203, 0.56),
        ("hard", 0.096, 0.123, 0.24), ("impossible", 0.358, 0.002, 0.06),
    )),
    # report 002, Table 7: the num_count 3-vs-4 gap (true 0.411) from subsamples, 20 trials per budget
    ("002", "Table 7"): (("n_obs", "pool_share", "true_gap", "mean_gap", "sd_gap", "correct_sign", "trials"), (
        (2000, 0.0041, 0.411, 0.412, 0.016, 20, 20), (500, 0.0010, 0.411, 0.421, 0.029, 20, 20),
        (100, 0.0002, 0.411, 0.438, 0.065, 20, 20), (50, 0.0001, 0.411, 0.402, 0.124, 20, 20),
        (20, 0.00004, 0.411, 0.461, 0.191, 20, 20),
    )),
    # report 002, Figure 6 (and its text): probe rows of fsc_027 by phase (steps 0-20, 20-50, 50-100)
    ("002", "Figure 6"): (("name", "mean_success", "mastered_share", "edge_mean_shortest_operand_count",
                           "edge_mean_four_numbers"), (
        ("early", 0.29, 0.14, 3.13, 0.45), ("mid", 0.45, 0.42, 3.23, 0.54), ("late", 0.50, 0.46, 3.28, 0.58),
    )),
}  # fmt: skip


def reported_table(report: str, name: str) -> pd.DataFrame:
    """One of a report's own tables (``"Table 5"``), in the column names our analysis of it uses, with
    ``source`` (``report 002, Table 5``) and ``model`` in front."""
    if (report, name) not in _TABLES:
        have = ", ".join(f"{r} {n}" for r, n in _TABLES)
        raise ValueError(f"no table {name!r} of report {report} is copied here; have {have}")
    columns, rows = _TABLES[(report, name)]
    table = pd.DataFrame(list(rows), columns=list(columns))
    table.insert(0, "model", PAPER_MODEL)
    table.insert(0, "source", f"report {report}, {name}")
    return table


def beside(ours: pd.DataFrame, report: str, name: str, our_model: str) -> pd.DataFrame:
    """``ours`` (an analysis table of ours) above the report's own ``name`` (``reported_table``), each row
    labelled with ``source`` and ``model``; columns are ours, a column they do not give is empty."""
    mine = ours.copy()
    mine.insert(0, "model", our_model)
    mine.insert(0, "source", "this study")
    theirs = reported_table(report, name)
    return pd.concat([mine, theirs[[c for c in theirs.columns if c in mine.columns]]], ignore_index=True)


def reported(reports: tuple[str, ...] | None = None, methods: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The reported numbers (columns report, method, metric, value, source, model), optionally filtered."""
    table = pd.DataFrame(_ROWS, columns=["report", "method", "metric", "value", "source"]).assign(
        model=PAPER_MODEL
    )
    if reports is not None:
        table = table[table["report"].isin(reports)]
    if methods is not None:
        table = table[table["method"].isin(methods)]
    return table.reset_index(drop=True)


def side_by_side(
    ours: pd.DataFrame, report: str, metrics: tuple[str, ...], our_model: str, where: str | None = None
) -> pd.DataFrame:
    """Our per-method ``metrics`` (a ``study.summary_table``) beside one report's, one row per method x source
    (``where``: only their numbers from that place in the report, e.g. ``"Table 2"``)."""
    theirs = reported((report,))
    if where is not None:
        theirs = theirs[theirs["source"] == where]
    theirs = theirs[theirs["metric"].isin(metrics)].pivot_table(
        index="method", columns="metric", values="value", sort=False
    )
    theirs = theirs.reset_index().assign(model=PAPER_MODEL, source=f"report {report}")
    mine = ours[["method", *[m for m in metrics if m in ours]]].assign(model=our_model, source="this study")
    return pd.concat([mine, theirs], ignore_index=True)[["source", "model", "method", *metrics]]
