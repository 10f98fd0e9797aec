"""Prompt templates and the shared answer tags."""

import pytest

from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, answer_span, format_prompt


def test_compact_prompt_exact():
    assert format_prompt((44, 19, 35), 98) == "N 44 19 35 T 98 :"


def test_paper_templates_carry_numbers_target_and_tags():
    for template in ("tinyzero_base", "qwen_chat"):
        prompt = format_prompt([44, 19, 35], 98, template)
        assert "Using the numbers [44, 19, 35], create an equation that equals 98." in prompt
        assert prompt.endswith("<think>")
        assert f"{ANSWER_OPEN} (1 + 2) / 3 {ANSWER_CLOSE}" in prompt
    assert format_prompt([1, 2, 3], 6, "qwen_chat").startswith("<|im_start|>system")


def test_answer_span_and_unknown_template():
    assert answer_span("1+2") == "<answer>1+2</answer>"
    with pytest.raises(ValueError, match="unknown prompt template 'chatml'"):
        format_prompt([1, 2, 3], 6, "chatml")
