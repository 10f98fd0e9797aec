"""Bounds of the command line's sizes and paths, from this machine and the data, checked before any work.

Every check raises ``ValueError`` (``FileNotFoundError`` for a missing folder) with one line naming the
option, the value and the bound; ``cli.main`` prints it with exit status 2. Nothing here imports torch,
so a mistake is answered before the model stack loads, and before any run folder is made.

The memory of a step's batch is a floor, not a forecast: keys and values of every layer for every token
of every sequence sampled at once (the native engine preallocates exactly this cache), plus the rollout's
own per-token tensors. A size whose floor exceeds the memory available cannot run; one below it may
still need more (activations, the optimizer), so only sizes that cannot fit are refused.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
from collections.abc import Iterable
from pathlib import Path

from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR
from countdown_study.runs.memory import meminfo_kib

MAX_STEPS = 100_000
"""Most optimizer steps a command accepts: about a week of the CPU preset's ~6 s steps (the study's longest
run is the 4,000-step SFT stage)."""
HELD_OUT_TASKS = 1_000
"""Held-out evaluation tasks that exist (``training.specs.HELD_OUT``, ``generated:1000:0``; written out so
that parsing imports no torch, ``tests/test_cli_bounds.py`` holds them equal): the most ``--eval-limit``
can use."""
SHIPPED_POLICIES = ("embedded", "embedded-search", "embedded-small", "embedded-large")
"""The shipped policies' names (``policy.EMBEDDED_POLICIES``), each a folder beside ``embedded``."""
PROMPT_TOKENS = 32
"""Prompt tokens counted per sequence: the compact template's longest prompt (longer templates only make
the floor lower than the truth)."""
ROLLOUT_BYTES_PER_TOKEN = 20
"""Bytes a rollout keeps per token whatever the model: its id and mask (int64) and log-prob (fp32)."""
FLOAT_BYTES = 4
"""Bytes of one cached key or value element (the native engine's cache is fp32)."""
LOW_DISK = 1 << 20
"""Free bytes under which a failed write is put down to a full disk (1 MiB)."""


# ---------------------------------------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------------------------------------


def check_count(option: str, value: int | None, low: int = 1, high: int | None = None, why: str = "") -> None:
    """Refuse ``value`` outside ``[low, high]``, naming ``option`` and why the upper bound is what it is;
    an option left out (None) passes."""
    if value is None:
        return
    if value < low:
        raise ValueError(f"{option} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{option} must be at most {high:,} ({why}), got {value:,}")


def check_steps(option: str, value: int | None, low: int = 0) -> None:
    """``--steps`` within ``[low, MAX_STEPS]``."""
    check_count(option, value, low, MAX_STEPS, "the cap: about a week of 6-second steps")


def check_threads(option: str, value: int | None) -> None:
    """``--threads`` within ``[1, os.cpu_count()]``: more threads than CPUs only slows a run down."""
    check_count(option, value, 1, os.cpu_count() or 1, "the CPUs of this machine")


def check_eval_limit(option: str, value: int | None) -> None:
    """``--eval-limit`` within ``[1, HELD_OUT_TASKS]``."""
    check_count(option, value, 1, HELD_OUT_TASKS, "the held-out tasks that exist")


# ---------------------------------------------------------------------------------------------------
# Memory of a step's batch
# ---------------------------------------------------------------------------------------------------


def kv_bytes_per_token(layers: int, width: int, dtype_bytes: int = FLOAT_BYTES) -> int:
    """Bytes of keys and values one token holds across a model's ``layers`` (``width``: key/value heads x
    head size)."""
    return 2 * layers * width * dtype_bytes


def batch_memory_bytes(sequences: int, tokens: int, bytes_per_token: int) -> int:
    """The floor of a step's batch: ``sequences`` (prompts x group) x ``tokens`` (prompt + new) x the
    bytes each token holds (``kv_bytes_per_token`` + ``ROLLOUT_BYTES_PER_TOKEN``)."""
    return sequences * tokens * bytes_per_token


def model_kv_shape(config: dict) -> tuple[int, int] | None:
    """``(layers, key/value width)`` of a transformers ``config.json``, or None when it does not say."""
    layers, heads = config.get("num_hidden_layers"), config.get("num_attention_heads")
    hidden = config.get("hidden_size")
    if not all(isinstance(v, int) and v > 0 for v in (layers, heads, hidden)):
        return None
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    return layers, kv_heads * head_dim


def policy_bytes_per_token(policy_dir: Path | None) -> int:
    """Bytes per token of a policy's batch: its key/value cache when its folder's ``config.json`` says its
    shape, plus ``ROLLOUT_BYTES_PER_TOKEN`` (that alone for a Hugging Face id)."""
    shape = None
    if policy_dir is not None and (policy_dir / "config.json").is_file():
        try:
            shape = model_kv_shape(json.loads((policy_dir / "config.json").read_text()))
        except (OSError, ValueError, AttributeError):
            shape = None
    return ROLLOUT_BYTES_PER_TOKEN + (kv_bytes_per_token(*shape) if shape else 0)


def host_memory() -> int | None:
    """Bytes of memory available on this machine: ``MemAvailable`` of ``/proc/meminfo``, else
    ``os.sysconf``'s available pages; None where neither says."""
    available = meminfo_kib().get("MemAvailable")
    if available is not None:
        return available * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def device_memory(device_type: str) -> int | None:
    """Bytes free where a batch lives: the GPU's free memory for ``cuda`` (torch is loaded by then), else
    ``host_memory``."""
    if device_type == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    return host_memory()


def human_bytes(count: float) -> str:
    """``count`` bytes as B, KB, MB, GB, TB or PB (powers of 1024, one decimal)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(count) < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} PB"


def check_batch_memory(
    what: str, sequences: int, tokens: int, bytes_per_token: int, available: int | None
) -> None:
    """Refuse a batch whose floor (``batch_memory_bytes``) exceeds ``available`` bytes; ``what`` names the
    options that set it (``--prompts-per-step 32 x --group-size 8``). None available: not checked."""
    need = batch_memory_bytes(sequences, tokens, bytes_per_token)
    if available is not None and need > available:
        raise ValueError(
            f"{what}: {sequences:,} sequences x {tokens} tokens need at least {human_bytes(need)} for one "
            f"batch, more than the {human_bytes(available)} of memory available"
        )


# ---------------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------------


def shipped_policy_dir(name: str) -> Path | None:
    """The folder of a shipped policy name, a local folder as given, or None (a Hugging Face id)."""
    if name in SHIPPED_POLICIES:
        return EMBEDDED_CHECKPOINT_DIR.parent / name
    path = Path(name).expanduser()
    return path if path.is_dir() else None


def safetensors_problem(path: Path) -> str | None:
    """What is wrong with a ``.safetensors`` file's framing (header length, header JSON, data shorter than
    the header says), or None; its tensors' bytes are not read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"{path}: truncated ({size} bytes)"
        length = struct.unpack("<Q", head)[0]
        if length > size - 8:
            return f"{path}: truncated (header of {length:,} bytes in a {size:,}-byte file)"
        try:
            header = json.loads(handle.read(length))
        except (ValueError, UnicodeDecodeError):
            return f"{path}: corrupt (its header is not JSON)"
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    if ends and max(ends) > size - 8 - length:
        return f"{path}: truncated (tensor data ends at byte {max(ends):,} of {size - 8 - length:,})"
    return None


def check_policy_folder(option: str, folder: Path) -> None:
    """Refuse a policy folder ``transformers`` cannot load: ``config.json`` missing or not a JSON object
    naming its ``model_type``, no weight file (``*.safetensors``, ``*.bin``), a truncated safetensors."""
    config = folder / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"{option} {folder}: no config.json in the folder")
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{option} {folder}: config.json is not valid JSON ({err})") from err
    if not isinstance(data, dict) or "model_type" not in data:
        raise ValueError(f"{option} {folder}: config.json names no model_type")
    weights = sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")])
    if not weights:
        raise FileNotFoundError(f"{option} {folder}: no weights (*.safetensors or *.bin) in the folder")
    for file in weights:
        problem = safetensors_problem(file) if file.suffix == ".safetensors" else None
        if problem:
            raise ValueError(f"{option}: {problem}")


def _existing_ancestor(path: Path) -> Path:
    """``path`` or its nearest existing parent."""
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_file(option: str, path: str | Path | None) -> None:
    """Refuse an output file whose folder does not exist or cannot be written, or that is a folder."""
    if path is None:
        return
    path = Path(path).expanduser()
    if path.is_dir():
        raise IsADirectoryError(f"{option} {path}: is a folder; give a file name")
    folder = path.absolute().parent
    if not folder.is_dir():
        raise FileNotFoundError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"{option} {path}: folder {folder} is not writable")


def check_output_folder(option: str, path: str | Path | None) -> None:
    """Refuse an output folder that is a file, or whose nearest existing folder cannot be written."""
    if path is None:
        return
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{option} {path}: is a file, not a folder")
    base = _existing_ancestor(path)
    if not base.is_dir() or not os.access(base, os.W_OK):
        raise PermissionError(f"{option} {path}: {base} is not a writable folder")


# ---------------------------------------------------------------------------------------------------
# A full disk
# ---------------------------------------------------------------------------------------------------


def free_bytes(path: Path) -> int | None:
    """Free bytes of the file system holding ``path`` (or its nearest existing parent)."""
    try:
        return shutil.disk_usage(_existing_ancestor(Path(path))).free
    except OSError:
        return None


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from or during, innermost last."""
    seen: list[BaseException] = []
    while err is not None and err not in seen:
        seen.append(err)
        err = err.__cause__ or err.__context__
    return seen


def disk_full(err: BaseException, folders: Iterable[Path], by_free_space: bool = True) -> str | None:
    """Where a failure came from a full disk, or None: the file of an ``ENOSPC`` error, else the first of
    ``folders`` (a command's outputs) when the error says so (safetensors wraps it in its own text) or,
    with ``by_free_space``, when a folder's file system has under ``LOW_DISK`` free (``torch.save`` and a
    truncated notebook do not say why)."""
    folders = [Path(f) for f in folders]
    chain = _chain(err)
    for link in chain:
        if isinstance(link, OSError) and link.errno == errno.ENOSPC:
            return str(link.filename or (folders[0] if folders else "the output folder"))
    text = " ".join(str(link) for link in chain)
    if "No space left on device" in text or "os error 28" in text:
        return str(folders[0]) if folders else "the output folder"
    for folder in folders if by_free_space else ():
        free = free_bytes(folder)
        if free is not None and free < LOW_DISK:
            return str(folder)
    return None
