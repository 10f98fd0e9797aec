"""The SFT stage's data: the tasks and traces of each step, token ids with a completion mask, padding.

Every step trains on fresh solvable tasks (``generate_tasks`` with a seed derived from (run seed,
step)), never on the held-out evaluation set (by ``Task.key``), with traces from
``policy.traces`` (``trace_for``: solver traces, or search traces when the config has a
``search`` recipe). Seeds: ``derive_rng(seed, step, SFTStream.TASKS, draw)`` for the tasks
(draw 0 is the step's batch; later draws, rare, replace held-out or unsolvable tasks) and
``derive_rng(seed, step, SFTStream.TRACES, 0)`` for the traces. A step's examples are a pure function
of (config, step), so loader workers may prepare steps ahead without changing what is trained on.

``config`` is an ``sft_config.SFTConfig``.
"""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

import numpy as np
import torch

from countdown_study.countdown import Derivation, Task, all_solutions, format_prompt, generate_tasks
from countdown_study.policy.traces import make_search_trace, make_trace
from countdown_study.rollout.core import HOST
from countdown_study.seeding import SFTStream, derive_rng
from countdown_study.training.sft_config import SFTConfig


def _seed(config: SFTConfig, step: int, stream: SFTStream, draw: int) -> int:
    """A 62-bit seed of (run seed, step, stream, draw)."""
    return int(derive_rng(config.seed, step, stream, draw).integers(2**62))


def heldout_keys(config: SFTConfig) -> frozenset:
    """Canonical keys of the held-out evaluation set."""
    if config.heldout_count <= 0:
        return frozenset()
    heldout = generate_tasks(config.heldout_count, config.heldout_seed, num_counts=config.num_counts)
    return frozenset(task.key for task in heldout)


def step_tasks_seed(config: SFTConfig, step: int, draw: int = 0) -> int:
    """Seed of ``generate_tasks`` for draw ``draw`` of step ``step``."""
    return _seed(config, step, SFTStream.TASKS, draw)


def trace_for(config: SFTConfig, task: Task, rng: Random, solutions: Sequence[Derivation]) -> str:
    """The completion of one training task: a search trace under a ``search`` recipe, else a solver one."""
    if config.search is not None:
        return make_search_trace(task, rng, config.search, solutions, config.prefer_clean)
    return make_trace(
        task, rng, config.multi_attempt_share, config.max_wrong_attempts, solutions, config.prefer_clean
    )


def step_examples(config: SFTConfig, step: int, exclude: frozenset) -> list[tuple[str, str]]:
    """The (prompt, completion) pairs of one step: fresh solvable tasks not in ``exclude``, with traces."""
    rng = Random(_seed(config, step, SFTStream.TRACES, 0))
    examples: list[tuple[str, str]] = []
    draw = 0
    while len(examples) < config.batch_size:
        need = config.batch_size - len(examples)
        for task in generate_tasks(need, step_tasks_seed(config, step, draw), num_counts=config.num_counts):
            solutions = [] if task.key in exclude else all_solutions(task.nums, task.target)
            if solutions and len(examples) < config.batch_size:
                trace = trace_for(config, task, rng, solutions)
                examples.append((format_prompt(task.nums, task.target, "compact"), trace))
        draw += 1
    return examples


def _as_is(examples: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The loader's collate function: a step's examples are already its batch."""
    return examples


class StepExamples(torch.utils.data.Dataset):
    """Item ``i`` is ``step_examples`` of step ``first_step + i``."""

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


def collate(
    encoded: Sequence[tuple[list[int], list[bool]]], pad_id: int, device: torch.device | str = HOST
) -> dict[str, torch.Tensor]:
    """Right-pad a batch: ``input_ids``, ``attention_mask`` and ``loss_mask``, each ``(B, T)``, on ``device``
    (rows are written on the host, the tensors moved once)."""
    length = max(len(ids) for ids, _ in encoded)
    input_ids = torch.full((len(encoded), length), pad_id, dtype=torch.long, device=HOST)
    attention_mask = torch.zeros((len(encoded), length), dtype=torch.long, device=HOST)
    loss_mask = torch.zeros((len(encoded), length), dtype=torch.bool, device=HOST)
    for row, (ids, mask) in enumerate(encoded):
        input_ids[row, : len(ids)] = torch.tensor(ids, device=HOST)
        attention_mask[row, : len(ids)] = 1
        loss_mask[row, : len(ids)] = torch.tensor(mask, device=HOST)
    batch = {"input_ids": input_ids, "attention_mask": attention_mask, "loss_mask": loss_mask}
    return {name: tensor.to(device) for name, tensor in batch.items()}


def length_buckets(lengths: Sequence[int], num_buckets: int) -> list[list[int]]:
    """Split example indices, sorted by length, into ``num_buckets`` near-equal chunks (less padding)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    chunks = np.array_split(np.array(order, dtype=int), min(num_buckets, len(order)))
    return [chunk.tolist() for chunk in chunks if len(chunk)]
