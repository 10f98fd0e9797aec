"""The FLOP floor of an RLOO step: the matrix-product work it cannot avoid, over the bf16 matrix-product rate
of the device it runs on, measured in the same process (``bench_rloo_step.py``, ``bench_gpu.py``).

Work of one forward pass over a sequence of P prompt and C completion tokens (``forward_flops``): 2 FLOPs
per weight per token for every linear layer but the output projection, which is needed only at the C
positions whose next token is sampled or scored (2 x vocabulary x hidden per such position), and the
attention products (query-key and attention-value, 4 x the attention width per causal pair of positions,
``L (L + 1) / 2`` pairs for L = P + C). Sampling with a key-value cache does one forward pass of each
sequence's tokens; the update does the policy's forward and backward (3 forward passes' work) and, with a
KL term, the frozen reference's forward. Elementwise work (norms, activations, softmax), padding and
recomputed chunks are not counted: the floor is a lower bound, met only by a step that does nothing but
matrix products at the measured rate.

The rate is the best of bf16 matrix products of the model's own shape (a batch of tokens through its MLP
projection) and a square product, timed on the device with its threads as set; on a machine other work
shares it moves with the load, so the floor does too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class ModelShape:
    """What the floor needs of a model."""

    body_params: int
    """Weights of its linear layers, the output projection left out."""
    head_params: int
    """Weights of its output projection (vocabulary x hidden)."""
    layers: int
    """Decoder layers."""
    attention_width: int
    """Query heads x head size."""
    hidden: int
    """Residual width."""
    mlp: int
    """MLP width."""


def model_shape(model) -> ModelShape:
    """The ``ModelShape`` of a transformers causal LM (tied or untied output projection)."""
    head = model.get_output_embeddings()
    body = sum(
        module.weight.numel()
        for module in model.modules()
        if isinstance(module, torch.nn.Linear) and module is not head
    )
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return ModelShape(
        body_params=body,
        head_params=head.weight.numel(),
        layers=config.num_hidden_layers,
        attention_width=config.num_attention_heads * head_dim,
        hidden=config.hidden_size,
        mlp=config.intermediate_size,
    )


def forward_flops(shape: ModelShape, prompt_tokens: int, completion_tokens: int) -> int:
    """Matrix-product FLOPs of one forward pass over one sequence (module docstring)."""
    length = prompt_tokens + completion_tokens
    body = 2 * shape.body_params * length
    head = 2 * shape.head_params * completion_tokens
    attention = 2 * shape.layers * shape.attention_width * length * (length + 1)
    return body + head + attention


def step_flops(
    shape: ModelShape, prompt_lengths: Sequence[int], completion_lengths: Sequence[int], kl: bool
) -> dict[str, int]:
    """Sampling and update FLOPs of a step over these sequences (one prompt and completion length each)."""
    forward = sum(forward_flops(shape, p, c) for p, c in zip(prompt_lengths, completion_lengths, strict=True))
    return {"sample": forward, "update": (3 + int(kl)) * forward}


def rollout_flops(shape: ModelShape, rollouts, kl: bool) -> dict[str, int]:
    """``step_flops`` of a step's ``Rollouts`` (each sample's prompt and completion)."""
    prompts = [len(ids) for ids in rollouts.sample_prompt_ids]
    completions = [len(ids) for ids in rollouts.completion_ids]
    return step_flops(shape, prompts, completions, kl)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(
    device: torch.device,
    m: int,
    k: int,
    n: int,
    min_seconds: float = 0.5,
    dtype: torch.dtype = torch.bfloat16,
) -> float:
    """FLOP/s of ``(m, k) @ (k, n)`` in ``dtype`` (default bf16) on ``device``, repeated ``min_seconds`` or
    more after a warm-up."""
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    for _ in range(3):
        a @ b
    _synchronize(device)
    repeats, started = 0, time.perf_counter()
    while True:
        for _ in range(5):
            a @ b
        repeats += 5
        _synchronize(device)
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return 2 * m * k * n * repeats / elapsed


def device_rate(device: torch.device, shape: ModelShape) -> dict[str, Any]:
    """The bf16 matrix-product rate the floor uses: the best of the model's MLP projection over a batch of
    tokens and a square product (2,048 on the CPU, 8,192 on a GPU), with both readings."""
    tokens = 4096 if device.type == "cuda" else 2048
    square = 8192 if device.type == "cuda" else 2048
    model_shaped = matmul_rate(device, tokens, shape.hidden, shape.mlp)
    square_rate = matmul_rate(device, square, square, square)
    return {
        "model_shaped_flops_per_second": model_shaped,
        "model_shaped": [tokens, shape.hidden, shape.mlp],
        "square_flops_per_second": square_rate,
        "square": square,
        "flops_per_second": max(model_shaped, square_rate),
        "threads": torch.get_num_threads(),
    }


def floor_record(flops: dict[str, float], rate: float, measured: dict[str, float]) -> dict[str, Any]:
    """Per phase (``sample``, ``update``) and for both: FLOPs, the floor's seconds at ``rate``, the measured
    seconds and their ratio to the floor."""
    flops = {**flops, "step": flops["sample"] + flops["update"]}
    measured = {**measured, "step": measured["sample"] + measured["update"]}
    return {
        phase: {
            "gflop": flops[phase] / 1e9,
            "floor_seconds": flops[phase] / rate,
            "measured_seconds": measured[phase],
            "over_floor": measured[phase] / (flops[phase] / rate),
        }
        for phase in ("sample", "update", "step")
    }


def floor_line(name: str, record: dict[str, Any], rate: float) -> str:
    """One printed line: each phase's GFLOP, floor seconds, measured seconds and ratio."""
    cells = [
        f"{phase} {r['gflop']:.1f} GFLOP floor {r['floor_seconds']:.3f} s "
        f"measured {r['measured_seconds']:.3f} s ({r['over_floor']:.1f}x)"
        for phase, r in record.items()
    ]
    return f"{name} FLOP floor at {rate / 1e9:.0f} GFLOP/s bf16: " + "; ".join(cells)


def shape_record(shape: ModelShape) -> dict[str, int]:
    """``ModelShape`` as JSON."""
    return asdict(shape)
