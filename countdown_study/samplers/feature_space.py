"""Report 002's Feature-Space Curriculum (FSC): probe the policy's edge, describe it in the Difficulty Vector.

Report 002 ("Feature-Space Curriculum Learning for Countdown Reasoning", Section 3, Algorithm 1): each
pool task carries its static Difficulty Vector (``countdown.features.difficulty_vectors``) and dynamic,
EMA-smoothed metadata (``reward_mean``, ``fail_rate = P(r < 1)``, ``pass_at_k``; an unobserved task
has the neutral prior ``fail_rate = 0.5``). Per step: probe (``probe_requests``: 128 uniformly drawn
tasks every 10 steps in ``dynamic`` mode, once at step 0 in ``static_once``, never in ``static``),
update the metadata from the probe, rebuild the scores of every pool task under the active policy,
draw the batch with replacement from ``p(x) ~ max(score, 0) + 0.05``, and in ``dynamic`` mode update
again from the batch's own rollouts. The scores, fusions and diagnostics are pure functions in
``fsc_policies``; this module holds the sampler.

Its configuration, the registered rows and our choices where the report is silent are in ``fsc_config``
(imported here too).

Cost: ``difficulty_vectors`` runs once at construction (about 16 CPU seconds for the public 490k pool,
``benchmarks/results/solver.json``); pass ``features`` to reuse a table. The kernel works on the pool's
distinct DV rows (about 12k of 100k generated tasks), so a rebuild costs distinct rows x anchor rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from countdown_study.countdown.features import difficulty_vectors
from countdown_study.countdown.grading import Grades
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.samplers.fsc_config import (
    ANCHORS,
    DV_FIELDS,
    FSC_DYNAMIC_EDGE,
    FSC_PRESETS,
    METADATA,
    MODES,
    POLICIES,
    REPORT_PROBE_EVERY,
    REPORT_STEPS,
    Deviation,
    FSCConfig,
    fsc_deviations,
)
from countdown_study.samplers.fsc_policies import (
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

__all__ = [
    "ANCHORS",
    "DV_FIELDS",
    "FSC_DYNAMIC_EDGE",
    "FSC_PRESETS",
    "METADATA",
    "MODES",
    "POLICIES",
    "REPORT_PROBE_EVERY",
    "REPORT_STEPS",
    "Deviation",
    "FSCConfig",
    "FeatureSpaceSampler",
    "fsc_deviations",
]

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
    spans_run: ClassVar[bool] = True

    @classmethod
    def run_options(cls, options: Mapping[str, Any], steps: int, prompts_per_step: int) -> dict[str, Any]:
        """The run's ``total_steps`` (probe interval, schedule) and one batch's worth of prompts per probe
        (``probe_size``, as report 002 probes its batch size)."""
        return {**super().run_options(options, steps, prompts_per_step), "probe_size": prompts_per_step}

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
