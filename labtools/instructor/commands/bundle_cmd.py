"""``labtools bundle``: the student edition of the kit, for a course to hand out.

    labtools bundle --students DIR [--force]

Writes into ``DIR`` the student notebooks (``notebooks/``), the package and the
topologies, the README and the students' documentation, without ``solutions/`` and
without the source of what a lab asks a student to write; the package holds the edition's
marker, so that the kit knows it is on a course. What is left out, compiled or stubbed is
listed in :mod:`labtools.instructor.student_edition`. ``DIR`` must be empty (``--force`` writes
over it); nothing is written through a symbolic link. Built from the kit's source folder
(a checkout).
"""

from __future__ import annotations

import argparse
from typing import Any

from labtools.commands import options
from labtools.errors import InputError


def add_parser(sub: Any) -> None:
    """Register ``labtools bundle``."""
    p = sub.add_parser("bundle", help="write the student edition of the kit",
                       description="Write the student edition (notebooks, package, "
                       "topologies, students' docs; no solutions, no reference "
                       "implementations of what a lab asks a student to write).")
    p.add_argument("--students", metavar="DIR", type=options.path, required=True,
                   help="the folder to write the student edition into (empty)")
    p.add_argument("--force", action="store_true",
                   help="write over a folder that is not empty")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the student edition; 0."""
    from labtools.instructor.student_edition import (
        BYTECODE_ONLY,
        LEFT_OUT,
        STUBBED,
        write_edition,
    )
    from labtools.paths import checkout_root

    root = checkout_root()
    if root is None:
        raise InputError("labtools bundle needs the kit's source folder (run it from a "
                         "checkout of the kit, installed with pip install -e)")
    bundle = write_edition(root, args.students, force=args.force)
    print(f"student edition in {bundle.folder}: {len(bundle.copied)} files, "
          f"{len(bundle.compiled)} as bytecode only, {len(bundle.stubbed)} stubbed")
    print("left out: " + ", ".join(o.path for o in LEFT_OUT))
    print("bytecode only: " + ", ".join(o.path for o in BYTECODE_ONLY))
    print("stubbed: " + ", ".join(f"{s.path} {s.function}()" for s in STUBBED))
    for link in bundle.skipped_links:
        print(f"not copied (a symbolic link): {link}")
    return 0
