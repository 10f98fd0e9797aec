"""Rollout engines: sample G completions per prompt with behaviour log-probs, and full-forward log-probs.

Three engines behind one call, ``sample(model, tokenizer, prompts, group_size, config, seed)``:

* ``native``: the package's own batched decode loop for Qwen2-style models. It drives the model's
  modules' weights directly (embeddings, fused q/k/v and gate/up projections, rotary tables, RMSNorm,
  ``lm_head``), keeps a KV cache preallocated for prompt + completion (no ``torch.cat`` growth), left-pads
  prompts with explicit position ids, encodes each prompt once and shares its cache by its G samples,
  and drops finished rows from the batch (the cache is compacted when a quarter of the rows are done).
* ``hf``: transformers ``generate`` with ``do_sample`` and ``top_k`` / ``top_p`` set explicitly; log-probs
  from ``output_logits`` (or a chunked forward when storing every step's logits would be too large).
* ``vllm``: an in-process vLLM engine (optional extra ``countdown_study[vllm]``), see ``VllmRunner``.

Behaviour log-prob (all engines): for the sampled token y at a step with logits z,
``log_softmax(z / temperature)[y]``, i.e. the temperature-scaled distribution *before* top-k / top-p
truncation. With truncation off (training) this is exactly the sampling distribution. The vLLM engine
reports the truncated distribution's log-prob when top-k or top-p is on (see ``VllmRunner``).

Stopping: a completion ends at the first EOS token (included) or, with ``config.stop_at_answer``, right
after the first ``</answer>`` (the embedded tokenizer has one token for it; for other tokenizers the
completion stops at the first token after which its decoded text contains the tag). Finish reasons are
``eos``, ``answer`` or ``length``.

Prompts are encoded by ``encode_prompts``: the tokenizer's own special tokens, then BOS prepended when
the tokenizer has one and did not add it (the embedded model sees ``<bos>N 44 19 35 T 98 :``).

``sequence_logprobs`` is the trainer's side: one forward over ``[left pad | prompt | completion | right
pad]`` with explicit position ids, giving per-token log-probs (and optionally entropies) of the
completion tokens, differentiable when called under grad.
"""

from __future__ import annotations

import copy
import json
import os
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from countdown_study.countdown.prompts import ANSWER_CLOSE

ENGINES = ("native", "hf", "vllm")
"""Rollout engines ``sample`` knows."""

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""Sampling dtypes: the weights are copied to this dtype for sampling (log-probs are computed in fp32)."""

HF_LOGITS_BYTES = 2 << 30
"""Largest fp32 logits store (N x T x V) the ``hf`` engine keeps for log-probs; beyond it, a forward pass."""

COMPACT_FRACTION = 0.75
"""The native engine drops finished rows from its batch once at most this fraction of rows is live."""


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
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown sampling dtype {self.dtype!r}; choose one of {list(DTYPES)}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: off), got {self.top_k}")


@dataclass
class Rollouts:
    """G samples for each of P prompts, flattened prompt-major: sample ``p * G + g``."""

    prompts: list[str]
    """The P prompt strings."""
    group_size: int
    """G, samples per prompt."""
    prompt_ids: list[list[int]]
    """Token ids of each prompt (P lists, no padding, as fed to the model: BOS included)."""
    completion_ids: list[list[int]]
    """Token ids of each completion (P * G lists, no padding, ending token included)."""
    texts: list[str]
    """Decoded completions without special tokens (P * G)."""
    logprobs: list[torch.Tensor] = field(default_factory=list)
    """Behaviour log-prob of each completion token (P * G float32 tensors)."""
    finish_reasons: list[str] = field(default_factory=list)
    """``eos``, ``answer`` (stopped at ``</answer>``) or ``length``."""
    engine: str = "native"
    """The engine that drew the samples."""

    @property
    def num_samples(self) -> int:
        """P * G."""
        return len(self.completion_ids)

    @property
    def num_tokens(self) -> int:
        """Completion tokens over all samples."""
        return sum(len(ids) for ids in self.completion_ids)

    @property
    def sample_prompt_ids(self) -> list[list[int]]:
        """The prompt ids of every sample (P * G lists), to pair with ``completion_ids``."""
        return [ids for ids in self.prompt_ids for _ in range(self.group_size)]

    def padded_logprobs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Behaviour log-probs right-padded with 0, laid out like ``sequence_logprobs``: (N, T), mask (N, T)."""
        width = max(len(lp) for lp in self.logprobs)
        values = torch.zeros(len(self.logprobs), width)  # (N, T)
        mask = torch.zeros(len(self.logprobs), width, dtype=torch.bool)  # (N, T)
        for i, lp in enumerate(self.logprobs):
            values[i, : len(lp)] = lp
            mask[i, : len(lp)] = True
        return values, mask


# ----------------------------------------------------------------------------------------------------
# Prompts, padding and stopping


def encode_prompts(tokenizer, prompts: Sequence[str]) -> list[list[int]]:
    """Token ids of each prompt as the policy sees it: BOS first when the tokenizer defines one."""
    encoded = tokenizer(list(prompts), add_special_tokens=True)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is None:
        return [list(ids) for ids in encoded]
    return [list(ids) if ids[:1] == [bos] else [bos, *ids] for ids in encoded]


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists: ids (B, L) and attention mask (B, L)."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)  # (B, L)
    mask = torch.zeros(len(sequences), width, dtype=torch.bool)  # (B, L)
    for i, s in enumerate(sequences):
        if len(s):
            ids[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long)
            mask[i, width - len(s) :] = True
    return ids, mask


def positions_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """Position ids counting only real tokens (pads get 0): (B, L) -> (B, L)."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def _eos_ids(tokenizer, model) -> tuple[int, ...]:
    """Every token id that ends a completion: the tokenizer's EOS and the model's generation EOS ids."""
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
    return tuple(sorted(i for i in ids if i is not None))


def single_token_id(tokenizer, text: str) -> int | None:
    """The id of ``text`` when the tokenizer has one token for it, else None."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None


class _Stopper:
    """Where completions end: EOS, or the answer tag (one token id, or found in the decoded text)."""

    def __init__(self, tokenizer, model, stop_at_answer: bool) -> None:
        self.eos_ids = _eos_ids(tokenizer, model)
        self.stop_at_answer = stop_at_answer
        self.answer_id = single_token_id(tokenizer, ANSWER_CLOSE)
        self.tokenizer = tokenizer
        self._pieces: dict[int, str] = {}
        self._tails: dict[int, str] = {}

    @property
    def stop_ids(self) -> tuple[int, ...]:
        """Token ids that end a completion by themselves."""
        single = (self.answer_id,) if self.stop_at_answer and self.answer_id is not None else ()
        return self.eos_ids + single

    @property
    def by_text(self) -> bool:
        """Whether the answer tag has to be found in decoded text (no single token for it)."""
        return self.stop_at_answer and self.answer_id is None

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token])
        return self._pieces[token]

    def _text_hit(self, key: int, token: int) -> bool:
        """Append one token to sample ``key``'s text tail; True once the tail holds the answer tag."""
        text = self._tails.get(key, "") + self._piece(token)
        self._tails[key] = text[-(len(ANSWER_CLOSE) - 1) :]  # enough to complete a tag later
        return ANSWER_CLOSE in text

    def cut(self, ids: Sequence[int]) -> tuple[list[int], str]:
        """Truncate one raw completion at its first stop: (ids kept, finish reason)."""
        self._tails.pop(-1, None)
        for i, token in enumerate(ids):
            if token in self.eos_ids:
                return list(ids[: i + 1]), "eos"
            if self.stop_at_answer and (
                token == self.answer_id or (self.by_text and self._text_hit(-1, token))
            ):
                return list(ids[: i + 1]), "answer"
        return list(ids), "length"

    def done(self, tokens: torch.Tensor, rows: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
        """Which of the just-sampled ``tokens`` end their sample: (B,), (B,) sample ids, (B,) live -> (B,)."""
        hit = torch.isin(tokens, torch.tensor(self.stop_ids, dtype=tokens.dtype))  # (B,)
        if self.by_text:
            for i in live.nonzero().flatten().tolist():
                if self._text_hit(int(rows[i]), int(tokens[i])):
                    hit[i] = True
        return hit & live


def _finish(
    prompts: list[str],
    group_size: int,
    prompt_ids: list[list[int]],
    raw_ids: list[list[int]],
    raw_logprobs: list[torch.Tensor],
    tokenizer,
    stopper: _Stopper,
    engine: str,
) -> Rollouts:
    """Cut raw completions at their stops, decode them and pack the ``Rollouts``."""
    cuts = [stopper.cut(ids) for ids in raw_ids]
    completion_ids = [ids for ids, _ in cuts]
    logprobs = [lp[: len(ids)].float().clone() for lp, ids in zip(raw_logprobs, completion_ids, strict=True)]
    return Rollouts(
        prompts=list(prompts),
        group_size=group_size,
        prompt_ids=prompt_ids,
        completion_ids=completion_ids,
        texts=tokenizer.batch_decode(completion_ids, skip_special_tokens=True),
        logprobs=logprobs,
        finish_reasons=[reason for _, reason in cuts],
        engine=engine,
    )


# ----------------------------------------------------------------------------------------------------
# Sampling math: truncation, inverse-CDF draws


def filter_top_k_top_p(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Set logits outside the top-k and outside the smallest nucleus of mass ``top_p`` to -inf: (B, V)."""
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (B, V)
        sorted_probs = sorted_logits.softmax(-1)
        mass_before = sorted_probs.cumsum(-1) - sorted_probs  # (B, V) mass of strictly more likely tokens
        drop_sorted = mass_before >= top_p  # the most likely token is always kept
        drop = drop_sorted.scatter(-1, order, drop_sorted)  # (B, V) back in vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def inverse_cdf_sample(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Draw one token per row by inverting the CDF at a uniform in [0, 1): (B, V), (B,) -> (B,)."""
    cdf = probs.double().cumsum(-1)  # (B, V)
    point = uniforms.double() * cdf[:, -1]  # (B,)
    tokens = torch.searchsorted(cdf, point[:, None], right=True).squeeze(1)  # (B,)
    return tokens.clamp(max=probs.shape[-1] - 1)


def draw_tokens(
    logits: torch.Tensor, uniforms: torch.Tensor, config: SamplingConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample from logits with temperature / top-k / top-p: (B, V), (B,) -> tokens (B,), log-probs (B,).

    The log-prob is the behaviour log-prob of the module docstring (before truncation).
    """
    logp = torch.log_softmax(logits.float() / config.temperature, dim=-1)  # (B, V)
    if config.top_k > 0 or config.top_p < 1.0:
        probs = filter_top_k_top_p(logp, config.top_k, config.top_p).softmax(-1)
    else:
        probs = logp.exp()
    tokens = inverse_cdf_sample(probs, uniforms)  # (B,)
    return tokens, logp.gather(1, tokens[:, None]).squeeze(1)


# ----------------------------------------------------------------------------------------------------
# Full-forward log-probs (the trainer's log pi_theta and the reference model's)


@dataclass
class TokenLogprobs:
    """Per-token values of N completions, right-padded to the longest one (T)."""

    logprobs: torch.Tensor
    """(N, T) ``log_softmax(logits / temperature)`` of each completion token; 0 at padding."""
    mask: torch.Tensor
    """(N, T) bool, True at real completion tokens."""
    entropy: torch.Tensor | None = None
    """(N, T) entropy of the temperature-scaled next-token distribution (when asked for); 0 at padding."""


def sequence_logprobs(
    model,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    temperature: float = 1.0,
    with_entropy: bool = False,
    pad_id: int | None = None,
) -> TokenLogprobs:
    """Log-probs of each completion given its prompt, from one forward over the whole batch.

    Layout (N, Lp + T): ``[left pad | prompt | completion | right pad]`` with explicit position ids and an
    attention mask, so padding changes nothing. The autograd graph is kept when called under grad.
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"{len(prompt_ids)} prompts for {len(completion_ids)} completions")
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError("every prompt needs at least one token")
    pad = pad_id if pad_id is not None else (getattr(model.config, "pad_token_id", None) or 0)
    prompts, prompt_mask = left_pad(prompt_ids, pad)  # (N, Lp)
    width = max(len(c) for c in completion_ids)
    completions, completion_mask = left_pad([list(c)[::-1] for c in completion_ids], pad)
    completions, completion_mask = completions.flip(-1), completion_mask.flip(-1)  # (N, T) right-padded
    if width == 0:
        empty = torch.zeros(len(completion_ids), 0)
        return TokenLogprobs(empty, completion_mask, empty.clone() if with_entropy else None)
    ids = torch.cat([prompts, completions], dim=1).to(model.device)  # (N, Lp + T)
    mask = torch.cat([prompt_mask, completion_mask], dim=1).to(model.device)  # (N, Lp + T)
    out = model(
        input_ids=ids,
        attention_mask=mask.long(),
        position_ids=positions_from_mask(mask),
        logits_to_keep=width + 1,
        use_cache=False,
    )
    logits = out.logits[:, :-1].float() / temperature  # (N, T, V): position j predicts completion token j
    logp_all = torch.log_softmax(logits, dim=-1)  # (N, T, V)
    targets = completions.to(logits.device)  # (N, T)
    valid = completion_mask.to(logits.device)  # (N, T)
    logprobs = logp_all.gather(-1, targets[..., None]).squeeze(-1) * valid  # (N, T)
    entropy = None
    if with_entropy:
        entropy = -(logp_all.exp() * logp_all).sum(-1) * valid  # (N, T)
    return TokenLogprobs(logprobs=logprobs, mask=valid, entropy=entropy)


# ----------------------------------------------------------------------------------------------------
# Engine: hf (transformers generate)


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
    """Behaviour log-probs recomputed by chunked full forwards of the sampling model (N (T_i,) tensors)."""
    out = []
    for start in range(0, len(completions), chunk):
        part = sequence_logprobs(
            model, prompt_ids[start : start + chunk], completions[start : start + chunk], temperature
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
    ids, mask = left_pad(sample_prompts, pad_id)  # (N, L)
    keep_logits = _keeps_hf_logits(len(sample_prompts), config, runner.config.vocab_size)
    kwargs = {"stop_strings": [ANSWER_CLOSE], "tokenizer": stopper.tokenizer} if stopper.by_text else {}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        out = runner.generate(
            input_ids=ids.to(runner.device),
            attention_mask=mask.long().to(runner.device),
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
    new_tokens = out.sequences[:, ids.shape[1] :].cpu()  # (N, T)
    if not keep_logits:
        completions = [stopper.cut(row)[0] for row in new_tokens.tolist()]
        return completions, _forward_logprobs(runner, sample_prompts, completions, config.temperature)
    logits = torch.stack(out.logits, dim=1).float().cpu()  # (N, T, V)
    logp = torch.log_softmax(logits / config.temperature, dim=-1).gather(-1, new_tokens[..., None])
    return new_tokens.tolist(), list(logp.squeeze(-1))  # N lists, N (T,) tensors


# ----------------------------------------------------------------------------------------------------
# Engine: native (own decode loop with a preallocated KV cache)


@dataclass(frozen=True)
class _Block:
    """One decoder layer's weights, q/k/v and gate/up fused."""

    ln1: torch.Tensor
    w_qkv: torch.Tensor
    b_qkv: torch.Tensor | None
    w_o: torch.Tensor
    ln2: torch.Tensor
    w_gate_up: torch.Tensor
    w_down: torch.Tensor


@dataclass(frozen=True)
class _Decoder:
    """Everything the native loop reads from a Qwen2 model, in the sampling dtype."""

    embed: torch.Tensor  # (V, C)
    blocks: tuple[_Block, ...]
    norm: torch.Tensor  # (C,)
    lm_head: torch.Tensor  # (V, C)
    eps: float
    heads: int
    kv_heads: int
    head_dim: int
    cos: torch.Tensor  # (S, D)
    sin: torch.Tensor  # (S, D)


def _check_native_support(config) -> None:
    """The native engine implements Qwen2's architecture only; anything else goes to ``hf``."""
    if getattr(config, "model_type", None) != "qwen2":
        raise ValueError(f"engine 'native' supports Qwen2 models, not {config.model_type!r}; use engine='hf'")
    if getattr(config, "hidden_act", "silu") != "silu" or getattr(config, "use_sliding_window", False):
        raise ValueError("engine 'native' needs SiLU MLPs and full attention; use engine='hf'")


def _rope_tables(model, length: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the model's rotary embedding for positions 0..length-1: (S, D) each."""
    rotary = model.model.rotary_emb
    positions = torch.arange(length, device=model.device)[None]  # (1, S)
    probe = torch.zeros(1, dtype=torch.float32, device=model.device)
    cos, sin = rotary(probe, positions)  # (1, S, D) each, fp32
    return cos[0].to(dtype), sin[0].to(dtype)


def _decoder_weights(model, dtype: torch.dtype, length: int) -> _Decoder:
    """Copy (and fuse) the weights the native loop needs, detached, in ``dtype``."""
    _check_native_support(model.config)
    cfg = model.config

    def cast(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.detach().to(dtype)

    blocks = []
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        biases = [attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias]
        blocks.append(
            _Block(
                ln1=cast(layer.input_layernorm.weight),
                w_qkv=cast(torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])),
                b_qkv=None if biases[0] is None else cast(torch.cat(biases)),
                w_o=cast(attn.o_proj.weight),
                ln2=cast(layer.post_attention_layernorm.weight),
                w_gate_up=cast(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight])),
                w_down=cast(mlp.down_proj.weight),
            )
        )
    cos, sin = _rope_tables(model, length, dtype)
    return _Decoder(
        embed=cast(model.model.embed_tokens.weight),
        blocks=tuple(blocks),
        norm=cast(model.model.norm.weight),
        lm_head=cast(model.lm_head.weight),
        eps=cfg.rms_norm_eps,
        heads=cfg.num_attention_heads,
        kv_heads=cfg.num_key_value_heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads,
        cos=cos,
        sin=sin,
    )


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (rotate-half form): x (B, H, T, D), cos/sin (B, 1, T, D)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (B, H, T, D)
    return x * cos + rotated * sin


def _attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Attention of q (B, H, T, D) over keys/values (B, K, S, D) with a bool mask (B, 1, T, S) -> (B, H, T, D).

    One new token per row (decode) uses two small batched matmuls with query heads grouped by their
    key/value head, about twice as fast here as the fused CPU kernel, which serves the prefill.
    """
    batch, heads, steps, dim = q.shape
    kv_heads = keys.shape[1]
    if steps > 1:
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=heads != kv_heads)
    grouped = q.reshape(batch, kv_heads, heads // kv_heads, dim)  # (B, K, H/K, D)
    scores = torch.matmul(grouped, keys.transpose(-1, -2)) * dim**-0.5  # (B, K, H/K, S)
    weights = scores.float().masked_fill(~mask, float("-inf")).softmax(-1).to(values.dtype)
    return torch.matmul(weights, values).reshape(batch, heads, 1, dim)  # (B, H, 1, D)


def _forward(
    dec: _Decoder,
    cache: list[tuple[torch.Tensor, torch.Tensor]],
    ids: torch.Tensor,
    positions: torch.Tensor,
    start: int,
    attn_mask: torch.Tensor,
) -> torch.Tensor:
    """Run T new tokens per row through the model, writing their keys/values at cache slots start..start+T.

    ids, positions (B, T); attn_mask (B, 1, T, span) bool over the first ``span`` cache slots (at least
    start + T; unwritten slots masked); cache entries (B, K, S, D). Returns the last position's logits (B, V).
    """
    batch, steps = ids.shape
    h, k, d = dec.heads, dec.kv_heads, dec.head_dim
    end, span = start + steps, attn_mask.shape[-1]
    cos, sin = dec.cos[positions][:, None], dec.sin[positions][:, None]  # (B, 1, T, D)
    x = dec.embed[ids]  # (B, T, C)
    for block, (key_cache, value_cache) in zip(dec.blocks, cache, strict=True):
        normed = F.rms_norm(x, (x.shape[-1],), block.ln1, dec.eps)
        qkv = F.linear(normed, block.w_qkv, block.b_qkv).view(batch, steps, h + 2 * k, d).transpose(1, 2)
        qk = _rotate(qkv[:, : h + k], cos, sin)  # (B, H + K, T, D)
        key_cache[:, :, start:end] = qk[:, h:]
        value_cache[:, :, start:end] = qkv[:, h + k :]
        attn = _attention(
            qk[:, :h], key_cache[:, :, :span], value_cache[:, :, :span], attn_mask
        )  # (B, H, T, D)
        x = x + F.linear(attn.transpose(1, 2).reshape(batch, steps, h * d), block.w_o)
        normed = F.rms_norm(x, (x.shape[-1],), block.ln2, dec.eps)
        gate, up = F.linear(normed, block.w_gate_up).chunk(2, dim=-1)  # (B, T, I) each
        x = x + F.linear(F.silu(gate) * up, block.w_down)
    last = F.rms_norm(x[:, -1], (x.shape[-1],), dec.norm, dec.eps)  # (B, C)
    return F.linear(last, dec.lm_head)  # (B, V)


def _prefill_mask(mask: torch.Tensor) -> torch.Tensor:
    """Causal mask over real keys for a left-padded prompt batch: (B, L) -> (B, 1, L, L).

    Pad queries may attend to themselves, so no row is fully masked (their outputs are never used).
    """
    width = mask.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool).tril()  # (L, L)
    return ((causal & mask[:, None, :]) | torch.eye(width, dtype=torch.bool))[:, None]


def _attention_span(filled: int, length: int) -> int:
    """Cache slots a decode step attends to: all ``length`` once half are filled, else the ``filled`` ones.

    A prefix of the cache is a strided view that the CPU batched matmul copies first (bf16 especially);
    the whole buffer is contiguous, so past half full it is cheaper to attend to it with a mask.
    """
    return length if 2 * filled >= length else filled


def _new_cache(dec: _Decoder, batch: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One preallocated (keys, values) pair per layer: (B, K, S, D) each."""
    shape = (batch, dec.kv_heads, length, dec.head_dim)
    return [(dec.embed.new_zeros(shape), dec.embed.new_zeros(shape)) for _ in dec.blocks]


def _compact_cache(cache, keep: torch.Tensor, filled: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Keep only batch rows ``keep`` (B',), copying just the ``filled`` slots in use: (B, K, S, D) -> (B', K, S, D)."""
    compacted = []
    for pair in cache:
        new_pair = tuple(t.new_empty((len(keep), *t.shape[1:])) for t in pair)
        for old, new in zip(pair, new_pair, strict=True):
            torch.index_select(old[:, :, :filled], 0, keep, out=new[:, :, :filled])
            new[:, :, filled:].zero_()  # masked slots still meet zero attention weights: keep them finite
        compacted.append(new_pair)
    return compacted


@torch.no_grad()
def _sample_native(model, stopper: _Stopper, prompt_ids, group_size, config, seed, pad_id):
    """Raw completions and behaviour log-probs from the native decode loop."""
    ids, mask = left_pad(prompt_ids, pad_id)  # (P, L)
    num, width, new = len(prompt_ids) * group_size, ids.shape[1], config.max_new_tokens
    length = width + new - 1  # the last sampled token is never fed back
    dec = _decoder_weights(model, DTYPES[config.dtype], max(length, 1))
    cache = _new_cache(dec, len(prompt_ids), length)
    logits = _forward(dec, cache, ids, positions_from_mask(mask), 0, _prefill_mask(mask))  # (P, V)
    # Each prompt was encoded once; its G samples share copies of its cache.
    cache = [(kc.repeat_interleave(group_size, 0), vc.repeat_interleave(group_size, 0)) for kc, vc in cache]
    logits = logits.repeat_interleave(group_size, 0)  # (N, V)
    key_valid = torch.zeros(num, length, dtype=torch.bool)  # (N, S) written, non-pad slots
    key_valid[:, :width] = mask.repeat_interleave(group_size, 0)
    next_pos = mask.sum(-1).repeat_interleave(group_size)  # (N,)
    rows = torch.arange(num)  # (B,) sample index of each batch row
    live = torch.ones(num, dtype=torch.bool)  # (B,)
    out_tokens = torch.full((num, new), pad_id, dtype=torch.long)  # (N, new)
    out_logprobs = torch.zeros(num, new)  # (N, new)
    lengths = torch.zeros(num, dtype=torch.long)  # (N,)
    generator = torch.Generator().manual_seed(seed)
    for step in range(new):
        # One uniform per sample and step: a sample's draws do not depend on when other samples stop.
        uniforms = torch.rand(num, generator=generator, dtype=torch.float64)[rows]  # (B,)
        tokens, logprobs = draw_tokens(logits, uniforms, config)  # (B,), (B,)
        live_rows = rows[live]
        out_tokens[live_rows, step] = tokens[live]
        out_logprobs[live_rows, step] = logprobs[live]
        lengths[live_rows] += 1
        live &= ~stopper.done(tokens, rows, live)
        if step == new - 1 or not live.any():
            break
        if live.sum() <= COMPACT_FRACTION * len(live):
            keep = live.nonzero().flatten()  # (B',)
            cache = _compact_cache(cache, keep, width + step)
            key_valid, next_pos, rows, tokens = key_valid[keep], next_pos[keep], rows[keep], tokens[keep]
            live = torch.ones(len(keep), dtype=torch.bool)
        slot = width + step
        key_valid[:, slot] = True
        attn_mask = key_valid[:, None, None, : _attention_span(slot + 1, length)]  # (B, 1, 1, span)
        logits = _forward(dec, cache, tokens[:, None], next_pos[:, None], slot, attn_mask)
        next_pos = next_pos + 1
    completions = [out_tokens[i, : lengths[i]].tolist() for i in range(num)]
    return completions, [out_logprobs[i, : lengths[i]] for i in range(num)]


# ----------------------------------------------------------------------------------------------------
# Engine: vllm (optional extra)

VLLM_INSTALL_HINT = "the 'vllm' rollout engine needs vLLM: pip install countdown_study[vllm]"
"""The message of the ImportError raised when vLLM is not installed."""


VLLM_KV_CACHE_BYTES = 1 << 30
"""KV cache the vLLM engine reserves (on CPU its default is a fraction of all memory, too much when shared)."""


@contextmanager
def _global_rng_preserved() -> Iterator[None]:
    """Restore Python's, NumPy's and torch's global random states on exit."""
    python_state, numpy_state = random.getstate(), np.random.get_state()  # noqa: NPY002 (the legacy global)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002


def _import_vllm():
    """Import vLLM in-process (no engine subprocess), or raise an ImportError naming the extra."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        import vllm
    except ImportError as err:
        raise ImportError(VLLM_INSTALL_HINT) from err
    return vllm


def _untied_state(model) -> dict[str, torch.Tensor]:
    """The model's weights by checkpoint name, ``lm_head.weight`` always present (vLLM reloads need it)."""
    state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    state.setdefault("lm_head.weight", model.get_output_embeddings().weight.detach().contiguous())
    return state


class VllmRunner:
    """An in-process vLLM engine for one policy architecture; ``sample`` pushes the current weights to it.

    The model is written once to a temporary folder as an untied checkpoint (vLLM reloads into tied
    embeddings were wrong), and the engine runs without its tokenizer: prompts go in as token ids and
    completions are decoded by the caller's tokenizer. Behaviour log-probs are vLLM's
    ``processed_logprobs`` (after temperature): equal to this module's definition when top-k and top-p
    are off, and those of the truncated distribution otherwise.
    """

    def __init__(
        self, model, dtype: str = "bfloat16", max_model_len: int | None = None, **engine_kwargs
    ) -> None:
        vllm = _import_vllm()
        self._folder = tempfile.TemporaryDirectory(prefix="countdown_vllm_")
        self._write_checkpoint(model, Path(self._folder.name))
        settings = {
            "enforce_eager": True,
            "kv_cache_memory_bytes": VLLM_KV_CACHE_BYTES,
            "enable_chunked_prefill": False,  # a seeded request split across steps fails on CPU
            **engine_kwargs,
        }
        with _global_rng_preserved():  # in-process vLLM seeds the global generators
            self.llm = vllm.LLM(
                model=self._folder.name,
                skip_tokenizer_init=True,
                dtype=dtype,
                max_model_len=max_model_len,
                distributed_executor_backend="uni",
                logprobs_mode="processed_logprobs",
                **settings,
            )

    @staticmethod
    def _write_checkpoint(model, folder: Path) -> None:
        """Save an untied safetensors checkpoint of ``model`` with its config."""
        from safetensors.torch import save_file

        config = model.config.to_dict()
        config["tie_word_embeddings"] = False
        (folder / "config.json").write_text(json.dumps(config))
        save_file({k: v.clone() for k, v in _untied_state(model).items()}, str(folder / "model.safetensors"))

    def push_weights(self, model) -> None:
        """Load ``model``'s current weights into the engine and drop cached prefixes."""
        weights = list(_untied_state(model).items())
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()

    def generate(self, stopper: _Stopper, prompt_ids, group_size, config, seed):
        """Raw completions and log-probs; sample i has its own seed derived from (seed, i)."""
        vllm = _import_vllm()
        requests, params = [], []
        for i, ids in enumerate(p for p in prompt_ids for _ in range(group_size)):
            requests.append({"prompt_token_ids": list(ids)})
            params.append(
                vllm.SamplingParams(
                    n=1,
                    temperature=config.temperature,
                    top_p=config.top_p,
                    top_k=config.top_k,
                    max_tokens=config.max_new_tokens,
                    seed=(seed * 1_000_003 + i) % 2**31,
                    logprobs=0,
                    stop_token_ids=list(stopper.stop_ids),
                    detokenize=False,
                )
            )
        with _global_rng_preserved():
            outputs = self.llm.generate(requests, params, use_tqdm=False)
        completions, logprobs = [], []
        for request in outputs:
            sample_out = request.outputs[0]
            tokens = list(sample_out.token_ids)
            completions.append(tokens)
            logprobs.append(torch.tensor([sample_out.logprobs[j][t].logprob for j, t in enumerate(tokens)]))
        return completions, logprobs


# ----------------------------------------------------------------------------------------------------
# Public entry point


def _check_inputs(prompts, group_size: int) -> None:
    """Clear errors for the common mistakes."""
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of strings, not one string")
    if len(prompts) == 0:
        raise ValueError("prompts is empty")
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")


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

    Same inputs and seed give identical rollouts. ``vllm_runner`` reuses an engine across calls (the
    model's current weights are pushed to it first); without one, a ``vllm`` call starts its own.
    """
    _check_inputs(prompts, group_size)
    stopper = _Stopper(tokenizer, model, config.stop_at_answer)
    prompt_ids = encode_prompts(tokenizer, prompts)
    if any(len(ids) == 0 for ids in prompt_ids):
        raise ValueError("every prompt needs at least one token (this tokenizer has no BOS to prepend)")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stopper.eos_ids[0]
    engines: dict[str, Callable] = {"native": _sample_native, "hf": _sample_hf}
    if config.engine == "vllm":
        runner = vllm_runner or VllmRunner(model, dtype=config.dtype)
        runner.push_weights(model)
        raw_ids, raw_logprobs = runner.generate(stopper, prompt_ids, group_size, config, seed)
    else:
        engine = engines[config.engine]
        raw_ids, raw_logprobs = engine(model, stopper, prompt_ids, group_size, config, seed, pad_id)
    return _finish(prompts, group_size, prompt_ids, raw_ids, raw_logprobs, tokenizer, stopper, config.engine)
