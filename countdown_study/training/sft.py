"""The supervised stage that makes the embedded policy: solver-made traces, the SFT loop, shipping.

Traces come from ``policy.traces``, each step's tasks and traces from ``training.sft_data`` (fresh
solvable tasks every step, never the held-out evaluation set). The loss covers completion tokens
only; bf16 autocast; fused AdamW; warm-up, constant, linear decay over the last ``decay_fraction`` of
a fixed number of steps, so one seed and one thread count give identical weights.

An SFT run is a run-store run (``runs.store``), like the RLOO runs: ``train_sft(config)`` opens
``<runs_dir>/sft-<hash>/`` and finishes it unless it is finished (then it is loaded, not retrained).
The hash covers ``run_config(config)``: the config without ``RUNTIME_FIELDS`` (threads, checkpoint and
log intervals, loader workers), so changing those keeps the run. The store writes ``config.json``,
provenance, ``steps.jsonl`` (``step`` is the 0-based step index; loss, lr, wall seconds),
``results.json`` (``run_facts``) and ``DONE``; the resumable checkpoint (model, optimizer, step, RNG
state) is ``checkpoints/last.pt``, written atomically, and the final weights ``checkpoints/final/``,
each with its SHA-256 beside it, checked when it loads (``training.checkpoint``: ``weights_only``, so
a checkpoint runs no code). An unfinished run resumes from its checkpoint and ends with the weights of
an uninterrupted one. A non-finite loss or gradient norm stops the run at that step (``training.finite``).

A checkpoint of another run whose schedule differs only in length (``steps``, ``decay_fraction``)
continues into this run's schedule when it lies before both decay starts (``resume_from``): the steps
up to there are the same computation. It does not change the run id (the weights are those a run of
this config trains from step 0); the run records it in ``resumed_from.json`` and copies the other run's
step-log lines before the checkpoint.

A run may start from shipped or saved weights instead of a fresh model (``init_from``); the run id
then covers those weights' fingerprint (``policy_identity``), so new weights under the same name make
a new run.

Each shipped policy has a ``Recipe``: its config, its name (``policy.EMBEDDED_POLICIES``), how its
quality is measured and the goal it should meet. ``countdown-study sft --ship`` (``cli.sft``) trains
the ``solver`` recipe (``SFTConfig`` defaults, the ``embedded`` policy); ``--recipe search`` the
``embedded-search`` policy, which continues from ``embedded`` on search traces. ``ship`` copies a
run's weights to the recipe's folder with ``sft.json``.
"""

from __future__ import annotations

import json
import platform
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from countdown_study.countdown import load_tasks
from countdown_study.evaluation.evaluate import EVAL_SAMPLING, evaluate
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.policy import (
    EMBEDDED_POLICIES,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    load_policy,
    policy_identity,
    prompt_template,
)
from countdown_study.policy.traces import SearchRecipe
from countdown_study.rollout import SamplingConfig, model_device
from countdown_study.rollout.core import HOST
from countdown_study.runs.files import OMIT_AT_DEFAULT, atomic_write_json, atomic_write_text, plain
from countdown_study.runs.provenance import git_state
from countdown_study.runs.store import RunNotFinishedError, RunStore, is_finished
from countdown_study.training.checkpoint import (
    UnreadableCheckpointError,
    read_checkpoint,
    remove_checkpoint,
    write_checkpoint,
)
from countdown_study.training.common import save_final, start_on_device
from countdown_study.training.device import DEFAULT_DEVICE, check_device, resolve_device
from countdown_study.training.finite import check_finite_step, total_grad_norm
from countdown_study.training.sft_data import (
    collate,
    encode_example,
    heldout_keys,
    length_buckets,
    step_loader,
)
from countdown_study.training.specs import check_positive, check_seed

SHIPPED_INFO_FILE = "sft.json"
"""The file beside the shipped weights holding their training config, run facts and measured quality."""
SHIPPED_FACTS = ("config", "steps_done", "wall_seconds", "steps_per_second", "final_loss", "git_sha",
                 "git_dirty", "versions")  # fmt: skip
"""The keys of ``run_facts``, in order: ``sft.json`` lists them so, then ``quality``."""
CHECKPOINT = "last.pt"
"""The resumable checkpoint in a run's ``checkpoints/``."""


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
    """Share of traces with wrong attempts before the correct one (solver traces; unused with ``search``)."""
    max_wrong_attempts: int = 2
    """A multi-attempt trace has 1 to this many wrong attempts (uniform; unused with ``search``)."""
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
    """Append a line to the step log every this many steps (and at the end)."""
    data_workers: int = 1
    """Processes preparing the next steps' traces while the current one trains (0: in the loop)."""
    init_from: str | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Starting weights: a shipped policy name (``embedded``) or a ``save_pretrained`` folder of this
    ``model`` shape; None: a fresh model seeded by ``seed``. Their fingerprint is part of the run id.
    (Added after the ``embedded`` run, left out of a config's JSON while None, so that run keeps its id.)"""
    search: SearchRecipe | None = field(default=None, metadata=OMIT_AT_DEFAULT)
    """Train on search traces with these proportions (``policy.traces.make_search_trace``); None: solver
    traces (``make_trace``, with ``multi_attempt_share``). (Left out of the JSON while None, too.)"""
    device: str = field(default=DEFAULT_DEVICE, metadata=OMIT_AT_DEFAULT)
    """Where the model trains: ``cpu``, ``cuda`` or ``auto`` (``training.device``; resolved at run start
    and recorded in the run's provenance; left out of the JSON while ``cpu``)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.multi_attempt_share <= 1.0:
            raise ValueError(f"multi_attempt_share must be in [0, 1], got {self.multi_attempt_share}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be positive")
        if not 0.0 <= self.decay_fraction <= 1.0:
            raise ValueError(f"decay_fraction must be in [0, 1], got {self.decay_fraction}")
        check_positive("lr", self.lr)
        check_seed(self.seed)
        for name in ("threads", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        check_device(self.device)

    @property
    def decay_start(self) -> int:
        """First step of the final linear decay."""
        return int(round(self.steps * (1.0 - self.decay_fraction)))


RUNTIME_FIELDS = ("threads", "checkpoint_every", "log_every", "data_workers")
"""Config fields a resumed run may change and the run id leaves out: they do not change what is computed
(``threads`` does change the floating-point sums; the run's provenance records the count it ran with)."""


def config_to_dict(config: SFTConfig) -> dict:
    """A JSON-able view of a config (``runs.files.plain``: fields added later left out at their default)."""
    return plain(config)


def config_from_dict(data: dict) -> SFTConfig:
    """Inverse of ``config_to_dict`` (unknown keys are an error)."""
    unknown = set(data) - {f.name for f in fields(SFTConfig)}
    if unknown:
        raise ValueError(f"unknown SFTConfig fields: {sorted(unknown)}")
    values = dict(data)
    if "model" in values:
        values["model"] = TinyModelConfig(**values["model"])
    if values.get("search") is not None:
        values["search"] = SearchRecipe(**values["search"])
    for name in ("betas", "num_counts"):
        if name in values:
            values[name] = tuple(values[name])
    return SFTConfig(**values)


def run_config(config: SFTConfig) -> dict:
    """The view of ``config`` that names its run: ``config_to_dict`` without ``RUNTIME_FIELDS``.

    ``RunStore.open`` hashes the config it is given (type name and canonical JSON), so SFT runs open
    the store with this dict (type ``dict``), not the dataclass: runtime fields do not change the id.
    """
    return {k: v for k, v in config_to_dict(config).items() if k not in RUNTIME_FIELDS}


# ---------------------------------------------------------------------------------------------------
# Loss and schedule
# ---------------------------------------------------------------------------------------------------


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


def train_step_gradients(
    model, tokenizer, examples: Sequence[tuple[str, str]], num_buckets: int
) -> torch.Tensor:
    """Accumulate the gradient of the mean completion loss over ``examples``; return that loss.

    The batch runs as length-sorted micro-batches; each adds its summed token loss divided by the
    batch's total completion tokens, so the gradient equals that of one padded batch.
    """
    encoded = [encode_example(tokenizer, prompt, completion) for prompt, completion in examples]
    total_tokens = sum(sum(mask[1:]) for _, mask in encoded)
    device = model_device(model)
    loss = torch.zeros((), device=device)
    for bucket in length_buckets([len(ids) for ids, _ in encoded], num_buckets):
        batch = collate([encoded[i] for i in bucket], tokenizer.pad_token_id, device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        summed, _ = completion_loss_sum(logits, batch["input_ids"], batch["loss_mask"])
        part = summed / total_tokens
        part.backward()
        loss += part.detach()
    return loss


def learning_rate(step: int, config: SFTConfig) -> float:
    """LR of step ``step`` (0-based): linear warm-up, constant, linear decay to zero over the last steps."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if step >= config.decay_start:
        return config.lr * (config.steps - step) / max(config.steps - config.decay_start, 1)
    return config.lr


# ---------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------


def _run_path(run: RunStore | str | Path) -> Path:
    return run.path if isinstance(run, RunStore) else Path(run)


def checkpoint_path(run: RunStore | str | Path) -> Path:
    """A run's resumable checkpoint, ``checkpoints/last.pt`` (a run store or a run folder)."""
    return _run_path(run) / "checkpoints" / CHECKPOINT


def final_model_dir(run: RunStore | str | Path) -> Path:
    """Where a finished run keeps its model and tokenizer (``save_pretrained``; ignored by git)."""
    return _run_path(run) / "checkpoints" / "final"


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


# ---------------------------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------------------------


class _Stopped(Exception):
    """Raised by a run told to stop after some steps (``stop_after``): it stays unfinished."""


def open_run(config: SFTConfig, root: str | Path | None = None) -> RunStore:
    """The run-store run of ``config`` under ``root`` (default ``paths.runs_dir()``): ``sft-<hash>``; the
    hash covers the starting weights' fingerprint when the run has ``init_from``."""
    identity = None if config.init_from is None else policy_identity(config.init_from)
    return RunStore.open(run_config(config), root=root, prefix="sft", identity=identity)


def train_sft(
    config: SFTConfig,
    root: str | Path | None = None,
    resume_from: str | Path | None = None,
    stop_after: int | None = None,
    progress: bool = True,
    wait: bool = True,
) -> RunStore:
    """Run ``config`` in the run store and return its store; a finished run is loaded, not retrained.

    An unfinished run resumes from its own checkpoint. Without one, ``resume_from`` (another run's
    checkpoint file or run folder) is continued if ``_check_resumable`` allows it. ``stop_after``
    ends an attempt after that many steps in total, with a checkpoint, as if it had been interrupted:
    the store returned is then unfinished. ``wait``: see ``RunStore.complete``. ``cuda`` without a CUDA
    device fails before a run folder is made (a finished run loads anywhere).
    """
    identity = None if config.init_from is None else policy_identity(config.init_from)
    if not RunStore.locate(run_config(config), root=root, prefix="sft", identity=identity).is_done:
        resolve_device(config.device)
    store = open_run(config, root)
    body = partial(_run_sft, config, resume_from=resume_from, stop_after=stop_after, progress=progress)
    try:
        return store.complete(body, threads=config.threads, resume_checkpoint=CHECKPOINT, wait=wait)
    except _Stopped:
        return store


def load_sft(run: RunStore | str | Path):
    """``(model, tokenizer)`` of a finished SFT run."""
    return load_policy(final_model_dir(run))


def _read_own_checkpoint(path: Path) -> dict | None:
    """The run's own checkpoint, or None when there is none; one that cannot be read or differs from its
    recorded SHA-256 (``checkpoint.read_checkpoint``) is reported with its path and removed, and the run
    starts over as if it had none (``checkpoint.load_checkpoint``)."""
    if not path.is_file():
        return None
    try:
        return read_checkpoint(path, map_location=HOST)  # the RNG state must stay on the host
    except UnreadableCheckpointError as err:
        warnings.warn(f"{err}; it is removed and the run starts over", stacklevel=3)
        remove_checkpoint(path)
        return None


def _restore(store: RunStore, config: SFTConfig, resume_from, model, optimizer) -> tuple[int, float, float]:
    """Load the run's checkpoint, else ``resume_from``'s; returns (steps done, wall seconds, last loss)."""
    source, own = checkpoint_path(store), True
    state = _read_own_checkpoint(source)
    if state is None:
        if resume_from is None:
            return 0, 0.0, float("nan")
        source, own = Path(resume_from), False
        source = checkpoint_path(source) if source.is_dir() else source
        state = read_checkpoint(source, map_location=HOST)  # checked and tensors only, or refused
    _check_resumable(state["config"], config, state["step"])
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    if not own:  # record where the run started and adopt the other run's log of the steps it did
        store.write_json("resumed_from", {"checkpoint": str(source.resolve()), "step": state["step"]})
        other = source.parent.parent / "steps.jsonl"
        lines = other.read_text().splitlines(keepends=True) if other.is_file() else []
        for record in (json.loads(line) for line in lines if line.endswith("\n")):
            if record["step"] < state["step"]:
                store.log_step(record)
    return state["step"], state["wall_seconds"], state["loss"]


def _run_sft(config: SFTConfig, store: RunStore, resume_from, stop_after, progress: bool) -> dict:
    """The body of an SFT run: train (resuming), save the final model, return ``run_facts``."""
    code_state = git_state()  # the code this attempt runs
    device = start_on_device(store, config.device)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, config.model, seed=config.seed).to(device)  # initialised on the host
    if config.init_from is not None:
        model.load_state_dict(load_policy(config.init_from)[0].state_dict())
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=config.betas, weight_decay=config.weight_decay, fused=True
    )
    start, wall_before, loss_value = _restore(store, config, resume_from, model, optimizer)
    store.truncate_steps(start)
    end = config.steps if stop_after is None else min(stop_after, config.steps)
    model.train()
    t0 = time.perf_counter()
    bar = tqdm(total=config.steps, initial=start, desc=f"sft {store.run_id}", disable=not progress)
    for step, examples in enumerate(step_loader(config, start, end, heldout_keys(config)), start=start):
        lr = learning_rate(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        loss = train_step_gradients(model, tokenizer, examples, config.length_buckets)
        if config.grad_clip > 0:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip))
        else:
            grad_norm = total_grad_norm(model)
        optimizer.step()
        loss_value, done = float(loss.detach()), step + 1
        check_finite_step("SFT", step, {"loss": loss_value, "grad_norm": grad_norm})  # no DONE after a NaN
        bar.update(1)
        wall = wall_before + time.perf_counter() - t0
        if done % config.log_every == 0 or done == end:
            bar.set_postfix(loss=f"{loss_value:.3f}", lr=f"{lr:.2e}")
            store.log_step({"step": step, "loss": loss_value, "lr": lr, "wall_seconds": wall})
        if done % config.checkpoint_every == 0 or done == end:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": done,
                     "torch_rng": torch.get_rng_state(), "config": config_to_dict(config),
                     "wall_seconds": wall, "loss": loss_value}  # fmt: skip
            write_checkpoint(store.checkpoint_dir / CHECKPOINT, state)
    bar.close()
    if end < config.steps:
        raise _Stopped(f"stopped after {end} of {config.steps} steps")
    wall = wall_before + time.perf_counter() - t0 if end > start else wall_before
    model.eval()
    save_final(store, model, tokenizer)
    return run_facts(config, end, wall, loss_value, code_state)


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


def ship(run: RunStore | str | Path, dest: Path = EMBEDDED_CHECKPOINT_DIR) -> Path:
    """Copy a finished run's model and tokenizer to ``dest`` with ``save_pretrained``, with ``sft.json``.

    ``sft.json`` holds the run's facts (its ``results.json``, in ``run_facts``' key order); its
    ``quality`` entry is emptied until ``record_quality`` fills it for these weights.
    """
    path = _run_path(run)
    if not is_finished(path):
        raise RunNotFinishedError(f"the SFT run in {path} is not finished; nothing to ship")
    facts = json.loads((path / "results.json").read_text())
    model, tokenizer = load_policy(final_model_dir(path))
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    info = {key: facts[key] for key in SHIPPED_FACTS}  # run_facts' order, as results.json sorts keys
    info["config"] = config_to_dict(config_from_dict(facts["config"]))
    info["quality"] = None
    atomic_write_text(dest / SHIPPED_INFO_FILE, json.dumps(info, indent=2) + "\n")
    return dest


QUALITY_N = 16
"""Samples per held-out task when measuring a shipped checkpoint's quality."""
QUALITY_GOAL = {"pass@1": (0.25, 0.45), "pass@16": (0.65, 1.0), "well_formed": (0.9, 1.0)}
"""Ranges the shipped ``embedded`` checkpoint should fall in (and 3-number tasks clearly easier than
4-number)."""
QUALITY_SAMPLING = SamplingConfig(
    engine="native", temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=96, stop_at_answer=False
)
"""How the ``embedded`` quality is measured: temperature 1.0, no top-p / top-k, 96 new tokens, fp32."""
SEARCH_QUALITY_GOAL = {
    "answer_spans_per_rollout": (3.0, 5.0),
    "first_verifying_gap": (0.05, 0.12),
    "pass@1": (0.20, 0.40),
    "truncated": (0.0, 0.02),
}
"""Ranges the shipped ``embedded-search`` checkpoint should fall in: around report 003's SFT policy
(3.95 answer spans per rollout, first-verifying pass@1 0.3975 against final 0.3038, a gap of 0.094),
with whole rollouts rarely cut by the token cap (and 3-number tasks easier than 4-number)."""
SEARCH_QUALITY_SAMPLING = replace(EVAL_SAMPLING, max_new_tokens=224)
"""How the ``embedded-search`` quality is measured: the reports' evaluation sampling (temperature 0.6,
top-p 0.95, top-k 20, whole rollouts) at the study's evaluation budget (``eval_max_new_tokens``)."""


def measure_quality(
    config: SFTConfig,
    policy_dir: Path,
    out_dir: Path | None = None,
    seed: int = 0,
    sampling: SamplingConfig = QUALITY_SAMPLING,
    policy: str = "embedded",
    limit: int | None = None,
) -> dict:
    """Evaluate a policy on the run's held-out tasks (``QUALITY_N`` samples each) and return its quality.

    ``policy`` names it in ``measured_with`` (never ``policy_dir``: results name no folder of this
    machine); ``limit`` keeps the first tasks only (a quick look). The full summary is written to
    ``out_dir/eval_heldout.json`` when ``out_dir`` is given.
    """
    model, tokenizer = load_policy(policy_dir)
    source = f"generated:{config.heldout_count}:{config.heldout_seed}"
    tasks = load_tasks(source)[:limit]
    result = evaluate(
        model, tokenizer, tasks, n=QUALITY_N, sampling=sampling, seed=seed, template=prompt_template(model)
    )
    summary = result.summary
    measured_with = {"policy": policy, "tasks": source, "seed": seed, "sampling": asdict(sampling)}
    if limit is not None:
        measured_with["limit"] = limit
    if out_dir is not None:
        atomic_write_json(Path(out_dir) / "eval_heldout.json", {**summary, "config": measured_with})
    keep = ("pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "avg_pass@k", "mean_score", "exact_rate",
            "well_formed", "answer_spans_per_rollout", "abandoned_rate", "first_verifying_pass@1",
            "truncated", "num_tasks", "n")  # fmt: skip
    quality = {key: summary[key] for key in keep if key in summary}
    if "first_verifying_pass@1" in quality:
        quality["first_verifying_gap"] = quality["first_verifying_pass@1"] - quality["pass@1"]
    quality["by_num_count"] = {
        str(count): {key: group[key] for key in ("num_tasks", "pass@1", "pass@16", "well_formed")}
        for count, group in summary["by_num_count"].items()
    }
    quality["measured_with"] = measured_with
    return quality


def quality_shortfalls(quality: dict, goal: Mapping[str, tuple[float, float]] = QUALITY_GOAL) -> list[str]:
    """Which parts of ``goal`` a measured quality misses (empty: it meets the goal)."""
    missed = [
        f"{key} {quality[key]:.3f} outside [{low}, {high}]"
        for key, (low, high) in goal.items()
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
    atomic_write_text(info_file, json.dumps(info, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------------
# Recipes: the shipped policies
# ---------------------------------------------------------------------------------------------------

SEARCH_CONFIG = SFTConfig(
    steps=300,
    batch_size=32,
    lr=5e-4,
    warmup_steps=20,
    decay_fraction=0.3,
    threads=1,
    checkpoint_every=50,
    log_every=10,
    init_from="embedded",
    search=SearchRecipe(give_up_share=0.2, abandon_share=0.2),
)
"""The ``embedded-search`` run: the shipped ``embedded`` weights continued for 300 steps of 32 search
traces (9,600 traces, about 15 minutes on one thread) at a third of the solver recipe's peak rate.
Pilots of 120 steps on 200 held-out tasks: give-up 0.3 / abandon 0.25 gave 3.51 spans, gap 0.062,
final pass@1 0.251; give-up 0.2 / abandon 0.35 gave 3.70, 0.101, 0.236. The whole run learns to abandon
more than its pilot: abandon 0.3 gave 3.70 spans, gap 0.129 (over the goal), final pass@1 0.229 on the
1,000 held-out tasks; abandon 0.2 (shipped) gives 3.53 spans, gap 0.085, final pass@1 0.269, 0.26% of
rollouts cut (``sft.json``)."""


@dataclass(frozen=True)
class Recipe:
    """A shipped policy: the SFT config that trains it, its name, how its quality is measured and judged."""

    policy: str
    """Its name for ``load_policy`` (a key of ``policy.EMBEDDED_POLICIES``: the folder it ships to)."""
    config: SFTConfig
    """The run that makes it."""
    sampling: SamplingConfig
    """How its quality is measured (``measure_quality``)."""
    goal: Mapping[str, tuple[float, float]]
    """Ranges its measured quality should fall in (``quality_shortfalls``)."""

    @property
    def dest(self) -> Path:
        """The package folder it ships to."""
        return EMBEDDED_POLICIES[self.policy]


RECIPES = {
    "solver": Recipe("embedded", SFTConfig(), QUALITY_SAMPLING, QUALITY_GOAL),
    "search": Recipe("embedded-search", SEARCH_CONFIG, SEARCH_QUALITY_SAMPLING, SEARCH_QUALITY_GOAL),
}
"""The shipped policies by recipe name (``countdown-study sft --recipe``): ``solver`` makes ``embedded``,
``search`` makes ``embedded-search``."""
