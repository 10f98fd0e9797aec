"""Auxiliary objectives beside the RLOO loss (report 003's VCC), registered by name.

An auxiliary objective is built from its ``AuxLossSpec`` (a field of the RLOO config, so the run id
covers its settings) by the builder registered under ``spec.name``: ``builder(coef=..., **options)``
returns an object with

* ``name``: a label for the step log (its statistics are logged as ``<name>_<key>``);
* ``needs_reference``: whether it needs the frozen reference policy;
* ``loss(model, ref_model, rollouts, grades, batch) -> (tensor, stats)``: the tensor, already weighted
  by ``coef``, is added to the batch loss before the optimizer step. The loop calls it under the run's
  autocast (``TrainConfig.autocast``), as it computes the RLOO term.

A builder with a true ``needs_tokenizer`` attribute is also given ``tokenizer=``, the run's tokenizer
(VCC cuts rollouts at character offsets). ``AUX_LOSSES`` names the package's objectives explicitly
(``vcc``: ``training.vcc.VCCObjective``), so a config can be checked against it without importing
anything else first; ``register_aux_loss`` adds another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from countdown_study.training.specs import AuxLossSpec
from countdown_study.training.vcc import VCCObjective

AUX_LOSSES: dict[str, Callable[..., Any]] = {"vcc": VCCObjective}
"""Builders of auxiliary objectives by name."""


def register_aux_loss(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``builder`` under ``name`` (a name is registered once)."""

    def register(builder: Callable[..., Any]) -> Callable[..., Any]:
        if name in AUX_LOSSES and AUX_LOSSES[name] is not builder:
            raise ValueError(f"an auxiliary objective named {name!r} is already registered")
        AUX_LOSSES[name] = builder
        return builder

    return register


def build_aux_losses(specs: Sequence[AuxLossSpec], tokenizer: Any = None) -> list[Any]:
    """The objectives of ``specs``; an unknown name fails listing the registered ones.

    ``tokenizer`` goes to the builders that declare ``needs_tokenizer``.
    """
    unknown = [s.name for s in specs if s.name not in AUX_LOSSES]
    if unknown:
        raise ValueError(f"unknown auxiliary objective(s) {unknown}; registered: {sorted(AUX_LOSSES)}")
    objectives = []
    for spec in specs:
        builder = AUX_LOSSES[spec.name]
        extra = {"tokenizer": tokenizer} if getattr(builder, "needs_tokenizer", False) else {}
        objectives.append(builder(coef=spec.coef, **spec.options, **extra))
    return objectives
