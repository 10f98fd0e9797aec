"""Study presets (``tiny``, ``quick``, ``full``) and the evaluation-only run of the starting policy.

Every method of every notebook at one preset shares its training pool, evaluation tasks, sampling and
seeds, so per-problem results pair up across methods and notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any

from countdown_study.evaluation.evaluate import EVAL_MAX_NEW_TOKENS, EVAL_SAMPLING
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.policy import policy_identity
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.store import RunStore
from countdown_study.training.common import evaluate_run, load_run_policy, study_tasks
from countdown_study.training.ipo import IPOConfig
from countdown_study.training.loop import TrainConfig
from countdown_study.training.specs import DataSpec, EvalSpec, check_seed

# ---------------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyPreset:
    """Size of a study; every method of every notebook at one preset shares these."""

    name: str
    """Preset name."""
    seeds: tuple[int, ...]
    """Training seeds; each method runs once per seed."""
    steps: int
    """RLOO steps per run."""
    prompts_per_step: int
    """P, prompts per step."""
    group_size: int
    """G, samples per prompt."""
    eval_limit: int
    """Shared held-out evaluation tasks."""
    eval_n: int
    """Samples per evaluation task."""
    max_new_tokens: int = 96
    """Generation budget of training rollouts (they stop at ``</answer>``)."""
    eval_max_new_tokens: int = EVAL_MAX_NEW_TOKENS
    """Generation budget of evaluation rollouts (whole rollouts, the last answer graded): the study's,
    ``evaluation.defaults.EVAL_MAX_NEW_TOKENS`` (its docstring says why)."""
    data: DataSpec = field(default_factory=DataSpec)
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
    validation_size: int = 200
    """Validation tasks of those evaluations: the first this many of the training pool, held out of the
    run's training draws (report 003's ``train[:200]``, training on ``train[200:]``;
    ``training.specs.split_validation``)."""
    threads: int = 2
    """torch threads of every run (part of its config): 2 for one study at a time on 2 cores, 1 for
    studies run side by side (``countdown-study run --jobs 2``)."""
    loss: RLOOConfig = field(default_factory=lambda: RLOOConfig(kl_coef=0.0, entropy_coef=0.0))
    """The RLOO loss of every RLOO run: no KL or entropy term in the quick presets; the reports' KL 0.001
    to the frozen starting policy and entropy bonus 0.001 in the full preset."""

    @property
    def run_data(self) -> DataSpec:
        """The data of every run at this preset (``data`` with the preset's evaluation size)."""
        return replace(self.data, eval_limit=self.eval_limit)

    @property
    def snapshot_every(self) -> int:
        """Steps between checkpoint evaluations (``snapshots``): 10 of the full preset's 60 steps."""
        return max(1, self.steps // self.snapshots)

    @property
    def snapshot_eval(self) -> dict[str, int]:
        """The ``EvalSpec`` changes of a run evaluating checkpoints at this preset (``methods.SNAPSHOTS``)."""
        return {"snapshot_every": self.snapshot_every, "validation_size": self.validation_size}

    @property
    def run_eval(self) -> EvalSpec:
        """The evaluation of every run at this preset (the reports' sampling, the preset's budget)."""
        return EvalSpec(self.eval_n, replace(EVAL_SAMPLING, max_new_tokens=self.eval_max_new_tokens))

    def train_config(self, sampler: str = "uniform", seed: int = 0, **changes: Any) -> TrainConfig:
        """The RLOO run of ``sampler`` at this preset (CPU preset otherwise)."""
        sampling = SamplingConfig(max_new_tokens=self.max_new_tokens, dtype="bfloat16")
        base = TrainConfig(
            data=self.run_data,
            eval=self.run_eval,
            sampler=sampler,
            steps=self.steps,
            prompts_per_step=self.prompts_per_step,
            group_size=self.group_size,
            sampling=sampling,
            loss=self.loss,
            checkpoint_every=max(1, min(10, self.steps)),
            seed=seed,
            threads=self.threads,
        )
        return replace(base, **changes)

    def ipo_config(self, seed: int = 0) -> IPOConfig:
        """The IPO reference run at this preset."""
        return IPOConfig(
            data=self.run_data, eval=self.run_eval, prompts=self.ipo_prompts, group_size=self.group_size,
            sampling=self.train_config(seed=seed).sampling, seed=seed, threads=self.threads,
        )  # fmt: skip

    def eval_config(self, seed: int = 0) -> EvalRunConfig:
        """The evaluation of the starting policy (the SFT row) at this preset."""
        return EvalRunConfig(data=self.run_data, eval=self.run_eval, seed=seed, threads=self.threads)


STUDY_PRESETS: dict[str, StudyPreset] = {
    # Seconds: exercises every code path of a notebook (tests).
    "tiny": StudyPreset("tiny", seeds=(0,), steps=2, prompts_per_step=4, group_size=4, eval_limit=6, eval_n=16,
                        max_new_tokens=48, eval_max_new_tokens=48, data=DataSpec(train_tasks="generated:500:1"), ipo_prompts=16,
                        survey_tasks=300, threads=1, snapshots=1, validation_size=6),
    # The README's main command: every notebook and code path in about 10 minutes on 2 cores. One seed,
    # 4 RLOO steps of 8 prompts x 4 samples, 10 shared tasks x 16, checkpoints evaluated after steps 2
    # and 4 on 10 validation tasks; the numbers are too noisy to read, the run shows the study works.
    "quick": StudyPreset("quick", seeds=(0,), steps=4, prompts_per_step=8, group_size=4, eval_limit=10,
                         eval_n=16, ipo_prompts=32, survey_tasks=5_000, snapshots=2, validation_size=10),
    # The paper: 5 seeds (the fewest a t-interval over seeds works with), the CPU preset (60 steps of
    # 32 x 8) with the reports' KL 0.001 and entropy 0.001, 500 shared tasks x 16 samples; one thread per
    # run, two studies side by side (`--jobs 2`: 1.09x the RLOO steps per minute of one two-thread run,
    # benchmarks/results/parallel_runs.json).
    "full": StudyPreset("full", seeds=(0, 1, 2, 3, 4), steps=60, prompts_per_step=32, group_size=8, eval_limit=500,
                        eval_n=16, survey_tasks=490_000, threads=1,
                        loss=RLOOConfig(kl_coef=0.001, entropy_coef=0.001)),
}  # fmt: skip
"""Study sizes by name."""


DATA_FIELDS = tuple(f.name for f in fields(DataSpec) if f.name != "eval_limit")
"""``DataSpec`` fields ``study_preset`` accepts by name (``policy``, ``tokenizer``, ``template``, ...)."""


def study_preset(name: str, **changes: Any) -> StudyPreset:
    """The named study preset with some fields changed; unknown names fail.

    ``DataSpec`` fields may be given by name (``study_preset("full", policy=..., tokenizer=...)``, the
    paper road); they change the preset's ``data``.
    """
    if name not in STUDY_PRESETS:
        raise ValueError(f"unknown study preset {name!r}; choose one of {sorted(STUDY_PRESETS)}")
    preset = STUDY_PRESETS[name]
    data = {key: changes.pop(key) for key in DATA_FIELDS if key in changes}
    return replace(preset, data=replace(preset.data, **data), **changes)


# ---------------------------------------------------------------------------------------------------
# Evaluating a policy without training (the SFT row)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalRunConfig:
    """Evaluate a policy on the study's held-out tasks, stored like a training run."""

    data: DataSpec = field(default_factory=DataSpec)
    """Policy to evaluate and the held-out tasks (the training pool is unused; the split is the training
    runs')."""
    eval: EvalSpec = field(default_factory=EvalSpec)
    """Samples per task and evaluation sampling."""
    seed: int = 0
    """Sampling seed."""
    threads: int = 2
    """torch threads."""

    def __post_init__(self) -> None:
        check_seed(self.seed)


def evaluate_policy_run(config: EvalRunConfig, root=None, wait: bool = True) -> RunStore:
    """Evaluate ``config.policy`` once and keep the verdict table in the run store (see ``train.train``)."""
    store = RunStore.open(config, root=root, prefix="eval", identity=policy_identity(config.data.policy))
    return store.complete(partial(evaluate_policy, config), threads=config.threads, wait=wait)


def evaluate_policy(config: EvalRunConfig, store: RunStore) -> dict:
    """The body of an evaluation run: evaluate the policy, keep its verdict table, return the summary."""
    model, tokenizer, template = load_run_policy(config.data)
    _, eval_tasks = study_tasks(config.data)
    result = evaluate_run(store, config.eval, config.seed, model, tokenizer, eval_tasks, template)
    return {"eval": result.summary}
