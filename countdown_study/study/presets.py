"""Study presets (``tiny``, ``quick``, ``full``): the ``cpu`` training preset at a study's sizes.

Every method of every notebook at one preset shares its training pool, evaluation tasks, sampling and
seeds, so per-problem results pair up across methods and notebooks. One preset system: a study preset
names only what differs from the training preset ``cpu`` (``training.rloo_config.PRESETS``), and its run
configs are that preset with the study's sizes (``train_config``, ``ipo_config``, ``eval_config``). The
evaluation-only run of the starting policy (``EvalRunConfig``, ``evaluate_policy_run``) is
``evaluation.run``, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from countdown_study.evaluation.config import DataSpec, EvalRunConfig, EvalSpec
from countdown_study.evaluation.run import evaluate_policy, evaluate_policy_run
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.training.ipo import IPOConfig
from countdown_study.training.rloo_config import PRESETS, REPORTS_LOSS, TrainConfig, named

__all__ = [
    "DATA_FIELDS",
    "STUDY_PRESETS",
    "EvalRunConfig",
    "StudyPreset",
    "evaluate_policy",
    "evaluate_policy_run",
    "study_preset",
]

M = TypeVar("M")
"""A method row of a study (``study.methods.Method``)."""
CPU = PRESETS["cpu"]
"""The training preset every study preset sizes (``training.rloo_config.PRESETS``): its defaults are the study
presets' defaults, and every RLOO run of a study is this config at the preset's sizes."""

# ---------------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyPreset:
    """Size of a study; every method of every notebook at one preset shares these. A field left out is the
    ``cpu`` training preset's (``CPU``)."""

    name: str
    """Preset name."""
    seeds: tuple[int, ...]
    """Training seeds; each method runs once per seed (``method_seeds``)."""
    steps: int = CPU.steps
    """RLOO steps per run."""
    prompts_per_step: int = CPU.prompts_per_step
    """P, prompts per step."""
    group_size: int = CPU.group_size
    """G, samples per prompt."""
    eval_limit: int = CPU.data.eval_limit
    """Shared held-out evaluation tasks."""
    eval_n: int = CPU.eval.n
    """Samples per evaluation task."""
    max_new_tokens: int = CPU.sampling.max_new_tokens
    """Generation budget of training rollouts (they stop at ``</answer>``)."""
    eval_max_new_tokens: int = CPU.eval.sampling.max_new_tokens
    """Generation budget of evaluation rollouts (whole rollouts, the last answer graded): the study's,
    ``evaluation.defaults.EVAL_MAX_NEW_TOKENS`` (its docstring says why)."""
    data: DataSpec = CPU.data
    """Starting policy (tokenizer, template) of every method, training pool, held-out evaluation source;
    its ``eval_limit`` is replaced by this preset's."""
    ipo_prompts: int = 512
    """Prompts sampled for IPO pairs."""
    survey_tasks: int = 20_000
    """Generated tasks surveyed by the task-and-solver notebook."""
    snapshots: int = 6
    """Checkpoint evaluations of a run that asks for them (report 003's sweep, ``methods.SNAPSHOTS``): one
    every ``steps // snapshots`` steps and one after the last (``snapshot_every``); 6 gives report 003's
    every 10 of the full preset's 60 steps."""
    validation_size: int = CPU.eval.validation_size
    """Validation tasks of those evaluations: the first this many of the training pool, held out of the
    run's training draws (report 003's ``train[:200]``, training on ``train[200:]``;
    ``training.specs.split_validation``)."""
    threads: int = CPU.threads
    """torch threads of every run (part of its config): 2 for one study at a time on 2 cores, 1 for
    studies run side by side (``countdown-study run --jobs 2``)."""
    loss: RLOOConfig = CPU.loss
    """The RLOO loss of every RLOO run: no KL or entropy term in the quick presets (``CPU_LOSS``); the
    reports' KL to the frozen starting policy and entropy bonus in the full preset (``REPORTS_LOSS``)."""

    @property
    def run_data(self) -> DataSpec:
        """The data of every run at this preset (``data`` with the preset's evaluation size)."""
        return replace(self.data, eval_limit=self.eval_limit)

    @property
    def snapshot_every(self) -> int:
        """Steps between checkpoint evaluations (``snapshots``), rounded up so that a run evaluates at most
        ``snapshots`` checkpoints: 10 of the full preset's 60 steps, 2 of the quick preset's 3 (after steps 2
        and 3)."""
        return max(1, -(-self.steps // self.snapshots))

    @property
    def snapshot_eval(self) -> dict[str, int]:
        """The ``EvalSpec`` changes of a run evaluating checkpoints at this preset (``methods.SNAPSHOTS``)."""
        return {"snapshot_every": self.snapshot_every, "validation_size": self.validation_size}

    @property
    def run_eval(self) -> EvalSpec:
        """The evaluation of every run at this preset (the reports' sampling, the preset's budget)."""
        sampling = replace(CPU.eval.sampling, max_new_tokens=self.eval_max_new_tokens)
        return replace(CPU.eval, n=self.eval_n, sampling=sampling)

    def first_seeds(self, count: int | None) -> StudyPreset:
        """This preset with only its first ``count`` training seeds (all of them where ``count`` is None or
        not smaller): a notebook that compares on a fixed number of seeds (notebook 09's sizes)."""
        return self if count is None or count >= len(self.seeds) else replace(self, seeds=self.seeds[:count])

    def method_seeds(self, methods: Iterable[M]) -> list[tuple[M, int]]:
        """Every ``(method, seed)`` of ``methods`` at this preset's seeds, method by method: the runs of a
        study, in the order they are run, gathered and listed."""
        return [(method, seed) for method in methods for seed in self.seeds]

    def train_config(self, sampler: str = "uniform", seed: int = 0, **changes: Any) -> TrainConfig:
        """The RLOO run of ``sampler`` at this preset: the ``cpu`` training preset at its sizes, ``changes``
        last."""
        sized = {
            "data": self.run_data,
            "eval": self.run_eval,
            "sampler": sampler,
            "steps": self.steps,
            "prompts_per_step": self.prompts_per_step,
            "group_size": self.group_size,
            "sampling": replace(CPU.sampling, max_new_tokens=self.max_new_tokens),
            "loss": self.loss,
            "checkpoint_every": max(1, min(CPU.checkpoint_every, self.steps)),
            "seed": seed,
            "threads": self.threads,
        }
        return replace(CPU, **{**sized, **changes})

    def ipo_config(self, seed: int = 0) -> IPOConfig:
        """The IPO reference run at this preset (its pair samples drawn as the RLOO runs' rollouts)."""
        return IPOConfig(
            data=self.run_data, eval=self.run_eval, prompts=self.ipo_prompts, group_size=self.group_size,
            sampling=self.train_config(seed=seed).sampling, seed=seed, threads=self.threads,
        )  # fmt: skip

    def eval_config(self, seed: int = 0) -> EvalRunConfig:
        """The evaluation of the starting policy (the SFT row) at this preset."""
        return EvalRunConfig(data=self.run_data, eval=self.run_eval, seed=seed, threads=self.threads)


STUDY_PRESETS: dict[str, StudyPreset] = {
    # Seconds: exercises every code path of a notebook (tests).
    "tiny": StudyPreset("tiny", seeds=(0,), steps=2, prompts_per_step=4, group_size=4, eval_limit=6,
                        max_new_tokens=48, eval_max_new_tokens=48, data=DataSpec(train_tasks="generated:500:1"), ipo_prompts=16,
                        survey_tasks=300, threads=1, snapshots=1, validation_size=6),
    # The README's main command: every notebook and code path in under 10 minutes on 2 idle cores. One
    # seed, 3 RLOO steps of 6 prompts x 4 samples, 8 shared tasks x 16, checkpoints evaluated after steps 2
    # and 3 on 8 validation tasks; the numbers are too noisy to read, the run shows the study works.
    "quick": StudyPreset("quick", seeds=(0,), steps=3, prompts_per_step=6, group_size=4, eval_limit=8,
                         ipo_prompts=32, survey_tasks=5_000, snapshots=2, validation_size=8),
    # The paper: 5 seeds (the fewest a t-interval over seeds works with), the CPU preset as it is (60 steps
    # of 32 x 8, 500 shared tasks x 16 samples) with the reports' KL 0.001 and entropy 0.001; one thread
    # per run, two studies side by side (`--jobs 2`: 1.09x the RLOO steps per minute of one two-thread run,
    # benchmarks/results/parallel_runs.json).
    "full": StudyPreset("full", seeds=(0, 1, 2, 3, 4), survey_tasks=490_000, threads=1, loss=REPORTS_LOSS),
}  # fmt: skip
"""Study sizes by name."""


DATA_FIELDS = tuple(f.name for f in fields(DataSpec) if f.name != "eval_limit")
"""``DataSpec`` fields ``study_preset`` accepts by name (``policy``, ``tokenizer``, ``template``, ...)."""


def study_preset(name: str, **changes: Any) -> StudyPreset:
    """The named study preset with some fields changed; unknown names fail.

    ``DataSpec`` fields may be given by name (``study_preset("full", policy=..., tokenizer=...)``, the
    paper road); they change the preset's ``data``.
    """
    preset = named(STUDY_PRESETS, name, "study")
    data = {key: changes.pop(key) for key in DATA_FIELDS if key in changes}
    return replace(preset, data=replace(preset.data, **data), **changes)
