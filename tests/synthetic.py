"""Synthetic inputs for tests: a reward stream as the ``Grades`` the training loop hands over, a tiny policy shape."""

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.countdown.verifier import Reason
from countdown_study.policy import TinyModelConfig

TINY_MODEL = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
"""The smallest policy shape the tests train (one layer, width 32)."""


def grades_of(rewards) -> Grades:
    """``Grades`` of a (P, G) reward array whose 1.0 entries are the correct samples (test streams only)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    correct = rewards >= 1.0
    reasons = np.where(correct, Reason.OK, Reason.WRONG_VALUE).astype(object)
    spans = np.ones(rewards.shape, dtype=np.int64)
    return Grades(
        rewards, correct, reasons, np.where(correct, 0, -1), spans, np.ones(rewards.shape, dtype=bool)
    )
