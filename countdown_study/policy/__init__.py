"""The policy: tokenizer, tiny Qwen2 model, loading by name or path (``model``), and pure trace
builders (``traces``).

Wall: imports only ``countdown_study.countdown``, ``countdown_study.paths`` and ``countdown_study.checksums``.
"""

from countdown_study.policy.model import (
    CHARACTERS,
    EMBEDDED_POLICIES,
    SPECIAL_TOKENS,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    hide_library_bars,
    library_bars,
    load_policy,
    policy_fingerprint,
    policy_identity,
    prompt_template,
)

__all__ = [
    "CHARACTERS",
    "EMBEDDED_POLICIES",
    "SPECIAL_TOKENS",
    "TinyModelConfig",
    "build_model",
    "build_tokenizer",
    "hide_library_bars",
    "library_bars",
    "load_policy",
    "policy_fingerprint",
    "policy_identity",
    "prompt_template",
]
