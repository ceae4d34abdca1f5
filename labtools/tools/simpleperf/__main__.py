"""``simpleperf`` / ``python -m labtools.tools.simpleperf``: the kit's iperf-like TCP tool.

Exit status: 0 success, 1 runtime failure (port in use, server unreachable, connection
lost, a transfer cut short, standard output not writable), 2 usage error (bad option or
value, a host name that cannot be resolved), 130 after SIGINT (Ctrl-C), 143 after SIGTERM.
Errors print one line on stderr, ``simpleperf: error: REASON``; with ``--json`` an
``{"type": "error", ...}`` record is printed on stdout too. A closed standard output pipe
(its reader left) ends the run quietly with status 1.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import List, Optional

if not __package__:  # run as a folder, ``python -S .../labtools/tools/simpleperf`` (as the kit
    # does: without site-packages, a second less per start under software emulation): the
    # folder that holds ``labtools`` replaces this one on the path (simpleperf needs only
    # the standard library and the kit)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__)))))

from labtools.errors import InputError, LabtoolsError  # noqa: E402
from labtools.tools.simpleperf.client import Client  # noqa: E402
from labtools.tools.simpleperf.options import parse_options  # noqa: E402
from labtools.tools.simpleperf.report import Reporter  # noqa: E402
from labtools.tools.simpleperf.server import Server  # noqa: E402
from labtools.tools.simpleperf.stopping import StopFlag  # noqa: E402


def _say(message: str) -> None:
    """One line on standard error (nothing if standard error is gone too)."""
    try:
        print(f"simpleperf: error: {message}", file=sys.stderr, flush=True)
    except OSError:
        pass


def _fail(message: str, status: int, reporter: Optional[Reporter], role: str) -> int:
    if reporter is not None and reporter.json_mode:
        reporter.emit({"type": "error", "role": role, "message": message})
    _say(message)
    return status


def _output_failed(err: OSError) -> int:
    """Exit status 1 after standard output failed: one line for a full disk or an I/O
    error, nothing for a closed pipe (its reader left). Standard output is pointed at
    /dev/null so that Python's last flush at exit cannot fail again."""
    if err.errno != errno.EPIPE:
        _say(f"cannot write to standard output: {err.strerror or err}")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 1


def _usage_output(status: int) -> int:
    """``--help`` and ``--version`` printed; their output flushed (it may fail)."""
    try:
        sys.stdout.flush()
    except OSError as err:
        return _output_failed(err)
    return status


def main(argv: Optional[List[str]] = None) -> int:
    """Run simpleperf with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    try:
        opts = parse_options(argv)
    except InputError as err:
        return _fail(str(err), 2, None, "")
    except SystemExit as done:  # --help and --version
        return _usage_output(int(done.code or 0))
    except OSError as err:  # --help or --version could not be written
        return _output_failed(err)
    stop = StopFlag()
    reporter = Reporter(opts.json, opts.unit, on_failure=stop.set)
    stop.install()
    try:
        if opts.mode == "server":
            status = Server(opts, reporter, stop).run()
        else:
            status = Client(opts, reporter, stop).run()
    except InputError as err:
        status = _fail(str(err), 2, reporter, opts.mode)
    except LabtoolsError as err:
        status = 1 if reporter.failed else _fail(str(err), stop.exit_status(1), reporter,
                                                  opts.mode)
    finally:
        stop.restore()
    if reporter.failed is not None:
        return _output_failed(reporter.failed)
    return status


if __name__ == "__main__":
    sys.exit(main())
