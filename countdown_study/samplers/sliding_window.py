"""Report 001's sliding-window difficulty controller over the easy / medium / hard levels.

Report 001 ("Adaptive Curriculum RLOO", Section 3.3, eq. 6 and Algorithm 1): with ``p_hat_t`` the
mean of the most recent W rewards,

    d_{t+1} = d_t - 1  if p_hat_t < tau_low,   d_t + 1  if p_hat_t > tau_high,   d_t  otherwise,

with W = 10, tau_low = 0.24, tau_high = 0.30; each step samples from the current level, or from the
full dataset when that level is empty. The levels (``level_pools``) are by default report 001's own,
read from its bucket sizes (240,608 easy + 249,706 medium = 490,314, the whole data set as hard): easy =
the 3-number tasks, medium = the 4-number tasks, hard = every task. ``levels="solver"`` uses instead
our partition from solver structure (``countdown.level_labels``; a named variant row).

Where the report is silent, our choices (fields of ``SlidingWindowConfig``):

- A window entry is one step's pass rate: the share of its P x G samples that verify
  (``Grades.correct``). Report
  001 trains on binary rewards, where this is the step's mean reward and its "recent pass rate"; the
  pass rate keeps the thresholds meaningful when the format score 0.1 is on. One entry per step
  (not per sample or per prompt) makes W = 10 cover ten steps, not a fraction of one step's samples.
- The controller decides after each observed step, once the window is full (W entries): the first
  possible move comes after W steps on the start level.
- A move does not clear the window (``clear_on_move=False``): Algorithm 1 only appends rewards. So a
  window far outside [tau_low, tau_high] can move one level per step until it recovers, which matches
  the report's remark that permissive thresholds "moved too quickly toward hard prompts".
- The level is clamped to easy .. hard; training starts on easy (``start_level``; the report's strict
  tau_high = 0.60 "kept the model on easy prompts").
- Tasks are drawn uniformly with replacement from the level, from ``derive_rng(seed, step, SamplerStream.STEP)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.difficulty import LEVELS, level_labels
from countdown_study.countdown.grading import Grades
from countdown_study.countdown.task import Task
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng

LEVEL_RULES = ("report", "solver")
"""How tasks are assigned to report 001's levels (``level_pools``)."""


@dataclass(frozen=True)
class SlidingWindowConfig:
    """Hyperparameters of the sliding-window controller (report 001, Sections 3.3 and 4)."""

    window: int = 10
    """W: how many recent step pass rates the controller averages (report 001, Section 4)."""
    low: float = 0.24
    """tau_low: a window mean below it steps one level down (report 001, eq. 6)."""
    high: float = 0.30
    """tau_high: a window mean above it steps one level up (report 001, eq. 6)."""
    start_level: str = "easy"
    """The level of the first steps (ours)."""
    clear_on_move: bool = False
    """Whether a level change empties the window (ours: no, as Algorithm 1)."""
    levels: str = "report"
    """Level rule: ``report`` (3 numbers / 4 numbers / all, report 001's) or ``solver`` (ours)."""

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be at least 1, got {self.window}")
        if not self.low <= self.high:
            raise ValueError(f"need low <= high, got {self.low}, {self.high}")
        if self.levels not in LEVEL_RULES:
            raise ValueError(f"levels must be one of {LEVEL_RULES}, got {self.levels!r}")
        if self.start_level not in LEVELS:
            raise ValueError(f"start_level must be one of {LEVELS}, got {self.start_level!r}")


SLIDING_WINDOW = SlidingWindowConfig()  # report 001, Figure 4 and abstract, "Adaptive RLOO" at 128 steps


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def step_pass_rate(correct: np.ndarray) -> float:
    """One window entry: the share of a step's samples that are correct.  # (P, G) -> ()"""
    return float(np.asarray(correct, dtype=bool).mean())


def controller_move(window_mean: float, low: float, high: float) -> int:
    """Report 001's eq. 6: -1 below ``low``, +1 above ``high``, 0 in between (edges stay)."""
    if window_mean < low:
        return -1
    if window_mean > high:
        return 1
    return 0


def level_members(labels: np.ndarray, level: str) -> np.ndarray:
    """Pool indices of ``level``, or of the whole pool when the level is empty (report 001).  # (N_l,)"""
    return _or_whole_pool(np.asarray(labels) == level)


def _or_whole_pool(mask: np.ndarray) -> np.ndarray:
    members = np.flatnonzero(mask)
    return members if members.size else np.arange(len(mask))


def level_pools(tasks: Sequence[Task], rule: str = "report") -> dict[str, np.ndarray]:
    """Pool indices of each of ``LEVELS``; an empty level is the whole pool (report 001).

    ``report``: easy = tasks of 3 or fewer numbers, medium = 4 or more, hard = every task (nested, as
    report 001's bucket sizes say). ``solver``: the partition of ``countdown.level_labels``.
    """
    if rule == "solver":
        labels = level_labels(tasks)  # (N,)
        return {level: level_members(labels, level) for level in LEVELS}
    if rule != "report":
        raise ValueError(f"unknown level rule {rule!r}; choose one of {LEVEL_RULES}")
    sizes = np.array([task.num_count for task in tasks])  # (N,)
    masks = (sizes <= 3, sizes >= 4, np.ones(len(sizes), dtype=bool))
    return {level: _or_whole_pool(mask) for level, mask in zip(LEVELS, masks, strict=True)}


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class SlidingWindowSampler(Sampler):
    """Report 001's adaptive curriculum: a threshold controller on the recent pass rate picks the level."""

    config: SlidingWindowConfig = SLIDING_WINDOW
    """The controller's hyperparameters."""
    name: str = field(default="sliding_window", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.pools = level_pools(self.pool, self.config.levels)  # level -> (N_l,) pool indices
        self.level = LEVELS.index(self.config.start_level)
        self.window: list[float] = []

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        members = self.pools[LEVELS[self.level]]
        return derive_rng(self.seed, step, SamplerStream.STEP).choice(members, size=batch_size)

    def next_batch(self, step: int, batch_size: int) -> Batch:
        """The step's batch, each task labelled with the level it was drawn from."""
        level = LEVELS[self.level]
        batch = super().next_batch(step, batch_size)
        return Batch(batch.tasks, batch.indices, (level,) * len(batch.tasks))

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        self.window = [*self.window, step_pass_rate(grades.correct)]
        self.window = self.window[-self.config.window :]
        if len(self.window) < self.config.window:
            return
        move = controller_move(float(np.mean(self.window)), self.config.low, self.config.high)
        level = min(max(self.level + move, 0), len(LEVELS) - 1)
        if level != self.level and self.config.clear_on_move:
            self.window = []
        self.level = level

    def stats(self) -> dict:
        """``level``: index into ``tasks.LEVELS`` of the next batch; ``window_mean`` once observed."""
        out: dict = {"level": self.level}
        if self.window:
            out["window_mean"] = float(np.mean(self.window))
        return out

    def state_dict(self) -> dict:
        return {"level": self.level, "window": list(self.window)}

    def load_state_dict(self, state: dict) -> None:
        self.level = int(state["level"])
        self.window = [float(x) for x in state["window"]]
