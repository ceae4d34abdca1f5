"""``labtools notebooks``: student versions from solutions, checks, and execution.

    labtools notebooks build              # solutions/*.ipynb -> notebooks/*.ipynb
    labtools notebooks check              # non-zero exit when a student notebook is stale
    labtools notebooks execute [FILE...]  # run solutions top to bottom (in the VM if needed)
    labtools notebooks workspace [DIR]    # a student's workspace: the student notebooks only

``workspace`` is what the student's lab opens (``make lab``, the lab VM's service): a folder
(``workspace`` by default) with a copy of each student notebook and nothing else, so that
the lab's file browser shows no ``solutions/``. A notebook already there is the student's
work and is never overwritten; a new lab is added. Nothing is written outside the folder
or through a link: a symbolic link in a notebook's place is left alone and named on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from labtools.commands import options
from labtools.errors import InputError, LabtoolsError

#: seconds per cell when neither the cell nor --timeout says otherwise
DEFAULT_CELL_TIMEOUT_S = 900


def add_parser(sub: Any) -> None:
    """Register ``labtools notebooks``."""
    p = sub.add_parser("notebooks", help="build, check or execute the lab notebooks",
                       description="Generate student notebooks from solutions/, check them, "
                       "or run notebooks top to bottom.")
    p.add_argument("action", choices=("build", "check", "execute", "workspace"))
    p.add_argument("files", nargs="*", metavar="FILE", type=options.path,
                   help="execute: the notebooks to run (default: every solution); "
                   "workspace: its folder (default: workspace)")
    p.add_argument("--solutions", default=Path("solutions"), type=options.path,
                   help="default: solutions")
    p.add_argument("--students", default=Path("notebooks"), type=options.path,
                   help="default: notebooks")
    p.add_argument("--timeout", type=options.whole_seconds, default=None,
                   help="execute: seconds per cell unless the cell declares its own "
                   f"(default {DEFAULT_CELL_TIMEOUT_S})")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Do the action; 0 when all is well."""
    from labtools.teach import notebook_files as notebooks

    if args.action == "workspace":
        return _workspace(args)
    if args.action != "execute" and (args.files or args.timeout is not None):
        raise InputError(f"FILE and --timeout are for execute, not {args.action}")
    if args.action == "build":
        changed = notebooks.build(args.solutions, args.students)
        print(f"{len(changed)} student notebook(s) updated" if changed else "all up to date")
        for path in changed:
            print(f"  {path}")
        return 0
    if args.action == "check":
        problems = notebooks.stale(args.solutions, args.students)
        for line in problems:
            print(line, file=sys.stderr)
        print("student notebooks are up to date" if not problems else
              f"{len(problems)} problem(s)")
        return 1 if problems else 0
    return _execute(args)


def _execute(args: argparse.Namespace) -> int:
    from labtools.lab.placement import runs_natively
    from labtools.system.vm import run_in_vm
    from labtools.teach import notebook_files as notebooks

    files = [Path(f) for f in args.files] or [
        args.solutions / n for n in notebooks.notebook_names(args.solutions)]
    if not runs_natively():  # the course's labs: their links have delays
        return run_in_vm([sys.executable, "-m", "labtools.cli", *args.argv])
    failed = 0
    for path in files:
        print(f"executing {path}...", file=sys.stderr, flush=True)
        try:
            executed = notebooks.execute(path, timeout_s=args.timeout or DEFAULT_CELL_TIMEOUT_S)
        except LabtoolsError as err:
            failed += 1
            print(f"FAILED {err}", file=sys.stderr)
        else:
            print(f"ok {path} ({notebooks.timing_line(executed)})", flush=True)
    return 1 if failed else 0


def _workspace(args: argparse.Namespace) -> int:
    from labtools.teach import notebook_files as notebooks

    if args.timeout is not None or len(args.files) > 1:
        raise InputError("workspace takes one folder and no --timeout")
    folder = Path(args.files[0]) if args.files else Path("workspace")
    done = notebooks.make_workspace(args.students, folder)
    print(f"student workspace {folder}: {len(done.added)} notebook(s) added, "
          f"{len(done.kept)} kept as they are (the student's work)"
          + (f", {len(done.links)} symbolic link(s) left alone" if done.links else ""))
    for link in done.links:
        print(f"labtools notebooks: {link} is a symbolic link: left alone (nothing is "
              "written through a link)", file=sys.stderr)
    return 0
