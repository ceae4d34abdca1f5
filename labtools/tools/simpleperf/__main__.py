"""``simpleperf`` / ``python -m labtools.tools.simpleperf``: the kit's iperf-like TCP tool.

Exit status: 0 success, 1 runtime failure (port in use, server unreachable, connection
lost), 2 usage error (bad option or value), 130 after SIGINT (Ctrl-C), 143 after SIGTERM.
Errors print one line on stderr, ``simpleperf: error: REASON``; with ``--json`` an
``{"type": "error", ...}`` record is printed on stdout too.
"""

from __future__ import annotations

import sys
from typing import List, Optional

from labtools.errors import InputError, LabtoolsError
from labtools.tools.simpleperf.client import Client
from labtools.tools.simpleperf.options import parse_options
from labtools.tools.simpleperf.report import Reporter
from labtools.tools.simpleperf.server import Server
from labtools.tools.simpleperf.stopping import StopFlag


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
