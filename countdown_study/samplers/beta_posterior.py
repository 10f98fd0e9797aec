"""MoPPS: a Beta posterior per prompt over its success rate, Thompson samples picked nearest to 0.5.

Source: Qu et al., "Can Prompt Difficulty be Online Predicted for Accelerating RL Finetuning of
Reasoning Models?" (Model Predictive Prompt Selection, MoPPS; arXiv 2507.04632), and its code
(thu-rllab/MoPPS: the ``MoPPS`` sampler class and ``recipe/ours/our_ray_trainer.py``). Per step:

- each prompt's success rate gamma has a posterior ``Beta(alpha, beta)``, starting at the prior
  ``Beta(alpha_0, beta_0)``; a prompt is only ever updated from its own rollouts;
- after a prompt's G rollouts with s successes and k = G - s failures, the recursive update with
  temporal discount lambda: ``alpha <- lambda alpha + (1 - lambda) alpha_0 + s`` and
  ``beta <- lambda beta + (1 - lambda) beta_0 + k`` (lambda = 1: plain Bayesian counting; lambda < 1
  forgets old evidence towards the prior, as the policy changes);
- selection: a candidate set is drawn (the trainer's data loader gives ``ts_ratio`` times the batch
  size), each candidate's gamma is Thompson-sampled from its posterior, and the B candidates whose
  sample is nearest the target success rate (squared distance; target 0.5) form the batch;
- successes are the binary accuracies of the rollouts (the code's ``acc >= 1``).

Where we choose (fields of ``BetaPosteriorConfig``):

- Prior Beta(1, 1) (uniform) and target 0.5, the ``MoPPS`` class's arguments and default.
- lambda = 1.0 (``decay``): the released class's default ``exp_ratio``; the value of the paper's runs
  we could not confirm, so it is a field.
- Candidates: ``candidate_ratio`` x B prompts (rounded up, at most the pool) drawn uniformly without
  replacement from the pool each step, 4 by default (ours; MoPPS draws its candidates through the
  shuffled data loader, an epoch order); ``candidate_ratio=None`` makes the whole pool the candidate
  set (pure Thompson top-B). A prompt never observed samples from the prior, so unseen prompts keep
  being tried.
- Successes are ``Grades.correct`` (the verifier accepts the final answer; the format score is not a
  success). Ties in distance keep candidate order (stable sort). A pool smaller than the batch repeats
  the ranking.
- All draws (candidates, then the Thompson samples) come from ``derive_rng(seed, step, SamplerStream.STEP)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from countdown_study.countdown.grading import Grades
from countdown_study.samplers.base import Batch, Sampler
from countdown_study.seeding import SamplerStream, derive_rng


@dataclass(frozen=True)
class BetaPosteriorConfig:
    """Hyperparameters of MoPPS (arXiv 2507.04632; thu-rllab/MoPPS)."""

    prior_alpha: float = 1.0
    """alpha_0 of the prior Beta(alpha_0, beta_0) (MoPPS: 1)."""
    prior_beta: float = 1.0
    """beta_0 of the prior Beta(alpha_0, beta_0) (MoPPS: 1)."""
    decay: float = 1.0
    """Temporal discount lambda of the recursive update; 1 keeps all evidence (MoPPS code's default)."""
    target: float = 0.5
    """Target success rate: the batch is the candidates whose sampled gamma is nearest it (MoPPS: 0.5)."""
    candidate_ratio: float | None = 4.0
    """Candidates per batch slot, drawn uniformly from the pool (ours); None: the whole pool."""

    def __post_init__(self) -> None:
        for name in ("prior_alpha", "prior_beta"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {self.decay}")
        if not 0.0 <= self.target <= 1.0:
            raise ValueError(f"target must be in [0, 1], got {self.target}")
        if self.candidate_ratio is not None and not self.candidate_ratio >= 1.0:
            raise ValueError(f"candidate_ratio must be at least 1 (or None), got {self.candidate_ratio}")


BETA_POSTERIOR = BetaPosteriorConfig()  # MoPPS with a 4 x B uniform candidate set


# ---------------------------------------------------------------------------------------------------
# The algorithm: pure functions
# ---------------------------------------------------------------------------------------------------


def posterior_update(
    alpha: np.ndarray,
    beta: np.ndarray,
    successes: np.ndarray,
    failures: np.ndarray,
    config: BetaPosteriorConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """MoPPS's recursive update: ``alpha <- lambda alpha + (1 - lambda) alpha_0 + s`` (beta alike).  # (K,)"""
    lam = config.decay
    new_alpha = lam * np.asarray(alpha) + (1.0 - lam) * config.prior_alpha + np.asarray(successes)
    new_beta = lam * np.asarray(beta) + (1.0 - lam) * config.prior_beta + np.asarray(failures)
    return new_alpha, new_beta


def candidate_count(batch_size: int, pool_size: int, ratio: float | None) -> int:
    """How many candidates a batch ranks: ``ceil(ratio B)`` capped at the pool, or the whole pool."""
    if ratio is None:
        return pool_size
    return min(pool_size, math.ceil(ratio * batch_size - 1e-9))


def nearest_to_target(samples: np.ndarray, target: float, count: int) -> np.ndarray:
    """Positions of the ``count`` samples nearest ``target`` (squared distance, stable).  # (K,) -> (count,)

    When ``count`` exceeds the samples, the ranking repeats.
    """
    order = np.argsort((np.asarray(samples) - target) ** 2, kind="stable")  # (K,)
    return np.resize(order, count)


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


@dataclass
class BetaPosteriorSampler(Sampler):
    """MoPPS: Thompson samples of per-prompt Beta posteriors, the ones nearest the target success train."""

    config: BetaPosteriorConfig = BETA_POSTERIOR
    """The posterior's and the selection's hyperparameters."""
    name: str = field(default="beta_posterior", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._reset()

    def _reset(self) -> None:
        """Every prompt at the prior, none observed."""
        n = len(self.pool)
        self.alpha = np.full(n, self.config.prior_alpha)  # (N,)
        self.beta = np.full(n, self.config.prior_beta)  # (N,)
        self.observed = np.zeros(n, dtype=bool)  # (N,)

    def posterior_mean(self) -> np.ndarray:
        """Each prompt's posterior mean success ``alpha / (alpha + beta)``.  # (N,)"""
        return self.alpha / (self.alpha + self.beta)

    def choose(self, step: int, batch_size: int) -> np.ndarray:
        rng = derive_rng(self.seed, step, SamplerStream.STEP)
        n = len(self.pool)
        candidates = rng.choice(
            n, size=candidate_count(batch_size, n, self.config.candidate_ratio), replace=False
        )
        samples = rng.beta(self.alpha[candidates], self.beta[candidates])  # (K,) Thompson draws
        return candidates[nearest_to_target(samples, self.config.target, batch_size)]

    def observe(self, step: int, batch: Batch, grades: Grades, advantages: np.ndarray) -> None:
        """Each trained prompt's posterior absorbs its group's successes and failures."""
        successes = grades.correct.sum(axis=1)  # (P,)
        failures = grades.correct.shape[1] - successes  # (P,)
        for index, s, f in zip(batch.indices, successes, failures, strict=True):  # duplicates in order
            if index >= 0:
                self.alpha[index], self.beta[index] = posterior_update(
                    self.alpha[index], self.beta[index], s, f, self.config
                )
                self.observed[index] = True

    def stats(self) -> dict:
        """``observed`` prompts and the pool's mean ``posterior_mean`` (unseen prompts at the prior's)."""
        return {"observed": int(self.observed.sum()), "posterior_mean": float(self.posterior_mean().mean())}

    def state_dict(self) -> dict:
        """alpha and beta of the observed prompts (the rest are at the prior)."""
        observed = np.flatnonzero(self.observed)
        return {
            "indices": observed.tolist(),
            "alpha": self.alpha[observed].tolist(),
            "beta": self.beta[observed].tolist(),
        }

    def load_state_dict(self, state: dict) -> None:
        self._reset()
        indices = np.asarray(state["indices"], dtype=np.int64)
        self.alpha[indices] = np.asarray(state["alpha"], dtype=np.float64)
        self.beta[indices] = np.asarray(state["beta"], dtype=np.float64)
        self.observed[indices] = True
