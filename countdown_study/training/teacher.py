"""Report 004's teacher generator: a causal LM proposes tasks for a tier, the rule-based checks decide.

Report 004 (Section 3.4): "The teacher LLM is prompted with the tier specification and asked to propose
a valid Countdown task. Because the teacher can produce invalid outputs, every candidate passes
through the same verifier." Ours, per call of ``TeacherGenerator.propose(tier, count, rng)``:

1. one model call draws ``TeacherConfig.batch`` outputs for the tier's prompt
   (``teacher_data.teacher_prompt``), seeded by ``rng.integers(2**31)``, with the rollout engine;
2. each output in order: ``parse_proposal`` and ``precheck`` (``unparsed``, ``wrong_count``, numbers
   ``non_integer`` / ``out_of_range``), then ``RuleBasedGenerator.check``, the rule-based generator's
   own checks over its own ``seen`` set (target integer and in range, solvable, tier, not seen in the
   pool, the evaluation set or earlier in the run);
3. an accepted task joins ``seen`` at once; every checked output is counted and logged (``source`` =
   ``teacher``, tier, accepted or why not, numbers, target, the raw text); once ``count`` tasks are
   accepted the rest of the model call is dropped unchecked. After ``max_attempts_per_task * count``
   checked outputs the request fails, naming the tier.

The router's ``rng`` is ``derive_rng(run seed, step, SamplerStream.STEP, 1 + arm)``, so a run's
proposals are a function of (weights, seed, step); the resume state (``state_dict``) is the accepted
keys and the outcome counts. Any causal LM works: ``load_teacher("teacher")`` is the package's own
proposer (``training.teacher_train``, shipped in ``checkpoints/teacher``), a folder or Hugging Face id
goes through ``policy.load_policy`` (use ``engine="hf"`` for a model the native engine cannot run). A
run's id covers its teacher's weights (``teacher_fingerprint``, in ``training.loop.run_identity``), so a
retrained teacher under the same name makes new runs.

The sampler ``adsc_teacher`` is report 004's router (``ADSC_SYNTHETIC``) with this generator over the
shipped teacher as its synthetic source: the sampler registry (``samplers.registry.SAMPLERS``) names
``teacher_router`` as its builder, imported when a run builds it. Importing this module registers nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.synthetic import (
    ACCEPTED,
    TIER_NUM_COUNTS,
    AcceptanceLog,
    RuleBasedConfig,
    RuleBasedGenerator,
    normalize_key,
)
from countdown_study.countdown.task import Task
from countdown_study.paths import PACKAGE_DIR
from countdown_study.policy import load_policy, policy_fingerprint, prompt_template
from countdown_study.rollout import SamplingConfig, make_engine
from countdown_study.samplers.bandit_router import ADSC_SYNTHETIC, BanditRouterConfig, BanditRouterSampler
from countdown_study.training.specs import HELD_OUT
from countdown_study.training.teacher_data import (
    TEACHER_REASONS,
    TEACHER_TIERS,
    parse_proposal,
    precheck,
    teacher_prompt,
)

SOURCE = "teacher"
"""The ``source`` field of the teacher's log rows."""
SHIPPED_TEACHER = "teacher"
"""The name of the shipped proposer (``teacher_source``), every teacher option's default."""
TEACHER_SAMPLERS = ("adsc_teacher",)
"""Samplers that run a teacher: their ``teacher`` option names it (``sampler_models``)."""
TEACHER_CHECKPOINT_DIR = PACKAGE_DIR / "checkpoints" / "teacher"
"""The shipped task proposer (package data, made by ``countdown-study teacher --ship``)."""
TEACHER_INFO_FILE = "teacher.json"
"""Beside the shipped weights: the proposer's config, training facts and measured acceptance."""


def teacher_source(name_or_path: str | Path = SHIPPED_TEACHER) -> Path | str:
    """``"teacher"``: the shipped proposer's folder; anything else as ``load_policy`` takes it."""
    if str(name_or_path) != SHIPPED_TEACHER:
        return name_or_path
    if not (TEACHER_CHECKPOINT_DIR / "config.json").exists():
        raise FileNotFoundError(
            f"the shipped teacher is missing from {TEACHER_CHECKPOINT_DIR}; make it with "
            "`countdown-study teacher --ship`"
        )
    return TEACHER_CHECKPOINT_DIR


def load_teacher(name_or_path: str | Path = SHIPPED_TEACHER, tokenizer: str | Path | None = None):
    """``(model, tokenizer)`` of a teacher: ``"teacher"`` (shipped), a folder or a Hugging Face id."""
    return load_policy(teacher_source(name_or_path), tokenizer=tokenizer)


def teacher_fingerprint(name_or_path: str | Path = SHIPPED_TEACHER) -> str:
    """``policy.policy_fingerprint`` of a teacher (its weight files' SHA-256; a hub id as itself), so that
    a run's id changes with its teacher's weights, not only with the teacher's name."""
    return policy_fingerprint(teacher_source(name_or_path))


def sampler_models(sampler: str, options: Mapping[str, Any]) -> dict[str, str]:
    """The models a sampler runs besides the policy, by role: ``{"teacher": name}`` for a sampler of
    ``TEACHER_SAMPLERS`` (its ``teacher`` option, the shipped proposer by default), else none."""
    if sampler not in TEACHER_SAMPLERS:
        return {}
    return {"teacher": str(options.get("teacher", SHIPPED_TEACHER))}


@dataclass(frozen=True)
class TeacherConfig:
    """How a teacher is sampled and checked (defaults: the shipped proposer's measured settings)."""

    batch: int = 64
    """Outputs drawn per model call."""
    temperature: float = 0.7
    """Sampling temperature. Below the proposer's own 1.0 (ours): on 128 proposals per tier of a 400-step
    proposer, 0.7 accepted 0.367 against 1.0's 0.324 (fewer slips in the work's arithmetic), and the
    accepted tasks still repeat no pool task in more than 2% of proposals."""
    top_p: float = 1.0
    """Nucleus mass kept (1.0: off)."""
    max_new_tokens: int = 96
    """Longest output in tokens: ``N .. : <three merges> T ..`` is about 50 characters, up to about 70
    with 4-digit products (at 64, 7-14% of 4-number proposals were cut before their target)."""
    engine: str = "native"
    """Rollout engine: ``native`` for Qwen2-shaped models, ``hf`` for any causal LM."""
    template: str | None = None
    """Prompt template; None: the model's own (``compact`` for the proposer, else in words)."""
    max_attempts_per_task: int = 64
    """A request for ``count`` tasks fails after ``max_attempts_per_task * count`` checked outputs."""
    ranges: RuleBasedConfig = field(default_factory=RuleBasedConfig)
    """Number and target ranges and tier thresholds: the rule-based generator's, shared with its checks."""

    def sampling(self) -> SamplingConfig:
        """The rollout config of a model call (whole outputs, not cut at an answer tag)."""
        return SamplingConfig(
            max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
            stop_at_answer=False, engine=self.engine,
        )  # fmt: skip


class TeacherGenerator(AcceptanceLog):
    """Report 004's teacher source: ``propose(tier, count, rng) -> (tasks, log rows)`` (module docstring)."""

    source = SOURCE

    def __init__(self, model, tokenizer, config: TeacherConfig = TeacherConfig(), seen_keys: Iterable = ()):
        self.config = config
        self.rules = RuleBasedGenerator(config.ranges, seen_keys)  # the checks and the seen set
        self.template = config.template or prompt_template(model)
        self.engine = make_engine(model, tokenizer, config.sampling())
        self.accepted_keys: list = []  # accepted so far, in order (the resume state)
        self.counts: dict[str, Counter] = {tier: Counter() for tier in TEACHER_TIERS}  # tier -> reason -> n

    @classmethod
    def load(cls, teacher: str = "teacher", config: TeacherConfig = TeacherConfig(), seen_keys=()):
        """The generator over ``load_teacher(teacher)``."""
        model, tokenizer = load_teacher(teacher)
        return cls(model, tokenizer, config, seen_keys)

    def outputs(self, tier: str, rng: np.random.Generator) -> list[str]:
        """One model call: ``batch`` outputs for the tier's prompt, seeded from ``rng``."""
        prompt = teacher_prompt(tier, self.template, self.config.ranges.rule, self.config.ranges)
        return self.engine.sample([prompt], self.config.batch, seed=int(rng.integers(2**31))).texts

    def check(self, tier: str, text: str) -> dict:
        """One output's log row: ``{source, tier, accepted, reason, nums, target, text}``."""
        parsed = parse_proposal(text)
        reason = precheck(parsed, TIER_NUM_COUNTS[tier], self.config.ranges)
        nums, target = (), None
        if parsed is not None and all(n.denominator == 1 for n in parsed[0]):
            nums = tuple(int(n) for n in parsed[0])
            target = int(parsed[1]) if parsed[1].denominator == 1 else None
        if reason is None:
            reason = self.rules.check(tier, nums, parsed[1])
        accepted = reason == ACCEPTED
        return {"source": SOURCE, "tier": tier, "accepted": accepted, "reason": reason,
                "nums": list(nums), "target": target, "text": text}  # fmt: skip

    def attempt(self, tier: str, rng: np.random.Generator, wanted: int | None = None) -> list[dict]:
        """Check one model call's outputs in order (stopping once ``wanted`` are accepted); log rows."""
        if tier not in TEACHER_TIERS:
            raise ValueError(f"unknown teacher tier {tier!r}; tiers: {TEACHER_TIERS}")
        rows = []
        for text in self.outputs(tier, rng):
            if wanted is not None and sum(r["accepted"] for r in rows) == wanted:
                break
            rows.append(self.check(tier, text))
            self.counts[tier][rows[-1]["reason"]] += 1
            if rows[-1]["accepted"]:
                key = normalize_key((rows[-1]["nums"], rows[-1]["target"]))
                self.rules.seen.add(key)
                self.accepted_keys.append(key)
        return rows

    def propose(self, tier: str, count: int, rng: np.random.Generator) -> tuple[list[Task], list[dict]]:
        """``count`` accepted tasks of ``tier`` and one log row per output checked."""
        rows: list[dict] = []
        budget = self.config.max_attempts_per_task * count
        while (accepted := sum(r["accepted"] for r in rows)) < count:
            if len(rows) >= budget:
                outcomes = dict(Counter(r["reason"] for r in rows).most_common())
                raise ValueError(
                    f"tier {tier}: only {accepted} of {count} teacher tasks accepted after {len(rows)} "
                    f"outputs (outcomes: {outcomes})"
                )
            rows += self.attempt(tier, rng, wanted=count - accepted)
        return [Task(r["nums"], r["target"]) for r in rows if r["accepted"]], rows

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict`` (on a generator built with the same ``seen_keys``)."""
        self.accepted_keys = [normalize_key(k) for k in state["accepted_keys"]]
        self.rules.seen |= set(self.accepted_keys)
        self.counts = {tier: Counter(state["counts"].get(tier, {})) for tier in TEACHER_TIERS}
        unknown = {r for c in self.counts.values() for r in c} - set(TEACHER_REASONS)
        if unknown:
            raise ValueError(f"not a teacher's state: unknown outcomes {sorted(unknown)}")


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


def teacher_router(
    pool: Sequence[Task],
    seed: int = 0,
    teacher: str = SHIPPED_TEACHER,
    eval_tasks: str = HELD_OUT,
    exclude_keys: Iterable = (),
    config: BanditRouterConfig = ADSC_SYNTHETIC,
    **overrides,
) -> BanditRouterSampler:
    """Report 004's "ADSC Qwen-teacher" router with ``teacher`` as its synthetic source.

    The generator's ``seen`` set starts with the pool, the keys of ``eval_tasks`` (a ``load_tasks``
    source: the run's held-out set, the study's by default) and ``exclude_keys``. ``overrides`` are
    ``BanditRouterConfig`` fields.
    """
    held_out = [task.key for task in load_tasks(eval_tasks)] if eval_tasks else []

    def source(seen_keys) -> TeacherGenerator:
        return TeacherGenerator.load(teacher, seen_keys=seen_keys)

    return BanditRouterSampler.from_options(
        pool, seed, config, source_factory=source, exclude_keys=[*held_out, *exclude_keys], **overrides
    )
