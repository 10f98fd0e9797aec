"""One row of a study and the run config it stands for.

A ``Method`` names how a row trains (the SFT starting policy evaluated as it is, IPO, or RLOO with a
registered sampler) and what it changes of its preset; ``method_config`` turns it into the config that
``methods.run_method`` runs at a ``StudyPreset`` and seed, and ``locate_config`` into its place in the run
store, without loading a model. A sampler's row needs nothing of the sampler but its registered name:
what it takes from the run (``total_steps``, a probe size) comes from the sampler itself
(``samplers.run_options``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from countdown_study.countdown.load import limit_spec
from countdown_study.policy import policy_identity
from countdown_study.runs.store import RunStore
from countdown_study.samplers import run_options
from countdown_study.study.presets import EvalRunConfig, StudyPreset
from countdown_study.training.ipo import IPOConfig
from countdown_study.training.loop import TrainConfig, run_identity


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
    """Sampler options; what the sampler takes from its run (``Sampler.run_options``: ``total_steps``, a
    probe size) is filled in from the preset where these leave it."""
    changes: dict = field(default_factory=dict)
    """Other ``TrainConfig`` fields to change (e.g. ``format_score``)."""
    eval_sets: tuple[tuple[str, str], ...] = ()
    """Task sets evaluated beside the preset's held-out tasks (``EvalSpec.extra_sets``)."""
    sampling: dict = field(default_factory=dict)
    """Changes to the training rollouts' ``SamplingConfig`` (report 003: whole rollouts, not cut at the
    first answer)."""
    evaluation: dict = field(default_factory=dict)
    """Changes to the run's ``EvalSpec``; ``SNAPSHOTS`` (report 003's sweep) asks for checkpoint evaluations
    at the preset's interval (``StudyPreset.snapshot_eval``)."""
    loss: dict = field(default_factory=dict)
    """Changes to the run's ``RLOOConfig``, kept beside the preset's KL and entropy coefficients (the
    reports' sequence-sum aggregation)."""

    def __post_init__(self) -> None:
        if self.kind not in ("sft", "ipo", "rloo"):
            raise ValueError(f"unknown method kind {self.kind!r}; choose sft, ipo or rloo")


EMBEDDED_MODEL = "embedded 3.4M Qwen2 (SFT by this package)"
"""How tables name the embedded policy behind our numbers."""
MODEL_LABELS = {
    "embedded": EMBEDDED_MODEL,
    "embedded-search": "embedded 3.4M Qwen2 (search-style SFT by this package)",
}
"""Table labels of the shipped policies."""


def model_label(policy: str) -> str:
    """How tables name ``policy``: a shipped policy's label, a Hugging Face id as is, a local folder by its
    own name (tables never name a folder of this machine)."""
    policy = str(policy)
    if policy in MODEL_LABELS:
        return MODEL_LABELS[policy]
    return Path(policy).name if Path(policy).is_dir() else policy


RUN_PREFIXES = {"sft": "eval", "ipo": "ipo", "rloo": "rloo"}
"""The readable part of each kind's run id (``evaluate_policy_run``, ``train_ipo``, ``train``)."""


def method_config(method: Method, preset: StudyPreset, seed: int) -> EvalRunConfig | IPOConfig | TrainConfig:
    """The config ``run_method`` runs for ``method`` at ``seed``: an ``EvalRunConfig`` (``sft``), an
    ``IPOConfig`` (``ipo``) or a ``TrainConfig`` (``rloo``); building it loads no model."""
    if method.kind == "sft":
        return _with_sets(preset.eval_config(seed), method)
    if method.kind == "ipo":
        return _with_sets(preset.ipo_config(seed), method)
    options = run_options(method.sampler, method.options, preset.steps, preset.prompts_per_step)
    config = preset.train_config(method.sampler, seed, sampler_options=options, **method.changes)
    if method.sampling:
        config = replace(config, sampling=replace(config.sampling, **method.sampling))
    if method.evaluation:
        config = replace(config, eval=replace(config.eval, **evaluation_changes(method, preset)))
    if method.loss:
        config = replace(config, loss=replace(config.loss, **method.loss))
    return _with_sets(config, method)


def evaluation_changes(method: Method, preset: StudyPreset) -> dict[str, Any]:
    """The ``EvalSpec`` changes of ``method.evaluation`` at ``preset``: ``SNAPSHOTS`` becomes the preset's
    snapshot interval and validation size (``StudyPreset.snapshot_eval``)."""
    changes = dict(method.evaluation)
    if changes.pop("snapshots", False):
        changes = {**preset.snapshot_eval, **changes}
    return changes


def locate_config(kind: str, config, root=None) -> RunStore:
    """The run store ``run_config`` uses for ``config`` of a method of ``kind`` (its run id and folder),
    without making, loading or running anything (``is_done`` says whether it finished). An RLOO run's id
    covers every model it uses (``training.loop.run_identity``)."""
    identity = run_identity(config) if kind == "rloo" else policy_identity(config.data.policy)
    return RunStore.locate(config, root=root, prefix=RUN_PREFIXES[kind], identity=identity)


def _with_sets(config, method: Method):
    """``config`` with the method's extra evaluation sets (unchanged without any: same run id).

    An extra set never has more tasks than the preset's held-out set: a generated set's count is capped
    at ``data.eval_limit`` (``countdown.load.limit_spec``; ours). The full preset's 200-task OOD set is
    whole (500 held-out tasks); the quick preset evaluates 8 OOD tasks and the tiny one 6, so a smaller
    preset is not dominated by a set it reads only beside the main one.
    """
    if not method.eval_sets:
        return config
    sets = tuple((name, limit_spec(source, config.data.eval_limit)) for name, source in method.eval_sets)
    return replace(config, eval=replace(config.eval, extra_sets=sets))
