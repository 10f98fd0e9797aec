"""Rollout engines: log-probs against a full forward, seeding, stopping, padding, errors."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from countdown_study.countdown.prompts import ANSWER_CLOSE, format_prompt
from countdown_study.policy import build_model, build_tokenizer
from countdown_study.rollout import (
    DTYPE_NAMES,
    DTYPES,
    VLLM_INSTALL_HINT,
    Engine,
    SamplingConfig,
    encode_prompts,
    filter_top_k_top_p,
    inverse_cdf_sample,
    make_engine,
    sample,
    sequence_logprobs,
)
from countdown_study.rollout import hf as hf_engine
from countdown_study.rollout.core import _Stopper
from countdown_study.rollout.engine import engine_key

PROMPTS = [format_prompt([44, 19, 35], 98), format_prompt([1, 2], 3), format_prompt([10, 20, 30, 40], 100)]
HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return build_model(tokenizer, seed=0).eval()


def _max_logprob_error(model, rollouts, temperature: float = 1.0) -> float:
    """Largest |behaviour log-prob - full-forward log-prob| over all completion tokens."""
    full = sequence_logprobs(model, rollouts.sample_prompt_ids, rollouts.completion_ids, temperature)
    behaviour, mask = rollouts.padded_logprobs()
    assert torch.equal(mask, full.mask)
    return (full.logprobs - behaviour).abs().max().item()


# ---------------------------------------------------------------------------------------------------
# log-probs against one full forward


@pytest.mark.parametrize("engine", ["native", "hf"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_behaviour_logprobs_match_full_forward(model, tokenizer, engine, temperature):
    config = SamplingConfig(engine=engine, max_new_tokens=48, temperature=temperature, stop_at_answer=False)
    rollouts = sample(model, tokenizer, PROMPTS, 4, config, seed=1)
    full = sequence_logprobs(
        model, rollouts.sample_prompt_ids, rollouts.completion_ids, temperature=temperature
    )
    behaviour, _ = rollouts.padded_logprobs()
    assert (full.logprobs - behaviour).abs().max().item() < 1e-4
    assert len({len(c) for c in rollouts.completion_ids}) > 1  # rows stopped at different steps


def test_hf_logprobs_without_stored_logits_match_stored_ones(model, tokenizer, monkeypatch):
    config = SamplingConfig(engine="hf", max_new_tokens=32, temperature=0.8)
    stored = sample(model, tokenizer, PROMPTS, 3, config, seed=1)
    monkeypatch.setattr(hf_engine, "HF_LOGITS_BYTES", 0)  # as for a large vocabulary: recompute by forward
    recomputed = sample(model, tokenizer, PROMPTS, 3, config, seed=1)
    assert recomputed.completion_ids == stored.completion_ids
    assert recomputed.finish_reasons == stored.finish_reasons
    difference = (recomputed.padded_logprobs()[0] - stored.padded_logprobs()[0]).abs().max().item()
    assert difference < 1e-4


def test_native_logprobs_ignore_top_k_top_p_truncation(model, tokenizer):
    config = SamplingConfig(max_new_tokens=32, top_k=5, top_p=0.8, temperature=0.9)
    rollouts = sample(model, tokenizer, PROMPTS, 3, config, seed=2)
    full = sequence_logprobs(model, rollouts.sample_prompt_ids, rollouts.completion_ids, temperature=0.9)
    behaviour, _ = rollouts.padded_logprobs()
    assert (full.logprobs - behaviour).abs().max().item() < 1e-4


def test_top_k_one_is_greedy(model, tokenizer):
    rollouts = sample(model, tokenizer, PROMPTS, 2, SamplingConfig(max_new_tokens=16, top_k=1), seed=3)
    assert rollouts.completion_ids[0] == rollouts.completion_ids[1]  # two samples of one prompt agree
    prompt = torch.tensor([encode_prompts(tokenizer, PROMPTS[:1])[0]])
    greedy = model.generate(
        prompt, do_sample=False, max_new_tokens=16, attention_mask=torch.ones_like(prompt)
    )
    expected = greedy[0, prompt.shape[1] :].tolist()
    assert rollouts.completion_ids[0] == expected[: len(rollouts.completion_ids[0])]


def test_bf16_sampling_leaves_model_in_fp32_and_stays_close(model, tokenizer):
    config = SamplingConfig(max_new_tokens=24, dtype="bfloat16")
    rollouts = sample(model, tokenizer, PROMPTS, 2, config, seed=4)
    assert next(model.parameters()).dtype == torch.float32
    assert 1e-6 < _max_logprob_error(model, rollouts) < 0.2  # bf16 rounding, not a different model
    full = sequence_logprobs(model, rollouts.sample_prompt_ids, rollouts.completion_ids)
    behaviour, mask = rollouts.padded_logprobs()
    assert (full.logprobs - behaviour).abs()[mask].mean().item() < 5e-3  # the float32 cache adds no drift


# ---------------------------------------------------------------------------------------------------
# padding


def test_left_padding_gives_single_sequence_logprobs(model, tokenizer):
    rollouts = sample(model, tokenizer, PROMPTS, 2, SamplingConfig(max_new_tokens=24), seed=5)
    assert len({len(p) for p in rollouts.prompt_ids}) == len(PROMPTS)  # prompts of different lengths
    for i, (prompt, completion) in enumerate(
        zip(rollouts.sample_prompt_ids, rollouts.completion_ids, strict=True)
    ):
        ids = torch.tensor([prompt + completion])  # (1, L): no padding, default positions
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1]  # (T, V)
        single = torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)
        assert (single - rollouts.logprobs[i]).abs().max().item() < 1e-4


def test_sequence_logprobs_batch_equals_one_at_a_time(model, tokenizer):
    prompts = encode_prompts(tokenizer, PROMPTS)
    completions = [[5, 6, 7], [8], [9, 10, 11, 12, 13]]
    batch = sequence_logprobs(model, prompts, completions, with_entropy=True)
    for i in range(len(prompts)):
        alone = sequence_logprobs(model, prompts[i : i + 1], completions[i : i + 1], with_entropy=True)
        n = len(completions[i])
        assert (batch.logprobs[i, :n] - alone.logprobs[0]).abs().max().item() < 1e-5
        assert (batch.entropy[i, :n] - alone.entropy[0]).abs().max().item() < 1e-5
        assert not batch.mask[i, n:].any() and (batch.logprobs[i, n:] == 0).all()


def test_sequence_logprobs_keeps_graph_and_entropy_is_bounded(model, tokenizer):
    prompts = encode_prompts(tokenizer, PROMPTS[:2])
    out = sequence_logprobs(model, prompts, [[5, 6], [7, 8, 9]], with_entropy=True)
    (out.logprobs.sum()).backward()
    grad = model.lm_head.weight.grad
    assert grad is not None and grad.abs().sum() > 0
    model.zero_grad(set_to_none=True)
    entropy = out.entropy[out.mask]
    assert (entropy > 0).all() and (entropy <= math.log(len(tokenizer)) + 1e-5).all()


# ---------------------------------------------------------------------------------------------------
# seeding


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_same_seed_same_rollouts(model, tokenizer, engine):
    config = SamplingConfig(engine=engine, max_new_tokens=32)
    first, second = (sample(model, tokenizer, PROMPTS, 3, config, seed=7) for _ in range(2))
    other = sample(model, tokenizer, PROMPTS, 3, config, seed=8)
    assert first.completion_ids == second.completion_ids
    assert first.texts == second.texts and first.finish_reasons == second.finish_reasons
    assert all(torch.equal(a, b) for a, b in zip(first.logprobs, second.logprobs, strict=True))
    assert first.completion_ids != other.completion_ids


def test_sampling_does_not_touch_global_rng(model, tokenizer):
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    for engine in ("native", "hf"):
        sample(model, tokenizer, PROMPTS, 2, SamplingConfig(engine=engine, max_new_tokens=8), seed=1)
    assert torch.equal(torch.rand(3), expected)


# ---------------------------------------------------------------------------------------------------
# stopping and finish reasons


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_finish_reasons_match_last_tokens(model, tokenizer, engine):
    config = SamplingConfig(engine=engine, max_new_tokens=20)
    rollouts = sample(model, tokenizer, PROMPTS, 8, config, seed=9)
    answer_id = tokenizer.convert_tokens_to_ids(ANSWER_CLOSE)
    for ids, reason in zip(rollouts.completion_ids, rollouts.finish_reasons, strict=True):
        stops = [t for t in ids[:-1] if t in (tokenizer.eos_token_id, answer_id)]
        assert not stops  # nothing after a stop token
        expected = {tokenizer.eos_token_id: "eos", answer_id: "answer"}.get(ids[-1], "length")
        assert reason == expected
        assert reason != "length" or len(ids) == config.max_new_tokens
    assert set(rollouts.finish_reasons) == {"eos", "answer", "length"}


def test_stop_at_answer_truncates_the_same_draws(model, tokenizer):
    stop = sample(model, tokenizer, PROMPTS, 8, SamplingConfig(max_new_tokens=64), seed=10)
    go_on = sample(
        model, tokenizer, PROMPTS, 8, SamplingConfig(max_new_tokens=64, stop_at_answer=False), seed=10
    )
    answer_id = tokenizer.convert_tokens_to_ids(ANSWER_CLOSE)
    answered = [i for i, r in enumerate(stop.finish_reasons) if r == "answer"]
    assert answered and "answer" not in go_on.finish_reasons
    for i in range(stop.num_samples):
        assert go_on.completion_ids[i][: len(stop.completion_ids[i])] == stop.completion_ids[i]
    assert any(len(go_on.completion_ids[i]) > len(stop.completion_ids[i]) for i in answered)
    assert all(stop.texts[i].endswith(ANSWER_CLOSE) for i in answered)
    assert any(answer_id in ids[:-1] for ids in go_on.completion_ids)


LONG_PIECE = ANSWER_CLOSE + "9" * 40
"""One long token that starts with the answer tag."""


def _tagless_tokenizer() -> PreTrainedTokenizerFast:
    """A character tokenizer with no token for the answer tag (it is spelled in characters)."""
    chars = "0123456789+-*/()= <>answerthik"
    vocab = {tok: i for i, tok in enumerate(["<pad>", "<eos>", *dict.fromkeys(chars)])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_tokens([AddedToken(LONG_PIECE, normalized=False)])
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>", pad_token="<pad>")


@pytest.mark.parametrize(
    "text, stop_at_answer, kept, reason",
    [
        ("1+2</answer>34", True, "1+2</answer>", "answer"),  # tag spelled in characters
        ("1+2</answer>34", False, "1+2</answer>34", "length"),  # not stopping: runs to the end
        ("1+2<eos>3</answer>", True, "1+2<eos>", "eos"),  # EOS first
        ("</answe", True, "</answe", "length"),  # a partial tag is no stop
        ("1" + LONG_PIECE + "2", True, "1" + LONG_PIECE, "answer"),  # the tag early in a long token
    ],
)
def test_answer_tag_found_in_text_without_its_own_token(text, stop_at_answer, kept, reason):
    tok = _tagless_tokenizer()
    model = build_model(tok)
    stopper = _Stopper(tok, model, stop_at_answer)
    assert stopper.answer_id is None
    ids = tok.encode(text)
    kept_ids, got_reason = stopper.cut(ids)
    assert tok.decode(kept_ids) == kept and got_reason == reason
    live = torch.ones(1, dtype=torch.bool)
    step_done = [bool(stopper.done(torch.tensor([t]), torch.tensor([0]), live)) for t in ids]
    assert step_done.index(True) + 1 == len(kept_ids) if reason != "length" else not any(step_done)


def test_encode_prompts_adds_bos_once_and_only_when_the_tokenizer_has_one(tokenizer):
    plain = tokenizer.encode("N 1 2 T 3 :", add_special_tokens=False)
    once, already = encode_prompts(tokenizer, ["N 1 2 T 3 :", "<bos>N 1 2 T 3 :"])
    assert once == already == [tokenizer.bos_token_id, *plain]
    no_bos = _tagless_tokenizer()
    assert encode_prompts(no_bos, ["12"]) == [no_bos.encode("12")]


# ---------------------------------------------------------------------------------------------------
# sampling math


@pytest.mark.parametrize(
    "top_k, top_p, kept",
    [
        (0, 1.0, [0, 1, 2, 3]),  # both off
        (2, 1.0, [0, 1]),  # the two largest
        (0, 0.5, [0]),  # 0.5 of mass reached by the first token (p = 0.5)
        (0, 0.6, [0, 1]),  # needs the second token too
        (0, 0.97, [0, 1, 2, 3]),  # 0.5 + 0.3 + 0.15 < 0.97
        (3, 0.6, [0, 1]),  # both: the stricter wins
    ],
)
def test_filter_top_k_top_p(top_k, top_p, kept):
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    filtered = filter_top_k_top_p(logits, top_k, top_p)
    assert torch.isfinite(filtered[0]).nonzero().flatten().tolist() == kept


def test_inverse_cdf_draws_each_token_with_its_probability():
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3])
    grid = (torch.arange(1000) + 0.5) / 1000  # evenly spread uniforms
    tokens = inverse_cdf_sample(probs.expand(1000, 4), grid)
    assert torch.bincount(tokens, minlength=4).tolist() == [100, 0, 600, 300]
    assert inverse_cdf_sample(probs[None], torch.tensor([0.0])).item() == 0


# ---------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    "prompts, group_size, error",
    [
        ([], 2, ValueError),  # no prompts
        (PROMPTS, 0, ValueError),  # group_size < 1
        ("N 1 2 T 3 :", 2, TypeError),  # one string instead of a list
    ],
)
def test_bad_inputs_raise(model, tokenizer, prompts, group_size, error):
    with pytest.raises(error):
        sample(model, tokenizer, prompts, group_size, SamplingConfig(), seed=0)


@pytest.mark.parametrize(
    "field, value",
    [("engine", "sglang"), ("dtype", "float16"), ("temperature", 0.0), ("top_p", 0.0), ("top_k", -1)],
)
def test_bad_config_raises(field, value):
    with pytest.raises(ValueError, match=field.split("_")[0]):
        SamplingConfig(**{field: value})


def test_native_refuses_other_architectures(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    llama = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
        )
    )
    with pytest.raises(ValueError, match="engine='hf'"):
        sample(llama, tokenizer, PROMPTS, 1, SamplingConfig(max_new_tokens=2), seed=0)
    with pytest.raises(ValueError, match="engine='hf'"):
        make_engine(llama, tokenizer, SamplingConfig(max_new_tokens=2))  # refused when the engine is made


# ---------------------------------------------------------------------------------------------------
# one Engine per run


def _assert_same_rollouts(first, second) -> None:
    assert first.completion_ids == second.completion_ids
    assert first.texts == second.texts and first.finish_reasons == second.finish_reasons
    assert all(torch.equal(a, b) for a, b in zip(first.logprobs, second.logprobs, strict=True))


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_engine_gives_the_rollouts_of_sample(model, tokenizer, engine):
    config = SamplingConfig(engine=engine, max_new_tokens=32)
    runner = make_engine(model, tokenizer, config)
    assert isinstance(runner, Engine) and runner.kind == engine and runner.sampling == config
    for seed in (7, 8):  # one engine, several calls
        _assert_same_rollouts(
            runner.sample(PROMPTS, 3, seed), sample(model, tokenizer, PROMPTS, 3, config, seed)
        )


@pytest.mark.parametrize("engine, dtype", [("native", "float32"), ("native", "bfloat16"), ("hf", "float32")])
def test_engine_samples_the_current_weights(tokenizer, engine, dtype):
    policy = build_model(tokenizer, seed=0).eval()  # changed in place below, as training does
    config = SamplingConfig(engine=engine, dtype=dtype, max_new_tokens=24, stop_at_answer=False)
    runner = make_engine(policy, tokenizer, config)
    before = runner.sample(PROMPTS, 2, seed=3)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    after = runner.sample(PROMPTS, 2, seed=3)
    assert not all(torch.equal(a, b) for a, b in zip(before.logprobs, after.logprobs, strict=True))
    _assert_same_rollouts(after, sample(policy, tokenizer, PROMPTS, 2, config, seed=3))
    tolerance = 1e-4 if dtype == "float32" else 0.2
    assert _max_logprob_error(policy, after) < tolerance  # log-probs of the updated weights


def test_engine_takes_another_sampling_config_per_call(model, tokenizer):
    train = SamplingConfig(max_new_tokens=32)
    evaluation = SamplingConfig(max_new_tokens=32, temperature=0.6, top_p=0.95, top_k=20)
    runner = make_engine(model, tokenizer, train)
    overridden = runner.sample(PROMPTS, 3, seed=5, sampling=evaluation)
    _assert_same_rollouts(overridden, sample(model, tokenizer, PROMPTS, 3, evaluation, seed=5))
    _assert_same_rollouts(
        runner.sample(PROMPTS, 3, seed=5), sample(model, tokenizer, PROMPTS, 3, train, seed=5)
    )
    assert runner.sampling == train  # the override was for that call only


def test_a_config_of_another_kind_goes_to_one_engine_made_for_it_once(model, tokenizer):
    runner = make_engine(model, tokenizer, SamplingConfig(engine="native", max_new_tokens=24))
    other = SamplingConfig(engine="hf", max_new_tokens=24, temperature=0.7)
    drawn = runner.sample(PROMPTS, 2, seed=4, sampling=other)
    _assert_same_rollouts(drawn, sample(model, tokenizer, PROMPTS, 2, other, seed=4))
    assert drawn.engine == "hf"
    made = runner.engine_for(other)
    assert made.kind == "hf" and made is not runner
    assert runner.engine_for(replace(other, temperature=1.0, dtype="bfloat16")) is made  # kept, not remade
    assert runner.engine_for(SamplingConfig(engine="native", dtype="bfloat16")) is runner  # its own kind
    assert runner.engine_for() is runner
    with pytest.raises(TypeError, match="SamplingConfig"):
        runner.engine_for({"engine": "hf"})
    with pytest.raises(TypeError, match="SamplingConfig"):
        make_engine(model, tokenizer, {"engine": "native"})


def test_engine_key_separates_vllm_dtypes_only():
    assert engine_key(SamplingConfig(engine="vllm", dtype="bfloat16")) == ("vllm", "bfloat16")
    assert engine_key(SamplingConfig(engine="vllm")) != engine_key(
        SamplingConfig(engine="vllm", dtype="bfloat16")
    )
    assert engine_key(SamplingConfig(engine="native")) == engine_key(SamplingConfig(dtype="bfloat16"))
    assert engine_key(SamplingConfig(engine="hf")) == ("hf", None)


def test_sampling_config_needs_no_torch():
    code = (
        "import sys\n"
        "from countdown_study.rollout import SamplingConfig\n"
        "SamplingConfig(engine='hf', temperature=0.6, top_p=0.95, top_k=20)\n"
        "assert 'torch' not in sys.modules, 'importing SamplingConfig loaded torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert tuple(DTYPES) == DTYPE_NAMES  # the torch dtypes cover exactly the names a config accepts


# ---------------------------------------------------------------------------------------------------
# vllm (optional extra)


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed: the missing-extra error cannot happen")
def test_vllm_missing_names_the_extra(model, tokenizer):
    with pytest.raises(ImportError, match=r"pip install countdown_study\[vllm\]"):
        sample(model, tokenizer, PROMPTS, 1, SamplingConfig(engine="vllm"), seed=0)
    assert "countdown_study[vllm]" in VLLM_INSTALL_HINT


@pytest.mark.skipif(not HAS_VLLM, reason="vllm not installed (pip install countdown_study[vllm])")
def test_vllm_logprobs_match_full_forward_after_weight_pushes(model, tokenizer):
    from countdown_study.rollout import VllmRunner

    config = SamplingConfig(engine="vllm", max_new_tokens=32, dtype="float32", temperature=0.8)
    runner = VllmRunner(model, dtype="float32")
    other = build_model(tokenizer, seed=1).eval()  # new weights pushed into the same engine
    drawn = []
    for policy in (model, other, model):
        rollouts = sample(policy, tokenizer, PROMPTS, 4, config, seed=11, vllm_runner=runner)
        full = sequence_logprobs(policy, rollouts.sample_prompt_ids, rollouts.completion_ids, temperature=0.8)
        behaviour, _ = rollouts.padded_logprobs()
        assert (full.logprobs - behaviour).abs().max().item() < 1e-4
        drawn.append(rollouts.completion_ids)
    assert drawn[0] == drawn[2] != drawn[1]  # same weights and seed, same draws


@pytest.mark.skipif(not HAS_VLLM, reason="vllm not installed (pip install countdown_study[vllm])")
def test_vllm_engine_keeps_one_runner_and_pushes_new_weights(tokenizer):
    policy = build_model(tokenizer, seed=0).eval()
    config = SamplingConfig(engine="vllm", max_new_tokens=32, dtype="float32", temperature=0.8)
    runner = make_engine(policy, tokenizer, config)
    vllm_runner = runner.vllm_runner
    before = runner.sample(PROMPTS, 4, seed=11)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    after = runner.sample(PROMPTS, 4, seed=11)
    assert runner.vllm_runner is vllm_runner  # started once
    assert _max_logprob_error(policy, after, temperature=0.8) < 1e-4
    assert before.completion_ids != after.completion_ids
    assert (
        runner.engine_for(replace(config, temperature=0.6, top_k=20)) is runner
    )  # same dtype: same instance
    bf16 = runner.engine_for(replace(config, dtype="bfloat16"))  # another dtype: its own instance, kept
    assert bf16 is not runner and bf16.vllm_runner is not vllm_runner
    assert runner.engine_for(replace(config, dtype="bfloat16", temperature=0.6)) is bf16
    assert _max_logprob_error(policy, bf16.sample(PROMPTS, 2, seed=11), temperature=0.8) < 0.1
