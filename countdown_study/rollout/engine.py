"""Dispatch: one ``Engine`` per run (``make_engine``), and ``sample``, the one-call form.

An ``Engine`` is bound to a model, its tokenizer and a ``SamplingConfig`` whose ``engine`` picks the
kind (``native``, ``hf`` or ``vllm``). Each ``Engine.sample`` call draws from the model's weights as they
are at that call: training updates the model in place between calls. The ``native`` and ``hf`` kinds
read the weights at every call; the ``vllm`` kind starts one vLLM instance when the engine is made and
pushes the current weights to it before every call.

A call may pass another ``SamplingConfig`` (evaluation samples at another temperature / top-p / top-k
than training) as long as it names the same engine kind (and, for ``vllm``, the same dtype, which the
running instance was started with).
"""

from __future__ import annotations

from collections.abc import Callable

from countdown_study.rollout.core import (
    Rollouts,
    _check_inputs,
    _finish,
    _Stopper,
    encode_prompts,
)
from countdown_study.rollout.hf import _sample_hf
from countdown_study.rollout.native import _check_native_support, _sample_native
from countdown_study.rollout.sampling import SamplingConfig
from countdown_study.rollout.vllm import VllmRunner

_SAMPLERS: dict[str, Callable] = {"native": _sample_native, "hf": _sample_hf}
"""The in-process engines: (model, stopper, prompt_ids, group_size, config, seed, pad_id) -> raw draws."""


class Engine:
    """Draws rollouts from ``model``'s current weights with one engine kind, for a whole run.

    ``vllm_runner`` (``vllm`` kind only) reuses an already started ``VllmRunner``; without one, the
    ``vllm`` kind starts its own here.
    """

    def __init__(
        self, model, tokenizer, sampling: SamplingConfig, *, vllm_runner: VllmRunner | None = None
    ) -> None:
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig, got {type(sampling).__name__}")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.vllm_runner: VllmRunner | None = None
        if sampling.engine == "native":
            _check_native_support(model.config)
        elif sampling.engine == "vllm":
            self.vllm_runner = vllm_runner or VllmRunner(model, dtype=sampling.dtype)

    @property
    def kind(self) -> str:
        """The engine kind: ``native``, ``hf`` or ``vllm``."""
        return self.sampling.engine

    def __repr__(self) -> str:
        return f"Engine(kind={self.kind!r}, sampling={self.sampling!r})"

    def config_for(self, sampling: SamplingConfig | None = None) -> SamplingConfig:
        """The config a call runs with: the engine's own for None, else ``sampling`` if this engine can run it."""
        if sampling is None:
            return self.sampling
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig or None, got {type(sampling).__name__}")
        if sampling.engine != self.kind:
            raise ValueError(
                f"this Engine is a {self.kind!r} engine; a SamplingConfig for engine {sampling.engine!r} "
                f"needs its own Engine (make_engine)"
            )
        if self.kind == "vllm" and sampling.dtype != self.sampling.dtype:
            raise ValueError(
                f"this 'vllm' Engine runs in dtype {self.sampling.dtype!r}; a SamplingConfig with dtype "
                f"{sampling.dtype!r} needs its own Engine (make_engine)"
            )
        return sampling

    def sample(
        self, prompts: list[str], group_size: int, seed: int, sampling: SamplingConfig | None = None
    ) -> Rollouts:
        """Draw ``group_size`` completions for every prompt from the model's current weights, seeded.

        ``sampling`` overrides the engine's config for this call (same engine kind). Same weights,
        inputs, config and seed give identical rollouts.
        """
        config = self.config_for(sampling)
        _check_inputs(prompts, group_size)
        tokenizer = self.tokenizer
        stopper = _Stopper(tokenizer, self.model, config.stop_at_answer)
        prompt_ids = encode_prompts(tokenizer, prompts)
        if any(len(ids) == 0 for ids in prompt_ids):
            raise ValueError("every prompt needs at least one token (this tokenizer has no BOS to prepend)")
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stopper.eos_ids[0]
        if config.engine == "vllm":
            self.vllm_runner.push_weights(self.model)
            raw_ids, raw_logprobs = self.vllm_runner.generate(stopper, prompt_ids, group_size, config, seed)
        else:
            sampler = _SAMPLERS[config.engine]
            raw_ids, raw_logprobs = sampler(self.model, stopper, prompt_ids, group_size, config, seed, pad_id)
        return _finish(
            prompts, group_size, prompt_ids, raw_ids, raw_logprobs, tokenizer, stopper, config.engine
        )


def make_engine(
    model, tokenizer, sampling: SamplingConfig, *, vllm_runner: VllmRunner | None = None
) -> Engine:
    """The run's rollout engine for ``sampling.engine`` (a ``vllm`` one starts its vLLM instance now)."""
    return Engine(model, tokenizer, sampling, vllm_runner=vllm_runner)


def sample(
    model,
    tokenizer,
    prompts: list[str],
    group_size: int,
    config: SamplingConfig,
    seed: int,
    *,
    vllm_runner: VllmRunner | None = None,
) -> Rollouts:
    """Draw ``group_size`` completions for every prompt with engine ``config.engine``, seeded.

    A throwaway ``Engine`` for one call: same inputs and seed give identical rollouts. ``vllm_runner``
    reuses a vLLM instance across calls (the model's current weights are pushed to it first); without
    one, a ``vllm`` call starts its own. A run that samples repeatedly should keep one ``make_engine``.
    """
    _check_inputs(prompts, group_size)  # before a vLLM instance is started for nothing
    return make_engine(model, tokenizer, config, vllm_runner=vllm_runner).sample(prompts, group_size, seed)
