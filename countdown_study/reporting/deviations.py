"""Where this study departs from each report, and why: the rows of each notebook's deviations table.

Every row names what the report did (or left unsaid), what we do, and why; a notebook saves its
report's rows with ``outputs.save_table(deviations("000"), ...)``. The choices themselves live in the
code the rows name (sampler configs, presets), so a row and the run it describes cannot drift apart
silently: each row cites the field that sets it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

COLUMNS = ("report", "what", "report's value", "ours", "why", "where set")
"""Columns of a deviations table."""

_SHARED = (
    ("policy", "Qwen2.5-0.5B SFT (asingh15/qwen-sft-countdown-defaultproj)",
     "embedded 3.4M-parameter Qwen2 SFT, trained by this package",
     "no model hub here and 2 CPU cores; the paper road runs their model through the same functions",
     "StudyPreset.data.policy"),
    ("training length and batch", "100-128 steps of 128 prompts x 8 (001: 16 x 4)",
     "full preset: 60 steps of 32 prompts x 8; quick: 20 steps of 16 x 8",
     "what five seeds of every row cost on 2 cores", "study.STUDY_PRESETS"),
    ("generation budget", "1024 new tokens in training and evaluation",
     "96 in training (rollouts stop at </answer>); 224 in evaluation (whole rollouts)",
     "the embedded model has 256 positions; at a 96-token evaluation budget 32% of the SFT policy's "
     "rollouts were cut, at 224 9.8%", "StudyPreset.max_new_tokens, StudyPreset.eval_max_new_tokens"),
    ("training pool", "Countdown-Tasks-3to4, about 490K tasks (002: a run rolls out ~14K distinct tasks, "
     "~3% of them)", "20,000 tasks of the package's generator (seed 1; the same distribution: 3 or 4 "
     "numbers 1-99, targets 10-100), the held-out tasks removed; a full-preset run draws 1,920 prompts, "
     "about a tenth of it", "no dataset download here, and the samplers precompute features and solution "
     "counts over the whole pool; a run sees a larger share of it (a tenth against their ~3%), so fewer "
     "tasks sit at a sampler's prior",
     "training.specs.TRAIN_POOL"),
    ("learning rate", "1e-5 constant", "1e-4 constant",
     "a 3.4M model trained for 60 steps moves too little at 1e-5", "TrainConfig.lr"),
    ("held-out evaluation", "50 test prompts x 16 samples",
     "500 shared held-out tasks x 16 samples (full preset), the same for every method and seed",
     "50 problems give intervals of about +-0.1 on pass@1", "StudyPreset.eval_limit"),
    ("statistics", "one training run per method; intervals over problems (or none)",
     "five training seeds; the seed-aware comparison (study.compare) with a verdict and the minimum "
     "detectable effect", "a difference between training methods varies with the training seed",
     "study.compare"),
    ("RLOO loss aggregation", "a sequence's log-probability, its token log-probs summed: "
     "-(1/G) sum_i A_i log pi(y_i|x) (001 eq. 4, 003 Sec. 3.1), with the KL and entropy terms beside it",
     "each sequence's token terms averaged over its tokens, then over sequences (policy term, KL and "
     "entropy alike); the sum is the ablation row 'RLOO uniform (sequence-sum)' of notebook 02",
     "a token mean keeps the update's scale independent of completion length, which the learning rate "
     "and the gradient clip of 1.0 were set with; a sum weighs long rollouts more, multiplies the policy "
     "gradient by about the completion length (~44 tokens) and so shrinks the relative weight of report "
     "003's VCC term (c = 0.01 on length-averaged log-probs)", "RLOOConfig.aggregation"),
)  # fmt: skip

_ROWS = {
    "000": (
        ("reward-adaptive EMA signal", "the group's mean reward (format score 0.1 included), called a "
         "'success' EMA", "the group's success rate (share of correct samples); the literal mean reward "
         "as the ablation row 'Adaptive v1 (mean reward)'",
         "with the 0.1 format score a never-solved prompt sits at exactly 0.1, on v1's closed lower band "
         "edge, so v1 would count unsolvable prompts as learnable", "RewardAdaptiveConfig.signal"),
        ("reward-adaptive v1 weights outside the band", "'too-hard and too-easy prompts receive reduced "
         "weight' (Sec. 3.4), and '90% from learnable prompts' (no value)", "0: v1's curriculum share draws "
         "learnable prompts only; the 10% uniform share still reaches the others",
         "the report contradicts itself; '90% from learnable prompts' is the rule it states with a number",
         "ADAPTIVE_V1 (too_hard_weight, too_easy_weight)"),
        ("reward-adaptive v2 weights outside the band", "'higher sampling weights' (no value)",
         "0.25 relative to 1 for learnable prompts", "the report gives no value", "ADAPTIVE_V2"),
        ("reward-adaptive 'unknown' prompts", "'unknown: insufficient observations' (no count, no weight)",
         "unknown = never observed: one group of G samples settles a prompt's category; unknown prompts get "
         "no curriculum weight (the uniform share explores them), and while no prompt is learnable the whole "
         "batch is uniform", "the report gives neither a count nor a weight; a first group's mean is the "
         "prompt's EMA (the row below), so one group is the evidence there is", "categorize, "
         "category_weights, RewardAdaptiveSampler.choose"),
        ("first observation of a prompt", "not stated", "sets the EMA to the observed group mean",
         "no pull towards an arbitrary prior", "prompt_ema_update"),
        ("reward-adaptive v2 warm-up", "20 uniform steps of a 100-step run (20%)",
         "the row 'Adaptive v2' keeps 20 steps, a third of the 60-step run; the report's 20% (12 of 60 "
         "steps) is the row 'Adaptive v2 (20% warm-up)'", "the sampler's defaults are not part of a run's "
         "id: a new default would have the committed v2 runs reused under a rule they were not trained "
         "with", "RewardAdaptiveConfig.warmup_fraction, study.ADAPTIVE_V2_REPORT_WARMUP"),
        ("fixed-bucket weighting after the unlock", "'buckets that appear less mastered receive higher "
         "sampling weight' (no formula)", "p_b ~ (1 - s_b) + 0.1: a bucket at s = 0 gets at most 11 times "
         "the weight of a mastered one; before the unlock the easy bucket has probability 1",
         "the report gives no rule; the floor keeps a mastered bucket in the batches",
         "FixedBucketConfig.weight_floor"),
        ("fixed-bucket starting EMA", "not given", "0.0 for both buckets; a bucket absent from a batch "
         "keeps its EMA", "the easy bucket earns the unlock from observed successes",
         "FixedBucketConfig.initial_ema"),
        ("fixed-bucket unlock", "the hard bucket 'becomes fully available once' s_easy >= 0.25",
         "latched: once unlocked, the hard bucket stays available when s_easy falls back below 0.25",
         "'once' reads as a one-time event", "FixedBucketSampler.observe (unlocked)"),
        ("KL and entropy", "0.001 each", "0.001 each in the full preset; 0 in the quick preset",
         "the quick preset is a smoke test of minutes", "StudyPreset.loss"),
    ),
    "001": (
        ("difficulty levels", "easy / medium / hard, rule not stated; counts 240,608 + 249,706 = 490,314",
         "easy = 3-number tasks, medium = 4-number tasks, hard = every task (their counts); our solver-"
         "based partition as the variant row 'Sliding window (solver levels)'",
         "their counts only fit nested levels", "SlidingWindowConfig.levels"),
        ("window entry", "the most recent W rewards", "one entry per step: the share of its samples that "
         "verify", "W = 10 then covers ten steps, not a fraction of one step's samples",
         "step_pass_rate"),
        ("window on a level change", "Algorithm 1 only appends", "not cleared (as Algorithm 1)",
         "faithful; clear_on_move=True is the alternative", "SlidingWindowConfig.clear_on_move"),
        ("staged thirds", "proposed, not run", "run as a row (easy, medium, hard, a third of the steps each)",
         "it tests whether the controller adds anything beyond ordering", "STAGED_THIRDS"),
        ("reward", "binary (eq. 1; Sec. 6 'the reward is binary'), though Table 3 lists a reward of 0.1 for "
         "rollouts with arithmetic errors or invalid numbers and its average scores exceed pass@1 (0.256 vs "
         "0.18), which a 0/1 score cannot", "binary for every row of this notebook (the evaluation's mean "
         "score still counts the 0.1 format score, as theirs)", "the report contradicts itself; the rule it "
         "states is binary, so its thresholds mean what they meant there", "REPORT_001 (format_score=0)"),
        ("controller movement", "0.30 / 0.24 with W = 10 'produced visible movement across difficulty "
         "buckets' (Sec. 5.1) on a policy at pass@1 0.12-0.18", "the same thresholds on a policy "
         "stronger than theirs: the level, drawn per seed in the sampler-state figure, climbs from easy to hard "
         "(every task) within the first steps and stays there, the window's pass rate above the lower "
         "threshold, so most of the run draws from the whole pool", "the report's thresholds, kept; 'Sliding window (solver levels)' and "
         "'Staged thirds' are the rows whose levels keep moving", "SLIDING_WINDOW (low, high)"),
    ),
    "002": (
        ("uniform control", "static mode of the same pipeline, with replacement, flat weights",
         "'RLOO uniform (with replacement)', shared with notebook 02",
         "the same distribution (fsc_static is tested to draw it); one run per seed instead of two",
         "study.CONTROL_002"),
        ("probe size and interval", "128 prompts (one batch) every 10 of 100 steps",
         "one batch's worth (32 prompts at the full preset) every tenth of the run (6 of 60 steps)",
         "the report's proportions at our batch and run length", "run_method (probe_size, total_steps)"),
        ("rows run", "Tables 1-3 and Appendix A",
         "Tables 1-3 (ten curriculum rows); the Appendix A variants are registered but not run",
         "five seeds of every row cost two hours of the two cores per ten rows", "study.REPORT_002"),
    ),
    "003": (
        ("sweep controls", "a no-contrast control matched to each c", "one control per seed (c = 0) for every "
         "c", "without the contrast the runs of a seed do not depend on c", "study.VCC_SWEEP_CONTROL"),
        ("checkpoint selection",
         "one checkpoint chosen across the whole tight sweep (c, seed and step: 'c = 0.005 with seed 37 at "
         "step 60'), saved every 10 of 80 steps, trained on train[200:], selected on train[:200]",
         "snapshots every 10 steps and the last, on the first 200 pool tasks (taken out of the pool the "
         "run trains on, as their train[200:]) and the held-out tasks, 4 samples each; each run's best "
         "validation step is selected (ties go to the earliest), and the claim pools those of every "
         "coefficient and seed",
         "one checkpoint of one sweep is a single draw with no interval; a selection per run gives one per "
         "seed and coefficient to compare with the final checkpoints. The report gives no sample count; "
         "4 samples keep a snapshot under a minute. The "
         "sweep's first runs trained on their validation tasks too; their run ids differ",
         "study.SNAPSHOTS, training.specs.EvalSpec.snapshot_every, training.specs.split_validation, "
         "study.selection"),
        ("starting policy", "their SFT checkpoint: 3.95 answer spans per rollout, first-verifying pass@1 "
         "0.3975 against final 0.3038", "embedded-search, the package's SFT on search-style traces that "
         "sometimes leave a correct answer", "the embedded policy writes 1.33 spans and abandons almost no "
         "correct answer: VCC would have nothing to learn from", "study.SEARCH_POLICY"),
        ("rows also on the embedded policy", "one starting policy", "the three curricula (rollouts cut at "
         "the first answer, as every other embedded row) and VCC-RLOO against uniform RLOO on whole rollouts, "
         "five seeds each, also on the embedded policy; the commit reward is not", "the curricula then stand "
         "beside reports 000-002's against one uniform run; VCC there learns without abandoned answers",
         "study.REPORT_003_EMBEDDED"),
        ("training rollouts", "whole rollouts up to 1024 tokens", "whole rollouts up to 224 new tokens "
         "(the other notebooks cut training rollouts at the first </answer>)",
         "abandonment needs text after an answer; 224 is the evaluation budget", "study.WHOLE_ROLLOUTS"),
        ("adaptive and hybrid curricula",
         "named in Table 1 (adaptive pass@1 0.4638; selected hybrid 0.5150, its best), not defined; the "
         "text fixes only the easiest-first solution-count ranking from the easiest 30% to the whole pool",
         "adaptive: a frontier over that ranking, from the easiest 30%, widening by 10% when the training "
         "success EMA (0.8) has gained 0.04 since the frontier last moved (dwell 3 steps; rule "
         "'progress'); hybrid: that frontier, never behind the staged schedule. The first rule, widen "
         "when the EMA reaches 0.5, is the variant rows '... (success EMA 0.5)'",
         "the report gives no rule. Under the 0.5 threshold the adaptive frontier never moved on our "
         "policies (success EMA peaks 0.32 embedded, 0.44 search-style) and no hybrid run was ever ahead "
         "of the staged schedule, so every hybrid run was the staged curriculum seed for seed and the "
         "report's best pass@1 method went untested; a gain follows the policy's own improvement at any "
         "level: on the committed runs' success traces it widens the frontier 2-6 times in 60 steps "
         "(vcc_003_frontier_moves says whether it did)",
         "samplers.solution_count.SolutionCountAdaptiveConfig (rule, gain), study.REPORT_003_THRESHOLD"),
        ("VCC pairs per prompt", "capped, cap not given", "2", "as many as our IPO pairs",
         "objectives.vcc.VCCConfig.max_pairs_per_prompt"),
        ("group size and batch", "G = 4, batch 8 x accumulation 4, lr 1e-6",
         "the study's preset (G = 8, 32 prompts, lr 1e-4)", "one preset for every report's rows",
         "study.STUDY_PRESETS"),
        ("Table 1 checkpoints", "'Curriculum RLOO step90' (the staged run at step 90) and 'Selected Hybrid "
         "Curriculum' (a selected checkpoint; how it was selected is not said)", "the final checkpoint of "
         "every row (step 60 of 60), beside their numbers under our row names 'Staged curriculum' and "
         "'Hybrid curriculum'", "every row is compared at one training length; step 90 lies past our "
         "run, and selecting only the curricula's checkpoints would favour them", "reporting.references"),
        ("Table 2's RLOO baseline", "a run of its own (0.3063 rollout accuracy, against Table 1's 0.4963)",
         "one RLOO row for both tables, so Table 1's claim that RLOO beats VCC-RLOO at pass@1 and Table 2's "
         "that VCC-RLOO beats every row (RLOO included) test one pair of rows in opposite directions: at most "
         "one can hold", "the same config gives the same run", "study.REPORT_003"),
        ("tight sweep and its claim", "c in {0.005, ..., 0.015}, two seeds; the checkpoint validation "
         "selected did worse on test than others", "the same coefficients at the study's five seeds; the "
         "claim tested as the validation-selected minus the final checkpoint's test pass@1 over every sweep "
         "run", "the best test checkpoint is chosen on the test tasks, so its regret is positive even for a "
         "perfect selector; the final checkpoint is what a run gives without selection",
         "study.VCC_SWEEP, study.selection.selection_claim"),
    ),
    "004": (
        ("tiers", "T0-T3 overlap (T1: 3-4 numbers, target <= 75; T2: 4 numbers, target <= 150; ...)",
         "a partition of the pool (countdown.tier_labels)", "overlapping tiers make arm rewards ambiguous",
         "countdown.difficulty.tier_labels"),
        ("router warm-up", "not given", "10 steps before the hard-tier quota applies; routing from step 0",
         "the Q EMA (eta 0.15) needs about 7 observations to settle", "BanditRouterConfig.warmup_steps"),
        ("exploration eps", "not given", "0.1 (every arm keeps at least 1.25% of a batch's probability)",
         "the report gives the formula, not the value", "BanditRouterConfig.epsilon"),
        ("batch assembly under the constraints", "not described",
         "synthetic count ~ Binomial(B, p_synthetic) clipped to the limits, multinomial within real and "
         "synthetic arms, then the hard quota filled by moving easy slots", "the report gives only the "
         "constraints", "samplers.bandit_router.assemble_counts"),
        ("rule-based generator", "numbers for the tier, a random tree, exact value, checks",
         "the same, targets 10-300; the share accepted per tier is measured in every run (notebook 07's "
         "generator acceptance: most candidates fail as non-integer or out of range)",
         "the report gives no ranges or rates", "countdown.synthetic.RuleBasedConfig"),
        ("teacher",
         "Qwen3-8B, an instructed 8B LM, prompted with the tier spec; it 'implicitly biases toward "
         "number-target combinations that are arithmetically non-trivial'",
         "the package's own proposer: a 3.4M-parameter copy of the embedded policy trained 1,200 steps to "
         "write the training pool's own tasks of a tier (tier prompt -> task with its solution's merges), "
         "sampled at temperature 0.7. It is an imitator of the pool, not an instructed LM: it follows the "
         "tier prompt (counts and target ranges spelled out) only as far as the pool's tasks taught it, "
         "rarely leaves the pool's targets (10..100; its 90% quantiles 45-108 where the T1 and T3 prompts "
         "allow up to 300) and knows nothing of the student. Acceptance T0 0.62, T1 0.56, T2 0.35, T3 "
         "0.25 (0.445 overall, under its 0.5 goal; rejected mostly as unsolvable, 18-49%, or of the wrong "
         "tier); its accepted targets follow the pool's (median T0 30 vs 30, T1 65 vs 61, T3 56 vs 56) "
         "where the rule-based generator's T3 median is 199",
         "no model hub here, and an 8B model cannot run on 2 CPU cores; their 0.5B teacher was useless. "
         "The router + teacher row therefore tests fresh pool-like tasks per tier, not an LM teacher's "
         "judgement",
         "training.teacher_train.ProposerConfig, training.teacher.TeacherConfig, "
         "training.teacher_train.teacher_quality"),
        ("OOD sets",
         "50 held-out '5-number tasks and sparse variants' (the variants not described); Table 4 on the "
         "5-number prompts",
         "200 generated 5-number tasks (ood:200:0), and 200 tasks of 3 and 4 numbers with targets "
         "101..200 (ood_targets:200:0, our reading of the sparse variants: the target axis past the "
         "training range of 10..100, where derivations thin out), both never trained on; a smaller preset "
         "evaluates no more of them than its held-out tasks",
         "no row solves a 5-number task (the policy writes three or four numbers), so that set cannot "
         "tell methods apart; the shipped policy solves 8 of the first 100 target tasks at pass@16. "
         "Rule-based synthetic tasks reach targets up to 300: ood_targets is out of distribution for the "
         "real-task rows only",
         "study.OOD_SET, countdown.generate_ood_target_tasks"),
        ("OOD nonzero pass@16",
         "a prompt counts when one of 16 samples earns a nonzero score, partial credit for a 'parseable "
         "but incorrect' answer included (82-90%, beside an exact pass@16 of 0%)",
         "the same rule on our verifier: a nonzero reward, the 0.1 format score included; the "
         "above-the-floor reading is the exact pass@16 of ood_targets",
         "an exact solution cannot be their nonzero column, which reads 82-90% where exact reads 0%; our "
         "policy writes a parseable answer in nearly every rollout, so the column reads 100% here: it "
         "measures format, not transfer",
         "study.OOD_SET"),
    ),
    "field": (
        ("dynamic sampling statistic", "DAPO: groups whose accuracy is all 0 or all 1 (verl's metric 'acc')",
         "the same, on the verifier's correctness (the format score is not a success)",
         "a shaped-reward variance would keep groups of wrong answers differing only in format",
         "training.group_filters.mixed_groups"),
        ("generation rounds", "verl's DAPO recipe: up to 10 generation batches per step, then an error",
         "up to 4 batches of P prompts per step; after them the update uses the groups kept so far, and a "
         "step that kept none makes no optimizer step", "a round costs about 0.9 s here; an error would "
         "end a run over one unlucky step", "GroupFilterSpec.max_rounds"),
        ("band-pass statistic", "OpenRLHF: a group's mean reward strictly inside (low, high)",
         "its mean success strictly inside (0.2, 0.8): 2-6 correct of 8",
         "with the 0.1 format score a mean reward mixes success and format", "GroupFilterSpec"),
        ("difficulty pools thresholds", "prime-rl: easy above 0.8, hard below 0.2, on the mean reward",
         "0.95 / 0.05 on the success rate (the values the method's description here asks for)",
         "with G = 8 they retire exactly the groups with no RLOO gradient",
         "samplers.difficulty_pools.DIFFICULTY_POOLS"),
        ("MoPPS candidate set", "the shuffled data loader's ts_ratio x B prompts",
         "4 x B prompts drawn uniformly each step; prior Beta(1, 1), no discount",
         "the released class's defaults; the paper's discount is not stated",
         "samplers.beta_posterior.BETA_POSTERIOR"),
        ("SEC categories", "difficulty levels or problem types of each benchmark",
         "number count x report 004's tiers (5 arms); alpha 0.5, tau 1.0 as in its Countdown run",
         "Countdown has no levels of its own here", "samplers.sec.SEC"),
        ("filters and curricula", "filters run on any data loader", "filters run with uniform sampling only",
         "the curricula decide from one batch per step; the field's filters are compared with uniform RLOO",
         "samplers.REFILLABLE"),
    ),
}  # fmt: skip
"""Each report's own rows (the shared ones are added to every table; ``field``: notebook 08's
methods from the RL frameworks)."""


def deviations(report: str, extra: Sequence[tuple[str, str, str, str, str]] = ()) -> pd.DataFrame:
    """The deviations table of ``report`` (``COLUMNS``): the shared rows, the report's own, then ``extra``
    rows (what, report's value, ours, why, where set) that a lower layer keeps beside its code, such as
    ``samplers.feature_space.fsc_deviations()``."""
    if report not in _ROWS:
        raise ValueError(f"no deviations recorded for report {report!r}; have {sorted(_ROWS)}")
    rows = [(report, *row) for row in (*_SHARED, *_ROWS[report], *extra)]
    return pd.DataFrame(rows, columns=list(COLUMNS))
