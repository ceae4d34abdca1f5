"""A student's own simpleperf as the client of the simpleperf probe (lab 7, and the labs
after it that measure with simpleperf).

``probes.simpleperf(lab, src, dst, program="mysimpleperf")`` runs the student's program (a
folder with ``__main__.py``, or a file, started with this Python) as the client on ``src``,
against the kit's simpleperf server on ``dst``. The student's client decides what is sent
(``-t``, ``-i``, ``-P``) and speaks the kit's protocol
(:mod:`labtools.tools.simpleperf.protocol`); the kit's server counts what arrives, and its
JSON output is what is parsed and judged, so the verdicts stand on the same count as with
the kit's own client. A transfer the kit's server did not see end with the client's END
record is the tool's error, with the client's last line.

The program runs with a Python that cannot import the kit
(:mod:`labtools.lab.kit_free_python`): a client that hands its work to the kit fails, and
the tool's error says so in one line.

Kept with the measurement (``extra``, saved and replayed like the rest): the report the
client printed (``client_report``) and a digest of the program's source
(``program_sha256``), so that a graded check can tell whether the program changed since
it measured.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Union

from labtools.errors import InputError, LabtoolsError, ToolError
from labtools.judge.measurement import JudgeContext, Measurement, ProbeCall, judge_parsed
from labtools.lab import kit_free_python
from labtools.lab.machine_watch import LatenessWatch
from labtools.lab.processes import (
    TIMEOUT_MARGIN_S,
    ToolOutput,
    ask_to_stop,
    last_line,
    parse_output,
    wait_output,
)
from labtools.results.records import utc_now
from labtools.tools import args as toolargs

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.session import LabSession

Program = Union[str, Path]


def program_argv(program: Program) -> List[str]:
    """How the kit starts a student's program: with a Python that cannot import the kit,
    without bytecode files, isolated, without ``site`` (the standard library only, as
    lab 7 asks; no ``exit()`` builtin), the program's absolute path
    (:func:`labtools.lab.kit_free_python.argv`). Run it in
    :func:`labtools.lab.kit_free_python.environment`."""
    return kit_free_python.argv(Path(program))


def program_files(program: Program) -> List[Path]:
    """The program's Python source: the file, or the folder's ``.py`` files by name.

    Raises:
        InputError: no such file or folder, or a folder without ``__main__.py``.
    """
    path = Path(program)
    if path.is_dir():
        if not (path / "__main__.py").is_file():
            raise InputError(f"{path} has no __main__.py: Python cannot run it")
        return sorted(path.glob("*.py"))
    if not path.is_file():
        raise InputError(f"no program at {path}")
    return [path]


def program_sha256(program: Program) -> str:
    """SHA-256 (hex) of the program's source: each file's name and contents, in order.

    Raises:
        InputError: no program there, or a file that cannot be read.
    """
    digest = hashlib.sha256()
    for file in program_files(program):
        try:
            digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
        except OSError as err:
            raise InputError(f"cannot read {file}: {err.strerror or err}") from None
    return digest.hexdigest()


def client_args(program: Program, options: toolargs.SimpleperfOptions) -> List[str]:
    """The student's client with the options the kit's client gets (``-c -I -p -t -i
    -P``, :meth:`labtools.tools.args.SimpleperfOptions.options`), without ``--json``: the
    assignment's tool prints its report as a table. Run through ``env`` in the clean
    environment of :mod:`labtools.lab.kit_free_python`."""
    return kit_free_python.with_environment([*program_argv(program), *options.options()])


def measure(lab: "LabSession", src: str, dst: str, program: Program,
            options: toolargs.SimpleperfOptions, call: ProbeCall,
            context: JudgeContext) -> Measurement:
    """One run of the student's client on ``src`` against the kit's server on ``dst`` (at
    ``options.server_ip``): parsed from the server's output, judged and saved (a failure is
    saved with the server's output and raised as :class:`ToolError`)."""
    server_argv, port, duration_s = options.server_argv(), options.port, options.duration_s
    argv = client_args(program, options)
    extra: Dict[str, Any] = {"program_sha256": program_sha256(program)}
    served: Union[ToolOutput, str] = ""  # what the kit's server left, once it ended
    report, started = "", utc_now()
    try:
        with lab.server(dst, server_argv, port) as server:
            with LatenessWatch(lab) as timers:  # the machine, measured during the run
                client = lab.run(src, argv, duration_s + TIMEOUT_MARGIN_S)
            report = client.text
            extra["client_report"], extra["client_exit_status"] = report, client.exit_status
            ask_to_stop(server, server_argv)  # it reports every connection, then exits
            ended = wait_output(server, server_argv, dst, TIMEOUT_MARGIN_S)
            served = ended
        context = replace(context, machine_late_ms=timers.late_ms)
        handed = kit_free_python.handoff(f"your simpleperf client ({Path(program).name})",
                                         report)
        if handed:
            raise ToolError(handed)
        parsed = parse_output("simpleperf", dst, ended)
        if not parsed.summary.get("complete"):
            raise ToolError(
                f"your simpleperf client ({Path(program).name}) on {src}: the kit's server "
                f"on {dst} says: {parsed.summary.get('error')}; the client's last line: "
                f"{last_line(report) or 'none'}")
    except LabtoolsError as err:
        lab.save_failure("simpleperf", src, dst, argv, served, err, started, call)
        raise
    m = judge_parsed(parsed, lab.topo, src, dst, context, argv, started_at=started,
                     call=call, extra=extra, exit_status=ended.exit_status)
    lab.save(m)
    return m
