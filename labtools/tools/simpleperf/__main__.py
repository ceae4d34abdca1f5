"""``simpleperf`` / ``python -m labtools.tools.simpleperf``: the kit's iperf-like TCP tool.

Exit status: 0 success, 1 runtime failure (port in use, server unreachable, connection
lost), 2 usage error (bad option or value), 130 after SIGINT (Ctrl-C), 143 after SIGTERM.
Errors print one line on stderr, ``simpleperf: error: REASON``; with ``--json`` an
``{"type": "error", ...}`` record is printed on stdout too.
"""

from __future__ import annotations

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


def _fail(message: str, status: int, reporter: Optional[Reporter], role: str) -> int:
    if reporter is not None and reporter.json_mode:
        reporter.emit({"type": "error", "role": role, "message": message})
    print(f"simpleperf: error: {message}", file=sys.stderr, flush=True)
    return status


def main(argv: Optional[List[str]] = None) -> int:
    """Run simpleperf with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    try:
        opts = parse_options(argv)
    except InputError as err:
        return _fail(str(err), 2, None, "")
    except SystemExit as done:  # --help and --version
        return int(done.code or 0)
    reporter = Reporter(opts.json, opts.unit)
    stop = StopFlag()
    stop.install()
    try:
        if opts.mode == "server":
            return Server(opts, reporter, stop).run()
        return Client(opts, reporter, stop).run()
    except LabtoolsError as err:
        return _fail(str(err), stop.exit_status(1), reporter, opts.mode)
    except BrokenPipeError:
        return 1
    finally:
        stop.restore()


if __name__ == "__main__":
    sys.exit(main())
