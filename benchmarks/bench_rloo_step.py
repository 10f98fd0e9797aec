"""Seconds per RLOO step: the package's loop (``train.rloo_step``) beside TRL's ``RLOOTrainer``.

One step is 32 prompts x 8 samples, at most 96 new tokens, 2 torch threads, on the embedded SFT checkpoint
(``countdown_study/checkpoints/embedded``; a randomly initialised model of the same shape when it is
missing, and the output says so). Three runs, each from a fresh copy of the same weights:

* ``package_native``: ``rloo_step`` with the CPU preset (``train.preset("cpu")``: native decode loop on
  bf16 weights, bf16 autocast update, lr 1e-4, no KL, token-mean loss) and a uniform sampler over
  ``generate_tasks``; phases are the step's own ``seconds_*`` (sample, grade, update).
* ``package_hf``: the same with ``engine="hf"`` (transformers ``generate``), for reference.
* ``package_native_chunked`` (with ``--logprob-chunk N``): ``package_native`` with the update's log-probs
  projected onto the vocabulary N tokens at a time (``TrainConfig.logprob_chunk``), to see what chunking
  costs on the CPU.
* ``trl``: ``trl.RLOOTrainer`` (1.16) with ``per_device_train_batch_size=256`` and ``num_generations=8``
  (one optimizer step sees the same 32 x 8), ``beta=0``, bf16 autocast when the CPU has it,
  ``max_completion_length=96``, ``lr`` and gradient clip of the preset, constant schedule, no gradient
  checkpointing, completions ending at EOS or ``</answer>`` like the package's, and a reward function
  calling ``verifier.compute_score``. Its step is timed from the trainer's ``on_step_begin`` to
  ``on_step_end``; phases come from timing its ``_generate`` (sample), ``_calculate_rewards`` (grade),
  the rest of ``_generate_and_score_completions`` (old log-probs: an extra no-grad forward) and what is
  left of the step (update: loss forward, backward, optimizer).

The runs are interleaved step by step (after every TRL step, one step of each package run), so all of
them see the same load on a shared machine. Medians are over the steps after ``--warmup`` warm-up steps.
Beside wall seconds, each step records the process's CPU seconds (``time.process_time``): with other work
on the cores the wall time stretches, while CPU seconds / threads stays a rough lower bound of the step's
wall time on an idle machine.
TRL sums token log-probs per sequence and the package averages them: compare speed, not trajectories.
Every model is loaded with the preset's update attention (``TrainConfig.attention``, ``eager``), TRL's too.
Goals: ``package_native`` at most 1.0 s per step on an idle machine, and at most 0.1x TRL's.

Beside the measured time each run prints its FLOP floor (``flop_floor``): the step's sampling and update
matrix-product FLOPs, from each step's own prompt and completion lengths (TRL's from its completion tokens
and the pool's mean prompt), over the bf16 matrix-product rate measured in this process at the start and
the end (the better of the two).

TRL's ``RLOOConfig`` gets only the settings it has as fields (``config_keywords``):
``activation_checkpointing`` came with newer transformers, and the package allows any transformers >= 5.16
and TRL >= 1.10; the output names the settings left out.

Run: ``python benchmarks/bench_rloo_step.py`` with the package and ``trl`` installed (without ``trl``
the TRL row records the import error). Writes ``benchmarks/results/rloo_step.json``. ``--tiny`` checks the
script in seconds (4 prompts x 4, 16 new tokens, one warm-up and one timed step; no JSON unless ``--out``);
``--device cuda`` runs the package's loop and TRL on a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

# Before torch starts OpenMP: with other work on the cores, spinning OpenMP threads made a 2-thread step
# ~20x slower here. Export OMP_WAIT_POLICY=ACTIVE to measure without this.
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

from countdown_study.countdown.generate import generate_tasks
from countdown_study.countdown.prompts import ANSWER_CLOSE, format_prompt
from countdown_study.countdown.task import Task
from countdown_study.countdown.verifier import compute_score
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.policy import build_model, build_tokenizer, load_policy, prompt_template
from countdown_study.rollout import encode_prompts, make_engine, single_token_id
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance
from countdown_study.samplers import make_sampler
from countdown_study.training.device import describe_device, resolve_device
from countdown_study.training.loop import TrainConfig, preset, rloo_step

RESULTS = Path(__file__).resolve().parent / "results" / "rloo_step.json"
GOAL_SECONDS = 1.0
"""Target median seconds per step of ``package_native``."""
GOAL_RATIO = 0.1
"""Target ``package_native`` / ``trl`` median seconds per step."""


def load_start_policy(seed: int, attention: str, device: torch.device) -> tuple[Any, Any, str]:
    """(model, tokenizer, source) on ``device``: the embedded checkpoint if present, else a random-init tiny
    model."""
    if (EMBEDDED_CHECKPOINT_DIR / "config.json").exists():
        model, tokenizer = load_policy("embedded", attention=attention, device=device)
        return model, tokenizer, "embedded checkpoint"
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, seed=seed).eval().to(device)
    model.set_attn_implementation(attention)
    return model, tokenizer, "random-init model (no embedded checkpoint)"


def config_keywords(config_class: type, settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The ``settings`` that ``config_class`` (a dataclass, TRL's ``RLOOConfig``) has as fields, and the names
    of those it has not (left out: a field of a newer transformers or TRL than the one installed)."""
    known = {f.name for f in dataclasses.fields(config_class)}
    return {k: v for k, v in settings.items() if k in known}, sorted(set(settings) - known)


class RecordingEngine:
    """A rollout engine that keeps the last ``Rollouts`` it sampled (the FLOP floor needs their lengths)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.last = None

    def sample(self, *args, **kwargs):
        self.last = self.engine.sample(*args, **kwargs)
        return self.last

    def __getattr__(self, name: str):
        return getattr(self.engine, name)


def medians(records: list[dict[str, float]]) -> dict[str, float]:
    """Median of every key over the records (each key on its own)."""
    return {key: statistics.median(r[key] for r in records) for key in records[0]}


# ---------------------------------------------------------------------------------------------------
# The package's loop
# ---------------------------------------------------------------------------------------------------


@dataclass
class PackageRun:
    """One ``rloo_step`` loop on its own model copy, optimizer and sampler; ``step()`` runs the next step."""

    name: str
    config: TrainConfig
    model: Any
    tokenizer: Any
    pool: list[Task]
    steps: list[dict[str, float]] = field(default_factory=list)
    """Per step: ``total`` and phase wall seconds, the process's ``cpu`` seconds, ``tokens``, ``threads``,
    and the phases' matrix-product FLOPs (``sample_flops``, ``update_flops``)."""

    def __post_init__(self) -> None:
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay, fused=True
        )
        self.sampler = make_sampler(self.config.sampler, self.pool, self.config.seed)
        self.template = self.config.data.template or prompt_template(self.model)
        self.engine = RecordingEngine(make_engine(self.model, self.tokenizer, self.config.sampling))
        self.shape = model_shape(self.model)

    def step(self) -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        record = rloo_step(
            len(self.steps), self.model, None, self.engine, self.optimizer, self.sampler, self.config,
            self.template,
        )  # fmt: skip
        total, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        phases = {name: record[f"seconds_{name}"] for name in ("sample", "grade", "update")}
        flops = rollout_flops(self.shape, self.engine.last, kl=self.config.loss.kl_coef > 0)
        self.steps.append(
            {
                "total": total,
                "cpu": cpu,
                **phases,
                "other": total - sum(phases.values()),  # probes (none for uniform), sampler, logging
                "tokens": record["tokens"],
                "threads": torch.get_num_threads(),
                "sample_flops": flops["sample"],
                "update_flops": flops["update"],
            }
        )


# ---------------------------------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------------------------------


def trl_prompts(tasks: list[Task], model, config: TrainConfig) -> list[str]:
    """The pool's prompts as the package formats them."""
    template = config.data.template or prompt_template(model)
    return [format_prompt(t.nums, t.target, template) for t in tasks]


def trl_dataset(tasks: list[Task], tokenizer, template: str):
    """A ``datasets.Dataset`` of prompts (BOS written out, as the package encodes them) with their tasks."""
    from datasets import Dataset

    prompts = [format_prompt(t.nums, t.target, template) for t in tasks]
    texts = [tokenizer.bos_token + p for p in prompts] if tokenizer.bos_token else prompts
    if tokenizer(texts[:8])["input_ids"] != encode_prompts(tokenizer, prompts[:8]):
        raise RuntimeError("TRL's prompt token ids differ from the package's")
    return Dataset.from_dict(
        {"prompt": texts, "target": [t.target for t in tasks], "numbers": [list(t.nums) for t in tasks]}
    )


def countdown_reward(format_score: float) -> Callable[..., list[float]]:
    """A TRL reward function: ``compute_score`` of each completion against its row's target and numbers."""

    def reward(completions: list[str], target: list[int], numbers: list[list[int]], **_) -> list[float]:
        return [
            compute_score(text, {"target": t, "numbers": n}, format_score)
            for text, t, n in zip(completions, target, numbers, strict=True)
        ]

    reward.__name__ = "countdown"
    return reward


def timed_trainer_class():
    """``RLOOTrainer`` recording the seconds of generation, rewards and scoring in ``phase_seconds``."""
    from trl import RLOOTrainer

    class TimedRLOOTrainer(RLOOTrainer):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.phase_seconds: dict[str, float] = {}
            self.completion_tokens = 0

        @contextmanager
        def _timed(self, phase: str) -> Iterator[None]:
            started = time.perf_counter()
            yield
            self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + time.perf_counter() - started

        def _generate(self, prompts):
            with self._timed("sample"):
                generated = super()._generate(prompts)  # (prompt_ids, completion_ids, ...): more in newer TRL
            self.completion_tokens += sum(len(ids) for ids in generated[1])
            return generated

        def _calculate_rewards(self, *args, **kwargs):
            with self._timed("grade"):
                return super()._calculate_rewards(*args, **kwargs)

        def _generate_and_score_completions(self, inputs):
            with self._timed("score"):
                return super()._generate_and_score_completions(inputs)

    return TimedRLOOTrainer


def trl_step_callback(runs: list[PackageRun]):
    """A callback timing each TRL step (``on_step_begin`` -> ``on_step_end``), then one step of every run."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.trainer = None
            self.steps: list[dict[str, float]] = []
            self._started = self._cpu_started = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.trainer.phase_seconds = {}
            self.trainer.completion_tokens = 0
            self._started, self._cpu_started = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kwargs):
            total, cpu = time.perf_counter() - self._started, time.process_time() - self._cpu_started
            phases = self.trainer.phase_seconds
            score = phases.get("score", 0.0)
            self.steps.append(
                {
                    "total": total,
                    "cpu": cpu,
                    "sample": phases.get("sample", 0.0),
                    "grade": phases.get("grade", 0.0),
                    "old_logprobs": score - phases.get("sample", 0.0) - phases.get("grade", 0.0),
                    "update": total - score,
                    "tokens": self.trainer.completion_tokens,
                    "threads": torch.get_num_threads(),
                }
            )
            for run in runs:
                run.step()

    return StepTimer()


def trl_settings(
    config: TrainConfig, total_steps: int, output_dir: str, device: str = "cpu"
) -> dict[str, Any]:
    """``RLOOConfig`` keywords: the package step's batch, generation length, lr and clip; beta 0; on
    ``device`` (a device type). ``config_keywords`` keeps those the installed TRL has."""
    from transformers.utils import is_torch_bf16_available_on_device

    return {
        "output_dir": output_dir,
        "per_device_train_batch_size": config.prompts_per_step * config.group_size,
        "num_generations": config.group_size,
        "gradient_accumulation_steps": 1,
        "max_completion_length": config.sampling.max_new_tokens,
        "temperature": config.sampling.temperature,
        "top_k": 0,
        "top_p": 1.0,
        "beta": 0.0,
        "learning_rate": config.lr,
        "lr_scheduler_type": "constant",
        "weight_decay": config.weight_decay,
        "max_grad_norm": config.grad_clip,
        "bf16": is_torch_bf16_available_on_device(device),
        "activation_checkpointing": False,  # a field of newer transformers only (config_keywords)
        "gradient_checkpointing": False,
        "use_cpu": device == "cpu",
        "max_steps": total_steps,
        "seed": config.seed,
        "logging_strategy": "no",
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def run_trl(
    model,
    tokenizer,
    tasks: list[Task],
    config: TrainConfig,
    total_steps: int,
    runs: list[PackageRun],
    device: str = "cpu",
) -> dict[str, Any]:
    """Train TRL's RLOO for ``total_steps`` steps, one step of every package run after each; its record."""
    from trl import RLOOConfig

    answer_id = single_token_id(tokenizer, ANSWER_CLOSE)
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, answer_id]  # stop like the package
    callback = trl_step_callback(runs)
    with tempfile.TemporaryDirectory(prefix="bench_trl_") as output_dir:
        settings, left_out = config_keywords(
            RLOOConfig, trl_settings(config, total_steps, output_dir, device)
        )
        if left_out:
            print(f"TRL {version('trl')}: RLOOConfig has no {', '.join(left_out)}; left out")
        trainer = timed_trainer_class()(
            model=model,
            reward_funcs=countdown_reward(config.format_score),
            args=RLOOConfig(**settings),
            train_dataset=trl_dataset(tasks, tokenizer, config.data.template or prompt_template(model)),
            processing_class=tokenizer,
            callbacks=[callback],
        )
        callback.trainer = trainer
        trainer.train()
    settings.pop("output_dir")
    return {
        "trl_version": version("trl"),
        "settings": settings,
        "settings_left_out": left_out,
        "eos_token_ids": trainer.eos_token_ids,
        "steps": callback.steps,
    }


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------


def summary(name: str, steps: list[dict[str, float]], warmup: int) -> dict[str, Any]:
    """Medians over the timed steps, and every step's figures."""
    timed = steps[warmup:]
    if not timed:
        return {"name": name, "steps": steps, "error": "no timed steps"}
    middle = medians(timed)
    return {
        "median_seconds_per_step": middle.pop("total"),
        "median_cpu_seconds_per_step": middle.pop("cpu"),
        "median_tokens_per_step": middle.pop("tokens"),
        "median_seconds_per_1k_tokens": statistics.median(1000 * s["total"] / s["tokens"] for s in timed),
        "threads": sorted({int(s["threads"]) for s in steps}),
        "median_phase_seconds": {k: v for k, v in middle.items() if k != "threads"},
        "steps": steps,
    }


def print_table(results: dict[str, dict[str, Any]]) -> None:
    """Medians per run: seconds per step, per phase and per 1,000 completion tokens; tokens; threads."""
    phases = ("sample", "grade", "old_logprobs", "update", "other")
    header = "".join(f"{p:>13}" for p in phases) + f"{'tokens':>8}{'s/1k tok':>10}{'threads':>8}"
    print(f"{'run':<15}{'s/step':>8}{'cpu s':>8}{header}")
    for name, result in results.items():
        if "median_seconds_per_step" not in result:
            last_line = result.get("error", "no steps").strip().splitlines()[-1]
            print(f"{name:<15} failed: {last_line}")
            continue
        cells = "".join(
            f"{result['median_phase_seconds'][p]:>13.3f}"
            if p in result["median_phase_seconds"]
            else f"{'-':>13}"
            for p in phases
        )
        threads = ",".join(str(t) for t in result["threads"])
        step, cpu = result["median_seconds_per_step"], result["median_cpu_seconds_per_step"]
        tokens, per_1k = result["median_tokens_per_step"], result["median_seconds_per_1k_tokens"]
        print(f"{name:<15}{step:>8.3f}{cpu:>8.2f}{cells}{tokens:>8.0f}{per_1k:>10.3f}{threads:>8}")


def goals_of(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The two goals: ``package_native`` seconds per step, and its ratio to TRL's (None without TRL)."""
    native = results["package_native"]["median_seconds_per_step"]
    trl_seconds = results.get("trl", {}).get("median_seconds_per_step")
    ratio = None if trl_seconds is None else native / trl_seconds
    return {
        "package_native_seconds_per_step": native,
        "package_native_at_most_seconds": GOAL_SECONDS,
        "package_native_goal_met": native <= GOAL_SECONDS,
        "package_native_over_trl": ratio,
        "package_native_over_trl_at_most": GOAL_RATIO,
        "package_native_vs_trl_goal_met": None if ratio is None else ratio <= GOAL_RATIO,
    }


def step_floors(results: dict[str, dict[str, Any]], rate: float, shape, mean_prompt: float, kl: bool) -> None:
    """Add each run's FLOP floor (``flop_floor.floor_record`` of its median step) to its result and print it;
    TRL's from its median completion tokens and the pool's mean prompt length."""
    for name, result in results.items():
        if "median_seconds_per_step" not in result:
            continue
        phases = result["median_phase_seconds"]
        measured = {"sample": phases["sample"], "update": phases["update"] + phases.get("old_logprobs", 0.0)}
        if "sample_flops" in phases:
            flops = {"sample": phases.pop("sample_flops"), "update": phases.pop("update_flops")}
        else:  # TRL: its completion tokens spread evenly over the batch (a lower bound of the attention work)
            samples = result["settings"]["per_device_train_batch_size"]
            completion = round(result["median_tokens_per_step"] / samples)
            flops = step_flops(shape, [round(mean_prompt)] * samples, [completion] * samples, kl)
        result["flop_floor"] = floor_record(flops, rate, measured)
        print(floor_line(name, result["flop_floor"], rate))


TINY_CHANGES = {"prompts_per_step": 4, "group_size": 4}
"""``--tiny``: the CPU preset at 4 prompts x 4 samples (and 16 new tokens)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a toy batch, to check the script in seconds")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="default: cpu")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of every run")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of every run")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--pool", type=int, default=2000, help="generated tasks the runs draw from")
    parser.add_argument("--seed", type=int, default=0, help="run, task and (random-init) model seed")
    parser.add_argument("--no-trl", action="store_true", help="time only the package's loop")
    parser.add_argument(
        "--logprob-chunk",
        type=int,
        default=0,
        help="also run package_native with this logprob_chunk (0: not)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON output (default {RESULTS}; --tiny: none)"
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    started, load_before = time.perf_counter(), os.getloadavg()
    config = preset("cpu", threads=args.threads, seed=args.seed, device=args.device)
    if args.tiny:
        sampling = replace(config.sampling, max_new_tokens=16)
        config = replace(config, sampling=sampling, **TINY_CHANGES)
        args.warmup, args.steps, args.pool = 1, 1, 200
    pool = generate_tasks(args.pool, seed=args.seed + 1)
    model, tokenizer, source = load_start_policy(args.seed, config.attention, device)
    parameters = sum(p.numel() for p in model.parameters())
    shape = model_shape(model)
    rates = [device_rate(device, shape)]
    print(f"model: {source}, {parameters:,} parameters on {device}; {config.prompts_per_step} x "
          f"{config.group_size}, {config.sampling.max_new_tokens} new tokens, {args.threads} threads; bf16 "
          f"matmul {rates[0]['flops_per_second'] / 1e9:.0f} GFLOP/s")  # fmt: skip

    def fresh_model():
        return load_start_policy(args.seed, config.attention, device)[0]

    runs = [
        PackageRun("package_native", config, fresh_model(), tokenizer, pool),
        PackageRun("package_hf", replace(config, sampling=replace(config.sampling, engine="hf")),
                   fresh_model(), tokenizer, pool),
    ]  # fmt: skip
    if args.logprob_chunk:
        chunked = replace(config, logprob_chunk=args.logprob_chunk)
        runs.append(PackageRun("package_native_chunked", chunked, fresh_model(), tokenizer, pool))
    total_steps = args.warmup + args.steps
    trl_record: dict[str, Any] = {}
    if not args.no_trl:
        try:
            trl_record = run_trl(model, tokenizer, pool, config, total_steps, runs, device.type)
        except Exception as err:  # record why TRL could not run; the package's runs go on
            trl_record = {"error": "".join(traceback.format_exception(err)).strip()}
            print(f"TRL failed: {type(err).__name__}: {err}")
    while any(len(run.steps) < total_steps for run in runs):
        for run in runs:
            if len(run.steps) < total_steps:
                run.step()

    results = {run.name: summary(run.name, run.steps, args.warmup) for run in runs}
    if not args.no_trl:
        trl_steps = trl_record.get("steps", [])
        results["trl"] = {**trl_record, **summary("trl", trl_steps, args.warmup)} if trl_steps else trl_record
    print_table(results)
    rates.append(device_rate(device, shape))
    rate = max(r["flops_per_second"] for r in rates)
    mean_prompt = statistics.mean(
        len(ids) for ids in encode_prompts(tokenizer, trl_prompts(pool, model, config))
    )
    step_floors(results, rate, shape, mean_prompt, kl=config.loss.kl_coef > 0)
    goals = goals_of(results)
    print(f"package_native: {goals['package_native_seconds_per_step']:.3f} s/step, goal <= {GOAL_SECONDS} s "
          f"met: {goals['package_native_goal_met']}")  # fmt: skip
    if goals["package_native_over_trl"] is not None:
        print(f"package_native / trl: {goals['package_native_over_trl']:.3f}, goal <= {GOAL_RATIO} "
              f"met: {goals['package_native_vs_trl_goal_met']}")  # fmt: skip
    record = {
        "model": {"source": source, "parameters": parameters},
        "batch": {
            "prompts": config.prompts_per_step,
            "group_size": config.group_size,
            "max_new_tokens": config.sampling.max_new_tokens,
        },
        "threads": args.threads,
        "device": describe_device(device),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "model_shape": shape_record(shape),
        "bf16_matmul_start_end": rates,
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "task_pool": f"generate_tasks({args.pool}, seed={args.seed + 1})",
        "package_config": {
            "preset": "cpu",
            "sampling": asdict(config.sampling),
            "loss": asdict(config.loss),
            "attention": config.attention,
            "micro_batch": config.micro_batch,
            "logprob_chunk_of_package_native_chunked": args.logprob_chunk or None,
        },
        "results": results,
        "goals": goals,
        "load_average_before_after": [load_before, os.getloadavg()],
        "wall_seconds": time.perf_counter() - started,
        "provenance": provenance(args.seed),
    }
    out = args.out or (None if args.tiny else RESULTS)
    if out is not None:
        atomic_write_json(out, record)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
