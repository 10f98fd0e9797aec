"""The study's evaluation sampling, its size, the budget a policy is evaluated at, and when to warn about
the cap.

Imports no torch (``SamplingConfig`` is plain data), so the command line shows these defaults in
``--help`` and checks a sampling option without loading the model stack. ``evaluation.evaluate``
re-exports ``EVAL_SAMPLING``.
"""

from __future__ import annotations

import json
from pathlib import Path

from countdown_study.rollout.sampling import SamplingConfig

EVAL_MAX_NEW_TOKENS = 224
"""Generation budget of evaluation rollouts (whole rollouts, the last answer graded): up to the embedded
model's 256 positions (prompts are at most 32 tokens). On the 500 shared tasks the SFT policy's rollouts
were cut at 96 tokens in 32% of samples (pass@1 0.323), at 224 in 9.8% (0.376); on 50 tasks
``embedded-search`` had 81% cut at 96 (pass@1 0.16) against 0.1% at 224 (0.221)."""

EVAL_SAMPLING = SamplingConfig(
    temperature=0.6, top_p=0.95, top_k=20, stop_at_answer=False, max_new_tokens=EVAL_MAX_NEW_TOKENS
)
"""The reports' common evaluation sampling: temperature 0.6, top-p 0.95, top-k 20, whole rollouts (not
stopped at the first ``</answer>``), at the study's budget ``EVAL_MAX_NEW_TOKENS``."""

EVAL_N = 16
"""Samples per evaluation task: enough for the unbiased pass@k up to k = 16 (``evaluation.passk``), the
reports' largest k."""

EVAL_BATCH_SIZE = 64
"""Tasks per sampling batch of an evaluation, batch b seeded with ``derive_seed(seed, b)`` (so it decides
the draws): 64 tasks x 16 samples sampled 12% faster than 32 on 2 CPU cores, and 128 or 256 no faster."""

TRUNCATION_WARNING = 0.05
"""Share of rollouts cut by the token cap above which an evaluation warns that its budget is too small."""

QUALITY_RECORD = "sft.json"
"""The file of a shipped policy that records how its quality was measured (``sft.record_quality``)."""

_SAME_SAMPLING = ("temperature", "top_p", "top_k", "stop_at_answer")
"""Fields a recorded measurement must share with ``EVAL_SAMPLING`` for its budget to count."""


def recorded_budget(policy_dir: Path | None) -> int | None:
    """The token budget a policy folder records its own quality at, or None.

    A budget counts when ``sft.json`` says the quality was measured with the study's evaluation
    sampling (``EVAL_SAMPLING``'s temperature, top-p, top-k, whole rollouts); ``embedded``'s record
    (temperature 1.0) does not, ``embedded-search``'s (224 tokens) does. A missing or unreadable record
    is None: the caller falls back to ``EVAL_MAX_NEW_TOKENS``.
    """
    record = None if policy_dir is None else Path(policy_dir) / QUALITY_RECORD
    if record is None or not record.is_file():
        return None
    try:
        sampling = json.loads(record.read_text())["quality"]["measured_with"]["sampling"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(sampling, dict) or any(
        sampling.get(name) != getattr(EVAL_SAMPLING, name) for name in _SAME_SAMPLING
    ):
        return None
    budget = sampling.get("max_new_tokens")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1 else None


def default_budget(policy_dir: Path | None) -> int:
    """The evaluation budget of a policy: its ``recorded_budget``, else ``EVAL_MAX_NEW_TOKENS``."""
    return recorded_budget(policy_dir) or EVAL_MAX_NEW_TOKENS


def truncation_warning(truncated: float | None, max_new_tokens: int) -> str | None:
    """The warning for an evaluation whose share ``truncated`` of rollouts was cut at ``max_new_tokens``,
    when above ``TRUNCATION_WARNING``; None otherwise (or when the share is unknown)."""
    if truncated is None or truncated <= TRUNCATION_WARNING:
        return None
    return (
        f"{truncated:.1%} of rollouts were cut at {max_new_tokens} new tokens (more than "
        f"{TRUNCATION_WARNING:.0%}): pass@k undercounts the policy; raise max_new_tokens "
        f"(the study evaluates at {EVAL_MAX_NEW_TOKENS})"
    )
