"""Shared rollout pieces: the ``Rollouts`` result, prompt encoding, padding, stopping, the sampling math,
and ``sequence_logprobs`` (full-forward log-probs, the trainer's side).

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
completion tokens, differentiable when called under grad. With ``chunk_tokens`` the vocabulary
projection runs over the real completion tokens a chunk at a time (``rollout.projection``), each chunk's
logits recomputed in the backward pass, so a micro-batch never holds its full ``(N, T, V)`` float32 logits
(a 151,936-token vocabulary at 64 x 256 tokens is 10 GB per copy); the values are those of the
full-logits path to float rounding.

Devices: tensors are placed on the model's device (``model_device``); token lists are padded on the host
and moved once (``left_pad``); results (``Rollouts`` log-probs) are stored on the host (``HOST``).

Stopping lives in ``rollout.stopping`` and the sampling math in ``rollout.draws``; both are importable
from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from countdown_study.rollout.draws import draw_tokens as draw_tokens
from countdown_study.rollout.draws import filter_top_k_top_p as filter_top_k_top_p
from countdown_study.rollout.draws import inverse_cdf_sample as inverse_cdf_sample
from countdown_study.rollout.projection import chunked_token_logprobs as chunked_token_logprobs
from countdown_study.rollout.stopping import _Stopper
from countdown_study.rollout.stopping import single_token_id as single_token_id

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""The torch dtype of each ``SamplingConfig.dtype`` name (``rollout.sampling.DTYPE_NAMES``)."""
HOST = torch.device("cpu")
"""Where results are stored (``Rollouts`` log-probs and token ids) and token lists are staged before they
move to the model's device: the one place the library names the CPU for a tensor."""


def model_device(model) -> torch.device:
    """The device of the model's (first) parameters: where sampling places its tensors."""
    return next(model.parameters()).device


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

    def take_groups(self, groups: Sequence[int]) -> Rollouts:
        """The rollouts of some prompts (``groups``: prompt indices, in the order wanted)."""
        samples = [p * self.group_size + g for p in groups for g in range(self.group_size)]
        return Rollouts(
            prompts=[self.prompts[p] for p in groups],
            group_size=self.group_size,
            prompt_ids=[self.prompt_ids[p] for p in groups],
            completion_ids=[self.completion_ids[i] for i in samples],
            texts=[self.texts[i] for i in samples],
            logprobs=[self.logprobs[i] for i in samples] if self.logprobs else [],
            finish_reasons=[self.finish_reasons[i] for i in samples] if self.finish_reasons else [],
            engine=self.engine,
        )

    @staticmethod
    def concat(parts: Sequence[Rollouts]) -> Rollouts:
        """Rollouts of several batches of one group size, prompt after prompt."""
        if not parts or len({r.group_size for r in parts}) != 1:
            raise ValueError("concat needs at least one batch, all of one group size")
        return Rollouts(
            prompts=[x for r in parts for x in r.prompts],
            group_size=parts[0].group_size,
            prompt_ids=[x for r in parts for x in r.prompt_ids],
            completion_ids=[x for r in parts for x in r.completion_ids],
            texts=[x for r in parts for x in r.texts],
            logprobs=[x for r in parts for x in r.logprobs],
            finish_reasons=[x for r in parts for x in r.finish_reasons],
            engine=parts[0].engine,
        )

    def padded_logprobs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Behaviour log-probs right-padded with 0, laid out like ``sequence_logprobs``: (N, T), mask (N, T)."""
        width = max(len(lp) for lp in self.logprobs)
        values = torch.zeros(len(self.logprobs), width, device=HOST)  # (N, T)
        mask = torch.zeros(len(self.logprobs), width, dtype=torch.bool, device=HOST)  # (N, T)
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


def left_pad(
    sequences: Sequence[Sequence[int]], pad_id: int, device: torch.device | str = HOST
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists: ids (B, L) and attention mask (B, L) on ``device``.

    Rows are written on the host and the two tensors moved once (row by row on a GPU would be one
    small copy per row).
    """
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long, device=HOST)  # (B, L)
    mask = torch.zeros(len(sequences), width, dtype=torch.bool, device=HOST)  # (B, L)
    for i, s in enumerate(sequences):
        if len(s):
            ids[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long, device=HOST)
            mask[i, width - len(s) :] = True
    return ids.to(device), mask.to(device)


def positions_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """Position ids counting only real tokens (pads get 0): (B, L) -> (B, L)."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


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
    logprobs = [
        lp[: len(ids)].float().to(HOST).clone() for lp, ids in zip(raw_logprobs, completion_ids, strict=True)
    ]
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


def _check_inputs(prompts, group_size: int) -> None:
    """Clear errors for the common mistakes."""
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of strings, not one string")
    if len(prompts) == 0:
        raise ValueError("prompts is empty")
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")


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


CHUNKED_MODEL_TYPES = ("qwen2", "qwen3", "llama", "mistral")
"""Architectures whose logits are exactly ``lm_head(decoder(...).last_hidden_state)`` (no soft-capping or
scaling after the head), the condition of ``sequence_logprobs``' chunked path."""


def _check_chunkable(model) -> None:
    """Chunked log-probs read the decoder's hidden states and apply the head themselves; refuse others."""
    model_type = getattr(model.config, "model_type", None)
    if model_type not in CHUNKED_MODEL_TYPES:
        raise ValueError(
            f"chunked log-probs support {CHUNKED_MODEL_TYPES} models, not {model_type!r}; use chunk_tokens=0"
        )


def sequence_logprobs(
    model,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    temperature: float = 1.0,
    with_entropy: bool = False,
    pad_id: int | None = None,
    chunk_tokens: int = 0,
) -> TokenLogprobs:
    """Log-probs of each completion given its prompt, from one forward over the whole batch.

    Layout (N, Lp + T): ``[left pad | prompt | completion | right pad]`` with explicit position ids and an
    attention mask, so padding changes nothing. The autograd graph is kept when called under grad.
    ``chunk_tokens`` > 0: the vocabulary projection runs ``chunk_tokens`` completion tokens at a time
    (``chunked_token_logprobs``; Qwen2-style models, ``CHUNKED_MODEL_TYPES``); 0: one full-logits forward.
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"{len(prompt_ids)} prompts for {len(completion_ids)} completions")
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError("every prompt needs at least one token")
    if chunk_tokens < 0:
        raise ValueError(f"chunk_tokens must be >= 0 (0: full logits), got {chunk_tokens}")
    device = model_device(model)
    pad = pad_id if pad_id is not None else (getattr(model.config, "pad_token_id", None) or 0)
    prompts, prompt_mask = left_pad(prompt_ids, pad, device)  # (N, Lp)
    width = max(len(c) for c in completion_ids)
    completions, completion_mask = left_pad([list(c)[::-1] for c in completion_ids], pad, device)
    completions, completion_mask = completions.flip(-1), completion_mask.flip(-1)  # (N, T) right-padded
    if width == 0:
        empty = torch.zeros(len(completion_ids), 0, device=device)
        return TokenLogprobs(empty, completion_mask, empty.clone() if with_entropy else None)
    ids = torch.cat([prompts, completions], dim=1)  # (N, Lp + T)
    mask = torch.cat([prompt_mask, completion_mask], dim=1)  # (N, Lp + T)
    inputs = {"input_ids": ids, "attention_mask": mask.long(), "position_ids": positions_from_mask(mask)}
    if chunk_tokens:
        _check_chunkable(model)
        states = model.get_decoder()(**inputs, use_cache=False).last_hidden_state  # (N, Lp + T, C)
        hidden = states[:, -(width + 1) : -1]  # (N, T, C): position j predicts completion token j
        logprobs, entropy = chunked_token_logprobs(
            hidden, completions, completion_mask, model.get_output_embeddings(), temperature, with_entropy,
            chunk_tokens,
        )  # fmt: skip
        return TokenLogprobs(logprobs=logprobs, mask=completion_mask, entropy=entropy)
    out = model(**inputs, logits_to_keep=width + 1, use_cache=False)
    logits = out.logits[:, :-1].float() / temperature  # (N, T, V): position j predicts completion token j
    logp_all = torch.log_softmax(logits, dim=-1)  # (N, T, V)
    logprobs = logp_all.gather(-1, completions[..., None]).squeeze(-1) * completion_mask  # (N, T)
    entropy = None
    if with_entropy:
        entropy = -(logp_all.exp() * logp_all).sum(-1) * completion_mask  # (N, T)
    return TokenLogprobs(logprobs=logprobs, mask=completion_mask, entropy=entropy)
