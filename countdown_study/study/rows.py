"""The method rows of each report, the paired contrasts each notebook makes and the claims it tests.

Every row is a ``method.Method``; a report's rows are a tuple named after it (``REPORT_000``), its
notebook's paired contrasts ``CONTRASTS_*`` and the report's claims, signed, ``CLAIMS_*`` (the one source
of the claims: ``study.synthesis.all_claims``). Which rows each notebook runs is
``study.grid.NOTEBOOK_STUDIES``. The names here are re-exported by ``study`` and ``study.methods``.
"""

from __future__ import annotations

from dataclasses import replace

from countdown_study.samplers.reward_adaptive import REPORT_WARMUP_FRACTION
from countdown_study.samplers.solution_count import PROGRESS
from countdown_study.study.method import Method
from countdown_study.training.group_filters import GroupFilterSpec
from countdown_study.training.specs import AuxLossSpec

__all__ = [
    "SFT",
    "IPO",
    "UNIFORM",
    "UNIFORM_REPLACEMENT",
    "UNIFORM_SEQUENCE_SUM",
    "CLAIMS_BASELINES",
    "REPORT_000",
    "REPORT_001",
    "ADAPTIVE_V2_REPORT_WARMUP",
    "REPORT_000_ABLATIONS",
    "CONTRASTS_000",
    "CLAIMS_000",
    "REPORT_001_ABLATIONS",
    "CONTRASTS_001",
    "CLAIMS_001",
    "OOD_SET",
    "REPORT_004",
    "CONTRASTS_004",
    "CLAIMS_004",
    "ZERO_CLAIMS_004",
    "CONTROL_002",
    "REPORT_002",
    "FIGURES_002",
    "CONTRASTS_002",
    "CLAIMS_002",
    "SEARCH_POLICY",
    "WHOLE_ROLLOUTS",
    "REPORT_003",
    "REPORT_003_THRESHOLD",
    "REPORT_003_COMMIT",
    "SNAPSHOTS",
    "VCC_COEFFICIENTS",
    "VCC_SWEEP_CONTROL",
    "VCC_SWEEP",
    "CONTRASTS_003_SWEEP",
    "CONTRASTS_003",
    "CLAIMS_003",
    "WHOLE_UNIFORM",
    "REPORT_003_EMBEDDED",
    "REPORT_003_THRESHOLD_EMBEDDED",
    "CONTRASTS_003_EMBEDDED",
    "CLAIMS_003_EMBEDDED",
    "FIELD_BASELINES",
    "FIELD_CURRICULA",
    "CONTRASTS_FIELD",
]

SFT = Method("SFT", kind="sft")
IPO = Method("IPO", kind="ipo")
UNIFORM = Method("RLOO uniform", sampler="uniform")
UNIFORM_REPLACEMENT = Method("RLOO uniform (with replacement)", sampler="uniform_replacement")
UNIFORM_SEQUENCE_SUM = Method("RLOO uniform (sequence-sum)", loss={"aggregation": "token_sum"})
"""Uniform RLOO with the reports' loss aggregation: each sequence's token log-probs summed (``-(1/G) sum_i
A_i log pi(y_i|x)``) where every other row averages them over the sequence's tokens (``objectives.rloo``);
an ablation of our default for notebook 02, compared with ``UNIFORM``."""

CLAIMS_BASELINES = {
    (UNIFORM.name, SFT.name, "pass@1"): +1,  # report 002, Table 1: 0.344 -> 0.506
    (UNIFORM.name, SFT.name, "pass@16"): -1,  # 0.76 -> 0.68
    (IPO.name, SFT.name, "pass@1"): +1,  # 0.344 -> 0.361
}
"""The reports' claims about the baselines, signed per metric: RLOO raises pass@1 over the SFT policy and
narrows pass@16; IPO raises pass@1."""

REPORT_000 = (
    Method("Fixed v1", sampler="fixed_v1"),
    Method("Fixed v2", sampler="fixed_v2"),
    Method("Adaptive v1", sampler="adaptive_v1"),
    Method("Adaptive v2", sampler="adaptive_v2"),
)
"""Report 000's Table 1 rows (compared with ``UNIFORM``)."""

_BINARY = {"format_score": 0.0}
REPORT_001 = (
    Method("RLOO uniform (binary reward)", sampler="uniform", changes=_BINARY),
    Method("Sliding window", sampler="sliding_window", changes=_BINARY),
    Method("Staged thirds", sampler="staged_thirds", changes=_BINARY),
)
"""Report 001's comparison, all with its binary reward; the first row is the baseline."""

ADAPTIVE_V2_REPORT_WARMUP = Method(
    "Adaptive v2 (20% warm-up)", sampler="adaptive_v2", options={"warmup_fraction": REPORT_WARMUP_FRACTION}
)
"""Report 000's v2 with its warm-up in proportion to the run (20% of the steps: 12 of 60 at the full preset)
where the "Adaptive v2" row keeps the report's 20 steps (a third of a 60-step run)."""
REPORT_000_ABLATIONS = (
    Method("Adaptive v1 (mean reward)", sampler="adaptive_v1", options={"signal": "reward"}),
    ADAPTIVE_V2_REPORT_WARMUP,
)
"""Report 000's rows as its text has them where ours differ: v1 with its literal signal, the group's mean
reward (format score included), against our default, the success rate (``samplers.reward_adaptive``); v2
with its warm-up in proportion to the run."""

CONTRASTS_000 = (
    *((m.name, UNIFORM.name) for m in (*REPORT_000, *REPORT_000_ABLATIONS)),
    (REPORT_000_ABLATIONS[0].name, REPORT_000[2].name),
    (ADAPTIVE_V2_REPORT_WARMUP.name, REPORT_000[3].name),
)
"""Notebook 03's paired contrasts: every row against uniform, and each literal variant against ours."""
CLAIMS_000 = {(m.name, UNIFORM.name): -1 for m in REPORT_000}
"""Report 000's claims, signed: every curriculum of Table 1 trails uniform RLOO."""
REPORT_001_ABLATIONS = (
    Method(
        "Sliding window (solver levels)",
        sampler="sliding_window",
        options={"levels": "solver"},
        changes=_BINARY,
    ),
)
"""The controller on our levels from solver structure (a partition; easy 50%, medium 31%, hard 19%) instead
of report 001's nested 3-number / 4-number / all levels."""

CONTRASTS_001 = tuple((m.name, REPORT_001[0].name) for m in (*REPORT_001[1:], *REPORT_001_ABLATIONS))
"""Notebook 04's paired contrasts: every row against its binary-reward uniform baseline."""

CLAIMS_001 = {(REPORT_001[1].name, REPORT_001[0].name): -1}
"""Report 001's claim, signed: the sliding window trails uniform RLOO (binary reward); staged thirds is
its proposed baseline, with no claim."""

OOD_SET = (("ood", "ood:200:0"), ("ood_targets", "ood_targets:200:0"))
"""Report 004's out-of-distribution evaluation (``Method.eval_sets``), never trained on: its 5-number tasks
(``ood``), at the floor for every row (the policy writes three or four numbers), and our reading of its
"sparse variants" (``ood_targets``: 3 and 4 numbers with targets 101..200, above the training range of
10..100; ``countdown.generate_ood_target_tasks``), within the policy's reach. Rule-based synthetic tasks
reach targets up to 300, so ``ood_targets`` is out of distribution for the real-task rows only."""
REPORT_004 = (
    Method("RLOO uniform (+OOD)", sampler="uniform", eval_sets=OOD_SET),
    Method("Router, real tasks only", sampler="adsc_real_only", eval_sets=OOD_SET),
    Method("Router + rule-based tasks", sampler="adsc_rule_based", eval_sets=OOD_SET),
    Method("Router + teacher tasks", sampler="adsc_teacher", eval_sets=OOD_SET),
)
"""Report 004's Table 2 rows: vanilla RLOO, the real-only router, ADSC with rule-based synthetic tasks and
ADSC with the package's own teacher (``training.teacher``, the shipped task proposer in place of their
Qwen3-8B), each also evaluated on the 5-number set."""
CONTRASTS_004 = tuple((m.name, REPORT_004[0].name) for m in REPORT_004[1:])
"""Notebook 07's paired contrasts: each router against vanilla RLOO."""
CLAIMS_004 = {
    (REPORT_004[1].name, REPORT_004[0].name): +1,  # routing alone helps (0.5156 -> 0.5247, 68% -> 70%)
    (REPORT_004[2].name, REPORT_004[0].name): -1,  # rule-based synthetic tasks do not (0.5025, 68%)
    (REPORT_004[3].name, REPORT_004[0].name): +1,  # teacher tasks help (0.5280, 72%)
}
"""Report 004's claims, signed: the real-only router and teacher ADSC beat vanilla RLOO; rule-based ADSC
trails it."""
ZERO_CLAIMS_004 = (REPORT_004[2].name, REPORT_004[3].name)
"""Report 004's Table 4 claim: neither synthetic student solves a 5-number task exactly at pass@16 (0% and
0%), judged as a rate that stays at zero (``tables.zero_claims_table``)."""

CONTROL_002 = UNIFORM_REPLACEMENT
"""Report 002's uniform control: its static mode draws uniformly with replacement, which is
``uniform_replacement`` (shared with notebook 02; ``fsc_static`` is the same distribution)."""
REPORT_002 = (
    Method("Dynamic edge", sampler="fsc_dynamic_edge"),
    Method("Static-once edge", sampler="fsc_once_edge"),
    Method("Static-once feature_failure", sampler="fsc_once_feature_failure"),
    Method("DV kernel", sampler="fsc_kernel"),
    Method("DV kernel (density-corrected)", sampler="fsc_kernel_density"),
    Method("Edge x feature_failure", sampler="fsc_multiply"),
    Method("Weighted average", sampler="fsc_weighted"),
    Method("Split batch 70/30", sampler="fsc_split"),
    Method("Gated", sampler="fsc_gated"),
    Method("Schedule", sampler="fsc_schedule"),
)
"""Report 002's rows of Tables 1-3 (the samplers ``samplers.feature_space``), beside ``CONTROL_002``."""
FIGURES_002 = {
    "Figure 3 (R2): dynamic vs frozen edge": ("Dynamic edge", "Static-once edge", CONTROL_002.name),
    "Figure 4 (R3): frozen policies": ("Static-once feature_failure", "Static-once edge", CONTROL_002.name),
    "Figure 5 (R4): the fusions": ("Edge x feature_failure", "Weighted average", "Split batch 70/30",
                                   "DV kernel (density-corrected)", "Gated", "Schedule", "Dynamic edge",
                                   "Static-once feature_failure"),
}  # fmt: skip
"""Report 002's Figures 3-5: the rows each compares (``plots.pass_at_k_panels``)."""
CONTRASTS_002 = (
    *((m.name, CONTROL_002.name) for m in REPORT_002),
    ("Dynamic edge", "Static-once edge"),
    ("Static-once feature_failure", "Static-once edge"),
)
"""Notebook 05's paired contrasts: every row against the uniform control, and the two claims between
rows."""
CLAIMS_002 = {
    ("Dynamic edge", CONTROL_002.name, "pass@1"): +1,  # R1
    ("Dynamic edge", "Static-once edge", "pass@1"): +1,  # R2
    ("Static-once feature_failure", "Static-once edge", "pass@16"): +1,  # R3
    ("Static-once feature_failure", CONTROL_002.name, "pass@16"): +1,  # R3
    ("Edge x feature_failure", CONTROL_002.name, "pass@1"): +1,  # R4
    ("Split batch 70/30", CONTROL_002.name, "pass@1"): +1,  # R4
}
"""Report 002's claims R1-R4, signed, per metric: dynamic edge beats the control (R1) and its frozen
version (R2) at pass@1; frozen feature_failure beats frozen edge and the control at high k (R3); the
fusions beat the control at pass@1 (R4; that they lose no high k is read from their pass@16 rows)."""

SEARCH_POLICY = "embedded-search"
"""Report 003's starting policy here: the package's search-style SFT policy, which writes several answer
spans per rollout and abandons correct ones (``countdown-study sft`` documents how it is made)."""
WHOLE_ROLLOUTS = {"stop_at_answer": False, "max_new_tokens": 224}
"""Report 003's training rollouts: whole, not cut at the first ``</answer>`` (so answers can be abandoned
and VCC can see them), within the evaluation budget of 224 new tokens."""
_VCC = {"aux_losses": (AuxLossSpec("vcc", coef=0.01),)}
REPORT_003 = (
    Method("RLOO uniform", sampling=WHOLE_ROLLOUTS),
    Method("Staged curriculum", sampler="solution_count_staged", sampling=WHOLE_ROLLOUTS),
    Method(
        "Adaptive curriculum", sampler="solution_count_adaptive", options=PROGRESS, sampling=WHOLE_ROLLOUTS
    ),
    Method("Hybrid curriculum", sampler="solution_count_hybrid", options=PROGRESS, sampling=WHOLE_ROLLOUTS),
    Method("VCC-RLOO", changes=_VCC, sampling=WHOLE_ROLLOUTS),
)
"""Report 003's Table 1 rows trained here (SFT and IPO are added by the notebook), all on whole rollouts;
the first row is their RLOO baseline and VCC-RLOO is outcome reward + VCC at c = 0.01. The adaptive and
hybrid rows widen their frontier on the policy's progress (``samplers.solution_count``, ``PROGRESS``)."""
REPORT_003_THRESHOLD = (
    Method(
        "Adaptive curriculum (success EMA 0.5)", sampler="solution_count_adaptive", sampling=WHOLE_ROLLOUTS
    ),
    Method("Hybrid curriculum (success EMA 0.5)", sampler="solution_count_hybrid", sampling=WHOLE_ROLLOUTS),
)
"""The first rule of report 003's adaptive and hybrid curricula (the frontier widens when the success EMA
reaches 0.5), kept as variant rows: the configs, and run ids, of the runs first made for the adaptive and
hybrid rows. On our policies the adaptive frontier never widened under it, and no hybrid was ever ahead of
the staged schedule."""
REPORT_003_COMMIT = (
    Method("Commit reward only", changes={"reward": "commit"}, sampling=WHOLE_ROLLOUTS),
    Method("Commit reward + VCC", changes={"reward": "commit", **_VCC}, sampling=WHOLE_ROLLOUTS),
)
"""Report 003's Table 2 rows beside RLOO and VCC-RLOO (outcome reward + VCC)."""
SNAPSHOTS = {"snapshots": True}
"""Report 003's sweep evaluates checkpoints during training (``Method.evaluation``): at the preset's interval
and after the last step (``StudyPreset.snapshot_eval``: every 10 of the full preset's 60 steps, on the first
200 tasks of the training pool, their ``train[:200]``), and on the held-out tasks, 4 samples each."""
VCC_COEFFICIENTS = (0.005, 0.0075, 0.01, 0.0125, 0.015)
"""Report 003's tight sweep of the VCC coefficient c."""
VCC_SWEEP_CONTROL = Method("Sweep control (c = 0)", sampling=WHOLE_ROLLOUTS, evaluation=SNAPSHOTS)
"""The sweep's no-contrast control. Report 003 matches a control to each c; without the contrast the runs
of one seed are the same whatever c, so here one control per seed serves every c (ours)."""
VCC_SWEEP = tuple(
    Method(f"VCC c = {c}", changes={"aux_losses": (AuxLossSpec("vcc", coef=c),)}, sampling=WHOLE_ROLLOUTS,
           evaluation=SNAPSHOTS)
    for c in VCC_COEFFICIENTS
)  # fmt: skip
"""Report 003's sweep rows: VCC-RLOO at each c, with snapshots for checkpoint selection."""
CONTRASTS_003_SWEEP = tuple((m.name, VCC_SWEEP_CONTROL.name) for m in VCC_SWEEP)
"""Each sweep row against the control (final checkpoints)."""
CONTRASTS_003 = (
    *((m.name, REPORT_003[0].name) for m in (*REPORT_003[1:], *REPORT_003_COMMIT)),
    ("Commit reward + VCC", "Commit reward only"),
)
"""Notebook 06's paired contrasts: every row against RLOO on whole rollouts, and VCC on top of the commit
reward against the commit reward alone."""
CLAIMS_003 = {
    ("Staged curriculum", "RLOO uniform", "pass@1"): +1,  # 0.4963 -> 0.5088
    ("Hybrid curriculum", "RLOO uniform", "pass@1"): +1,  # -> 0.5150
    ("Staged curriculum", "RLOO uniform", "pass@16"): -1,  # 0.72 -> 0.70
    ("Adaptive curriculum", "RLOO uniform", "pass@16"): -1,  # -> 0.68
    ("Hybrid curriculum", "RLOO uniform", "pass@16"): -1,  # -> 0.70
    ("VCC-RLOO", "RLOO uniform", "pass@16"): +1,  # 0.72 -> 0.78 (Table 1)
    ("Commit reward only", "RLOO uniform", "pass@1"): -1,  # rollout accuracy 0.3063 -> 0.2925 (Table 2)
}
"""Report 003's claims, signed per metric: curricula raise pass@1 (staged, hybrid) and lower pass@16; VCC
raises pass@16; the commit reward alone does not raise rollout accuracy (it fell; a verdict other than
``reversed`` is consistent with "does not raise")."""

WHOLE_UNIFORM = Method("RLOO uniform (whole rollouts)", sampling=WHOLE_ROLLOUTS)
"""Report 003's RLOO baseline on the embedded policy: uniform RLOO on whole rollouts, VCC's control there
(named apart from ``UNIFORM``, whose rollouts stop at the first answer, in the embedded policy's rows)."""
REPORT_003_EMBEDDED = (
    *(replace(m, sampling={}) for m in REPORT_003[1:4]),
    WHOLE_UNIFORM,
    REPORT_003[4],
)
"""Report 003's rows also run on the embedded policy (ours, notebook 06), where they say something the
search-style policy's cannot: the three curricula with the rollouts of every other embedded row (cut at the
first answer), so they join reports 000-002's curricula against the same ``UNIFORM`` run; and VCC-RLOO on
whole rollouts against ``WHOLE_UNIFORM``, on a policy that abandons almost no correct answer, so that its
pairs are mostly a verifying rollout against a failing one of the same prompt: what VCC does without the
abandonment it is built for. The commit reward is left out (it pays for committing early, which this policy
already does)."""
REPORT_003_THRESHOLD_EMBEDDED = tuple(replace(m, sampling={}) for m in REPORT_003_THRESHOLD)
"""``REPORT_003_THRESHOLD`` on the embedded policy, with the rollouts of ``REPORT_003_EMBEDDED``'s
curricula."""
CONTRASTS_003_EMBEDDED = (
    *((m.name, UNIFORM.name) for m in REPORT_003_EMBEDDED[:4]),
    (REPORT_003[4].name, WHOLE_UNIFORM.name),
)
"""Notebook 06's contrasts on the embedded policy: each curriculum, and whole rollouts, against uniform RLOO;
VCC-RLOO against uniform RLOO on whole rollouts."""
CLAIMS_003_EMBEDDED = {
    **{key: sign for key, sign in CLAIMS_003.items() if key[0] in {m.name for m in REPORT_003[1:4]}},
    (REPORT_003[4].name, WHOLE_UNIFORM.name, "pass@16"): +1,
}
"""Report 003's curricula and VCC claims tested again on the embedded policy (same signs and metrics)."""

FIELD_BASELINES = (
    Method("Dynamic sampling (DAPO)", changes={"group_filter": GroupFilterSpec("dynamic_sampling")}),
    Method("Band-pass 0.2-0.8", changes={"group_filter": GroupFilterSpec("band_pass", low=0.2, high=0.8)}),
    Method("Difficulty pools (prime-rl)", sampler="difficulty_pools"),
    Method("Beta posterior (MoPPS)", sampler="beta_posterior"),
    Method("SEC", sampler="sec"),
)
"""The field's prompt-selection methods (notebook 08), each with uniform RLOO underneath: the two group
filters (``training.group_filters``) and three samplers (``samplers.difficulty_pools``,
``samplers.beta_posterior``, ``samplers.sec``)."""
FIELD_CURRICULA = (*REPORT_000, REPORT_002[0], REPORT_002[5], REPORT_002[7], REPORT_004[1])
"""The reports' curriculum rows notebook 08 ranks the field's methods against (their runs are shared with
notebooks 03, 05 and 07): report 000's four rows, report 002's claimed winners (R1's dynamic edge, R4's
fusions) and report 004's real-task router. All use the format-score reward of uniform RLOO (report 001's
binary-reward rows do not)."""
CONTRASTS_FIELD = tuple((m.name, UNIFORM.name) for m in FIELD_BASELINES)
"""Notebook 08's contrasts with uniform RLOO (those with the best curriculum row are made in the notebook,
once the best row is known)."""
