"""The ``labtools`` command line: a stable contract that scripts and tests rely on.

Each subcommand lives in its own module, which exposes ``add_parser(subparsers)``; that
function registers the subcommand and sets ``handler`` (``args -> exit code``). The
registry below lists them explicitly. User errors (:class:`LabtoolsError`) print one line
on stderr and exit with status 2; Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from labtools import __version__
from labtools.errors import LabtoolsError

#: subcommand name -> module that implements it (imported only when needed)
COMMANDS = {
    "expect": "labtools.commands.expect_cmd",
    "parse": "labtools.commands.parse_cmd",
    "run": "labtools.commands.run_cmd",
    "notebooks": "labtools.commands.notebooks_cmd",
    "results": "labtools.commands.results_cmd",
    "clean": "labtools.commands.clean_cmd",
    "vm": "labtools.commands.vm_cmd",
    "doctor": "labtools.commands.doctor_cmd",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="labtools",
        description="Network measurement lab kit for Mininet: expected values, real "
        "measurements, parsers and verdicts.",
    )
    parser.add_argument("--version", action="version", version=f"labtools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``labtools``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return int(args.handler(args) or 0)
    except LabtoolsError as err:
        print(f"labtools {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"labtools {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
