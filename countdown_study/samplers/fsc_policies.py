"""Report 002's Feature-Space Curriculum as pure functions: metadata, policy scores, fusions, diagnostics.

Every function here maps arrays to arrays (no sampler state, no randomness); ``feature_space`` wires
them into the sampler and documents the choices where the report is silent. Equations cite report 002:

- group metadata (Section 3.3): ``reward_mean``, ``fail_rate = P(r < 1)``, unbiased ``pass@k``;
- ``edge_score`` (eq. 1): ``exp(-0.5 ((s - tau) / sigma)^2)`` on the success rate s;
- ``feature_failure_scores`` (eq. 4): per DV field a smoothed per-bin failure rate, averaged over
  fields (``bin_codes``, ``bin_failure_rates``);
- ``kernel_scores`` (eq. 5): a Gaussian product kernel around observed anchors in normalised DV space,
  optionally density-corrected (divided by the local kernel mass);
- ``correlation_weights`` (Section 3.8): ARD-style field weights ``|Spearman(field, fail_rate)|``;
- ``fuse_scores`` and ``split_counts`` (Section 3.8): multiply, weighted average, gate, schedule, split;
- ``sampling_probabilities`` (Section 3.1): ``p(x) ~ max(score, 0) + eps``;
- refresh diagnostics (Section 4 and App. D): total variation, Jensen-Shannon, normalised entropy,
  effective sample size, top-mass concentration, Spearman of weights, batch overlap.
"""

from __future__ import annotations

import math

import numpy as np

FUSIONS = ("none", "multiply", "weighted", "gated", "schedule", "split")
"""How two policies' scores combine (report 002, Section 3.8); ``none`` uses the primary alone."""
TOP_FRACTIONS = (0.01, 0.05, 0.10)
"""The shares of the heaviest examples whose mass the diagnostics report (App. D: top-1/5/10%)."""
_KERNEL_CHUNK = 1 << 21  # points x anchors per kernel block, bounds its working memory


# ---------------------------------------------------------------------------------------------------
# Dynamic metadata (Section 3.3)
# ---------------------------------------------------------------------------------------------------


def pass_at_k_rows(correct: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass@k per group, ``1 - C(G - c, k) / C(G, k)``, k clamped to G.  # (P, G) -> (P,)"""
    correct = np.asarray(correct, dtype=bool)
    n = correct.shape[1]
    k = min(k, n)
    counts = correct.sum(axis=1)  # (P,)
    return np.array([1.0 - math.comb(n - int(c), k) / math.comb(n, k) for c in counts])


def group_metadata(rewards: np.ndarray, correct: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """Each group's ``reward_mean``, ``fail_rate`` (share not correct) and ``pass_at_k``.  # (P, G) -> (P,)"""
    correct = np.asarray(correct, dtype=bool)
    return {
        "reward_mean": np.asarray(rewards, dtype=np.float64).mean(axis=1),
        "fail_rate": 1.0 - correct.mean(axis=1),
        "pass_at_k": pass_at_k_rows(correct, k),
    }


# ---------------------------------------------------------------------------------------------------
# Policies (Sections 3.4 and 3.7)
# ---------------------------------------------------------------------------------------------------


def edge_score(success: np.ndarray, target: float = 0.5, width: float = 0.25) -> np.ndarray:
    """Eq. 1: a Gaussian in the success rate peaked at ``target``.  # (N,) -> (N,)"""
    z = (np.asarray(success, dtype=np.float64) - target) / width
    return np.exp(-0.5 * z**2)


def bin_codes(values: np.ndarray, num_bins: int) -> np.ndarray:
    """Bin index per example: by value when a field has at most ``num_bins`` values, else by quantile.

    Quantile edges that coincide (ties) leave empty bins, which are dropped, so codes are 0..B-1
    with every bin occupied.  # (N,) -> (N,) int64
    """
    values = np.asarray(values, dtype=np.float64)
    distinct = np.unique(values)
    if distinct.size <= num_bins:
        return np.searchsorted(distinct, values).astype(np.int64)
    edges = np.quantile(values, np.linspace(0.0, 1.0, num_bins + 1)[1:-1])  # (num_bins - 1,)
    codes = np.searchsorted(edges, values, side="right")
    return np.unique(codes, return_inverse=True)[1].astype(np.int64)


def bin_failure_rates(
    codes: np.ndarray, fail: np.ndarray, num_bins: int, min_observations: int, smoothing: float, prior: float
) -> np.ndarray:
    """g_f of eq. 4: smoothed failure rate per bin, the prior below ``min_observations``.

    ``(sum of fail + smoothing * prior) / (count + smoothing)`` over the observed examples of a bin.
    # (M,), (M,) -> (num_bins,)
    """
    counts = np.bincount(codes, minlength=num_bins).astype(np.float64)  # (num_bins,)
    totals = np.bincount(codes, weights=fail, minlength=num_bins)  # (num_bins,)
    measured = counts >= max(min_observations, 1)  # (num_bins,)
    rates = np.full(num_bins, float(prior))
    rates[measured] = (totals[measured] + smoothing * prior) / (counts[measured] + smoothing)
    return rates


def feature_failure_scores(
    codes: np.ndarray,
    observed: np.ndarray,
    fail: np.ndarray,
    field_weights: np.ndarray,
    min_observations: int,
    smoothing: float,
    prior: float,
) -> np.ndarray:
    """Eq. 4: the weighted mean over DV fields of the example's bin failure rate.

    ``codes`` (N, F) bin per field, ``observed`` (N,) which examples have a measured ``fail`` (N,);
    ``field_weights`` (F,) non-negative (equal weights reproduce eq. 4's plain average).  # -> (N,)
    """
    weights = np.asarray(field_weights, dtype=np.float64)
    weights = weights / weights.sum()  # (F,)
    fail_seen = np.asarray(fail, dtype=np.float64)[observed]  # (M,)
    scores = np.zeros(codes.shape[0])
    for f, weight in enumerate(weights):
        num_bins = int(codes[:, f].max()) + 1
        rates = bin_failure_rates(codes[observed, f], fail_seen, num_bins, min_observations, smoothing, prior)
        scores += weight * rates[codes[:, f]]
    return scores


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 0..N-1 with ties given their average rank.  # (N,) -> (N,)"""
    _, inverse, counts = np.unique(np.asarray(values), return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + ends - 1) / 2.0)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties); NaN when either side is constant."""
    rx, ry = ranks(x), ranks(y)
    if len(rx) < 2 or rx.std() == 0.0 or ry.std() == 0.0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def correlation_weights(features: np.ndarray, fail: np.ndarray) -> np.ndarray:
    """Section 3.8's ARD weights: ``|Spearman(field, fail_rate)|`` per field, 0 where undefined.

    # (M, F), (M,) -> (F,)
    """
    rhos = np.array([spearman(features[:, f], fail) for f in range(features.shape[1])])
    return np.nan_to_num(np.abs(rhos), nan=0.0)


def kernel_scores(
    points: np.ndarray,
    anchors: np.ndarray,
    anchor_values: np.ndarray,
    bandwidth: float,
    *,
    field_weights: np.ndarray | None = None,
    anchor_counts: np.ndarray | None = None,
    density_correction: bool = False,
    min_mass: float = 1e-3,
    prior: float = 1.0,
) -> np.ndarray:
    """Eq. 5: anchor values spread by ``K(x, a) = exp(-sum_f w_f d_f^2 / (2 b^2))`` (a product kernel).

    Uncorrected: the kernel-weighted sum ``sum_j K(x, a_j) v_j``, divided by its maximum over
    ``points`` (scores in [0, 1]). Density-corrected: that sum divided by the kernel mass
    ``sum_j K(x, a_j)`` (the kernel-weighted average of nearby anchor values), ``prior`` where the mass
    is below ``min_mass``. ``anchor_counts`` gives how many anchors share each row of ``anchors``
    (their values summed in ``anchor_values * anchor_counts``). With no anchor, ``prior`` everywhere.
    # (U, F), (A, F), (A,) -> (U,)
    """
    points = np.asarray(points, dtype=np.float64)
    if len(anchors) == 0:
        return np.full(len(points), prior)
    n_fields = points.shape[1]
    weights = np.ones(n_fields) if field_weights is None else np.asarray(field_weights, dtype=np.float64)
    counts = np.ones(len(anchors)) if anchor_counts is None else np.asarray(anchor_counts, dtype=np.float64)
    scale = np.sqrt(weights) / bandwidth  # (F,)
    zp, za = points * scale, np.asarray(anchors, dtype=np.float64) * scale  # (U, F), (A, F)
    sq_a = (za**2).sum(axis=1)  # (A,)
    mix = np.column_stack([np.asarray(anchor_values, dtype=np.float64) * counts, counts])  # (A, 2)
    totals = np.empty((len(points), 2))  # (U, 2) kernel-weighted value sum and mass
    rows = max(1, _KERNEL_CHUNK // len(anchors))
    for start in range(0, len(points), rows):
        block = zp[start : start + rows]  # (C, F)
        d2 = (block**2).sum(axis=1)[:, None] + sq_a[None, :] - 2.0 * block @ za.T  # (C, A)
        totals[start : start + rows] = np.exp(-0.5 * np.maximum(d2, 0.0)) @ mix
    sums, mass = totals[:, 0], totals[:, 1]
    if density_correction:
        return np.where(mass >= min_mass, sums / np.maximum(mass, min_mass), prior)
    top = sums.max()
    return sums / top if top > 0.0 else np.full(len(points), prior)


# ---------------------------------------------------------------------------------------------------
# Fusion and sampling (Sections 3.1 and 3.8)
# ---------------------------------------------------------------------------------------------------


def fuse_scores(
    fusion: str,
    primary: np.ndarray,
    secondary: np.ndarray,
    *,
    observed: np.ndarray | None = None,
    weight: float = 0.5,
    late: bool = False,
) -> np.ndarray:
    """One score per example from two policies' scores.  # (N,), (N,) -> (N,)

    ``none``: primary; ``multiply``: primary x secondary; ``weighted``: ``weight`` primary +
    (1 - ``weight``) secondary; ``gated``: primary where ``observed``, secondary elsewhere;
    ``schedule``: primary, or secondary once ``late``. ``split`` draws from each policy's own
    distribution (``split_counts``) and has no fused score.
    """
    if fusion == "none":
        return primary
    if fusion == "multiply":
        return primary * secondary
    if fusion == "weighted":
        return weight * primary + (1.0 - weight) * secondary
    if fusion == "gated":
        if observed is None:
            raise ValueError("the gated fusion needs the observed mask")
        return np.where(observed, primary, secondary)
    if fusion == "schedule":
        return secondary if late else primary
    raise ValueError(f"fusion {fusion!r} has no fused score; known fusions: {FUSIONS}")


def split_counts(batch_size: int, fraction: float) -> tuple[int, int]:
    """(primary, secondary) prompts of a split batch: ``round(fraction * B)`` primary, half up."""
    primary = min(batch_size, int(np.floor(fraction * batch_size + 0.5)))
    return primary, batch_size - primary


def sampling_probabilities(scores: np.ndarray, epsilon: float) -> np.ndarray:
    """Section 3.1: ``p(x) ~ max(score, 0) + epsilon``, normalised.  # (N,) -> (N,)"""
    weights = np.maximum(np.asarray(scores, dtype=np.float64), 0.0) + epsilon
    return weights / weights.sum()


# ---------------------------------------------------------------------------------------------------
# Refresh diagnostics (Section 4, App. D): pure functions of weight vectors
# ---------------------------------------------------------------------------------------------------


def _normalized(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum()


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """``TV(p, q) = 1/2 sum_i |p_i - q_i|`` of the normalised vectors, in [0, 1]."""
    return float(0.5 * np.abs(_normalized(p) - _normalized(q)).sum())


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence in bits (base 2, so in [0, 1]) of the normalised vectors."""
    p, q = _normalized(p), _normalized(q)
    m = 0.5 * (p + q)

    def kl_to_m(x: np.ndarray) -> float:
        seen = x > 0
        return float((x[seen] * np.log2(x[seen] / m[seen])).sum())

    return 0.5 * kl_to_m(p) + 0.5 * kl_to_m(q)


def normalized_entropy(weights: np.ndarray) -> float:
    """``H(w) / log N``: 1 for uniform weights, towards 0 as mass concentrates (1 when N = 1)."""
    w = _normalized(weights)
    if len(w) < 2:
        return 1.0
    seen = w[w > 0]
    return float(-(seen * np.log(seen)).sum() / np.log(len(w)))


def effective_sample_size(weights: np.ndarray) -> float:
    """``1 / sum_i w_i^2`` of the normalised weights: N for uniform weights, 1 for a point mass."""
    return float(1.0 / (_normalized(weights) ** 2).sum())


def top_mass(weights: np.ndarray, fraction: float) -> float:
    """Mass of the heaviest ``ceil(fraction * N)`` examples (at least one)."""
    w = _normalized(weights)
    k = min(len(w), max(1, math.ceil(fraction * len(w))))
    return float(np.partition(w, len(w) - k)[len(w) - k :].sum())


def batch_overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Set overlap of two batches: the Jaccard index of their distinct pool indices."""
    left, right = set(np.asarray(a).tolist()), set(np.asarray(b).tolist())
    union = left | right
    return len(left & right) / len(union) if union else 1.0


def concentration(weights: np.ndarray) -> dict[str, float]:
    """How concentrated one distribution is: normalised entropy, ESS and its fraction, top masses."""
    ess = effective_sample_size(weights)
    out = {"entropy": normalized_entropy(weights), "ess": ess, "ess_frac": ess / len(weights)}
    out.update({f"top{round(100 * f)}": top_mass(weights, f) for f in TOP_FRACTIONS})
    return out


def compare_distributions(active: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """How far ``active`` is from ``reference``: TV, Jensen-Shannon, Spearman of the weights (NaN if flat)."""
    return {
        "tv": total_variation(active, reference),
        "js": jensen_shannon(active, reference),
        "rho": spearman(active, reference),
    }
