"""Rollout engines: sample G completions per prompt with behaviour log-probs, and full-forward log-probs.

One engine object per run, ``make_engine(model, tokenizer, sampling).sample(prompts, group_size, seed)``,
or the one-call form ``sample(model, tokenizer, prompts, group_size, config, seed)``. Modules:

* ``sampling``: ``SamplingConfig`` (imports no torch);
* ``stopping`` (where completions end) and ``draws`` (top-k / top-p, inverse-CDF draws);
* ``core``: ``Rollouts``, prompt encoding, padding, ``sequence_logprobs`` / ``TokenLogprobs`` (and
  ``chunked_token_logprobs``, its large-vocabulary path), ``HOST`` (where results are stored); it
  re-exports the names of ``stopping`` and ``draws``;
* ``native``: the package's own KV-cache decode loop for Qwen2-style models;
* ``hf``: transformers ``generate``;
* ``vllm``: ``VllmRunner``, an in-process vLLM engine (optional extra ``countdown_study[vllm]``);
* ``engine``: ``Engine``, ``make_engine`` and ``sample``.

Only ``sampling`` is imported with the package; the other names load their module (and torch) on first
use, so ``from countdown_study.rollout import SamplingConfig`` works without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from countdown_study.rollout.sampling import DTYPE_NAMES, ENGINES, SamplingConfig

_LAZY = {
    "CHUNKED_MODEL_TYPES": "core",
    "DTYPES": "core",
    "HOST": "core",
    "Rollouts": "core",
    "TokenLogprobs": "core",
    "chunked_token_logprobs": "projection",
    "draw_tokens": "core",
    "encode_prompts": "core",
    "filter_top_k_top_p": "core",
    "inverse_cdf_sample": "core",
    "left_pad": "core",
    "model_device": "core",
    "positions_from_mask": "core",
    "sequence_logprobs": "core",
    "single_token_id": "core",
    "Engine": "engine",
    "make_engine": "engine",
    "sample": "engine",
    "VLLM_INSTALL_HINT": "vllm",
    "VllmRunner": "vllm",
}
"""Public name -> the submodule that defines it (imported on first access)."""

__all__ = [
    "CHUNKED_MODEL_TYPES",
    "DTYPES",
    "DTYPE_NAMES",
    "ENGINES",
    "HOST",
    "VLLM_INSTALL_HINT",
    "Engine",
    "Rollouts",
    "SamplingConfig",
    "TokenLogprobs",
    "VllmRunner",
    "chunked_token_logprobs",
    "draw_tokens",
    "encode_prompts",
    "filter_top_k_top_p",
    "inverse_cdf_sample",
    "left_pad",
    "make_engine",
    "model_device",
    "positions_from_mask",
    "sample",
    "sequence_logprobs",
    "single_token_id",
]

if TYPE_CHECKING:
    from countdown_study.rollout.core import (
        CHUNKED_MODEL_TYPES,
        DTYPES,
        HOST,
        Rollouts,
        TokenLogprobs,
        draw_tokens,
        encode_prompts,
        filter_top_k_top_p,
        inverse_cdf_sample,
        left_pad,
        model_device,
        positions_from_mask,
        sequence_logprobs,
        single_token_id,
    )
    from countdown_study.rollout.engine import Engine, make_engine, sample
    from countdown_study.rollout.projection import chunked_token_logprobs
    from countdown_study.rollout.vllm import VLLM_INSTALL_HINT, VllmRunner


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
