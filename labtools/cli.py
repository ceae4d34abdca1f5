"""The ``labtools`` command line: a stable contract that scripts and tests rely on.

Each subcommand lives in its own module, which exposes ``add_parser(subparsers)``; that
function registers the subcommand and sets ``handler`` (``args -> exit code``). The
registry below lists them explicitly; the instructor's subcommands live in the instructor's
wing (:mod:`labtools.instructor.commands`), which the student edition leaves out: there
such a command says so in one line and exits with status 2. User errors
(:class:`LabtoolsError`, and arguments the parser refuses) print one line on stderr and
exit with status 2; so does output that cannot be written (``> /dev/full``: "cannot write
to standard output"). A reader that closes the pipe early (``| head``) ends the command
quietly with status 0; Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType
from typing import Any, List, NoReturn, Optional, TextIO

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
    "class-report": "labtools.instructor.commands.class_report_cmd",
    "shell": "labtools.commands.shell_cmd",
    "answer-key": "labtools.instructor.commands.answer_key_cmd",
    "bundle": "labtools.instructor.commands.bundle_cmd",
    "autograde": "labtools.instructor.commands.autograde_cmd",
    "course": "labtools.instructor.commands.course_cmd",
    "demo": "labtools.commands.demo_cmd",
}
#: the package of the instructor's subcommands, which the student edition leaves out
INSTRUCTOR_WING = "labtools.instructor"


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the kit's one-line errors (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class OutputFailed(Exception):
    """Standard output could not be written: ``closed`` when the reader went away."""

    def __init__(self, err: OSError) -> None:
        self.closed = isinstance(err, BrokenPipeError)
        super().__init__(err.strerror or str(err))


class CheckedOutput:
    """Standard output whose write errors are :class:`OutputFailed`, told apart from an
    error of anything else the command does (it may write files and pipes of its own)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as err:
            raise OutputFailed(err) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise OutputFailed(err) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = ArgumentParser(
        prog="labtools",
        description="Network measurement lab kit for Mininet: expected values, real "
        "measurements, parsers and verdicts.",
    )
    parser.add_argument("--version", action="version", version=f"labtools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS.items():
        module = _command_module(module_name)
        if module is None:
            _add_absent(sub, name)
        else:
            module.add_parser(sub)
    return parser


def _command_module(module_name: str) -> Optional[ModuleType]:
    """The module of a subcommand, or None where it is an instructor's that is not there at
    all (the student edition has no :data:`INSTRUCTOR_WING`); any other module that fails
    to import fails."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if module_name.startswith(INSTRUCTOR_WING + ".") and (
                module_name == missing or module_name.startswith(missing + ".")):
            return None
        raise


def _add_absent(sub: Any, name: str) -> None:
    """Register ``name`` as a command this copy of the kit does not have (the instructor's,
    in the student edition): whatever its arguments, ``--help`` too, it says so in one line
    on stderr and exits with status 2."""
    p = sub.add_parser(name, add_help=False, prefix_chars="\0",
                       help="an instructor's command: not part of the student edition")
    p.add_argument("words", nargs="*")
    p.set_defaults(handler=lambda _args: _absent(name))


def _absent(name: str) -> int:
    print(f"`labtools {name}` is an instructor's command: not part of the student edition",
          file=sys.stderr)
    return 2


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``labtools``; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    stdout = sys.stdout
    sys.stdout = CheckedOutput(stdout)
    try:
        return _run(words)
    except OutputFailed as err:
        _discard_output(stdout)
        if err.closed:
            return 0
        command = next((w for w in words if w in COMMANDS), "")
        print(f"labtools{' ' + command if command else ''}: error: cannot write to standard "
              f"output: {err}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = stdout


def _run(argv: List[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    finally:
        sys.stdout.flush()  # --help and --version print, then exit
    args.argv = argv
    try:
        status = int(args.handler(args) or 0)
        sys.stdout.flush()
        return status
    except LabtoolsError as err:
        print(f"labtools {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"labtools {args.command}: interrupted", file=sys.stderr)
        return 130


def _discard_output(stdout: TextIO) -> None:
    """Send what is still buffered for standard output to /dev/null, so that the flush at
    exit cannot fail again (Python would print 'Exception ignored' and exit with 120)."""
    if stdout is not sys.__stdout__:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # no file descriptor to replace: nothing will be flushed at exit


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
