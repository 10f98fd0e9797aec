"""Shipping an SFT run's weights as a named policy, and measuring the shipped weights' quality.

``ship`` copies a finished run's model and tokenizer to a package folder (``policy.EMBEDDED_POLICIES``)
with ``sft.json``: the run's facts, then ``quality``, which ``measure_quality`` fills by sampling the
shipped weights on the run's held-out tasks (``QUALITY_N`` samples each) and ``record_quality`` stores.
``quality_shortfalls`` names what a measured quality misses of a recipe's goal (``training.sft_recipes``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path

import torch

from countdown_study.countdown import load_tasks
from countdown_study.evaluation.defaults import EVAL_SAMPLING, TRUNCATION_WARNING
from countdown_study.evaluation.evaluate import evaluate
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.policy import load_policy, prompt_template
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.files import atomic_write_json, atomic_write_text
from countdown_study.runs.store import RunNotFinishedError, RunStore, is_finished
from countdown_study.training.sft_config import (
    SFTConfig,
    config_from_dict,
    config_to_dict,
    final_model_dir,
    run_folder,
)

SHIPPED_INFO_FILE = "sft.json"
"""The file beside the shipped weights holding their training config, run facts and measured quality."""
SHIPPED_FACTS = ("config", "steps_done", "wall_seconds", "steps_per_second", "final_loss", "git_sha",
                 "git_dirty", "versions")  # fmt: skip
"""The keys of ``run_facts``, in order: ``sft.json`` lists them so, then ``quality``."""
WEIGHT_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""How shipped weights may be stored (``ship``); ``load_policy`` reads either back as float32."""


def ship(
    run: RunStore | str | Path, dest: Path = EMBEDDED_CHECKPOINT_DIR, weights_dtype: str = "float32"
) -> Path:
    """Copy a finished run's model and tokenizer to ``dest`` with ``save_pretrained``, with ``sft.json``.

    ``weights_dtype`` (``WEIGHT_DTYPES``) is how the weights are stored: ``bfloat16`` halves the folder,
    and ``load_policy`` loads them back as float32 (the values rounded to bf16). ``sft.json`` holds the
    run's facts (its ``results.json``, in ``run_facts``' key order); its ``quality`` entry is emptied until
    ``record_quality`` fills it for these weights.
    """
    if weights_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weights_dtype must be one of {sorted(WEIGHT_DTYPES)}, got {weights_dtype!r}")
    path = run_folder(run)
    if not is_finished(path):
        raise RunNotFinishedError(f"the SFT run in {path} is not finished; nothing to ship")
    facts = json.loads((path / "results.json").read_text())
    model, tokenizer = load_policy(final_model_dir(path))
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.to(WEIGHT_DTYPES[weights_dtype]).save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    info = {key: facts[key] for key in SHIPPED_FACTS}  # run_facts' order, as results.json sorts keys
    info["config"] = config_to_dict(config_from_dict(facts["config"]))
    info["quality"] = None
    atomic_write_text(dest / SHIPPED_INFO_FILE, json.dumps(info, indent=2) + "\n")
    return dest


# ---------------------------------------------------------------------------------------------------
# Quality
# ---------------------------------------------------------------------------------------------------

QUALITY_N = 16
"""Samples per held-out task when measuring a shipped checkpoint's quality."""
QUALITY_GOAL = {"pass@1": (0.25, 0.45), "pass@16": (0.65, 1.0), "well_formed": (0.9, 1.0)}
"""Ranges the shipped ``embedded`` checkpoint should fall in (and 3-number tasks clearly easier than
4-number)."""
QUALITY_SAMPLING = SamplingConfig(
    engine="native", temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=96, stop_at_answer=False
)
"""How the ``embedded`` quality is measured: temperature 1.0, no top-p / top-k, 96 new tokens, fp32."""
STUDY_QUALITY_SAMPLING = replace(EVAL_SAMPLING, max_new_tokens=224)
"""The reports' evaluation sampling (temperature 0.6, top-p 0.95, top-k 20, whole rollouts) at the study's
evaluation budget of 224 new tokens (``eval_max_new_tokens``): how ``embedded-search``, ``embedded-small``
and ``embedded-large`` are measured, so that their records give the share of rollouts cut at that budget
(``truncated``) and ``countdown-study eval`` reads their budget from it (``evaluation.defaults``)."""
SEARCH_QUALITY_SAMPLING = STUDY_QUALITY_SAMPLING
"""How the ``embedded-search`` quality is measured (``STUDY_QUALITY_SAMPLING``)."""
SEARCH_QUALITY_GOAL = {
    "answer_spans_per_rollout": (3.0, 5.0),
    "first_verifying_gap": (0.05, 0.12),
    "pass@1": (0.20, 0.40),
    "truncated": (0.0, 0.02),
}
"""Ranges the shipped ``embedded-search`` checkpoint should fall in: around report 003's SFT policy
(3.95 answer spans per rollout, first-verifying pass@1 0.3975 against final 0.3038, a gap of 0.094),
with whole rollouts rarely cut by the token cap (and 3-number tasks easier than 4-number)."""
SCALE_QUALITY_GOAL = {
    "pass@1": (0.05, 1.0),
    "well_formed": (0.9, 1.0),
    "truncated": (0.0, TRUNCATION_WARNING),
}
"""Ranges ``embedded-small`` and ``embedded-large`` should fall in: their pass@1 is what the scale study
measures, so only a floor (RLOO learns from the tasks a policy sometimes solves), nearly every rollout
well formed, and at most ``TRUNCATION_WARNING`` of rollouts cut at the study's budget (and 3-number tasks
easier than 4-number). Both shipped sizes miss the last, as ``embedded`` would: at 224 tokens
``embedded-small`` cuts 18.2% of its rollouts, ``embedded-large`` 14.0% and ``embedded`` 9.5% (notebook
02's SFT row), most on 4-number tasks, because after a wrong answer each tries again, as the recipe's
multi-attempt traces teach, and later attempts run past the budget. They ship as the shared recipe made
them, their records carry the share, and a cut rollout is graded on its last complete answer, for both arms
of every comparison of a size alike."""


def measure_quality(
    config: SFTConfig,
    policy_dir: Path,
    out_dir: Path | None = None,
    seed: int = 0,
    sampling: SamplingConfig = QUALITY_SAMPLING,
    policy: str = "embedded",
    limit: int | None = None,
) -> dict:
    """Evaluate a policy on the run's held-out tasks (``QUALITY_N`` samples each) and return its quality:
    pass@k, the mean score, the well-formed share, answer spans per rollout, report 003's first-verifying
    diagnostic, the share of rollouts cut by ``sampling``'s token budget (``truncated``), each per number
    count too where the summary has it, and how it was measured.

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
        str(count): by_count_quality(group) for count, group in summary["by_num_count"].items()
    }
    quality["measured_with"] = measured_with
    return quality


BY_COUNT_KEYS = ("num_tasks", "pass@1", "pass@16", "well_formed")
"""The quality kept per number count, beside ``BY_COUNT_OPTIONAL`` where the summary has them."""
BY_COUNT_OPTIONAL = ("answer_spans_per_rollout", "truncated")
"""Per-count quality added after the ``embedded`` record (its ``sft.json`` lacks them)."""


def by_count_quality(group: Mapping) -> dict:
    """One number count's quality: ``BY_COUNT_KEYS``, then those of ``BY_COUNT_OPTIONAL`` it has."""
    kept = {key: group[key] for key in BY_COUNT_KEYS}
    kept.update({key: group[key] for key in BY_COUNT_OPTIONAL if key in group})
    return kept


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
    """Store measured quality (pass@k, well-formed, spans, truncation, per number count, how it was
    measured) in ``sft.json``."""
    info_file = Path(dest) / SHIPPED_INFO_FILE
    info = json.loads(info_file.read_text())
    info["quality"] = quality
    atomic_write_text(info_file, json.dumps(info, indent=2) + "\n")
