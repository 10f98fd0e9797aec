"""The ``countdown-study`` command line: ``sft``, ``train``, ``eval``, ``run``, ``runs``, ``paper``.

Each subcommand is a module of this package (``COMMANDS``) providing ``configure_parser(parser)`` and
``cli_main(args) -> int``; the library never imports the command line. A command module imports the
library it runs inside ``cli_main``, so parsing (``--help``, option mistakes) imports no torch and
answers at once (``tests/test_cli.py``).

A mistake (a bad option, a config the library refuses, a missing or unreadable file, a finished run
that is corrupt, a run another process holds) is one line on stderr,
``countdown-study <command>: error: <what is wrong>``, and exit status 2; ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "sft": ("countdown_study.cli.sft", "train the embedded policy on solver-made traces"),
    "teacher": ("countdown_study.cli.teacher", "train report 004's task proposer (the teacher) and ship it"),
    "train": ("countdown_study.cli.train", "RLOO training from a policy with a sampler"),
    "eval": (
        "countdown_study.cli.eval",
        "evaluate a policy: pass@k, mean score, well-formed rate",
    ),
    "run": ("countdown_study.cli.run", "execute the study notebooks in order with papermill"),
    "runs": (
        "countdown_study.cli.runs",
        "the run store: verify its finished runs, or the study grid's status",
    ),
    "paper": ("countdown_study.cli.paper", "the paper from results/: tables, figures, macros, then the PDF"),
}


USER_ERRORS = (ValueError, TypeError, KeyError, OSError)
"""Exceptions a command reports as one line (a config or file the library refused), not a traceback."""
LIBRARY_ERRORS = (
    ("countdown_study.runs.store", "RunCorruptError"),
    ("countdown_study.runs.store", "RunBusyError"),
    ("yaml", "YAMLError"),
    ("datasets.exceptions", "DatasetsError"),
)
"""More exceptions reported as one line, by module and name so that parsing imports none of them: a
finished run refused as corrupt, a run another process holds, text that is not YAML, a data set that
does not load."""


def user_errors() -> tuple[type[BaseException], ...]:
    """``USER_ERRORS`` and the ``LIBRARY_ERRORS`` of modules loaded so far (an error of a module never
    loaded cannot have been raised)."""
    loaded = [getattr(sys.modules[module], name) for module, name in LIBRARY_ERRORS if module in sys.modules]
    return (*USER_ERRORS, *loaded)


def one_line(err: BaseException) -> str:
    """What an error says, on one line: its lines joined, a ``KeyError``'s key without quotes, its type
    when it says nothing."""
    message = err.args[0] if isinstance(err, KeyError) and err.args else err
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return " ".join(lines) or type(err).__name__


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each subcommand's module adds its own arguments."""
    parser = OneLineParser(prog="countdown-study", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.configure_parser(sub_parser)
        sub_parser.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``countdown-study`` script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._module.cli_main(args) or 0)
    except Exception as err:
        if args.debug or not isinstance(err, user_errors()):
            raise
        print(f"{parser.prog} {args.command}: error: {one_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
