"""The ``countdown-study`` command line: ``sft``, ``teacher``, ``train``, ``eval``, ``run``, ``runs``,
``paper``.

Each subcommand is a module of this package (``COMMANDS``) providing ``configure_parser(parser)`` and
``cli_main(args) -> int``; the library never imports the command line. A command module imports the
library it runs inside ``cli_main``, so parsing (``--help``, option mistakes) imports no torch and
answers at once (``tests/test_cli.py``).

A mistake (a bad option, a config the library refuses, a missing or unreadable file, a finished run
that is corrupt, a run another process holds) is one line on stderr,
``countdown-study <command>: error: <what is wrong>``, and exit status 2; ``--debug`` shows the
traceback instead. Sizes are bounded by the machine and the data, and output paths checked, before any
work (``cli.bounds``); a write that fails on a full disk is one line naming where. Every ``--help`` shows
each option's default.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

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
    ("countdown_study.runs.provenance", "DirtyTreeError"),
    ("yaml", "YAMLError"),
    ("datasets.exceptions", "DatasetsError"),
)
"""More exceptions reported as one line, by module and name so that parsing imports none of them: a
finished run refused as corrupt, a run another process holds, a run refused on a dirty tree, text that is
not YAML, a data set that does not load."""


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


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that ends each option with ``(default: X)``, unless its text already names its default (as
    every option whose default is None or set elsewhere does), or it is a flag."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        unset = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or unset or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block), exit status 2, and whose
    help shows the defaults (``DefaultsFormatter``)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


DESCRIPTION = f"The countdown-study command line: {', '.join(COMMANDS)}."
"""The first line of ``countdown-study --help``: every command, in plain text."""


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each subcommand's module adds its own arguments."""
    parser = OneLineParser(prog="countdown-study", description=DESCRIPTION)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.configure_parser(sub_parser)
        sub_parser.set_defaults(_module=module)
    return parser


def interactive() -> bool:
    """Whether standard error is a terminal: progress bars show there, not in logs or notebooks."""
    return sys.stderr.isatty()


def hide_library_bars_unless(show: bool) -> None:
    """Hide transformers' own bars ("Loading weights") where the command hides its own: a log or a notebook
    gets none (``policy.hide_library_bars``). Loads torch: call it after the torch-free checks."""
    if not show:
        from countdown_study.policy import hide_library_bars

        hide_library_bars()


def ship_options(parser: argparse.ArgumentParser, ship_help: str, record: str) -> None:
    """``--ship`` (``ship_help``) and, exclusive with it, ``--reproduce``: re-make the shipped checkpoint
    whose training record is the file ``record`` (``training.reproduce``)."""
    shipping = parser.add_mutually_exclusive_group()
    shipping.add_argument("--ship", action="store_true", help=ship_help)
    shipping.add_argument(
        "--reproduce",
        action="store_true",
        help="train the shipped checkpoint's recorded config again from a clean commit (into "
        f"results/runs.reproduce unless --root), and record in its {record} whether the weights are "
        "bit-identical (exit 1 when they differ)",
    )


def output_folders(args: argparse.Namespace) -> list[Path]:
    """Where a command writes (its module's ``output_folders(args)``; none when it does not say)."""
    folders = getattr(args._module, "output_folders", None)
    return [Path(f) for f in folders(args)] if folders else []


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``countdown-study`` script. OpenMP's wait policy is set first, before any command
    imports torch (``runs.threads.set_wait_policy``: ``PASSIVE`` unless the user set one)."""
    from countdown_study.cli.bounds import disk_full
    from countdown_study.runs.threads import set_wait_policy

    set_wait_policy()
    parser = build_parser()
    args = parser.parse_args(argv)
    prefix = f"{parser.prog} {args.command}: error:"
    try:
        return int(args._module.cli_main(args) or 0)
    except Exception as err:  # a full disk first: a failed write often raises something unrelated
        if args.debug:
            raise
        unexplained = not isinstance(err, user_errors()) or type(err).__name__ == "NotJSONError"
        where = disk_full(err, output_folders(args), by_free_space=unexplained)
        if where is not None:
            print(f"{prefix} no space left on device writing {where} ({one_line(err)})", file=sys.stderr)
            return 2
        if not isinstance(err, user_errors()):
            raise
        print(f"{prefix} {one_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
