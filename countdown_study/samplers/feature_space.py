"""Report 002's Feature-Space Curriculum (FSC): probe the policy's edge, describe it in the Difficulty Vector.

Report 002 ("Feature-Space Curriculum Learning for Countdown Reasoning", Section 3, Algorithm 1): each
pool task carries its static Difficulty Vector (``countdown.features.difficulty_vectors``) and dynamic,
EMA-smoothed metadata (``reward_mean``, ``fail_rate = P(r < 1)``, ``pass_at_k``; an unobserved task
has the neutral prior ``fail_rate = 0.5``). Per step: probe (``probe_requests``: 128 uniformly drawn
tasks every 10 steps in ``dynamic`` mode, once at step 0 in ``static_once``, never in ``static``),
update the metadata from the probe, rebuild the scores of every pool task under the active policy,
draw the batch with replacement from ``p(x) ~ max(score, 0) + 0.05``, and in ``dynamic`` mode update
again from the batch's own rollouts. The scores, fusions and diagnostics are pure functions in
``fsc_policies``; this module holds the configuration, the registered rows and the sampler.

Registered samplers (``SAMPLERS``), each the report's row named beside it (mode, policy, fusion):

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

Cost: ``difficulty_vectors`` runs once at construction (about 16 CPU seconds for the public 490k pool,
``benchmarks/results/solver.json``); pass ``features`` to reuse a table. The kernel works on the pool's
distinct DV rows (about 12k of 100k generated tasks), so a rebuild costs distinct rows x anchor rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from countdown_study.countdown.features import DV_COLUMNS, difficulty_vectors
from countdown_study.countdown.grading import Grades
from countdown_study.countdown.task import Task
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.samplers.fsc_policies import (
    FUSIONS,
    batch_overlap,
    bin_codes,
    compare_distributions,
    concentration,
    correlation_weights,
    edge_score,
    feature_failure_scores,
    fuse_scores,
    group_metadata,
    kernel_scores,
    sampling_probabilities,
    split_counts,
)
from countdown_study.samplers.observations import observation_records
from countdown_study.samplers.reward_adaptive import prompt_ema_update
from countdown_study.seeding import SamplerStream, derive_rng

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
                  "neighbours differing in one binary field keep about exp(-2) weight", "kernel_bandwidth"),
        Deviation("anchors", "observed edge/failure anchors",
                  f"every observed task, carrying its {c.kernel_anchor} score",
                  "the density-corrected average needs low anchors too", "kernel_anchor"),
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


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class FeatureSpaceSampler(Sampler):
    """Report 002's FSC: probe, rebuild per-task scores over the whole pool, draw with replacement."""

    config: FSCConfig = FSC_DYNAMIC_EDGE
    """The curriculum's hyperparameters (a row of ``FSC_PRESETS``)."""
    features: pd.DataFrame | None = None
    """``difficulty_vectors(pool)`` if already computed; computed at construction when None."""
    name: str = field(default="feature_space", init=False)

    @classmethod
    def from_options(
        cls,
        pool: Sequence[Task],
        seed: int = 0,
        config: FSCConfig = FSC_DYNAMIC_EDGE,
        features: pd.DataFrame | None = None,
        **overrides,
    ) -> FeatureSpaceSampler:
        """The sampler with ``config``'s fields overridden by ``overrides`` (e.g. ``total_steps=100``)."""
        return cls(pool=pool, seed=seed, config=replace(config, **overrides), features=features)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.fusion == "schedule" and self.config.total_steps is None:
            raise ValueError("the schedule fusion needs the option total_steps (the run's training steps)")
        table = difficulty_vectors(self.pool) if self.features is None else self.features
        if len(table) != len(self.pool):
            raise ValueError(f"features has {len(table)} rows for a pool of {len(self.pool)} tasks")
        self.dv = table.loc[:, list(self.config.dv_fields)].to_numpy(dtype=np.float64)  # (N, F)
        self.codes = np.column_stack([bin_codes(col, self.config.num_bins) for col in self.dv.T])  # (N, F)
        self._space: tuple[np.ndarray, np.ndarray] | None = None  # kernel: distinct rows, row of each task
        self.load_state_dict({"indices": [], **{key: [] for key in METADATA}})

    # --- metadata ------------------------------------------------------------------------------------

    @property
    def observed(self) -> np.ndarray:
        """Which pool tasks have been observed.  # (N,) bool"""
        return ~np.isnan(self.metadata["fail_rate"])

    def fail_rates(self) -> np.ndarray:
        """Each task's failure rate, the prior where unobserved.  # (N,)"""
        return np.nan_to_num(self.metadata["fail_rate"], nan=self.config.prior_fail_rate)

    def _update(self, indices: Sequence[int], grades: Grades) -> None:
        groups = group_metadata(grades.rewards, grades.correct, self.config.pass_k)  # key -> (P,)
        for row, index in enumerate(indices):  # a task drawn twice is updated twice, in order
            if index < 0:
                continue
            for key, values in self.metadata.items():
                values[index] = prompt_ema_update(values[index], groups[key][row], self.config.ema_decay)
        self._scores, self._parts = {}, {}  # policy -> (N,), late -> parts: stale now
        self.refresh_pending = True

    # --- scores and distributions --------------------------------------------------------------------

    def field_weights(self) -> np.ndarray:
        """Per-field weights of the DV policies, mean 1 (all 1 without correlation weighting).  # (F,)"""
        n_fields = self.dv.shape[1]
        observed = self.observed
        if not self.config.correlation_weights or observed.sum() < max(self.config.min_bin_observations, 2):
            return np.ones(n_fields)
        weights = correlation_weights(self.dv[observed], self.metadata["fail_rate"][observed])  # (F,)
        return weights * n_fields / weights.sum() if weights.sum() > 0 else np.ones(n_fields)

    def _kernel_space(self) -> tuple[np.ndarray, np.ndarray]:
        if self._space is None:
            std = self.dv.std(axis=0)
            z = (self.dv - self.dv.mean(axis=0)) / np.where(std > 0, std, 1.0)  # (N, F)
            rows, inverse = np.unique(z, axis=0, return_inverse=True)
            self._space = rows, inverse.reshape(-1)
        return self._space

    def _anchor_values(self, fail: np.ndarray) -> np.ndarray:
        c = self.config
        return edge_score(1.0 - fail, c.edge_target, c.edge_width) if c.kernel_anchor == "edge" else fail

    def _kernel(self) -> np.ndarray:
        c = self.config
        rows, inverse = self._kernel_space()  # (U, F), (N,)
        prior = float(self._anchor_values(np.array([c.prior_fail_rate]))[0])
        values = self._anchor_values(self.fail_rates())  # (N,)
        anchors = self.observed & (values >= c.kernel_min_anchor_score)  # (N,)
        if anchors.sum() < c.kernel_min_anchors:
            return np.full(len(self.pool), prior)
        counts = np.bincount(inverse[anchors], minlength=len(rows))  # (U,) anchors per distinct row
        sums = np.bincount(inverse[anchors], weights=values[anchors], minlength=len(rows))  # (U,)
        at = np.flatnonzero(counts)
        scores = kernel_scores(
            rows, rows[at], sums[at] / counts[at], c.kernel_bandwidth,
            field_weights=self.field_weights(), anchor_counts=counts[at],
            density_correction=c.kernel_density_correction, min_mass=c.kernel_min_mass, prior=prior,
        )  # fmt: skip
        return scores[inverse]

    def scores(self, policy: str) -> np.ndarray:
        """One policy's score of every pool task from the current metadata.  # (N,)"""
        key = policy
        if key not in self._scores:
            c, fail = self.config, self.fail_rates()
            if policy == "failure_rate":
                self._scores[key] = fail
            elif policy == "edge":
                self._scores[key] = edge_score(1.0 - fail, c.edge_target, c.edge_width)
            elif policy == "feature_failure":
                self._scores[key] = feature_failure_scores(
                    self.codes, self.observed, fail, self.field_weights(),
                    c.min_bin_observations, c.bin_smoothing, c.prior_fail_rate,
                )  # fmt: skip
            else:
                self._scores[key] = self._kernel()
        return self._scores[key]

    def _late(self, step: int) -> bool:
        return self.config.fusion == "schedule" and step >= self.config.switch_step

    def parts(self, step: int) -> list[tuple[str, np.ndarray]]:
        """(label, sampling distribution) of each part of the step's batch: two for ``split``."""
        c = self.config
        key = self._late(step)
        if key in self._parts:
            return self._parts[key]
        if c.mode == "static":
            parts = [("uniform", np.full(len(self.pool), 1.0 / len(self.pool)))]
        elif c.fusion == "split":
            parts = [(p, sampling_probabilities(self.scores(p), c.epsilon)) for p in (c.policy, c.secondary)]
        else:
            secondary = self.scores(c.secondary) if c.fusion != "none" else None
            fused = fuse_scores(
                c.fusion, self.scores(c.policy), secondary,
                observed=self.observed, weight=c.fusion_weight, late=self._late(step),
            )  # fmt: skip
            label = {"multiply": f"{c.policy}*{c.secondary}", "weighted": f"{c.policy}+{c.secondary}"}
            late = c.secondary if self._late(step) else c.policy
            parts = [(label.get(c.fusion, late), sampling_probabilities(fused, c.epsilon))]
        self._parts = {key: parts}
        return parts

    def weights(self, step: int) -> np.ndarray:
        """The step's sampling distribution over the pool (for ``split``, the mixture of its parts).  # (N,)"""
        parts = self.parts(step)
        if len(parts) == 1:
            return parts[0][1]
        share = self.config.split_fraction
        return share * parts[0][1] + (1.0 - share) * parts[1][1]

    # --- the interface -------------------------------------------------------------------------------

    def probe_requests(self, step: int) -> list[int]:
        """Uniformly drawn distinct pool indices at a probe step (``dynamic``: every interval; once: 0)."""
        c = self.config
        due = (c.mode == "dynamic" and step % c.probe_interval == 0) or (
            c.mode == "static_once" and step == 0
        )
        if not due:
            return []
        size = min(c.probe_size, len(self.pool))
        return (
            derive_rng(self.seed, step, SamplerStream.PROBE)
            .choice(len(self.pool), size, replace=False)
            .tolist()
        )

    def observe_probe(self, step: int, indices: Sequence[int], grades: Grades) -> None:
        if self.config.mode == "static":
            return
        self.observations += observation_records(step, "probe", indices, grades.rewards, grades.correct)
        self._update(indices, grades)
        self.probe_step, self.probe_count = step, len(indices)
        self.probed_total += len(indices)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        return np.asarray(self._draw(step, batch_size)[0])

    def _draw(self, step: int, batch_size: int) -> tuple[list[int], list[str]]:
        parts = self.parts(step)
        counts = split_counts(batch_size, self.config.split_fraction) if len(parts) == 2 else (batch_size,)
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        indices, arms = [], []
        for (label, probabilities), count in zip(parts, counts, strict=True):
            indices += rng.choice(len(probabilities), size=count, p=probabilities).tolist()
            arms += [label] * count
        if self.config.fusion == "gated" and self.config.mode != "static":
            observed = self.observed
            arms = [self.config.policy if observed[i] else self.config.secondary for i in indices]
        return indices, arms

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with the policy that scored its draw."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        indices, arms = self._draw(step, batch_size)
        self.batch_step = step
        if self.refresh_pending or self.phase != int(self._late(step)):
            found = self.refresh_diagnostics(step, indices) if self.config.diagnostics else {}
            self.diagnostics = {k: v for k, v in found.items() if np.isfinite(v)}
            self.refresh_pending, self.phase = False, int(self._late(step))
        return Batch(tuple(self.pool[i] for i in indices), tuple(indices), tuple(arms))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        self.observations += observation_records(step, "batch", batch.indices, grades.rewards, grades.correct)
        if self.config.mode == "dynamic":
            self._update(batch.indices, grades)

    def records(self) -> dict[str, list[dict]]:
        """``observations``: every probe group and training-batch group seen (``samplers.observations``),
        in every mode, the static control's batches included."""
        return {"observations": list(self.observations)}

    def refresh_diagnostics(self, step: int, batch: Sequence[int]) -> dict[str, float]:
        """The active distribution against uniform, edge-only and feature_failure-only counterfactuals.

        Keys: the active weights' ``entropy``, ``ess``, ``ess_frac``, ``top1``/``top5``/``top10``; per
        reference r in (``uni``, ``edge``, ``ff``): ``tv_r``, ``js_r``, ``rho_r`` (NaN against a flat
        reference) and ``overlap_r``, the overlap of ``batch`` with a same-size draw from r.
        """
        n, eps = len(self.pool), self.config.epsilon
        active = self.weights(step)  # (N,)
        references = {
            "uni": np.full(n, 1.0 / n),
            "edge": sampling_probabilities(self.scores("edge"), eps),
            "ff": sampling_probabilities(self.scores("feature_failure"), eps),
        }
        rng = derive_rng(self.seed, step, SamplerStream.COUNTERFACTUAL)
        out = concentration(active)
        for ref, probabilities in references.items():
            out.update({f"{k}_{ref}": v for k, v in compare_distributions(active, probabilities).items()})
            drawn = rng.choice(n, size=len(batch), p=probabilities)
            out[f"overlap_{ref}"] = batch_overlap(np.asarray(batch), drawn)
        return out

    def stats(self) -> dict:
        """``observed`` share, mean ``fail_mean`` (prior included) and ``fail_observed``, this step's
        ``probes``, ``probed`` in all, and the latest refresh diagnostics (``refresh_diagnostics``)."""
        observed = self.observed
        out = {
            "observed": float(observed.mean()),
            "fail_mean": float(self.fail_rates().mean()),
            "probes": self.probe_count if self.probe_step == self.batch_step else 0,
            "probed": self.probed_total,
        }
        if observed.any():
            out["fail_observed"] = float(self.metadata["fail_rate"][observed].mean())
        return out | self.diagnostics

    def state_dict(self) -> dict:
        seen = np.flatnonzero(self.observed)
        return {
            "indices": seen.tolist(),
            **{key: values[seen].tolist() for key, values in self.metadata.items()},
            "probe_step": self.probe_step,
            "probe_count": self.probe_count,
            "probed_total": self.probed_total,
            "batch_step": self.batch_step,
            "refresh_pending": self.refresh_pending,
            "phase": self.phase,
            "diagnostics": dict(self.diagnostics),
            "observations": list(self.observations),
        }

    def load_state_dict(self, state: dict) -> None:
        seen = np.asarray(state["indices"], dtype=np.int64)
        self.metadata = {key: np.full(len(self.pool), np.nan) for key in METADATA}  # key -> (N,)
        for key, values in self.metadata.items():
            values[seen] = np.asarray(state[key], dtype=np.float64)
        self.probe_step = int(state.get("probe_step", -1))
        self.probe_count = int(state.get("probe_count", 0))
        self.probed_total = int(state.get("probed_total", 0))
        self.batch_step = int(state.get("batch_step", -1))
        self.refresh_pending = bool(state.get("refresh_pending", True))
        self.phase = state.get("phase")
        self.diagnostics = {k: float(v) for k, v in state.get("diagnostics", {}).items()}
        self.observations: list[dict] = list(state.get("observations", []))  # samplers.observations rows
        self._scores: dict[str, np.ndarray] = {}  # policy -> (N,) scores of the current metadata
        self._parts: dict[bool, list] = {}  # schedule phase -> ``parts``
