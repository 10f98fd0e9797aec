"""The Countdown task record: ``Task``, a frozen (numbers, target) pair with its canonical key.

Everything else in ``countdown/`` builds on it; this module imports nothing from the package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """One Countdown problem: reach ``target`` using each of ``nums`` exactly once with + - * /."""

    nums: tuple[int, ...]
    """The given numbers, in the order shown to the policy."""
    target: int
    """The value the expression must equal."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nums", tuple(int(n) for n in self.nums))
        object.__setattr__(self, "target", int(self.target))

    @property
    def key(self) -> tuple[tuple[int, ...], int]:
        """Canonical key (sorted numbers, target): reordered duplicates share it."""
        return (tuple(sorted(self.nums)), self.target)

    @property
    def num_count(self) -> int:
        """How many numbers the task gives (3 or 4 in the public data)."""
        return len(self.nums)
