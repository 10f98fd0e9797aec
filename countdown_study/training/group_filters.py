"""Group filters: drop a step's rollout groups after grading and draw more until the batch is full.

Two of the field's prompt-selection rules act on groups once they are graded, not on prompts before:

* ``dynamic_sampling``, DAPO's dynamic sampling (Yu et al., 2025, arXiv 2503.14476; verl's
  ``algorithm.filter_groups`` with ``metric: acc``): drop every group whose G completions are all
  correct or all wrong; its RLOO advantages are all 0, so it adds no policy gradient.
* ``band_pass``, OpenRLHF's ``--dynamic_filtering`` with ``--dynamic_filtering_reward_range low high``:
  keep a group whose mean success lies strictly between ``low`` and ``high`` (OpenRLHF's open interval).

With either, a step draws batches of P prompts (``Sampler.next_batch``, then ``Sampler.refill_batch``)
until P groups are kept or ``max_rounds`` batches were generated; the surplus of the last batch is
discarded, as verl does. Choices where the sources differ or are silent (named in notebook 08's
deviations table, each a field below):

* the statistic is correctness (verl's ``acc``), not the shaped reward with its format score: a group
  of wrong answers that differ only in format is dropped;
* after ``max_rounds`` batches with fewer than P groups kept, the update uses the groups it has (verl
  raises an error instead); with none kept the step makes no optimizer step at all (a zero gradient
  would still move AdamW's parameters through its moment estimates);
* ``max_rounds`` is 4 by default (verl's DAPO recipe allows 10 generation batches per step, a GPU's
  budget; here a round costs about 0.9 s and 40-60% of the SFT policy's groups are mixed).

Everything generated is counted in the step log (``generated_groups``, ``discarded_rollouts``,
``discarded_tokens``), so a method that wins by sampling more is seen as such.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUP_FILTERS = ("dynamic_sampling", "band_pass")
"""Registered group filters (``GroupFilterSpec.name``)."""


@dataclass(frozen=True)
class GroupFilterSpec:
    """Which groups of a step's rollouts enter the update (``TrainConfig.group_filter``)."""

    name: str
    """``dynamic_sampling`` (drop all-correct and all-wrong groups) or ``band_pass`` (keep a mean
    success strictly inside (``low``, ``high``))."""
    low: float = 0.2
    """Band-pass: lower edge of the kept mean success (exclusive)."""
    high: float = 0.8
    """Band-pass: upper edge of the kept mean success (exclusive)."""
    max_rounds: int = 4
    """Batches of P prompts generated at most per step (the first included)."""

    def __post_init__(self) -> None:
        if self.name not in GROUP_FILTERS:
            raise ValueError(f"unknown group filter {self.name!r}; choose one of {GROUP_FILTERS}")
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(
                f"band-pass edges need 0 <= low < high <= 1, got low={self.low}, high={self.high}"
            )
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {self.max_rounds}")


def mixed_groups(correct: np.ndarray) -> np.ndarray:
    """Dynamic sampling's rule: groups with at least one correct and one wrong completion.
    ``correct`` (P, G) bool -> (P,) bool."""
    return correct.any(axis=1) & ~correct.all(axis=1)


def band_pass(correct: np.ndarray, low: float, high: float) -> np.ndarray:
    """Band-pass rule: groups whose share of correct completions is strictly inside (low, high).
    ``correct`` (P, G) bool -> (P,) bool."""
    success = correct.mean(axis=1)  # (P,)
    return (success > low) & (success < high)


def keep_groups(correct: np.ndarray, spec: GroupFilterSpec) -> np.ndarray:
    """The groups ``spec`` keeps: ``correct`` (P, G) bool -> (P,) bool."""
    if spec.name == "dynamic_sampling":
        return mixed_groups(correct)
    return band_pass(correct, spec.low, spec.high)


def fill(kept_so_far: int, keep: np.ndarray, batch_size: int) -> np.ndarray:
    """Rows of this round's batch that enter the update: the kept ones, in order, until ``batch_size``
    groups are kept in all (the rest is surplus). ``keep`` (P,) bool -> row indices."""
    rows = np.flatnonzero(keep)
    return rows[: max(batch_size - kept_so_far, 0)]
