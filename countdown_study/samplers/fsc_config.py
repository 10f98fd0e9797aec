"""Report 002's Feature-Space Curriculum: its configuration, the registered rows and our choices.

``FSCConfig`` holds every hyperparameter of the curriculum (``feature_space.FeatureSpaceSampler`` runs
it). ``FSC_PRESETS`` are the registered samplers (``samplers.registry.SAMPLERS``), each the report's row
named beside it (mode, policy, fusion):

- ``fsc_static``: Table 1 "FSC uniform control" (fsc_000): ``static``, flat weights.
- ``fsc_dynamic_edge``: Tables 1-3 "FSC dynamic edge" (fsc_027): ``dynamic``, ``edge``.
- ``fsc_once_edge``: Tables 1-2 "FSC static-once edge" (fsc_028): ``static_once``, ``edge``.
- ``fsc_once_feature_failure``: Tables 1 and 3 "FSC static-once feature_failure" (fsc_031).
- ``fsc_kernel``: Table 1 "FSC edge_dv_kernel" (fsc_032): ``dynamic``, uncorrected kernel.
- ``fsc_kernel_density``: Table 3 "density-corrected kernel" (fsc_043).
- ``fsc_multiply``: Tables 1 and 3 "edge x feature_failure" (fsc_040): ``multiply``.
- ``fsc_weighted``: Section 5.1.4's weighted-average fusion (fsc_042; crashed there, no number).
- ``fsc_split``: Tables 1 and 3 "split-batch 70/30 (corr. ff)" (fsc_041): 70% edge, 30%
  correlation-weighted feature_failure.
- ``fsc_gated``: Table 3 "gated-unobserved ff" (fsc_044): edge where observed, feature_failure elsewhere.
- ``fsc_schedule``: Table 3 "schedule edge->ff @ 50" (fsc_045): edge, then feature_failure from half the
  run (needs the option ``total_steps``).
- Appendix A: ``fsc_failure_rate`` (failure-rate only), ``fsc_failure_edge`` (failure-rate + edge, their
  mean), ``fsc_kernel_corr`` (fsc_035) and ``fsc_feature_failure_corr`` (fsc_036), the
  correlation-weighted DV policies.

Every combination row runs in ``dynamic`` mode, as the report's fusions of the dynamic edge with the DV.
Where the report is silent, our choices are fields of ``FSCConfig``; ``fsc_deviations()`` lists each
with the report's wording, our value and why (for a notebook table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from countdown_study.countdown.features import DV_COLUMNS
from countdown_study.samplers.fsc_policies import FUSIONS

MODES = ("static", "static_once", "dynamic")
"""Report 002's curriculum modes (Section 3.6)."""
POLICIES = ("failure_rate", "edge", "feature_failure", "edge_dv_kernel")
"""Report 002's scoring policies (Section 3.7)."""
ANCHORS = ("edge", "failure")
"""What an observed kernel anchor carries: its edge score or its failure rate."""
METADATA = ("reward_mean", "fail_rate", "pass_at_k")
"""The dynamic metadata kept per pool task (Section 3.3)."""
DV_FIELDS = (
    "num_count",
    "target_log10",
    "op_distinct_min",
    "requires_add",
    "requires_sub",
    "requires_mul",
    "requires_div",
    "nps_log1p",
    "shortest_operand_count",
    "shortest_expression_depth",
    "all_numbers_required",
)
"""The DV fields the feature policies use: n, m, u, s and nps of Section 3.2 plus the solver's fields."""
REPORT_STEPS, REPORT_PROBE_EVERY = 100, 10
"""The report's run length and refresh interval: the probe interval scales as a tenth of the run."""


def _half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


@dataclass(frozen=True)
class FSCConfig:
    """Hyperparameters of the Feature-Space Curriculum (report 002, Sections 3 and 4)."""

    mode: str = "dynamic"
    """``static`` (flat weights, no probe), ``static_once`` (probe at step 0, then frozen) or ``dynamic``."""
    policy: str = "edge"
    """The primary scoring policy (``POLICIES``)."""
    fusion: str = "none"
    """How ``policy`` and ``secondary`` combine (``fsc_policies.FUSIONS``); ``none``: the primary alone."""
    secondary: str = "feature_failure"
    """The second policy of a fusion (unused with ``fusion="none"``)."""
    fusion_weight: float = 0.5
    """``weighted``: the primary's weight, the secondary gets the rest (ours; the report's run crashed)."""
    split_fraction: float = 0.7
    """``split``: share of each batch drawn from the primary's distribution (report: 70/30)."""
    switch_fraction: float = 0.5
    """``schedule``: the share of the run after which the secondary takes over (report: step 50 of 100)."""
    total_steps: int | None = None
    """The run's training steps (the loop passes it); scales the schedule and the default probe interval."""
    probe_size: int = 128
    """Tasks per probe, drawn uniformly without replacement (report: 128, its batch size)."""
    probe_every: int | None = None
    """Steps between probes in ``dynamic`` mode; None: a tenth of ``total_steps`` (report: 10 of 100)."""
    edge_target: float = 0.5
    """tau of eq. 1: the success rate the edge score peaks at."""
    edge_width: float = 0.25
    """sigma of eq. 1 (the report's "edge temperature")."""
    epsilon: float = 0.05
    """Added to every clipped score before normalising (Section 3.1)."""
    prior_fail_rate: float = 0.5
    """The failure rate of an unobserved task, and what sparse bins are smoothed toward (Section 3.6)."""
    ema_decay: float = 0.5
    """Weight of the old value in the metadata EMA; a first observation replaces the prior (ours)."""
    pass_k: int = 8
    """k of the ``pass_at_k`` metadata, clamped to the group size (ours)."""
    dv_fields: tuple[str, ...] = DV_FIELDS
    """DV columns the feature policies bin or embed (ours: every numeric DV field that varies)."""
    num_bins: int = 5
    """Bins per DV field: fields with at most this many values bin by value, others by quantile (ours)."""
    min_bin_observations: int = 10
    """Observed tasks a bin needs before its failure rate replaces the prior (ours)."""
    bin_smoothing: float = 5.0
    """Pseudo-count of the prior failure rate in each bin's estimate (ours)."""
    correlation_weights: bool = False
    """Weight DV fields by ``|Spearman(field, fail_rate)|`` in feature_failure and the kernel (Sec. 3.8)."""
    kernel_bandwidth: float = 1.0
    """b of eq. 5, in standard deviations of each DV field over the pool (ours)."""
    kernel_density_correction: bool = False
    """Divide the kernel sum by the local kernel mass (fsc_043)."""
    kernel_anchor: str = "edge"
    """What an anchor carries (``ANCHORS``): its edge score or its failure rate (ours: edge)."""
    kernel_min_anchor_score: float = 0.0
    """Observed tasks whose anchor value is below this are no anchors (ours: every observed task is one)."""
    kernel_min_anchors: int = 8
    """Fewer anchors than this: the kernel falls back to the neutral prior (flat) (ours)."""
    kernel_min_mass: float = 1e-3
    """Density correction: below this kernel mass a task keeps the prior's score (ours)."""
    diagnostics: bool = True
    """Compute the refresh diagnostics (``refresh_diagnostics``) at every refresh for the step log."""

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("mode", self.mode, MODES),
            ("policy", self.policy, POLICIES),
            ("secondary", self.secondary, POLICIES),
            ("fusion", self.fusion, FUSIONS),
            ("kernel_anchor", self.kernel_anchor, ANCHORS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        for name in ("fusion_weight", "split_fraction", "switch_fraction", "edge_target", "prior_fail_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("edge_width", "epsilon", "kernel_bandwidth", "kernel_min_mass"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("probe_size", "pass_k", "num_bins", "kernel_min_anchors", "total_steps", "probe_every"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"ema_decay must be in [0, 1), got {self.ema_decay}")
        if self.min_bin_observations < 0 or self.bin_smoothing < 0:
            raise ValueError("min_bin_observations and bin_smoothing must be non-negative")
        numeric = set(DV_COLUMNS) - {"solution"}
        if not self.dv_fields or set(self.dv_fields) - numeric:
            raise ValueError(
                f"dv_fields must be numeric DV columns among {sorted(numeric)}, got {self.dv_fields}"
            )

    @property
    def probe_interval(self) -> int:
        """Steps between ``dynamic`` probes: ``probe_every``, else a tenth of the run (10 when unknown)."""
        if self.probe_every is not None:
            return self.probe_every
        if self.total_steps is None:
            return REPORT_PROBE_EVERY
        return max(1, _half_up(self.total_steps * REPORT_PROBE_EVERY / REPORT_STEPS))

    @property
    def switch_step(self) -> int:
        """``schedule``: the first step scored by the secondary (report: 50 of 100)."""
        if self.total_steps is None:
            raise ValueError("the schedule fusion needs the option total_steps (the run's training steps)")
        return _half_up(self.switch_fraction * self.total_steps)


FSC_DYNAMIC_EDGE = FSCConfig()
FSC_PRESETS: dict[str, FSCConfig] = {
    "fsc_static": FSCConfig(mode="static"),  # Table 1, "FSC uniform control" (fsc_000)
    "fsc_dynamic_edge": FSC_DYNAMIC_EDGE,  # Tables 1-3, "FSC dynamic edge" (fsc_027)
    "fsc_once_edge": FSCConfig(mode="static_once"),  # Tables 1-2, "FSC static-once edge" (fsc_028)
    "fsc_once_feature_failure": FSCConfig(mode="static_once", policy="feature_failure"),  # fsc_031
    "fsc_kernel": FSCConfig(policy="edge_dv_kernel"),  # Table 1, "FSC edge_dv_kernel" (fsc_032)
    "fsc_kernel_density": FSCConfig(policy="edge_dv_kernel", kernel_density_correction=True),  # fsc_043
    "fsc_multiply": FSCConfig(fusion="multiply"),  # Tables 1 and 3, "edge x feature_failure" (fsc_040)
    "fsc_weighted": FSCConfig(fusion="weighted"),  # Section 5.1.4, weighted average (fsc_042, crashed)
    "fsc_split": FSCConfig(fusion="split", correlation_weights=True),  # Tables 1 and 3 (fsc_041)
    "fsc_gated": FSCConfig(fusion="gated"),  # Table 3, "gated-unobserved ff" (fsc_044)
    "fsc_schedule": FSCConfig(fusion="schedule"),  # Table 3, "schedule edge->ff @ 50" (fsc_045)
    "fsc_failure_rate": FSCConfig(policy="failure_rate"),  # App. A, failure-rate only
    "fsc_failure_edge": FSCConfig(policy="failure_rate", fusion="weighted", secondary="edge"),  # App. A
    "fsc_kernel_corr": FSCConfig(policy="edge_dv_kernel", correlation_weights=True),  # App. A, fsc_035
    "fsc_feature_failure_corr": FSCConfig(  # App. A, fsc_036
        mode="static_once", policy="feature_failure", correlation_weights=True
    ),
}
"""Every registered FSC row by sampler name (module docstring: the report's row of each)."""


class Deviation(NamedTuple):
    """One place where the report is silent or we differ, for a notebook table."""

    what: str
    """The quantity or rule."""
    report: str
    """What report 002 says."""
    ours: str
    """What ``FSCConfig()`` does."""
    why: str
    """Why."""
    field: str
    """The ``FSCConfig`` field that changes it ("" when none does)."""


def fsc_deviations(config: FSCConfig = FSC_DYNAMIC_EDGE) -> list[Deviation]:
    """Our choices where report 002 is silent, with ``config``'s values (the defaults by default)."""
    c = config
    return [
        Deviation("metadata EMA", "EMA-smoothed, no decay given",
                  f"decay {c.ema_decay}; a first observation replaces the prior",
                  "one probe should move an unobserved task off the prior", "ema_decay"),
        Deviation("fail_rate", "P(r < 1)", "share of samples whose answer does not verify",
                  "equals P(r < 1) when the full score is 1; the 0.1 format score counts as a failure", ""),
        Deviation("pass_at_k", "logged, k not given", f"k = {c.pass_k}, clamped to the group size",
                  "the report's group size is 8", "pass_k"),
        Deviation("probe size", "128 (its batch size)", f"{c.probe_size}",
                  "smaller presets pass their prompts per step, keeping one batch per probe", "probe_size"),
        Deviation("probe interval", "every 10 of 100 steps", f"every {c.probe_every} steps" if c.probe_every else "a tenth of total_steps (10 if unknown)",
                  "keeps ten probes per run at any run length", "probe_every"),
        Deviation("probe draw", "uniformly drawn prompts", "uniform without replacement within a probe",
                  "128 distinct tasks; independent of the curriculum", ""),
        Deviation("DV fields", "n, m, u, nps, s and solver fields", ", ".join(c.dv_fields),
                  "every numeric DV field that varies on the public data (nps once, as nps_log1p)",
                  "dv_fields"),
        Deviation("bins", "bin each DV field, count not given",
                  f"by value up to {c.num_bins} values, else {c.num_bins} quantile bins",
                  "discrete fields keep their values; target and nps get equal-count bins", "num_bins"),
        Deviation("bin minimum", "min observations, value not given", f"{c.min_bin_observations} tasks",
                  "report 002 finds tens of observations per bin enough (App. B)", "min_bin_observations"),
        Deviation("bin smoothing", "smoothing, value not given",
                  f"{c.bin_smoothing} pseudo-tasks at the prior {c.prior_fail_rate}",
                  "shrinks thin bins toward the neutral prior", "bin_smoothing"),
        Deviation("DV normalisation", "normalized DV space", "z-score of each field over the pool",
                  "one bandwidth then means one standard deviation in every field", ""),
        Deviation("bandwidth", "b, value not given", f"{c.kernel_bandwidth}",
                  "one standard deviation of every z-scored field; a neighbour differing in one binary field "
                  "keeps exp(-gap^2 / 2) of the weight: exp(-2) for a flag set on half the tasks (gap 2), "
                  "about 0.016 for one set on 14% (gap 2.9)", "kernel_bandwidth"),
        Deviation("anchors", "'observed edge/failure anchors' (Sec. 3), their values called 'anchor "
                  "difficulties' a_j (Sec. 5.2)",
                  f"every observed task, carrying its {c.kernel_anchor} score",
                  "the edge score is what the edge policy targets and the density-corrected average needs low "
                  "anchors too; kernel_anchor='failure' carries the failure rate instead", "kernel_anchor"),
        Deviation("anchor minimum", "sparse anchors fall back to the neutral prior",
                  f"fewer than {c.kernel_min_anchors} anchors: flat", "too few anchors describe no region",
                  "kernel_min_anchors"),
        Deviation("uncorrected kernel scale", "sum_j K(x, x_j) a_j", "that sum over its pool maximum",
                  "scores in [0, 1], comparable with epsilon = 0.05; proportional to the sum", ""),
        Deviation("density correction", "divide by sum_j K(x_i, x_j)", "sum over anchors j (an average)",
                  f"below mass {c.kernel_min_mass} the task keeps the prior", "kernel_min_mass"),
        Deviation("ARD weights", "w_f ~ |Spearman_f|",
                  "over observed tasks; feature_failure sums them to 1, the kernel to F",
                  "equal weights until enough tasks are observed", "correlation_weights"),
        Deviation("weighted average", "not reported (fsc_042 crashed)", f"{c.fusion_weight} primary",
                  "the plain mean", "fusion_weight"),
        Deviation("split batch", "70/30", f"round({c.split_fraction} B) edge, the rest feature_failure",
                  "the primary takes the larger share", "split_fraction"),
        Deviation("gate", "DV term gated to unobserved examples",
                  "edge where observed, feature_failure elsewhere", "a measured task keeps its own edge", ""),
        Deviation("schedule", "edge then feature_failure at step 50 of 100",
                  f"switch at round({c.switch_fraction} total_steps)", "half the run at any length",
                  "switch_fraction"),
        Deviation("static control", "never probes, uniform weights",
                  "the same draw with flat weights; no metadata updates", "only the weighting differs", "mode"),
        Deviation("static-once edge", "fsc_028's 'solution-DV edge scoring' (undefined)",
                  "eq. 1 on the probed success rate", "the report does not define the variant", ""),
        Deviation("diagnostics", "TV, JS, entropy, ESS, top mass, Spearman, batch overlap",
                  "JS in bits; overlap = Jaccard of distinct indices vs a reference draw",
                  "bounded in [0, 1]", "diagnostics"),
    ]  # fmt: skip
