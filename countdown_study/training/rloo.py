"""One RLOO step: sampler -> rollouts -> rewards -> advantages -> update (``rloo_step``).

1. ``sampler.next_batch(step, P)`` picks P tasks; probes the sampler asks for are rolled out and
   handed back (``observe_probe``) before the update, without gradients.
2. The run's rollout engine (built once per run) draws G completions per prompt with behaviour
   log-probs, seeded by ``derive_seed(run seed, step, Stream.ROLLOUT)``. With a group filter
   (``TrainConfig.group_filter``: DAPO's dynamic sampling, band-pass) ``draw_groups`` keeps drawing
   batches (``sampler.refill_batch``) until P groups pass it; the discarded ones are counted in the log.
3. ``countdown.grading.grade_batch`` grades every completion once (rewards, correctness, reasons;
   ``reward="commit"``: report 003's commit reward replaces the rewards); ``rloo_advantages`` gives (P, G).
4. The update (``policy_update``): micro-batches of sequences through ``rollout.sequence_logprobs`` under
   bf16 autocast (vocabulary projections ``logprob_chunk`` tokens at a time when set), ``rloo_loss`` (+
   every auxiliary loss of ``aux_losses``), gradients accumulated over the whole batch, clipped, one AdamW
   step.
5. ``sampler.observe(step, batch, grades, advantages)``, then one line of the step log (with the probes'
   rollouts and tokens, so a curriculum's extra generation is visible beside its result).

Every tensor of a step follows the policy's device (``rollout.model_device``). The loss is
``objectives.rloo``; the run around the steps (resume, checkpoints, evaluations) is ``training.loop``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from countdown_study.countdown.commit import commit_rewards
from countdown_study.countdown.grading import Grades, grade_batch
from countdown_study.objectives.rloo import rloo_advantages, rloo_loss
from countdown_study.rollout import Rollouts, model_device, sequence_logprobs
from countdown_study.rollout.core import HOST
from countdown_study.samplers import Batch, Sampler
from countdown_study.seeding import Stream, derive_seed
from countdown_study.training.common import prompts_for
from countdown_study.training.group_filters import fill, keep_groups, mixed_groups
from countdown_study.training.rloo_config import TrainConfig

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


def is_checkpointing(model) -> bool:
    """Whether ``model``'s decoder layers recompute their activations in the backward pass."""
    if hasattr(model, "activation_checkpointing_enable"):
        return bool(model.is_activation_checkpointing)
    return bool(model.is_gradient_checkpointing)


def enable_checkpointing(model) -> None:
    """Turn on non-reentrant activation checkpointing of ``model``'s decoder layers, once: transformers'
    ``activation_checkpointing_enable`` where it has it (newer than 5.16), else ``gradient_checkpointing_enable``."""
    if is_checkpointing(model):
        return
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def policy_update(
    model,
    ref_model,
    optimizer: torch.optim.Optimizer,
    rollouts: Rollouts,
    advantages: torch.Tensor,
    config: TrainConfig,
    extra_losses: Sequence[tuple[str, torch.Tensor]] = (),
) -> dict[str, float]:
    """Accumulate the RLOO loss over length-grouped micro-batches of the P * G sequences, clip, step (with
    ``config.gradient_checkpointing``, the layers' activations recomputed in the backward pass)."""
    if config.gradient_checkpointing:
        enable_checkpointing(model)
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
            reference = None
            if config.loss.kl_coef > 0:  # first: its forward's buffers are gone before the policy's graph
                with torch.no_grad():
                    reference = sequence_logprobs(
                        ref_model,
                        prompts,
                        completions,
                        config.sampling.temperature,
                        chunk_tokens=config.logprob_chunk,
                    ).logprobs
            current = sequence_logprobs(
                model,
                prompts,
                completions,
                config.sampling.temperature,
                with_entropy=config.loss.entropy_coef > 0,
                chunk_tokens=config.logprob_chunk,
            )
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


# ---------------------------------------------------------------------------------------------------
# Groups: drawn, graded, filtered
# ---------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------
# One step
# ---------------------------------------------------------------------------------------------------


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
