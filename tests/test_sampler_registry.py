"""The sampler registry: explicit entries, the generic options of every sampler, and a sampler added in one
file (the steps of the ``samplers`` docstring)."""

import importlib
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from countdown_study.countdown.generate import generate_tasks
from countdown_study.rollout import SamplingConfig
from countdown_study.samplers import REFILLABLE, SAMPLERS, SamplerEntry, make_sampler, run_options
from countdown_study.samplers.feature_space import FeatureSpaceSampler
from countdown_study.samplers.fixed_buckets import FIXED_V2
from countdown_study.samplers.registry import load_builder
from countdown_study.study.method import Method, locate_config, method_config
from countdown_study.study.presets import study_preset
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.specs import DataSpec, EvalSpec

POOL = generate_tasks(60, seed=2)


def test_importing_the_samplers_registers_every_name_and_loads_no_layer_above():
    code = (
        "import sys\n"
        "from countdown_study.samplers import SAMPLERS\n"
        "before = dict(SAMPLERS)\n"
        "print(any(m.startswith(('countdown_study.training', 'torch')) for m in sys.modules))\n"
        "import countdown_study.training.loop, countdown_study.training.teacher\n"
        "print(SAMPLERS == before and 'adsc_teacher' in before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.split() == [
        "False",
        "True",
    ]  # nothing above loaded; importing the loop changes no entry


def test_the_teacher_router_is_named_by_path_and_loaded_when_built():
    from countdown_study.training.teacher import teacher_router

    entry = SAMPLERS["adsc_teacher"]
    assert entry.builder == "countdown_study.training.teacher:teacher_router"
    assert load_builder(entry.builder) is teacher_router
    with pytest.raises(ValueError, match="written 'module:function', got 'teacher_router'"):
        load_builder("teacher_router")


def test_refillable_samplers_are_the_ones_implementing_a_refill():
    assert REFILLABLE == ("uniform", "uniform_replacement")


def test_options_change_config_fields_and_pass_constructor_arguments():
    sampler = make_sampler("fixed_v2", POOL, seed=1, alpha=0.5)
    assert sampler.config == replace(FIXED_V2, alpha=0.5) and sampler.seed == 1
    features = FeatureSpaceSampler(POOL, config=SAMPLERS["fsc_static"].config).features
    reused = make_sampler("fsc_static", POOL, features=features)
    assert reused.features is features
    with pytest.raises(ValueError, match=r"takes no option bogus; its options: config fields \['alpha'"):
        make_sampler("fixed_v1", POOL, bogus=1)
    with pytest.raises(ValueError, match=r"takes no option alpha; .* arguments \[\]"):
        make_sampler("uniform", POOL, alpha=0.5)  # a sampler without a config takes no option


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("uniform", {}, {}),
        ("fixed_v1", {"alpha": 0.5}, {"alpha": 0.5}),
        ("staged_thirds", {}, {"total_steps": 60}),
        ("solution_count_adaptive", {"rule": "progress"}, {"rule": "progress", "total_steps": 60}),
        ("fsc_dynamic_edge", {}, {"total_steps": 60, "probe_size": 32}),  # one batch's worth per probe
        ("fsc_schedule", {"probe_size": 8}, {"probe_size": 8, "total_steps": 60}),  # the row's own kept
        ("adaptive_v2", {}, {}),  # warm-up in steps: the run's length is not needed
        ("adaptive_v2", {"warmup_fraction": 0.2}, {"warmup_fraction": 0.2, "total_steps": 60}),
    ],
)
def test_run_options_add_what_the_sampler_takes_from_its_run(name, options, expected):
    added = run_options(name, options, steps=60, prompts_per_step=32)
    assert added == expected and list(added) == list(expected)  # the row's keys first
    with pytest.raises(ValueError, match="unknown sampler 'nope'; known samplers"):
        run_options("nope", {}, 60, 32)


# ---------------------------------------------------------------------------------------------------
# A sampler added in one file
# ---------------------------------------------------------------------------------------------------

STRIDE_MODULE = '''"""A throwaway sampler: each step walks the pool with a stride."""

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from countdown_study.samplers.base import Sampler


@dataclass(frozen=True)
class StrideConfig:
    """The walk."""

    stride: int = 1
    """Pool positions between a batch's tasks."""
    total_steps: int | None = None
    """The run's training steps (from the run)."""


STRIDE_THREE = StrideConfig(stride=3)


@dataclass
class StrideSampler(Sampler):
    """Step s takes positions s * B * stride, ... apart by stride, modulo the pool."""

    config: StrideConfig = STRIDE_THREE
    name: str = field(default="stride", init=False)
    spans_run: ClassVar[bool] = True

    def choose(self, step, batch_size):
        start = step * batch_size * self.config.stride
        return (start + self.config.stride * np.arange(batch_size)) % len(self.pool)

    def stats(self):
        return {"stride": self.config.stride}
'''


@pytest.fixture
def stride(tmp_path, monkeypatch):
    """Steps 1 and 2 of adding a sampler: its module (one file, here outside the package) and its registry
    line (undone after the test)."""
    (tmp_path / "stride_sampler.py").write_text(STRIDE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("stride_sampler")
    monkeypatch.setitem(SAMPLERS, "stride", SamplerEntry(module.StrideSampler, module.STRIDE_THREE))
    yield module
    sys.modules.pop("stride_sampler", None)


def test_a_sampler_in_one_file_is_built_by_name(stride):
    batch = make_sampler("stride", POOL, seed=0).next_batch(1, 4)
    assert batch.indices == (12, 15, 18, 21)  # step 1 starts at 1 * 4 * 3
    assert make_sampler("stride", POOL, stride=5).next_batch(2, 3).indices == (30, 35, 40)
    assert make_sampler("stride", POOL, stride=7).next_batch(3, 2).indices == (42 % 60, 49 % 60)


def test_a_sampler_in_one_file_is_a_method_row_of_the_study(stride):
    at = study_preset("tiny")
    config = method_config(Method("Stride", sampler="stride"), at, 0)
    assert (config.sampler, config.sampler_options) == ("stride", {"total_steps": at.steps})
    uniform = method_config(Method("RLOO uniform"), at, 0)
    assert replace(config, sampler="uniform", sampler_options={}) == uniform  # only the sampler differs
    run_id = locate_config("rloo", config).run_id
    assert run_id.startswith("rloo-") and run_id != locate_config("rloo", uniform).run_id


def test_a_sampler_in_one_file_trains_a_run(stride, tiny_policy, tmp_path):
    config = TrainConfig(
        data=DataSpec(tiny_policy, train_tasks="generated:60:2", eval_tasks="generated:8:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=8)),
        sampler="stride",
        sampler_options={"stride": 2},
        steps=2,
        prompts_per_step=4,
        group_size=2,
        sampling=SamplingConfig(max_new_tokens=8),
        threads=1,
    )
    steps = train(config, root=tmp_path, progress=False).read_steps()
    assert [row["sampler_stride"] for row in steps] == [2, 2]
    assert np.isfinite([row["loss"] for row in steps]).all()
