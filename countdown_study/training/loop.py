"""The RLOO run: its steps (``training.rloo.rloo_step``) in order, with checkpoints, evaluations, resume.

The config is ``training.rloo_config.TrainConfig`` (presets ``PRESETS``); one step is ``training.rloo``
(sampler -> rollouts -> rewards -> advantages -> update); the loss is ``objectives.rloo``. Every name of
those modules a caller imported from here before they were split off is re-exported.

``train(config)`` runs a whole run in the run store (``results/runs/<run_id>/``): a finished config is
loaded instead of trained; an unfinished one resumes from its last checkpoint (written every
``checkpoint_every`` steps, atomically) and ends with the same metrics as an uninterrupted run. The run id
covers the config and ``run_identity`` (the fingerprint of every model the run uses). A run that evaluates
snapshots (``EvalSpec.snapshot_every``) takes its validation tasks out of its training pool first
(``specs.split_validation``): its sampler's task indices count from the first task after them. At the end
of training the sampler's logs (``Sampler.records``) go to ``tables/sampler_<name>.parquet``.

Devices: ``TrainConfig.device`` (``runs.device``) is resolved when the run starts; the policy, the
reference and the rollout engine live there, and every tensor of a step follows the policy
(``rollout.model_device``); the resolved device is recorded in ``provenance.json``.

Auxiliary losses (report 003's VCC) plug in beside the RLOO loss through the config
(``TrainConfig.aux_losses``, see ``training.aux``), so the run id covers their settings.
"""

from __future__ import annotations

import math
import warnings
from functools import partial

import pandas as pd
import torch
from tqdm.auto import tqdm

from countdown_study.policy import policy_identity
from countdown_study.rollout import make_engine
from countdown_study.runs.device import resolve_device
from countdown_study.runs.memory import return_free_heap, return_free_heap_when_low
from countdown_study.runs.store import RunStore
from countdown_study.samplers import make_sampler, proposes_tasks
from countdown_study.training.aux import build_aux_losses
from countdown_study.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from countdown_study.training.common import (
    evaluate_run,
    evaluate_snapshot,
    load_reference,
    load_run_policy,
    save_final,
    snapshot_steps,
    start_on_device,
    study_tasks,
)
from countdown_study.training.finite import check_finite_step
from countdown_study.training.rloo import (
    DrawnGroups,
    answer_metrics,
    batch_metrics,
    draw_groups,
    length_grouped,
    policy_update,
    rloo_step,
)
from countdown_study.training.rloo_config import ATTENTIONS, PRESETS, REWARDS, TrainConfig, on_engine, preset
from countdown_study.training.specs import NEVER_EVALUATED, VALIDATION_SPLIT, evaluated_keys, split_validation
from countdown_study.training.teacher import sampler_models, teacher_fingerprint

__all__ = [
    "ATTENTIONS",
    "PRESETS",
    "REWARDS",
    "DrawnGroups",
    "TrainConfig",
    "answer_metrics",
    "batch_metrics",
    "draw_groups",
    "length_grouped",
    "on_engine",
    "policy_update",
    "preset",
    "rloo_step",
    "run_identity",
    "run_training",
    "train",
]

# ---------------------------------------------------------------------------------------------------
# A whole run
# ---------------------------------------------------------------------------------------------------


def _tensorboard(store: RunStore):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(store.path / "tensorboard"))


def build_sampler(config: TrainConfig, pool: list, eval_tasks: list, validation: list):
    """The run's sampler over its training ``pool``; a sampler that makes up tasks
    (``samplers.proposes_tasks``) is handed the keys of every task the run evaluates
    (``specs.evaluated_keys``: ``eval_tasks``, ``validation`` and the extra evaluation sets), so it never
    proposes one."""
    options = dict(config.sampler_options)
    if proposes_tasks(config.sampler):
        options["exclude_keys"] = evaluated_keys(eval_tasks, validation, config.eval.extra_sets)
    return make_sampler(config.sampler, pool, config.seed, **options)


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
    sampler = build_sampler(config, pool, eval_tasks, validation)
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
        return_free_heap_when_low()  # the step's freed heap, while runs beside this one need the memory
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
    (``specs.VALIDATION_SPLIT``); and, for a sampler that makes up tasks, that it never proposes a task the
    run evaluates (``specs.NEVER_EVALUATED``). A run with none of these has the policy's alone."""
    identity = policy_identity(config.data.policy)
    for role, name in sampler_models(config.sampler, config.sampler_options).items():
        identity[role] = teacher_fingerprint(name)
    if config.eval.snapshot_every:
        identity["validation"] = VALIDATION_SPLIT
    if proposes_tasks(config.sampler):
        identity["proposals"] = NEVER_EVALUATED
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
