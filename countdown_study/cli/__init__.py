"""The ``countdown-study`` command line: ``sft``, ``train``, ``eval``, ``run``.

Each subcommand is a module of this package (``COMMANDS``) providing ``configure_parser(parser)`` and
``cli_main(args) -> int``; the library never imports the command line.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "sft": ("countdown_study.cli.sft", "train the embedded policy on solver-made traces"),
    "train": ("countdown_study.cli.train", "RLOO training from a policy with a sampler"),
    "eval": (
        "countdown_study.cli.eval",
        "evaluate a policy: pass@k, mean score, well-formed rate",
    ),
    "run": ("countdown_study.cli.run", "execute the study notebooks in order with papermill"),
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
