"""The ``native`` rollout engine: the package's own batched decode loop for Qwen2-style models.

It drives the model's modules' weights directly (embeddings, fused q/k/v and gate/up projections, rotary
tables, RMSNorm, ``lm_head``), keeps a float32 KV cache preallocated for prompt + completion (no ``torch.cat``
growth), left-pads prompts with explicit position ids, encodes each prompt once and shares its cache by
its G samples, and drops finished rows from the batch (the cache is compacted when a quarter of the rows
are done).

Every tensor of the loop lives on the model's device; the per-step uniforms are drawn by a seeded CPU
generator (the same draws on any device) and then moved there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from countdown_study.rollout.core import (
    DTYPES,
    HOST,
    _Stopper,
    draw_tokens,
    left_pad,
    model_device,
    positions_from_mask,
)

COMPACT_FRACTION = 0.75
"""The native engine drops finished rows from its batch once at most this fraction of rows is live."""


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
    rotary, device = model.model.rotary_emb, model_device(model)
    positions = torch.arange(length, device=device)[None]  # (1, S)
    probe = torch.zeros(1, dtype=torch.float32, device=device)
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

    Runs in the keys' dtype (float32 over the decode cache; the result is cast back to q's dtype). One
    new token per row (decode) uses two batched matmuls with query heads grouped by their key/value head,
    about twice as fast here as the fused CPU kernel, which serves the prefill.
    """
    batch, heads, steps, dim = q.shape
    kv_heads, out_dtype = keys.shape[1], q.dtype
    q = q.to(keys.dtype)
    if steps > 1:
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=heads != kv_heads)
        return out.to(out_dtype)
    grouped = q.reshape(batch, kv_heads, heads // kv_heads, dim)  # (B, K, H/K, D)
    scores = torch.matmul(grouped, keys.transpose(-1, -2)) * dim**-0.5  # (B, K, H/K, S)
    weights = scores.masked_fill(~mask, float("-inf")).softmax(-1, dtype=torch.float32)
    out = torch.matmul(weights.to(values.dtype), values)  # (B, K, H/K, D)
    return out.reshape(batch, heads, 1, dim).to(out_dtype)  # (B, H, 1, D)


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

    ``start`` as a one-element tensor is the static decode step (``StaticDecode``): one new token per row,
    written at that slot by ``index_copy_``, attending over the whole cache (``attn_mask`` (B, 1, 1, S)), so
    that every tensor keeps its shape from step to step and the step can be captured once as a CUDA graph.
    """
    batch, steps = ids.shape
    h, k, d = dec.heads, dec.kv_heads, dec.head_dim
    static = isinstance(start, torch.Tensor)
    span = attn_mask.shape[-1]
    cos, sin = dec.cos[positions][:, None], dec.sin[positions][:, None]  # (B, 1, T, D)
    x = dec.embed[ids]  # (B, T, C)
    for block, (key_cache, value_cache) in zip(dec.blocks, cache, strict=True):
        normed = F.rms_norm(x, (x.shape[-1],), block.ln1, dec.eps)
        qkv = F.linear(normed, block.w_qkv, block.b_qkv).view(batch, steps, h + 2 * k, d).transpose(1, 2)
        qk = _rotate(qkv[:, : h + k], cos, sin)  # (B, H + K, T, D)
        if static:
            key_cache.index_copy_(2, start, qk[:, h:].to(key_cache.dtype))
            value_cache.index_copy_(2, start, qkv[:, h + k :].to(value_cache.dtype))
        else:
            key_cache[:, :, start : start + steps] = qk[:, h:]
            value_cache[:, :, start : start + steps] = qkv[:, h + k :]
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
    width, device = mask.shape[1], mask.device
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()  # (L, L)
    return ((causal & mask[:, None, :]) | torch.eye(width, dtype=torch.bool, device=device))[:, None]


CACHE_DTYPE = torch.float32
"""The decode cache's dtype: attention over a prefix of a float32 cache needs no copy on the CPU (a bf16
prefix view is copied by the batched matmul first), and float32 keeps decode attention exact."""


def _prompt_cache(dec: _Decoder, prompts: int, width: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One (keys, values) pair per layer for the prefill of ``prompts`` prompts ``width`` tokens wide:
    (P, K, width, D) each, ``CACHE_DTYPE``, unwritten (the prefill writes every slot)."""
    shape = (prompts, dec.kv_heads, width, dec.head_dim)
    return [
        (dec.embed.new_empty(shape, dtype=CACHE_DTYPE), dec.embed.new_empty(shape, dtype=CACHE_DTYPE))
        for _ in dec.blocks
    ]


def _share_prompt_cache(
    prompt_cache, group_size: int, width: int, length: int, zeroed: bool
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The decode cache of P prompts x G samples: each prompt's ``width`` prefilled slots copied to its G
    rows of a new (P*G, K, length, D) cache, nothing else written.

    ``zeroed=False`` leaves the other slots unwritten (``torch.empty``): the eager loop attends only over
    the filled prefix ``[:span]`` and writes each slot before a query reads it, so a page of the cache is
    touched only when decoding reaches it (on the CPU the full preset's evaluation, ~250 MB per cache
    tensor and batch, took 0.97x the time of zeroing and copying them whole). The static step attends over
    the whole cache: its unwritten slots must be finite under their zero attention weights, so it asks for
    zeros."""
    prompts, kv_heads, _, dim = prompt_cache[0][0].shape
    shared = []
    for pair in prompt_cache:
        new_pair = []
        for old in pair:
            new = old.new_zeros if zeroed else old.new_empty
            big = new((prompts * group_size, kv_heads, length, dim))
            big.view(prompts, group_size, kv_heads, length, dim)[:, :, :, :width].copy_(
                old[:, None, :, :width]
            )
            new_pair.append(big)
        shared.append(tuple(new_pair))
    return shared


def _compact_cache(cache, keep: torch.Tensor, filled: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Keep only batch rows ``keep`` (B',), copying just the ``filled`` slots in use: (B, K, S, D) -> (B', K, S, D).

    The slots from ``filled`` on are left unwritten (the eager loop writes each before reading it)."""
    compacted = []
    for pair in cache:
        new_pair = tuple(t.new_empty((len(keep), *t.shape[1:])) for t in pair)
        for old, new in zip(pair, new_pair, strict=True):
            torch.index_select(old[:, :, :filled], 0, keep, out=new[:, :, :filled])
        compacted.append(new_pair)
    return compacted


CUDA_GRAPHS_VARIABLE = "COUNTDOWN_STUDY_CUDA_GRAPHS"
"""Set to ``0`` to decode eagerly on a CUDA device too (``use_static``)."""


def use_static(device: torch.device) -> bool:
    """Whether the native loop decodes with ``StaticDecode`` on ``device``: on CUDA, unless
    ``CUDA_GRAPHS_VARIABLE`` is ``0``. On the CPU the eager loop, whose growing span and compacted batch
    read less, is faster."""
    return device.type == "cuda" and os.environ.get(CUDA_GRAPHS_VARIABLE, "1") != "0"


class StaticDecode:
    """The decode step at one batch shape, every input in a fixed buffer: the token and position of each row,
    the slot written (one tensor), and the mask over the whole cache (a view of the loop's ``key_valid``, so
    marking a slot filled shows through). On a CUDA device the step is captured once as a CUDA graph and
    replayed for every token (one launch instead of a few hundred small kernels per token); elsewhere it runs
    eagerly (the CPU tests of the same code). Rows are never compacted out: a finished row keeps its slot and
    its outputs are not read."""

    def __init__(
        self, dec: _Decoder, cache: list[tuple[torch.Tensor, torch.Tensor]], key_valid: torch.Tensor
    ):
        batch, device = key_valid.shape[0], key_valid.device
        self.dec, self.cache = dec, cache
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=device)  # (B, 1)
        self.positions = torch.zeros(batch, 1, dtype=torch.long, device=device)  # (B, 1)
        self.slot = torch.zeros(1, dtype=torch.long, device=device)  # (1,)
        self.mask = key_valid[:, None, None, :]  # (B, 1, 1, S) a view
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None

    def _run(self) -> torch.Tensor:
        return _forward(self.dec, self.cache, self.ids, self.positions, self.slot, self.mask)

    def _capture(self) -> None:
        """Warm up on a side stream (the warm-up writes this step's own keys and values: the replay writes
        the same), then capture the step."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self._run()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self._run()

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, slot: int) -> torch.Tensor:
        """The logits (B, V) after feeding ``tokens`` (B,) at ``positions`` (B,) into cache slot ``slot``."""
        self.ids.copy_(tokens[:, None])
        self.positions.copy_(positions[:, None])
        self.slot.fill_(slot)
        if self.ids.device.type != "cuda":
            return self._run()
        if self.graph is None:
            self._capture()
        self.graph.replay()
        return self.logits


@torch.no_grad()
def _sample_native(model, stopper: _Stopper, prompt_ids, group_size, config, seed, pad_id, static=None):
    """Raw completions and behaviour log-probs from the native decode loop.

    ``static``: decode with the static step (``StaticDecode``: fixed shapes, no compaction,
    captured once as a CUDA graph on a GPU); None chooses it on a CUDA device unless
    ``COUNTDOWN_STUDY_CUDA_GRAPHS=0`` (``use_static``), the eager loop elsewhere."""
    device = model_device(model)
    ids, mask = left_pad(prompt_ids, pad_id, device)  # (P, L)
    num, width, new = len(prompt_ids) * group_size, ids.shape[1], config.max_new_tokens
    length = width + new - 1  # the last sampled token is never fed back
    dec = _decoder_weights(model, DTYPES[config.dtype], max(length, 1))
    static = use_static(device) if static is None else static
    cache = _prompt_cache(dec, len(prompt_ids), width)
    logits = _forward(dec, cache, ids, positions_from_mask(mask), 0, _prefill_mask(mask))  # (P, V)
    # Each prompt was encoded once; its G samples share copies of its cache.
    cache = _share_prompt_cache(cache, group_size, width, length, zeroed=static)
    logits = logits.repeat_interleave(group_size, 0)  # (N, V)
    key_valid = torch.zeros(num, length, dtype=torch.bool, device=device)  # (N, S) written, non-pad slots
    key_valid[:, :width] = mask.repeat_interleave(group_size, 0)
    next_pos = mask.sum(-1).repeat_interleave(group_size)  # (N,)
    rows = torch.arange(num, device=device)  # (B,) sample index of each batch row
    live = torch.ones(num, dtype=torch.bool, device=device)  # (B,)
    out_tokens = torch.full((num, new), pad_id, dtype=torch.long, device=device)  # (N, new)
    out_logprobs = torch.zeros(num, new, device=device)  # (N, new)
    lengths = torch.zeros(num, dtype=torch.long, device=device)  # (N,)
    generator = torch.Generator(device=HOST).manual_seed(seed)  # on the host: the same draws on every device
    graph = StaticDecode(dec, cache, key_valid) if static else None
    for step in range(new):
        # One uniform per sample and step: a sample's draws do not depend on when other samples stop.
        uniforms = torch.rand(num, generator=generator, dtype=torch.float64, device=HOST).to(device)[rows]
        tokens, logprobs = draw_tokens(logits, uniforms, config)  # (B,), (B,)
        live_rows = rows[live]
        out_tokens[live_rows, step] = tokens[live]
        out_logprobs[live_rows, step] = logprobs[live]
        lengths[live_rows] += 1
        live &= ~stopper.done(tokens, rows, live)
        if step == new - 1 or not live.any():
            break
        if graph is None and live.sum() <= COMPACT_FRACTION * len(live):
            keep = live.nonzero().flatten()  # (B',)
            cache = _compact_cache(cache, keep, width + step)
            key_valid, next_pos, rows, tokens = key_valid[keep], next_pos[keep], rows[keep], tokens[keep]
            live = torch.ones(len(keep), dtype=torch.bool, device=device)
        slot = width + step
        key_valid[:, slot] = True
        if graph is None:
            attn_mask = key_valid[:, None, None, : slot + 1]  # (B, 1, 1, span) the filled slots
            logits = _forward(dec, cache, tokens[:, None], next_pos[:, None], slot, attn_mask)
        else:
            logits = graph.step(tokens, next_pos, slot)
        next_pos = next_pos + 1
    out_tokens, out_logprobs, lengths = out_tokens.to(HOST), out_logprobs.to(HOST), lengths.to(HOST)
    completions = [out_tokens[i, : lengths[i]].tolist() for i in range(num)]
    return completions, [out_logprobs[i, : lengths[i]] for i in range(num)]
