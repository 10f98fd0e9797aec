"""Batch samplers: which tasks each RLOO step trains on.

``base`` holds the interface every method plugs into (read its docstring) and the uniform
baselines; each curriculum is a small module beside it. ``make_sampler(name, pool, seed, **options)``
builds a registered sampler and names the known ones when the name is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from countdown_study.countdown.synthetic import RuleBasedGenerator
from countdown_study.countdown.task import Task
from countdown_study.samplers.bandit_router import ADSC_REAL_ONLY, ADSC_SYNTHETIC, BanditRouterSampler
from countdown_study.samplers.base import (
    Batch,
    Sampler,
    UniformWithoutReplacement,
    UniformWithReplacement,
)
from countdown_study.samplers.beta_posterior import BETA_POSTERIOR, BetaPosteriorSampler
from countdown_study.samplers.difficulty_pools import DIFFICULTY_POOLS, DifficultyPoolsSampler
from countdown_study.samplers.feature_space import FSC_PRESETS, FeatureSpaceSampler
from countdown_study.samplers.fixed_buckets import FIXED_V1, FIXED_V2, FixedBucketSampler
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

__all__ = [
    "REFILLABLE",
    "SAMPLERS",
    "Batch",
    "Sampler",
    "UniformWithReplacement",
    "UniformWithoutReplacement",
    "make_sampler",
]

SAMPLERS: dict[str, Callable[..., Sampler]] = {
    "uniform": UniformWithoutReplacement,
    "uniform_replacement": UniformWithReplacement,
    "fixed_v1": partial(FixedBucketSampler.from_options, config=FIXED_V1),
    "fixed_v2": partial(FixedBucketSampler.from_options, config=FIXED_V2),
    "adaptive_v1": partial(RewardAdaptiveSampler.from_options, config=ADAPTIVE_V1),
    "adaptive_v2": partial(RewardAdaptiveSampler.from_options, config=ADAPTIVE_V2),
    "sliding_window": partial(SlidingWindowSampler.from_options, config=SLIDING_WINDOW),
    "staged_thirds": partial(StagedSampler.from_options, config=STAGED_THIRDS),
    "solution_count_staged": partial(SolutionCountStagedSampler.from_options, config=SOLUTION_COUNT_STAGED),
    "solution_count_adaptive": partial(
        SolutionCountAdaptiveSampler.from_options, config=SOLUTION_COUNT_ADAPTIVE
    ),
    "solution_count_hybrid": partial(SolutionCountAdaptiveSampler.from_options, config=SOLUTION_COUNT_HYBRID),
    **{name: partial(FeatureSpaceSampler.from_options, config=cfg) for name, cfg in FSC_PRESETS.items()},
    "adsc_real_only": partial(BanditRouterSampler.from_options, config=ADSC_REAL_ONLY),
    "adsc_rule_based": partial(
        BanditRouterSampler.from_options, config=ADSC_SYNTHETIC, source_factory=RuleBasedGenerator
    ),
    "difficulty_pools": partial(DifficultyPoolsSampler.from_options, config=DIFFICULTY_POOLS),
    "beta_posterior": partial(BetaPosteriorSampler.from_options, config=BETA_POSTERIOR),
    "sec": partial(SECSampler.from_options, config=SEC),
}
"""Every sampler by name; methods register theirs here."""

REFILLABLE: tuple[str, ...] = ("uniform", "uniform_replacement")
"""Samplers that draw more than one batch per step (``Sampler.refill_batch``): the ones a group filter
(``training.group_filters``) runs with. The curricula decide from one batch per step and refuse."""


def make_sampler(name: str, pool: Sequence[Task], seed: int = 0, **options) -> Sampler:
    """Build the sampler ``name`` over ``pool``; unknown names fail listing the known ones."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; known samplers: {sorted(SAMPLERS)}")
    return SAMPLERS[name](pool=pool, seed=seed, **options)
