"""VCC: the loss against a plain loop and a worked value, commits cut in tokens, the objective, a tiny run."""

import math
from dataclasses import replace

import pytest
import torch

from countdown_study.countdown.commit import commit_rewards
from countdown_study.countdown.task import Task
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.objectives.vcc import VCCConfig, prefix_scores, vcc_loss
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import Rollouts, SamplingConfig, sequence_logprobs
from countdown_study.runs.files import plain
from countdown_study.samplers import Batch
from countdown_study.training.aux import build_aux_losses
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.rloo import _grades
from countdown_study.training.specs import AuxLossSpec, DataSpec, EvalSpec
from countdown_study.training.vcc import VCCObjective, commit_tokens, vcc_spec

TASK = Task((44, 19, 35), 98)
RIGHT = "<answer>(44+19)+35</answer>"
WRONG = "<think>35+19=54</think><answer>(35+19)+(44-35)</answer>"
SMALL = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


# ---------------------------------------------------------------------------------------------------
# The loss
# ---------------------------------------------------------------------------------------------------


def test_vcc_loss_worked_example():
    # h = (-1 - -3) - (-2 - -2) = 2; beta 0.1: -log sigmoid(0.2) = log(1 + e^-0.2) = 0.598139
    loss, stats = vcc_loss(
        torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-2.0])
    )
    assert loss.item() == pytest.approx(0.598139, abs=1e-6)
    assert stats["margin"] == pytest.approx(2.0) and stats["accuracy"] == 1.0


def test_vcc_loss_matches_plain_loop_on_token_logprobs():
    gen = torch.Generator().manual_seed(0)
    policy = -torch.rand(5, 9, generator=gen, dtype=torch.float64) * 3  # (R, T) token log-probs
    ref = -torch.rand(5, 9, generator=gen, dtype=torch.float64) * 3
    pairs = [
        (0, 4, 1, 9),
        (2, 2, 2, 7),
        (3, 9, 4, 1),
        (1, 5, 0, 6),
    ]  # (chosen row, length, rejected row, length)
    rows_c, len_c, rows_r, len_r = (torch.tensor(col) for col in zip(*pairs, strict=True))
    for normalize in (True, False):
        scores = [
            prefix_scores(lp, r, n, normalize)
            for lp in (policy, ref)
            for r, n in ((rows_c, len_c), (rows_r, len_r))
        ]
        loss, _ = vcc_loss(*scores, beta=0.3)

        def score(lp, row, n, normalize=normalize):
            total = sum(lp[row, t].item() for t in range(n))
            return total / n if normalize else total

        expected = 0.0
        for c, nc, r, nr in pairs:
            h = (score(policy, c, nc) - score(policy, r, nr)) - (score(ref, c, nc) - score(ref, r, nr))
            expected += -math.log(1.0 / (1.0 + math.exp(-0.3 * h))) / len(pairs)
        assert loss.item() == pytest.approx(expected, abs=1e-6)  # float32 scores


def test_descending_the_loss_prefers_the_commit():
    chosen, rejected = torch.tensor([-2.0], requires_grad=True), torch.tensor([-2.0], requires_grad=True)
    vcc_loss(chosen, rejected, torch.tensor([-2.0]), torch.tensor([-2.0]))[0].backward()
    assert chosen.grad.item() < 0 < rejected.grad.item()


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="beta"):
        VCCConfig(beta=0.0)
    with pytest.raises(ValueError, match="no pair could form"):
        VCCConfig(continuation_rejected=False, sibling_rejected=False)
    with pytest.raises(ValueError, match="prefix lengths"):
        prefix_scores(torch.zeros(2, 3), torch.tensor([0]), torch.tensor([4]))


# ---------------------------------------------------------------------------------------------------
# Commits in tokens
# ---------------------------------------------------------------------------------------------------


def _shortest_cover(tokenizer, ids, prefix):
    return next(
        k
        for k in range(len(ids) + 1)
        if tokenizer.decode(ids[:k], skip_special_tokens=True).startswith(prefix)
    )


def test_commit_tokens_with_the_embedded_character_tokenizer():
    tokenizer = build_tokenizer()
    ids = tokenizer.encode(RIGHT + WRONG, add_special_tokens=False) + [tokenizer.eos_token_id]
    text = tokenizer.decode(ids, skip_special_tokens=True)
    assert text == RIGHT + WRONG
    assert commit_tokens(tokenizer, ids, text, len(RIGHT)) == len(
        tokenizer.encode(RIGHT, add_special_tokens=False)
    )
    assert commit_tokens(tokenizer, ids, text, len(text)) == len(ids) - 1  # EOS is not text


def test_commit_tokens_with_a_byte_level_bpe_tokenizer():
    """A BPE tokenizer merges across the closing tag (``>\\n``); the cut keeps the straddling token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [RIGHT + "\nWait, " + WRONG + "\n"] * 50 + ["</answer>\n\n", "answer>\n"] * 50
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=["<eos>"], show_progress=False)
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>")
    for text in (RIGHT + "\nWait, " + WRONG, RIGHT + "\n\n" + RIGHT, RIGHT):
        ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
        assert commit_tokens(tokenizer, ids, text, len(RIGHT)) == _shortest_cover(tokenizer, ids, RIGHT)
    with pytest.raises(ValueError, match="do not decode"):
        commit_tokens(tokenizer, ids, "something else", 3)


# ---------------------------------------------------------------------------------------------------
# The objective
# ---------------------------------------------------------------------------------------------------


def _rollouts(tokenizer, texts, finish="eos"):
    prompt = [tokenizer.bos_token_id, *tokenizer.encode("N 44 19 35 T 98 :", add_special_tokens=False)]
    ids = [tokenizer.encode(t, add_special_tokens=False) + [tokenizer.eos_token_id] for t in texts]
    return Rollouts(
        prompts=["N 44 19 35 T 98 :"], group_size=len(texts), prompt_ids=[prompt], completion_ids=ids,
        texts=[tokenizer.decode(i, skip_special_tokens=True) for i in ids],
        logprobs=[torch.zeros(len(i)) for i in ids], finish_reasons=[finish] * len(texts),
    )  # fmt: skip


def test_objective_equals_separate_forwards_of_chosen_and_rejected():
    tokenizer = build_tokenizer()
    model, ref_model = build_model(tokenizer, SMALL, seed=0), build_model(tokenizer, SMALL, seed=1)
    rollouts = _rollouts(tokenizer, [RIGHT + WRONG, WRONG, RIGHT])
    (objective,) = build_aux_losses([vcc_spec(max_pairs_per_prompt=3)], tokenizer)
    loss, stats = objective.loss(model, ref_model, rollouts, None, Batch((TASK,), (0,)))
    # pairs: 0 cut vs 0 in full; 0 cut vs 1; 2 cut (its whole text) vs 1
    assert (stats["pairs"], stats["continuation_pairs"]) == (3, 1)
    assert stats["committed"] == pytest.approx(2 / 3) and stats["abandoned"] == pytest.approx(1 / 3)

    prompt = rollouts.prompt_ids[0]
    commit = tokenizer.encode(RIGHT, add_special_tokens=False)
    ids = rollouts.completion_ids
    chosen, rejected = [commit, commit, ids[2][:-1]], [ids[0], ids[1], ids[1]]

    def mean_logprobs(m, completions):
        out = sequence_logprobs(m, [prompt] * len(completions), completions)
        return out.logprobs.sum(1) / out.mask.sum(1)

    with torch.no_grad():
        expected, _ = vcc_loss(*(mean_logprobs(m, c) for m in (model, ref_model) for c in (chosen, rejected)))
    assert loss.item() == pytest.approx(0.01 * expected.item(), rel=1e-5)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters()) and ref_model.lm_head.weight.grad is None


def test_objective_without_pairs_gives_a_zero_loss_and_refuses_stopped_rollouts():
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, SMALL)
    objective = VCCObjective(tokenizer=tokenizer)
    loss, stats = objective.loss(
        model, model, _rollouts(tokenizer, [WRONG, WRONG]), None, Batch((TASK,), (0,))
    )
    assert loss.item() == 0.0 and stats["pairs"] == 0 and "margin" not in stats
    loss.backward()  # the loop backpropagates every auxiliary loss
    with pytest.raises(ValueError, match="stop_at_answer=False"):
        objective.loss(
            model, model, _rollouts(tokenizer, [RIGHT, WRONG], "answer"), None, Batch((TASK,), (0,))
        )
    with pytest.raises(ValueError, match="tokenizer"):
        VCCObjective()


# ---------------------------------------------------------------------------------------------------
# In the loop: VCC-RLOO and the commit reward
# ---------------------------------------------------------------------------------------------------


def tiny_vcc_config(**changes) -> TrainConfig:
    """Two steps of the embedded SFT policy (it finds answers, so pairs form) with whole rollouts."""
    base = TrainConfig(
        data=DataSpec("embedded", train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=2,
        prompts_per_step=4,
        group_size=4,
        micro_batch=16,
        lr=1e-3,
        loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0),
        sampling=SamplingConfig(max_new_tokens=96, stop_at_answer=False),
        aux_losses=(AuxLossSpec("vcc", coef=0.01, options={"max_pairs_per_prompt": 2}),),
        threads=1,
    )
    return replace(base, **changes)


def test_vcc_rloo_trains_and_logs_vcc_statistics(tmp_path):
    steps = train(tiny_vcc_config(), root=tmp_path, progress=False).read_steps()
    assert [r["step"] for r in steps] == [0, 1]
    for record in steps:
        assert {"vcc_loss", "vcc_pairs", "vcc_continuation_pairs", "vcc_committed", "vcc_abandoned"} <= set(
            record
        )
        assert 0 <= record["vcc_pairs"] <= 2 * 4
    paired = [r for r in steps if r["vcc_pairs"] > 0]
    assert paired, "no VCC pair formed: pick another seed"
    for record in paired:
        assert record["vcc_loss"] == pytest.approx(0.01 * record["vcc_contrast_loss"], rel=1e-3)
        assert math.isfinite(record["vcc_margin"])


def test_commit_reward_option_keeps_existing_run_ids_and_replaces_rewards():
    assert "reward" not in plain(TrainConfig()) and plain(TrainConfig(reward="commit"))["reward"] == "commit"
    with pytest.raises(ValueError, match="unknown reward 'dense'"):
        TrainConfig(reward="dense")
    tokenizer = build_tokenizer()
    texts = [RIGHT + WRONG, WRONG, RIGHT, ""]
    rollouts = _rollouts(tokenizer, texts)
    outcome = _grades(rollouts, [TASK], TrainConfig())
    commit = _grades(rollouts, [TASK], TrainConfig(reward="commit"))
    assert outcome.rewards.tolist() == [[0.1, 0.1, 1.0, 0.0]]
    assert commit.rewards.tolist() == commit_rewards(texts, [TASK], 4).tolist()
    assert commit.rewards[0, 0] == pytest.approx(len(RIGHT) / len(RIGHT + WRONG))
    assert (commit.correct == outcome.correct).all()
