"""The model layers on a GPU: an RLOO step with each in-process engine, chunked log-probs, a whole run.

Runs where torch sees a CUDA device and is skipped, saying so, elsewhere. The same step on the CPU gives
the reference shapes and keys; ``tests/test_device_plumbing.py`` guards the placement on any machine.
"""

from dataclasses import replace

import numpy as np
import pytest
import torch

from countdown_study.countdown.generate import generate_tasks
from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import HOST, SamplingConfig, make_engine, sequence_logprobs
from countdown_study.samplers import make_sampler
from countdown_study.training.loop import TrainConfig, rloo_step, train
from countdown_study.training.specs import DataSpec, EvalSpec

BUILD = ", a CPU-only build" if torch.version.cuda is None else f", built for CUDA {torch.version.cuda}"
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason=f"no CUDA device (torch {torch.__version__}{BUILD})"
)

CUDA = torch.device("cuda")
SMALL = TinyModelConfig(hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def step_config(engine: str) -> TrainConfig:
    """Four prompts x four samples with KL and entropy terms, bf16 sampling and bf16 autocast."""
    return TrainConfig(
        prompts_per_step=4, group_size=4, micro_batch=6, lr=1e-2, threads=1,
        loss=RLOOConfig(kl_coef=0.01, entropy_coef=0.01),
        sampling=SamplingConfig(max_new_tokens=16, engine=engine, dtype="bfloat16"),
    )  # fmt: skip


def one_step(tokenizer, engine: str, device: torch.device, config: TrainConfig | None = None):
    """(step record, parameters before, model) of one RLOO step of a fresh small model on ``device``."""
    config = config or step_config(engine)
    model = build_model(tokenizer, SMALL, seed=0).to(device)
    ref_model = build_model(tokenizer, SMALL, seed=0).to(device).requires_grad_(False)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    sampler = make_sampler("uniform", generate_tasks(50, seed=1), config.seed)
    engine_ = make_engine(model, tokenizer, config.sampling)
    record = rloo_step(0, model, ref_model, engine_, optimizer, sampler, config, "compact")
    return record, before, model


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_an_rloo_step_runs_on_the_gpu_with_the_cpu_steps_record(tokenizer, engine):
    record, before, model = one_step(tokenizer, engine, CUDA)
    cpu_record, _, _ = one_step(tokenizer, engine, HOST)
    assert set(record) == set(cpu_record)
    assert all(p.device.type == "cuda" for p in model.parameters())
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters(), strict=True))
    numbers = [v for k, v in record.items() if isinstance(v, float) and not k.startswith("batch_")]
    assert np.isfinite(numbers).all() and record["tokens"] > 0 and record["grad_norm"] > 0


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_behaviour_logprobs_on_the_gpu_match_a_full_forward(tokenizer, engine):
    model = build_model(tokenizer, SMALL, seed=0).to(CUDA).eval()
    config = SamplingConfig(max_new_tokens=24, engine=engine, stop_at_answer=False)
    rollouts = make_engine(model, tokenizer, config).sample(["N 1 2 3 T 6 :", "N 4 5 6 T 9 :"], 4, seed=1)
    assert all(lp.device == HOST for lp in rollouts.logprobs)  # results are stored on the host
    with torch.no_grad():
        full = sequence_logprobs(model, rollouts.sample_prompt_ids, rollouts.completion_ids)
    behaviour, mask = rollouts.padded_logprobs()
    assert torch.equal(mask, full.mask.to(HOST))
    assert (full.logprobs.to(HOST) - behaviour).abs().max().item() < 1e-3


def test_native_sampling_on_the_gpu_draws_mostly_the_cpus_completions(tokenizer):
    """The same uniforms (drawn on the host) on both devices: completions differ only where float32
    rounding moves a draw across a token boundary."""
    model = build_model(tokenizer, SMALL, seed=0).eval()
    config = SamplingConfig(max_new_tokens=24, stop_at_answer=False)
    prompts = ["N 1 2 3 T 6 :", "N 4 5 6 T 9 :", "N 7 8 9 T 10 :"]
    on_cpu = make_engine(model, tokenizer, config).sample(prompts, 8, seed=3)
    on_gpu = make_engine(model.to(CUDA), tokenizer, config).sample(prompts, 8, seed=3)
    same = sum(a == b for a, b in zip(on_cpu.completion_ids, on_gpu.completion_ids, strict=True))
    assert same >= 0.8 * len(on_cpu.completion_ids)


@pytest.mark.parametrize("autocast, tolerance", [(False, 1e-4), (True, 5e-2)])
def test_chunked_logprobs_on_the_gpu_equal_the_full_log_softmax(tokenizer, autocast, tolerance):
    """fp32: equal to rounding (the GPU's matmuls may sum in another order per shape); bf16: to bf16
    rounding of the logits."""
    model = build_model(tokenizer, SMALL, seed=0).to(CUDA)
    rng = torch.Generator().manual_seed(0)
    prompts = [[1, *torch.randint(4, 30, (int(n),), generator=rng).tolist()] for n in (3, 9, 5, 7)]
    completions = [torch.randint(4, 30, (int(n),), generator=rng).tolist() for n in (12, 1, 30, 6)]
    results = []
    for chunk in (0, 7):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = sequence_logprobs(model, prompts, completions, 0.8, with_entropy=True, chunk_tokens=chunk)
        (out.logprobs.sum() + out.entropy.sum()).backward()
        results.append((out, torch.cat([p.grad.flatten() for p in model.parameters()])))
    (full, full_grad), (chunked, chunked_grad) = results
    assert chunked.logprobs.device.type == "cuda" and torch.equal(chunked.mask, full.mask)
    assert (chunked.logprobs - full.logprobs).abs().max().item() < tolerance
    assert (chunked.entropy - full.entropy).abs().max().item() < tolerance
    assert ((chunked_grad - full_grad).norm() / full_grad.norm()).item() < max(tolerance, 1e-3)


def test_a_whole_run_on_cuda_records_the_gpu(tokenizer, tmp_path):
    folder = tmp_path / "policy"
    build_model(tokenizer, SMALL, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config = replace(
        step_config("native"),
        data=DataSpec(str(folder), train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=2, checkpoint_every=1, device="cuda", logprob_chunk=16,
    )  # fmt: skip
    store = train(config, root=tmp_path / "runs", progress=False)
    provenance = store.provenance()
    assert provenance["device"].startswith("cuda") and provenance["device_name"]
    assert [r["step"] for r in store.read_steps()] == [0, 1] and store.verify() == []
    assert store.load_results()["eval"]["num_tasks"] == 4
