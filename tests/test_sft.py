"""Tests of the supervised stage: step data, the completion mask, the schedule, and runs in the run store
(determinism, loading, resume, schedule continuation, atomic checkpoints, shipping, the command line)."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from countdown_study.cli import build_parser
from countdown_study.cli import sft as sft_cli
from countdown_study.countdown import format_prompt, generate_tasks
from countdown_study.countdown.prompts import ANSWER_OPEN
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.policy import (
    EMBEDDED_POLICIES,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    policy_identity,
)
from countdown_study.policy.model import SHIP_COMMANDS
from countdown_study.policy.traces import SearchRecipe
from countdown_study.runs.provenance import REPRODUCED
from countdown_study.runs.store import RunNotFinishedError, run_id
from countdown_study.training import sft, sft_data
from countdown_study.training.checkpoint import write_checkpoint

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


# --- batches and the loss mask ---------------------------------------------------------------------

# Made by the code before the reshaping (commit 0f3f1c4, ``np.random.default_rng`` seeds in sft.py).
PINNED_STEP_2 = [
    ("N 96 11 6 T 27 :", "<think>6-96=-90, 11+(-90)=-79</think><answer>11+(6-96)</answer><think>6/96=1/16, "
     "11-(1/16)=175/16</think><answer>11-(6/96)</answer><think>96/6=16, 11+16=27</think><answer>11+(96/6)</answer>"),
    ("N 23 43 13 T 53 :", "<think>23+13=36, 36/43=36/43</think><answer>(23+13)/43</answer><think>43*13=559, "
     "23+559=582</think><answer>23+(43*13)</answer><think>23+43=66, 66-13=53</think><answer>(23+43)-13</answer>"),
    ("N 71 59 99 12 T 19 :", "<think>71-12=59, 59+59=118, 118-99=19</think><answer>(59+(71-12))-99</answer>"),
]  # fmt: skip


def test_step_examples_are_those_of_the_pinned_seeds():
    config = sft.SFTConfig(batch_size=3, heldout_count=20, multi_attempt_share=0.5)
    assert sft_data.step_examples(config, 2, sft_data.heldout_keys(config)) == PINNED_STEP_2
    for step, draw in ((0, 0), (2, 0), (5, 3)):  # the seeds the module had before ``seeding``
        old = int(np.random.default_rng([config.seed, step, 0, draw]).integers(2**62))
        assert sft_data.step_tasks_seed(config, step, draw) == old


def test_step_examples_skip_excluded_tasks_and_fill_the_batch():
    config = replace(TINY, batch_size=10)
    first_draw = generate_tasks(10, sft_data.step_tasks_seed(config, 0, 0))
    excluded = frozenset(t.key for t in first_draw[:4])
    examples = sft_data.step_examples(config, 0, excluded)
    assert len(examples) == 10
    unexcluded = sft_data.step_examples(config, 0, frozenset())
    assert examples != unexcluded
    shown = {p for p, _ in examples}
    for task in first_draw[:4]:
        assert format_prompt(task.nums, task.target, "compact") not in shown


def test_steps_get_different_tasks_and_the_same_step_the_same():
    assert sft_data.step_examples(TINY, 3, frozenset()) == sft_data.step_examples(TINY, 3, frozenset())
    assert sft_data.step_examples(TINY, 3, frozenset()) != sft_data.step_examples(TINY, 4, frozenset())


def test_loss_mask_covers_exactly_the_completion_and_eos():
    tokenizer = build_tokenizer()
    prompt, completion = "N 44 19 35 T 98 :", "<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer>"
    ids, mask = sft_data.encode_example(tokenizer, prompt, completion)
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    masked = [i for i, m in zip(ids, mask, strict=True) if m]
    unmasked = [i for i, m in zip(ids, mask, strict=True) if not m]
    assert tokenizer.decode(masked[:-1]) == completion and masked[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(unmasked[1:]) == prompt
    assert mask == sorted(mask)  # prompt first, then completion


def test_completion_loss_ignores_prompt_and_padding_positions():
    tokenizer = build_tokenizer()
    encoded = [
        sft_data.encode_example(
            tokenizer, "N 1 2 3 T 6 :", "<think>1+2=3, 3+3=6</think><answer>(1+2)+3</answer>"
        ),
        sft_data.encode_example(tokenizer, "N 2 3 T 6 :", "<think>2*3=6</think><answer>2*3</answer>"),
    ]
    batch = sft_data.collate(encoded, tokenizer.pad_token_id)
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
    examples = sft_data.step_examples(replace(TINY, batch_size=12), 0, frozenset())
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
    buckets = sft_data.length_buckets(lengths, 3)
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


# --- runs in the store: id, determinism, loading, resume, checkpoints ------------------------------------


def _states_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _weights(store) -> torch.nn.Module:
    return sft.load_sft(store)[0]


def _logged_steps(store) -> list[int]:
    return [record["step"] for record in store.read_steps()]


def test_runtime_fields_do_not_change_the_run_id(tmp_path):
    base = sft.open_run(TINY, tmp_path)
    runtime = replace(TINY, threads=2, checkpoint_every=3, log_every=5, data_workers=2)
    assert set(sft.RUNTIME_FIELDS) == {"threads", "checkpoint_every", "log_every", "data_workers"}
    assert sft.open_run(runtime, tmp_path).path == base.path
    assert base.run_id.startswith("sft-")
    assert sft.open_run(replace(TINY, seed=1), tmp_path).run_id != base.run_id
    assert sft.open_run(replace(TINY, lr=1e-3), tmp_path).run_id != base.run_id
    saved = json.loads((base.path / "config.json").read_text())
    assert saved == sft.run_config(TINY) and not set(saved) & set(sft.RUNTIME_FIELDS)


def test_the_shipped_embedded_run_keeps_its_id():
    # The id of the run that made ``embedded``, before ``init_from`` and ``search`` existed.
    assert run_id(sft.run_config(sft.SFTConfig()), "sft") == "sft-61bfe0563a72"
    later = {"init_from", "search"}  # fields added since: left out of the JSON while None
    assert not later & set(sft.config_to_dict(sft.SFTConfig()))
    assert later <= set(sft.config_to_dict(sft.RECIPES["search"].config))


def test_init_from_starts_from_those_weights_and_joins_the_run_id(tmp_path):
    tokenizer = build_tokenizer()
    start = build_model(tokenizer, TINY_MODEL, seed=5)
    start.save_pretrained(tmp_path / "start")
    tokenizer.save_pretrained(tmp_path / "start")
    config = replace(TINY, steps=1, lr=1e-12, weight_decay=0.0, init_from=str(tmp_path / "start"))
    run = sft.train_sft(config, tmp_path / "runs", progress=False)
    trained = _weights(run)
    assert all(torch.allclose(a, b, atol=1e-8) for a, b in zip(trained.state_dict().values(),
               start.state_dict().values(), strict=True))  # fmt: skip
    assert not _states_equal(trained, build_model(tokenizer, TINY_MODEL, seed=config.seed))
    assert json.loads((run.path / "identity.json").read_text()) == policy_identity(tmp_path / "start")
    assert sft.open_run(replace(config, init_from=None), tmp_path / "runs").run_id != run.run_id
    build_model(tokenizer, TINY_MODEL, seed=6).save_pretrained(tmp_path / "start")  # new weights, same name
    assert sft.open_run(config, tmp_path / "runs").run_id != run.run_id


def test_a_search_config_trains_on_search_traces():
    search = replace(TINY, batch_size=40, search=SearchRecipe(give_up_share=0.3, abandon_share=0.25))
    solver = replace(TINY, batch_size=40, multi_attempt_share=0.0)
    spans = [c.count(ANSWER_OPEN) for _, c in sft_data.step_examples(search, 1, frozenset())]
    assert [c.count(ANSWER_OPEN) for _, c in sft_data.step_examples(solver, 1, frozenset())] == [1] * 40
    assert sum(spans) == 139 and max(spans) == 5  # this step's traces: 3.5 answer spans each
    assert sft_data.step_examples(search, 1, frozenset()) == sft_data.step_examples(search, 1, frozenset())


def test_training_is_deterministic_and_changes_the_weights(tmp_path):
    first = sft.train_sft(TINY, tmp_path / "a", progress=False)
    second = sft.train_sft(TINY, tmp_path / "b", progress=False)
    other_seed = sft.train_sft(replace(TINY, seed=1), tmp_path / "c", progress=False)
    assert first.is_done and first.path.parent == tmp_path / "a"
    assert _states_equal(_weights(first), _weights(second))
    assert not _states_equal(_weights(first), _weights(other_seed))
    init = build_model(build_tokenizer(), TINY_MODEL, seed=TINY.seed)
    assert not _states_equal(_weights(first), init)
    facts = first.load_results()
    assert facts["steps_done"] == TINY.steps and np.isfinite(facts["final_loss"])
    assert facts["config"] == sft.config_to_dict(TINY)
    assert (sft.final_model_dir(first) / "model.safetensors").exists()
    assert sft.checkpoint_path(first).is_file() and (first.path / "checkpoints" / ".gitignore").exists()
    assert first.provenance()["seed"] == TINY.seed and first.provenance()["torch_threads"] == TINY.threads
    assert _logged_steps(first) == list(range(TINY.steps))


def test_a_finished_run_is_loaded_not_retrained(tmp_path, monkeypatch):
    first = sft.train_sft(TINY, tmp_path, progress=False)
    results, provenance = first.load_results(), first.provenance()

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(sft, "train_step_gradients", no_training)
    again = sft.train_sft(TINY, tmp_path, progress=False)
    with_runtime = sft.train_sft(replace(TINY, threads=2, log_every=3), tmp_path, progress=False)
    assert again.path == first.path == with_runtime.path
    assert again.load_results() == results and again.provenance() == provenance
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [first.run_id]


def test_resume_matches_an_uninterrupted_run(tmp_path):
    whole = sft.train_sft(replace(TINY, data_workers=1), tmp_path / "whole", progress=False)
    part = sft.train_sft(TINY, tmp_path / "split", stop_after=3, progress=False)
    assert not part.is_done and torch.load(sft.checkpoint_path(part), weights_only=False)["step"] == 3
    assert _logged_steps(part) == [0, 1, 2]
    resumed = sft.train_sft(TINY, tmp_path / "split", progress=False)
    assert resumed.path == part.path and resumed.is_done
    assert resumed.load_results()["steps_done"] == TINY.steps
    assert _states_equal(_weights(whole), _weights(resumed))
    assert _logged_steps(resumed) == list(range(TINY.steps))


def test_a_run_killed_after_its_checkpoint_resumes_to_the_same_weights(tmp_path, monkeypatch):
    whole = sft.train_sft(TINY, tmp_path / "whole", progress=False)
    real, calls = sft.train_step_gradients, []

    def dies_in_step_3(*args, **kwargs):  # steps 0-2 are logged, the checkpoint covers steps 0-1
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sft, "train_step_gradients", dies_in_step_3)
    with pytest.raises(KeyboardInterrupt):
        sft.train_sft(TINY, tmp_path / "killed", progress=False)
    monkeypatch.setattr(sft, "train_step_gradients", real)
    killed = sft.open_run(TINY, tmp_path / "killed")
    assert not killed.is_done and _logged_steps(killed) == [0, 1, 2]
    started = killed.provenance()["started"]
    resumed = sft.train_sft(TINY, tmp_path / "killed", progress=False)
    assert resumed.is_done and resumed.provenance()["started"] == started  # continued, not restarted
    assert _logged_steps(resumed) == list(range(TINY.steps))  # step 2's line written once
    assert _states_equal(_weights(whole), _weights(resumed))
    assert resumed.load_results()["final_loss"] == whole.load_results()["final_loss"]


@pytest.mark.parametrize("damage", ["torn", "not a checkpoint", "no step"])
def test_an_unreadable_checkpoint_is_reported_removed_and_the_run_starts_over(tmp_path, damage):
    whole = sft.train_sft(TINY, tmp_path / "whole", progress=False)
    part = sft.train_sft(TINY, tmp_path / "bad", stop_after=3, progress=False)
    checkpoint = sft.checkpoint_path(part)
    if damage == "torn":
        checkpoint.write_bytes(checkpoint.read_bytes()[:1000])
    elif damage == "not a checkpoint":
        checkpoint.write_bytes(b"\x00garbage")
    else:
        write_checkpoint(checkpoint, {"model": {}})
    with pytest.warns(
        UserWarning, match=rf"checkpoint {re.escape(str(checkpoint))} cannot be read .*starts over"
    ):
        resumed = sft.train_sft(TINY, tmp_path / "bad", progress=False)
    assert resumed.path == part.path and resumed.is_done and resumed.verify() == []
    assert _logged_steps(resumed) == list(range(TINY.steps))  # from step 0 again, each step once
    assert _states_equal(_weights(whole), _weights(resumed))
    assert resumed.load_results()["final_loss"] == whole.load_results()["final_loss"]


BAD_CONFIGS = [
    # (field and value, the message)
    ({"lr": float("nan")}, "lr must be a finite number > 0, got nan"),
    ({"lr": float("inf")}, "lr must be a finite number > 0, got inf"),
    ({"lr": 0.0}, "lr must be a finite number > 0, got 0.0"),
    ({"lr": -1e-3}, "lr must be a finite number > 0, got -0.001"),
    ({"seed": -1}, "seed must be a non-negative integer, got -1"),
    ({"threads": 0}, "threads must be at least 1, got 0"),
]


@pytest.mark.parametrize(("change", "message"), BAD_CONFIGS, ids=[c[1] for c in BAD_CONFIGS])
def test_sft_and_proposer_configs_refuse_bad_settings(change, message):
    from countdown_study.training.teacher_train import ProposerConfig

    for config in (sft.SFTConfig(), ProposerConfig()):
        with pytest.raises(ValueError, match=re.escape(message)):
            replace(config, **change)
    with pytest.raises(ValueError, match="log_every must be at least 1, got 0"):
        replace(TINY, log_every=0)


def test_truncate_steps_keeps_the_steps_before_and_rewrites_atomically(tmp_path):
    store = sft.open_run(TINY, tmp_path)
    store.truncate_steps(3)  # no log yet: an empty one
    assert store.read_steps() == []
    for step in range(5):
        store.log_step({"step": step, "loss": 1.0 / (step + 1)})
    store.truncate_steps(2)
    assert store.read_steps() == [{"loss": 1.0, "step": 0}, {"loss": 0.5, "step": 1}]
    assert not [p.name for p in store.path.iterdir() if p.name.endswith(".tmp")]


def test_resume_from_refuses_a_different_schedule(tmp_path):
    short = sft.train_sft(TINY, tmp_path, stop_after=5, progress=False)  # past the decay start (step 4)
    with pytest.raises(ValueError, match="steps"):
        sft.train_sft(replace(TINY, steps=12), tmp_path, resume_from=short.path, progress=False)
    with pytest.raises(ValueError, match="lr"):
        sft.train_sft(replace(TINY, lr=1e-3), tmp_path, resume_from=short.path, progress=False)
    done = sft.train_sft(replace(TINY, log_every=3), tmp_path, progress=False)  # runtime only: same run
    assert done.path == short.path and done.is_done


def test_a_checkpoint_before_the_decay_continues_into_a_longer_schedule(tmp_path):
    longer = replace(TINY, steps=12)
    assert TINY.decay_start == 4 and longer.decay_start == 9
    whole = sft.train_sft(longer, tmp_path / "whole", progress=False)
    short = sft.train_sft(TINY, tmp_path / "grown", stop_after=3, progress=False)
    grown = sft.train_sft(longer, tmp_path / "grown", resume_from=sft.checkpoint_path(short), progress=False)
    assert grown.is_done and grown.path != short.path and grown.run_id == whole.run_id
    assert grown.load_results()["steps_done"] == 12
    assert _states_equal(_weights(whole), _weights(grown))
    assert json.loads((grown.path / "resumed_from.json").read_text())["step"] == 3
    assert _logged_steps(grown) == list(range(12))  # steps 0-2 adopted from the shorter run's log
    assert [r["loss"] for r in grown.read_steps()] == [r["loss"] for r in whole.read_steps()]
    # without ``resume_from`` the longer schedule is another run that trains from its start
    fresh = sft.train_sft(longer, tmp_path / "fresh", progress=False)
    assert not (fresh.path / "resumed_from.json").exists()


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ck" / "last.pt"
    write_checkpoint(path, {"step": 1})
    write_checkpoint(path, {"step": 2})
    assert torch.load(path)["step"] == 2
    before = path.read_bytes()

    def torn_save(obj, f, *args, **kwargs):  # a crash half way through the write
        with open(f, "wb") as handle:
            handle.write(before[: len(before) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", torn_save)
    with pytest.raises(OSError, match="disk full"):
        write_checkpoint(path, {"step": 3})
    monkeypatch.undo()
    assert path.read_bytes() == before and torch.load(path)["step"] == 2
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.pt", "last.pt.sha256.json"]  # no temporary


def test_config_round_trips_through_json():
    config = replace(TINY, betas=(0.8, 0.9))
    assert sft.config_from_dict(sft.config_to_dict(config)) == config
    with pytest.raises(ValueError, match="unknown"):
        sft.config_from_dict({**sft.config_to_dict(config), "bogus": 1})


# --- shipping -----------------------------------------------------------------------------------------


def test_ship_writes_a_loadable_policy_and_its_facts(tmp_path):
    from countdown_study.policy import load_policy

    unfinished = sft.train_sft(replace(TINY, seed=3), tmp_path, stop_after=2, progress=False)
    with pytest.raises(RunNotFinishedError):
        sft.ship(unfinished, tmp_path / "nothing")
    run = sft.train_sft(TINY, tmp_path, progress=False)
    dest = sft.ship(run, tmp_path / "shipped")
    model, tokenizer = load_policy(dest)
    trained, trained_tokenizer = sft.load_sft(run)
    assert _states_equal(model, trained)
    assert tokenizer.encode("<think>1+2", add_special_tokens=False) == trained_tokenizer.encode(
        "<think>1+2", add_special_tokens=False
    )
    text = (dest / sft.SHIPPED_INFO_FILE).read_text()
    assert '"steps_done": 6' in text and '"quality": null' in text
    info, shipped = (
        json.loads(text),
        json.loads((EMBEDDED_CHECKPOINT_DIR / sft.SHIPPED_INFO_FILE).read_text()),
    )
    shipped.pop(REPRODUCED)  # added after shipping, by its clean re-make (``training.reproduce``)
    assert list(info) == list(shipped) and list(info["config"]) == list(shipped["config"])  # same layout
    assert info["config"] == sft.config_to_dict(TINY)
    quality = sft.measure_quality(TINY, dest, run.path)
    assert quality["num_tasks"] == TINY.heldout_count and quality["n"] == sft.QUALITY_N
    assert set(quality["by_num_count"]) == {"3", "4"}
    assert quality["measured_with"]["tasks"] == "generated:20:0"
    assert quality["first_verifying_gap"] == quality["first_verifying_pass@1"] - quality["pass@1"]
    for record in (quality, *quality["by_num_count"].values()):  # spans and truncation, overall and per count
        assert 0.0 <= record["truncated"] <= 1.0 and record["answer_spans_per_rollout"] >= 0.0
    saved_text = (run.path / "eval_heldout.json").read_text()
    saved = json.loads(saved_text)
    assert saved["pass@1"] == quality["pass@1"] and saved["config"]["sampling"]["temperature"] == 1.0
    assert saved["config"]["policy"] == "embedded" and str(tmp_path) not in saved_text  # no folder named
    sft.record_quality(quality, dest)
    assert json.loads((dest / sft.SHIPPED_INFO_FILE).read_text())["quality"] == quality


def test_shipping_in_bf16_halves_the_weights_and_loads_back_as_float32(tmp_path):
    from countdown_study.policy import load_policy

    run = sft.train_sft(TINY, tmp_path, progress=False)
    full, half = sft.ship(run, tmp_path / "fp32"), sft.ship(run, tmp_path / "bf16", weights_dtype="bfloat16")
    sizes = [(folder / "model.safetensors").stat().st_size for folder in (full, half)]
    assert 0.45 < sizes[1] / sizes[0] < 0.55
    assert json.loads((half / "config.json").read_text())["dtype"] == "bfloat16"
    model, _ = load_policy(half)
    trained = sft.load_sft(run)[0]
    for (name, value), rounded in zip(model.state_dict().items(), trained.state_dict().values(), strict=True):
        assert value.dtype == torch.float32, name
        assert torch.equal(value, rounded.to(torch.bfloat16).float()), name
    assert json.loads((half / sft.SHIPPED_INFO_FILE).read_text()) == json.loads(
        (full / sft.SHIPPED_INFO_FILE).read_text()
    )
    with pytest.raises(ValueError, match="weights_dtype must be one of"):
        sft.ship(run, tmp_path / "x", weights_dtype="float16")


def test_quality_shortfalls_under_the_scale_goal():
    fine = {"pass@1": 0.12, "well_formed": 0.97, "truncated": 0.03,
            "by_num_count": {"3": {"pass@1": 0.2}, "4": {"pass@1": 0.04}}}  # fmt: skip
    assert sft.quality_shortfalls(fine, sft.SCALE_QUALITY_GOAL) == []
    cut = {**fine, "pass@1": 0.01, "truncated": 0.08}
    assert sft.quality_shortfalls(cut, sft.SCALE_QUALITY_GOAL) == [
        "pass@1 0.010 outside [0.05, 1.0]",
        "truncated 0.080 outside [0.0, 0.05]",
    ]


def test_quality_shortfalls_name_what_misses_the_goal():
    good = {"pass@1": 0.3, "pass@16": 0.7, "well_formed": 0.99,
            "by_num_count": {"3": {"pass@1": 0.5}, "4": {"pass@1": 0.1}}}  # fmt: skip
    assert sft.quality_shortfalls(good) == []
    low = {**good, "pass@1": 0.215, "by_num_count": {"3": {"pass@1": 0.1}, "4": {"pass@1": 0.2}}}
    assert sft.quality_shortfalls(low) == [
        "pass@1 0.215 outside [0.25, 0.45]",
        "3-number tasks are not easier than 4-number tasks",
    ]


def test_quality_shortfalls_under_the_search_goal():
    # Report 003's SFT policy: 3.95 spans per rollout, first-verifying 0.3975 against final 0.3038.
    theirs = {"answer_spans_per_rollout": 3.95, "first_verifying_gap": 0.3975 - 0.3038, "pass@1": 0.3038,
              "truncated": 0.0, "by_num_count": {"3": {"pass@1": 0.5}, "4": {"pass@1": 0.1}}}  # fmt: skip
    assert sft.quality_shortfalls(theirs, sft.SEARCH_QUALITY_GOAL) == []
    ours = {**theirs, "answer_spans_per_rollout": 1.33, "first_verifying_gap": 0.002, "truncated": 0.098}
    assert sft.quality_shortfalls(ours, sft.SEARCH_QUALITY_GOAL) == [
        "answer_spans_per_rollout 1.330 outside [3.0, 5.0]",
        "first_verifying_gap 0.002 outside [0.05, 0.12]",
        "truncated 0.098 outside [0.0, 0.02]",
    ]


def test_the_shipped_search_policy_meets_its_goal():
    recipe = sft.RECIPES["search"]
    info = json.loads((recipe.dest / sft.SHIPPED_INFO_FILE).read_text())
    assert sft.config_from_dict(info["config"]) == recipe.config
    assert info["steps_done"] == recipe.config.steps
    quality = info["quality"]
    assert sft.quality_shortfalls(quality, recipe.goal) == []
    assert (quality["num_tasks"], quality["n"]) == (recipe.config.heldout_count, sft.QUALITY_N)
    assert quality["measured_with"] == {"policy": "embedded-search", "tasks": "generated:1000:0", "seed": 0,
                                        "sampling": asdict(sft.SEARCH_QUALITY_SAMPLING)}  # fmt: skip
    assert (
        sft.SEARCH_QUALITY_SAMPLING.max_new_tokens == 224 and not sft.SEARCH_QUALITY_SAMPLING.stop_at_answer
    )


SHIPPED_SHORTFALLS = {
    "small": ["truncated 0.182 outside [0.0, 0.05]"],
    "large": ["truncated 0.140 outside [0.0, 0.05]"],
}
"""What the shipped scale policies miss of their goal, as their records measured it (clean 8e443eb, 4,000
steps each): at the study's 224 tokens ``embedded-small`` cuts 18.2% of its rollouts (3-number tasks 9.3%,
4-number 25.8%) and ``embedded-large`` 14.0% (5.0%, 21.8%); ``embedded`` itself cuts 9.5% in notebook
02's SFT row. After a wrong answer each tries again, as the recipe's multi-attempt traces teach, and later
attempts run past the budget. They ship as the shared recipe made them (the sizes differ in shape only);
notebook 09's size table carries the share. A re-shipped policy with other shortfalls fails."""


@pytest.mark.parametrize("name", ["small", "large"])
def test_a_shipped_scale_policy_records_its_run_and_meets_its_goal(name):
    """Runs once ``countdown-study sft --recipe small|large --ship`` has shipped the policy."""
    from countdown_study.policy.model import is_shipped

    recipe = sft.RECIPES[name]
    if not is_shipped(recipe.policy):
        pytest.skip(f"{recipe.policy} is not shipped yet")
    info = json.loads((recipe.dest / sft.SHIPPED_INFO_FILE).read_text())
    assert sft.config_from_dict(info["config"]) == recipe.config and info["steps_done"] == recipe.config.steps
    assert json.loads((recipe.dest / "config.json").read_text())["dtype"] == recipe.weights_dtype
    quality = info["quality"]
    assert sft.quality_shortfalls(quality, recipe.goal) == SHIPPED_SHORTFALLS[name]
    assert quality["measured_with"] == {"policy": recipe.policy, "tasks": "generated:1000:0", "seed": 0,
                                        "sampling": asdict(recipe.sampling)}  # fmt: skip


def test_recipes_name_the_shipped_policies():
    assert tuple(sft.RECIPES) == sft_cli.RECIPE_NAMES == ("solver", "search", "small", "large")
    solver, search = sft.RECIPES["solver"], sft.RECIPES["search"]
    assert solver.config == sft.SFTConfig() and solver.dest == EMBEDDED_CHECKPOINT_DIR
    assert (solver.sampling, solver.goal) == (sft.QUALITY_SAMPLING, sft.QUALITY_GOAL)
    assert search.dest == EMBEDDED_POLICIES["embedded-search"] and search.dest.name == "embedded-search"
    assert search.config.init_from == "embedded" and search.config.search is not None
    assert search.config.model == solver.config.model  # continues the embedded weights
    assert {recipe.policy for recipe in sft.RECIPES.values()} == set(EMBEDDED_POLICIES) == set(SHIP_COMMANDS)
    for name, recipe in sft.RECIPES.items():  # each policy's missing-weights error names its own recipe
        option = "" if name == "solver" else f" --recipe {name}"
        assert SHIP_COMMANDS[recipe.policy] == f"countdown-study sft{option} --ship"
        assert recipe.dest.name == recipe.policy and recipe.dest.parent == EMBEDDED_CHECKPOINT_DIR.parent


def test_the_scale_recipes_are_the_solver_recipe_at_other_sizes():
    solver = sft.RECIPES["solver"].config
    embedded = solver.model.num_parameters
    for name, share in (("small", (0.2, 0.3)), ("large", (3.0, 4.0))):
        recipe = sft.RECIPES[name]
        config = recipe.config
        # only the shape, the peak rate and the checkpoint interval (a runtime field) differ
        assert (
            replace(config, model=solver.model, lr=solver.lr, checkpoint_every=solver.checkpoint_every)
            == solver
        )
        assert share[0] <= config.model.num_parameters / embedded <= share[1]
        assert config.lr * config.model.hidden_size == pytest.approx(solver.lr * solver.model.hidden_size)
        assert config.model.hidden_size % config.model.num_heads == 0
        assert (recipe.sampling, recipe.goal) == (sft.STUDY_QUALITY_SAMPLING, sft.SCALE_QUALITY_GOAL)
    assert (sft.RECIPES["small"].weights_dtype, sft.RECIPES["large"].weights_dtype) == ("float32", "bfloat16")
    assert sft.RECIPES["large"].config.checkpoint_every <= 100  # a multi-hour run loses little when stopped
    assert sft.STUDY_QUALITY_SAMPLING.max_new_tokens == 224 and not sft.STUDY_QUALITY_SAMPLING.stop_at_answer


def test_a_recipe_refuses_an_unknown_policy_or_storage():
    solver = sft.RECIPES["solver"]
    with pytest.raises(ValueError, match="recipe policy 'embedded-huge' is not a shipped name"):
        replace(solver, policy="embedded-huge")
    with pytest.raises(
        ValueError, match="weights_dtype must be one of \\['bfloat16', 'float32'\\], got 'int8'"
    ):
        replace(solver, weights_dtype="int8")


# --- the command line ---------------------------------------------------------------------------------


def test_command_line_options_reach_the_config():
    parser = argparse.ArgumentParser()
    sft_cli.configure_parser(parser)
    args = parser.parse_args(
        ["--steps", "7", "--seed", "3", "--threads", "1", "--multi-attempt-share", "0.2"]
    )
    assert sft_cli.config_from_args(args) == replace(
        sft.SFTConfig(), steps=7, seed=3, threads=1, multi_attempt_share=0.2
    )
    assert sft_cli.config_from_args(parser.parse_args([])) == sft.SFTConfig()  # the shipped run
    args = parser.parse_args(["--resume-from", "results/runs/sft-x", "--ship", "--root", "elsewhere"])
    assert args.ship and str(args.resume_from) == "results/runs/sft-x" and str(args.root) == "elsewhere"
    assert build_parser().parse_args(["sft", "--steps", "7"])._module is sft_cli
    search = parser.parse_args(["--recipe", "search", "--steps", "7"])
    assert sft_cli.config_from_args(search) == replace(sft.RECIPES["search"].config, steps=7)
    for name in ("small", "large"):
        sized = parser.parse_args(["--recipe", name, "--threads", "1"])
        assert sft_cli.config_from_args(sized) == replace(sft.RECIPES[name].config, threads=1)


def test_the_command_trains_in_the_store_and_prints_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sft_cli, "config_from_args", lambda args: TINY)
    args = argparse.Namespace(recipe="solver", root=tmp_path, resume_from=None, no_progress=True, ship=False,
                              reproduce=False, steps=None, threads=None, batch_size=None,
                              checkpoint_every=None)  # fmt: skip
    assert sft_cli.cli_main(args) == 0
    store = sft.open_run(TINY, tmp_path)
    assert store.is_done and str(store.path) in capsys.readouterr().out


def test_the_command_ships_the_large_recipe_in_bf16_with_its_quality(tmp_path, monkeypatch, capsys):
    from countdown_study.policy import model as policy_model

    dest = tmp_path / "embedded-large"
    monkeypatch.setitem(policy_model.EMBEDDED_POLICIES, "embedded-large", dest)
    monkeypatch.setitem(sft.RECIPES, "large", replace(sft.RECIPES["large"], config=TINY))
    parser = argparse.ArgumentParser()
    sft_cli.configure_parser(parser)
    args = parser.parse_args(
        ["--recipe", "large", "--ship", "--root", str(tmp_path / "runs"), "--no-progress"]
    )
    assert sft_cli.cli_main(args) == 0
    out = capsys.readouterr().out
    assert f"shipped embedded-large to {dest}" in out and "truncated" in out
    assert json.loads((dest / "config.json").read_text())["dtype"] == "bfloat16"
    quality = json.loads((dest / sft.SHIPPED_INFO_FILE).read_text())["quality"]
    assert quality["measured_with"]["policy"] == "embedded-large"
    assert quality["measured_with"]["sampling"] == asdict(sft.STUDY_QUALITY_SAMPLING)
    assert {"pass@1", "pass@16", "well_formed", "answer_spans_per_rollout", "truncated"} <= set(quality)
