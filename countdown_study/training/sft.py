"""The supervised stage that makes the embedded policies: the SFT loop of a run-store run.

Traces come from ``policy.traces``, each step's tasks and traces from ``training.sft_data`` (fresh
solvable tasks every step, never the held-out evaluation set). The loss covers completion tokens
only; bf16 autocast; fused AdamW; warm-up, constant, linear decay over the last ``decay_fraction`` of
a fixed number of steps, so one seed and one thread count give identical weights.

An SFT run is a run-store run (``runs.store``), like the RLOO runs: ``train_sft(config)`` opens
``<runs_dir>/sft-<hash>/`` and finishes it unless it is finished (then it is loaded, not retrained).
The hash covers ``run_config(config)`` (``training.sft_config``: the config without its runtime fields).
The store writes ``config.json``, provenance, ``steps.jsonl`` (``step`` is the 0-based step index; loss,
lr, wall seconds), ``results.json`` (``run_facts``) and ``DONE``; the resumable checkpoint (model,
optimizer, step, RNG state) is ``checkpoints/last.pt``, written atomically, and the final weights
``checkpoints/final/``, each with its SHA-256 beside it, checked when it loads (``training.checkpoint``:
``weights_only``, so a checkpoint runs no code). An unfinished run resumes from its checkpoint and ends
with the weights of an uninterrupted one. A non-finite loss or gradient norm stops the run at that step
(``training.finite``).

A checkpoint of another run whose schedule differs only in length (``steps``, ``decay_fraction``)
continues into this run's schedule when it lies before both decay starts (``resume_from``): the steps
up to there are the same computation. It does not change the run id (the weights are those a run of
this config trains from step 0); the run records it in ``resumed_from.json`` and copies the other run's
step-log lines before the checkpoint.

A run may start from shipped or saved weights instead of a fresh model (``init_from``); the run id
then covers those weights' fingerprint (``policy_identity``), so new weights under the same name make
a new run.

The stage's other modules, whose names are importable from here too: ``sft_config`` (``SFTConfig``, its
JSON views, a run's checkpoint paths), ``sft_data`` (each step's traces), ``sft_ship`` (shipping a run's
weights with ``sft.json`` and measuring their quality) and ``sft_recipes`` (``RECIPES``: each shipped
policy's config, name, quality sampling and goal; ``countdown-study sft --recipe NAME --ship``).
"""

from __future__ import annotations

import json
import platform
import time
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from countdown_study.policy import build_model, build_tokenizer, load_policy, policy_identity
from countdown_study.rollout import model_device
from countdown_study.rollout.core import HOST
from countdown_study.runs.provenance import git_state
from countdown_study.runs.store import RunStore
from countdown_study.training.checkpoint import (
    UnreadableCheckpointError,
    read_checkpoint,
    remove_checkpoint,
    write_checkpoint,
)
from countdown_study.training.common import save_final, start_on_device
from countdown_study.training.device import resolve_device
from countdown_study.training.finite import check_finite_step, total_grad_norm
from countdown_study.training.sft_config import (
    CHECKPOINT,
    RUNTIME_FIELDS,
    SFTConfig,
    checkpoint_path,
    config_from_dict,
    config_to_dict,
    final_model_dir,
    run_config,
)
from countdown_study.training.sft_data import (
    collate,
    encode_example,
    heldout_keys,
    length_buckets,
    step_loader,
)
from countdown_study.training.sft_recipes import (
    LARGE_CONFIG,
    LARGE_MODEL,
    RECIPES,
    SEARCH_CONFIG,
    SMALL_CONFIG,
    SMALL_MODEL,
    Recipe,
)
from countdown_study.training.sft_ship import (
    QUALITY_GOAL,
    QUALITY_N,
    QUALITY_SAMPLING,
    SCALE_QUALITY_GOAL,
    SEARCH_QUALITY_GOAL,
    SEARCH_QUALITY_SAMPLING,
    SHIPPED_FACTS,
    SHIPPED_INFO_FILE,
    STUDY_QUALITY_SAMPLING,
    WEIGHT_DTYPES,
    measure_quality,
    quality_shortfalls,
    record_quality,
    ship,
)

__all__ = [
    "CHECKPOINT",
    "LARGE_CONFIG",
    "LARGE_MODEL",
    "QUALITY_GOAL",
    "QUALITY_N",
    "QUALITY_SAMPLING",
    "RECIPES",
    "RUNTIME_FIELDS",
    "SCALE_QUALITY_GOAL",
    "SEARCH_CONFIG",
    "SEARCH_QUALITY_GOAL",
    "SEARCH_QUALITY_SAMPLING",
    "SHIPPED_FACTS",
    "SHIPPED_INFO_FILE",
    "SMALL_CONFIG",
    "SMALL_MODEL",
    "STUDY_QUALITY_SAMPLING",
    "WEIGHT_DTYPES",
    "Recipe",
    "SFTConfig",
    "checkpoint_path",
    "completion_loss",
    "completion_loss_sum",
    "config_from_dict",
    "config_to_dict",
    "final_model_dir",
    "learning_rate",
    "load_sft",
    "measure_quality",
    "open_run",
    "quality_shortfalls",
    "record_quality",
    "run_config",
    "run_facts",
    "ship",
    "train_sft",
    "train_step_gradients",
]


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
# Resuming
# ---------------------------------------------------------------------------------------------------


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
# Provenance
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
