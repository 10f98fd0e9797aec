"""VCC: report 003's Verification Commit Contrast, a DPO-style loss on verifier-made preference pairs.

    h = [lp(y+) - lp(y-)] - [lp_ref(y+) - lp_ref(y-)]
    L_VCC = mean_pairs[ -log sigmoid(beta h) ]                    (report 003, Sec. 3.3)

y+ is a rollout cut right after its first verifying answer (its commit), y- the same rollout in full
or a same-prompt rollout that never verifies (``countdown.commit``). ``lp`` is the sequence log-prob of
the policy, ``lp_ref`` the frozen reference's; report 003's strongest run used length-averaged (token
mean) log-probs, beta = 0.1 and coefficient c = 0.01: the run's loss is L_RLOO + c L_VCC (the KL and
entropy terms live in L_RLOO here).

Both responses of a pair are prefixes of sampled completions (the chosen one ends at the commit), so
``prefix_scores`` reads them from the token log-probs of whole completions: one forward per rollout,
however many pairs it is in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class VCCConfig:
    """The VCC auxiliary objective; defaults are report 003's outcome+VCC-RLOO run."""

    coef: float = 0.01
    """c, the weight of L_VCC beside the RLOO loss (report 003 swept 0.005 to 0.015)."""
    beta: float = 0.1
    """beta, the scale of the log-ratio margin inside the sigmoid."""
    length_normalize: bool = True
    """Token-mean sequence log-probs (report 003's "averaged log-probability contrast"); False: sums."""
    max_pairs_per_prompt: int = 2
    """Cap on pairs per prompt (report 003 caps without giving the number; 2 as our IPO pairs)."""
    continuation_rejected: bool = True
    """A committing rollout that goes on after its commit is rejected in full against its commit."""
    sibling_rejected: bool = True
    """A same-prompt rollout that never verifies may be the rejected response of a commit."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.coef) and self.coef >= 0):
            raise ValueError(f"coef must be a finite number >= 0, got {self.coef}")
        if not (math.isfinite(self.beta) and self.beta > 0):
            raise ValueError(f"beta must be a finite number > 0, got {self.beta}")
        if self.max_pairs_per_prompt < 1:
            raise ValueError(f"max_pairs_per_prompt must be at least 1, got {self.max_pairs_per_prompt}")
        if not (self.continuation_rejected or self.sibling_rejected):
            raise ValueError("VCC needs continuation_rejected or sibling_rejected: no pair could form")


def prefix_scores(
    token_logprobs: torch.Tensor, rows: torch.Tensor, lengths: torch.Tensor, length_normalize: bool = True
) -> torch.Tensor:
    """Sequence log-probs of N prefixes of R completions: (R, T), (N,), (N,) -> (N,).

    Prefix n is the first ``lengths[n]`` tokens of completion ``rows[n]``; its score is the mean of
    their log-probs (``length_normalize``) or the sum. ``token_logprobs`` are right-padded.
    """
    rows = torch.as_tensor(rows, dtype=torch.long, device=token_logprobs.device)  # (N,)
    lengths = torch.as_tensor(lengths, dtype=torch.long, device=token_logprobs.device)  # (N,)
    if (lengths < 1).any() or (lengths > token_logprobs.shape[1]).any():
        raise ValueError(f"prefix lengths must lie in [1, {token_logprobs.shape[1]}], got {lengths.tolist()}")
    positions = torch.arange(token_logprobs.shape[1], device=token_logprobs.device)  # (T,)
    inside = positions[None, :] < lengths[:, None]  # (N, T)
    picked = token_logprobs.float()[rows]  # (N, T)
    totals = torch.where(inside, picked, torch.zeros_like(picked)).sum(dim=1)  # (N,)
    return totals / lengths.to(totals.dtype) if length_normalize else totals


def vcc_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean VCC loss over pairs (module docstring); all inputs are ``(N,)`` sequence log-probs."""
    if beta <= 0:
        raise ValueError(f"beta must be positive, got {beta}")
    chosen_ratio = policy_chosen - ref_chosen.detach()  # (N,) log pi/pi_ref of y+
    rejected_ratio = policy_rejected - ref_rejected.detach()  # (N,) log pi/pi_ref of y-
    margin = chosen_ratio - rejected_ratio  # (N,) h
    loss = -F.logsigmoid(beta * margin).mean()
    stats = {
        "contrast_loss": loss.item(),
        "margin": margin.mean().item(),
        "accuracy": (margin > 0).float().mean().item(),
        "chosen_logratio": chosen_ratio.mean().item(),
        "rejected_logratio": rejected_ratio.mean().item(),
    }
    return loss, stats
