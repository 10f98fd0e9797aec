"""The policy: the embedded character-level tokenizer, the tiny Qwen2 model, and ``load_policy``.

Two roads through the same function:

* ``load_policy("embedded")``, ``"embedded-search"``, ``"embedded-small"`` or ``"embedded-large"``: the
  package's own SFT checkpoints, shipped as package data (``EMBEDDED_POLICIES``; made by
  ``countdown-study sft``, ``SHIP_COMMANDS``). A name whose weights are not shipped yet fails naming the
  command that makes them.
* ``load_policy(<Hugging Face id or local folder>)``: any ``save_pretrained`` causal LM, e.g. the
  reports' ``asingh15/qwen-sft-countdown-defaultproj`` with tokenizer ``Qwen/Qwen2.5-0.5B``.

The prompt template a policy expects is stored in its config as ``countdown_prompt_template``
(``"compact"`` for the embedded model; folders without it get ``"qwen_chat"``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from countdown_study.checksums import check_checksums
from countdown_study.countdown.prompts import TAGS
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR

EMBEDDED_POLICIES = {
    "embedded": EMBEDDED_CHECKPOINT_DIR,
    "embedded-search": EMBEDDED_CHECKPOINT_DIR.parent / "embedded-search",
    "embedded-small": EMBEDDED_CHECKPOINT_DIR.parent / "embedded-small",
    "embedded-large": EMBEDDED_CHECKPOINT_DIR.parent / "embedded-large",
}
"""The shipped policies by name: ``embedded`` (solver traces, one answer span most of the time, 3.4M
parameters), ``embedded-search`` (search traces: several answer spans, sometimes abandoning a correct one),
and ``embedded`` made at about a quarter and 3.4 times its parameters (``embedded-small``, 0.86M;
``embedded-large``, 11.5M, stored in bf16), for the scale study."""
SHIP_COMMANDS = {
    "embedded": "countdown-study sft --ship",
    "embedded-search": "countdown-study sft --recipe search --ship",
    "embedded-small": "countdown-study sft --recipe small --ship",
    "embedded-large": "countdown-study sft --recipe large --ship",
}
"""The command that makes each shipped policy."""

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
CHARACTERS = "0123456789+-*/()=, :.NT"
"""Every plain character the embedded tokenizer knows; anything else maps to ``<unk>``."""
VOCAB_SIZE = len(SPECIAL_TOKENS) + len(TAGS) + len(CHARACTERS)
"""Tokens of the embedded tokenizer (``build_tokenizer``): 31."""


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the embedded Qwen2 policy (defaults: 3.4M parameters)."""

    hidden_size: int = 256
    """Width of the residual stream."""
    num_layers: int = 4
    """Transformer blocks."""
    num_heads: int = 4
    """Attention heads (also key/value heads: no grouped-query sharing)."""
    intermediate_size: int = 768
    """Width of the SwiGLU MLP."""
    max_positions: int = 256
    """Longest prompt + completion, in characters."""
    rope_theta: float = 10000.0
    """RoPE base."""

    @property
    def num_parameters(self) -> int:
        """Parameters of ``build_model`` at this shape with the embedded tokenizer: untied input and output
        embeddings (``VOCAB_SIZE x hidden`` each), per layer the q/k/v projections with their biases, the
        output projection, the SwiGLU MLP's three matrices and two RMSNorm weights, and the final norm."""
        h, mlp = self.hidden_size, self.intermediate_size
        # q, k and v with their biases; o; the MLP's gate, up and down; two norms
        per_layer = 3 * (h * h + h) + h * h + 3 * h * mlp + 2 * h
        return 2 * VOCAB_SIZE * h + self.num_layers * per_layer + h


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The embedded character-level tokenizer: one token per character, one per tag, BOS/EOS/PAD/UNK."""
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + TAGS + tuple(CHARACTERS))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens([AddedToken(t, special=True) for t in SPECIAL_TOKENS])
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=BOS, eos_token=EOS, pad_token=PAD, unk_token=UNK
    )
    tokenizer.padding_side = "left"
    return tokenizer


def build_model(tokenizer: PreTrainedTokenizerFast, config: TinyModelConfig | None = None, seed: int = 0):
    """A freshly initialised Qwen2 causal LM with untied embeddings, seeded."""
    cfg = config or TinyModelConfig()
    qwen_config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.max_positions,
        rope_theta=cfg.rope_theta,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    qwen_config.countdown_prompt_template = "compact"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(qwen_config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def prompt_template(model) -> str:
    """The prompt template a policy was trained with (``compact`` or ``qwen_chat``)."""
    return getattr(model.config, "countdown_prompt_template", "qwen_chat")


_GENERIC_TOKENIZER_CLASSES = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def _load_tokenizer(source: str | Path):
    """``AutoTokenizer``, except for a folder holding a plain ``tokenizers`` tokenizer (the embedded one).

    ``AutoTokenizer`` picks the tokenizer class from the model's ``config.json`` (Qwen2 here), which
    would re-wrap the character tokenizer as a Qwen2 BPE tokenizer that drops spaces.
    """
    config_file = Path(source) / "tokenizer_config.json"
    if config_file.is_file():
        tokenizer_class = json.loads(config_file.read_text()).get("tokenizer_class")
        if tokenizer_class in _GENERIC_TOKENIZER_CLASSES:
            return PreTrainedTokenizerFast.from_pretrained(source)
    return AutoTokenizer.from_pretrained(source)


def is_shipped(name: str) -> bool:
    """Whether the shipped policy ``name`` (a key of ``EMBEDDED_POLICIES``) has its checkpoint in the
    package; False for any other name."""
    return name in EMBEDDED_POLICIES and (EMBEDDED_POLICIES[name] / "config.json").is_file()


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""A Hugging Face model id: ``owner/name``."""


def policy_source(name_or_path: str | Path, kind: str = "policy") -> Path | str:
    """Where a policy (or its tokenizer: ``kind``) comes from: a shipped checkpoint's folder, a local
    folder, or a Hugging Face id.

    A name that is neither an existing folder nor shaped like a hub id (``owner/name``) is refused here,
    naming it and ``kind``, instead of failing later inside the hub client.
    """
    name = str(name_or_path)
    if name in EMBEDDED_POLICIES:
        if not is_shipped(name):
            raise FileNotFoundError(
                f"the {name} policy is not shipped yet (no checkpoint in {EMBEDDED_POLICIES[name]}); "
                f"make it with `{SHIP_COMMANDS[name]}`"
            )
        return EMBEDDED_POLICIES[name]
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise NotADirectoryError(f"{kind} {str(name_or_path)!r} is a file; give its save_pretrained folder")
    if not _HUB_ID.fullmatch(str(name_or_path)):
        raise FileNotFoundError(
            f"{kind} {str(name_or_path)!r} is neither an existing folder nor a Hugging Face id (owner/name)"
        )
    return str(name_or_path)


def load_policy(
    name_or_path: str | Path = "embedded",
    tokenizer: str | Path | None = None,
    dtype=torch.float32,
    attention: str | None = None,
    device: torch.device | str | None = None,
):
    """Load ``(model, tokenizer)``: a shipped name (``EMBEDDED_POLICIES``), a local ``save_pretrained``
    folder, or a Hugging Face id.

    ``tokenizer`` overrides where the tokenizer comes from (the reports' SFT checkpoint uses
    ``Qwen/Qwen2.5-0.5B``'s), checked as the policy is (``policy_source``) before anything loads.
    ``attention`` is transformers' ``attn_implementation`` of the model's forward (``eager``, ``sdpa``,
    ...; None: transformers' default). ``device``: where the model is moved after loading (None: where
    transformers loads it, the host). The model is returned in eval mode. A local folder with a recorded
    SHA-256 beside it (a run's ``checkpoints/final``, ``checksums``) is checked before it loads.
    """
    source = policy_source(name_or_path)
    tokenizer_source = policy_source(tokenizer, kind="tokenizer") if tokenizer else source
    if isinstance(source, Path):
        check_checksums(source, required=False)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, attn_implementation=attention)
    if device is not None:
        model.to(device)
    tok = _load_tokenizer(tokenizer_source)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.eval()
    return model, tok


def hide_library_bars() -> bool:
    """Hide transformers' own progress bars ("Loading weights", "Writing model shards") from now on, for a
    command or run that shows no bars of its own (a log, a notebook); whether they were shown before."""
    from transformers.utils import logging

    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    return shown


@contextmanager
def library_bars(show: bool) -> Iterator[None]:
    """Inside the block, transformers' bars hidden unless ``show`` (``hide_library_bars``); after it, as
    they were: a run in a notebook kernel prints none of them, however the kernel was started."""
    shown = hide_library_bars() if not show else False
    try:
        yield
    finally:
        if shown:
            from transformers.utils import logging

            logging.enable_progress_bar()


WEIGHT_FILE_PATTERNS = ("*.safetensors", "*.bin", "config.json")
"""Files of a ``save_pretrained`` folder whose bytes decide a policy's outputs."""


@functools.lru_cache(maxsize=32)
def _digest_files(files: tuple[tuple[str, int, int], ...]) -> str:
    """SHA-256 over the named files' bytes (the size and mtime in the key only invalidate the cache)."""
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).name.encode() + b"\0")
        with open(name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def policy_fingerprint(name_or_path: str | Path = "embedded") -> str:
    """What a run records of its starting policy, so that new weights under the same name make new runs.

    Shipped names and local folders: ``sha256:<16 hex>`` over the weight files and ``config.json``.
    A Hugging Face id that is not a local folder: the id itself (no hub is reachable to ask its revision).
    """
    source = policy_source(name_or_path)
    if isinstance(source, str):  # a hub id
        return source
    files = sorted(f for pattern in WEIGHT_FILE_PATTERNS for f in source.glob(pattern) if f.is_file())
    if not files:
        raise FileNotFoundError(f"no weight files ({', '.join(WEIGHT_FILE_PATTERNS)}) in {source}")
    keys = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return "sha256:" + _digest_files(keys)


def policy_identity(name_or_path: str | Path) -> dict[str, str]:
    """The run-store identity of a run that starts from ``name_or_path`` (see ``runstore.run_id``)."""
    return {"policy": policy_fingerprint(name_or_path)}
