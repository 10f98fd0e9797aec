"""The ``hf`` rollout engine: transformers ``generate`` with ``do_sample`` and ``top_k`` / ``top_p`` set
explicitly; behaviour log-probs from ``output_logits`` (or a chunked forward when storing every step's
logits would be too large).

Seeded through torch's global generators inside ``fork_rng``: the caller's global random state is
restored afterwards (the CPU one, and the CUDA one of the model's device when it is on a GPU).
"""

from __future__ import annotations

import copy

import torch

from countdown_study.countdown.prompts import ANSWER_CLOSE
from countdown_study.rollout.core import (
    CHUNKED_MODEL_TYPES,
    DTYPES,
    HOST,
    _Stopper,
    left_pad,
    model_device,
    sequence_logprobs,
)
from countdown_study.rollout.sampling import SamplingConfig

HF_LOGITS_BYTES = 2 << 30
"""Largest fp32 logits store (N x T x V) the ``hf`` engine keeps for log-probs; beyond it, a forward pass."""
HF_LOGPROB_CHUNK = 4096
"""Completion tokens per vocabulary projection of that forward pass (``sequence_logprobs``' chunked path,
on the architectures it supports): the store it replaces was too large, so the forward does not hold
full logits either."""


def _sampling_copy(model, dtype: str):
    """The model itself in fp32, else a copy of it in ``dtype`` (the trained weights stay untouched)."""
    if DTYPES[dtype] == next(model.parameters()).dtype:
        return model
    return copy.deepcopy(model).to(DTYPES[dtype])


def _keeps_hf_logits(num: int, config: SamplingConfig, vocab: int) -> bool:
    """Whether ``generate`` may keep every step's logits (N, T, V) in fp32 within ``HF_LOGITS_BYTES``."""
    return num * config.max_new_tokens * vocab * 4 <= HF_LOGITS_BYTES


def _forward_logprobs(
    model, prompt_ids, completions, temperature: float, chunk: int = 32
) -> list[torch.Tensor]:
    """Behaviour log-probs recomputed by full forwards of the sampling model over ``chunk`` sequences at
    a time, each projected onto the vocabulary ``HF_LOGPROB_CHUNK`` tokens at a time where the
    architecture allows it (N (T_i,) tensors, on the model's device)."""
    tokens = HF_LOGPROB_CHUNK if getattr(model.config, "model_type", None) in CHUNKED_MODEL_TYPES else 0
    out = []
    for start in range(0, len(completions), chunk):
        part = sequence_logprobs(
            model,
            prompt_ids[start : start + chunk],
            completions[start : start + chunk],
            temperature,
            chunk_tokens=tokens,
        )
        out.extend(
            row[: len(c)] for row, c in zip(part.logprobs, completions[start : start + chunk], strict=True)
        )
    return out


@torch.no_grad()
def _sample_hf(model, stopper: _Stopper, prompt_ids, group_size, config, seed, pad_id):
    """Raw completions and behaviour log-probs from ``generate`` (global RNG forked and seeded).

    Log-probs come from ``output_logits`` (raw logits of every step); when those would not fit in
    ``HF_LOGITS_BYTES`` (a large vocabulary and long completions) they are recomputed by chunked full
    forwards of the same sampling weights.
    """
    runner = _sampling_copy(model, config.dtype)
    sample_prompts = [p for p in prompt_ids for _ in range(group_size)]
    device = model_device(runner)
    ids, mask = left_pad(sample_prompts, pad_id, device)  # (N, L)
    keep_logits = _keeps_hf_logits(len(sample_prompts), config, runner.config.vocab_size)
    kwargs = {"stop_strings": [ANSWER_CLOSE], "tokenizer": stopper.tokenizer} if stopper.by_text else {}
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        out = runner.generate(
            input_ids=ids,
            attention_mask=mask.long(),
            do_sample=True,
            temperature=config.temperature,
            top_k=config.top_k,
            top_p=config.top_p,
            max_new_tokens=config.max_new_tokens,
            eos_token_id=list(stopper.stop_ids),
            pad_token_id=pad_id,
            output_logits=keep_logits,
            return_dict_in_generate=True,
            **kwargs,
        )
    new_tokens = out.sequences[:, ids.shape[1] :]  # (N, T) on the model's device
    if not keep_logits:
        completions = [stopper.cut(row)[0] for row in new_tokens.tolist()]
        return completions, _forward_logprobs(runner, sample_prompts, completions, config.temperature)
    logits = torch.stack(out.logits, dim=1).float()  # (N, T, V)
    logp = torch.log_softmax(logits / config.temperature, dim=-1).gather(-1, new_tokens[..., None])
    return new_tokens.tolist(), list(logp.squeeze(-1).to(HOST))  # N lists, N (T,) tensors
