"""Chunked log-probs (``sequence_logprobs(chunk_tokens=...)``): the values and gradients of the
full-logits path, without ever holding a micro-batch's full logits."""

from dataclasses import replace

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import Qwen2Config, Qwen2ForCausalLM

from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import Rollouts, chunked_token_logprobs, sequence_logprobs
from countdown_study.rollout.projection import project_chunk
from countdown_study.runs.files import canonical_json
from countdown_study.training.loop import TrainConfig, policy_update
from countdown_study.training.rloo import is_checkpointing

VOCAB = 1000


def wide_model(seed: int = 0) -> Qwen2ForCausalLM:
    """A tiny Qwen2 with a 1,000-token vocabulary (the embedded one has 31), random weights."""
    config = Qwen2Config(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128, tie_word_embeddings=False, pad_token_id=0,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Qwen2ForCausalLM(config).eval()


def batch(seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    """Prompts and completions of varied lengths (one empty completion): 6 sequences."""
    rng = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(1, VOCAB, (int(n),), generator=rng).tolist() for n in (3, 7, 5, 2, 6, 4)]
    completions = [torch.randint(1, VOCAB, (int(n),), generator=rng).tolist() for n in (9, 2, 0, 6, 13, 1)]
    return prompts, completions


def run(model, chunk_tokens: int, autocast: bool, temperature: float = 0.7):
    """Log-probs, entropies and the gradient of a loss of both, by one path."""
    model.zero_grad(set_to_none=True)
    prompts, completions = batch()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = sequence_logprobs(
            model, prompts, completions, temperature, with_entropy=True, chunk_tokens=chunk_tokens
        )
    loss = (out.logprobs * torch.linspace(-1, 1, out.logprobs.shape[1])).sum() + 0.3 * out.entropy.sum()
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in model.parameters()])
    return out, grad


@pytest.mark.parametrize("chunk_tokens", [1, 4, 7, 1000])
def test_chunked_logprobs_equal_the_full_logits_path(chunk_tokens):
    """Equal to float rounding: the chunks' log-probs are ``z - logsumexp(z)``, their entropies
    ``logsumexp(z) - sum(p z)`` and their gradients written out (``rollout.projection``), where the full
    path lets autograd differentiate ``log_softmax``."""
    model = wide_model()
    (full, full_grad), (chunked, chunked_grad) = run(model, 0, False), run(model, chunk_tokens, False)
    assert torch.equal(chunked.mask, full.mask)
    assert torch.allclose(chunked.logprobs, full.logprobs, rtol=1e-6, atol=1e-6)
    assert torch.allclose(chunked.entropy, full.entropy, rtol=1e-6, atol=1e-6)
    assert (chunked.logprobs[~chunked.mask] == 0).all() and (chunked.entropy[~chunked.mask] == 0).all()
    assert ((chunked_grad - full_grad).norm() / full_grad.norm()).item() < 1e-6


@pytest.mark.parametrize("with_entropy", [True, False])
@pytest.mark.parametrize("with_bias", [True, False])
def test_the_projections_written_out_gradients_are_autograds_in_float64(with_entropy, with_bias):
    """``project_chunk``'s backward pass against autograd through ``log_softmax`` of the same logits, in
    float64 (where rounding cannot hide a wrong term): hidden states, head weight and bias."""
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(7, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(11, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(11, generator=gen, dtype=torch.float64, requires_grad=True) if with_bias else None
    targets = torch.randint(0, 11, (7,), generator=gen)
    a, b = (
        torch.randn(7, generator=gen, dtype=torch.float64),
        torch.randn(7, generator=gen, dtype=torch.float64),
    )
    inputs = [t for t in (hidden, weight, bias) if t is not None]

    logprobs, entropy = project_chunk(hidden, targets, weight, bias, 0.7, with_entropy)
    loss = (logprobs * a).sum() + ((entropy * b).sum() if with_entropy else 0)
    ours = torch.autograd.grad(loss, inputs)
    logp_all = torch.log_softmax(torch.nn.functional.linear(hidden, weight, bias) / 0.7, dim=-1)
    expected_lp = logp_all.gather(-1, targets[:, None]).squeeze(-1)
    expected_h = -(logp_all.exp() * logp_all).sum(-1)
    loss = (expected_lp * a).sum() + ((expected_h * b).sum() if with_entropy else 0)
    reference = torch.autograd.grad(loss, inputs)
    assert torch.allclose(logprobs, expected_lp, rtol=0, atol=1e-12)
    assert (
        entropy.numel() == 0 if not with_entropy else torch.allclose(entropy, expected_h, rtol=0, atol=1e-12)
    )
    for got, want in zip(ours, reference, strict=True):
        assert torch.allclose(got, want, rtol=0, atol=1e-12)


def test_chunked_logprobs_under_bf16_autocast():
    model = wide_model()
    (full, full_grad), (chunked, chunked_grad) = run(model, 0, True), run(model, 5, True)
    assert torch.allclose(chunked.logprobs, full.logprobs, rtol=1e-6, atol=1e-6)
    assert torch.allclose(chunked.entropy, full.entropy, rtol=1e-6, atol=1e-6)
    # The head's weight gradient is rounded to bf16 once per chunk before the chunks are summed (0.2% here).
    assert ((chunked_grad - full_grad).norm() / full_grad.norm()).item() < 1e-2


def test_without_grad_the_chunked_path_gives_the_same_values():
    model = wide_model()
    prompts, completions = batch()
    with torch.no_grad():
        full = sequence_logprobs(model, prompts, completions)
        chunked = sequence_logprobs(model, prompts, completions, chunk_tokens=3)
    assert chunked.entropy is None and not chunked.logprobs.requires_grad
    assert torch.allclose(chunked.logprobs, full.logprobs, rtol=0, atol=1e-6)


class LargestVocabularyTensor(TorchDispatchMode):
    """Records the most rows of any tensor an op makes whose last dimension is the vocabulary (forward
    and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else (out,):
            is_logits = isinstance(tensor, torch.Tensor) and tensor.dim() > 1 and tensor.shape[-1] == VOCAB
            if is_logits and tuple(tensor.shape) != (32, VOCAB):  # (32, V): the head's weight, transposed
                self.rows = max(self.rows, tensor.numel() // VOCAB)
        return out


@pytest.mark.parametrize("chunk_tokens, most_rows", [(0, 6 * 14), (4, 4)])
def test_the_chunked_path_never_holds_more_than_a_chunk_of_logits(chunk_tokens, most_rows):
    """Full logits are (N, T + 1, V) = 6 x 14 rows; chunked ones at most ``chunk_tokens`` rows at a time,
    in the backward pass too (the chunk is recomputed there)."""
    model = wide_model()
    with LargestVocabularyTensor() as largest:
        run(model, chunk_tokens, False)
    assert largest.rows == most_rows


def test_chunked_token_logprobs_of_given_hidden_states():
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 50, bias=True)
    hidden = torch.randn(3, 4, 8, requires_grad=True)  # (N, T, C)
    targets = torch.randint(0, 50, (3, 4))
    valid = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    logprobs, entropy = chunked_token_logprobs(hidden, targets, valid, head, 1.3, True, chunk_tokens=2)
    logp_all = torch.log_softmax(head(hidden) / 1.3, dim=-1)  # (N, T, V)
    expected = logp_all.gather(-1, targets[..., None]).squeeze(-1) * valid
    assert torch.allclose(logprobs, expected, atol=1e-6)
    assert torch.allclose(entropy, -(logp_all.exp() * logp_all).sum(-1) * valid, atol=1e-6)
    assert logprobs.requires_grad and entropy.requires_grad


def update_batch() -> tuple[Rollouts, torch.Tensor, RLOOConfig]:
    """Two prompts x three samples of ``batch()`` (every sequence with a completion token), their advantages
    and a loss with KL and entropy terms: the input of the update tests."""
    prompts, completions = batch()
    completions[2] = [5]
    rollouts = Rollouts(
        prompts=["a", "b"], group_size=3, prompt_ids=[prompts[0], prompts[3]], completion_ids=completions,
        texts=[""] * 6, logprobs=[torch.full((len(c),), -7.0) for c in completions],
    )  # fmt: skip
    advantages = torch.tensor([[0.5, -1.0, 0.5], [1.0, 0.2, -1.2]])
    return rollouts, advantages, RLOOConfig(kl_coef=0.05, entropy_coef=0.01)


def test_an_update_with_chunked_logprobs_is_the_full_logits_update():
    rollouts, advantages, loss = update_batch()
    weights, stats = [], []
    for chunk in (0, 5):
        model, ref_model = wide_model(), wide_model(seed=1)
        config = replace(TrainConfig(micro_batch=4, autocast=False, loss=loss), logprob_chunk=chunk)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        stats.append(policy_update(model, ref_model, optimizer, rollouts, advantages, config))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert not torch.equal(weights[0], torch.cat([p.flatten() for p in wide_model().parameters()]))
    assert torch.allclose(weights[0], weights[1], rtol=0, atol=1e-6)
    for key in ("loss", "kl", "entropy", "ratio_mean"):
        assert stats[1][key] == pytest.approx(stats[0][key], rel=1e-6, abs=1e-7), key


@pytest.mark.parametrize("autocast", [False, True])
def test_an_update_with_gradient_checkpointing_is_the_plain_update(autocast):
    """The layers' activations recomputed in the backward pass: the same weights after the step (exactly in
    float32; to bf16 rounding under autocast) and the same statistics; the run id is unchanged while off."""
    rollouts, advantages, loss = update_batch()
    weights, stats, flags = [], [], []
    for checkpointing in (False, True):
        model, ref_model = wide_model(), wide_model(seed=1)
        config = TrainConfig(
            micro_batch=4, autocast=autocast, loss=loss, gradient_checkpointing=checkpointing
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        stats.append(policy_update(model, ref_model, optimizer, rollouts, advantages, config))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
        flags.append(is_checkpointing(model))
    assert flags == [False, True]
    assert not torch.equal(weights[0], torch.cat([p.flatten() for p in wide_model().parameters()]))
    assert torch.allclose(weights[0], weights[1], rtol=0, atol=0 if not autocast else 1e-6)
    for key in ("loss", "kl", "entropy", "ratio_mean"):
        assert stats[1][key] == pytest.approx(stats[0][key], rel=1e-6, abs=1e-7), key
    assert "gradient_checkpointing" not in canonical_json(TrainConfig())
    assert "gradient_checkpointing" in canonical_json(TrainConfig(gradient_checkpointing=True))


def test_chunked_logprobs_refuse_unknown_architectures_and_negative_chunks():
    model = wide_model()
    prompts, completions = batch()
    with pytest.raises(ValueError, match="chunk_tokens must be >= 0"):
        sequence_logprobs(model, prompts, completions, chunk_tokens=-1)
    model.config.model_type = "gemma2"  # soft-capped logits: the head alone is not the logits
    with pytest.raises(ValueError, match="chunked log-probs support .* not 'gemma2'"):
        sequence_logprobs(model, prompts, completions, chunk_tokens=4)
    with pytest.raises(ValueError, match="logprob_chunk must be >= 0"):
        TrainConfig(logprob_chunk=-4)
