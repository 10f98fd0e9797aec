"""The supervised stage: solver-made traces, the SFT loop, and ``countdown-study sft``.

A trace is a step list the exact solver wrote, one ``<think>`` span and one ``<answer>`` span::

    N 44 19 35 T 98 :<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer><eos>

with the solution drawn at random (seeded) among ``solver.all_solutions``. A configurable share of
traces are multi-attempt: one or two wrong attempts from ``solver.random_derivation``, each with its
own think and answer span, before the correct one, so that a policy can leave an answer and write
another (report 003's answer abandonment). Field notes measured search-style traces as worse at equal
time, so the share stays small. Non-integer values are written ``a/b`` (in parentheses as operands:
``6/(1/4)=24``). The correct solution is drawn among those whose intermediate values are all
non-negative integers (every generated task has one: the public data's rules), which keeps the
traces short and the arithmetic learnable.

The loop trains on fresh solvable tasks every step (``tasks.generate_tasks`` with a seed derived from
(run seed, step)), never on a held-out evaluation set (by ``Task.key``). The loss covers completion
tokens only; bf16 autocast; fused AdamW; warm-up, constant, linear decay over the last 20% of a fixed
number of steps, so one seed and one thread count give identical weights. Checkpoints (model,
optimizer, step, RNG state) are written atomically and a run resumes from its last one.

``countdown-study sft --ship`` retrains the shipped checkpoint (defaults of ``SFTConfig``) and saves
it to ``paths.EMBEDDED_CHECKPOINT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from fractions import Fraction
from pathlib import Path
from random import Random

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from countdown_study.countdown import tasks as task_data
from countdown_study.countdown.prompts import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    format_prompt,
)
from countdown_study.countdown.solver import Derivation, Step, all_solutions, random_derivation
from countdown_study.countdown.tasks import Task
from countdown_study.evaluation.evaluate import evaluate
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR, runs_dir
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer, load_policy, prompt_template
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import git_state

SHIPPED_INFO_FILE = "sft.json"
"""The file beside the shipped weights holding their training config, run facts and measured quality."""


@dataclass(frozen=True)
class SFTConfig:
    """Everything that decides the SFT weights; the defaults make the shipped ``embedded`` checkpoint."""

    steps: int = 4000
    """Optimizer steps (the run is step-budgeted, never time-budgeted)."""
    batch_size: int = 64
    """Traces per step, each from a fresh task."""
    lr: float = 1.5e-3
    """Peak learning rate of AdamW."""
    warmup_steps: int = 100
    """Linear warm-up from ``lr / warmup_steps`` to ``lr``."""
    decay_fraction: float = 0.25
    """The last fraction of steps decays linearly to zero (field notes: this decay mattered)."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW moment coefficients."""
    grad_clip: float = 1.0
    """Global gradient-norm clip (0: off)."""
    length_buckets: int = 8
    """Each step runs as this many length-sorted micro-batches (same gradient, less padding)."""
    multi_attempt_share: float = 0.1
    """Share of traces with wrong attempts before the correct one."""
    max_wrong_attempts: int = 2
    """A multi-attempt trace has 1 to this many wrong attempts (uniform)."""
    prefer_clean: bool = True
    """Draw the solution among those whose intermediate values are non-negative integers, when any."""
    num_counts: tuple[int, ...] = (3, 4)
    """How many numbers a training task has (``generate_tasks``: half 3, half 4)."""
    heldout_count: int = 1000
    """Size of the held-out evaluation set never trained on: ``generate_tasks(heldout_count, heldout_seed)``."""
    heldout_seed: int = 0
    """Seed of the held-out evaluation set (``countdown-study eval --tasks generated:1000:0``)."""
    model: TinyModelConfig = TinyModelConfig()
    """Shape of the policy."""
    seed: int = 0
    """Run seed: model initialisation, tasks and traces of every step derive from it."""
    threads: int = 2
    """torch intra-op threads (the same seed and thread count give identical weights)."""
    checkpoint_every: int = 250
    """Write a resumable checkpoint every this many steps (and at the end)."""
    log_every: int = 25
    """Append a line to ``log.jsonl`` every this many steps."""
    data_workers: int = 1
    """Processes preparing the next steps' traces while the current one trains (0: in the loop)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.multi_attempt_share <= 1.0:
            raise ValueError(f"multi_attempt_share must be in [0, 1], got {self.multi_attempt_share}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be positive")
        if not 0.0 <= self.decay_fraction <= 1.0:
            raise ValueError(f"decay_fraction must be in [0, 1], got {self.decay_fraction}")

    @property
    def decay_start(self) -> int:
        """First step of the final linear decay."""
        return int(round(self.steps * (1.0 - self.decay_fraction)))


RUNTIME_FIELDS = ("threads", "checkpoint_every", "log_every", "data_workers")
"""Config fields a resumed run may change: they do not change what is computed."""


def config_to_dict(config: SFTConfig) -> dict:
    """A JSON-able view of a config."""
    return json.loads(json.dumps(asdict(config)))


def config_from_dict(data: dict) -> SFTConfig:
    """Inverse of ``config_to_dict`` (unknown keys are an error)."""
    known = {f.name for f in fields(SFTConfig)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown SFTConfig fields: {sorted(unknown)}")
    values = dict(data)
    if "model" in values:
        values["model"] = TinyModelConfig(**values["model"])
    for name in ("betas", "num_counts"):
        if name in values:
            values[name] = tuple(values[name])
    return SFTConfig(**values)


# ---------------------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------------------


def format_value(x: Fraction, operand: bool = False) -> str:
    """An exact value as ``7`` or ``a/b``; as an operand, non-integers and negatives go in parentheses."""
    text = str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    return f"({text})" if operand and (x.denominator != 1 or x < 0) else text


def format_step(step: Step) -> str:
    """One merge as ``44+19=63``, ``6/(1/4)=24`` or ``8-(-14)=22`` (unambiguous left to right)."""
    return (
        f"{format_value(step.left, True)}{step.op}{format_value(step.right, True)}={format_value(step.value)}"
    )


def format_attempt(derivation: Derivation) -> str:
    """One attempt: the merges as ``a+b=c, ...`` in a think span, then the expression in an answer span."""
    steps = ", ".join(format_step(step) for step in derivation.steps)
    return f"{THINK_OPEN}{steps}{THINK_CLOSE}{ANSWER_OPEN}{derivation.expression}{ANSWER_CLOSE}"


def wrong_derivation(nums: Sequence[int], target: int, rng: Random, max_draws: int = 100) -> Derivation:
    """A random merge sequence over ``nums`` whose value is not ``target`` (re-drawn when it is)."""
    for _ in range(max_draws):
        derivation = random_derivation(nums, rng)
        if derivation.value != target:
            return derivation
    raise ValueError(f"no wrong derivation found for {list(nums)} -> {target} in {max_draws} draws")


def is_clean(derivation: Derivation) -> bool:
    """Whether every merge of a derivation gives a non-negative integer (the public data's operations)."""
    return all(step.value.denominator == 1 and step.value >= 0 for step in derivation.steps)


def make_trace(
    task: Task,
    rng: Random,
    multi_attempt_share: float = 0.0,
    max_wrong_attempts: int = 2,
    solutions: Sequence[Derivation] | None = None,
    prefer_clean: bool = True,
) -> str:
    """A completion for ``task``: zero or more wrong attempts, then a solver solution drawn with ``rng``.

    With probability ``multi_attempt_share`` the trace opens with 1 to ``max_wrong_attempts`` wrong
    attempts (uniform), each a full think + answer span. The last answer span is always correct.
    """
    solutions = all_solutions(task.nums, task.target) if solutions is None else solutions
    if not solutions:
        raise ValueError(f"task {task} has no solution")
    attempts: list[Derivation] = []
    if max_wrong_attempts > 0 and rng.random() < multi_attempt_share:
        attempts = [
            wrong_derivation(task.nums, task.target, rng) for _ in range(rng.randint(1, max_wrong_attempts))
        ]
    clean = [d for d in solutions if is_clean(d)] if prefer_clean else []
    pool = clean or solutions
    attempts.append(pool[rng.randrange(len(pool))])
    return "".join(format_attempt(d) for d in attempts)


# ---------------------------------------------------------------------------------------------------
# Batches: tasks of a step, tokens and the completion mask
# ---------------------------------------------------------------------------------------------------


def derived_seed(seed: int, step: int, stream: int, draw: int = 0) -> int:
    """A 62-bit seed derived from (run seed, step, stream, draw); streams keep tasks and traces independent."""
    return int(np.random.default_rng([int(seed), int(step), int(stream), int(draw)]).integers(2**62))


STREAM_TASKS, STREAM_TRACES = 0, 1


def heldout_keys(config: SFTConfig) -> frozenset:
    """Canonical keys of the held-out evaluation set."""
    if config.heldout_count <= 0:
        return frozenset()
    heldout = task_data.generate_tasks(
        config.heldout_count, config.heldout_seed, num_counts=config.num_counts
    )
    return frozenset(task.key for task in heldout)


def step_examples(config: SFTConfig, step: int, exclude: frozenset) -> list[tuple[str, str]]:
    """The (prompt, completion) pairs of one step: fresh solvable tasks not in ``exclude``, with traces."""
    rng = Random(derived_seed(config.seed, step, STREAM_TRACES))
    examples: list[tuple[str, str]] = []
    draw = 0
    while len(examples) < config.batch_size:
        need = config.batch_size - len(examples)
        # draw 0 is the step's batch; later draws (rare) replace held-out or unsolvable tasks
        seed = derived_seed(config.seed, step, STREAM_TASKS, draw)
        for task in task_data.generate_tasks(need, seed, num_counts=config.num_counts):
            solutions = [] if task.key in exclude else all_solutions(task.nums, task.target)
            if solutions and len(examples) < config.batch_size:
                trace = make_trace(
                    task, rng, config.multi_attempt_share, config.max_wrong_attempts, solutions
                )
                examples.append((format_prompt(task.nums, task.target, "compact"), trace))
        draw += 1
    return examples


def _as_is(examples: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The loader's collate function: a step's examples are already its batch."""
    return examples


class StepExamples(torch.utils.data.Dataset):
    """Item ``i`` is ``step_examples`` of step ``first_step + i``: a pure function of the step, so
    loader workers may prepare steps ahead without changing what is trained on."""

    def __init__(self, config: SFTConfig, first_step: int, last_step: int, exclude: frozenset) -> None:
        self.config, self.first_step, self.last_step, self.exclude = config, first_step, last_step, exclude

    def __len__(self) -> int:
        return self.last_step - self.first_step

    def __getitem__(self, index: int) -> list[tuple[str, str]]:
        return step_examples(self.config, self.first_step + index, self.exclude)


def step_loader(
    config: SFTConfig, first_step: int, last_step: int, exclude: frozenset
) -> torch.utils.data.DataLoader:
    """The examples of steps ``first_step..last_step - 1`` in order, prepared by ``config.data_workers``."""
    return torch.utils.data.DataLoader(
        StepExamples(config, first_step, last_step, exclude),
        batch_size=None,
        shuffle=False,
        num_workers=config.data_workers,
        collate_fn=_as_is,
    )


def encode_example(tokenizer, prompt: str, completion: str) -> tuple[list[int], list[bool]]:
    """Token ids of ``<bos> prompt completion <eos>`` and a mask marking the completion and EOS tokens."""
    prompt_ids = [tokenizer.bos_token_id] + tokenizer.encode(prompt, add_special_tokens=False)
    completion_ids = tokenizer.encode(completion, add_special_tokens=False) + [tokenizer.eos_token_id]
    return prompt_ids + completion_ids, [False] * len(prompt_ids) + [True] * len(completion_ids)


def collate(encoded: Sequence[tuple[list[int], list[bool]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch: ``input_ids``, ``attention_mask`` and ``loss_mask``, each ``(B, T)``."""
    length = max(len(ids) for ids, _ in encoded)
    input_ids = torch.full((len(encoded), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(encoded), length), dtype=torch.long)
    loss_mask = torch.zeros((len(encoded), length), dtype=torch.bool)
    for row, (ids, mask) in enumerate(encoded):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention_mask[row, : len(ids)] = 1
        loss_mask[row, : len(ids)] = torch.tensor(mask)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "loss_mask": loss_mask}


def completion_loss_sum(
    logits: torch.Tensor, input_ids: torch.Tensor, loss_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed next-token cross-entropy over the masked (completion) positions, and how many there are."""
    shifted_logits = logits[:, :-1].float()  # (B, T-1, V): position t predicts token t+1
    targets = input_ids[:, 1:]  # (B, T-1)
    weights = loss_mask[:, 1:].float()  # (B, T-1)
    token_loss = F.cross_entropy(shifted_logits.transpose(1, 2), targets, reduction="none")  # (B, T-1)
    return (token_loss * weights).sum(), weights.sum()


def completion_loss(logits: torch.Tensor, input_ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the masked (completion) positions."""
    total, count = completion_loss_sum(logits, input_ids, loss_mask)
    return total / count.clamp(min=1.0)


def length_buckets(lengths: Sequence[int], num_buckets: int) -> list[list[int]]:
    """Split example indices, sorted by length, into ``num_buckets`` near-equal chunks (less padding)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    chunks = np.array_split(np.array(order, dtype=int), min(num_buckets, len(order)))
    return [chunk.tolist() for chunk in chunks if len(chunk)]


# ---------------------------------------------------------------------------------------------------
# Schedule and checkpoints
# ---------------------------------------------------------------------------------------------------


def learning_rate(step: int, config: SFTConfig) -> float:
    """LR of step ``step`` (0-based): linear warm-up, constant, linear decay to zero over the last steps."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if step >= config.decay_start:
        return config.lr * (config.steps - step) / max(config.steps - config.decay_start, 1)
    return config.lr


def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file, then ``os.replace``: a checkpoint is whole or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def checkpoint_path(out_dir: Path) -> Path:
    """Where a run keeps its resumable checkpoint (ignored by git)."""
    return Path(out_dir) / "checkpoints" / "last.pt"


def final_model_dir(out_dir: Path) -> Path:
    """Where a finished run saves its model and tokenizer with ``save_pretrained`` (ignored by git)."""
    return Path(out_dir) / "checkpoints" / "final"


def _check_resumable(saved: dict, config: SFTConfig, step: int) -> None:
    """Refuse to resume a checkpoint made with a different computation.

    A schedule that differs only in its length (``steps``, ``decay_fraction``) computes the same steps
    until either schedule starts its decay, so a checkpoint from before both decay starts continues
    into the new schedule exactly as a run started with it would.
    """
    now = config_to_dict(config)
    differs = sorted(k for k in now if k not in RUNTIME_FIELDS and saved.get(k) != now[k])
    length_only = set(differs) <= {"steps", "decay_fraction"}
    if differs and length_only and step <= min(config_from_dict(saved).decay_start, config.decay_start):
        return
    if differs:
        raise ValueError(
            f"checkpoint at step {step} was made with a different config: {differs}; retrain instead"
        )


def _truncate_log(log_file: Path, step: int) -> None:
    """Drop log lines after ``step`` (written by an interrupted run after its last checkpoint)."""
    if not log_file.exists():
        return
    lines = [line for line in log_file.read_text().splitlines() if line and json.loads(line)["step"] <= step]
    log_file.write_text("".join(line + "\n" for line in lines))


# ---------------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------------


def train_step_gradients(
    model, tokenizer, examples: Sequence[tuple[str, str]], num_buckets: int
) -> torch.Tensor:
    """Accumulate the gradient of the mean completion loss over ``examples``; return that loss.

    The batch runs as length-sorted micro-batches; each adds its summed token loss divided by the
    batch's total completion tokens, so the gradient equals that of one padded batch.
    """
    encoded = [encode_example(tokenizer, prompt, completion) for prompt, completion in examples]
    total_tokens = sum(sum(mask[1:]) for _, mask in encoded)
    loss = torch.zeros(())
    for bucket in length_buckets([len(ids) for ids, _ in encoded], num_buckets):
        batch = collate([encoded[i] for i in bucket], tokenizer.pad_token_id)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        summed, _ = completion_loss_sum(logits, batch["input_ids"], batch["loss_mask"])
        part = summed / total_tokens
        part.backward()
        loss += part.detach()
    return loss


@dataclass
class SFTResult:
    """What ``train_sft`` returns."""

    model: torch.nn.Module
    """The trained policy (fp32 weights, eval mode)."""
    tokenizer: object
    """The embedded tokenizer."""
    steps_done: int
    """Steps completed so far (``config.steps`` unless stopped early)."""
    wall_seconds: float
    """Training wall time summed over resumed segments."""
    final_loss: float
    """Loss of the last step."""


def train_sft(
    config: SFTConfig,
    out_dir: Path,
    resume: bool = False,
    stop_after: int | None = None,
    progress: bool = True,
) -> SFTResult:
    """Train the embedded policy; write ``config.json``, ``log.jsonl``, checkpoints and the final model.

    ``resume`` continues from ``checkpoints/last.pt`` when it exists. ``stop_after`` ends the run after
    that many steps in total (a checkpoint is written there), as if it had been interrupted.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    code_state = git_state()  # the code this segment runs
    torch.set_num_threads(config.threads)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, config.model, seed=config.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=config.betas, weight_decay=config.weight_decay, fused=True
    )
    start, wall_before, loss_value = 0, 0.0, float("nan")
    ckpt = checkpoint_path(out_dir)
    if resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        _check_resumable(state["config"], config, state["step"])
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        start, wall_before, loss_value = state["step"], state["wall_seconds"], state["loss"]
    (out_dir / "config.json").write_text(json.dumps(config_to_dict(config), indent=2) + "\n")
    log_file = out_dir / "log.jsonl"
    _truncate_log(log_file, start)
    exclude = heldout_keys(config)
    end = config.steps if stop_after is None else min(stop_after, config.steps)
    model.train()
    t0 = time.perf_counter()
    bar = tqdm(total=config.steps, initial=start, desc="sft", disable=not progress)
    for step, examples in enumerate(step_loader(config, start, end, exclude), start=start):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        optimizer.zero_grad(set_to_none=True)
        loss = train_step_gradients(model, tokenizer, examples, config.length_buckets)
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        loss_value = float(loss.detach())
        done = step + 1
        bar.update(1)
        wall = wall_before + time.perf_counter() - t0
        if done % config.log_every == 0 or done == end:
            bar.set_postfix(loss=f"{loss_value:.3f}", lr=f"{learning_rate(step, config):.2e}")
            record = {
                "step": done,
                "loss": loss_value,
                "lr": learning_rate(step, config),
                "wall_seconds": wall,
            }
            with log_file.open("a") as f:
                f.write(json.dumps(record) + "\n")
        if done % config.checkpoint_every == 0 or done == end:
            state = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": done,
                "torch_rng": torch.get_rng_state(),
                "config": config_to_dict(config),
                "wall_seconds": wall,
                "loss": loss_value,
            }
            save_checkpoint(ckpt, state)
    bar.close()
    wall = wall_before + time.perf_counter() - t0 if end > start else wall_before
    model.eval()
    if end == config.steps:
        model.save_pretrained(final_model_dir(out_dir))
        tokenizer.save_pretrained(final_model_dir(out_dir))
        summary = run_facts(config, end, wall, loss_value, code_state)
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return SFTResult(model, tokenizer, end, wall, loss_value)


# ---------------------------------------------------------------------------------------------------
# Provenance and shipping
# ---------------------------------------------------------------------------------------------------


def run_facts(
    config: SFTConfig, steps_done: int, wall_seconds: float, final_loss: float, code_state: dict | None = None
) -> dict:
    """Config, steps, wall time, steps/s, loss, git state (``code_state``, else now) and versions."""
    import transformers

    return {
        "config": config_to_dict(config),
        "steps_done": steps_done,
        "wall_seconds": round(wall_seconds, 1),
        "steps_per_second": round(steps_done / wall_seconds, 4) if wall_seconds > 0 else None,
        "final_loss": final_loss,
        **(git_state() if code_state is None else code_state),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }


def ship(out_dir: Path, dest: Path = EMBEDDED_CHECKPOINT_DIR) -> Path:
    """Copy a finished run's model and tokenizer to ``dest`` with ``save_pretrained``, with ``sft.json``.

    ``sft.json`` holds the run's facts; its ``quality`` entry is emptied until ``record_quality`` fills
    it for these weights.
    """
    model, tokenizer = load_policy(final_model_dir(out_dir))
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    info = json.loads((Path(out_dir) / "summary.json").read_text())
    info["quality"] = None
    (dest / SHIPPED_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return dest


QUALITY_N = 16
"""Samples per held-out task when measuring the shipped checkpoint's quality."""
QUALITY_GOAL = {"pass@1": (0.25, 0.45), "pass@16": (0.65, 1.0), "well_formed": (0.9, 1.0)}
"""Ranges the shipped checkpoint should fall in (and 3-number tasks clearly easier than 4-number)."""
QUALITY_SAMPLING = SamplingConfig(
    engine="native", temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=96, stop_at_answer=False
)
"""How quality is measured: temperature 1.0, no top-p / top-k, 96 new tokens, fp32 weights."""


def measure_quality(config: SFTConfig, policy_dir: Path, out_dir: Path | None = None, seed: int = 0) -> dict:
    """Evaluate a policy on the run's held-out tasks (``QUALITY_N`` samples each) and return its quality.

    The full summary is written to ``out_dir/eval_heldout.json`` when ``out_dir`` is given.
    """
    model, tokenizer = load_policy(policy_dir)
    source = f"generated:{config.heldout_count}:{config.heldout_seed}"
    sampling = QUALITY_SAMPLING
    result = evaluate(
        model, tokenizer, task_data.load_tasks(source), n=QUALITY_N, sampling=sampling, seed=seed,
        template=prompt_template(model),
    )  # fmt: skip
    summary = result.summary
    measured_with = {"policy": str(policy_dir), "tasks": source, "seed": seed, "sampling": asdict(sampling)}
    if out_dir is not None:
        atomic_write_json(Path(out_dir) / "eval_heldout.json", {**summary, "config": measured_with})
    keep = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "avg_pass@k", "mean_score", "exact_rate",
            "well_formed", "answer_spans_per_rollout", "abandoned_rate", "num_tasks", "n")  # fmt: skip
    quality = {key: summary[key] for key in keep if key in summary}
    quality["by_num_count"] = {
        str(count): {key: group[key] for key in ("num_tasks", "pass@1", "pass@16", "well_formed")}
        for count, group in summary["by_num_count"].items()
    }
    quality["measured_with"] = {**measured_with, "policy": "embedded"}
    return quality


def quality_shortfalls(quality: dict) -> list[str]:
    """Which parts of ``QUALITY_GOAL`` a measured quality misses (empty: it meets the goal)."""
    missed = [
        f"{key} {quality[key]:.3f} outside [{low}, {high}]"
        for key, (low, high) in QUALITY_GOAL.items()
        if not low <= quality[key] <= high
    ]
    by_count = quality.get("by_num_count", {})
    if "3" in by_count and "4" in by_count and by_count["3"]["pass@1"] <= by_count["4"]["pass@1"]:
        missed.append("3-number tasks are not easier than 4-number tasks")
    return missed


def record_quality(quality: dict, dest: Path = EMBEDDED_CHECKPOINT_DIR) -> None:
    """Store measured quality (pass@k, well-formed, per number count, how it was measured) in ``sft.json``."""
    info_file = Path(dest) / SHIPPED_INFO_FILE
    info = json.loads(info_file.read_text())
    info["quality"] = quality
    info_file.write_text(json.dumps(info, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``countdown-study sft``; unset options keep ``SFTConfig``'s defaults."""
    default = SFTConfig()
    parser.add_argument(
        "--out", type=Path, default=None, help="run folder (default: results/runs/sft-embedded)"
    )
    parser.add_argument("--steps", type=int, default=default.steps, help="optimizer steps")
    parser.add_argument("--seed", type=int, default=default.seed, help="run seed")
    parser.add_argument("--threads", type=int, default=default.threads, help="torch threads")
    parser.add_argument("--batch-size", type=int, default=default.batch_size, help="traces per step")
    parser.add_argument("--lr", type=float, default=default.lr, help="peak learning rate")
    parser.add_argument(
        "--multi-attempt-share",
        type=float,
        default=default.multi_attempt_share,
        help="share of multi-attempt traces",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=default.checkpoint_every, help="steps between checkpoints"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue from the run folder's last checkpoint"
    )
    parser.add_argument(
        "--ship", action="store_true", help="save the final model to the package's embedded checkpoint"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    """The run's config: ``SFTConfig`` defaults with the command line's options."""
    return replace(
        SFTConfig(),
        steps=args.steps,
        seed=args.seed,
        threads=args.threads,
        batch_size=args.batch_size,
        lr=args.lr,
        multi_attempt_share=args.multi_attempt_share,
        checkpoint_every=args.checkpoint_every,
    )


def cli_main(args: argparse.Namespace) -> int:
    """Run ``countdown-study sft``."""
    config = config_from_args(args)
    out_dir = args.out or runs_dir() / "sft-embedded"
    result = train_sft(config, out_dir, resume=args.resume, progress=not args.no_progress)
    print(
        f"trained {result.steps_done} steps in {result.wall_seconds:.0f} s; final loss {result.final_loss:.4f}"
    )
    if args.ship:
        dest = ship(out_dir)
        quality = measure_quality(config, dest, out_dir)
        record_quality(quality, dest)
        print(f"shipped to {dest}: pass@1 {quality['pass@1']:.3f}, pass@16 {quality['pass@16']:.3f}, "
              f"well-formed {quality['well_formed']:.3f}")  # fmt: skip
        for problem in quality_shortfalls(quality):
            print(f"quality goal missed: {problem}")
    return 0
