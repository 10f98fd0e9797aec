"""Where a run's models live: the device names a run config accepts and their resolution at run start.

A run config names its device (``RunConfig.device`` of every run config, ``SFTConfig.device``):
``cpu`` (the default), ``cuda`` or ``auto``. ``check_device`` refuses an unknown name when the config is
made; ``resolve_device`` turns the name into a ``torch.device`` when a run starts (``auto``: ``cuda``
when torch sees a CUDA device, else ``cpu``) and refuses ``cuda`` on a machine without one, before a
run folder is made. From there on everything follows the model's device (``rollout.model_device``):
rollouts, log-probs, losses and autocast; results are stored on the host (``rollout.core.HOST``).

A config that says ``cpu`` leaves the field out of its canonical JSON (``runs.files.OMIT_AT_DEFAULT``),
so runs made before the field existed keep their ids; ``auto`` is its own config (its run id differs
from ``cpu``'s) and the device it resolved to is recorded in the run's ``provenance.json``.

Imports no torch at module level: the command line lists ``DEVICES`` without loading it. Below every
model layer (it names devices, it makes no tensor), so the evaluation-only run and every training stage
resolve their device the same way; ``training.device`` re-exports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

DEVICES = ("cpu", "cuda", "auto")
"""Device names a run config accepts."""
DEFAULT_DEVICE = "cpu"
"""The device of every run config that does not name one (and of every run made before the field)."""


def check_device(name: str) -> None:
    """Refuse a device name that is not one of ``DEVICES`` (whether the machine has it is checked at run
    start: a config naming ``cuda`` can be made, compared and located on any machine)."""
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}; choose one of {DEVICES}")


def resolve_device(name: str) -> torch.device:
    """The device a run named ``name`` runs on; ``cuda`` without a CUDA device is refused, saying why."""
    import torch

    check_device(name)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else DEFAULT_DEVICE
    if name == DEFAULT_DEVICE:
        return torch.device(DEFAULT_DEVICE)
    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise ValueError(
            f"device 'cuda' was asked for but torch {torch.__version__} ({build}) sees no CUDA device; "
            "use device 'cpu', or 'auto' to take a GPU only where there is one"
        )
    return torch.device("cuda", torch.cuda.current_device())


def describe_device(device: torch.device) -> dict[str, Any]:
    """What a run's provenance records of its device: the device, and a GPU's model and memory."""
    import torch

    record: dict[str, Any] = {"device": str(device)}
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        record["device_name"] = properties.name
        record["device_memory_gib"] = round(properties.total_memory / 2**30, 1)
    return record


def prepare_device(device: torch.device) -> None:
    """Process-wide settings of a run on ``device`` (none on the CPU).

    On CUDA, scaled-dot-product attention with a mask stays off cuDNN: measured on an H100, cuDNN planned
    every new shape (the ``hf`` engine's first call at a new size took 30 s against 9 s repeated, and the
    update's micro-batches of new lengths spiked); the flash and memory-efficient kernels do not.
    """
    import torch

    if device.type == "cuda":
        torch.backends.cuda.enable_cudnn_sdp(False)
