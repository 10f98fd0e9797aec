"""The vocabulary projection of chunked log-probs (``sequence_logprobs(chunk_tokens=...)``): per-token
log-probs and entropies of the targets from final hidden states, a chunk of tokens at a time.

For logits ``z = head(h) / T`` of one token, ``lse = logsumexp(z)``:

* log-prob of the target y: ``z_y - lse``; its gradient in z: ``onehot(y) - p`` with ``p = softmax(z)``;
* entropy ``H = -sum p log p = lse - sum p z``; its gradient in z: ``-p * (log p + H)``.

Under grad each chunk is one autograd node (``_Projection``) that keeps only the chunk's hidden states
and two numbers per token (``lse`` and ``H``): the backward pass recomputes the chunk's logits and writes
both gradients in place over them, so a chunk holds at most two float32 ``(M, V)`` tensors at once (the
logits, then log p, and p) and a ``(M, V)`` copy in the compute dtype, forward and backward, where the
same ops left to autograd (log-softmax, exp, product, sum, each kept for the backward pass and each with
its gradient) hold several more (with a 151,936-token vocabulary and 4,096 tokens per chunk, each such
tensor is 2.5 GB). The values are those of the full-logits path to float rounding.

Under autocast the head's matrix products run in the autocast dtype (bf16), as ``F.linear`` would, and
their gradients are rounded to it before the products of the backward pass, as autograd's would be.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _compute_dtype(tensor: torch.Tensor) -> torch.dtype:
    """The dtype a linear layer on ``tensor``'s device runs in here: the autocast dtype where autocast is on."""
    device = tensor.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else tensor.dtype


def _scaled_logits(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    temperature: float,
    dtype: torch.dtype,
) -> torch.Tensor:
    """``head(hidden) / temperature`` in float32 (or wider), the product in ``dtype``: (M, C) -> (M, V).
    Call with autocast off."""
    cast_bias = None if bias is None else bias.to(dtype)
    logits = F.linear(hidden.to(dtype), weight.to(dtype), cast_bias)
    return logits.to(torch.promote_types(dtype, torch.float32)).div_(temperature)


def _values(hidden, targets, weight, bias, temperature: float, with_entropy: bool, dtype: torch.dtype):
    """Log-prob of each target, entropy (or empty) and ``lse`` of one chunk: (M,), (M,) or (0,), (M,).
    Autocast is off here: every op after the product runs in float32."""
    with torch.autocast(hidden.device.type, enabled=False):
        z = _scaled_logits(hidden, weight, bias, temperature, dtype)  # (M, V)
        lse = torch.logsumexp(z, dim=-1)  # (M,)
        logprobs = z.gather(-1, targets[:, None]).squeeze(-1) - lse  # (M,)
        if not with_entropy:
            return logprobs, logprobs.new_zeros(0), lse
        p = (z - lse[:, None]).exp_()  # (M, V) the one extra vocabulary-wide tensor
        return logprobs, lse - torch.einsum("mv,mv->m", p, z), lse


class _Projection(torch.autograd.Function):
    """Log-prob of each target and entropy (module docstring) of one chunk, with its own backward pass."""

    @staticmethod
    def forward(ctx, hidden, targets, weight, bias, temperature, with_entropy):
        dtype = _compute_dtype(hidden)
        logprobs, entropy, lse = _values(hidden, targets, weight, bias, temperature, with_entropy, dtype)
        ctx.save_for_backward(hidden, targets, weight, bias, lse, entropy)
        ctx.temperature, ctx.with_entropy, ctx.dtype = temperature, with_entropy, dtype
        if not with_entropy:
            ctx.mark_non_differentiable(entropy)
        return logprobs, entropy

    @staticmethod
    def backward(ctx, grad_logprobs, grad_entropy):
        with torch.autocast(ctx.saved_tensors[0].device.type, enabled=False):
            return _Projection._gradients(ctx, grad_logprobs, grad_entropy)

    @staticmethod
    def _gradients(ctx, grad_logprobs, grad_entropy):
        """The backward pass (autocast off): the gradients of ``forward``'s inputs."""
        hidden, targets, weight, bias, lse, entropy = ctx.saved_tensors
        dtype, temperature = ctx.dtype, ctx.temperature
        grad = _scaled_logits(hidden, weight, bias, temperature, dtype).sub_(lse[:, None])  # (M, V) log p
        p = grad.exp()  # (M, V)
        if ctx.with_entropy and grad_entropy is not None:
            # g_lp * (onehot - p) + g_H * (-p * (log p + H)) = -p * (g_lp + g_H * (log p + H)) + g_lp * onehot
            grad.add_(entropy[:, None]).mul_(grad_entropy[:, None]).add_(grad_logprobs[:, None]).mul_(p)
        else:
            grad = p.mul_(grad_logprobs[:, None])
        del p
        grad.neg_().scatter_add_(-1, targets[:, None], grad_logprobs[:, None]).div_(temperature)
        grad = grad.to(dtype)  # (M, V) d loss / d logits, rounded as autograd rounds them under autocast
        grad_hidden = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_hidden = (grad @ weight.to(dtype)).to(hidden.dtype)  # (M, C)
        if ctx.needs_input_grad[2]:
            grad_weight = (grad.T @ hidden.to(dtype)).to(weight.dtype)  # (V, C)
        if bias is not None and ctx.needs_input_grad[3]:
            grad_bias = grad.sum(0).to(bias.dtype)
        return grad_hidden, None, grad_weight, grad_bias, None, None


def project_chunk(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    temperature: float,
    with_entropy: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-prob of each target under ``log_softmax(head(hidden) / temperature)``, and the entropy (empty
    when not asked for): (M, C), (M,) -> (M,), (M,) or (0,). Differentiable in ``hidden`` and the head
    (``_Projection``) when called under grad."""
    if torch.is_grad_enabled():
        return _Projection.apply(hidden, targets, weight, bias, temperature, with_entropy)
    logprobs, entropy, _ = _values(
        hidden, targets, weight, bias, temperature, with_entropy, _compute_dtype(hidden)
    )
    return logprobs, entropy


def chunked_token_logprobs(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    valid: torch.Tensor,
    head: torch.nn.Linear,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_tokens: int = 4096,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropies) from final hidden states without full logits: (N, T, C) -> (N, T).

    Only the ``valid`` positions (N, T) are projected onto the vocabulary, ``chunk_tokens`` rows at a
    time (``project_chunk``); under grad each chunk's logits are recomputed in the backward pass, so at
    most one chunk's logits exist at once (module docstring). Zeros at the other positions.
    """
    flat_hidden, flat_targets = hidden[valid], targets[valid]  # (M, C), (M,)
    parts = [
        project_chunk(
            flat_hidden[start : start + chunk_tokens],
            flat_targets[start : start + chunk_tokens],
            head.weight,
            head.bias,
            temperature,
            with_entropy,
        )
        for start in range(0, len(flat_targets), chunk_tokens)
    ]
    logprobs = torch.cat([lp for lp, _ in parts])  # (M,)
    token_logprobs = logprobs.new_zeros(valid.shape).masked_scatter(valid, logprobs)  # (N, T)
    if not with_entropy:
        return token_logprobs, None
    entropy = logprobs.new_zeros(valid.shape).masked_scatter(
        valid, torch.cat([e for _, e in parts])
    )  # (N, T)
    return token_logprobs, entropy
