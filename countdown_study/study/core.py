"""Studies: several methods x seeds on the same problems, through the run store, with paired tests.

A study is a list of ``Method`` rows (the SFT starting policy, IPO, or RLOO with a sampler) run at a
``StudyPreset`` (``tiny`` for tests, ``quick`` for minutes on 2 cores, ``full`` for the paper). Every
method of every notebook shares the preset's training pool, evaluation tasks, sampling and seeds, so
their per-problem results pair up; identical configs share one run in the store (the uniform RLOO
baseline is trained once and reused by every notebook).

``run_study`` returns a ``StudyResult``: the per-sample verdict tables of every (method, seed),
from which ``summary_table``, ``difficulty_table`` and ``paired_table`` derive the notebooks' tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from countdown_study.evaluation.evaluate import EVAL_SAMPLING
from countdown_study.evaluation.passk import pass_at_k, problem_table, summarize
from countdown_study.policy import policy_identity
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.store import RunBusyError, RunStore
from countdown_study.study.stats import aggregate_seeds, paired_bootstrap, wilson_interval
from countdown_study.training.common import evaluate_run, load_run_policy, study_tasks
from countdown_study.training.ipo import IPOConfig, train_ipo
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.specs import DataSpec, EvalSpec

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
    """Generation budget in training and evaluation."""
    data: DataSpec = field(default_factory=DataSpec)
    """Starting policy (tokenizer, template) of every method, training pool, held-out evaluation source;
    its ``eval_limit`` is replaced by this preset's."""
    ipo_prompts: int = 512
    """Prompts sampled for IPO pairs."""
    survey_tasks: int = 20_000
    """Generated tasks surveyed by the task-and-solver notebook."""
    threads: int = 2
    """torch threads of every run (part of its config): 2 for one study at a time on 2 cores, 1 for
    studies run side by side (``countdown-study run --jobs 2``)."""

    @property
    def run_data(self) -> DataSpec:
        """The data of every run at this preset (``data`` with the preset's evaluation size)."""
        return replace(self.data, eval_limit=self.eval_limit)

    @property
    def run_eval(self) -> EvalSpec:
        """The evaluation of every run at this preset (the reports' sampling, the preset's budget)."""
        return EvalSpec(self.eval_n, replace(EVAL_SAMPLING, max_new_tokens=self.max_new_tokens))

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
                        max_new_tokens=48, data=DataSpec(train_tasks="generated:500:1"), ipo_prompts=16,
                        survey_tasks=300, threads=1),
    # Minutes on 2 cores: one seed, 20 RLOO steps of 16 prompts x 8, 100 shared tasks x 16.
    "quick": StudyPreset("quick", seeds=(0,), steps=20, prompts_per_step=16, group_size=8, eval_limit=100,
                         eval_n=16, ipo_prompts=256),
    # The paper: 3 seeds, the CPU preset (60 steps of 32 x 8), 500 shared tasks x 16 samples; one thread
    # per run, two studies side by side (`--jobs 2`: 1.09x the RLOO steps per minute of one two-thread
    # run, benchmarks/results/parallel_runs.json).
    "full": StudyPreset("full", seeds=(0, 1, 2), steps=60, prompts_per_step=32, group_size=8, eval_limit=500,
                        eval_n=16, survey_tasks=490_000, threads=1),
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


# ---------------------------------------------------------------------------------------------------
# Methods and studies
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One row of a study."""

    name: str
    """Label in tables and figures."""
    kind: str = "rloo"
    """``sft`` (evaluate the starting policy), ``ipo`` or ``rloo``."""
    sampler: str = "uniform"
    """RLOO sampler name."""
    options: dict = field(default_factory=dict)
    """Sampler options (``total_steps`` is filled in from the preset when the sampler takes it)."""
    changes: dict = field(default_factory=dict)
    """Other ``TrainConfig`` fields to change (e.g. ``format_score``)."""

    def __post_init__(self) -> None:
        if self.kind not in ("sft", "ipo", "rloo"):
            raise ValueError(f"unknown method kind {self.kind!r}; choose sft, ipo or rloo")


EMBEDDED_MODEL = "embedded 3.4M Qwen2 (SFT by this package)"
"""How tables name the policy behind our numbers."""

SFT = Method("SFT", kind="sft")
IPO = Method("IPO", kind="ipo")
UNIFORM = Method("RLOO uniform", sampler="uniform")
UNIFORM_REPLACEMENT = Method("RLOO uniform (with replacement)", sampler="uniform_replacement")

REPORT_000 = (
    Method("Fixed v1", sampler="fixed_v1"),
    Method("Fixed v2", sampler="fixed_v2"),
    Method("Adaptive v1", sampler="adaptive_v1"),
    Method("Adaptive v2", sampler="adaptive_v2"),
)
"""Report 000's Table 1 rows (compared with ``UNIFORM``)."""

_BINARY = {"format_score": 0.0}
REPORT_001 = (
    Method("RLOO uniform (binary reward)", sampler="uniform", changes=_BINARY),
    Method("Sliding window", sampler="sliding_window", changes=_BINARY),
    Method("Staged thirds", sampler="staged_thirds", changes=_BINARY),
)
"""Report 001's comparison, all with its binary reward; the first row is the baseline."""


def run_method(
    method: Method, preset: StudyPreset, seed: int, root=None, progress: bool = True, wait: bool = True
) -> RunStore:
    """Run (or load) one method at one seed; ``wait=False`` raises ``RunBusyError`` if it runs elsewhere."""
    if method.kind == "sft":
        return evaluate_policy_run(preset.eval_config(seed), root=root, wait=wait)
    if method.kind == "ipo":
        return train_ipo(preset.ipo_config(seed), root=root, progress=progress, wait=wait)
    options = dict(method.options)
    if method.sampler in ("staged_thirds", "solution_count_staged"):
        options.setdefault("total_steps", preset.steps)
    config = preset.train_config(method.sampler, seed, sampler_options=options, **method.changes)
    return train(config, root=root, progress=progress, wait=wait)


def run_all(
    methods: Sequence[Method], preset: StudyPreset, root=None, progress: bool = True
) -> dict[tuple[str, int], RunStore]:
    """Every (method, seed) run, finished or loaded; runs that another process holds are done last.

    Studies running in parallel (``countdown-study run --jobs 2``) share runs such as the uniform
    baseline: each takes the runs nobody holds first, then waits for the rest.
    """
    pending = [(method, seed) for method in methods for seed in preset.seeds]
    stores: dict[tuple[str, int], RunStore] = {}
    while pending:
        busy = []
        for method, seed in pending:
            try:
                stores[method.name, seed] = run_method(method, preset, seed, root, progress, wait=False)
            except RunBusyError:
                busy.append((method, seed))
        if busy and len(busy) == len(pending):  # all held elsewhere: wait for the first
            method, seed = busy.pop(0)
            stores[method.name, seed] = run_method(method, preset, seed, root, progress, wait=True)
        pending = busy
    return stores


@dataclass(frozen=True)
class StudyResult:
    """Every (method, seed) run of a study and their verdict tables."""

    preset: StudyPreset
    """The preset the study ran at."""
    runs: pd.DataFrame
    """One row per (method, seed): run id, path, kind, status."""
    samples: pd.DataFrame
    """Every per-sample verdict row, with ``method`` and ``seed`` columns."""
    steps: pd.DataFrame
    """Every RLOO step-log row, with ``method`` and ``seed`` columns."""
    methods: tuple[str, ...]
    """Method names in study order."""


def run_study(
    methods: Sequence[Method], preset: StudyPreset | str, root=None, progress: bool = True
) -> StudyResult:
    """Run every method at every seed of ``preset`` (reusing finished runs) and gather the results."""
    preset = study_preset(preset) if isinstance(preset, str) else preset
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise ValueError(f"method names must be unique, got {names}")
    stores = run_all(methods, preset, root=root, progress=progress)
    runs, samples, steps = [], [], []
    for method in methods:
        for seed in preset.seeds:
            store = stores[method.name, seed]
            runs.append({"method": method.name, "seed": seed, "kind": method.kind, "run_id": store.run_id,
                         "path": str(store.path), **_provenance_fields(store)})  # fmt: skip
            table = store.read_table("eval")
            samples.append(table.assign(method=method.name, seed=seed))
            log = store.read_steps()
            if log and method.kind == "rloo":
                steps.append(pd.DataFrame(log).assign(method=method.name, seed=seed))
    return StudyResult(
        preset=preset,
        runs=pd.DataFrame(runs),
        samples=pd.concat(samples, ignore_index=True),
        steps=pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(),
        methods=tuple(names),
    )


def _provenance_fields(store: RunStore) -> dict[str, Any]:
    record = store.provenance()
    return {key: record.get(key) for key in ("git_sha", "git_dirty", "started", "finished", "torch_threads")}


# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------

METRICS = (
    "pass@1",
    "pass@2",
    "pass@4",
    "pass@8",
    "pass@16",
    "avg_pass@k",
    "mean_score",
    "exact_rate",
    "well_formed",
)
"""Summary metrics reported per method."""


def run_summaries(result: StudyResult, by: str | None = None) -> pd.DataFrame:
    """One row per (method, seed[, group]) with the summary metrics of ``evaluate.summarize``."""
    rows = []
    for (method, seed), table in result.samples.groupby(["method", "seed"], sort=False):
        groups = [(None, table)] if by is None else list(table.groupby(by, sort=True))
        for key, group in groups:
            summary = summarize(group)
            row = {"method": method, "seed": seed, **{m: summary.get(m) for m in METRICS if m in summary}}
            if by is not None:
                row[by] = key
            rows.append(row)
    return pd.DataFrame(rows)


def summary_table(result: StudyResult, by: str | None = None) -> pd.DataFrame:
    """Per method (and group): each metric's mean over seeds, its sample s.d. and the seed count."""
    per_seed = run_summaries(result, by)
    keys = ["method"] + ([by] if by else [])
    rows = []
    for key, group in per_seed.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        for metric in METRICS:
            if metric in group and group[metric].notna().all():
                agg = aggregate_seeds(group[metric].tolist())
                row[metric] = agg.mean
                row[f"{metric}_sd"] = agg.sd
        row["n_seeds"] = int(group["seed"].nunique())
        rows.append(row)
    table = pd.DataFrame(rows)
    order = {name: i for i, name in enumerate(result.methods)}
    return table.sort_values(
        by=keys, key=lambda col: col.map(order) if col.name == "method" else col
    ).reset_index(drop=True)


def problem_matrix(result: StudyResult, method: str, metric: str) -> np.ndarray:
    """Per-problem ``metric`` of ``method``, shape (problems, seeds), problems by task index."""
    table = result.samples[result.samples["method"] == method]
    if table.empty:
        raise ValueError(f"no results for method {method!r}; have {list(result.methods)}")
    columns = []
    for seed in result.preset.seeds:
        problems = problem_table(table[table["seed"] == seed])
        if metric not in problems:
            raise ValueError(f"unknown per-problem metric {metric!r}; have {list(problems.columns)}")
        columns.append(problems.sort_values("task_index")[metric].to_numpy(dtype=float))
    return np.stack(columns, axis=1)  # (P, S)


def paired_table(
    result: StudyResult,
    contrasts: Sequence[tuple[str, str]],
    metrics: Sequence[str] = ("pass@1", "pass@16"),
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired bootstrap of ``a - b`` over the shared problems for each contrast and metric.

    Columns ``contrast, metric, diff, ci_low, ci_high, n_tasks, n_seeds`` (+ ``prob_positive``). With
    several seeds a problem's value is its mean over seeds and problems are resampled.
    """
    rows = []
    for a, b in contrasts:
        for metric in metrics:
            test = paired_bootstrap(
                problem_matrix(result, a, metric), problem_matrix(result, b, metric), n_resamples, seed
            )
            rows.append({"contrast": f"{a} vs {b}", "metric": metric, "diff": test.diff, "ci_low": test.ci_low,
                         "ci_high": test.ci_high, "n_tasks": test.n, "n_seeds": len(result.preset.seeds),
                         "prob_positive": test.prob_positive})  # fmt: skip
    return pd.DataFrame(rows)


def pass_at_k_curves(result: StudyResult) -> pd.DataFrame:
    """Per method and k = 1..n: pass@k (mean over problems and seeds) and a Wilson 95% interval.

    The interval treats pass@k x problems as successes out of the problem count (report 001's plots).
    """
    rows = []
    for method in result.methods:
        table = result.samples[result.samples["method"] == method]
        n = int(table.groupby(["seed", "task_index"]).size().min())
        counts = table.groupby(["seed", "task_index"])["correct"].agg(["size", "sum"])
        for k in range(1, n + 1):
            values = [pass_at_k(int(s), int(c), k) for s, c in counts.itertuples(index=False)]
            mean = float(np.mean(values))
            low, high = wilson_interval(mean * len(values), len(values))
            rows.append({"method": method, "k": k, "pass@k": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)
