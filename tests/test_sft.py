"""Tests of the supervised stage: traces, the completion mask, the schedule, determinism and resume."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from fractions import Fraction
from random import Random

import pytest
import torch

from countdown_study.countdown.prompts import ANSWER_OPEN, THINK_OPEN
from countdown_study.countdown.solver import Derivation, Step, all_solutions
from countdown_study.countdown.tasks import Task, generate_tasks
from countdown_study.countdown.verifier import compute_score, scan_answers
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.training import sft

TINY_MODEL = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
TINY = sft.SFTConfig(
    steps=6,
    batch_size=6,
    warmup_steps=2,
    model=TINY_MODEL,
    heldout_count=20,
    threads=1,
    checkpoint_every=2,
    log_every=1,
    data_workers=0,
    multi_attempt_share=0.5,
)
TASKS = generate_tasks(24, seed=7)

_STEP = re.compile(
    r"^(-?\d+(?:/\d+)?|\(-?\d+(?:/\d+)?\))([-+*/])(-?\d+(?:/\d+)?|\(-?\d+(?:/\d+)?\))=(-?\d+(?:/\d+)?)$"
)
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


def _value(text: str) -> Fraction:
    return Fraction(text.strip("()"))


def _think_steps_hold(trace: str) -> bool:
    """Every ``a op b = c`` written in a think span is exact arithmetic."""
    for think in re.findall(r"<think>(.*?)</think>", trace):
        for step in think.split(", "):
            match = _STEP.match(step)
            if match is None:
                return False
            left, op, right, value = match.groups()
            if _OPS[op](_value(left), _value(right)) != _value(value):
                return False
    return True


def _truth(task: Task) -> dict:
    return {"target": task.target, "numbers": list(task.nums)}


# --- traces --------------------------------------------------------------------------------------


def test_single_attempt_traces_verify_and_show_true_arithmetic():
    rng = Random(0)
    for task in TASKS:
        trace = sft.make_trace(task, rng, multi_attempt_share=0.0)
        assert compute_score(trace, _truth(task)) == 1.0
        assert trace.count(ANSWER_OPEN) == 1 and trace.count(THINK_OPEN) == 1
        assert _think_steps_hold(trace)
        assert len(re.findall(r"<think>(.*?)</think>", trace)[0].split(", ")) == task.num_count - 1


def test_multi_attempt_traces_end_with_the_only_correct_answer():
    rng = Random(1)
    for task in TASKS:
        trace = sft.make_trace(task, rng, multi_attempt_share=1.0, max_wrong_attempts=2)
        spans = scan_answers(trace, task.nums, task.target).spans
        assert 2 <= len(spans) <= 3
        assert [s.verdict.correct for s in spans] == [False] * (len(spans) - 1) + [True]
        assert all(s.verdict.well_formed for s in spans)
        assert trace.count(THINK_OPEN) == len(spans)
        assert _think_steps_hold(trace)
        assert compute_score(trace, _truth(task)) == 1.0


def test_multi_attempt_share_is_respected():
    rng = Random(2)
    task = Task((3, 5, 7), 22)
    several = sum(
        sft.make_trace(task, rng, multi_attempt_share=0.2).count(ANSWER_OPEN) > 1 for _ in range(2000)
    )
    assert 340 <= several <= 460  # binomial(2000, 0.2): mean 400, sd 18


def test_same_rng_seed_gives_the_same_trace_and_solutions_vary():
    task = Task((1, 2, 6, 8), 24)
    solutions = all_solutions(task.nums, task.target)
    first = [sft.make_trace(task, Random(s), 0.3, solutions=solutions) for s in range(20)]
    again = [sft.make_trace(task, Random(s), 0.3, solutions=solutions) for s in range(20)]
    assert first == again
    assert len(set(first)) > 5


def test_clean_solutions_are_preferred_when_present():
    task = Task((40, 26, 8), 22)  # 40-(26-8) is clean; 40+(8-26) goes through -18
    assert any(not sft.is_clean(d) for d in all_solutions(task.nums, task.target))
    for seed in range(30):
        trace = sft.make_trace(task, Random(seed), 0.0)
        values = [Fraction(v) for v in re.findall(r"=(-?\d+(?:/\d+)?)", trace)]
        assert values and all(v >= 0 and v.denominator == 1 for v in values)


@pytest.mark.parametrize(
    ("left", "op", "right", "value", "text"),
    [
        (44, "+", 19, 63, "44+19=63"),  # integers as written
        (3, "/", 4, Fraction(3, 4), "3/4=3/4"),  # a fraction as a result is bare
        (6, "/", Fraction(1, 4), 24, "6/(1/4)=24"),  # a fraction as an operand is parenthesised
        (8, "-", -14, 22, "8-(-14)=22"),  # so is a negative operand
        (5, "-", 9, -4, "5-9=-4"),  # a negative result is bare
    ],
)
def test_format_step(left, op, right, value, text):
    step = Step(Fraction(left), op, Fraction(right), Fraction(value))
    assert sft.format_step(step) == text


def test_format_attempt_layout():
    derivation = Derivation(
        (
            Step(Fraction(44), "+", Fraction(19), Fraction(63)),
            Step(Fraction(63), "+", Fraction(35), Fraction(98)),
        ),
        "(44+19)+35",
        Fraction(98),
    )
    assert sft.format_attempt(derivation) == "<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer>"


def test_wrong_derivation_never_hits_the_target():
    rng = Random(3)
    for _ in range(200):
        assert sft.wrong_derivation((1, 2, 3), 6, rng).value != 6


# --- batches and the loss mask ---------------------------------------------------------------------


def test_step_examples_skip_excluded_tasks_and_fill_the_batch():
    config = replace(TINY, batch_size=10)
    first_draw = generate_tasks(10, sft.derived_seed(config.seed, 0, sft.STREAM_TASKS, 0))
    excluded = frozenset(t.key for t in first_draw[:4])
    examples = sft.step_examples(config, 0, excluded)
    assert len(examples) == 10
    unexcluded = sft.step_examples(config, 0, frozenset())
    assert examples != unexcluded
    shown = {p for p, _ in examples}
    for task in first_draw[:4]:
        assert sft.format_prompt(task.nums, task.target, "compact") not in shown


def test_steps_get_different_tasks_and_the_same_step_the_same():
    assert sft.step_examples(TINY, 3, frozenset()) == sft.step_examples(TINY, 3, frozenset())
    assert sft.step_examples(TINY, 3, frozenset()) != sft.step_examples(TINY, 4, frozenset())


def test_loss_mask_covers_exactly_the_completion_and_eos():
    tokenizer = build_tokenizer()
    prompt, completion = "N 44 19 35 T 98 :", "<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer>"
    ids, mask = sft.encode_example(tokenizer, prompt, completion)
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    masked = [i for i, m in zip(ids, mask, strict=True) if m]
    unmasked = [i for i, m in zip(ids, mask, strict=True) if not m]
    assert tokenizer.decode(masked[:-1]) == completion and masked[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(unmasked[1:]) == prompt
    assert mask == sorted(mask)  # prompt first, then completion


def test_completion_loss_ignores_prompt_and_padding_positions():
    tokenizer = build_tokenizer()
    encoded = [
        sft.encode_example(tokenizer, "N 1 2 3 T 6 :", "<think>1+2=3, 3+3=6</think><answer>(1+2)+3</answer>"),
        sft.encode_example(tokenizer, "N 2 3 T 6 :", "<think>2*3=6</think><answer>2*3</answer>"),
    ]
    batch = sft.collate(encoded, tokenizer.pad_token_id)
    logits = torch.randn(
        *batch["input_ids"].shape, len(tokenizer), generator=torch.Generator().manual_seed(0)
    )
    base = sft.completion_loss(logits, batch["input_ids"], batch["loss_mask"])
    predicts_completion = batch["loss_mask"][:, 1:]  # position t predicts token t+1
    at_prompt = logits.clone()
    at_prompt[:, :-1][~predicts_completion] += 5.0 * torch.randn_like(at_prompt[:, :-1][~predicts_completion])
    assert torch.allclose(sft.completion_loss(at_prompt, batch["input_ids"], batch["loss_mask"]), base)
    at_completion = logits.clone()
    at_completion[:, :-1][predicts_completion] += 5.0
    at_completion[:, :-1][predicts_completion, 0] -= 10.0
    assert not torch.allclose(
        sft.completion_loss(at_completion, batch["input_ids"], batch["loss_mask"]), base
    )
    assert int(batch["loss_mask"].sum()) == sum(sum(m) for _, m in encoded)


def test_length_buckets_match_one_padded_batch():
    tokenizer = build_tokenizer()
    examples = sft.step_examples(replace(TINY, batch_size=12), 0, frozenset())
    grads = []
    for buckets in (1, 4):
        model = build_model(tokenizer, TINY_MODEL, seed=0)
        loss = sft.train_step_gradients(model, tokenizer, examples, buckets)
        grads.append((loss, torch.cat([p.grad.flatten() for p in model.parameters()])))
    (loss_one, grad_one), (loss_four, grad_four) = grads
    assert torch.allclose(loss_one, loss_four, rtol=1e-2)
    assert torch.nn.functional.cosine_similarity(grad_one, grad_four, dim=0) > 0.999


def test_length_buckets_partition_by_length():
    lengths = [5, 1, 9, 3, 7, 2, 8]
    buckets = sft.length_buckets(lengths, 3)
    assert sorted(i for b in buckets for i in b) == list(range(7))
    flat = [lengths[i] for b in buckets for i in b]
    assert flat == sorted(lengths)


# --- schedule -----------------------------------------------------------------------------------


def test_learning_rate_warmup_constant_and_final_decay():
    config = replace(TINY, steps=100, warmup_steps=10, decay_fraction=0.2, lr=1.0)
    lrs = [sft.learning_rate(s, config) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(lr == 1.0 for lr in lrs[10:80])
    assert all(a > b for a, b in zip(lrs[80:], lrs[81:], strict=False))
    assert lrs[80] == pytest.approx(1.0) and lrs[99] == pytest.approx(0.05)


# --- the loop: determinism, resume, checkpoints ------------------------------------------------------


def _states_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_training_is_deterministic_and_changes_the_weights(tmp_path):
    first = sft.train_sft(TINY, tmp_path / "a", progress=False)
    second = sft.train_sft(TINY, tmp_path / "b", progress=False)
    other_seed = sft.train_sft(replace(TINY, seed=1), tmp_path / "c", progress=False)
    assert _states_equal(first.model, second.model)
    assert not _states_equal(first.model, other_seed.model)
    init = build_model(build_tokenizer(), TINY_MODEL, seed=TINY.seed)
    assert not _states_equal(first.model, init)
    assert torch.isfinite(torch.tensor(first.final_loss))
    assert (tmp_path / "a" / "checkpoints" / "final" / "model.safetensors").exists()


def test_resume_matches_an_uninterrupted_run(tmp_path):
    whole = sft.train_sft(replace(TINY, data_workers=1), tmp_path / "whole", progress=False)
    part = sft.train_sft(TINY, tmp_path / "split", stop_after=3, progress=False)
    assert part.steps_done == 3 and not (tmp_path / "split" / "summary.json").exists()
    resumed = sft.train_sft(TINY, tmp_path / "split", resume=True, progress=False)
    assert resumed.steps_done == TINY.steps
    assert _states_equal(whole.model, resumed.model)
    log_steps = [
        int(line.split('"step": ')[1].split(",")[0]) for line in (tmp_path / "split" / "log.jsonl").open()
    ]
    assert log_steps == list(range(1, TINY.steps + 1))


def test_resume_refuses_a_different_schedule(tmp_path):
    sft.train_sft(TINY, tmp_path / "run", stop_after=5, progress=False)  # past the decay start (step 4)
    with pytest.raises(ValueError, match="steps"):
        sft.train_sft(replace(TINY, steps=12), tmp_path / "run", resume=True, progress=False)
    with pytest.raises(ValueError, match="lr"):
        sft.train_sft(replace(TINY, lr=1e-3), tmp_path / "run", resume=True, progress=False)
    sft.train_sft(replace(TINY, log_every=3), tmp_path / "run", resume=True, progress=False)  # runtime only


def test_a_checkpoint_before_the_decay_continues_into_a_longer_schedule(tmp_path):
    longer = replace(TINY, steps=12)
    assert TINY.decay_start == 4 and longer.decay_start == 9
    whole = sft.train_sft(longer, tmp_path / "whole", progress=False)
    sft.train_sft(TINY, tmp_path / "grown", stop_after=3, progress=False)
    grown = sft.train_sft(longer, tmp_path / "grown", resume=True, progress=False)
    assert grown.steps_done == 12
    assert _states_equal(whole.model, grown.model)


def test_checkpoint_write_is_atomic(tmp_path):
    path = tmp_path / "ck" / "last.pt"
    sft.save_checkpoint(path, {"step": 1})
    sft.save_checkpoint(path, {"step": 2})
    assert torch.load(path)["step"] == 2
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]


def test_config_round_trips_through_json():
    config = replace(TINY, betas=(0.8, 0.9))
    assert sft.config_from_dict(sft.config_to_dict(config)) == config
    with pytest.raises(ValueError, match="unknown"):
        sft.config_from_dict({**sft.config_to_dict(config), "bogus": 1})


def test_ship_writes_a_loadable_policy_and_its_facts(tmp_path):
    from countdown_study.policy import load_policy

    run = sft.train_sft(TINY, tmp_path / "run", progress=False)
    dest = sft.ship(tmp_path / "run", tmp_path / "shipped")
    model, tokenizer = load_policy(dest)
    assert _states_equal(model, run.model)
    assert tokenizer.encode("<think>1+2", add_special_tokens=False) == run.tokenizer.encode(
        "<think>1+2", add_special_tokens=False
    )
    info = (dest / sft.SHIPPED_INFO_FILE).read_text()
    assert '"steps_done": 6' in info and '"quality": null' in info
    quality = sft.measure_quality(TINY, dest, tmp_path / "run")
    assert quality["num_tasks"] == TINY.heldout_count and quality["n"] == sft.QUALITY_N
    assert set(quality["by_num_count"]) == {"3", "4"}
    assert quality["measured_with"]["tasks"] == "generated:20:0"
    saved = json.loads((tmp_path / "run" / "eval_heldout.json").read_text())
    assert saved["pass@1"] == quality["pass@1"] and saved["config"]["sampling"]["temperature"] == 1.0
    sft.record_quality(quality, dest)
    assert json.loads((dest / sft.SHIPPED_INFO_FILE).read_text())["quality"] == quality


def test_quality_shortfalls_name_what_misses_the_goal():
    good = {"pass@1": 0.3, "pass@16": 0.7, "well_formed": 0.99,
            "by_num_count": {"3": {"pass@1": 0.5}, "4": {"pass@1": 0.1}}}  # fmt: skip
    assert sft.quality_shortfalls(good) == []
    low = {**good, "pass@1": 0.215, "by_num_count": {"3": {"pass@1": 0.1}, "4": {"pass@1": 0.2}}}
    assert sft.quality_shortfalls(low) == [
        "pass@1 0.215 outside [0.25, 0.45]",
        "3-number tasks are not easier than 4-number tasks",
    ]


def test_command_line_options_reach_the_config():
    parser = argparse.ArgumentParser()
    sft.configure_parser(parser)
    args = parser.parse_args(
        ["--steps", "7", "--seed", "3", "--threads", "1", "--multi-attempt-share", "0.2"]
    )
    assert sft.config_from_args(args) == replace(
        sft.SFTConfig(), steps=7, seed=3, threads=1, multi_attempt_share=0.2
    )
    assert sft.config_from_args(parser.parse_args([])) == sft.SFTConfig()  # defaults make the shipped run
    assert parser.parse_args(["--resume", "--ship"]).ship
