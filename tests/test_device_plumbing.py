"""Nothing in the model layers assumes the CPU: every tensor they make is placed on a named device.

On a CPU-only machine a step on "the model's device" cannot show a misplaced tensor (everything is on the
CPU), so two checks guard the plumbing instead, each shown to catch a planted violation:

* a source scan (``ast``) of every module of ``rollout``, ``objectives``, ``training``, ``evaluation`` and
  ``policy``: no tensor factory without ``device=``, no ``.cpu()``, no ``"cpu"`` string, no
  ``torch.Generator()`` or ``torch.load`` without a device; the exceptions are named below with why;
* a run of the hot paths (an RLOO step with each in-process engine, KL, entropy and chunked log-probs; an
  IPO step; the VCC loss; an SFT step; an evaluation) under a ``TorchFunctionMode`` that records every
  factory call made from the package's own code without ``device=``.

``tests/test_gpu.py`` runs the same paths on a GPU where there is one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import countdown_study
from countdown_study.countdown.generate import generate_tasks
from countdown_study.objectives.rloo import RLOOConfig, rloo_loss
from countdown_study.objectives.vcc import prefix_scores, vcc_loss
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer
from countdown_study.rollout import SamplingConfig, make_engine
from countdown_study.samplers import make_sampler
from countdown_study.training.loop import TrainConfig, rloo_step

PACKAGE_DIR = Path(countdown_study.__file__).resolve().parent
SCANNED = ("rollout", "objectives", "training", "evaluation", "policy", "runs/device.py")
"""The model layers: every module under these folders is scanned, and the device names every run config
resolves (``runs.device``)."""

FACTORIES = frozenset({
    "zeros", "ones", "full", "empty", "arange", "eye", "rand", "randn", "randint", "randperm", "linspace",
    "logspace", "tensor", "empty_strided",
})  # fmt: skip
"""``torch.<name>(...)`` calls that make a tensor on the default device unless told ``device=``."""

EXCEPTIONS = {
    ("rollout/core.py", "HOST", "cpu-literal"): "the one name of the host device (results are stored there)",
    ("runs/device.py", "DEVICES", "cpu-literal"): "the device names a config accepts",
    ("runs/device.py", "DEFAULT_DEVICE", "cpu-literal"): "the default device name",
    ("training/rloo_config.py", "PRESETS", "cpu-literal"): "the name of the CPU preset, not a device",
}
"""(module under the package, enclosing definition, kind) -> why the rule does not apply there."""


@dataclass(frozen=True)
class Finding:
    """One place that names or assumes a device implicitly."""

    module: str
    """Path under the package (``rollout/core.py``)."""
    scope: str
    """The enclosing function, class or module-level assignment target."""
    kind: str
    """``factory``, ``cpu-method``, ``cpu-literal``, ``generator`` or ``load``."""
    line: int
    """Line of the expression."""
    source: str
    """The expression, as source."""

    def __str__(self) -> str:
        return f"{self.module}:{self.line} ({self.scope}): {self.kind}: {self.source}"


def _keywords(call: ast.Call) -> set[str | None]:
    return {k.arg for k in call.keywords}


def _torch_attribute(func: ast.expr) -> str | None:
    """``name`` for a call of ``torch.name``, else None."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr
    return None


def _kind(node: ast.AST) -> str | None:
    """Which rule ``node`` breaks, if any."""
    if isinstance(node, ast.Constant) and node.value == "cpu":
        return "cpu-literal"
    if not isinstance(node, ast.Call):
        return None
    name, keywords = _torch_attribute(node.func), _keywords(node)
    if None in keywords:  # ``**kwargs`` may carry the device
        return None
    if name in FACTORIES and "device" not in keywords:
        return "factory"
    if name == "Generator" and "device" not in keywords and not node.args:
        return "generator"
    if name == "load" and "map_location" not in keywords:
        return "load"
    if isinstance(node.func, ast.Attribute) and node.func.attr == "cpu" and not node.args:
        return "cpu-method"
    return None


def _scoped_nodes(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every node with the name of its enclosing definition (or module-level assignment target)."""
    stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
    while stack:
        node, scope = stack.pop()
        for child in ast.iter_child_nodes(node):
            child_scope = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                child_scope = child.name if scope == "<module>" else f"{scope}.{child.name}"
            elif scope == "<module>" and isinstance(child, (ast.Assign, ast.AnnAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                child_scope = ",".join(t.id for t in targets if isinstance(t, ast.Name)) or scope
            yield child_scope, child
            stack.append((child, child_scope))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of string constants that are docstrings or bare expression strings (prose, not code)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def scan(source: str, module: str) -> list[Finding]:
    """Every place of ``source`` (the text of package module ``module``) that breaks a rule."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    findings = []
    for scope, node in _scoped_nodes(tree):
        kind = _kind(node)
        if kind is not None and id(node) not in prose:
            findings.append(
                Finding(module, scope, kind, node.lineno, ast.get_source_segment(source, node) or "")
            )
    return sorted(findings, key=lambda f: (f.module, f.line))


def scanned_modules() -> dict[str, str]:
    """Source of every scanned module by its path under the package."""
    entries = [PACKAGE_DIR / entry for entry in SCANNED]
    files = sorted(f for entry in entries for f in ([entry] if entry.is_file() else entry.rglob("*.py")))
    return {f.relative_to(PACKAGE_DIR).as_posix(): f.read_text() for f in files}


# ---------------------------------------------------------------------------------------------------
# The source scan


def test_the_model_layers_name_the_device_of_every_tensor_they_make():
    findings = [f for module, source in scanned_modules().items() for f in scan(source, module)]
    unexcused = [str(f) for f in findings if (f.module, f.scope, f.kind) not in EXCEPTIONS]
    assert not unexcused, "tensors placed on an implicit device:\n" + "\n".join(unexcused)
    used = {(f.module, f.scope, f.kind) for f in findings}
    assert set(EXCEPTIONS) <= used, f"exceptions no longer needed: {sorted(set(EXCEPTIONS) - used)}"


PLANTED = '''
"""A module docstring may say "cpu"."""
import torch

def update(logp, advantages):
    adv = torch.tensor(advantages)  # factory without a device
    pad = torch.zeros(3, 4)  # factory without a device
    ok = torch.zeros(3, device=logp.device)
    host = logp.cpu()  # hard-coded host
    with torch.autocast("cpu", dtype=torch.bfloat16):  # hard-coded device
        pass
    draws = torch.Generator()  # a generator on the default device
    state = torch.load("x.pt")  # restored wherever it was saved
    spread = torch.ones(2, **placement)  # may carry the device: not flagged
    return adv, pad, ok, host, draws, state, spread
'''


def test_the_scan_catches_planted_violations():
    found = [(f.kind, f.line) for f in scan(PLANTED, "planted.py")]
    assert found == [
        ("factory", 6), ("factory", 7), ("cpu-method", 9), ("cpu-literal", 10), ("generator", 12),
        ("load", 13),
    ]  # fmt: skip
    assert all(f.scope == "update" for f in scan(PLANTED, "planted.py"))


# ---------------------------------------------------------------------------------------------------
# The hot paths, run


RUNTIME_FACTORIES = {getattr(torch, name) for name in FACTORIES} | {torch.as_tensor}


class DevicelessFactories(TorchFunctionMode):
    """Records every tensor factory called without ``device=`` from a file under ``roots`` (the caller's
    own frame: torch's and transformers' internals are theirs to place). ``as_tensor`` of a tensor keeps
    that tensor's device and is not recorded."""

    def __init__(self, roots: tuple[Path, ...] = (PACKAGE_DIR,)) -> None:
        super().__init__()
        self.roots = tuple(str(r) for r in roots)
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in RUNTIME_FACTORIES and "device" not in kwargs:
            keeps_device = func is torch.as_tensor and args and isinstance(args[0], torch.Tensor)
            caller = sys._getframe(1)
            if not keeps_device and caller.f_code.co_filename.startswith(self.roots):
                where = Path(caller.f_code.co_filename).name
                self.calls.append(f"{where}:{caller.f_lineno} {caller.f_code.co_name}: torch.{func.__name__}")
        return func(*args, **kwargs)


def test_the_runtime_check_catches_a_planted_factory_call():
    def planted(logp: torch.Tensor) -> torch.Tensor:
        return logp + torch.zeros(logp.shape)  # no device: recorded

    def placed(logp: torch.Tensor) -> torch.Tensor:
        return logp + torch.zeros(logp.shape, device=logp.device) + torch.as_tensor(logp)

    logp = torch.ones(2)
    with DevicelessFactories(roots=(Path(__file__).parent,)) as recorder:
        placed(logp)
        assert recorder.calls == []
        planted(logp)
    assert len(recorder.calls) == 1 and recorder.calls[0].endswith("planted: torch.zeros")
    with DevicelessFactories() as library_only:  # the same call from a test file is not the package's
        planted(logp)
    assert library_only.calls == []


SMALL = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.mark.parametrize("engine", ["native", "hf"])
def test_an_rloo_step_makes_every_tensor_on_a_named_device(tokenizer, engine):
    model, ref_model = build_model(tokenizer, SMALL, seed=0), build_model(tokenizer, SMALL, seed=0)
    config = TrainConfig(
        prompts_per_step=3, group_size=3, micro_batch=4, loss=RLOOConfig(kl_coef=0.01, entropy_coef=0.01),
        sampling=SamplingConfig(max_new_tokens=8, engine=engine, dtype="bfloat16"), logprob_chunk=5,
        threads=1,
    )  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sampler = make_sampler("uniform", generate_tasks(20, seed=1), config.seed)
    engine_ = make_engine(model, tokenizer, config.sampling)
    with DevicelessFactories() as recorder:
        record = rloo_step(0, model, ref_model, engine_, optimizer, sampler, config, "compact")
        rloo_loss(
            torch.zeros(2, 3, requires_grad=True),
            torch.ones(2, 3, dtype=torch.bool),
            np.array([0.5, -0.5]),
            replace(config.loss, kl_coef=0.0, entropy_coef=0.0),
        )  # fmt: skip  (advantages as an array: moved to the log-probs' device)
    assert record["tokens"] > 0 and np.isfinite(record["grad_norm"])
    assert recorder.calls == [], "\n".join(recorder.calls)


def test_ipo_vcc_sft_and_evaluation_make_every_tensor_on_a_named_device(tokenizer, tmp_path):
    from countdown_study.evaluation.evaluate import evaluate
    from countdown_study.objectives.ipo import PreferencePair
    from countdown_study.rollout import sample
    from countdown_study.training.ipo import IPOConfig, fit_ipo
    from countdown_study.training.sft import train_step_gradients
    from countdown_study.training.vcc import VCCObjective

    model, ref_model = build_model(tokenizer, SMALL, seed=0), build_model(tokenizer, SMALL, seed=0)
    rollouts = sample(model, tokenizer, ["N 1 2 3 T 6 :"], 4, SamplingConfig(max_new_tokens=6), 0)
    pairs = [PreferencePair(0, 0, 1), PreferencePair(0, 2, 3)]
    with DevicelessFactories() as recorder:
        fit_ipo(
            model, ref_model, rollouts, pairs, IPOConfig(epochs=1, logprob_chunk=4), lambda r: None, False
        )
        policy, reference, _ = VCCObjective._token_logprobs(model, ref_model, rollouts, [(pairs[0], 2)])
        scores = [prefix_scores(t, [0, 1], [1, 1]) for t in (policy, reference)]
        vcc_loss(scores[0], scores[1], scores[1], scores[0])
        train_step_gradients(model, tokenizer, [("N 1 2 3 T 6 :", "<answer>1+2+3</answer>")] * 3, 2)
        evaluate(model, tokenizer, generate_tasks(2, seed=0), n=2, sampling=SamplingConfig(max_new_tokens=6))
    assert recorder.calls == [], "\n".join(recorder.calls)
