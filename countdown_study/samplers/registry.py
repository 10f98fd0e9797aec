"""The sampler registry: every sampler a run can name, written out in one dict.

``SAMPLERS`` maps a name (``TrainConfig.sampler``, ``study.Method.sampler``) to a ``SamplerEntry``: the
sampler's class, the preset config the name stands for and any fixed constructor arguments. Importing a
sampler module registers nothing; a name exists because its line is here. Report 004's teacher router
needs a language model, which the samplers layer never imports: its entry names its builder by path
(``training.teacher.teacher_router``), imported only when a run builds that sampler.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from countdown_study.countdown.synthetic import RuleBasedGenerator
from countdown_study.countdown.task import Task
from countdown_study.samplers.bandit_router import ADSC_REAL_ONLY, ADSC_SYNTHETIC, BanditRouterSampler
from countdown_study.samplers.base import Sampler, UniformWithoutReplacement, UniformWithReplacement
from countdown_study.samplers.beta_posterior import BETA_POSTERIOR, BetaPosteriorSampler
from countdown_study.samplers.difficulty_pools import DIFFICULTY_POOLS, DifficultyPoolsSampler
from countdown_study.samplers.feature_space import FeatureSpaceSampler
from countdown_study.samplers.fixed_buckets import FIXED_V1, FIXED_V2, FixedBucketSampler
from countdown_study.samplers.fsc_config import FSC_PRESETS
from countdown_study.samplers.reward_adaptive import ADAPTIVE_V1, ADAPTIVE_V2, RewardAdaptiveSampler
from countdown_study.samplers.sec import SEC, SECSampler
from countdown_study.samplers.sliding_window import SLIDING_WINDOW, SlidingWindowSampler
from countdown_study.samplers.solution_count import (
    SOLUTION_COUNT_ADAPTIVE,
    SOLUTION_COUNT_HYBRID,
    SOLUTION_COUNT_STAGED,
    SolutionCountAdaptiveSampler,
    SolutionCountStagedSampler,
)
from countdown_study.samplers.staged import STAGED_THIRDS, StagedSampler


@dataclass(frozen=True)
class SamplerEntry:
    """One registered sampler: how its name builds it."""

    sampler: type[Sampler]
    """The sampler's class."""
    config: Any = None
    """The preset the name stands for; None: the class's own default."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Fixed constructor options beside the run's (``adsc_rule_based``'s task source factory)."""
    builder: str = ""
    """``"module:function"`` building the sampler where it needs a layer above this one, imported when a
    run builds it (called like ``from_options``); "": ``sampler.from_options``."""
    proposes: bool = False
    """Whether the sampler trains on tasks it makes up (a task source: report 004's synthetic routers): the
    run hands it the keys of every task it evaluates (``exclude_keys``), which it then never proposes."""

    def __call__(self, pool: Sequence[Task], seed: int = 0, **options: Any) -> Sampler:
        """The sampler over ``pool`` with the run's ``options`` (``Sampler.from_options``)."""
        build = load_builder(self.builder) if self.builder else self.sampler.from_options
        preset = {} if self.config is None else {"config": self.config}
        return build(pool=pool, seed=seed, **preset, **self.arguments, **options)

    @property
    def refillable(self) -> bool:
        """Whether the sampler draws more than one batch per step (it implements ``choose_refill``)."""
        return self.sampler.choose_refill is not Sampler.choose_refill


def load_builder(path: str) -> Callable[..., Sampler]:
    """The function ``"package.module:name"`` names, its module imported now."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"a sampler builder is written 'module:function', got {path!r}")
    return getattr(importlib.import_module(module), name)


SAMPLERS: dict[str, SamplerEntry] = {
    "uniform": SamplerEntry(UniformWithoutReplacement),
    "uniform_replacement": SamplerEntry(UniformWithReplacement),
    "fixed_v1": SamplerEntry(FixedBucketSampler, FIXED_V1),
    "fixed_v2": SamplerEntry(FixedBucketSampler, FIXED_V2),
    "adaptive_v1": SamplerEntry(RewardAdaptiveSampler, ADAPTIVE_V1),
    "adaptive_v2": SamplerEntry(RewardAdaptiveSampler, ADAPTIVE_V2),
    "sliding_window": SamplerEntry(SlidingWindowSampler, SLIDING_WINDOW),
    "staged_thirds": SamplerEntry(StagedSampler, STAGED_THIRDS),
    "solution_count_staged": SamplerEntry(SolutionCountStagedSampler, SOLUTION_COUNT_STAGED),
    "solution_count_adaptive": SamplerEntry(SolutionCountAdaptiveSampler, SOLUTION_COUNT_ADAPTIVE),
    "solution_count_hybrid": SamplerEntry(SolutionCountAdaptiveSampler, SOLUTION_COUNT_HYBRID),
    **{name: SamplerEntry(FeatureSpaceSampler, config) for name, config in FSC_PRESETS.items()},
    "adsc_real_only": SamplerEntry(BanditRouterSampler, ADSC_REAL_ONLY),
    "adsc_rule_based": SamplerEntry(
        BanditRouterSampler, ADSC_SYNTHETIC, arguments={"source_factory": RuleBasedGenerator}, proposes=True
    ),
    "adsc_teacher": SamplerEntry(
        BanditRouterSampler,
        ADSC_SYNTHETIC,
        builder="countdown_study.training.teacher:teacher_router",
        proposes=True,
    ),
    "difficulty_pools": SamplerEntry(DifficultyPoolsSampler, DIFFICULTY_POOLS),
    "beta_posterior": SamplerEntry(BetaPosteriorSampler, BETA_POSTERIOR),
    "sec": SamplerEntry(SECSampler, SEC),
}
"""Every sampler by name (module docstring); ``samplers`` says how to add one."""


REFILLABLE: tuple[str, ...] = tuple(name for name, entry in SAMPLERS.items() if entry.refillable)
"""Samplers that draw more than one batch per step (``Sampler.refill_batch``): the ones a group filter
(``training.group_filters``) runs with. The curricula decide from one batch per step and refuse."""


def sampler_entry(name: str) -> SamplerEntry:
    """The registry entry of ``name``; unknown names fail listing the known ones."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; known samplers: {sorted(SAMPLERS)}")
    return SAMPLERS[name]


def proposes_tasks(name: str) -> bool:
    """Whether the sampler ``name`` makes up tasks to train on (``SamplerEntry.proposes``)."""
    return sampler_entry(name).proposes


def make_sampler(name: str, pool: Sequence[Task], seed: int = 0, **options: Any) -> Sampler:
    """Build the sampler ``name`` over ``pool`` with a run's ``options``."""
    return sampler_entry(name)(pool=pool, seed=seed, **options)


def run_options(name: str, options: Mapping[str, Any], steps: int, prompts_per_step: int) -> dict[str, Any]:
    """``options`` with what the sampler ``name`` takes from its run (``Sampler.run_options``: a run of
    ``steps`` steps of ``prompts_per_step`` prompts) added where they leave it, after their own keys."""
    taken = sampler_entry(name).sampler.run_options(options, steps, prompts_per_step)
    return {**options, **{key: value for key, value in taken.items() if key not in options}}
