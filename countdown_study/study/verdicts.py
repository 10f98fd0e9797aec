"""A claim's verdict from its interval (``study.claims``' module docstring gives the order they are
decided in): ``holds`` / ``reversed`` when the interval excludes zero, ``borderline`` within
``BORDERLINE`` of zero, ``underpowered`` when the minimum detectable effect exceeds the report's own
effect, else ``inside noise``; ``untestable`` arms sit at a floor or ceiling (``at_bound``)."""

from __future__ import annotations

import math

import numpy as np

from countdown_study.study.compare import ONE_SEED, Comparison

BORDERLINE = 0.001
"""An interval end closer to zero than this is ``borderline``: the precision a verdict's bound is held to
(a resampled interval's Monte Carlo error would have to stay below it; the default interval is analytic,
so only the data put a bound this close to zero)."""
NOT_TESTED, UNTESTABLE, SAME_RUNS = "not tested", "untestable", "same runs as"
VERDICTS = (
    "holds",
    "reversed",
    "inside noise",
    "underpowered",
    "borderline",
    UNTESTABLE,
    NOT_TESTED,
    ONE_SEED,
)
"""Verdicts besides ``same runs as <claim_id>``."""
EVIDENCE = ("holds", "reversed")
"""The verdicts that count as evidence for or against a claim."""


def at_bound(values: np.ndarray) -> bool:
    """Whether every value is 0 (the floor) or every value is 1 (the ceiling)."""
    return bool(np.all(values == 0) or np.all(values == 1))


def classify_interval(
    ci_low: float, ci_high: float, mde: float, n_seeds: int, sign: int, report_effect: float
) -> str:
    """A claim's verdict from its interval and MDE (module docstring; floors and duplicates are decided
    before): ``sign`` +1 / -1 for a claimed direction, 0 for no difference claimed."""
    if n_seeds < 2:
        return ONE_SEED
    if sign != 0 and (abs(ci_low) < BORDERLINE or abs(ci_high) < BORDERLINE):
        return "borderline"
    if ci_low > 0 or ci_high < 0:
        if sign == 0:
            return "reversed"
        return "holds" if (1 if ci_low > 0 else -1) == sign else "reversed"
    if math.isfinite(report_effect) and report_effect != 0 and mde > abs(report_effect):
        return "underpowered"
    return "inside noise"


def classify(c: Comparison, sign: int, report_effect: float) -> str:
    """``classify_interval`` of a comparison."""
    return classify_interval(c.ci_low, c.ci_high, c.mde, c.n_seeds, sign, report_effect)
