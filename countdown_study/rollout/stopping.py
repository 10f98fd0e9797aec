"""Where completions end (``rollout.core``'s stopping): at the first EOS token (included) or, with
``stop_at_answer``, right after the first ``</answer>``: one token id where the tokenizer has one for it,
else the first token after which the decoded text contains the tag. ``_Stopper`` cuts a finished raw
completion (``cut``) and tells a decode loop which just-sampled tokens end their sample (``done``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from countdown_study.countdown.prompts import ANSWER_CLOSE


def _eos_ids(tokenizer, model) -> tuple[int, ...]:
    """Every token id that ends a completion: the tokenizer's EOS and the model's generation EOS ids."""
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
    return tuple(sorted(i for i in ids if i is not None))


def single_token_id(tokenizer, text: str) -> int | None:
    """The id of ``text`` when the tokenizer has one token for it, else None."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None


class _Stopper:
    """Where completions end: EOS, or the answer tag (one token id, or found in the decoded text)."""

    def __init__(self, tokenizer, model, stop_at_answer: bool) -> None:
        self.eos_ids = _eos_ids(tokenizer, model)
        self.stop_at_answer = stop_at_answer
        self.answer_id = single_token_id(tokenizer, ANSWER_CLOSE)
        self.tokenizer = tokenizer
        self._pieces: dict[int, str] = {}
        self._tails: dict[int, str] = {}

    @property
    def stop_ids(self) -> tuple[int, ...]:
        """Token ids that end a completion by themselves."""
        single = (self.answer_id,) if self.stop_at_answer and self.answer_id is not None else ()
        return self.eos_ids + single

    @property
    def by_text(self) -> bool:
        """Whether the answer tag has to be found in decoded text (no single token for it)."""
        return self.stop_at_answer and self.answer_id is None

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token])
        return self._pieces[token]

    def _text_hit(self, key: int, token: int) -> bool:
        """Append one token to sample ``key``'s text tail; True once the tail holds the answer tag."""
        text = self._tails.get(key, "") + self._piece(token)
        self._tails[key] = text[-(len(ANSWER_CLOSE) - 1) :]  # enough to complete a tag later
        return ANSWER_CLOSE in text

    def cut(self, ids: Sequence[int]) -> tuple[list[int], str]:
        """Truncate one raw completion at its first stop: (ids kept, finish reason)."""
        self._tails.pop(-1, None)
        for i, token in enumerate(ids):
            if token in self.eos_ids:
                return list(ids[: i + 1]), "eos"
            if self.stop_at_answer and (
                token == self.answer_id or (self.by_text and self._text_hit(-1, token))
            ):
                return list(ids[: i + 1]), "answer"
        return list(ids), "length"

    def done(self, tokens: torch.Tensor, rows: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
        """Which of the just-sampled ``tokens`` end their sample: (B,), (B,) sample ids, (B,) live -> (B,)."""
        stop_ids = torch.tensor(self.stop_ids, dtype=tokens.dtype, device=tokens.device)
        hit = torch.isin(tokens, stop_ids)  # (B,)
        if self.by_text:
            for i in live.nonzero().flatten().tolist():
                if self._text_hit(int(rows[i]), int(tokens[i])):
                    hit[i] = True
        return hit & live
