"""A policy evaluated inside a run: the run's policy and tasks, its final and checkpoint evaluations, and the
evaluation-only run of a policy (the study's SFT row).

Every kind of run (``EvalRunConfig`` here, ``training.ipo``, ``training.loop``) starts the same way: its
device (``start_on_device``), its policy (``load_run_policy``), its training pool and held-out tasks
(``study_tasks``); and ends the same way, its policy evaluated with its ``EvalSpec`` and seed into the
run store (``evaluate_run``). A training run with snapshots also evaluates its checkpoints
(``evaluate_snapshot`` after each of ``snapshot_steps``).
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import TYPE_CHECKING

from countdown_study.countdown.generate import solvable
from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.splits import dedupe
from countdown_study.countdown.task import Task
from countdown_study.evaluation import evaluate as evaluation
from countdown_study.evaluation.config import DataSpec, EvalRunConfig, EvalSpec
from countdown_study.policy import load_policy, policy_identity, prompt_template
from countdown_study.runs.device import describe_device, prepare_device, resolve_device
from countdown_study.runs.files import atomic_path
from countdown_study.runs.store import RunStore
from countdown_study.seeding import derive_seed

if TYPE_CHECKING:
    import torch

# ---------------------------------------------------------------------------------------------------
# What every run starts from
# ---------------------------------------------------------------------------------------------------


def load_run_policy(data: DataSpec, attention: str | None = None, device=None):
    """``(model, tokenizer, template)`` of a run: the policy, its tokenizer, the template it is prompted with.

    ``attention``: the attention implementation of the model's forward (``policy.load_policy``);
    ``device``: where the model goes (a resolved ``torch.device``, ``runs.device``; None: the host).
    """
    model, tokenizer = load_policy(data.policy, tokenizer=data.tokenizer, attention=attention, device=device)
    return model, tokenizer, data.template or prompt_template(model)


def start_on_device(store: RunStore, name: str) -> torch.device:
    """The device a run named ``name`` runs on (``resolve_device``), with its process-wide settings made
    (``prepare_device``) and recorded in the run's ``provenance.json`` for this attempt
    (``describe_device``)."""
    device = resolve_device(name)
    prepare_device(device)
    store.write_json("provenance", {**store.provenance(), **describe_device(device)})
    return device


def study_tasks(data: DataSpec) -> tuple[list[Task], list[Task]]:
    """(training pool, evaluation tasks): evaluation keys removed from the pool, first ``eval_limit`` kept."""
    held_out = load_tasks(data.eval_tasks)
    eval_tasks = dedupe(held_out)[: data.eval_limit]
    if not eval_tasks:
        raise ValueError(f"the evaluation source {data.eval_tasks!r} holds no tasks")
    unsolvable = int((~solvable(eval_tasks)).sum())
    if unsolvable:
        warnings.warn(
            f"{unsolvable} of {len(eval_tasks)} evaluation tasks from {data.eval_tasks!r} have no solution "
            "(they count as failures for every method)",
            stacklevel=2,
        )
    all_eval_keys = {t.key for t in held_out}
    pool = [t for t in load_tasks(data.train_tasks) if t.key not in all_eval_keys]
    if not pool:
        raise ValueError(f"the training pool {data.train_tasks!r} is empty after removing evaluation tasks")
    return pool, eval_tasks


# ---------------------------------------------------------------------------------------------------
# A run's evaluations
# ---------------------------------------------------------------------------------------------------


def evaluate_run(
    store: RunStore, spec: EvalSpec, seed: int, model, tokenizer, eval_tasks, template, engine=None
) -> evaluation.EvalResult:
    """Evaluate with the run's ``EvalSpec`` and seed (on the run's rollout ``engine`` when it has one)
    and keep the verdicts in the run store; each of the spec's ``extra_sets`` is evaluated the same way
    into ``tables/eval_<name>.parquet``.

    The compact verdict table (kept in git) goes to ``tables/eval.parquet``, raw texts beside it
    (ignored by git).
    """
    store.event("evaluate")
    result = evaluation.evaluate(
        model,
        tokenizer,
        eval_tasks,
        n=spec.n,
        sampling=spec.sampling,
        seed=seed,
        template=template,
        batch_size=spec.batch_size,
        engine=engine,
    )
    store.write_table("eval", result.samples.drop(columns=["completion"]))
    with atomic_path(store.path / "samples.parquet") as tmp:
        result.samples[["task_index", "sample_index", "completion"]].to_parquet(tmp, index=False)
    for name, source in spec.extra_sets:
        extra = evaluation.evaluate(
            model, tokenizer, dedupe(load_tasks(source)), n=spec.n, sampling=spec.sampling, seed=seed,
            template=template, batch_size=spec.batch_size, engine=engine,
        )  # fmt: skip
        store.write_table(f"eval_{name}", extra.samples.drop(columns=["completion"]))
    return result


SNAPSHOT_SETS = ("val", "test")
"""The task sets of a snapshot: the validation tasks and the held-out tasks."""


def snapshot_steps(spec: EvalSpec, steps: int) -> tuple[int, ...]:
    """The steps after which ``spec`` evaluates a snapshot: every ``snapshot_every`` and the last step."""
    if not spec.snapshot_every:
        return ()
    return tuple(sorted({*range(spec.snapshot_every, steps + 1, spec.snapshot_every), steps}))


def evaluate_snapshot(
    store: RunStore, spec: EvalSpec, seed: int, step: int, model, tokenizer, task_sets, template, engine
) -> None:
    """Evaluate the policy after ``step`` steps on each of ``task_sets`` (``{name: tasks}``) with
    ``spec.snapshot_n`` samples into ``tables/snapshot_<name>_<step>.parquet``. Sampling is seeded by
    (seed, step) alone, so training draws nothing from it and a resumed run writes the same tables."""
    for name, tasks in task_sets.items():
        result = evaluation.evaluate(
            model, tokenizer, tasks, n=spec.snapshot_n, sampling=spec.sampling, seed=derive_seed(seed, step),
            template=template, batch_size=spec.batch_size, engine=engine,
        )  # fmt: skip
        store.write_table(f"snapshot_{name}_{step}", result.samples.drop(columns=["completion"]))


# ---------------------------------------------------------------------------------------------------
# The evaluation-only run (the SFT row)
# ---------------------------------------------------------------------------------------------------


def evaluate_policy_run(config: EvalRunConfig, root=None, wait: bool = True) -> RunStore:
    """Evaluate ``config.data.policy`` once and keep the verdict table in the run store (as
    ``training.loop.train`` keeps a training run); returns the finished store (loaded if finished before).

    ``cuda`` without a CUDA device fails before a run folder is made (a finished run loads anywhere).
    """
    identity = policy_identity(config.data.policy)
    if not RunStore.locate(config, root=root, prefix="eval", identity=identity).is_done:
        resolve_device(config.device)
    store = RunStore.open(config, root=root, prefix="eval", identity=identity)
    return store.complete(partial(evaluate_policy, config), threads=config.threads, wait=wait)


def evaluate_policy(config: EvalRunConfig, store: RunStore) -> dict:
    """The body of an evaluation run: evaluate the policy, keep its verdict table, return the summary."""
    device = start_on_device(store, config.device)
    model, tokenizer, template = load_run_policy(config.data, device=device)
    _, eval_tasks = study_tasks(config.data)
    result = evaluate_run(store, config.eval, config.seed, model, tokenizer, eval_tasks, template)
    return {"eval": result.summary}
