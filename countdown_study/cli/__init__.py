"""The ``countdown-study`` command line: ``sft``, ``train``, ``eval``, ``run``.

Each subcommand lives beside the code it drives: the module named in ``COMMANDS`` provides
``configure_parser(parser)`` and ``cli_main(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "sft": ("countdown_study.training.sft", "train the embedded policy on solver-made traces"),
    "train": ("countdown_study.training.loop", "RLOO training from a policy with a sampler"),
    "eval": (
        "countdown_study.evaluation.evaluate",
        "evaluate a policy: pass@k, mean score, well-formed rate",
    ),
    "run": ("countdown_study.study.pipeline", "execute the study notebooks in order with papermill"),
}


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each subcommand's module adds its own arguments."""
    parser = argparse.ArgumentParser(prog="countdown-study", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.configure_parser(sub_parser)
        sub_parser.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``countdown-study`` script."""
    args = build_parser().parse_args(argv)
    return int(args._module.cli_main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
