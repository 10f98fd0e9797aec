"""Dispatch: one ``Engine`` per run (``make_engine``), and ``sample``, the one-call form.

An ``Engine`` is bound to a model, its tokenizer and a ``SamplingConfig`` whose ``engine`` picks the
kind (``native``, ``hf`` or ``vllm``). Each ``Engine.sample`` call draws from the model's weights as they
are at that call: training updates the model in place between calls. The ``native`` and ``hf`` kinds
read the weights at every call; the ``vllm`` kind starts one vLLM instance when the engine is made and
pushes the current weights to it before every call.

A call may pass another ``SamplingConfig`` (evaluation samples at another temperature / top-p / top-k
than training). A config the engine runs itself (same kind; for ``vllm`` also the same dtype, which its
instance was started with) is sampled by it; any other goes to an engine made for that config's kind
(and vLLM dtype) on first use and kept, so a run builds one engine per kind (and vLLM dtype) its configs
name, each once (``Engine.engine_for``): a run that trains natively and evaluates with vLLM starts vLLM
once, not per evaluation batch.
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


def engine_key(sampling: SamplingConfig) -> tuple[str, str | None]:
    """What decides which engine runs ``sampling``: its kind, and for ``vllm`` its dtype (one vLLM instance
    runs in the dtype it was started with; the in-process engines cast per call)."""
    return sampling.engine, sampling.dtype if sampling.engine == "vllm" else None


class Engine:
    """Draws rollouts from ``model``'s current weights with one engine kind, for a whole run.

    ``vllm_runner`` (``vllm`` kind only) reuses an already started ``VllmRunner``; without one, the
    ``vllm`` kind starts its own here. Configs of another kind (or vLLM dtype) go to engines made for them
    on first use and kept (``engine_for``).
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
        self._others: dict[tuple[str, str | None], Engine] = {}  # engine_key -> the engine made for it
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
        """The config a call runs with: the engine's own for None, else ``sampling``."""
        if sampling is None:
            return self.sampling
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig or None, got {type(sampling).__name__}")
        return sampling

    def engine_for(self, sampling: SamplingConfig | None = None) -> Engine:
        """The engine that runs ``sampling``: this one for its own kind (and vLLM dtype), else the one made
        for that kind on first use and kept (a ``vllm`` one starts its instance then, once)."""
        config = self.config_for(sampling)
        key = engine_key(config)
        if key == engine_key(self.sampling):
            return self
        if key not in self._others:
            self._others[key] = Engine(self.model, self.tokenizer, config)
        return self._others[key]

    def sample(
        self, prompts: list[str], group_size: int, seed: int, sampling: SamplingConfig | None = None
    ) -> Rollouts:
        """Draw ``group_size`` completions for every prompt from the model's current weights, seeded.

        ``sampling`` overrides the engine's config for this call; one of another kind (or vLLM dtype) is
        sampled by ``engine_for(sampling)``. Same weights, inputs, config and seed give identical rollouts.
        """
        config = self.config_for(sampling)
        _check_inputs(prompts, group_size)
        engine = self.engine_for(config)
        if engine is not self:
            return engine.sample(prompts, group_size, seed, config)
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
