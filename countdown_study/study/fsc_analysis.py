"""Report 002's offline analyses of the observation log, as pure functions (its Diagnostics part).

The observation log (``study.fsc_log``) is a pandas table with one row per observed example per
observation: every probe group and every training-batch group of a run. ``with_features`` joins the
task's Difficulty Vector columns (``DV_COLUMNS``) by ``task_index``. Derived, never stored:
``fail_rate = (n - n_correct) / n`` (the report's ``P(r < 1)``: partial credit counts as a failure) and
success ``n_correct / n``. Every per-bin or per-band mean below weighs rows equally (the report's "mean
fail" over observed rows), and every resampling unit is a row.

Analyses, each reproducing one table or figure of report 002, importable from here:

* ``failure_by_bin``: Table 5, per-bin failure rates of each DV field with 95% intervals.
* ``variance_by_band``: Table 6, within-group reward variance by difficulty band.
* ``signal_gain``: the "+69% usable signal" reweighting bootstrap of the step-0 probe (Section 5.2).
* ``edge_profile`` and ``success_by_phase``: Figure 6, the moving edge by training phase.
* ``sample_complexity``: Table 7 (App. B), recovering the 3-vs-4-number failure gap from subsamples.
* ``training_diet``: the realized hard share per policy, preserve / amplify / suppress (Section 5.2).
* ``failure_spearman`` and ``value_range``: Section 5.2's Spearman correlations of the DV fields with
  failure, per run and as the range across runs.
* ``pairwise_interactions``: Section 5.2's failure-rate spread over the joint bins of two DV fields.
* ``diet_makeup``: what a policy's batches hold within a part of the pool (Section 5.2: the kernel's
  4-number diet).
* ``gain_table``: the "+69% usable signal" as a table; ``refresh_diagnostics``: the effective-sample
  fraction and the other refresh diagnostics of the step log as a table (Sections 4 and 5.2).
* ``per_seed_table``: Table 8 (App. C), per-seed pass@k with the mean and sample s.d. over seeds.

They live by part: ``fsc_log`` (the log: ``with_features``, ``fail_rate``, ``difficulty_band``,
``bin_values``), ``fsc_signal`` (Tables 5-7 and the signal gain), ``fsc_phases`` (Figure 6, the training
diet and its makeup), ``fsc_fields`` (Spearman and pairwise interactions), and here the tables of single
numbers.

Randomness is an argument: every stochastic function takes ``seed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

import pandas as pd

from countdown_study.study.fsc_fields import (
    SPEARMAN_FIELDS,
    failure_spearman,
    pairwise_interactions,
    value_range,
)
from countdown_study.study.fsc_log import (
    BAND_EDGES,
    BANDS,
    EDGE_TARGET,
    _require,
    bin_values,
    difficulty_band,
    fail_rate,
    with_features,
)
from countdown_study.study.fsc_phases import (
    PHASE_NAMES,
    diet_label,
    diet_makeup,
    edge_profile,
    success_by_phase,
    training_diet,
    training_phase,
)
from countdown_study.study.fsc_signal import (
    BIN_FIELDS,
    COMPLEXITY_COLUMNS,
    VAR_ATOL,
    SignalGain,
    failure_by_bin,
    sample_complexity,
    signal_gain,
    variance_by_band,
    welch_gap,
)

__all__ = [
    "BANDS",
    "BAND_EDGES",
    "BIN_FIELDS",
    "COMPLEXITY_COLUMNS",
    "EDGE_TARGET",
    "PHASE_NAMES",
    "REFRESH_DIAGNOSTICS",
    "SPEARMAN_FIELDS",
    "SignalGain",
    "VAR_ATOL",
    "bin_values",
    "diet_label",
    "diet_makeup",
    "difficulty_band",
    "edge_profile",
    "fail_rate",
    "failure_by_bin",
    "failure_spearman",
    "gain_table",
    "pairwise_interactions",
    "per_seed_table",
    "refresh_diagnostics",
    "sample_complexity",
    "signal_gain",
    "success_by_phase",
    "training_diet",
    "training_phase",
    "value_range",
    "variance_by_band",
    "welch_gap",
    "with_features",
]

# ---------------------------------------------------------------------------------------------------
# Tables of single numbers: the signal gain, the refresh diagnostics, per-seed pass@k
# ---------------------------------------------------------------------------------------------------


def gain_table(gains: Mapping[str, SignalGain]) -> pd.DataFrame:
    """``signal_gain`` results as a table: one row per label (``weights``: the policy whose weights
    reweight the probe), then every ``SignalGain`` field."""
    if not gains:
        raise ValueError("gain_table: no signal gain given")
    return pd.DataFrame([{"weights": label, **asdict(gain)} for label, gain in gains.items()])


REFRESH_DIAGNOSTICS = ("sampler_ess_frac", "sampler_entropy", "sampler_tv_uni")
"""Step-log columns of ``refresh_diagnostics``: the effective-sample fraction, the normalized weight
entropy and the total variation from uniform (Section 4; the report: ~99.5%, ~1.00, near 0)."""


def refresh_diagnostics(
    steps: pd.DataFrame, columns: Sequence[str] = REFRESH_DIAGNOSTICS, *, by: str = "method"
) -> pd.DataFrame:
    """The sampler's refresh diagnostics of a step log as a table: per ``by`` group, ``steps`` (step-log
    rows holding every column) and, per column, ``<column>_mean`` over all those rows (every step of
    every seed), ``<column>_min`` and ``<column>_last`` (the mean over seeds at the group's last step).
    Groups without any of the columns are left out."""
    _require(steps, ("step", by), "refresh_diagnostics")
    missing = [c for c in columns if c not in steps.columns]
    if missing:
        raise ValueError(f"refresh_diagnostics: the step log lacks column(s) {missing}")
    rows = []
    for label, group in steps.dropna(subset=list(columns)).groupby(by, sort=False):
        last = group[group["step"] == group["step"].max()]
        row = {by: label, "steps": len(group)}
        for column in columns:
            row |= {f"{column}_mean": float(group[column].mean()), f"{column}_min": float(group[column].min()),
                    f"{column}_last": float(last[column].mean())}  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def per_seed_table(
    summaries: pd.DataFrame,
    metrics: Sequence[str] = ("pass@1", "pass@8", "pass@16"),
    methods: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Table 8 (App. C): each method's per-seed ``metrics``, then their ``mean`` and sample ``s.d.``.

    ``summaries`` has one row per (method, seed) (``study.run_summaries``). One row per method and seed
    (``seed`` as text), then a ``mean`` row and an ``s.d.`` row (ddof = 1; NaN with one seed) per method,
    in the order of ``methods`` (default: as they appear). The report lists the seeds themselves because
    at two seeds the s.d. is a fragile estimate.
    """
    _require(summaries, ("method", "seed", *metrics), "per_seed_table")
    order = list(dict.fromkeys(summaries["method"])) if methods is None else list(methods)
    unknown = [m for m in order if m not in set(summaries["method"])]
    if unknown:
        raise ValueError(f"per_seed_table: no summaries for method(s) {unknown}")
    rows = []
    for method in order:
        group = summaries[summaries["method"] == method].sort_values("seed")
        values = group[list(metrics)].astype(float)
        rows.extend({"method": method, "seed": str(seed), **v} for seed, v in
                    zip(group["seed"], values.to_dict("records"), strict=True))  # fmt: skip
        rows.append({"method": method, "seed": "mean", **values.mean().to_dict()})
        rows.append({"method": method, "seed": "s.d.", **values.std(ddof=1).to_dict()})
    return pd.DataFrame(rows, columns=["method", "seed", *metrics])
