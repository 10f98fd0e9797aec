"""The package's own teacher: a tiny task proposer trained on (tier prompt -> pool task), shipped, measured.

The proposer is the embedded policy's kind of model (``policy.build_model``: Qwen2, character
tokenizer). The shipped one starts from the ``embedded`` policy's weights (``init_from``): that policy
already writes merges such as ``57-38=19`` in the same characters, and a proposer must compute its
work forward to a target that the work reaches, or the task is unsolvable (a fresh 0.86M-parameter
proposer, ``PROPOSER_MODEL``, trained 400 steps got 6% of its proposals accepted, 86-91% of them
failing as unsolvable: its arithmetic was wrong). Its training text is
``teacher_data.proposer_examples``: tasks of the study's training pool (``specs.TRAIN_POOL`` with every
key of the held-out set ``specs.HELD_OUT`` removed, as every run's pool), labelled with
``tier_labels``, a tier drawn uniformly per example, numbers in a random order; loss on the completion
(``N .. T ..`` and EOS) as in SFT (``sft.train_step_gradients``, ``sft.learning_rate``). Step ``s``
draws from ``derive_rng(seed, s, SFTStream.TASKS)``, so one seed and one thread count give the same
weights. A run is a run-store run (``teacher-<hash>``, finished runs are loaded); it keeps no
mid-run checkpoint (a killed run starts over: ~15 minutes).

``countdown-study teacher --ship`` trains ``ProposerConfig()``, copies the weights to
``checkpoints/teacher`` with ``teacher.json`` (config, run facts), then ``measure_teacher``: at least
``PROPOSALS`` proposals per tier against the pool and held-out keys, the rule-based generator asked
for as many accepted tasks on the same seen set, ``compare_generators`` of the two logs, all stored in
``teacher.json`` beside the acceptance per tier and overall (goal: ``ACCEPTANCE_GOAL``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from countdown_study.countdown.difficulty import solution_counts, tier_labels
from countdown_study.countdown.load import load_tasks
from countdown_study.countdown.synthetic import RuleBasedGenerator
from countdown_study.countdown.task import Task
from countdown_study.policy import (
    TinyModelConfig,
    build_model,
    build_tokenizer,
    load_policy,
    policy_identity,
)
from countdown_study.runs.files import atomic_write_text
from countdown_study.runs.provenance import git_state
from countdown_study.runs.store import RunNotFinishedError, RunStore
from countdown_study.seeding import SFTStream, derive_rng
from countdown_study.training.common import save_final, study_tasks
from countdown_study.training.sft import learning_rate, run_facts, train_step_gradients
from countdown_study.training.specs import HELD_OUT, TRAIN_POOL, DataSpec, check_positive, check_seed
from countdown_study.training.teacher import (
    TEACHER_CHECKPOINT_DIR,
    TEACHER_INFO_FILE,
    TeacherConfig,
    TeacherGenerator,
)
from countdown_study.training.teacher_data import (
    TEACHER_TIERS,
    compare_generators,
    proposer_examples,
    solution_work,
)

PROPOSER_MODEL = TinyModelConfig(
    hidden_size=128, num_layers=4, num_heads=4, intermediate_size=384, max_positions=64
)
"""The proposer's shape: 0.86M parameters (the policy's: 3.4M). ``max_positions`` is nominal (RoPE has no
position table): prompt, work and task reach about 85 characters."""
PROPOSALS = 512
"""Proposals per tier behind the shipped acceptance rates (at least 500, in whole model calls of 64)."""
ACCEPTANCE_GOAL = 0.5
"""Share of all proposals the shipped teacher should get accepted."""


@dataclass(frozen=True)
class ProposerConfig:
    """Everything that decides the proposer's weights; the defaults make the shipped ``teacher``."""

    steps: int = 1200
    """Optimizer steps (about 1.1 s each on one free thread: the run takes about 22 minutes, plus about 2
    minutes of solver work on the pool). 400 steps from ``embedded`` reached a loss of 0.48 and accepted
    0.319 of 512 proposals per tier (T0 0.49, T1 0.43, T2 0.23, T3 0.12; 4-number work failed its
    arithmetic in 36-49% of T2/T3 proposals)."""
    batch_size: int = 64
    """Examples per step."""
    lr: float = 5e-4
    """Peak AdamW learning rate (a quarter of a fresh proposer's 2e-3: the run continues trained
    weights)."""
    warmup_steps: int = 40
    """Linear warm-up steps."""
    decay_fraction: float = 0.25
    """The last fraction of steps decays linearly to zero (``sft.learning_rate``)."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW moment coefficients."""
    grad_clip: float = 1.0
    """Global gradient-norm clip (0: off)."""
    model: TinyModelConfig = TinyModelConfig()
    """The proposer's shape (the ``init_from`` weights' shape when those are given; ``PROPOSER_MODEL``
    for a small fresh proposer)."""
    init_from: str | None = "embedded"
    """Starting weights: a shipped policy name or a ``save_pretrained`` folder of ``model``'s shape (their
    fingerprint is part of the run id); None: a fresh model seeded by ``seed``."""
    train_tasks: str = TRAIN_POOL
    """The pool its examples come from (``load_tasks``), minus every key of ``eval_tasks``."""
    eval_tasks: str = HELD_OUT
    """The held-out set it never sees (and whose keys its proposals may not repeat)."""
    seed: int = 0
    """Initialisation and every step's draws."""
    threads: int = field(default=1, metadata={"runtime": True})
    """torch threads (the run id leaves it out; provenance records it)."""
    log_every: int = field(default=50, metadata={"runtime": True})
    """Steps between step-log lines."""

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_seed(self.seed)
        for name in ("steps", "batch_size", "threads", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    @property
    def decay_start(self) -> int:
        """First step of the final linear decay."""
        return int(round(self.steps * (1.0 - self.decay_fraction)))


def run_config(config: ProposerConfig) -> dict:
    """The config that names the run: without the runtime fields (threads, log interval)."""
    data = json.loads(json.dumps(asdict(config)))
    return {k: v for k, v in data.items() if not config.__dataclass_fields__[k].metadata.get("runtime")}


def pool_by_tier(config: ProposerConfig) -> dict:
    """The training pool (held-out keys removed, as ``study_tasks``) split by ``tier_labels``."""
    pool, _ = study_tasks(DataSpec(train_tasks=config.train_tasks, eval_tasks=config.eval_tasks))
    labels = tier_labels(pool)  # (N,)
    return {
        tier: [t for t, label in zip(pool, labels, strict=True) if label == tier] for tier in TEACHER_TIERS
    }


def proposer_data(config: ProposerConfig) -> dict[str, list[tuple[Task, str]]]:
    """``pool_by_tier`` with each task's ``solution_work`` (about 5 ms a task: the solver's search)."""
    return {tier: [(t, solution_work(t)) for t in tasks] for tier, tasks in pool_by_tier(config).items()}


# ---------------------------------------------------------------------------------------------------
# Training and shipping
# ---------------------------------------------------------------------------------------------------


def train_proposer(config: ProposerConfig = ProposerConfig(), root=None, progress: bool = True) -> RunStore:
    """Train ``config`` as the run ``teacher-<hash>`` under ``root`` (a finished run is loaded)."""
    identity = None if config.init_from is None else policy_identity(config.init_from)
    store = RunStore.open(run_config(config), root=root, prefix="teacher", identity=identity)
    return store.complete(lambda s: _train(config, s, progress), threads=config.threads)


def _train(config: ProposerConfig, store: RunStore, progress: bool) -> dict:
    code_state = git_state()
    by_tier = proposer_data(config)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, config.model, seed=config.seed)
    if config.init_from is not None:
        model.load_state_dict(load_policy(config.init_from)[0].state_dict())
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=config.betas, weight_decay=config.weight_decay, fused=True
    )
    model.train()
    t0, loss = time.perf_counter(), float("nan")
    for step in range(config.steps):
        examples = proposer_examples(
            by_tier, config.batch_size, derive_rng(config.seed, step, SFTStream.TASKS)
        )
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        optimizer.zero_grad(set_to_none=True)
        loss = float(train_step_gradients(model, tokenizer, examples, num_buckets=1))
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
            wall = time.perf_counter() - t0
            store.log_step(
                {"step": step, "loss": loss, "lr": learning_rate(step, config), "wall_seconds": wall}
            )
            if progress:
                print(f"teacher step {step + 1}/{config.steps}: loss {loss:.4f}, {wall:.0f} s", flush=True)
    model.eval()
    save_final(store, model, tokenizer)
    facts = run_facts(config, config.steps, time.perf_counter() - t0, loss, code_state)
    return {**facts, "parameters": sum(p.numel() for p in model.parameters()), "pool": {
        tier: len(tasks) for tier, tasks in by_tier.items()}}  # fmt: skip


def ship(store: RunStore, dest: Path = TEACHER_CHECKPOINT_DIR) -> Path:
    """Copy a finished run's proposer to ``dest`` with ``teacher.json`` (its facts; measurement emptied)."""
    if not store.is_done:
        raise RunNotFinishedError(f"the teacher run in {store.path} is not finished; nothing to ship")
    model, tokenizer = load_policy(store.checkpoint_dir / "final")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    info = {**store.load_results(), "measured": None}
    atomic_write_text(dest / TEACHER_INFO_FILE, json.dumps(info, indent=2) + "\n")
    return dest


# ---------------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------------


def measure_teacher(
    teacher="teacher",
    config: ProposerConfig = ProposerConfig(),
    proposals: int = PROPOSALS,
    seed: int = 0,
    sampling: TeacherConfig | None = None,
) -> dict:
    """Acceptance of ``proposals`` (rounded up to whole model calls) per tier and the comparison with the
    rule-based generator, both starting from the pool and held-out keys of ``config``.

    Tier ``i`` draws from ``derive_rng(seed, i, 0)`` (teacher) and ``derive_rng(seed, i, 1)`` (rule-based,
    asked for as many accepted tasks as the teacher got, at least one).
    """
    sampling = sampling or TeacherConfig()
    pool = [task for tasks in pool_by_tier(config).values() for task in tasks]
    pool_keys = [task.key for task in pool]
    seen = [*pool_keys, *(task.key for task in load_tasks(config.eval_tasks))]
    generator = TeacherGenerator.load(teacher, sampling, seen_keys=seen)
    rules = RuleBasedGenerator(sampling.ranges, seen_keys=seen)
    teacher_rows, rule_rows = [], []
    for i, tier in enumerate(TEACHER_TIERS):
        rng, rows = derive_rng(seed, i, 0), []
        while len(rows) < proposals:
            rows += generator.attempt(tier, rng)
        _, ruled = rules.propose(tier, max(sum(r["accepted"] for r in rows), 1), derive_rng(seed, i, 1))
        teacher_rows, rule_rows = teacher_rows + rows, rule_rows + ruled
    accepted = sum(r["accepted"] for r in teacher_rows)
    return {
        "acceptance": {**generator.acceptance_rates(), "overall": accepted / len(teacher_rows)},
        "goal": ACCEPTANCE_GOAL,
        "comparison": compare_generators(teacher_rows, rule_rows, pool_keys),
        "measured_with": {
            "proposals_per_tier": proposals,
            "seed": seed,
            "sampling": asdict(sampling),
            "seen": "pool + held-out keys of the config",
        },  # fmt: skip
    }


def record_measurement(measured: dict, dest: Path = TEACHER_CHECKPOINT_DIR) -> None:
    """Store ``measure_teacher``'s result in ``teacher.json`` under ``measured``."""
    info_file = Path(dest) / TEACHER_INFO_FILE
    info = json.loads(info_file.read_text())
    atomic_write_text(info_file, json.dumps({**info, "measured": measured}, indent=2) + "\n")


def shipped_info(dest: Path = TEACHER_CHECKPOINT_DIR) -> dict:
    """The shipped teacher's ``teacher.json``."""
    return json.loads((Path(dest) / TEACHER_INFO_FILE).read_text())


# ---------------------------------------------------------------------------------------------------
# What the teacher proposes, beside the pool
# ---------------------------------------------------------------------------------------------------

QUALITY_SOURCES = ("teacher", "rule_based", "pool")
"""Sources of ``teacher_quality``'s rows, in order."""
QUALITY_COLUMNS = (
    "tier", "source", "proposals", "acceptance", "unsolvable", "wrong_tier", "accepted", "target_q10",
    "target_median", "target_q90", "number_mean", "numbers_below_10", "three_number_share",
    "solutions_median",
)  # fmt: skip
"""Columns of ``teacher_quality``: per tier and source, the proposals checked and the shares accepted or
rejected as unsolvable or of the wrong tier (the pool: every task, none checked), then the accepted tasks'
target quantiles (10%, 50%, 90%), mean number, share of numbers below 10, share of 3-number tasks and
median solution count (capped at 128)."""


def task_distribution(tasks: Sequence[Task]) -> dict[str, float]:
    """The accepted-task columns of ``QUALITY_COLUMNS`` for ``tasks`` (solution counts capped at 128)."""
    targets = np.array([t.target for t in tasks], dtype=np.float64)  # (N,)
    numbers = np.concatenate([np.asarray(t.nums, dtype=np.float64) for t in tasks])  # (sum of counts,)
    q10, median, q90 = np.quantile(targets, (0.1, 0.5, 0.9))
    return {
        "accepted": len(tasks), "target_q10": float(q10), "target_median": float(median),
        "target_q90": float(q90), "number_mean": float(numbers.mean()),
        "numbers_below_10": float((numbers < 10).mean()),
        "three_number_share": float(np.mean([t.num_count == 3 for t in tasks])),
        "solutions_median": float(np.median(solution_counts(tasks, cap=128))),
    }  # fmt: skip


def _measured_row(tier: str, source: str, summary: dict) -> dict:
    """One generator's row from ``teacher.json``'s ``measured.comparison`` (``compare_generators``)."""
    q10, median, q90 = summary["target_quantiles"]
    outcomes = summary["outcomes"]
    return {
        "tier": tier, "source": source, "proposals": summary["proposals"], "acceptance": summary["acceptance"],
        "unsolvable": outcomes.get("unsolvable", 0.0), "wrong_tier": outcomes.get("wrong_tier", 0.0),
        "accepted": summary["accepted"], "target_q10": q10, "target_median": median, "target_q90": q90,
        "number_mean": summary["number_mean"], "numbers_below_10": summary["numbers_below_10"],
        "three_number_share": summary["three_number_share"], "solutions_median": summary["solutions_median"],
    }  # fmt: skip


def teacher_quality(info: dict | None = None, pools: dict[str, Sequence[Task]] | None = None) -> pd.DataFrame:
    """What a teacher proposes beside what it was trained to imitate: per tier, its measured proposals
    (``teacher``), the rule-based generator asked for as many accepted tasks (``rule_based``), both from
    ``info`` (a ``teacher.json``: ``shipped_info()`` by default, as ``measure_teacher`` recorded it), and the
    training pool's tasks of the tier (``pool``; ``pool_by_tier(ProposerConfig())`` by default), in
    ``QUALITY_COLUMNS``. A teacher that is a copy of the pool's distribution has ``teacher`` rows close to
    ``pool`` rows, whatever its acceptance."""
    info = shipped_info() if info is None else info
    if not info.get("measured"):
        raise ValueError(
            "the teacher has no measurement (teacher.json 'measured'); run measure_teacher first"
        )
    pools = pool_by_tier(ProposerConfig()) if pools is None else pools
    comparison = info["measured"]["comparison"]
    rows = []
    for tier in TEACHER_TIERS:
        rows += [_measured_row(tier, source, comparison[tier][source]) for source in QUALITY_SOURCES[:2]]
        rows.append({"tier": tier, "source": "pool", "proposals": len(pools[tier]), "acceptance": np.nan,
                     "unsolvable": np.nan, "wrong_tier": np.nan, **task_distribution(pools[tier])})  # fmt: skip
    return pd.DataFrame(rows, columns=list(QUALITY_COLUMNS))
