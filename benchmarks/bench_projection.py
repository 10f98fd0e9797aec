"""The update's chunked vocabulary projection side by side with the same ops left to autograd: peak memory
and seconds of one chunk's forward and backward at Qwen2.5-0.5B's head (896 x 151,936), on the CPU.

Two arms, each in a fresh process (the peak resident memory of a process only grows), on the same chunk of
``--tokens`` hidden states with log-probs and entropies under bf16 autocast, as the update computes them:

* ``autograd``: log-softmax of the head's logits, the target's log-prob and ``-(exp(logp) * logp).sum()``,
  the chunk wrapped in ``torch.utils.checkpoint`` (recomputed in the backward pass): the package's
  projection before ``rollout.projection``;
* ``package``: ``rollout.projection.project_chunk`` (its gradients written out, two float32 vocabulary-wide
  tensors at most).

Each arm reports the peak resident memory above what it held once its inputs were made (``ru_maxrss``), in
units of one float32 ``(tokens, vocabulary)`` tensor, and the median seconds of ``--repeats`` forward and
backward passes. The GPU figure (TRL's update at 20.9 GiB against the package's 51.4 GiB at micro-batch 64)
needs a GPU; this is the part of it the CPU can show.

Run: ``python benchmarks/bench_projection.py`` (writes ``benchmarks/results/projection.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "projection.json"
ARMS = ("autograd", "package")


def _autograd_chunk(hidden, targets, weight, temperature):
    import torch
    import torch.nn.functional as F

    logp_all = torch.log_softmax(F.linear(hidden, weight).float() / temperature, dim=-1)
    logprobs = logp_all.gather(-1, targets[:, None]).squeeze(-1)
    return logprobs, -(logp_all.exp() * logp_all).sum(-1)


def measure(arm: str, tokens: int, hidden_size: int, vocab: int, repeats: int) -> dict:
    """One arm in this process: peak memory above the inputs and seconds per forward and backward."""
    import torch
    from torch.utils.checkpoint import checkpoint

    from countdown_study.rollout.projection import project_chunk

    torch.manual_seed(0)
    hidden = torch.randn(tokens, hidden_size, requires_grad=True)
    weight = torch.empty(vocab, hidden_size).normal_(0.0, 0.02).requires_grad_()  # no transient copy
    targets = torch.randint(0, vocab, (tokens,))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    seconds = []
    for _ in range(repeats):
        hidden.grad = weight.grad = None
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            if arm == "autograd":
                logprobs, entropy = checkpoint(
                    _autograd_chunk,
                    hidden,
                    targets,
                    weight,
                    0.7,
                    use_reentrant=False,
                    preserve_rng_state=False,
                )
            else:
                logprobs, entropy = project_chunk(hidden, targets, weight, None, 0.7, True)
        (logprobs.sum() + 0.001 * entropy.sum()).backward()
        seconds.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    unit = tokens * vocab * 4
    return {
        "arm": arm,
        "peak_bytes_above_inputs": peak - before,
        "peak_in_logit_tensors": (peak - before) / unit,
        "median_seconds": statistics.median(seconds),
        "seconds": seconds,
        "logprob_sum": float(logprobs.sum()),
        "grad_norm": float(torch.cat([hidden.grad.flatten(), weight.grad.flatten()]).norm()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024, help="tokens in the chunk (default 1024)")
    parser.add_argument("--hidden", type=int, default=896, help="hidden size (default 896)")
    parser.add_argument("--vocab", type=int, default=151_936, help="vocabulary (default 151,936)")
    parser.add_argument("--repeats", type=int, default=3, help="forward and backward passes per arm")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # one arm, in a child process
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    if args.arm:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(measure(args.arm, args.tokens, args.hidden, args.vocab, args.repeats)))
        return
    from countdown_study.runs.files import atomic_write_json
    from countdown_study.runs.provenance import provenance

    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    record = {"provenance": provenance(seed=0), "shape": vars(args) | {"out": None}, "arms": {}}
    for arm in ARMS:
        done = subprocess.run(
            [sys.executable, __file__, "--arm", arm, *(f"--{k}={getattr(args, k)}" for k in
                                                       ("tokens", "hidden", "vocab", "repeats", "threads"))],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        result = json.loads(done.stdout.strip().splitlines()[-1])
        record["arms"][arm] = result
        print(f"{arm:9} peak {result['peak_bytes_above_inputs'] / 2**30:.2f} GiB above the inputs "
              f"({result['peak_in_logit_tensors']:.1f} float32 logit tensors), {result['median_seconds']:.2f} s "
              f"per forward and backward; log-prob sum {result['logprob_sum']:.4f}, gradient norm "
              f"{result['grad_norm']:.6f}")  # fmt: skip
    auto, ours = record["arms"]["autograd"], record["arms"]["package"]
    record["memory_ratio"] = ours["peak_bytes_above_inputs"] / auto["peak_bytes_above_inputs"]
    record["time_ratio"] = ours["median_seconds"] / auto["median_seconds"]
    print(f"package / autograd: memory {record['memory_ratio']:.2f}x, time {record['time_ratio']:.2f}x")
    atomic_write_json(args.out, record)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
