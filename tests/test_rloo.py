"""RLOO: advantages against a plain loop, worked loss values, KL estimators, a tiny-model training step."""

import copy
import math
from dataclasses import replace

import pytest
import torch

from countdown_study.countdown.prompts import format_prompt
from countdown_study.objectives.rloo import (
    RLOOConfig,
    aggregate,
    importance_weights,
    kl_per_token,
    rloo_advantages,
    rloo_loss,
)
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import SamplingConfig, sample, sequence_logprobs

POLICY_ONLY = RLOOConfig(kl_coef=0.0, entropy_coef=0.0)


# ---------------------------------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------------------------------


def test_advantages_worked_example():
    # One correct sample of four: it gets 1 - 0, the others 0 - 1/3.
    adv = rloo_advantages(torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64))
    assert adv.tolist() == [[1.0, -1 / 3, -1 / 3, -1 / 3]]


def test_advantages_match_plain_loop():
    gen = torch.Generator().manual_seed(0)
    rewards = torch.rand(6, 5, generator=gen, dtype=torch.float64)  # (P, G)
    batched = rloo_advantages(rewards)
    for p in range(6):
        for i in range(5):
            others = [rewards[p, j].item() for j in range(5) if j != i]
            expected = rewards[p, i].item() - sum(others) / len(others)
            assert batched[p, i].item() == pytest.approx(expected, abs=1e-12)


def test_advantages_group_properties():
    rewards = torch.tensor([[0.1, 1.0, 0.0], [1.0, 1.0, 1.0]])
    adv = rloo_advantages(rewards)
    assert torch.allclose(adv.sum(dim=1), torch.zeros(2), atol=1e-6)  # zero-sum per group
    assert adv[1].tolist() == [0.0, 0.0, 0.0]  # a uniform group carries no signal
    assert torch.allclose(rloo_advantages(rewards + 5.0), adv, atol=1e-5)  # shift invariant


def test_advantages_accept_integer_rewards():
    assert rloo_advantages(torch.tensor([[1, 0]])).tolist() == [[1.0, -1.0]]


@pytest.mark.parametrize(
    ("rewards", "message"),
    [(torch.zeros(4), r"\(P, G\)"), (torch.zeros(2, 2, 2), r"\(P, G\)"), (torch.zeros(3, 1), "at least 2")],
)
def test_advantages_errors(rewards, message):
    with pytest.raises(ValueError, match=message):
        rloo_advantages(rewards)


# ---------------------------------------------------------------------------------------------------
# KL, entropy, aggregation
# ---------------------------------------------------------------------------------------------------


def test_kl_estimators_known_values():
    # pi = 1/2, pi_ref = 1/4 on the sampled token: r = pi_ref / pi = 1/2.
    logp, ref = torch.tensor([[math.log(0.5)]]), torch.tensor([[math.log(0.25)]])
    assert kl_per_token(logp, ref, "k1").item() == pytest.approx(math.log(2))  # -log r
    assert kl_per_token(logp, ref, "k3").item() == pytest.approx(-0.5 + math.log(2))  # r - 1 - log r
    # pi = 1/4, pi_ref = 1/2: k1 is negative, k3 stays non-negative.
    assert kl_per_token(ref, logp, "k1").item() == pytest.approx(-math.log(2))
    assert kl_per_token(ref, logp, "k3").item() == pytest.approx(1.0 - math.log(2))
    same = torch.tensor([[-0.7, -2.0]])
    assert kl_per_token(same, same, "k3").tolist() == [[0.0, 0.0]]
    with pytest.raises(ValueError, match="kl_estimator"):
        kl_per_token(same, same, "k2")


def test_k1_k3_are_unbiased_for_the_exact_kl():
    # Over the exact distribution pi, E_pi[k1] = E_pi[k3] = KL(pi || pi_ref).
    pi = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    ref = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
    exact = (pi * (pi / ref).log()).sum()
    for estimator in ("k1", "k3"):
        per_token = kl_per_token(pi.log()[None], ref.log()[None], estimator)[0]
        assert (pi * per_token).sum().item() == pytest.approx(exact.item(), abs=1e-12)


def test_aggregate_token_mean_and_sum_ignore_padding():
    values = torch.tensor([[1.0, 3.0], [4.0, float("-inf")]])  # second row padded after one token
    mask = torch.tensor([[1, 1], [1, 0]])
    assert aggregate(values, mask, "token_mean").item() == pytest.approx((2.0 + 4.0) / 2)
    assert aggregate(values, mask, "token_sum").item() == pytest.approx((4.0 + 4.0) / 2)
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(values, mask, "batch")


# ---------------------------------------------------------------------------------------------------
# Loss: worked example
# ---------------------------------------------------------------------------------------------------


def _worked_batch():
    """Two sequences; the second is one token long. Advantages +1 and -1."""
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -9.0]], requires_grad=True)  # (N, T)
    mask = torch.tensor([[True, True], [True, False]])
    advantages = torch.tensor([1.0, -1.0])
    return logp, mask, advantages


def test_policy_loss_worked_example_on_policy():
    logp, mask, adv = _worked_batch()
    loss, stats = rloo_loss(logp, mask, adv, POLICY_ONLY)
    # token_mean: (-1 * mean(-1, -2) + 1 * (-0.5)) / 2 = (1.5 - 0.5) / 2.
    assert loss.item() == pytest.approx(0.5)
    assert stats["ratio_mean"] == 1.0 and stats["clipped_frac"] == 0.0
    summed, _ = rloo_loss(logp, mask, adv, RLOOConfig(kl_coef=0.0, entropy_coef=0.0, aggregation="token_sum"))
    assert summed.item() == pytest.approx((3.0 - 0.5) / 2)


def _loss_by_loop(logp, mask, adv, behaviour, ref, entropies, config):
    """The loss written per sequence: ``-w_i A_i log pi(y_i|x) + kl_coef sum_t KL_t - entropy_coef sum_t H_t``
    with ``log pi(y_i|x)`` the sum of its token log-probs (the reports' sequence sum), each term divided by
    the sequence's length for the token mean, then averaged over the N sequences."""
    terms = []
    for i in range(logp.shape[0]):
        tokens = [t for t in range(logp.shape[1]) if mask[i, t]]
        seq_logp = sum(logp[i, t] for t in tokens)
        log_ratio = (seq_logp - sum(behaviour[i, t] for t in tokens)).item()
        w = math.exp(min(log_ratio, math.log(config.ratio_clip)))  # a number: no gradient through w
        kl = sum(torch.exp(ref[i, t] - logp[i, t]) - (ref[i, t] - logp[i, t]) - 1 for t in tokens)  # k3
        entropy = sum(entropies[i, t] for t in tokens)
        term = -w * adv[i].item() * seq_logp + config.kl_coef * kl - config.entropy_coef * entropy
        terms.append(term / len(tokens) if config.aggregation == "token_mean" else term)
    return sum(terms) / len(terms)


@pytest.mark.parametrize("aggregation", ["token_sum", "token_mean"])
def test_loss_equals_a_plain_per_sequence_loop(aggregation):
    gen = torch.Generator().manual_seed(3)
    n, width = 6, 5
    logp = (-3 * torch.rand(n, width, generator=gen)).requires_grad_(True)  # (N, T)
    lengths = torch.tensor([5, 1, 3, 4, 2, 5])
    mask = torch.arange(width)[None, :] < lengths[:, None]  # (N, T) right-padded
    adv = rloo_advantages(torch.rand(2, 3, generator=gen)).reshape(-1)  # (N,)
    behaviour = logp.detach() + 0.3 * torch.randn(n, width, generator=gen)  # some ratios past the cap
    ref = logp.detach() - 0.2 * torch.rand(n, width, generator=gen)
    entropies = torch.rand(n, width, generator=gen)
    config = RLOOConfig(kl_coef=0.05, entropy_coef=0.01, aggregation=aggregation)

    loss, stats = rloo_loss(logp, mask, adv, config, behaviour, ref, entropies)
    (grad,) = torch.autograd.grad(loss, logp)
    reference = _loss_by_loop(logp, mask, adv, behaviour, ref, entropies, config)
    (reference_grad,) = torch.autograd.grad(reference, logp)

    assert 0.0 < stats["clipped_frac"] < 1.0  # the cap is exercised on some sequences, not all
    assert loss.item() == pytest.approx(reference.item(), rel=1e-5, abs=1e-6)
    assert torch.allclose(grad, reference_grad, atol=1e-6)
    assert torch.all(grad[~mask] == 0)  # padding carries no gradient


def test_sequence_sum_scales_each_sequences_gradient_by_its_length():
    # With the policy term alone and w = 1, the sum's gradient is the mean's times the sequence length.
    logp, mask, adv = _worked_batch()
    summed, _ = rloo_loss(logp, mask, adv, replace(POLICY_ONLY, aggregation="token_sum"))
    (grad_sum,) = torch.autograd.grad(summed, logp)
    averaged, _ = rloo_loss(logp, mask, adv, POLICY_ONLY)
    (grad_mean,) = torch.autograd.grad(averaged, logp)
    lengths = mask.sum(dim=1, keepdim=True).float()  # (N, 1): 2 and 1
    assert torch.allclose(grad_sum, grad_mean * lengths)
    assert grad_sum.tolist() == [[-0.5, -0.5], [0.5, 0.0]]  # -A_i / N on each valid token


def test_importance_ratio_truncated_and_detached():
    logp, mask, adv = _worked_batch()
    # log pi - log mu: sequence 0: -3 - (-3.5) = 0.5; sequence 1: -0.5 - (-2) = 1.5 > log 2 (truncated).
    behaviour = torch.tensor([[-1.0, -2.5], [-2.0, 123.0]])  # padding value never read
    loss, stats = rloo_loss(logp, mask, adv, POLICY_ONLY, behaviour_logprobs=behaviour)
    w0 = math.exp(0.5)
    assert loss.item() == pytest.approx((w0 * 1.5 - 2.0 * 0.5) / 2)
    assert stats["ratio_max"] == pytest.approx(math.exp(1.5))
    assert stats["ratio_min"] == pytest.approx(w0)
    assert stats["clipped_frac"] == 0.5
    loss.backward()
    # A detached weight: d loss / d logp_t = -w A / (len * N), with no derivative of w itself.
    expected = torch.tensor([[-w0 / 4, -w0 / 4], [2.0 / 2, 0.0]])
    assert torch.allclose(logp.grad, expected, atol=1e-6)


def test_importance_weights_log_space_no_overflow():
    # A log-ratio of 1000 would overflow exp; truncation in log space gives exactly C.
    w, log_ratio = importance_weights(torch.tensor([0.0, 0.0]), torch.tensor([-1000.0, 1000.0]), 2.0)
    assert w.tolist() == pytest.approx([2.0, 0.0])
    assert log_ratio.tolist() == [1000.0, -1000.0]


def test_kl_and_entropy_terms_enter_with_their_signs():
    logp, mask, _ = _worked_batch()
    ref = logp.detach() - 0.25  # k1 = 0.25 on every token
    entropies = torch.tensor([[1.0, 2.0], [4.0, 100.0]])  # token_mean entropy = (1.5 + 4) / 2
    config = RLOOConfig(kl_coef=0.5, entropy_coef=0.1, kl_estimator="k1")
    loss, stats = rloo_loss(logp, mask, torch.zeros(2), config, ref_logprobs=ref, entropies=entropies)
    assert stats["kl"] == pytest.approx(0.25) and stats["entropy"] == pytest.approx(2.75)
    assert loss.item() == pytest.approx(0.5 * 0.25 - 0.1 * 2.75)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kl_coef": 0.1}, "needs ref_logprobs"),
        ({"entropy_coef": 0.1}, "token entropies"),
    ],
)
def test_loss_errors_name_missing_inputs(kwargs, message):
    logp, mask, adv = _worked_batch()
    config = RLOOConfig(**{"kl_coef": 0.0, "entropy_coef": 0.0, **kwargs})
    with pytest.raises(ValueError, match=message):
        rloo_loss(logp, mask, adv, config)


def test_loss_shape_errors():
    logp, mask, _ = _worked_batch()
    with pytest.raises(ValueError, match="3 advantages for 2 sequences"):
        rloo_loss(logp, mask, torch.zeros(3), POLICY_ONLY)
    with pytest.raises(ValueError, match="mask shape"):
        rloo_loss(logp, mask[:, :1], torch.zeros(2), POLICY_ONLY)
    with pytest.raises(ValueError, match="behaviour_logprobs shape"):
        rloo_loss(logp, mask, torch.zeros(2), POLICY_ONLY, behaviour_logprobs=torch.zeros(2, 3))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kl_estimator": "k2"}, "kl_estimator"),
        ({"aggregation": "mean"}, "aggregation"),
        ({"ratio_clip": 0.5}, "ratio_clip must be >= 1"),
        ({"kl_coef": -1.0}, "must be >= 0"),
    ],
)
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RLOOConfig(**kwargs)


# ---------------------------------------------------------------------------------------------------
# A training step on a tiny model
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_rollouts():
    """A tiny random policy, its frozen copy, and 2 prompts x 4 samples drawn from it at temperature 1."""
    tokenizer = build_tokenizer()
    cfg = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    model = build_model(tokenizer, cfg, seed=0)
    reference = copy.deepcopy(model).eval().requires_grad_(False)
    prompts = [format_prompt((12, 34, 56), 78), format_prompt((21, 43, 65), 87)]
    rollouts = sample(model, tokenizer, prompts, 4, SamplingConfig(max_new_tokens=8), seed=0)
    return model, reference, rollouts


def _logprobs(model, rollouts, with_entropy=False):
    return sequence_logprobs(
        model, rollouts.sample_prompt_ids, rollouts.completion_ids, temperature=1.0, with_entropy=with_entropy
    )


def test_on_policy_samples_have_unit_importance_ratio(tiny_rollouts):
    # Sampled from the very model being trained: log pi - log mu is rounding noise, nothing is clipped.
    model, _, rollouts = tiny_rollouts
    with torch.no_grad():
        current = _logprobs(model, rollouts)
    behaviour, mask = rollouts.padded_logprobs()
    assert torch.equal(mask, current.mask)
    _, stats = rloo_loss(current.logprobs, mask, torch.ones(8), POLICY_ONLY, behaviour_logprobs=behaviour)
    assert stats["ratio_min"] == pytest.approx(1.0, abs=1e-4)
    assert stats["ratio_max"] == pytest.approx(1.0, abs=1e-4)
    assert stats["clipped_frac"] == 0.0


def test_training_step_changes_parameters_and_lowers_policy_loss(tiny_rollouts):
    model, reference, rollouts = tiny_rollouts
    model = copy.deepcopy(model)  # keep the fixture's policy intact
    rewards = torch.tensor([[1.0, 0.0, 0.1, 0.0], [0.0, 0.0, 1.0, 0.1]])  # (P, G)
    advantages = rloo_advantages(rewards)  # (P, G)
    behaviour, mask = rollouts.padded_logprobs()  # (N, T), (N, T)

    current = _logprobs(model, rollouts, with_entropy=True)
    with torch.no_grad():
        ref_logp = _logprobs(reference, rollouts).logprobs  # (N, T)
    config = RLOOConfig(kl_coef=0.01, entropy_coef=0.01)
    loss, stats = rloo_loss(current.logprobs, mask, advantages, config, behaviour, ref_logp, current.entropy)
    assert torch.isfinite(loss)
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)  # the policy still equals the reference
    assert stats["entropy"] > 0.0

    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    optimizer.zero_grad()
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    optimizer.step()
    changed = [name for name, p in model.named_parameters() if not torch.equal(before[name], p.detach())]
    assert len(changed) == len(before)

    # The step moves probability towards positive-advantage samples: the on-policy term drops.
    with torch.no_grad():
        new_logp = _logprobs(model, rollouts).logprobs
    old_policy, _ = rloo_loss(ref_logp, mask, advantages, POLICY_ONLY)
    new_policy, new_stats = rloo_loss(new_logp, mask, advantages, POLICY_ONLY, ref_logprobs=ref_logp)
    assert new_policy.item() < old_policy.item()
    assert new_stats["kl"] != 0.0
