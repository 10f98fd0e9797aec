"""Synthetic grades for sampler tests: a reward stream as the ``Grades`` the training loop hands over."""

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.countdown.verifier import Reason


def grades_of(rewards) -> Grades:
    """``Grades`` of a (P, G) reward array whose 1.0 entries are the correct samples (test streams only)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    correct = rewards >= 1.0
    reasons = np.where(correct, Reason.OK, Reason.WRONG_VALUE).astype(object)
    spans = np.ones(rewards.shape, dtype=np.int64)
    return Grades(
        rewards, correct, reasons, np.where(correct, 0, -1), spans, np.ones(rewards.shape, dtype=bool)
    )
