"""The IPO stage (Azar et al., 2023): the reports' offline preference baseline between SFT and RLOO.

The objective is ``objectives.ipo`` (verifier-labelled pairs, IPO's squared regression of the
log-likelihood-ratio margin onto ``1 / (2 tau)``, Eq. 17); this module samples the starting policy
(``collect_pairs``), fits IPO on the pairs (``fit_ipo``) and evaluates, as one run in the run store
(``train_ipo``). Sequence log-probs are token means by default (``IPOConfig.length_normalize``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import torch
from tqdm.auto import tqdm

from countdown_study.countdown.grading import grade_batch
from countdown_study.objectives.ipo import PreferencePair, ipo_loss, preference_pairs
from countdown_study.policy import policy_identity
from countdown_study.rollout import SamplingConfig, make_engine, model_device, sequence_logprobs
from countdown_study.runs.device import resolve_device
from countdown_study.runs.files import OMIT_AT_DEFAULT
from countdown_study.runs.store import RunStore
from countdown_study.seeding import IPOStream, Stream, derive_rng, derive_seed
from countdown_study.training.common import (
    evaluate_run,
    load_reference,
    load_run_policy,
    prompts_for,
    save_final,
    start_on_device,
    study_tasks,
)
from countdown_study.training.finite import check_finite_step, total_grad_norm
from countdown_study.training.rloo_config import TRAIN_SAMPLING, TrainConfig
from countdown_study.training.specs import RunConfig, check_positive

# ---------------------------------------------------------------------------------------------------
# The IPO stage: SFT samples -> verifier-labelled pairs -> IPO updates -> evaluation
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IPOConfig(RunConfig):
    """The SFT -> IPO reference row: pairs from the SFT policy's samples, then IPO on them. The shared
    fields (``RunConfig``): the starting policy is also the frozen reference, and pairs are drawn from the
    training pool (evaluation keys removed, as in RLOO runs)."""

    prompts: int = 1024
    """Prompts sampled for pairs."""
    group_size: int = TrainConfig.group_size
    """Samples per prompt (the RLOO runs' G)."""
    max_pairs_per_prompt: int = 2
    """Cap on pairs per prompt."""
    epochs: int = 2
    """Passes over the pairs."""
    batch_pairs: int = 64
    """Pairs per optimizer step."""
    lr: float = 5e-5
    """AdamW learning rate, constant."""
    tau: float = 0.1
    """IPO regularisation tau (target margin 1 / (2 tau))."""
    length_normalize: bool = True
    """Token-mean sequence log-probs (else sums)."""
    sampling: SamplingConfig = TRAIN_SAMPLING
    """How pair samples are drawn (as RLOO rollouts: temperature 1.0, 96 new tokens, bf16 weights)."""
    format_score: float = TrainConfig.format_score
    """Reward of a present but wrong answer when pair samples are graded (pairs use correctness only)."""
    logprob_chunk: int = field(default=0, metadata=OMIT_AT_DEFAULT)
    """Completion tokens per vocabulary projection in the pairs' log-probs (as
    ``TrainConfig.logprob_chunk``; 0: full logits)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.group_size < 2:
            raise ValueError(f"pairs need group_size >= 2, got {self.group_size}")
        if min(self.prompts, self.epochs, self.batch_pairs, self.max_pairs_per_prompt) < 1:
            raise ValueError("prompts, epochs, batch_pairs and max_pairs_per_prompt must be >= 1")
        if self.logprob_chunk < 0:
            raise ValueError(f"logprob_chunk must be >= 0 (0: full logits), got {self.logprob_chunk}")
        check_positive("lr", self.lr)
        check_positive("tau", self.tau)


def _sequence_scores(
    model, prompt_ids, completion_ids, length_normalize: bool, chunk_tokens: int = 0
) -> torch.Tensor:
    """Sequence log-probs ``(N,)``: token mean or sum of ``rollout.sequence_logprobs``."""
    out = sequence_logprobs(model, prompt_ids, completion_ids, chunk_tokens=chunk_tokens)
    total = (out.logprobs * out.mask).sum(dim=1)  # (N,)
    return total / out.mask.sum(dim=1).clamp(min=1) if length_normalize else total


def collect_pairs(engine, tasks, config: IPOConfig, template: str):
    """Sample the SFT policy on ``tasks`` with the run's rollout ``engine``; (rollouts, grades, pairs)."""
    with torch.no_grad():
        rollouts = engine.sample(
            prompts_for(tasks, template), config.group_size, derive_seed(config.seed, 0, Stream.IPO_PAIRS)
        )
    grades = grade_batch(rollouts.texts, tasks, config.group_size, config.format_score)  # (P, G) each
    rng = derive_rng(config.seed, IPOStream.PAIRS)
    return rollouts, grades, preference_pairs(grades.correct, rng, config.max_pairs_per_prompt)


def fit_ipo(
    model, ref_model, rollouts, pairs: list[PreferencePair], config: IPOConfig, log, progress=True
) -> int:
    """IPO updates over ``pairs`` of ``rollouts`` samples for ``config.epochs``; returns the step count.

    ``log(record)`` receives each optimizer step's statistics.
    """
    ids, completions = rollouts.sample_prompt_ids, rollouts.completion_ids
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    rng = derive_rng(config.seed, IPOStream.ORDER)
    scoring = (config.length_normalize, config.logprob_chunk)
    step = 0
    bar = tqdm(
        total=config.epochs * math.ceil(len(pairs) / config.batch_pairs), desc="ipo", disable=not progress
    )
    model.train()
    for _ in range(config.epochs):
        perm = rng.permutation(len(pairs))
        for start in range(0, len(pairs), config.batch_pairs):
            chunk = [pairs[i] for i in perm[start : start + config.batch_pairs]]
            both = [p.chosen for p in chunk] + [p.rejected for p in chunk]  # (2k,) chosen first
            batch = ([ids[i] for i in both], [completions[i] for i in both])
            with torch.autocast(model_device(model).type, dtype=torch.bfloat16):
                scores = _sequence_scores(model, *batch, *scoring).float()  # (2k,)
                with torch.no_grad():
                    ref = _sequence_scores(ref_model, *batch, *scoring).float()  # (2k,)
            k = len(chunk)
            loss, stats = ipo_loss(scores[:k], scores[k:], ref[:k], ref[k:], config.tau)
            loss.backward()
            grad_norm = total_grad_norm(model)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            check_finite_step("IPO", step, {**stats, "grad_norm": grad_norm})  # a NaN stops the run: no DONE
            log({"step": step, **stats})
            step += 1
            bar.update(1)
    bar.close()
    model.eval()
    return step


def run_ipo(config: IPOConfig, store: RunStore, progress: bool = True) -> dict:
    """Collect pairs from the starting policy, fit IPO, evaluate; returns the results dict (the run body)."""
    device = start_on_device(store, config.device)
    model, tokenizer, template = load_run_policy(config.data, device=device)
    ref_model = load_reference(config.data, device=device)
    pool, eval_tasks = study_tasks(config.data)  # same pool and evaluation split as the RLOO runs
    order = derive_rng(config.seed, IPOStream.PROMPTS).permutation(len(pool))[: config.prompts]
    engine = make_engine(model, tokenizer, config.sampling)
    rollouts, grades, pairs = collect_pairs(engine, [pool[i] for i in order], config, template)
    if not pairs:
        raise ValueError("no preference pairs: no prompt had both a verifying and a failing sample")
    steps = fit_ipo(model, ref_model, rollouts, pairs, config, store.log_step, progress)
    result = evaluate_run(store, config.eval, config.seed, model, tokenizer, eval_tasks, template, engine)
    save_final(store, model, tokenizer)
    pair_exact = float(grades.correct.mean())
    return {"eval": result.summary, "pairs": len(pairs), "pair_sample_exact_rate": pair_exact, "steps": steps}


def train_ipo(config: IPOConfig, root=None, progress: bool = True, wait: bool = True):
    """Run (or load) the IPO stage in the run store; returns the finished store (see ``train.train``).

    ``cuda`` without a CUDA device fails before a run folder is made (a finished run loads anywhere).
    """
    identity = policy_identity(config.data.policy)
    if not RunStore.locate(config, root=root, prefix="ipo", identity=identity).is_done:
        resolve_device(config.device)
    store = RunStore.open(config, root=root, prefix="ipo", identity=identity)
    return store.complete(
        partial(run_ipo, config, progress=progress), threads=config.threads, wait=wait, per_step_log=True
    )
