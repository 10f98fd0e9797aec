"""The native engine's static decode step (``rollout.native.StaticDecode``): fixed shapes, the slot written
by ``index_copy_``, attention over the whole cache. On the CPU it runs eagerly and must draw exactly the
eager loop's completions; on a CUDA device it is captured once as a CUDA graph (tested where there is one).
The eager loop's caches are left unwritten beyond the filled slots; it must never read one.
"""

import pytest
import torch

from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import SamplingConfig, make_engine, native

SMALL = TinyModelConfig(hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128)
PROMPTS = ["N 1 2 3 T 6 :", "N 4 5 6 T 9 :", "N 7 8 9 T 10 :"]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def draws(model, tokenizer, config, static, monkeypatch, seed=3):
    monkeypatch.setattr(native, "use_static", lambda device: static)
    return make_engine(model, tokenizer, config).sample(PROMPTS, 8, seed=seed)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("stop_at_answer", [True, False])
def test_the_static_step_draws_the_eager_loops_completions_on_the_cpu(
    tokenizer, monkeypatch, dtype, stop_at_answer
):
    """Rows that finish early stay in the static batch; the tokens of every row are the eager loop's and
    so are their behaviour log-probs (the masked slots add exact zeros to the attention)."""
    model = build_model(tokenizer, SMALL, seed=0).eval()
    config = SamplingConfig(max_new_tokens=40, stop_at_answer=stop_at_answer, dtype=dtype)
    eager = draws(model, tokenizer, config, False, monkeypatch)
    static = draws(model, tokenizer, config, True, monkeypatch)
    assert static.completion_ids == eager.completion_ids
    assert len({len(ids) for ids in eager.completion_ids}) > 1  # some rows finished before others
    for a, b in zip(static.logprobs, eager.logprobs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_the_eager_loop_never_reads_an_unwritten_cache_slot(tokenizer, monkeypatch):
    """The eager loop's caches come from ``torch.empty``: filling every slot it has not written yet with
    NaN (after the prompts are shared and after each compaction) leaves every draw and log-prob as it was."""
    model = build_model(tokenizer, SMALL, seed=0).eval()
    config = SamplingConfig(max_new_tokens=40, stop_at_answer=False)
    plain = draws(model, tokenizer, config, False, monkeypatch)
    share, compact, poisoned = native._share_prompt_cache, native._compact_cache, []

    def poison(cache, filled):
        for pair in cache:
            for tensor in pair:
                tensor[:, :, filled:] = float("nan")
        poisoned.append(filled)
        return cache

    monkeypatch.setattr(
        native,
        "_share_prompt_cache",
        lambda cache, g, width, length, zeroed: poison(share(cache, g, width, length, zeroed), width),
    )
    monkeypatch.setattr(
        native, "_compact_cache", lambda cache, keep, filled: poison(compact(cache, keep, filled), filled)
    )
    nan_filled = draws(model, tokenizer, config, False, monkeypatch)
    assert len(poisoned) >= 2  # the shared prompt cache and at least one compaction
    assert nan_filled.completion_ids == plain.completion_ids
    for a, b in zip(nan_filled.logprobs, plain.logprobs, strict=True):
        assert torch.equal(a, b)


def test_the_static_step_is_chosen_on_cuda_only_and_can_be_turned_off(monkeypatch):
    monkeypatch.delenv(native.CUDA_GRAPHS_VARIABLE, raising=False)
    assert native.use_static(torch.device("cuda")) and not native.use_static(torch.device("cpu"))
    monkeypatch.setenv(native.CUDA_GRAPHS_VARIABLE, "0")
    assert not native.use_static(torch.device("cuda"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the CUDA graph is not captured")
def test_the_captured_graph_draws_the_eager_loops_completions_on_the_gpu(tokenizer, monkeypatch):
    model = build_model(tokenizer, SMALL, seed=0).eval().to("cuda")
    config = SamplingConfig(max_new_tokens=40, stop_at_answer=False)
    captured = []
    original = native.StaticDecode._capture
    monkeypatch.setattr(native.StaticDecode, "_capture", lambda self: captured.append(1) or original(self))
    eager = draws(model, tokenizer, config, False, monkeypatch)
    graph = draws(model, tokenizer, config, True, monkeypatch)
    assert captured == [1]  # captured once, replayed for every later token
    same = sum(a == b for a, b in zip(graph.completion_ids, eager.completion_ids, strict=True))
    assert same >= 0.9 * len(eager.completion_ids)
