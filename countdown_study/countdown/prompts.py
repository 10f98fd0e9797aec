"""Answer-tag format and prompt templates: the single source the verifier, rollout and VCC import.

Three templates:

* ``tinyzero_base``: TinyZero's base-model Countdown prompt (the reports' wording).
* ``qwen_chat``: the same instruction inside the Qwen chat wrapper, used on the paper road
  (``asingh15/qwen-sft-countdown-defaultproj``).
* ``compact``: a short prompt for the embedded character-level model, ``N 44 19 35 T 98 :``; the
  model then writes ``<think>...</think><answer>...</answer>``.
"""

from __future__ import annotations

from collections.abc import Sequence

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
"""Every tag the policy may write; the embedded tokenizer has one token for each."""

_INSTRUCTION = (
    "Using the numbers {numbers}, create an equation that equals {target}. You can use basic "
    "arithmetic operations (+, -, *, /) and each number can only be used once. Show your work in "
    "<think> </think> tags. And return the final answer in <answer> </answer> tags, for example "
    "<answer> (1 + 2) / 3 </answer>."
)

TINYZERO_BASE = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "The assistant first thinks about the reasoning process in the mind and then provides the user with "
    "the answer.\nUser: " + _INSTRUCTION + "\nAssistant: Let me solve this step by step.\n<think>"
)

QWEN_CHAT = (
    "<|im_start|>system\nYou are a helpful assistant. You first thinks about the reasoning process in the "
    "mind and then provides the user with the answer.<|im_end|>\n<|im_start|>user\n"
    + _INSTRUCTION
    + "<|im_end|>\n<|im_start|>assistant\nLet me solve this step by step.\n<think>"
)

COMPACT = "N {numbers} T {target} :"

TEMPLATES = {"tinyzero_base": TINYZERO_BASE, "qwen_chat": QWEN_CHAT, "compact": COMPACT}


def format_prompt(nums: Sequence[int], target: int, template: str = "compact") -> str:
    """Render one task as a prompt. ``template`` is a key of ``TEMPLATES``."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown prompt template {template!r}; choose one of {sorted(TEMPLATES)}")
    if template == "compact":
        numbers = " ".join(str(int(n)) for n in nums)
    else:
        numbers = "[" + ", ".join(str(int(n)) for n in nums) + "]"
    return TEMPLATES[template].format(numbers=numbers, target=int(target))


def answer_span(expression: str) -> str:
    """Wrap an expression in the answer tags."""
    return f"{ANSWER_OPEN}{expression}{ANSWER_CLOSE}"
