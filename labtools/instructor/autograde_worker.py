"""One of ``labtools autograde``'s workers: nbgrader's autograde for one submission after
the other, in one process.

``python -m labtools.instructor.autograde_worker REPLY_FD ASSIGNMENT [nbgrader options]`` in the
course folder. It sets nbgrader's autograde up once, as ``nbgrader autograde
--CourseDirectory.assignment_id=ASSIGNMENT [options]`` does (the course's
nbgrader_config.py and Jupyter's config folders, then the options), then reads requests
from its standard input, one JSON line each, ``{"student": ID, "log": PATH}``, and grades
that student's submission with nbgrader's own ``Autograde`` converter, as ``nbgrader
autograde --student ID`` would, writing what it says (nbgrader's log, the kernels' output)
to PATH. After each it writes a JSON line to ``REPLY_FD``: ``{"student", "ok", "cpu_s"}``.
It ends when its input closes.

nbgrader's import and configuration (about 1.5 CPU s) and the kernel fork server's imports
(:mod:`labtools.instructor.kernel_fork_manager`, about 1.4 CPU s) are paid once per worker
instead of once per submission. A submission's ``cpu_s`` counts this process and what it waited for,
the fork server's own time and that of the kernels it waited for, from the end of the
previous submission: the first one carries the worker's start, and the sum over the
submissions is everything the worker cost.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from typing import IO, Any, Callable, Dict, List, Optional


def _own_cpu_s() -> float:
    """CPU seconds of this process and of the processes it waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


class CpuMeter:
    """Everything this worker has cost, CPU seconds: this process and what it waited for,
    its kernel fork server and the kernels the server waited for."""

    def __init__(self) -> None:
        self.server_s = 0.0  # the server's last figure (kept if it is gone)
        self.total_s = 0.0

    def since_last(self) -> float:
        """CPU seconds spent since the previous call (the first: since the start)."""
        from labtools.instructor import kernel_fork_manager
        from labtools.system import procfs

        server = kernel_fork_manager.current_server()
        seconds = None if server is None else procfs.cpu_seconds(server.proc.pid,
                                                                 children=True)
        if seconds is not None:
            self.server_s = seconds
        total = _own_cpu_s() + self.server_s
        spent, self.total_s = total - self.total_s, total
        return spent


def _log_to(path: str) -> None:
    """Send this process's standard output and error (nbgrader's log, and what the kernels
    it starts print) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


class SchemasCheckedOnce:
    """``jsonschema`` as nbgrader's cell-metadata check calls it, ``validate(instance,
    schema)``, with each schema checked against its meta-schema once instead of at every
    cell: nbgrader checks every cell of a notebook twice while autograding it, and
    ``jsonschema.validate`` checks the schema itself each time (about 0.5 CPU s of a whole
    submission's 12). The same errors are raised; anything else is ``jsonschema``'s own."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._validators: Dict[str, Any] = {}  # a schema, as JSON text -> its validator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def validate(self, instance: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        """``jsonschema.validate``; raises its ``ValidationError`` or ``SchemaError``."""
        try:
            key = json.dumps(schema, sort_keys=True)  # nbgrader reads it anew each notebook
        except (TypeError, ValueError):
            key = ""
        if args or kwargs or not key:
            self._module.validate(instance, schema, *args, **kwargs)
            return
        validator = self._validators.get(key)
        if validator is None:
            kind = self._module.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = self._validators[key] = kind(schema)
        error = self._module.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


#: the nbgrader versions the two shortcuts (:func:`check_schemas_once`, one application
#: reused by :func:`grade_one`) were checked against: tests/instructor/test_autograde_worker.py runs
#: them beside nbgrader's own path with the installed version (pyproject.toml bounds it)
SHORTCUT_VERSIONS = ("0.9.",)


def shortcuts_apply(version: Optional[str] = None) -> bool:
    """Whether the worker reaches past nbgrader's public API: ``LABTOOLS_NBGRADER_SHORTCUTS``
    is not 0 and nbgrader's ``version`` (default: the installed one) is one of
    :data:`SHORTCUT_VERSIONS`. Otherwise each submission gets an application of its own and
    nbgrader's own metadata check, as ``nbgrader autograde --student ID`` would."""
    from labtools import settings

    if version is None:
        import nbgrader

        version = str(nbgrader.__version__)
    return settings.current().nbgrader_shortcuts and version.startswith(SHORTCUT_VERSIONS)


def check_schemas_once() -> None:
    """Have nbgrader's cell-metadata check use :class:`SchemasCheckedOnce` (this process
    only: a worker's; where nbgrader has no such check, nothing changes)."""
    from nbgrader.nbgraderformat import common

    module = getattr(common, "jsonschema", None)
    if module is not None and not isinstance(module, SchemasCheckedOnce):
        common.jsonschema = SchemasCheckedOnce(module)


def make_app(assignment: str, options: List[str]) -> Any:
    """nbgrader's autograde application, configured as on its command line (its check of
    the cells' metadata: :func:`check_schemas_once`, where :func:`shortcuts_apply`)."""
    from nbgrader.apps.autogradeapp import AutogradeApp

    if shortcuts_apply():
        check_schemas_once()
    app = AutogradeApp()
    app.initialize([f"--CourseDirectory.assignment_id={assignment}", *options])
    return app


def grade_one(app: Any, student: str) -> bool:
    """Autograde ``student``'s submission as ``nbgrader autograde --student`` does (its own
    ``start``: the same checks and converter); True when nbgrader finished without an
    error."""
    app.coursedir.student_id = student
    try:
        app.start()
        return True
    except SystemExit as stop:  # nbgrader's fail() and failed conversions: it logged why
        return stop.code in (0, None)
    except Exception:  # noqa: BLE001 - one submission's failure is that submission's
        traceback.print_exc()
        return False
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def serve(new_app: Callable[[], Any], requests: IO[str], replies: IO[str]) -> None:
    """Grade each requested submission, reply after each, until ``requests`` ends: with one
    application from ``new_app`` reused where :func:`shortcuts_apply`, else a new one each."""
    meter = CpuMeter()
    reuse = shortcuts_apply()
    app = new_app() if reuse else None
    for line in requests:
        request: Dict[str, str] = json.loads(line)
        _log_to(request["log"])
        ok = grade_one(app if app is not None else new_app(), request["student"])
        replies.write(json.dumps({"student": request["student"], "ok": ok,
                                  "cpu_s": round(meter.since_last(), 3)}) + "\n")
        replies.flush()


def main(argv: Optional[List[str]] = None) -> int:
    """``REPLY_FD ASSIGNMENT [nbgrader options]``; 0 when its input ended."""
    args = sys.argv[1:] if argv is None else argv
    replies = os.fdopen(int(args[0]), "w", buffering=1)
    serve(lambda: make_app(args[1], args[2:]), sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
