"""The RLOO run's config (``TrainConfig``) and its named presets (``PRESETS``), beside the loop that runs it.

``TrainConfig`` is the config core every run shares (``evaluation.config.RunConfig``: data, evaluation,
seed, threads, device) plus the RLOO stage's own fields. Each default is written once: as a field's
default here or in the config it nests (``RLOOConfig``'s KL and entropy coefficients, ``EvalSpec``'s
evaluation, ``DataSpec``'s tasks), or as a named value below (the training sampling, the two losses, the
reports' token budget). The presets and the study presets (``study.presets``, derived from the ``cpu``
preset) import them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from countdown_study.evaluation.config import DataSpec, EvalSpec, RunConfig, check_positive, eval_on_engine
from countdown_study.evaluation.defaults import EVAL_SAMPLING
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.files import OMIT_AT_DEFAULT
from countdown_study.samplers import REFILLABLE, SAMPLERS
from countdown_study.training.aux import AUX_LOSSES
from countdown_study.training.group_filters import GroupFilterSpec
from countdown_study.training.specs import AuxLossSpec

T = TypeVar("T")

ATTENTIONS = ("eager", "sdpa", "flash_attention_2", "flex_attention")
"""Attention implementations a run may ask transformers for (``TrainConfig.attention``)."""
REWARDS = ("outcome", "commit")
"""Training rewards (``TrainConfig.reward``): the verifier's score of the final answer, or report 003's
commit reward (``countdown.commit.commit_reward``)."""

TRAIN_SAMPLING = SamplingConfig(dtype="bfloat16")
"""How a training stage's rollouts are drawn: temperature 1.0, 96 new tokens, stopped at ``</answer>``,
from a bf16 copy of the weights (RLOO rollouts, IPO pair samples)."""
CPU_LOSS = RLOOConfig(kl_coef=0.0, entropy_coef=0.0)
"""The RLOO loss of the ``cpu`` preset and the quick study presets: no KL or entropy term (no reference
forward)."""
REPORTS_LOSS = RLOOConfig()
"""The reports' RLOO loss (``RLOOConfig``'s defaults: KL 0.001 to the frozen starting policy, entropy
bonus 0.001): the ``paper`` preset and the full study preset."""
REPORTS_MAX_NEW_TOKENS = 1024
"""The reports' generation budget, of training and of evaluation rollouts (the ``paper`` preset)."""


@dataclass(frozen=True)
class TrainConfig(RunConfig):
    """One RLOO run: the shared fields (``RunConfig``) and the stage's own. Defaults are the CPU preset for
    the embedded policy."""

    sampler: str = "uniform"
    """Registered sampler name (``samplers.SAMPLERS``)."""
    sampler_options: dict = field(default_factory=dict)
    """Keyword options of the sampler (its config fields)."""
    steps: int = 60
    """Optimizer steps (one batch of rollouts each)."""
    prompts_per_step: int = 32
    """P, prompts per step."""
    group_size: int = 8
    """G, samples per prompt (at least 2)."""
    micro_batch: int = 64
    """Sequences per forward/backward, grouped by length; gradients accumulate over the P * G sequences
    (64 was fastest here: 0.93 s per update of 32 x 8 against 1.04 s at 128 and 1.53 s at 256)."""
    attention: str = "eager"
    """Attention implementation of the update's forward passes (transformers' ``attn_implementation``).
    ``eager`` (matmuls and a softmax) took 1.0 s per update of 32 x 8 on 2 CPU cores where ``sdpa``
    took 1.55 s, 38% of it in the fused CPU kernel's backward; on a GPU ``sdpa`` is the better choice."""
    lr: float = 1e-4
    """AdamW learning rate, constant."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    loss: RLOOConfig = CPU_LOSS
    """RLOO loss: KL and entropy coefficients, KL estimator, ratio cap, aggregation."""
    sampling: SamplingConfig = TRAIN_SAMPLING
    """How training rollouts are drawn (temperature 1.0, 96 new tokens, stop at ``</answer>``)."""
    format_score: float = 0.1
    """Reward of a present but wrong answer (report 001 used 0: the binary reward)."""
    reward: str = field(default="outcome", metadata=OMIT_AT_DEFAULT)
    """``outcome`` (the final answer's score) or ``commit`` (report 003's ``1 - (L - e)/L`` for a first
    correct answer ending at character e of L, floored at ``format_score``; sample with
    ``stop_at_answer=False`` so that text after a commit exists). Advantages use it; ``correct`` and
    ``exact_rate`` stay the final answer's verdict."""
    aux_losses: tuple[AuxLossSpec, ...] = ()
    """Auxiliary objectives added to the RLOO loss (report 003's VCC), with their settings."""
    group_filter: GroupFilterSpec | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Drop graded groups and draw more until the batch is full (DAPO's dynamic sampling, OpenRLHF's
    band-pass; ``training.group_filters``); only with a sampler of ``samplers.REFILLABLE``."""
    autocast: bool = True
    """bf16 autocast for the update's forward passes (1.6x faster on this CPU than fp32)."""
    checkpoint_every: int = 10
    """Write a resumable checkpoint every this many steps (and at the end)."""
    logprob_chunk: int = field(default=0, metadata=OMIT_AT_DEFAULT)
    """Completion tokens per vocabulary projection in the update's log-probs (``sequence_logprobs``'
    ``chunk_tokens``): each chunk's float32 logits are recomputed in the backward pass instead of a
    micro-batch holding all of them (64 x 256 tokens x a 151,936-token vocabulary: 10 GB per copy). 0:
    one full-logits forward per micro-batch, as before; the embedded model's 31-token vocabulary needs
    none."""

    gradient_checkpointing: bool = field(default=False, metadata=OMIT_AT_DEFAULT)
    """Recompute each decoder layer's activations in the update's backward pass instead of keeping them
    (transformers' gradient checkpointing, non-reentrant): the update then holds one layer's activations at a
    time rather than every layer's, for about one more forward pass of time; the same gradients. Meant for
    large models on a GPU (at Qwen2.5-0.5B's shape an update of micro-batches of 64 peaked at 51 GiB); off
    by default, and left out of a run's id while off."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.group_size < 2:
            raise ValueError(f"RLOO needs group_size >= 2 (a leave-one-out baseline), got {self.group_size}")
        if self.prompts_per_step < 1 or self.steps < 0 or self.micro_batch < 1:
            raise ValueError("prompts_per_step and micro_batch must be >= 1 and steps >= 0")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")
        if self.logprob_chunk < 0:
            raise ValueError(f"logprob_chunk must be >= 0 (0: full logits), got {self.logprob_chunk}")
        check_positive("lr", self.lr)
        check_positive("grad_clip", self.grad_clip)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if self.attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {self.attention!r}; choose one of {ATTENTIONS}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {self.sampler!r}; known samplers: {sorted(SAMPLERS)}")
        if self.group_filter is not None and self.sampler not in REFILLABLE:
            raise ValueError(
                f"group filter {self.group_filter.name!r} needs a sampler that draws more than one batch per"
                f" step ({', '.join(REFILLABLE)}); {self.sampler!r} draws one"
            )
        if self.reward not in REWARDS:
            raise ValueError(f"unknown reward {self.reward!r}; choose one of {REWARDS}")
        unknown = [spec.name for spec in self.aux_losses if spec.name not in AUX_LOSSES]
        if unknown:  # refused here, before a run folder is made or a model loads
            raise ValueError(f"unknown auxiliary objective(s) {unknown}; registered: {sorted(AUX_LOSSES)}")


def on_engine(config: TrainConfig, engine: str) -> TrainConfig:
    """``config`` with its training rollouts and its evaluation on rollout engine ``engine``
    (``eval_on_engine``): ``countdown-study train --engine`` and the paper preset. ``native`` leaves a
    native config as it was."""
    sampling = replace(config.sampling, engine=engine)
    return replace(config, sampling=sampling, eval=eval_on_engine(config.eval, sampling))


# ---------------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------------


PRESETS: dict[str, TrainConfig] = {
    # CPU preset for the embedded policy: 32 prompts x 8, lr 1e-4, 96 new tokens, 60 steps, no KL. The
    # study presets are this preset at their sizes (``study.presets``).
    "cpu": TrainConfig(),
    # The reports' defaults (000, 002, 004): lr 1e-5 constant, 128 prompts, G = 8, KL 0.001,
    # entropy 0.001, temperature 1.0, 100 steps, on the paper policy and data; on a GPU where there is
    # one, the update's log-probs projected 4,096 tokens at a time (a 151,936-token vocabulary). Training
    # and evaluation both sample with vLLM in bf16 (one instance), evaluation at the reports' 1,024 tokens.
    "paper": on_engine(
        TrainConfig(
            data=DataSpec(
                policy="asingh15/qwen-sft-countdown-defaultproj",
                tokenizer="Qwen/Qwen2.5-0.5B",
                template="qwen_chat",
                train_tasks="asingh15/countdown_tasks_3to4",
            ),
            eval=EvalSpec(sampling=replace(EVAL_SAMPLING, max_new_tokens=REPORTS_MAX_NEW_TOKENS)),
            steps=100,
            prompts_per_step=128,
            micro_batch=8,
            attention="sdpa",
            lr=1e-5,
            loss=REPORTS_LOSS,
            sampling=replace(TRAIN_SAMPLING, max_new_tokens=REPORTS_MAX_NEW_TOKENS),
            device="auto",
            logprob_chunk=4096,
        ),
        "vllm",
    ),
}
"""Named configs; ``preset(name, **changes)`` derives variants."""


def named(presets: Mapping[str, T], name: str, kind: str) -> T:
    """``presets[name]``; an unknown name fails naming the ``kind`` of preset and the known names (the
    training presets here, the study presets in ``study.presets``)."""
    if name not in presets:
        raise ValueError(f"unknown {kind} preset {name!r}; choose one of {sorted(presets)}")
    return presets[name]


def preset(name: str, **changes: Any) -> TrainConfig:
    """The named preset with some fields changed."""
    return replace(named(PRESETS, name, "training"), **changes)
