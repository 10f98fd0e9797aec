"""Pieces every training stage shares: its frozen reference, its prompts and its saved final policy.

What a training run shares with the evaluation-only run (its device, policy and tasks; its final and
checkpoint evaluations) is ``evaluation.run``, re-exported here under the names the stages import.
"""

from __future__ import annotations

from collections.abc import Sequence

from countdown_study.countdown.prompts import format_prompt
from countdown_study.countdown.task import Task
from countdown_study.evaluation.config import DataSpec
from countdown_study.evaluation.run import (
    SNAPSHOT_SETS,
    evaluate_run,
    evaluate_snapshot,
    load_run_policy,
    snapshot_steps,
    start_on_device,
    study_tasks,
)
from countdown_study.policy import load_policy
from countdown_study.runs.files import write_checksums
from countdown_study.runs.store import RunStore
from countdown_study.training.finite import check_finite_weights

__all__ = [
    "SNAPSHOT_SETS",
    "evaluate_run",
    "evaluate_snapshot",
    "load_reference",
    "load_run_policy",
    "prompts_for",
    "save_final",
    "snapshot_steps",
    "start_on_device",
    "study_tasks",
]


def load_reference(data: DataSpec, attention: str | None = None, device=None):
    """The frozen reference policy of a run: the starting policy again, without gradients, on ``device``."""
    ref_model, _ = load_policy(data.policy, tokenizer=data.tokenizer, attention=attention, device=device)
    return ref_model.requires_grad_(False)


def prompts_for(tasks: Sequence[Task], template: str) -> list[str]:
    """The prompt of each task."""
    return [format_prompt(t.nums, t.target, template) for t in tasks]


def save_final(store: RunStore, model, tokenizer) -> None:
    """The run's final policy in ``checkpoints/final`` (a ``save_pretrained`` folder): its weights checked
    finite first, its files' SHA-256 recorded after (``final.sha256.json``, checked where it loads)."""
    final = store.checkpoint_dir / "final"
    check_finite_weights(model.state_dict(), f"final weights of run {store.run_id}")
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    write_checksums(final)
