"""Seconds per phase of one RLOO step on a GPU at Qwen2.5-0.5B's shape: each rollout engine, and TRL.

Model: a randomly initialised Qwen2 of Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14 heads, 2 key/value
heads, MLP 4864, a 151,936-token vocabulary, tied embeddings; 494M parameters), fp32 weights trained
under bf16 autocast, sampled from a bf16 copy. The tokenizer is the embedded character tokenizer widened
to the same vocabulary with filler tokens, so prompts are the Countdown prompts of the ``compact``
template and every id the model can draw decodes. A random model never writes ``</answer>`` or EOS:
every completion runs the full 256 tokens (the heaviest step of that length), its reward is 0 and the
update still does all of its work (forwards, backward, optimizer).

One step is the package's (``training.loop``): ``draw_groups`` (sample 128 prompts x 8 with the engine,
grade), ``rloo_advantages``, ``policy_update`` (micro-batches of ``--micro-batch`` sequences, log-probs
chunked ``--logprob-chunk`` tokens at a time, KL 0.001 to a frozen bf16 reference, entropy 0.001, AdamW).
For each engine (``native``, ``hf``, ``vllm`` when it is installed; each on a fresh copy of the same
weights, one after another): ``--warmup`` untimed steps, then ``--steps`` timed ones; per phase the
seconds (the GPU synchronised at each boundary), sampling tokens per second, and the peak GPU memory
allocated. ``--full-logits`` also times the update without chunking (the memory it needs, or the
out-of-memory error). TRL's ``RLOOTrainer`` (when ``trl`` is installed) runs the same batch: one
optimizer step over 1,024 completions generated at once (``generation_batch_size``), micro-batches of
``--micro-batch``, beta 0.001, bf16; timed from its step's start to its end as in ``bench_rloo_step.py``.
TRL sums token log-probs per sequence and the package averages them: compare speed, not trajectories.

Beside each run's measured time the script prints its FLOP floor (``flop_floor``): the step's sampling and
update matrix-product FLOPs from its own prompt and completion lengths (TRL's from its completion tokens
and the pool's mean prompt), over the device's bf16 matrix-product rate measured in this process before and
after the runs (the better of the two). TRL's ``RLOOConfig`` gets only the settings the installed TRL has
as fields (``bench_rloo_step.config_keywords``: ``activation_checkpointing`` exists with newer transformers
only); the output names those left out.

Run on a GPU machine: ``python benchmarks/bench_gpu.py`` (writes ``benchmarks/results/gpu_step.json``).
Without a GPU it stops, saying so; ``--tiny --device cpu`` runs the same code at a toy size (hidden 64,
2 layers, a 4,096-token vocabulary, 8 prompts x 4, 16 new tokens) on the CPU, to check the script.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, replace
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

# Before CUDA starts: the hf engine's growing cache fragmented the allocator (78 GiB reserved, 5 GiB used).
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
from flop_floor import (
    device_rate,
    floor_line,
    floor_record,
    model_shape,
    rollout_flops,
    shape_record,
    step_flops,
)
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from countdown_study.countdown.generate import generate_tasks
from countdown_study.countdown.prompts import TAGS
from countdown_study.objectives.rloo import RLOOConfig, rloo_advantages
from countdown_study.policy.model import BOS, CHARACTERS, EOS, PAD, SPECIAL_TOKENS, UNK
from countdown_study.rollout import SamplingConfig, encode_prompts, make_engine
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance
from countdown_study.samplers import make_sampler
from countdown_study.training.device import describe_device, prepare_device, resolve_device
from countdown_study.training.loop import TrainConfig, draw_groups, policy_update

RESULTS = Path(__file__).resolve().parent / "results" / "gpu_step.json"


@dataclass(frozen=True)
class Scale:
    """The model shape and the batch of one benchmark."""

    hidden: int
    """Residual width."""
    layers: int
    """Decoder layers."""
    heads: int
    """Attention heads."""
    kv_heads: int
    """Key/value heads."""
    mlp: int
    """MLP width."""
    vocab: int
    """Vocabulary size."""
    prompts: int
    """P, prompts per step."""
    group_size: int
    """G, samples per prompt."""
    new_tokens: int
    """Completion length (every completion of a random model runs to it)."""


QWEN_05B = Scale(hidden=896, layers=24, heads=14, kv_heads=2, mlp=4864, vocab=151_936, prompts=128,
                 group_size=8, new_tokens=256)  # fmt: skip
"""Qwen2.5-0.5B's shape and the paper preset's batch (128 x 8) at 256 new tokens."""
TINY = Scale(
    hidden=64, layers=2, heads=4, kv_heads=2, mlp=128, vocab=4096, prompts=8, group_size=4, new_tokens=16
)
"""A toy size that runs the same code in seconds on a CPU (``--tiny``)."""


# ---------------------------------------------------------------------------------------------------
# Model, tokenizer, config
# ---------------------------------------------------------------------------------------------------


def wide_tokenizer(vocab: int) -> PreTrainedTokenizerFast:
    """The embedded character tokenizer with filler tokens ``<w i>`` up to ``vocab`` ids (never encoded,
    decoded as themselves)."""
    known = SPECIAL_TOKENS + TAGS + tuple(CHARACTERS)
    words = {token: i for i, token in enumerate(known)}
    words.update({f"<w{i}>": i for i in range(len(known), vocab)})
    core = Tokenizer(models.WordLevel(vocab=words, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens([AddedToken(t, special=True) for t in SPECIAL_TOKENS])
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                        unk_token=UNK)  # fmt: skip
    tokenizer.padding_side = "left"
    return tokenizer


def random_model(scale: Scale, tokenizer, device: torch.device, seed: int) -> Qwen2ForCausalLM:
    """A randomly initialised Qwen2 of ``scale``'s shape on ``device`` (fp32, SDPA attention), seeded."""
    config = Qwen2Config(
        vocab_size=scale.vocab, hidden_size=scale.hidden, num_hidden_layers=scale.layers,
        num_attention_heads=scale.heads, num_key_value_heads=scale.kv_heads, intermediate_size=scale.mlp,
        max_position_embeddings=32_768, rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    config.countdown_prompt_template = "compact"
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM(config)
    model.set_attn_implementation("sdpa")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval()


def step_config(scale: Scale, args: argparse.Namespace) -> TrainConfig:
    """The benchmark's RLOO step: the paper preset's loss and lr, the scale's batch, no early stop."""
    return TrainConfig(
        prompts_per_step=scale.prompts, group_size=scale.group_size, micro_batch=args.micro_batch,
        attention="sdpa", lr=1e-5, loss=RLOOConfig(kl_coef=0.001, entropy_coef=0.001), seed=args.seed,
        sampling=SamplingConfig(max_new_tokens=scale.new_tokens, dtype="bfloat16"),
        logprob_chunk=args.logprob_chunk, device=args.device, gradient_checkpointing=args.gradient_checkpointing,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_gib(device: torch.device) -> float | None:
    """Peak GPU memory allocated since the last ``reset_peak``, GiB (None on the CPU)."""
    return round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None


def timed_step(
    step: int, model, ref_model, engine, optimizer, sampler, config: TrainConfig
) -> dict[str, Any]:
    """One RLOO step as ``rloo_step`` runs it, timed by phase with the GPU synchronised at each boundary, with
    its phases' matrix-product FLOPs (``flop_floor.rollout_flops``)."""
    device = next(model.parameters()).device
    synchronize(device)
    reset_peak(device)
    started = time.perf_counter()
    drawn = draw_groups(step, engine, sampler, config, "compact")
    synchronize(device)
    sampled = time.perf_counter()
    sample_peak = peak_gib(device)
    reset_peak(device)
    advantages = rloo_advantages(torch.from_numpy(drawn.grades.rewards).float())  # (P, G)
    stats = policy_update(model, ref_model, optimizer, drawn.rollouts, advantages, config)
    synchronize(device)
    done = time.perf_counter()
    rollouts = drawn.rollouts
    sample_seconds = sampled - started - drawn.grade_seconds
    sequence_tokens = sum(
        len(p) + len(c) for p, c in zip(rollouts.sample_prompt_ids, rollouts.completion_ids, strict=True)
    )
    flops = rollout_flops(model_shape(model), rollouts, kl=config.loss.kl_coef > 0)
    return {
        "total": done - started,
        "sample_flops": flops["sample"],
        "update_flops": flops["update"],
        "sample": sample_seconds,
        "grade": drawn.grade_seconds,
        "update": done - sampled,
        "completion_tokens": rollouts.num_tokens,
        "sample_tokens_per_second": rollouts.num_tokens / sample_seconds,
        "update_tokens_per_second": sequence_tokens / (done - sampled),
        "sample_peak_gib": sample_peak,
        "update_peak_gib": peak_gib(device),
        "grad_norm": stats["grad_norm"],
    }


def medians(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of every numeric key over the timed steps."""
    keys = [k for k, v in steps[0].items() if isinstance(v, (int, float))]
    return {k: statistics.median(s[k] for s in steps) for k in keys}


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_engine(kind: str, start_state, build, tokenizer, pool, config: TrainConfig, args) -> dict[str, Any]:
    """``--warmup`` + ``--steps`` RLOO steps with engine ``kind`` from ``start_state``; medians and steps."""
    model = build()
    model.load_state_dict(start_state)
    ref_model = copy.deepcopy(model).to(torch.bfloat16).requires_grad_(False)
    config = replace(config, sampling=replace(config.sampling, engine=kind))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    sampler = make_sampler("uniform", pool, config.seed)
    started = time.perf_counter()
    engine = make_engine(model, tokenizer, config.sampling)
    start_seconds = time.perf_counter() - started
    steps = [
        timed_step(i, model, ref_model, engine, optimizer, sampler, config)
        for i in range(args.warmup + args.steps)
    ]
    result = {"engine_start_seconds": start_seconds, "median": medians(steps[args.warmup :]), "steps": steps}
    if args.full_logits:
        result["full_logits_update"] = full_logits_update(
            model, ref_model, engine, optimizer, sampler, config, args
        )
    del engine, optimizer, model, ref_model
    free(next(iter(start_state.values())).device)
    return result


def full_logits_update(
    model, ref_model, engine, optimizer, sampler, config: TrainConfig, args
) -> dict[str, Any]:
    """One more step with ``logprob_chunk=0``: its update seconds and peak memory, or the error."""
    device = next(model.parameters()).device
    try:
        step = timed_step(args.warmup + args.steps, model, ref_model, engine, optimizer, sampler,
                          replace(config, logprob_chunk=0))  # fmt: skip
    except torch.cuda.OutOfMemoryError as err:
        optimizer.zero_grad(set_to_none=True)
        free(device)
        return {"error": f"out of memory: {str(err).splitlines()[0]}"}
    return {"update": step["update"], "update_peak_gib": step["update_peak_gib"]}


# ---------------------------------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------------------------------


def run_trl(
    start_state, build, tokenizer, pool, config: TrainConfig, device: torch.device, args
) -> dict[str, Any]:
    """TRL's ``RLOOTrainer`` on the same model, batch and lengths: ``--warmup`` + ``--steps`` steps.

    The model goes to TRL as a saved folder: with beta > 0 TRL loads its frozen reference from there.
    """
    from bench_rloo_step import (
        config_keywords,
        countdown_reward,
        timed_trainer_class,
        trl_dataset,
        trl_settings,
        trl_step_callback,
    )
    from trl import RLOOConfig

    total = args.warmup + args.steps
    batch = config.prompts_per_step * config.group_size
    callback = trl_step_callback([])
    with tempfile.TemporaryDirectory(prefix="bench_gpu_trl_") as output_dir:
        model = build()
        model.load_state_dict(start_state)
        model.generation_config.eos_token_id = [
            tokenizer.eos_token_id,
            tokenizer.convert_tokens_to_ids("</answer>"),
        ]
        model.save_pretrained(Path(output_dir) / "policy")
        del model
        free(device)
        settings = trl_settings(config, total, output_dir, device.type) | {
            "per_device_train_batch_size": config.micro_batch,
            "gradient_accumulation_steps": batch // config.micro_batch,
            "generation_batch_size": batch,
            "beta": config.loss.kl_coef,
            "bf16": True,
            "use_cpu": device.type == "cpu",
            "model_init_kwargs": {"dtype": "float32", "attn_implementation": config.attention},
        }
        settings, left_out = config_keywords(RLOOConfig, settings)
        if left_out:
            print(f"TRL {version('trl')}: RLOOConfig has no {', '.join(left_out)}; left out")
        trainer = timed_trainer_class()(
            model=str(Path(output_dir) / "policy"), reward_funcs=countdown_reward(config.format_score),
            args=RLOOConfig(**settings), train_dataset=trl_dataset(pool, tokenizer, "compact"),
            processing_class=tokenizer, callbacks=[callback],
        )  # fmt: skip
        callback.trainer = trainer
        reset_peak(device)
        trainer.train()
    settings.pop("output_dir")
    steps = callback.steps
    return {
        "trl_version": version("trl"),
        "settings": settings,
        "settings_left_out": left_out,
        "median": medians(steps[args.warmup :]),
        "peak_gib": peak_gib(device),
        "steps": steps,
    }


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------


def prompt_texts(pool) -> list[str]:
    """The pool's prompts in the ``compact`` template."""
    from countdown_study.countdown.prompts import format_prompt

    return [format_prompt(t.nums, t.target, "compact") for t in pool]


def run_floor(median: dict[str, Any], shape, rate: float, mean_prompt: float, config: TrainConfig) -> dict:
    """A run's FLOP floor against its median step: the engines' own FLOPs, or TRL's from its completion
    tokens spread evenly over the batch and the pool's mean prompt length."""
    measured = {"sample": median["sample"], "update": median["update"] + median.get("old_logprobs", 0.0)}
    if "sample_flops" in median:
        flops = {"sample": median["sample_flops"], "update": median["update_flops"]}
    else:
        samples = config.prompts_per_step * config.group_size
        completion = round(median["tokens"] / samples)
        flops = step_flops(
            shape, [round(mean_prompt)] * samples, [completion] * samples, config.loss.kl_coef > 0
        )
    return floor_record(flops, rate, measured)


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def run_or_skip(kind: str, run, skip: bool = False) -> dict[str, Any]:
    """``run()``'s record, or why it was skipped (``--no-trl``, a package not installed), or its error."""
    package = "trl" if kind == "trl" else ("vllm" if kind == "vllm" else None)
    if skip:
        return {"skipped": f"--no-{kind}"}
    if package is not None and not installed(package):
        extra = "trl" if package == "trl" else "countdown_study[vllm]"
        return {"skipped": f"{package} is not installed (pip install {extra})"}
    try:
        return run()
    except Exception as err:  # record why a run could not go; the others go on
        return {"error": "".join(traceback.format_exception(err))}


def print_table(results: dict[str, dict[str, Any]]) -> None:
    print(f"{'run':<8}{'s/step':>8}{'sample':>8}{'grade':>7}{'update':>8}{'tok/s':>9}{'peak GiB':>10}")
    for name, result in results.items():
        if "median" not in result:
            print(f"{name:<8} {result.get('skipped') or result.get('error', '').strip().splitlines()[-1]}")
            continue
        m = result["median"]
        peak = max((m.get(k) or 0) for k in ("sample_peak_gib", "update_peak_gib")) or result.get("peak_gib")
        tokens = m.get("sample_tokens_per_second") or m["tokens"] / m["sample"]  # TRL's steps count tokens
        print(f"{name:<8}{m['total']:>8.2f}{m['sample']:>8.2f}{m['grade']:>7.2f}{m['update']:>8.2f}"
              f"{tokens:>9.0f}{peak if peak is not None else '-':>10}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="default: auto")
    parser.add_argument("--tiny", action="store_true", help="a toy size, to check the script on a CPU")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per run")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per run")
    parser.add_argument("--micro-batch", type=int, default=64, help="sequences per forward/backward")
    parser.add_argument("--logprob-chunk", type=int, default=4096, help="tokens per vocabulary projection")
    parser.add_argument("--engines", default="native,hf,vllm", help="comma-separated rollout engines")
    parser.add_argument("--full-logits", action="store_true", help="also time an update without chunking")
    parser.add_argument("--no-trl", action="store_true", help="skip TRL's RLOOTrainer")
    parser.add_argument(
        "--gradient-checkpointing", action="store_true",
        help="the package's update with its layers' activations recomputed (TrainConfig.gradient_checkpointing)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON output (default {RESULTS}; --tiny: none)"
    )
    args = parser.parse_args()

    device = resolve_device(args.device)
    if device.type != "cuda" and not args.tiny:
        message = (
            "no CUDA device here (torch sees none); this benchmark measures a GPU. Run it on a GPU machine,"
        )
        print(f"bench_gpu: {message} or check the script at a toy size: --tiny --device cpu", file=sys.stderr)
        return 2
    prepare_device(device)
    scale = TINY if args.tiny else QWEN_05B
    if args.tiny:
        args.micro_batch, args.logprob_chunk = min(args.micro_batch, 16), min(args.logprob_chunk, 64)
    config = step_config(scale, args)
    tokenizer = wide_tokenizer(scale.vocab)
    pool = generate_tasks(max(2000, 4 * scale.prompts), seed=args.seed + 1)

    def build():
        return random_model(scale, tokenizer, device, args.seed)

    first = build()
    shape = model_shape(first)
    rates = [device_rate(device, shape)]
    start_state = {k: v.clone() for k, v in first.state_dict().items()}
    del first
    parameters = sum(
        v.numel() for k, v in start_state.items() if k != "lm_head.weight"
    )  # tied to the embedding
    batch = f"{scale.prompts} x {scale.group_size}, {scale.new_tokens} new tokens"
    print(f"{parameters:,} parameters on {device}; {batch}; micro-batch {config.micro_batch}, "
          f"chunk {config.logprob_chunk}")  # fmt: skip
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    kinds = args.engines.split(",")
    # TRL after the in-process engines, vLLM last: an in-process vLLM keeps its GPU memory when dropped.
    for kind in [k for k in kinds if k != "vllm"] + ["trl"] + [k for k in kinds if k == "vllm"]:
        if kind == "trl":
            run = partial(run_trl, start_state, build, tokenizer, pool, config, device, args)
        else:
            run = partial(run_engine, kind, start_state, build, tokenizer, pool, config, args)
        results[kind] = run_or_skip(kind, run, skip=kind == "trl" and args.no_trl)
        free(device)
    print_table(results)
    rates.append(device_rate(device, shape))
    rate = max(r["flops_per_second"] for r in rates)
    mean_prompt = statistics.mean(len(ids) for ids in encode_prompts(tokenizer, prompt_texts(pool)))
    for name, result in results.items():
        if "median" in result:
            result["flop_floor"] = run_floor(result["median"], shape, rate, mean_prompt, config)
            print(floor_line(name, result["flop_floor"], rate))
    record = {
        "model": {**asdict(scale), "parameters": parameters, "init": "random (torch.manual_seed(seed))"},
        "model_shape": shape_record(shape),
        "bf16_matmul_before_after": rates,
        "device": describe_device(device),
        "config": {
            "micro_batch": config.micro_batch,
            "logprob_chunk": config.logprob_chunk,
            "attention": config.attention,
            "loss": asdict(config.loss),
            "sampling": asdict(config.sampling),
            "autocast": config.autocast,
        },  # fmt: skip
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "allocator": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "results": results,
        "wall_seconds": time.perf_counter() - started,
        "provenance": provenance(args.seed),
    }
    out = args.out or (None if args.tiny else RESULTS)
    if out is not None:
        atomic_write_json(out, record)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
