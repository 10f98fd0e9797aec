"""The RLOO training loop: sampler -> rollouts -> rewards -> advantages -> update, with resume.

One step (``rloo_step``):

1. ``sampler.next_batch(step, P)`` picks P tasks; probes the sampler asks for are rolled out and
   handed back (``observe_probe``) before the update, without gradients.
2. The run's rollout engine (built once per run) draws G completions per prompt with behaviour
   log-probs, seeded by ``derive_seed(run seed, step, Stream.ROLLOUT)``. With a group filter
   (``TrainConfig.group_filter``: DAPO's dynamic sampling, band-pass) ``draw_groups`` keeps drawing
   batches (``sampler.refill_batch``) until P groups pass it; the discarded ones are counted in the log.
3. ``countdown.grading.grade_batch`` grades every completion once (rewards, correctness, reasons;
   ``reward="commit"``: report 003's commit reward replaces the rewards); ``rloo_advantages`` gives (P, G).
4. The update: micro-batches of sequences through ``rollout.sequence_logprobs`` under bf16 autocast
   (vocabulary projections ``logprob_chunk`` tokens at a time when set), ``rloo_loss`` (+ every
   auxiliary loss of ``aux_losses``), gradients accumulated over the whole batch, clipped, one AdamW step.
5. ``sampler.observe(step, batch, grades, advantages)``, then one line of the step log (with the probes'
   rollouts and tokens, so a curriculum's extra generation is visible beside its result).

At the end of training the sampler's logs (``Sampler.records``) go to ``tables/sampler_<name>.parquet``.

Devices: ``TrainConfig.device`` (``training.device``) is resolved when the run starts; the policy, the
reference and the rollout engine live there, and every tensor of a step follows the policy
(``rollout.model_device``); the resolved device is recorded in ``provenance.json``.

Auxiliary losses (report 003's VCC) plug in beside the RLOO loss through the config
(``TrainConfig.aux_losses``, see ``training.aux``), so the run id covers their settings.

``train(config)`` runs a whole run in the run store (``results/runs/<run_id>/``): a finished config is
loaded instead of trained; an unfinished one resumes from its last checkpoint (written every
``checkpoint_every`` steps, atomically) and ends with the same metrics as an uninterrupted run. The run id
covers the config and ``run_identity`` (the fingerprint of every model the run uses). A run that evaluates
snapshots (``EvalSpec.snapshot_every``) takes its validation tasks out of its training pool first
(``specs.split_validation``): its sampler's task indices count from the first task after them.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from countdown_study.countdown.commit import commit_rewards
from countdown_study.countdown.grading import Grades, grade_batch
from countdown_study.evaluation.evaluate import EVAL_SAMPLING
from countdown_study.objectives.rloo import RLOOConfig, rloo_advantages, rloo_loss
from countdown_study.policy import policy_identity
from countdown_study.rollout import Rollouts, SamplingConfig, make_engine, model_device, sequence_logprobs
from countdown_study.rollout.core import HOST
from countdown_study.runs.files import OMIT_AT_DEFAULT
from countdown_study.runs.memory import return_free_heap
from countdown_study.runs.store import RunStore
from countdown_study.samplers import REFILLABLE, SAMPLERS, Batch, Sampler, make_sampler
from countdown_study.seeding import Stream, derive_seed
from countdown_study.training.aux import AUX_LOSSES, build_aux_losses
from countdown_study.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from countdown_study.training.common import (
    evaluate_run,
    evaluate_snapshot,
    load_reference,
    load_run_policy,
    prompts_for,
    save_final,
    snapshot_steps,
    start_on_device,
    study_tasks,
)
from countdown_study.training.device import DEFAULT_DEVICE, check_device, resolve_device
from countdown_study.training.finite import check_finite_step
from countdown_study.training.group_filters import GroupFilterSpec, fill, keep_groups, mixed_groups
from countdown_study.training.specs import (
    VALIDATION_SPLIT,
    AuxLossSpec,
    DataSpec,
    EvalSpec,
    check_positive,
    check_seed,
    eval_on_engine,
    split_validation,
)
from countdown_study.training.teacher import (  # teacher_router registers "adsc_teacher"
    sampler_models,
    teacher_fingerprint,
    teacher_router,  # noqa: F401
)
from countdown_study.training.vcc import VCCObjective  # noqa: F401  (registers the "vcc" objective)

# ---------------------------------------------------------------------------------------------------
# Config and presets
# ---------------------------------------------------------------------------------------------------


ATTENTIONS = ("eager", "sdpa", "flash_attention_2", "flex_attention")
"""Attention implementations a run may ask transformers for (``TrainConfig.attention``)."""
REWARDS = ("outcome", "commit")
"""Training rewards (``TrainConfig.reward``): the verifier's score of the final answer, or report 003's
commit reward (``countdown.commit.commit_reward``)."""


@dataclass(frozen=True)
class TrainConfig:
    """One RLOO run. Defaults are the CPU preset for the embedded policy."""

    data: DataSpec = field(default_factory=DataSpec)
    """Policy, tokenizer, template, training pool and held-out evaluation tasks."""
    eval: EvalSpec = field(default_factory=EvalSpec)
    """Samples per evaluation task and evaluation sampling."""
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
    micro_batch: int = 64
    """Sequences per forward/backward, grouped by length; gradients accumulate over the P * G sequences
    (64 was fastest here: 0.93 s per update of 32 x 8 against 1.04 s at 128 and 1.53 s at 256)."""
    attention: str = "eager"
    """Attention implementation of the update's forward passes (transformers' ``attn_implementation``).
    ``eager`` (matmuls and a softmax) took 1.0 s per update of 32 x 8 on 2 CPU cores where ``sdpa``
    took 1.55 s, 38% of it in the fused CPU kernel's backward; on a GPU ``sdpa`` is the better choice."""
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
    reward: str = field(default="outcome", metadata=OMIT_AT_DEFAULT)
    """``outcome`` (the final answer's score) or ``commit`` (report 003's ``1 - (L - e)/L`` for a first
    correct answer ending at character e of L, floored at ``format_score``; sample with
    ``stop_at_answer=False`` so that text after a commit exists). Advantages use it; ``correct`` and
    ``exact_rate`` stay the final answer's verdict."""
    aux_losses: tuple[AuxLossSpec, ...] = ()
    """Auxiliary objectives added to the RLOO loss (report 003's VCC), with their settings."""
    group_filter: GroupFilterSpec | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Drop graded groups and draw more until the batch is full (DAPO's dynamic sampling, OpenRLHF's
    band-pass; ``training.group_filters``); only with a sampler of ``samplers.REFILLABLE``."""
    seed: int = 0
    """Run seed: rollouts, sampler draws and evaluation derive from it."""
    threads: int = 2
    """torch threads (results are reproducible for a fixed seed and thread count)."""
    autocast: bool = True
    """bf16 autocast for the update's forward passes (1.6x faster on this CPU than fp32)."""
    checkpoint_every: int = 10
    """Write a resumable checkpoint every this many steps (and at the end)."""
    device: str = field(default=DEFAULT_DEVICE, metadata=OMIT_AT_DEFAULT)
    """Where the policy, the reference, rollouts and the update run: ``cpu``, ``cuda`` or ``auto`` (``cuda``
    when torch sees one, else ``cpu``; resolved at run start and recorded in ``provenance.json``). ``cuda``
    on a machine without one is refused before a run folder is made (``training.device``)."""
    logprob_chunk: int = field(default=0, metadata=OMIT_AT_DEFAULT)
    """Completion tokens per vocabulary projection in the update's log-probs (``sequence_logprobs``'
    ``chunk_tokens``): each chunk's float32 logits are recomputed in the backward pass instead of a
    micro-batch holding all of them (64 x 256 tokens x a 151,936-token vocabulary: 10 GB per copy). 0:
    one full-logits forward per micro-batch, as before; the embedded model's 31-token vocabulary needs
    none."""

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError(f"RLOO needs group_size >= 2 (a leave-one-out baseline), got {self.group_size}")
        if self.prompts_per_step < 1 or self.steps < 0 or self.micro_batch < 1:
            raise ValueError("prompts_per_step and micro_batch must be >= 1 and steps >= 0")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")
        if self.logprob_chunk < 0:
            raise ValueError(f"logprob_chunk must be >= 0 (0: full logits), got {self.logprob_chunk}")
        check_device(self.device)
        check_positive("lr", self.lr)
        check_positive("grad_clip", self.grad_clip)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        check_seed(self.seed)
        if self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {self.attention!r}; choose one of {ATTENTIONS}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {self.sampler!r}; known samplers: {sorted(SAMPLERS)}")
        if self.group_filter is not None and self.sampler not in REFILLABLE:
            raise ValueError(
                f"group filter {self.group_filter.name!r} needs a sampler that draws more than one batch per"
                f" step ({', '.join(REFILLABLE)}); {self.sampler!r} draws one"
            )
        if self.reward not in REWARDS:
            raise ValueError(f"unknown reward {self.reward!r}; choose one of {REWARDS}")
        unknown = [spec.name for spec in self.aux_losses if spec.name not in AUX_LOSSES]
        if unknown:  # refused here, before a run folder is made or a model loads
            raise ValueError(f"unknown auxiliary objective(s) {unknown}; registered: {sorted(AUX_LOSSES)}")


def on_engine(config: TrainConfig, engine: str) -> TrainConfig:
    """``config`` with its training rollouts and its evaluation on rollout engine ``engine``
    (``specs.eval_on_engine``): ``countdown-study train --engine`` and the paper preset. ``native`` leaves
    a native config as it was."""
    sampling = replace(config.sampling, engine=engine)
    return replace(config, sampling=sampling, eval=eval_on_engine(config.eval, sampling))


PRESETS: dict[str, TrainConfig] = {
    # CPU preset for the embedded policy: 32 prompts x 8, lr 1e-4, 96 new tokens, 60 steps, no KL.
    "cpu": TrainConfig(),
    # The reports' defaults (000, 002, 004): lr 1e-5 constant, 128 prompts, G = 8, KL 0.001,
    # entropy 0.001, temperature 1.0, 100 steps, on the paper policy and data; on a GPU where there is
    # one, the update's log-probs projected 4,096 tokens at a time (a 151,936-token vocabulary). Training
    # and evaluation both sample with vLLM in bf16 (one instance), evaluation at the reports' 1,024 tokens.
    "paper": on_engine(
        TrainConfig(
            data=DataSpec(
                policy="asingh15/qwen-sft-countdown-defaultproj",
                tokenizer="Qwen/Qwen2.5-0.5B",
                template="qwen_chat",
                train_tasks="asingh15/countdown_tasks_3to4",
            ),
            eval=EvalSpec(sampling=replace(EVAL_SAMPLING, max_new_tokens=1024)),
            steps=100,
            prompts_per_step=128,
            micro_batch=8,
            attention="sdpa",
            lr=1e-5,
            loss=RLOOConfig(kl_coef=0.001, entropy_coef=0.001),
            sampling=SamplingConfig(max_new_tokens=1024, dtype="bfloat16"),
            device="auto",
            logprob_chunk=4096,
        ),
        "vllm",
    ),
}
"""Named configs; ``preset(name, **changes)`` derives variants."""


def preset(name: str, **changes: Any) -> TrainConfig:
    """The named preset with some fields changed."""
    if name not in PRESETS:
        raise ValueError(f"unknown training preset {name!r}; choose one of {sorted(PRESETS)}")
    return replace(PRESETS[name], **changes)


# ---------------------------------------------------------------------------------------------------
# One update
# ---------------------------------------------------------------------------------------------------


def _pad_right(values: Sequence[torch.Tensor], width: int, device: torch.device) -> torch.Tensor:
    """Host tensors right-padded with 0 into one (n, T) tensor on ``device`` (written on the host, moved
    once)."""
    out = torch.zeros(len(values), width, device=HOST)  # (n, T)
    for i, v in enumerate(values):
        out[i, : len(v)] = v
    return out.to(device)


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
    device = model_device(model)
    flat_adv = advantages.reshape(-1).to(device)  # (N,)
    prompt_ids = rollouts.sample_prompt_ids
    completion_ids = rollouts.completion_ids
    total = rollouts.num_samples
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    sums: dict[str, float] = {}
    for chunk in length_grouped(lengths, config.micro_batch):
        weight = len(chunk) / total
        prompts = [prompt_ids[i] for i in chunk]
        completions = [completion_ids[i] for i in chunk]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.autocast):
            current = sequence_logprobs(
                model,
                prompts,
                completions,
                config.sampling.temperature,
                with_entropy=config.loss.entropy_coef > 0,
                chunk_tokens=config.logprob_chunk,
            )
            reference = None
            if config.loss.kl_coef > 0:
                with torch.no_grad():
                    reference = sequence_logprobs(
                        ref_model,
                        prompts,
                        completions,
                        config.sampling.temperature,
                        chunk_tokens=config.logprob_chunk,
                    ).logprobs
        behaviour = _pad_right([rollouts.logprobs[i] for i in chunk], current.logprobs.shape[1], device)
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


def _grades(rollouts: Rollouts, tasks: Sequence, config: TrainConfig) -> Grades:
    """Every completion graded once with the run's reward settings, ``(P, G)`` arrays."""
    grades = grade_batch(rollouts.texts, tasks, rollouts.group_size, config.format_score)
    if config.reward == "commit":
        rewards = commit_rewards(rollouts.texts, tasks, rollouts.group_size, config.format_score)
        grades = replace(grades, rewards=rewards)  # (P, G)
    return grades


def batch_metrics(grades: Grades, rollouts: Rollouts) -> dict[str, float]:
    """Reward summaries of one step: mean reward, exact rate, share of groups with mixed outcomes."""
    return {
        "reward_mean": float(grades.rewards.mean()),
        "exact_rate": float(grades.correct.mean()),
        "mixed_groups": float(mixed_groups(grades.correct).mean()),
        "tokens": rollouts.num_tokens,
        "completion_len": rollouts.num_tokens / rollouts.num_samples,
    }


@dataclass(frozen=True)
class DrawnGroups:
    """A step's groups: those the update uses, and every one generated for them."""

    batch: Batch
    """Tasks of the groups the update uses."""
    rollouts: Rollouts
    """Their rollouts."""
    grades: Grades
    """Their grades ``(P, G)``."""
    seen_batch: Batch
    """Tasks of every generated group (the sampler observes these)."""
    seen_rollouts: Rollouts
    """Rollouts of every generated group."""
    seen_grades: Grades
    """Grades of every generated group."""
    stats: dict
    """A group filter's numbers for the step log (none without a filter)."""
    grade_seconds: float
    """Seconds spent grading."""


def _group_seed(config: TrainConfig, step: int, draw: int) -> int:
    keys = (step, Stream.ROLLOUT) if draw == 0 else (step, Stream.ROLLOUT, draw)  # draw 0: the plain step
    return derive_seed(config.seed, *keys)


def draw_groups(step: int, engine, sampler: Sampler, config: TrainConfig, template: str) -> DrawnGroups:
    """The step's groups: one batch of P prompts, or with ``config.group_filter`` batches until P groups
    pass the filter or ``max_rounds`` batches were drawn (``training.group_filters``).

    Batch ``draw`` (0, 1, ...) is ``sampler.next_batch`` then ``sampler.refill_batch``, its rollouts
    seeded by ``derive_seed(seed, step, Stream.ROLLOUT, draw)`` (draw 0: the unfiltered step's seed).
    """
    spec, size = config.group_filter, config.prompts_per_step
    parts, kept, grade_seconds = [], 0, 0.0
    for draw in range(1 if spec is None else spec.max_rounds):
        batch = sampler.next_batch(step, size) if draw == 0 else sampler.refill_batch(step, draw, size)
        with torch.no_grad():
            rollouts = engine.sample(
                prompts_for(batch.tasks, template), config.group_size, _group_seed(config, step, draw)
            )
        clock = time.perf_counter()
        grades = _grades(rollouts, batch.tasks, config)  # (P, G) each
        grade_seconds += time.perf_counter() - clock
        if spec is None:
            return DrawnGroups(batch, rollouts, grades, batch, rollouts, grades, {}, grade_seconds)
        rows = fill(kept, keep_groups(grades.correct, spec), size)
        parts.append((batch, rollouts, grades, rows))
        kept += len(rows)
        if kept >= size:
            break
    seen_rollouts = Rollouts.concat([r for _, r, _, _ in parts])
    used = Rollouts.concat([r.take_groups(rows) for _, r, _, rows in parts])
    seen_grades = Grades.concat([g for _, _, g, _ in parts])
    stats = {
        "filter_rounds": len(parts),
        "generated_groups": len(seen_rollouts.prompts),
        "kept_groups": kept,
        "discarded_groups": len(seen_rollouts.prompts) - kept,
        "discarded_rollouts": seen_rollouts.num_samples - used.num_samples,
        "discarded_tokens": seen_rollouts.num_tokens - used.num_tokens,
        "generated_exact_rate": float(seen_grades.correct.mean()),
    }
    return DrawnGroups(
        batch=Batch.concat([b.take(rows) for b, _, _, rows in parts]),
        rollouts=used,
        grades=Grades.concat([g.take_groups(rows) for _, _, g, rows in parts]),
        seen_batch=Batch.concat([b for b, _, _, _ in parts]),
        seen_rollouts=seen_rollouts,
        seen_grades=seen_grades,
        stats=stats,
        grade_seconds=grade_seconds,
    )


def answer_metrics(grades: Grades) -> dict[str, float]:
    """Report 003's rollout structure in a step of whole rollouts: answer spans per rollout, and the share
    of rollouts that wrote a verifying answer and ended on another (abandoned it)."""
    abandoned = (grades.first_verifying >= 0) & ~grades.correct  # (P, G)
    return {"answer_spans": float(grades.answer_spans.mean()), "abandoned_rate": float(abandoned.mean())}


def rloo_step(
    step: int,
    model,
    ref_model,
    engine,
    optimizer: torch.optim.Optimizer,
    sampler: Sampler,
    config: TrainConfig,
    template: str,
    aux_losses: Sequence = (),
) -> dict[str, Any]:
    """One RLOO step (module docstring) with the run's rollout ``engine``; returns the step's log record."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    probe_stats = {}

    probes = sampler.probe_requests(step)
    if probes:
        probe_tasks = [sampler.pool[i] for i in probes]
        with torch.no_grad():
            probe_rollouts = engine.sample(
                prompts_for(probe_tasks, template),
                config.group_size,
                derive_seed(config.seed, step, Stream.PROBE),
            )
        sampler.observe_probe(step, probes, _grades(probe_rollouts, probe_tasks, config))
        probe_stats = {
            "probe_rollouts": probe_rollouts.num_samples,
            "probe_tokens": probe_rollouts.num_tokens,
        }
    seconds["probe"] = time.perf_counter() - clock

    clock = time.perf_counter()
    drawn = draw_groups(step, engine, sampler, config, template)
    batch, rollouts, grades = drawn.batch, drawn.rollouts, drawn.grades
    seconds["sample"] = time.perf_counter() - clock - drawn.grade_seconds
    seconds["grade"] = drawn.grade_seconds

    update: dict[str, float] = {"skipped_update": 1.0}
    aux_stats: dict[str, float] = {}
    clock = time.perf_counter()
    if len(batch.tasks):  # a group filter may keep none: no optimizer step then
        advantages = rloo_advantages(torch.from_numpy(grades.rewards).float())  # (P, G)
        extra = []
        for aux in aux_losses:
            with torch.autocast(model_device(model).type, dtype=torch.bfloat16, enabled=config.autocast):
                loss, stats = aux.loss(model, ref_model, rollouts, grades, batch)
            extra.append((aux.name, loss))
            aux_stats.update({f"{aux.name}_{k}": v for k, v in stats.items()})
        update = policy_update(model, ref_model, optimizer, rollouts, advantages, config, extra)
    seconds["update"] = time.perf_counter() - clock

    seen_advantages = rloo_advantages(torch.from_numpy(drawn.seen_grades.rewards).float())  # (P', G)
    sampler.observe(step, drawn.seen_batch, drawn.seen_grades, seen_advantages.numpy())
    shown = (grades, rollouts) if len(batch.tasks) else (drawn.seen_grades, drawn.seen_rollouts)
    record = {"step": step, **batch_metrics(*shown), **probe_stats, **drawn.stats, **update, **aux_stats}
    if not config.sampling.stop_at_answer:  # whole rollouts: answers can be abandoned
        record.update(answer_metrics(shown[0]))
    record.update({f"sampler_{k}": v for k, v in sampler.stats().items()})
    record.update({f"seconds_{k}": round(v, 4) for k, v in seconds.items()})
    if batch.arms:
        labels, counts = np.unique(np.asarray(batch.arms), return_counts=True)
        record.update({f"batch_{lab}": int(c) for lab, c in zip(labels, counts, strict=True)})
    return record


# ---------------------------------------------------------------------------------------------------
# A whole run
# ---------------------------------------------------------------------------------------------------


def _tensorboard(store: RunStore):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(store.path / "tensorboard"))


def run_training(config: TrainConfig, store: RunStore, progress: bool = True) -> dict:
    """Train (resuming from the store's checkpoint if any), evaluate, and return the results dict.

    The body of an RLOO run: a module-level function of (config, store), so an executor can ship it.
    """
    device = start_on_device(store, config.device)
    model, tokenizer, template = load_run_policy(config.data, config.attention, device)
    aux_losses = build_aux_losses(config.aux_losses, tokenizer)
    ref_model = None
    if config.loss.kl_coef > 0 or any(getattr(a, "needs_reference", False) for a in aux_losses):
        ref_model = load_reference(config.data, config.attention, device)
    pool, eval_tasks = study_tasks(config.data)
    pool, validation = split_validation(pool, config.eval)  # the validation tasks never train
    sampler = make_sampler(config.sampler, pool, config.seed, **config.sampler_options)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True
    )
    engine = make_engine(model, tokenizer, config.sampling)
    engine.engine_for(config.eval.sampling)  # the evaluation's engine too, made now (once) if it differs
    done = load_checkpoint(store, model, optimizer, sampler)
    store.truncate_steps(done)
    snapshots = snapshot_steps(config.eval, config.steps)
    snapshot_sets = {"val": validation, "test": eval_tasks}
    writer = _tensorboard(store)
    bar = tqdm(
        range(done, config.steps),
        desc=f"rloo {store.run_id}",
        disable=not progress,
        initial=done,
        total=config.steps,
    )
    for step in bar:
        record = rloo_step(step, model, ref_model, engine, optimizer, sampler, config, template, aux_losses)
        check_finite_step("RLOO", step, record)  # a NaN loss or gradient stops the run: no DONE
        store.log_step(record)
        store.event(
            "step",
            step=step,
            steps=config.steps,
            seconds=sum(v for k, v in record.items() if k.startswith("seconds_")),
        )
        if writer is not None:
            for key, value in record.items():
                if isinstance(value, (int, float)) and math.isfinite(value):
                    writer.add_scalar(key, value, step)
        bar.set_postfix(reward=f"{record['reward_mean']:.3f}", exact=f"{record['exact_rate']:.3f}")
        if step + 1 in snapshots:
            return_free_heap()  # an evaluation allocates anew: not on top of the step's freed heap
            evaluate_snapshot(
                store, config.eval, config.seed, step + 1, model, tokenizer, snapshot_sets, template, engine
            )
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            save_checkpoint(store, step + 1, model, optimizer, sampler)
            return_free_heap()  # the last step always checkpoints: this also precedes the final evaluation
    if writer is not None:
        writer.close()
    for name, rows in sampler.records().items():
        store.write_table(f"sampler_{name}", pd.DataFrame(rows))
    result = evaluate_run(store, config.eval, config.seed, model, tokenizer, eval_tasks, template, engine)
    save_final(store, model, tokenizer)
    return {"eval": result.summary, "steps": config.steps}


def run_identity(config: TrainConfig) -> dict[str, str]:
    """What decides a run besides its config (``RunStore``'s identity, part of the run id): the fingerprint
    of every model the run uses, the starting policy (also its frozen reference) and a sampler's task
    proposer (``teacher.sampler_models``: ``adsc_teacher``'s teacher), so new weights under the same name
    make new runs; and, for a run with snapshots, that its validation tasks are out of its training pool
    (``specs.VALIDATION_SPLIT``). A run with neither a proposer nor snapshots has the policy's alone."""
    identity = policy_identity(config.data.policy)
    for role, name in sampler_models(config.sampler, config.sampler_options).items():
        identity[role] = teacher_fingerprint(name)
    if config.eval.snapshot_every:
        identity["validation"] = VALIDATION_SPLIT
    return identity


def train(
    config: TrainConfig, root=None, prefix: str = "rloo", progress: bool = True, wait: bool = True
) -> RunStore:
    """Run ``config`` in the run store and return its finished store (loaded if finished before).

    Another process running the same config is waited for (``wait=False``: ``RunBusyError``). The device
    and the task sources of a run still to do are checked first: ``cuda`` without a CUDA device, or an
    empty or unreadable task source, fails before a run folder is made (a finished run loads anywhere).
    """
    identity = run_identity(config)
    if not RunStore.locate(config, root=root, prefix=prefix, identity=identity).is_done:
        resolve_device(config.device)
        with warnings.catch_warnings():  # the run itself warns about its tasks when it loads them
            warnings.simplefilter("ignore")
            study_tasks(config.data)
    store = RunStore.open(config, root=root, prefix=prefix, identity=identity)
    return store.complete(
        partial(run_training, config, progress=progress),
        threads=config.threads, resume_checkpoint=CHECKPOINT, wait=wait, per_step_log=True,
    )  # fmt: skip
