"""How completions are drawn: the frozen ``SamplingConfig`` and its validation.

This module imports no torch (nor anything that does), so configs can be built, compared and stored
without loading it; the torch dtype each ``dtype`` name stands for lives in ``rollout.core.DTYPES``.
"""

from __future__ import annotations

from dataclasses import dataclass

ENGINES = ("native", "hf", "vllm")
"""Rollout engines ``sample`` knows."""

MIN_TEMPERATURE = 1e-2
"""Lowest temperature: below it a draw is greedy for every practical purpose, and ``logits / T`` leaves
the range a softmax in bf16 or fp32 keeps finite (1e-300 gave NaN probabilities and garbage text)."""
MAX_TEMPERATURE = 100.0
"""Highest temperature: above it the distribution is uniform for every practical purpose (inf is)."""

DTYPE_NAMES = ("float32", "bfloat16")
"""Sampling dtypes: the weights are copied to this dtype for sampling (log-probs are computed in fp32)."""


@dataclass(frozen=True)
class SamplingConfig:
    """How completions are drawn."""

    max_new_tokens: int = 96
    """Longest completion, in tokens."""
    temperature: float = 1.0
    """Softmax temperature; behaviour log-probs are those of ``log_softmax(logits / temperature)``."""
    top_p: float = 1.0
    """Nucleus mass kept (1.0: off)."""
    top_k: int = 0
    """Keep the k most likely tokens (0: off)."""
    stop_at_answer: bool = True
    """Stop a sequence after its first ``</answer>`` (VCC sets False to see answer abandonment)."""
    engine: str = "native"
    """``native`` (own KV-cache loop), ``hf`` (transformers ``generate``) or ``vllm`` (optional extra)."""
    dtype: str = "float32"
    """Weights' dtype while sampling: ``float32`` or ``bfloat16`` (a bf16 copy, ~25% faster on this CPU)."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown rollout engine {self.engine!r}; choose one of {list(ENGINES)}")
        if self.dtype not in DTYPE_NAMES:
            raise ValueError(f"unknown sampling dtype {self.dtype!r}; choose one of {list(DTYPE_NAMES)}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if not MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE:
            raise ValueError(
                f"temperature must lie in [{MIN_TEMPERATURE}, {MAX_TEMPERATURE}], got {self.temperature}"
            )
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: off), got {self.top_k}")
