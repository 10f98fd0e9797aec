"""Report 003's solution-count curriculum: prompts ranked by how many derivations reach the target.

Report 003 ranks prompts by the solver's solution count (capped at 128): many solutions make a prompt
easy. Its staged curriculum trains the first 30% of updates on the easiest 30% of prompts, the next 40%
on the easiest 70%, and the last 30% on all of them.

Our choices where the report is silent: ties in the count are ranked by pool order (the pool is already a
seeded draw, so this adds no bias of its own); stage k covers the steps with
``cum_k <= step / total_steps < cum_{k+1}`` over the cumulative step fractions, and steps past
``total_steps`` stay on the last stage; within a stage, tasks are drawn uniformly with replacement from
``derive_rng(seed, step, SamplerStream.STEP)``. Stateless: the stage follows from the step.

The report names "adaptive" and "hybrid" curricula but defines neither: they appear only as rows of its
Table 1 ("Adaptive Curriculum", pass@1 0.4638; "Selected Hybrid Curriculum", the best pass@1 0.5150) and
in the abstract's "curriculum scheduling improves per-rollout quality". What the text fixes is shared with
the staged curriculum: the easiest-first solution-count ranking, starting from the easiest 30% and ending
on the whole pool. Ours (``SolutionCountAdaptiveSampler``, every number a config field):

* **adaptive**: that ranking, with a frontier that moves on the policy's progress, not the clock. It starts
  at the easiest 30% and widens by 10% of the pool when the success EMA of the training batches (share of
  correct samples, EMA 0.8) says the policy has learned on the current frontier, at most once every 3
  steps (so the EMA sees the wider pool before the next move); it never narrows. When the EMA "says so" is
  the ``rule``:

  - ``progress`` (the study's rows ``Adaptive curriculum`` / ``Hybrid curriculum``): the EMA has gained
    ``gain`` (0.04) since the frontier last moved (since the first step's success at the start). A
    self-paced rule: the frontier follows the policy's own improvement, whatever its level. Chosen because
    it moves on our policy: its training success climbs from about 0.1-0.2 to 0.3-0.45 in a 60-step run,
    and on the committed runs' success traces (frontier fixed at 30%) a gain of 0.04 widens the frontier
    2-4 times on the embedded policy and 5-6 times on the search-style one.
  - ``threshold`` (the rule of the first runs, kept as the variant rows ``... (success EMA 0.5)``): the EMA
    reaches ``threshold`` (0.5), report 000's middle of the learnable range. In those runs the adaptive
    rows' EMA peaked at 0.32 (embedded) and 0.44 (search-style), so their frontier never moved; the hybrids'
    share moved in 3 of 10 runs, after step 38, never past the staged schedule, so every hybrid run drew the
    staged curriculum's prompts seed for seed.

  ``threshold`` stays the config's default: a sampler's defaults are not part of a run's id (the options it
  is given are), so a new default would have the committed runs reused under a rule they were not trained
  with; the study's rows ask for ``progress`` by option (``PROGRESS``).
* **hybrid**: the adaptive frontier, never behind the staged schedule: the pool share is the larger of
  the two, so a policy that progresses fast leaves the easy prompts early and a slow one still reaches
  the whole pool on the staged clock. It draws other prompts than the staged curriculum exactly when the
  adaptive frontier is ahead of the schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.grading import Grades
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng


@dataclass(frozen=True)
class SolutionCountStagedConfig:
    """The staged schedule over the solution-count ranking (report 003's values by default)."""

    total_steps: int | None = None
    """Training steps of the run; required (the study passes it as the option ``total_steps``)."""
    step_fractions: tuple[float, ...] = (0.3, 0.4, 0.3)
    """Share of the run each stage lasts, in order (sums to 1)."""
    pool_fractions: tuple[float, ...] = (0.3, 0.7, 1.0)
    """Share of the ranked pool (easiest first) each stage draws from, non-decreasing, ending at 1."""
    cap: int = 128
    """Solution counts are capped here (report 003)."""

    def __post_init__(self) -> None:
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {self.total_steps}")
        if len(self.step_fractions) != len(self.pool_fractions) or not self.step_fractions:
            raise ValueError("step_fractions and pool_fractions need one entry per stage")
        if any(f <= 0 for f in self.step_fractions) or abs(sum(self.step_fractions) - 1) > 1e-9:
            raise ValueError(f"step_fractions must be positive and sum to 1, got {self.step_fractions}")
        pools = self.pool_fractions
        if any(not 0 < f <= 1 for f in pools) or list(pools) != sorted(pools) or pools[-1] != 1:
            raise ValueError(f"pool_fractions must rise within (0, 1] and end at 1, got {pools}")
        if self.cap < 1:
            raise ValueError(f"cap must be at least 1, got {self.cap}")


SOLUTION_COUNT_STAGED = SolutionCountStagedConfig()  # report 003's staged curriculum


def easiest_first(counts: np.ndarray) -> np.ndarray:
    """Pool indices from the most solutions to the fewest, ties in pool order.  # (N,) -> (N,)"""
    return np.argsort(-np.asarray(counts), kind="stable")


def stage_of(step: int, total_steps: int, step_fractions: Sequence[float]) -> int:
    """The stage whose share of the run holds ``step`` (the last one past ``total_steps``)."""
    ends = np.cumsum(step_fractions) * total_steps  # (K,)
    return min(int(np.searchsorted(ends, step, side="right")), len(step_fractions) - 1)


@dataclass
class SolutionCountStagedSampler(Sampler):
    """Easiest 30% of prompts for the first 30% of updates, the easiest 70% next, then all (report 003)."""

    config: SolutionCountStagedConfig = SOLUTION_COUNT_STAGED
    """The schedule; ``total_steps`` must be set."""
    name: str = field(default="solution_count_staged", init=False)
    spans_run: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.total_steps is None:
            raise ValueError(
                "the solution-count sampler needs the option total_steps (the run's training steps)"
            )
        self.ranking = easiest_first(solution_counts(self.pool, cap=self.config.cap))  # (N,)

    def stage(self, step: int) -> int:
        """The stage trained on at ``step``."""
        return stage_of(step, self.config.total_steps, self.config.step_fractions)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        share = self.config.pool_fractions[self.stage(step)]
        allowed = self.ranking[: max(1, round(share * len(self.pool)))]  # the easiest ``share`` of the pool
        return derive_rng(self.seed, step, SamplerStream.STEP).choice(allowed, size=batch_size)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with its stage's pool share (``easiest 30%``)."""
        batch = super().next_batch(step, batch_size)
        label = f"easiest {round(100 * self.config.pool_fractions[self.stage(step)])}%"
        return Batch(batch.tasks, batch.indices, (label,) * len(batch.tasks))


RULES = ("threshold", "progress")
"""When the adaptive frontier moves (``SolutionCountAdaptiveConfig.rule``; module docstring)."""


@dataclass(frozen=True)
class SolutionCountAdaptiveConfig:
    """Our definitions of report 003's adaptive and hybrid solution-count curricula (module docstring)."""

    hybrid: bool = False
    """Never behind the staged schedule (``staged``): the pool share is the larger of the two."""
    start_fraction: float = 0.3
    """Share of the ranked pool (easiest first) drawn from at the start (the staged first stage's)."""
    growth: float = 0.1
    """Share of the pool added each time the frontier moves."""
    rule: str = "threshold"
    """When the frontier moves (``RULES``; module docstring): ``threshold``, the success EMA reaches
    ``threshold`` (the committed runs' rule, the default so their ids keep meaning it), or ``progress``,
    the EMA has gained ``gain`` since the last move (the study's rows)."""
    threshold: float = 0.5
    """``threshold`` rule: success EMA at which the frontier moves (the middle of the learnable range)."""
    gain: float = 0.04
    """``progress`` rule: rise of the success EMA since the frontier last moved (since the first step's
    success at the start) at which it moves again: about 2.5 standard deviations of the EMA's noise (on the
    committed adaptive runs, 32 prompts x 8 samples, a step's success varied by 0.047, the EMA by 0.016)."""
    ema: float = 0.8
    """Weight of the old value in the success EMA, updated once per step from the batch's share of
    correct samples; the first step sets it."""
    min_dwell: int = 3
    """Steps after a move before the next one can happen."""
    staged: SolutionCountStagedConfig = SOLUTION_COUNT_STAGED
    """The staged schedule a hybrid keeps up with (its ``total_steps`` is this config's)."""
    total_steps: int | None = None
    """Training steps of the run; required by the hybrid (the study passes it as ``total_steps``)."""
    cap: int = 128
    """Solution counts are capped here (report 003)."""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown frontier rule {self.rule!r}; choose one of {RULES}")
        for name in ("start_fraction", "growth", "threshold", "gain"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if not 0 <= self.ema < 1:
            raise ValueError(f"ema must be in [0, 1), got {self.ema}")
        if self.min_dwell < 1 or self.cap < 1:
            raise ValueError(f"min_dwell and cap must be at least 1, got {self.min_dwell}, {self.cap}")
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {self.total_steps}")


SOLUTION_COUNT_ADAPTIVE = SolutionCountAdaptiveConfig()  # registered as solution_count_adaptive
SOLUTION_COUNT_HYBRID = SolutionCountAdaptiveConfig(hybrid=True)  # registered as solution_count_hybrid
PROGRESS = {"rule": "progress"}
"""The sampler option of the study's adaptive and hybrid rows (``study.REPORT_003``): the progress rule."""


def ready_to_widen(ema: float, reference: float, config: SolutionCountAdaptiveConfig) -> bool:
    """Whether the success EMA says the policy has learned on its frontier: it reached ``threshold``
    (``threshold`` rule), or it is ``gain`` above ``reference``, its value when the frontier last moved
    (``progress`` rule). A tolerance of 1e-9 keeps a gain of exactly ``gain`` a move."""
    if config.rule == "threshold":
        return ema >= config.threshold
    return ema - reference >= config.gain - 1e-9


def advance_frontier(
    share: float,
    ema: float,
    steps_since_move: int,
    config: SolutionCountAdaptiveConfig,
    reference: float | None = None,
) -> float:
    """The adaptive frontier after one step: ``share + growth`` (at most 1) when ``ready_to_widen`` and the
    last move is ``min_dwell`` steps old, else ``share``. ``reference``: the EMA at the last move (the
    ``progress`` rule's; the EMA itself when not given, which never moves that rule)."""
    ready = ready_to_widen(ema, ema if reference is None else reference, config)
    if ready and steps_since_move >= config.min_dwell and share < 1:
        return min(1.0, share + config.growth)
    return share


@dataclass
class SolutionCountAdaptiveSampler(Sampler):
    """Report 003's adaptive / hybrid solution-count curriculum, as we define them (module docstring)."""

    config: SolutionCountAdaptiveConfig = SOLUTION_COUNT_ADAPTIVE
    """The rule (``hybrid`` needs ``total_steps``)."""
    name: str = field(default="solution_count_adaptive", init=False)
    spans_run: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config.hybrid:
            if self.config.total_steps is None:
                raise ValueError(
                    "the hybrid solution-count curriculum needs the option total_steps (the run's training steps)"
                )
            self.name = "solution_count_hybrid"
        self.ranking = easiest_first(solution_counts(self.pool, cap=self.config.cap))  # (N,)
        self.share = self.config.start_fraction
        self.success_ema: float | None = None
        self.reference: float | None = None  # the success EMA when the frontier last moved (progress rule)
        self.last_move = 0
        self.last_frontier = self.frontier(0)

    def frontier(self, step: int) -> float:
        """The share of the ranked pool drawn from at ``step``."""
        if not self.config.hybrid:
            return self.share
        staged = self.config.staged
        scheduled = staged.pool_fractions[stage_of(step, self.config.total_steps, staged.step_fractions)]
        return max(self.share, scheduled)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        self.last_frontier = self.frontier(step)
        allowed = self.ranking[: max(1, round(self.last_frontier * len(self.pool)))]
        return derive_rng(self.seed, step, SamplerStream.STEP).choice(allowed, size=batch_size)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with the frontier (``easiest 40%``)."""
        batch = super().next_batch(step, batch_size)
        label = f"easiest {round(100 * self.frontier(step))}%"
        return Batch(batch.tasks, batch.indices, (label,) * len(batch.tasks))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        success = float(np.mean(grades.correct))
        old = self.success_ema
        self.success_ema = success if old is None else self.config.ema * old + (1 - self.config.ema) * success
        if self.reference is None:
            self.reference = self.success_ema  # the first step's success: the progress rule's start
        moved = advance_frontier(
            self.share, self.success_ema, step + 1 - self.last_move, self.config, self.reference
        )
        if moved != self.share:
            self.share, self.last_move, self.reference = moved, step + 1, self.success_ema

    def stats(self) -> dict:
        """The frontier the last batch was drawn from, the adaptive share after it, the success EMA."""
        return {"frontier": self.last_frontier, "adaptive_share": self.share, "success_ema": self.success_ema}

    def state_dict(self) -> dict:
        return {"share": self.share, "success_ema": self.success_ema, "last_move": self.last_move,
                "reference": self.reference}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.share, self.success_ema = float(state["share"]), state["success_ema"]
        self.last_move = int(state["last_move"])
        self.reference = state.get("reference")  # absent in checkpoints of the threshold rule's first runs
