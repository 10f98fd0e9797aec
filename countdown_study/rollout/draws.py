"""The sampling math every engine shares (``rollout.core``): top-k / top-p truncation, inverse-CDF draws
from uniforms, and ``draw_tokens`` with its behaviour log-prob (the temperature-scaled distribution
*before* truncation)."""

from __future__ import annotations

import torch

from countdown_study.rollout.sampling import SamplingConfig


def filter_top_k_top_p(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Set logits outside the top-k and outside the smallest nucleus of mass ``top_p`` to -inf: (B, V)."""
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (B, V)
        sorted_probs = sorted_logits.softmax(-1)
        mass_before = sorted_probs.cumsum(-1) - sorted_probs  # (B, V) mass of strictly more likely tokens
        drop_sorted = mass_before >= top_p  # the most likely token is always kept
        drop = drop_sorted.scatter(-1, order, drop_sorted)  # (B, V) back in vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def inverse_cdf_sample(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Draw one token per row by inverting the CDF at a uniform in [0, 1): (B, V), (B,) -> (B,)."""
    cdf = probs.double().cumsum(-1)  # (B, V)
    point = uniforms.double() * cdf[:, -1]  # (B,)
    tokens = torch.searchsorted(cdf, point[:, None], right=True).squeeze(1)  # (B,)
    return tokens.clamp(max=probs.shape[-1] - 1)


def draw_tokens(
    logits: torch.Tensor, uniforms: torch.Tensor, config: SamplingConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample from logits with temperature / top-k / top-p: (B, V), (B,) -> tokens (B,), log-probs (B,).

    The log-prob is the behaviour log-prob of the module docstring (before truncation).
    """
    logp = torch.log_softmax(logits.float() / config.temperature, dim=-1)  # (B, V)
    if config.top_k > 0 or config.top_p < 1.0:
        probs = filter_top_k_top_p(logp, config.top_k, config.top_p).softmax(-1)
    else:
        probs = logp.exp()
    tokens = inverse_cdf_sample(probs, uniforms)  # (B,)
    return tokens, logp.gather(1, tokens[:, None]).squeeze(1)
