"""Nothing wrong is marked done: checked weights, loading that runs no code, finite training, and the
environment each run was made in.

Cases (each fails on the code before checksums, ``weights_only`` loading, finiteness checks and the
recorded environment):

* corrupt weights: an unfinished run's ``last.pt`` changed, a finished run's ``checkpoints/final``
  changed, a ``DONE`` over changed weights, an SFT checkpoint changed;
* a crafted checkpoint whose unpickling would create a marker file: refused, marker absent;
* non-finite training: RLOO, IPO and SFT at lr 1e9, a forced NaN gradient, NaN weights at a checkpoint;
* the environment: recorded in provenance, compared (``environment_mismatch``), warned about on reuse
  and by ``runs verify`` for the runs of one table.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from synthetic import TINY_MODEL

from countdown_study.objectives.rloo import RLOOConfig
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.store import RunStore
from countdown_study.training import loop
from countdown_study.training.loop import TrainConfig, train
from countdown_study.training.specs import DataSpec, EvalSpec


def tiny_config(policy: str, **changes) -> TrainConfig:
    """Four RLOO steps of 4 x 4 rollouts on the tiny policy, a checkpoint every 2 steps."""
    base = TrainConfig(
        data=DataSpec(policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        steps=4,
        prompts_per_step=4,
        group_size=4,
        micro_batch=8,
        lr=1e-2,
        loss=RLOOConfig(kl_coef=0.0, entropy_coef=0.0),
        sampling=SamplingConfig(max_new_tokens=10),
        threads=1,
        checkpoint_every=2,
    )
    return replace(base, **changes)


def run_folder(root: Path) -> Path:
    (folder,) = [p for p in root.iterdir() if p.is_dir()]
    return folder


def interrupt(monkeypatch, at_step: int) -> None:
    """Make the next RLOO run stop (as if killed) when it reaches step ``at_step``."""
    original = loop.rloo_step

    def stop(step, *args, **kwargs):
        if step == at_step:
            raise KeyboardInterrupt
        return original(step, *args, **kwargs)

    monkeypatch.setattr(loop, "rloo_step", stop)


def strip_times(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("seconds_")} for r in rows]


@pytest.fixture(scope="module")
def finished(tiny_policy, tmp_path_factory) -> Path:
    """The run store of one finished four-step run (copy it before changing it)."""
    root = tmp_path_factory.mktemp("finished")
    train(tiny_config(tiny_policy), root=root, progress=False)
    return root


def record_sha256(target: Path) -> None:
    """Write ``target``'s sidecar by hand, in the documented format (``checksums``): what anyone who can
    write the run store can do."""
    files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
    digests = {
        f.relative_to(target.parent).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest() for f in files
    }
    target.with_name(target.name + ".sha256.json").write_text(json.dumps({"sha256": digests}))


def copy_store(root: Path, tmp_path: Path) -> Path:
    shutil.copytree(root, tmp_path / "runs")
    return tmp_path / "runs"


# ---------------------------------------------------------------------------------------------------
# Checksums
# ---------------------------------------------------------------------------------------------------


def test_checksums_of_a_folder_name_each_changed_missing_or_unrecorded_file(tmp_path):
    from countdown_study.checksums import ChecksumError, check_checksums, checksum_problems, sidecar_path
    from countdown_study.runs.files import write_checksums

    folder = tmp_path / "final"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"\x00" * 10)
    (folder / "b.json").write_text("{}")
    assert check_checksums(folder, required=False) is False  # nothing recorded: nothing checked
    with pytest.raises(ChecksumError, match=re.escape(f"{folder} has no recorded SHA-256")):
        check_checksums(folder)
    sidecar = write_checksums(folder)
    assert sidecar == sidecar_path(folder) == tmp_path / "final.sha256.json"
    assert sorted(json.loads(sidecar.read_text())["sha256"]) == ["final/a.bin", "final/b.json"]
    assert check_checksums(folder) is True
    (folder / "a.bin").write_bytes(b"\x00" * 9 + b"\x01")
    (folder / "b.json").unlink()
    (folder / "c.txt").write_text("new")
    assert checksum_problems(folder) == [
        f"{folder / 'a.bin'}: changed since it was written (SHA-256 differs from {sidecar})",
        f"{folder / 'b.json'}: missing (its SHA-256 is recorded in {sidecar})",
        f"{folder / 'c.txt'}: not among the files recorded in {sidecar}",
    ]
    with pytest.raises(ChecksumError, match=re.escape(str(folder / "a.bin"))):
        check_checksums(folder)


def test_a_sidecar_naming_a_file_outside_its_target_is_a_problem(tmp_path):
    from countdown_study.checksums import checksum_problems, sha256_file

    (tmp_path / "last.pt").write_bytes(b"weights")
    (tmp_path / "other").write_bytes(b"other")
    record = {
        "sha256": {"last.pt": sha256_file(tmp_path / "last.pt"), "other": sha256_file(tmp_path / "other")}
    }
    (tmp_path / "last.pt.sha256.json").write_text(json.dumps(record))
    (problem,) = checksum_problems(tmp_path / "last.pt")
    assert "names 'other', which lies outside" in problem


# ---------------------------------------------------------------------------------------------------
# Corrupt weights
# ---------------------------------------------------------------------------------------------------


def test_changed_weights_in_an_unfinished_runs_checkpoint_start_the_run_over(
    tiny_policy, finished, tmp_path, monkeypatch
):
    """Issue case: bytes changed inside ``last.pt``'s weights were loaded and the run finished on them."""
    interrupt(monkeypatch, at_step=3)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(tiny_policy), root=tmp_path, progress=False)
    monkeypatch.undo()
    checkpoint = run_folder(tmp_path) / "checkpoints" / "last.pt"
    state = torch.load(checkpoint, weights_only=True)
    assert state["step"] == 2
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name] + 1.0  # a valid file holding other weights
    torch.save(state, checkpoint)
    with pytest.warns(
        UserWarning, match=rf"checkpoint {re.escape(str(checkpoint))} cannot be read .*changed"
    ):
        resumed = train(tiny_config(tiny_policy), root=tmp_path, progress=False)
    reference = RunStore(run_folder(finished).name, run_folder(finished), None)
    assert resumed.is_done and resumed.verify() == []
    assert strip_times(resumed.read_steps()) == strip_times(reference.read_steps())  # started over
    assert resumed.load_results()["eval"] == reference.load_results()["eval"]


def test_changed_final_weights_are_named_by_verify_and_refused_where_they_load(finished, tmp_path, capsys):
    """Issue case: a changed ``checkpoints/final`` left ``runs verify`` at 0 problems and loaded."""
    from countdown_study.cli import main
    from countdown_study.policy import load_policy

    root = copy_store(finished, tmp_path)
    store = RunStore(run_folder(root).name, run_folder(root), None)
    final = store.path / "checkpoints" / "final"
    load_policy(final)  # intact: loads
    weights = final / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # the last byte of the last tensor: still a valid safetensors file
    weights.write_bytes(bytes(data))
    expected = f"{weights}: changed since it was written"
    assert [line for line in store.verify() if line.startswith(expected)] and store.verify(
        weights=False
    ) == []
    assert main(["runs", "verify", "--root", str(root)]) == 1
    assert expected in capsys.readouterr().out
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_policy(final)
    assert main(["eval", "--policy", str(final), "--tasks", "generated:2:0", "--n", "1"]) == 2
    assert str(weights) in capsys.readouterr().err


def test_final_weights_without_a_checksum_are_a_warning_not_a_problem(finished, tmp_path, capsys):
    from countdown_study.cli import main

    root = copy_store(finished, tmp_path)
    (run_folder(root) / "checkpoints" / "final.sha256.json").unlink()
    assert main(["runs", "verify", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"warning: {run_folder(root) / 'checkpoints' / 'final'}: no recorded SHA-256" in out
    assert "; 0 problems;" in out


def test_a_run_whose_weights_changed_before_finish_writes_no_done(tmp_path):
    from countdown_study.runs.store import RunCorruptError

    store = RunStore.open({"name": "weights"}, root=tmp_path)

    def run(s: RunStore) -> dict:
        final = s.checkpoint_dir / "final"
        final.mkdir()
        (final / "model.bin").write_bytes(b"\x01\x02")
        record_sha256(final)
        (final / "model.bin").write_bytes(b"\x01\x03")  # changed after it was recorded
        return {}

    with pytest.raises(
        RunCorruptError, match=re.escape(f"{store.path / 'checkpoints/final/model.bin'}: changed")
    ):
        store.complete(run)
    assert not store.is_done


def test_a_changed_sft_checkpoint_starts_the_run_over_and_is_refused_as_resume_from(tmp_path):
    from countdown_study.training import sft

    config = sft.SFTConfig(steps=6, batch_size=6, warmup_steps=2, model=TINY_MODEL, heldout_count=20, threads=1,
                           checkpoint_every=2, log_every=1, data_workers=0)  # fmt: skip
    whole = sft.train_sft(config, tmp_path / "whole", progress=False)
    part = sft.train_sft(config, tmp_path / "part", stop_after=3, progress=False)
    checkpoint = sft.checkpoint_path(part)
    state = torch.load(checkpoint, weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name] * 2.0
    torch.save(state, checkpoint)
    longer = replace(config, steps=12)
    with pytest.raises(
        ValueError, match=rf"checkpoint {re.escape(str(checkpoint))} cannot be read .*changed"
    ):
        sft.train_sft(longer, tmp_path / "grown", resume_from=checkpoint, progress=False)
    with pytest.warns(
        UserWarning, match=rf"checkpoint {re.escape(str(checkpoint))} cannot be read .*starts over"
    ):
        resumed = sft.train_sft(config, tmp_path / "part", progress=False)
    whole_weights, resumed_weights = (
        sft.load_sft(whole)[0].state_dict(),
        sft.load_sft(resumed)[0].state_dict(),
    )
    assert all(torch.equal(whole_weights[k], resumed_weights[k]) for k in whole_weights)


def test_the_committed_run_store_verifies_without_problems(capsys):
    from countdown_study.cli import main
    from countdown_study.paths import runs_dir

    assert main(["runs", "verify", "--root", str(runs_dir())]) == 0
    assert "; 0 problems" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------
# A crafted checkpoint
# ---------------------------------------------------------------------------------------------------


class Payload:
    """Unpickles to ``open(marker, "w")``: creating the marker file is what a crafted checkpoint would
    do in place of any command."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def craft(path: Path, marker: Path, record: bool = True) -> None:
    """A checkpoint at ``path`` whose unpickling creates ``marker``, with its SHA-256 recorded (as anyone
    who can write the run store can do) when ``record``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"step": 2, "model": {}, "payload": Payload(marker)}, path)
    if record:
        record_sha256(path)


def test_the_crafted_payload_runs_when_unpickled_without_weights_only(tmp_path):
    """The control: the crafted file is dangerous (what the loading used to do)."""
    craft(tmp_path / "last.pt", tmp_path / "control", record=False)
    torch.load(tmp_path / "last.pt", weights_only=False)
    assert (tmp_path / "control").exists()


def test_a_crafted_rloo_checkpoint_is_refused_naming_it_and_runs_no_code(tiny_policy, tmp_path, monkeypatch):
    interrupt(monkeypatch, at_step=1)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(tiny_policy), root=tmp_path / "runs", progress=False)
    monkeypatch.undo()
    folder = run_folder(tmp_path / "runs")
    checkpoint, marker = folder / "checkpoints" / "last.pt", tmp_path / "marker"
    craft(checkpoint, marker)
    with pytest.raises(
        ValueError, match=rf"checkpoint {re.escape(str(checkpoint))} refused: .*other than tensors"
    ):
        train(tiny_config(tiny_policy), root=tmp_path / "runs", progress=False)
    assert not marker.exists()
    assert not (folder / "DONE").exists() and checkpoint.exists()  # kept for inspection


def test_a_crafted_checkpoint_without_its_checksum_is_never_unpickled(tiny_policy, tmp_path, monkeypatch):
    interrupt(monkeypatch, at_step=1)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(tiny_policy, steps=2), root=tmp_path / "runs", progress=False)
    monkeypatch.undo()
    checkpoint, marker = run_folder(tmp_path / "runs") / "checkpoints" / "last.pt", tmp_path / "marker"
    craft(checkpoint, marker, record=False)
    (checkpoint.parent / "last.pt.sha256.json").unlink(missing_ok=True)
    with pytest.warns(
        UserWarning, match=rf"checkpoint {re.escape(str(checkpoint))} cannot be read .*no recorded"
    ):
        store = train(tiny_config(tiny_policy, steps=2), root=tmp_path / "runs", progress=False)
    assert not marker.exists() and store.is_done


def test_a_crafted_sft_resume_from_is_refused_naming_it_and_runs_no_code(tmp_path):
    from countdown_study.training import sft

    checkpoint, marker = tmp_path / "given" / "last.pt", tmp_path / "marker"
    craft(checkpoint, marker)
    config = sft.SFTConfig(
        steps=6, batch_size=4, model=TINY_MODEL, heldout_count=20, threads=1, data_workers=0
    )
    with pytest.raises(ValueError, match=rf"checkpoint {re.escape(str(checkpoint))} refused"):
        sft.train_sft(config, tmp_path / "runs", resume_from=checkpoint, progress=False)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------------
# Non-finite training
# ---------------------------------------------------------------------------------------------------


NONFINITE_RECORDS = [
    # (a step record, the values reported)
    ({"step": 3, "loss": 0.5, "grad_norm": 2.0, "kl": float("nan")}, {}),  # kl is not monitored
    ({"loss": float("nan"), "grad_norm": 1.0}, {"loss": float("nan")}),
    ({"loss": 1.0, "grad_norm": float("inf")}, {"grad_norm": float("inf")}),
    ({"ipo_loss": float("-inf"), "margin": 0.1}, {"ipo_loss": float("-inf")}),
    ({"vcc_loss": float("nan"), "skipped_update": 1.0}, {"vcc_loss": float("nan")}),
]


@pytest.mark.parametrize(("record", "reported"), NONFINITE_RECORDS)
def test_nonfinite_values_are_the_monitored_nans_and_infinities(record, reported):
    from countdown_study.training.finite import nonfinite_values

    found = nonfinite_values(record)
    assert set(found) == set(reported)
    assert all(str(found[k]) == str(v) for k, v in reported.items())  # nan == nan is False; compare text


@pytest.mark.parametrize(
    ("values", "finite"),
    [
        ([1.0, -2.0, 3e-8], True),
        ([3e38, 3e38], True),  # the sum overflows; every element is finite
        ([1.0, float("nan")], False),
        ([float("inf"), float("-inf")], False),  # the sum is NaN
        ([-float("inf"), 0.0], False),
    ],
)
def test_is_finite_is_the_element_wise_check(values, finite):
    from countdown_study.training.finite import is_finite

    tensor = torch.tensor(values, dtype=torch.float32)
    assert is_finite(tensor) is finite is bool(torch.isfinite(tensor).all())


def test_an_rloo_run_at_lr_1e9_stops_at_the_first_nonfinite_step_and_writes_no_done(tiny_policy, tmp_path):
    """Issue case: ``--lr 1e9`` gave NaN losses from step 1, NaN weights, exit 0 and ``DONE``."""
    config = tiny_config(tiny_policy, lr=1e9, checkpoint_every=1)
    with pytest.raises(ValueError, match=r"RLOO step (\d+): non-finite ") as raised:
        train(config, root=tmp_path, progress=False)
    step = int(re.search(r"step (\d+)", str(raised.value)).group(1))
    store = RunStore(run_folder(tmp_path).name, run_folder(tmp_path), None)
    assert not store.is_done
    assert [r["step"] for r in store.read_steps()] == list(range(step))  # the failing step is not logged
    if step > 0:  # the checkpoints before it hold finite weights
        state = torch.load(store.path / "checkpoints" / "last.pt", weights_only=True)
        assert all(torch.isfinite(t).all() for t in state["model"].values() if t.is_floating_point())


def test_a_forced_nan_gradient_norm_names_its_step(tiny_policy, tmp_path, monkeypatch):
    from countdown_study.training import rloo

    original = rloo.policy_update
    calls = []

    def nan_at_step_1(*args, **kwargs):
        update = original(*args, **kwargs)
        calls.append(1)
        return {**update, "grad_norm": float("nan")} if len(calls) == 2 else update

    monkeypatch.setattr(rloo, "policy_update", nan_at_step_1)
    with pytest.raises(ValueError, match=r"^RLOO step 1: non-finite grad_norm nan;"):
        train(tiny_config(tiny_policy), root=tmp_path, progress=False)
    assert not (run_folder(tmp_path) / "DONE").exists()


def test_nan_weights_are_refused_at_the_checkpoint(tiny_policy, tmp_path, monkeypatch):
    original = loop.rloo_step

    def poison_at_step_1(step, model, *args, **kwargs):
        record = original(step, model, *args, **kwargs)
        if step == 1:
            with torch.no_grad():
                next(model.parameters()).view(-1)[0] = float("nan")
        return record

    monkeypatch.setattr(loop, "rloo_step", poison_at_step_1)
    with pytest.raises(ValueError, match=r"last.pt after 2 steps: non-finite weights in model\."):
        train(tiny_config(tiny_policy), root=tmp_path, progress=False)
    folder = run_folder(tmp_path)
    assert not (folder / "DONE").exists() and not (folder / "checkpoints" / "last.pt").exists()


def test_an_ipo_run_at_lr_1e9_stops_with_the_step_and_writes_no_done(tiny_policy, tmp_path, monkeypatch):
    from countdown_study.objectives.ipo import PreferencePair
    from countdown_study.training import ipo

    real = ipo.collect_pairs

    def fixed_pairs(engine, tasks, config, template):  # the tiny policy solves nothing: pairs by index
        rollouts, grades, _ = real(engine, tasks, config, template)
        return rollouts, grades, [PreferencePair(p, 2 * p, 2 * p + 1) for p in range(len(tasks))]

    monkeypatch.setattr(ipo, "collect_pairs", fixed_pairs)
    config = ipo.IPOConfig(
        data=DataSpec(tiny_policy, train_tasks="generated:100:1", eval_tasks="generated:10:0", eval_limit=2),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=6)),
        prompts=8, group_size=2, epochs=4, batch_pairs=2, lr=1e9, threads=1,
        sampling=SamplingConfig(max_new_tokens=6),
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"IPO step (\d+): non-finite "):
        ipo.train_ipo(config, root=tmp_path, progress=False)
    assert not (run_folder(tmp_path) / "DONE").exists()


def test_an_sft_run_at_lr_1e9_stops_with_the_step_and_writes_no_done(tmp_path):
    from countdown_study.training import sft

    config = sft.SFTConfig(steps=6, batch_size=6, warmup_steps=1, lr=1e9, model=TINY_MODEL, heldout_count=20,
                           threads=1, checkpoint_every=2, log_every=1, data_workers=0)  # fmt: skip
    with pytest.raises(ValueError, match=r"SFT step (\d+): non-finite ") as raised:
        sft.train_sft(config, tmp_path, progress=False)
    step = int(re.search(r"step (\d+)", str(raised.value)).group(1))
    store = sft.open_run(config, tmp_path)
    assert not store.is_done and [r["step"] for r in store.read_steps()] == list(range(step))


# ---------------------------------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------------------------------


def test_provenance_records_the_environment_that_changes_the_numbers(tiny_policy, finished):
    import tokenizers
    import transformers

    record = RunStore(run_folder(finished).name, run_folder(finished), None).provenance()
    assert record["packages"]["tokenizers"] == tokenizers.__version__
    assert record["packages"]["transformers"] == transformers.__version__
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert record["torch_threads"] == 1  # the config's threads
    assert record["torch_interop_threads"] == torch.get_num_interop_threads()
    assert record["device"] == "cpu"


NEW = {"packages": {"torch": "2.13.0", "transformers": "5.24.0", "numpy": "2.4.6", "tokenizers": "0.23.3",
                    "countdown_study": "0.1.0", "pandas": "3.1.1"},
       "python": "3.11.7", "cpu_capability": "AVX512", "torch_threads": 1, "torch_interop_threads": 2,
       "device": "cpu", "git_sha": "abc", "seed": 0}  # fmt: skip
"""A provenance record with every environment key."""
OLD = {"packages": {"torch": "2.13.0", "transformers": "5.23.0", "numpy": "2.4.6", "countdown_study": "0.1.0",
                    "pandas": "3.1.1"},
       "python": "3.11.7", "torch_threads": 1, "git_sha": "def", "seed": 1}  # fmt: skip
"""A record from before the environment was recorded (no tokenizers, CPU capability, inter-op threads, device)."""

MISMATCHES = [
    # (record a, record b, the differing keys named)
    (NEW, NEW, []),
    (NEW, {**NEW, "git_sha": "other", "seed": 7, "pandas": "0"}, []),  # code, seed and pandas: not environment
    (NEW, {**NEW, "cpu_capability": "AVX2"}, ["cpu_capability: AVX512 vs AVX2"]),
    (NEW, {**NEW, "device": "cuda:0", "device_name": "NVIDIA H100"},
     ["device: cpu vs cuda:0", "device_name: not recorded vs NVIDIA H100"]),
    (OLD, OLD, []),  # keys neither records are not compared
    (OLD, NEW, ["transformers: 5.23.0 vs 5.24.0", "tokenizers: not recorded vs 0.23.3",
                "cpu_capability: not recorded vs AVX512", "torch_interop_threads: not recorded vs 2",
                "device: not recorded vs cpu"]),
    ({**OLD, "torch_threads": 2}, {**OLD, "packages": {**OLD["packages"], "torch": "2.12.0"}},
     ["torch: 2.13.0 vs 2.12.0", "torch_threads: 2 vs 1"]),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "expected"), MISMATCHES)
def test_environment_mismatch_names_the_differing_keys(a, b, expected):
    from countdown_study.runs.provenance import environment_mismatch, environments_differ

    assert environment_mismatch(a, b) == expected
    assert environments_differ(a, b) == any("not recorded" not in line for line in expected)


def _set_packages(folder: Path, **versions) -> None:
    record = json.loads((folder / "provenance.json").read_text())
    record["packages"].update(versions)
    (folder / "provenance.json").write_text(json.dumps(record))


def test_reusing_a_run_of_another_environment_warns_naming_it_and_the_keys(tiny_policy, finished, tmp_path):
    import transformers

    root = copy_store(finished, tmp_path)
    folder = run_folder(root)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        train(tiny_config(tiny_policy), root=root, progress=False)  # the same environment: no warning
    assert not [w for w in seen if "environment" in str(w.message)]
    _set_packages(folder, transformers="0.0.1")
    expected = f"run {folder.name} was made in another environment (the run's vs this one's): "
    expected += f"transformers: 0.0.1 vs {transformers.__version__}"
    with pytest.warns(UserWarning, match=re.escape(expected)):
        store = train(tiny_config(tiny_policy), root=root, progress=False)
    assert store.is_done and store.path == folder  # reused, not trained again


def test_runs_verify_warns_when_a_tables_runs_come_from_different_environments(finished, tmp_path, capsys):
    import transformers

    from countdown_study.cli import main

    results = tmp_path / "results"
    root = copy_store(finished, results)
    first = run_folder(root)
    same, other = root / "rloo-000000000000", root / "rloo-ffffffffffff"
    shutil.copytree(first, same)
    shutil.copytree(first, other)
    _set_packages(other, transformers="0.0.1")
    (results / "tables").mkdir()
    runs = [{"run_id": rid, "method": "m"} for rid in (first.name, same.name, other.name)]
    (results / "tables" / "paired.meta.json").write_text(json.dumps({"runs": runs}))
    (results / "tables" / "alone.meta.json").write_text(json.dumps({"runs": runs[:2]}))
    assert main(["runs", "verify", "--root", str(root)]) == 0  # a warning, not a problem
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("warning: tables")] == [
        "warning: tables paired: their 3 runs come from different environments: 2 such as rloo-000000000000; "
        f"1 such as rloo-ffffffffffff (transformers: 0.0.1 vs {transformers.__version__})"
    ]  # the tables "alone" lists runs of one environment
    assert "3 finished runs checked" in out and "; 0 problems;" in out
