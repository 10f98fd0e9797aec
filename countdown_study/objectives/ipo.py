"""The IPO objective (Azar et al., 2023): verifier-labelled preference pairs and the IPO loss.

Pairs are labelled by the verifier from the SFT policy's own samples: for a prompt, a completion
that verifies (reward 1) is preferred to one that does not. The loss is IPO's squared regression of
the log-likelihood-ratio margin onto ``1 / (2 tau)`` (Azar et al., Eq. 17):

    h = [log pi(y_w|x) - log pi_ref(y_w|x)] - [log pi(y_l|x) - log pi_ref(y_l|x)]
    L_IPO = (h - 1 / (2 tau))^2

Sequence log-probs are token means by default (``length_normalize``): the embedded model's
completions differ in length, and the mean keeps the margin's scale independent of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class PreferencePair:
    """One verifier-labelled pair: two samples of the same prompt."""

    prompt: int
    """Index of the prompt in its batch."""
    chosen: int
    """Flat sample index (``prompt * G + g``) of the preferred, verifying completion."""
    rejected: int
    """Flat sample index of the dispreferred completion."""


def preference_pairs(
    correct: np.ndarray, rng: np.random.Generator, max_pairs_per_prompt: int = 2
) -> list[PreferencePair]:
    """Pairs (verifying, non-verifying) from a ``(P, G)`` correctness array; prompts with no mix give none.

    Each prompt contributes at most ``max_pairs_per_prompt`` pairs, chosen uniformly from its
    (correct, incorrect) combinations without repeating a combination.
    """
    correct = np.asarray(correct)
    if correct.ndim != 2 or correct.dtype != bool:
        raise ValueError(f"correct must be a (P, G) bool array, got {correct.dtype} of shape {correct.shape}")
    if max_pairs_per_prompt < 1:
        raise ValueError(f"max_pairs_per_prompt must be at least 1, got {max_pairs_per_prompt}")
    num_prompts, group = correct.shape
    pairs = []
    for p in range(num_prompts):
        good = np.flatnonzero(correct[p])
        bad = np.flatnonzero(~correct[p])
        if len(good) == 0 or len(bad) == 0:
            continue
        combos = [(g, b) for g in good for b in bad]
        take = rng.choice(len(combos), size=min(max_pairs_per_prompt, len(combos)), replace=False)
        pairs.extend(PreferencePair(p, p * group + combos[t][0], p * group + combos[t][1]) for t in take)
    return pairs


def ipo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    tau: float = 0.1,
) -> tuple[torch.Tensor, dict]:
    """Mean IPO loss over pairs; all inputs are ``(N,)`` sequence log-probs."""
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    margin = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)  # (N,) h in Azar et al.
    loss = ((margin - 1.0 / (2.0 * tau)) ** 2).mean()
    stats = {"ipo_loss": loss.item(), "margin": margin.mean().item(), "pairs": int(margin.numel())}
    return loss, stats
