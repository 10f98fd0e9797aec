"""Finite training: a NaN or an infinity stops a run with an error naming the step, before ``DONE``.

Every optimizer step's losses and gradient norm are checked (``check_finite_step``: a few floats the step
computed anyway), the weights at each checkpoint and before the final weights are saved
(``check_finite_weights``: one pass over the parameters). A run stopped so stays unfinished; its last
checkpoint, written before the step that failed, holds finite weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

MONITORED = ("loss", "grad_norm")
"""Step-record keys checked every step, besides every key ending in ``_loss`` (``policy_loss``,
``ipo_loss``, auxiliary losses)."""


class NonFiniteError(ValueError):
    """Training produced a NaN or an infinite loss, gradient norm or weight."""


def nonfinite_values(record: Mapping[str, Any]) -> dict[str, float]:
    """The monitored numbers of a step record (``MONITORED`` and ``*_loss``) that are NaN or infinite."""
    return {
        key: value
        for key, value in record.items()
        if (key in MONITORED or key.endswith("_loss"))
        and isinstance(value, (int, float))
        and not math.isfinite(value)
    }


def check_finite_step(stage: str, step: int, record: Mapping[str, Any]) -> None:
    """Raise ``NonFiniteError`` naming the stage, the step (0-based, as in ``steps.jsonl``) and the values
    when a monitored number of the step is not finite."""
    bad = nonfinite_values(record)
    if bad:
        values = ", ".join(f"{key} {value}" for key, value in sorted(bad.items()))
        raise NonFiniteError(
            f"{stage} step {step}: non-finite {values}; training stopped, the run stays unfinished "
            "(a smaller learning rate may help)"
        )


def is_finite(tensor: torch.Tensor) -> bool:
    """Whether every element is finite: a finite sum says so (a NaN or an infinity makes the sum non-finite;
    about 10x faster than ``isfinite(t).all()`` on the CPU), a non-finite one is checked element-wise (the
    sum of large finite values may overflow)."""
    return bool(torch.isfinite(tensor.sum())) or bool(torch.isfinite(tensor).all())


def nonfinite_tensors(state: Mapping[str, torch.Tensor]) -> list[str]:
    """Names of the floating-point tensors of a state dict holding a NaN or an infinity."""
    return [
        name
        for name, tensor in state.items()
        if torch.is_tensor(tensor) and tensor.is_floating_point() and not is_finite(tensor)
    ]


def check_finite_weights(state: Mapping[str, torch.Tensor], where: str) -> None:
    """Raise ``NonFiniteError`` naming ``where`` and the first tensors when weights are not finite."""
    bad = nonfinite_tensors(state)
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise NonFiniteError(f"{where}: non-finite weights in {shown}; training stopped, nothing written")


def total_grad_norm(model: torch.nn.Module) -> float:
    """The global L2 norm of the model's gradients (0.0 without any), as ``clip_grad_norm_`` computes it."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    return float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0
