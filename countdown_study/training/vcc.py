"""VCC-RLOO: report 003's Verification Commit Contrast as an auxiliary objective of the RLOO loop.

Use it as ``TrainConfig(aux_losses=(AuxLossSpec("vcc", coef=0.01, options={...}),),
sampling=SamplingConfig(stop_at_answer=False, ...))``; ``options`` are ``VCCConfig`` fields other than
``coef`` (``vcc_spec`` builds the spec with report 003's defaults). **The run's sampling config must say
``stop_at_answer=False``**: a rollout stopped at its first ``</answer>`` can never continue past its
commit, so the objective refuses rollouts that stopped there (finish reason ``answer``) unless
continuation pairs are off (``continuation_rejected=False``).

Each step (``VCCObjective.loss``):

1. ``countdown.commit``: every completion's commit (its first verifying answer span) and the pairs.
2. ``commit_tokens``: each chosen commit's character offset to a token count of the *sampled* ids, by
   decoding prefixes as the rollout decoded the whole (``skip_special_tokens=True``): the fewest tokens
   whose text starts with ``text[:end]``. It works for any Hugging Face tokenizer (re-encoding the
   prefix could tokenize it differently from the sample); a token straddling the tag's end (a BPE
   ``">\\n"``) stays in the commit. The embedded tokenizer has one token for ``</answer>``.
3. One forward of the policy (under grad, and under the run's autocast: the loop calls ``loss`` inside
   it) and one of the frozen reference (no grad) over the completions the pairs use, each cut at the
   longest prefix a pair needs; ``objectives.vcc.prefix_scores`` and ``vcc_loss``.

Log-probs are at temperature 1 (the policy's own distribution, as in DPO and our IPO), not the
sampling temperature. The loss graph is kept until the loop's backward after the RLOO micro-batches,
so the policy forward covers every pair of the step at once (its memory grows with the pairs: the cap).
A step without pairs returns a zero loss (no gradient) and logs ``pairs = 0`` without margin keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from countdown_study.countdown.commit import CONTINUATION, Commit, CommitPair, commit_pairs, find_commits
from countdown_study.objectives.vcc import VCCConfig, prefix_scores, vcc_loss
from countdown_study.rollout import model_device, sequence_logprobs
from countdown_study.training.specs import AuxLossSpec


def vcc_spec(coef: float = VCCConfig.coef, **options) -> AuxLossSpec:
    """The ``AuxLossSpec`` of VCC with report 003's defaults (c = 0.01), ``options`` as ``VCCConfig``."""
    return AuxLossSpec("vcc", coef=coef, options=options)


def commit_tokens(tokenizer, ids: Sequence[int], text: str, end: int) -> int:
    """The fewest leading tokens of ``ids`` whose decoded text starts with ``text[:end]`` (binary search).

    ``text`` is ``tokenizer.decode(ids, skip_special_tokens=True)``, as ``Rollouts.texts`` holds it.
    """
    prefix = text[:end]

    def covers(k: int) -> bool:
        return tokenizer.decode(list(ids[:k]), skip_special_tokens=True).startswith(prefix)

    if not covers(len(ids)):
        raise ValueError(
            "the completion's ids do not decode to its text; was it decoded by another tokenizer?"
        )
    low, high = 0, len(ids)  # covers(high) holds
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if covers(mid) else (mid + 1, high)
    return high


class VCCObjective:
    """VCC beside the RLOO loss: ``coef * L_VCC`` on the step's verifier-made pairs (module docstring)."""

    name = "vcc"
    needs_reference = True
    needs_tokenizer = True

    def __init__(self, coef: float = VCCConfig.coef, tokenizer=None, **options) -> None:
        if tokenizer is None:
            raise ValueError("VCC needs the run's tokenizer to cut commits in tokens")
        self.config = VCCConfig(coef=coef, **options)
        self.tokenizer = tokenizer

    def loss(self, model, ref_model, rollouts, grades, batch) -> tuple[torch.Tensor, dict[str, float]]:
        """``coef * L_VCC`` of one step's rollouts (a zero loss without pairs) and its statistics."""
        cfg = self.config
        commits, kept = self.pairs(rollouts, batch)
        stats: dict[str, float] = {
            "pairs": len(kept),
            "continuation_pairs": sum(p.kind == CONTINUATION for p, _ in kept),
            "committed": sum(c.verifies for c in commits) / len(commits),
            "abandoned": sum(c.abandoned for c in commits) / len(commits),
        }
        if not kept:
            return torch.zeros((), device=model_device(model), requires_grad=True), stats
        policy, reference, index = self._token_logprobs(model, ref_model, rollouts, kept)
        chosen_rows = [index[p.chosen] for p, _ in kept]
        rejected_rows = [index[p.rejected] for p, _ in kept]
        chosen_tokens = [k for _, k in kept]
        rejected_tokens = [len(rollouts.completion_ids[p.rejected]) for p, _ in kept]

        def scores(token_logprobs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            chosen = prefix_scores(token_logprobs, chosen_rows, chosen_tokens, cfg.length_normalize)  # (N,)
            rejected = prefix_scores(token_logprobs, rejected_rows, rejected_tokens, cfg.length_normalize)
            return chosen, rejected

        loss, loss_stats = vcc_loss(*scores(policy), *scores(reference), cfg.beta)
        return cfg.coef * loss, stats | loss_stats

    def pairs(self, rollouts, batch) -> tuple[list[Commit], list[tuple[CommitPair, int]]]:
        """Every rollout's commit, and the pairs with their chosen commit's token count.

        A continuation pair whose commit covers every token of its rollout (one token straddling the
        tag's end and all that follows) would compare a response with itself; it is dropped.
        """
        cfg = self.config
        if cfg.continuation_rejected and "answer" in rollouts.finish_reasons:
            raise ValueError(
                "VCC needs rollouts that go on past their first </answer>: sample with "
                "SamplingConfig(stop_at_answer=False) (or set continuation_rejected=False)"
            )
        commits = find_commits(rollouts.texts, batch.tasks, rollouts.group_size)
        pairs = commit_pairs(
            commits,
            rollouts.group_size,
            cfg.max_pairs_per_prompt,
            cfg.continuation_rejected,
            cfg.sibling_rejected,
        )
        ids, texts = rollouts.completion_ids, rollouts.texts
        chosen = [commit_tokens(self.tokenizer, ids[p.chosen], texts[p.chosen], p.chosen_end) for p in pairs]
        kept = [
            (p, k)
            for p, k in zip(pairs, chosen, strict=True)
            if p.chosen != p.rejected or k < len(ids[p.rejected])
        ]
        return commits, kept

    @staticmethod
    def _token_logprobs(model, ref_model, rollouts, kept):
        """Token log-probs (R, T) of policy (with grad) and reference over the rollouts the pairs use."""
        need: dict[int, int] = {}  # sample -> longest prefix a pair reads
        for pair, chosen_tokens in kept:
            need[pair.chosen] = max(need.get(pair.chosen, 0), chosen_tokens)
            need[pair.rejected] = len(rollouts.completion_ids[pair.rejected])
        rows = sorted(need)
        prompt_ids = [rollouts.prompt_ids[r // rollouts.group_size] for r in rows]
        completions = [rollouts.completion_ids[r][: need[r]] for r in rows]
        policy = sequence_logprobs(model, prompt_ids, completions).logprobs  # (R, T)
        with torch.no_grad():
            reference = sequence_logprobs(ref_model, prompt_ids, completions).logprobs  # (R, T)
        return policy, reference, {r: i for i, r in enumerate(rows)}
