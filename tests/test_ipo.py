"""IPO pairs and loss."""

import numpy as np
import pytest
import torch

from countdown_study.objectives.ipo import PreferencePair, ipo_loss, preference_pairs
from countdown_study.training.specs import DataSpec


def test_pairs_only_from_mixed_groups_and_capped():
    correct = np.array([[1.0, 0.1, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.1, 0.0, 0.1, 0.0]]) == 1.0
    pairs = preference_pairs(correct, np.random.default_rng(0), max_pairs_per_prompt=3)
    assert len(pairs) == 3 and {p.prompt for p in pairs} == {0}
    assert all(p.chosen in (0, 3) and p.rejected in (1, 2) for p in pairs)
    assert len(set(pairs)) == 3  # no combination twice
    assert preference_pairs(correct, np.random.default_rng(0), max_pairs_per_prompt=3) == pairs


def test_pair_indices_are_flat_sample_indices():
    correct = np.array([[False, False], [False, True]])
    assert preference_pairs(correct, np.random.default_rng(1)) == [PreferencePair(1, 3, 2)]


def test_ipo_loss_worked_example():
    # margin h = (-1 - -2) - (-3 - -3) = 1; tau = 0.25 -> target 2; loss (1 - 2)^2 = 1
    loss, stats = ipo_loss(
        torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-3.0]), 0.25
    )
    assert loss.item() == pytest.approx(1.0)
    assert stats["margin"] == pytest.approx(1.0)


def test_ipo_gradient_raises_the_chosen_log_prob_when_margin_is_small():
    chosen = torch.tensor([-2.0], requires_grad=True)
    loss, _ = ipo_loss(chosen, torch.tensor([-2.0]), torch.tensor([-2.0]), torch.tensor([-2.0]), 0.1)
    loss.backward()
    assert chosen.grad.item() < 0  # descending the loss increases log pi(y_w)


def test_bad_input():
    with pytest.raises(ValueError, match=r"\(P, G\)"):
        preference_pairs(np.zeros(4, dtype=bool), np.random.default_rng(0))
    with pytest.raises(ValueError, match="bool"):
        preference_pairs(np.zeros((2, 2)), np.random.default_rng(0))  # rewards, not correctness
    with pytest.raises(ValueError, match="tau"):
        ipo_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1), tau=0.0)


def _tiny_policy(folder):
    from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer

    tokenizer = build_tokenizer()
    model = build_model(
        tokenizer, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_fit_ipo_widens_the_margin_of_the_chosen_samples(tmp_path):
    from countdown_study.policy import load_policy
    from countdown_study.rollout import SamplingConfig, sample
    from countdown_study.training.ipo import IPOConfig, _sequence_scores, fit_ipo

    folder = _tiny_policy(tmp_path / "policy")
    model, tokenizer = load_policy(folder)
    ref_model, _ = load_policy(folder)
    rollouts = sample(
        model, tokenizer, ["N 1 2 3 T 6 :", "N 4 5 6 T 9 :"], 4, SamplingConfig(max_new_tokens=8), 0
    )
    pairs = [
        PreferencePair(0, 0, 1),
        PreferencePair(0, 2, 3),
        PreferencePair(1, 4, 5),
        PreferencePair(1, 6, 7),
    ]
    config = IPOConfig(data=DataSpec(policy=folder), epochs=10, batch_pairs=2, lr=1e-2, threads=1)
    records = []
    steps = fit_ipo(model, ref_model, rollouts, pairs, config, records.append, progress=False)
    assert steps == 20 and [r["step"] for r in records] == list(range(20))
    ids = rollouts.sample_prompt_ids
    with torch.no_grad():
        margin = _sequence_scores(model, ids, rollouts.completion_ids, True)  # (8,)
        margin -= _sequence_scores(ref_model, ids, rollouts.completion_ids, True)
    assert (margin[[0, 2, 4, 6]] - margin[[1, 3, 5, 7]]).mean() > 0.5 * (1 / (2 * config.tau))
    assert records[-1]["ipo_loss"] < records[0]["ipo_loss"]


def test_ipo_stage_refuses_a_policy_with_no_verifying_samples(tmp_path):
    from countdown_study.rollout import SamplingConfig
    from countdown_study.training.ipo import IPOConfig, train_ipo

    config = IPOConfig(
        data=DataSpec(_tiny_policy(tmp_path / "policy"), train_tasks="generated:100:1", eval_tasks="generated:10:0",
                      eval_limit=3),
        prompts=4, group_size=2, threads=1, sampling=SamplingConfig(max_new_tokens=4),
    )  # fmt: skip
    with pytest.raises(ValueError, match="no preference pairs"):
        train_ipo(config, root=tmp_path / "runs", progress=False)
