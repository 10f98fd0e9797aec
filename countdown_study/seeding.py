"""The one place seeds are derived: every random draw of a run comes from (run seed, stream, keys).

``derive_seed(run_seed, *keys)`` gives an integer seed (for torch generators and the rollout engines),
``derive_rng(run_seed, *keys)`` a numpy ``Generator``; both hash the key sequence with numpy's
``SeedSequence``, so distinct key sequences give independent streams and the same keys always give
the same numbers. Streams are named here (``Stream``) so two parts of the package never draw from
one stream by accident; the integer values are the ones the package has always used, so results of
a fixed seed are unchanged.

Key layouts (the order of ``keys`` is part of the stream):

* training rollouts and probes: ``derive_seed(seed, step, Stream.ROLLOUT | Stream.PROBE)``;
* IPO pair sampling: ``derive_seed(seed, 0, Stream.IPO_PAIRS)``; IPO's numpy draws:
  ``derive_rng(seed, IPOStream.*)``;
* evaluation batches: ``derive_seed(seed, batch_index)``;
* samplers: ``derive_rng(seed, step, SamplerStream.*)``;
* SFT: ``derive_rng(seed, step, SFTStream.*, draw)``.

numpy's ``SeedSequence`` ignores trailing zero words, so ``(seed, b)`` and ``(seed, b, 0)`` are one
stream: an evaluation batch b and the training rollouts of step b draw the same uniforms (on other
prompts with other weights). Kept so that results of a fixed seed stay what they were.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Stream(IntEnum):
    """Streams of a run's rollouts: ``derive_seed(seed, step, stream)``."""

    ROLLOUT = 0
    """Training rollouts of a step."""
    PROBE = 1
    """Extra rollouts a sampler asks for before a step's update (report 002's probes)."""
    IPO_PAIRS = 2
    """IPO: sampling the starting policy for preference pairs (step 0)."""


class IPOStream(IntEnum):
    """IPO's numpy draws: ``derive_rng(seed, stream)``."""

    PROMPTS = 1
    """Which pool prompts are sampled for pairs."""
    PAIRS = 2
    """Which (verifying, failing) combinations become pairs."""
    ORDER = 3
    """The order pairs are visited in."""


class SamplerStream(IntEnum):
    """Samplers' draws: ``derive_rng(seed, step_or_epoch, stream)``."""

    STEP = 0
    """The draw of a step."""
    EPOCH = 1
    """The pool order of an epoch (uniform without replacement)."""
    REPLACEMENT = 2
    """Uniform draws with replacement."""
    PROBE = 3
    """The prompts a sampler probes before a step's update (report 002)."""
    COUNTERFACTUAL = 4
    """Same-size reference batches of report 002's refresh diagnostics."""


class SFTStream(IntEnum):
    """The SFT stage's draws: ``derive_rng(seed, step, stream, draw)``."""

    TASKS = 0
    """The tasks of a step."""
    TRACES = 1
    """The traces written for them."""


def _entropy(run_seed: int, keys: tuple[int, ...]) -> list[int]:
    values = [int(run_seed), *(int(k) for k in keys)]
    if any(v < 0 for v in values):
        raise ValueError(f"seeds and stream keys must be non-negative integers, got {values}")
    return values


def derive_seed(run_seed: int, *keys: int) -> int:
    """A 32-bit seed for ``(run_seed, *keys)``: the first word of their ``SeedSequence`` state."""
    return int(np.random.SeedSequence(_entropy(run_seed, keys)).generate_state(1)[0])


def derive_rng(run_seed: int, *keys: int) -> np.random.Generator:
    """A numpy generator for ``(run_seed, *keys)`` (``default_rng`` of their ``SeedSequence``)."""
    return np.random.default_rng(_entropy(run_seed, keys))
