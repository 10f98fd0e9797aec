"""RLOO: leave-one-out advantages and the policy-gradient loss with a truncated importance ratio.

The loss of one batch of N = P * G sequences (flattened prompt-major, sample ``p * G + g``) is

    L = agg_i[ -w_i A_i log pi(y_i|x) ]  +  kl_coef * agg_i[ KL_t ]  -  entropy_coef * agg_i[ H_t ]

* ``A_i = r_i - mean_{j != i} r_j`` within each prompt's group (report 004, Eq. 1 and 3).
* ``w_i = exp(log pi_theta(y_i|x) - log mu(y_i|x))``, the sequence-level importance ratio between the
  trained model and the sampling engine (report 004, Eq. 2), computed in log space from summed token
  log-probs and truncated at ``ratio_clip``: ``w = exp(min(log_ratio, log C))``. Report 004 only says
  "clipped to a maximum value"; we truncate from above (no lower bound: a tiny ratio only shrinks a
  term) and take C = 2.0, the usual truncated-importance-sampling cap.
* ``w`` is detached and used as a weight on the REINFORCE term, so the gradient is
  ``-w A grad log pi``: the truncated importance-sampled policy gradient. A non-detached ratio
  (PPO style, ``-w A``) has the same gradient below the cap but none above it; the detached weight
  keeps every sample's gradient and only bounds its size, which is what a stability cap should do.
* ``KL_t`` is a per-token estimate of KL(pi || pi_ref) to the frozen reference on the sampled tokens:
  k1 = log pi - log pi_ref, or k3 = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1 (Schulman's
  unbiased, non-negative estimator). ``H_t`` is the entropy of the policy's next-token distribution.
* ``agg`` (``aggregation``): ``token_mean`` averages each sequence's tokens, then averages
  sequences (length-normalised; the default); ``token_sum`` sums each sequence's tokens, then averages
  sequences (the plain ``-(1/G) sum_i w_i A_i log pi(y_i|x)`` of METHODS.md, as TRL's RLOO does).
  The reports write the sum (001 eq. 4, 003 Sec. 3.1); the study keeps the token mean and runs the sum
  as an ablation row (``study.UNIFORM_SEQUENCE_SUM``). The sum multiplies a sequence's policy gradient
  by its length, so it also weighs long rollouts more and lowers the relative weight of an auxiliary
  loss on length-averaged log-probs (report 003's VCC).

Gradient accumulation is the caller's: the loss is a mean over the N sequences it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

KL_ESTIMATORS = ("k1", "k3")
AGGREGATIONS = ("token_mean", "token_sum")


@dataclass(frozen=True)
class RLOOConfig:
    """The RLOO loss; defaults are the reports' main runs (entropy 0.001, KL 0.001)."""

    kl_coef: float = 0.001
    """Weight of the per-token KL to the frozen reference policy (0: no reference forward needed)."""
    entropy_coef: float = 0.001
    """Weight of the entropy bonus (subtracted from the loss)."""
    kl_estimator: str = "k3"
    """``k1`` (log-ratio) or ``k3`` (non-negative, low variance) per-token KL estimator."""
    ratio_clip: float = 2.0
    """Upper bound C of the sequence importance ratio, w = min(pi/mu, C); must be >= 1."""
    aggregation: str = "token_mean"
    """``token_mean`` (mean over each sequence's tokens, then over sequences; ours) or ``token_sum`` (the
    sum over each sequence's tokens, the reports' ``log pi(y|x)``, then the mean over sequences)."""

    def __post_init__(self) -> None:
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"unknown kl_estimator {self.kl_estimator!r}; choose one of {KL_ESTIMATORS}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {self.aggregation!r}; choose one of {AGGREGATIONS}")
        if not self.ratio_clip >= 1.0:
            raise ValueError(f"ratio_clip must be >= 1 (an upper bound on pi/mu), got {self.ratio_clip}")
        if self.kl_coef < 0 or self.entropy_coef < 0:
            raise ValueError(
                f"kl_coef and entropy_coef must be >= 0, got {self.kl_coef}, {self.entropy_coef}"
            )


# ---------------------------------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------------------------------


def rloo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Leave-one-out advantages ``A_i = r_i - mean_{j != i} r_j`` per prompt  # (P, G) -> (P, G)."""
    r = torch.as_tensor(rewards)
    if not r.is_floating_point():
        r = r.to(torch.float32)
    if r.ndim != 2:
        raise ValueError(f"rewards must be (prompts, group) = (P, G), got shape {tuple(r.shape)}")
    group = r.shape[1]
    if group < 2:
        raise ValueError(f"RLOO needs a group of at least 2 samples per prompt, got G={group}")
    totals = r.sum(dim=1, keepdim=True)  # (P, 1)
    baselines = (totals - r) / (group - 1)  # (P, G) mean of the other G-1 rewards (report 004, Eq. 3)
    return r - baselines  # (P, G)


# ---------------------------------------------------------------------------------------------------
# Per-token quantities
# ---------------------------------------------------------------------------------------------------


def kl_per_token(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Per-token estimate of KL(pi || pi_ref) on tokens sampled from pi  # (N, T) -> (N, T)."""
    log_r = ref_logp - logp  # (N, T) log(pi_ref / pi)
    if estimator == "k1":
        return -log_r
    if estimator == "k3":
        return torch.expm1(log_r) - log_r  # (r - 1) - log r >= 0
    raise ValueError(f"unknown kl_estimator {estimator!r}; choose one of {KL_ESTIMATORS}")


def aggregate(values: torch.Tensor, mask: torch.Tensor, aggregation: str = "token_mean") -> torch.Tensor:
    """Reduce per-token values (N, T) over valid tokens to a scalar: per sequence, then mean over N."""
    valid = mask.to(torch.bool)  # (N, T)
    per_sequence = torch.where(valid, values, torch.zeros_like(values)).sum(dim=1)  # (N,) padding ignored
    if aggregation == "token_mean":
        per_sequence = per_sequence / valid.sum(dim=1).clamp(min=1).to(values.dtype)  # (N,)
    elif aggregation != "token_sum":
        raise ValueError(f"unknown aggregation {aggregation!r}; choose one of {AGGREGATIONS}")
    return per_sequence.mean()


# ---------------------------------------------------------------------------------------------------
# Importance ratio
# ---------------------------------------------------------------------------------------------------


def importance_weights(
    logp_seq: torch.Tensor, behaviour_logp_seq: torch.Tensor, ratio_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Detached truncated sequence ratios ``w = exp(min(log pi - log mu, log C))`` (report 004, Eq. 2).

    Inputs are (N,) summed token log-probs; returns ``(w, log_ratio)``, both (N,) and detached.
    """
    log_ratio = (logp_seq - behaviour_logp_seq).detach()  # (N,)
    weights = torch.exp(log_ratio.clamp(max=math.log(ratio_clip)))  # (N,)
    return weights, log_ratio


# ---------------------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------------------


def rloo_loss(
    token_logprobs: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    config: RLOOConfig,
    behaviour_logprobs: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
    entropies: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The RLOO loss of N sequences (module docstring) and a dict of detached statistics.

    ``token_logprobs`` (N, T) carry gradients (``rollout.sequence_logprobs`` at the sampling
    temperature, right-padded); ``mask`` (N, T) marks completion tokens; ``advantages`` (N,) or (P, G),
    prompt-major (on any device, or an array: they are moved to the log-probs' device).
    ``behaviour_logprobs`` (N, T) are the sampler's log-probs laid out the same way
    (``Rollouts.padded_logprobs``; None: on-policy, w = 1);
    ``ref_logprobs`` (N, T) the frozen reference's (needed when ``kl_coef > 0``); ``entropies``
    (N, T) the policy's token entropies (needed when ``entropy_coef > 0``).
    """
    logp = token_logprobs.float()  # (N, T)
    valid = mask.to(torch.bool)  # (N, T)
    if valid.shape != logp.shape:
        raise ValueError(f"mask shape {tuple(valid.shape)} differs from token_logprobs {tuple(logp.shape)}")
    adv = torch.as_tensor(advantages, dtype=torch.float32, device=logp.device).reshape(-1).detach()  # (N,)
    if adv.shape[0] != logp.shape[0]:
        raise ValueError(f"{adv.shape[0]} advantages for {logp.shape[0]} sequences")
    for name, tensor in (
        ("behaviour_logprobs", behaviour_logprobs),
        ("ref_logprobs", ref_logprobs),
        ("entropies", entropies),
    ):
        if tensor is not None and tuple(tensor.shape) != tuple(logp.shape):
            raise ValueError(
                f"{name} shape {tuple(tensor.shape)} differs from token_logprobs {tuple(logp.shape)}"
            )
    if config.kl_coef > 0 and ref_logprobs is None:
        raise ValueError("kl_coef > 0 needs ref_logprobs from the frozen reference policy")
    if config.entropy_coef > 0 and entropies is None:
        raise ValueError("entropy_coef > 0 needs the policy's token entropies")

    zeros = torch.zeros_like(logp)
    logp_seq = torch.where(valid, logp, zeros).sum(dim=1)  # (N,) log pi(y|x)
    if behaviour_logprobs is None:
        log_ratio = torch.zeros_like(logp_seq)  # (N,)
        weights = torch.ones_like(logp_seq)  # (N,)
    else:
        mu = behaviour_logprobs.float().to(logp.device)  # (N, T)
        mu_seq = torch.where(valid, mu, zeros).sum(dim=1)  # (N,) log mu(y|x)
        weights, log_ratio = importance_weights(logp_seq, mu_seq, config.ratio_clip)

    scale = (weights * adv).unsqueeze(1)  # (N, 1) detached w_i A_i
    policy_loss = aggregate(-scale * logp, valid, config.aggregation)  # REINFORCE term (report 004, Eq. 1)
    loss = policy_loss
    stats = {"policy_loss": policy_loss.item()}

    if ref_logprobs is not None:
        kl = aggregate(
            kl_per_token(logp, ref_logprobs.float().detach(), config.kl_estimator), valid, config.aggregation
        )
        loss = loss + config.kl_coef * kl
        stats["kl"] = kl.item()
    if entropies is not None:
        entropy = aggregate(entropies.float(), valid, config.aggregation)
        loss = loss - config.entropy_coef * entropy
        stats["entropy"] = entropy.item()

    ratio = log_ratio.double().exp()  # (N,) unclipped, for diagnostics only
    stats.update(
        loss=loss.item(),
        ratio_mean=ratio.mean().item(),
        ratio_min=ratio.min().item(),
        ratio_max=ratio.max().item(),
        clipped_frac=(log_ratio > math.log(config.ratio_clip)).double().mean().item(),
        advantage_abs_mean=adv.abs().mean().item(),
    )
    return loss, stats
