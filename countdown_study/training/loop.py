"""The RLOO training loop: sampler -> rollouts -> rewards -> advantages -> update, with resume.

One step (``rloo_step``):

1. ``sampler.next_batch(step, P)`` picks P tasks; probes the sampler asks for are rolled out and
   handed back (``observe_probe``) before the update, without gradients.
2. ``rollout.sample`` draws G completions per prompt with behaviour log-probs, seeded by
   (run seed, step).
3. The verifier scores every completion (``compute_score``); ``rloo_advantages`` gives (P, G).
4. The update: micro-batches of sequences through ``rollout.sequence_logprobs`` under bf16 autocast,
   ``rloo_loss`` (+ every auxiliary loss of ``aux_losses``), gradients accumulated over the whole
   batch, clipped, one AdamW step.
5. ``sampler.observe(step, batch, rewards, advantages)``, then one line of the step log.

Auxiliary losses (report 003's VCC) plug in beside the RLOO loss: an object with a ``name`` and
``loss(model, ref_model, rollouts, rewards, batch) -> (tensor, stats)`` whose tensor is added to the
batch loss before the optimizer step.

``train(config)`` runs a whole run in the run store (``results/runs/<run_id>/``): a finished config is
loaded instead of trained; an unfinished one resumes from its last checkpoint (written every
``checkpoint_every`` steps, atomically) and ends with the same metrics as an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from countdown_study.countdown.prompts import format_prompt
from countdown_study.countdown.tasks import Task, dedupe, load_tasks
from countdown_study.countdown.verifier import compute_score
from countdown_study.evaluation import evaluate as evaluation
from countdown_study.objectives.rloo import RLOOConfig, rloo_advantages, rloo_loss
from countdown_study.policy import load_policy, policy_identity, prompt_template
from countdown_study.rollout import Rollouts, SamplingConfig, sample, sequence_logprobs
from countdown_study.runs.files import atomic_path
from countdown_study.runs.store import RunStore
from countdown_study.samplers import Batch, Sampler, make_sampler
from countdown_study.seeding import Stream, derive_seed

# ---------------------------------------------------------------------------------------------------
# Config and presets
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """One RLOO run. Defaults are the CPU preset for the embedded policy."""

    policy: str = "embedded"
    """Starting policy (and frozen reference): ``embedded``, a Hugging Face id or a folder."""
    tokenizer: str | None = None
    """Where the tokenizer comes from, if not the policy (the paper road: ``Qwen/Qwen2.5-0.5B``)."""
    train_tasks: str = "generated:20000:1"
    """Training pool source (``load_tasks``); tasks sharing a key with the evaluation set are removed."""
    eval_tasks: str = "generated:1000:0"
    """Held-out evaluation source; the embedded policy's SFT stage never trained on it."""
    eval_limit: int = 500
    """How many (distinct) evaluation tasks to use, from the start of ``eval_tasks``."""
    sampler: str = "uniform"
    """Registered sampler name (``samplers.SAMPLERS``)."""
    sampler_options: dict = field(default_factory=dict)
    """Keyword options of the sampler (its config fields)."""
    steps: int = 60
    """Optimizer steps (one batch of rollouts each)."""
    prompts_per_step: int = 32
    """P, prompts per step."""
    group_size: int = 8
    """G, samples per prompt (at least 2)."""
    micro_batch: int = 128
    """Sequences per forward/backward, grouped by length; gradients accumulate over the P * G sequences."""
    lr: float = 1e-4
    """AdamW learning rate, constant."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    loss: RLOOConfig = field(default_factory=lambda: RLOOConfig(kl_coef=0.0, entropy_coef=0.0))
    """RLOO loss: KL and entropy coefficients, KL estimator, ratio cap, aggregation."""
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(dtype="bfloat16"))
    """How training rollouts are drawn (temperature 1.0, 96 new tokens, stop at ``</answer>``)."""
    format_score: float = 0.1
    """Reward of a present but wrong answer (report 001 used 0: the binary reward)."""
    eval_n: int = 16
    """Samples per evaluation task."""
    eval_sampling: SamplingConfig = field(default_factory=lambda: evaluation.EVAL_SAMPLING)
    """How evaluation samples are drawn (the reports': temperature 0.6, top-p 0.95, top-k 20)."""
    seed: int = 0
    """Run seed: rollouts, sampler draws and evaluation derive from it."""
    threads: int = 2
    """torch threads (results are reproducible for a fixed seed and thread count)."""
    autocast: bool = True
    """bf16 autocast for the update's forward passes (1.6x faster on this CPU than fp32)."""
    checkpoint_every: int = 10
    """Write a resumable checkpoint every this many steps (and at the end)."""
    template: str | None = None
    """Prompt template; None: the policy's own (``compact`` for the embedded model)."""

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError(f"RLOO needs group_size >= 2 (a leave-one-out baseline), got {self.group_size}")
        if self.prompts_per_step < 1 or self.steps < 0 or self.micro_batch < 1:
            raise ValueError("prompts_per_step and micro_batch must be >= 1 and steps >= 0")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")


PRESETS: dict[str, TrainConfig] = {
    # CPU preset for the embedded policy: 32 prompts x 8, lr 1e-4, 96 new tokens, 60 steps, no KL.
    "cpu": TrainConfig(),
    # The reports' defaults (000, 002, 004): lr 1e-5 constant, 128 prompts, G = 8, KL 0.001,
    # entropy 0.001, temperature 1.0, 100 steps, on the paper policy and data.
    "paper": TrainConfig(
        policy="asingh15/qwen-sft-countdown-defaultproj",
        tokenizer="Qwen/Qwen2.5-0.5B",
        train_tasks="asingh15/countdown_tasks_3to4",
        steps=100,
        prompts_per_step=128,
        micro_batch=8,
        lr=1e-5,
        loss=RLOOConfig(kl_coef=0.001, entropy_coef=0.001),
        sampling=SamplingConfig(max_new_tokens=1024, engine="vllm"),
        template="qwen_chat",
    ),
}
"""Named configs; ``preset(name, **changes)`` derives variants."""


def preset(name: str, **changes: Any) -> TrainConfig:
    """The named preset with some fields changed."""
    if name not in PRESETS:
        raise ValueError(f"unknown training preset {name!r}; choose one of {sorted(PRESETS)}")
    return replace(PRESETS[name], **changes)


# ---------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------


def study_tasks(config: TrainConfig) -> tuple[list[Task], list[Task]]:
    """(training pool, evaluation tasks): evaluation keys removed from the pool, first ``eval_limit`` kept."""
    held_out = load_tasks(config.eval_tasks)
    eval_tasks = dedupe(held_out)[: config.eval_limit]
    all_eval_keys = {t.key for t in held_out}
    pool = [t for t in load_tasks(config.train_tasks) if t.key not in all_eval_keys]
    if not pool:
        raise ValueError(f"the training pool {config.train_tasks!r} is empty after removing evaluation tasks")
    return pool, eval_tasks


def rewards_of(rollouts: Rollouts, tasks: Sequence[Task], format_score: float) -> np.ndarray:
    """Verifier scores of every completion, ``(P, G)``."""
    group = rollouts.group_size
    scores = [
        compute_score(
            text, {"target": tasks[i // group].target, "numbers": list(tasks[i // group].nums)}, format_score
        )
        for i, text in enumerate(rollouts.texts)
    ]
    return np.asarray(scores, dtype=np.float64).reshape(len(tasks), group)


def _prompts(tasks: Sequence[Task], template: str) -> list[str]:
    return [format_prompt(t.nums, t.target, template) for t in tasks]


# ---------------------------------------------------------------------------------------------------
# One update
# ---------------------------------------------------------------------------------------------------


def _pad_right(values: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    out = torch.zeros(len(values), width)  # (n, T)
    for i, v in enumerate(values):
        out[i, : len(v)] = v
    return out


def length_grouped(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices in micro-batches of at most ``size``, sequences of similar length together (less padding).

    The RLOO loss is a mean over sequences of per-sequence terms, so weighting each micro-batch by its
    share of the sequences gives the same gradient in any grouping.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + size] for start in range(0, len(order), size)]


def policy_update(
    model,
    ref_model,
    optimizer: torch.optim.Optimizer,
    rollouts: Rollouts,
    advantages: torch.Tensor,
    config: TrainConfig,
    extra_losses: Sequence[tuple[str, torch.Tensor]] = (),
) -> dict[str, float]:
    """Accumulate the RLOO loss over length-grouped micro-batches of the P * G sequences, clip, step."""
    model.train()
    flat_adv = advantages.reshape(-1)  # (N,)
    prompt_ids = rollouts.sample_prompt_ids
    completion_ids = rollouts.completion_ids
    total = rollouts.num_samples
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    sums: dict[str, float] = {}
    for chunk in length_grouped(lengths, config.micro_batch):
        weight = len(chunk) / total
        prompts = [prompt_ids[i] for i in chunk]
        completions = [completion_ids[i] for i in chunk]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.autocast):
            current = sequence_logprobs(
                model,
                prompts,
                completions,
                config.sampling.temperature,
                with_entropy=config.loss.entropy_coef > 0,
            )
            reference = None
            if config.loss.kl_coef > 0:
                with torch.no_grad():
                    reference = sequence_logprobs(
                        ref_model, prompts, completions, config.sampling.temperature
                    ).logprobs
        behaviour = _pad_right([rollouts.logprobs[i] for i in chunk], current.logprobs.shape[1])  # (n, T)
        loss, stats = rloo_loss(
            current.logprobs,
            current.mask,
            flat_adv[chunk],
            config.loss,
            behaviour,
            reference,
            current.entropy,
        )
        (loss * weight).backward()
        for key, value in stats.items():
            sums[key] = sums.get(key, 0.0) + value * weight
    for name, extra in extra_losses:
        extra.backward()
        sums[f"{name}_loss"] = float(extra.detach())
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    model.eval()
    sums["grad_norm"] = float(grad_norm)
    return sums


def batch_metrics(rewards: np.ndarray, rollouts: Rollouts) -> dict[str, float]:
    """Reward summaries of one step: mean reward, exact rate, share of groups with mixed outcomes."""
    correct = rewards >= 1.0  # (P, G)
    mixed = correct.any(axis=1) & ~correct.all(axis=1)  # (P,)
    return {
        "reward_mean": float(rewards.mean()),
        "exact_rate": float(correct.mean()),
        "mixed_groups": float(mixed.mean()),
        "tokens": rollouts.num_tokens,
        "completion_len": rollouts.num_tokens / rollouts.num_samples,
    }


def rloo_step(
    step: int,
    model,
    ref_model,
    tokenizer,
    optimizer: torch.optim.Optimizer,
    sampler: Sampler,
    config: TrainConfig,
    template: str,
    aux_losses: Sequence = (),
) -> dict[str, Any]:
    """One RLOO step (module docstring); returns the step's log record."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    probes = sampler.probe_requests(step)
    if probes:
        probe_tasks = [sampler.pool[i] for i in probes]
        with torch.no_grad():
            probe_rollouts = sample(
                model, tokenizer, _prompts(probe_tasks, template), config.group_size, config.sampling,
                derive_seed(config.seed, step, Stream.PROBE),
            )  # fmt: skip
        sampler.observe_probe(step, probes, rewards_of(probe_rollouts, probe_tasks, config.format_score))
    seconds["probe"] = time.perf_counter() - clock

    clock = time.perf_counter()
    batch: Batch = sampler.next_batch(step, config.prompts_per_step)
    with torch.no_grad():
        rollouts = sample(
            model, tokenizer, _prompts(batch.tasks, template), config.group_size, config.sampling,
            derive_seed(config.seed, step, Stream.ROLLOUT),
        )  # fmt: skip
    seconds["sample"] = time.perf_counter() - clock

    clock = time.perf_counter()
    rewards = rewards_of(rollouts, batch.tasks, config.format_score)  # (P, G)
    advantages = rloo_advantages(torch.from_numpy(rewards).float())  # (P, G)
    seconds["grade"] = time.perf_counter() - clock

    clock = time.perf_counter()
    extra = []
    aux_stats: dict[str, float] = {}
    for aux in aux_losses:
        loss, stats = aux.loss(model, ref_model, rollouts, rewards, batch)
        extra.append((aux.name, loss))
        aux_stats.update({f"{aux.name}_{k}": v for k, v in stats.items()})
    update = policy_update(model, ref_model, optimizer, rollouts, advantages, config, extra)
    seconds["update"] = time.perf_counter() - clock

    sampler.observe(step, batch, rewards, advantages.numpy())
    record = {"step": step, **batch_metrics(rewards, rollouts), **update, **aux_stats}
    record.update({f"sampler_{k}": v for k, v in sampler.stats().items()})
    record.update({f"seconds_{k}": round(v, 4) for k, v in seconds.items()})
    if batch.arms:
        labels, counts = np.unique(np.asarray(batch.arms), return_counts=True)
        record.update({f"batch_{lab}": int(c) for lab, c in zip(labels, counts, strict=True)})
    return record


# ---------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------

CHECKPOINT = "last.pt"


def save_checkpoint(store: RunStore, step: int, model, optimizer, sampler: Sampler) -> None:
    """Everything needed to resume after ``step`` steps, written atomically."""
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "sampler": json.dumps(sampler.state_dict()),
    }
    with atomic_path(store.checkpoint_dir / CHECKPOINT) as tmp:
        torch.save(state, tmp)


def load_checkpoint(store: RunStore, model, optimizer, sampler: Sampler) -> int:
    """Restore the last checkpoint; returns the number of steps it covers (0 when there is none)."""
    path = store.path / "checkpoints" / CHECKPOINT
    if not path.is_file():
        return 0
    state = torch.load(path, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    sampler.load_state_dict(json.loads(state["sampler"]))
    return int(state["step"])


def _truncate_log(store: RunStore, steps_done: int) -> None:
    """Drop step-log lines past the checkpoint (written before a crash, redone on resume)."""
    kept = [r for r in store.read_steps() if r["step"] < steps_done]
    with atomic_path(store.path / "steps.jsonl") as tmp:
        tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))


# ---------------------------------------------------------------------------------------------------
# A whole run
# ---------------------------------------------------------------------------------------------------


def evaluate_run(store: RunStore, config, model, tokenizer, eval_tasks, template) -> evaluation.EvalResult:
    """Evaluate with the run config's ``eval_n``, ``eval_sampling`` and ``seed`` and keep the verdicts.

    The compact verdict table (kept in git) goes to ``tables/eval.parquet``, raw texts beside it
    (ignored by git).
    """
    result = evaluation.evaluate(
        model, tokenizer, eval_tasks, n=config.eval_n, sampling=config.eval_sampling, seed=config.seed,
        template=template,
    )  # fmt: skip
    store.write_table("eval", result.samples.drop(columns=["completion"]))
    with atomic_path(store.path / "samples.parquet") as tmp:
        result.samples[["task_index", "sample_index", "completion"]].to_parquet(tmp, index=False)
    return result


def _tensorboard(store: RunStore):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(store.path / "tensorboard"))


def run_training(
    config: TrainConfig, store: RunStore, aux_losses: Sequence = (), progress: bool = True
) -> dict:
    """Train (resuming from the store's checkpoint if any), evaluate, and return the results dict."""
    model, tokenizer = load_policy(config.policy, tokenizer=config.tokenizer)
    ref_model = None
    if config.loss.kl_coef > 0 or any(getattr(a, "needs_reference", False) for a in aux_losses):
        ref_model, _ = load_policy(config.policy, tokenizer=config.tokenizer)
        ref_model.requires_grad_(False)
    template = config.template or prompt_template(model)
    pool, eval_tasks = study_tasks(config)
    sampler = make_sampler(config.sampler, pool, config.seed, **config.sampler_options)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True
    )
    done = load_checkpoint(store, model, optimizer, sampler)
    _truncate_log(store, done)
    writer = _tensorboard(store)
    bar = tqdm(
        range(done, config.steps),
        desc=f"rloo {store.run_id}",
        disable=not progress,
        initial=done,
        total=config.steps,
    )
    for step in bar:
        record = rloo_step(
            step, model, ref_model, tokenizer, optimizer, sampler, config, template, aux_losses
        )
        store.log_step(record)
        if writer is not None:
            for key, value in record.items():
                if isinstance(value, (int, float)) and math.isfinite(value):
                    writer.add_scalar(key, value, step)
        bar.set_postfix(reward=f"{record['reward_mean']:.3f}", exact=f"{record['exact_rate']:.3f}")
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            save_checkpoint(store, step + 1, model, optimizer, sampler)
    if writer is not None:
        writer.close()
    result = evaluate_run(store, config, model, tokenizer, eval_tasks, template)
    model.save_pretrained(store.checkpoint_dir / "final")
    tokenizer.save_pretrained(store.checkpoint_dir / "final")
    return {"eval": result.summary, "steps": config.steps}


def train(
    config: TrainConfig,
    aux_losses: Sequence = (),
    root=None,
    prefix: str = "rloo",
    progress: bool = True,
    wait: bool = True,
) -> RunStore:
    """Run ``config`` in the run store and return its finished store (loaded if finished before).

    Another process running the same config is waited for (``wait=False``: ``RunBusyError``).
    """
    store = RunStore.open(config, root=root, prefix=prefix, identity=policy_identity(config.policy))
    return store.complete(
        lambda s: run_training(config, s, aux_losses, progress),
        threads=config.threads, resume_checkpoint=CHECKPOINT, wait=wait,
    )  # fmt: skip
