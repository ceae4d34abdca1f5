"""What ran and what it printed: the exact command and raw output beside every result, and
running a tool by hand on a node.

    from labtools.teach.tool_runs import run_on, show_runs
    ping = probes.ping(lab, "h1", "h4")
    show_runs(ping)        # "h1$ ping -D -n -c 100 ... 10.0.4.2", its output folded
    print(run_on(lab, "h1", "ping -c 3 {h4}"))   # a tool typed by hand, {h4}: h4's address

:func:`show_runs` displays one folded HTML ``<details>`` element per tool run of a result:
a single measurement, the runs of a repeated one, the flows of concurrent transfers, the
steps of a capacity search, a ping under load and its load. Nothing is re-run: the command
and the output are the ones saved with the measurement, so a graded notebook (replayed from
the student's results file) shows exactly what ran on the student's machine.

:func:`run_on` runs a command line on one node of the running lab and returns what it
printed (stdout and stderr), as a terminal on that node would (``mininet> h1 ping ...``);
``{NODE}`` in the command is replaced by the address the node reaches NODE at. A replaying
lab (grading) runs nothing: it returns a line that says so. What it ran and printed is
kept in the lab's results store, as a terminal's session on the node is (``labtools shell
h1``); :func:`shell_transcripts` gives both back, to grade a step done by hand:

    done = shell_transcripts(lab, "r2")
    assert any("netem" in out for t in done for out in t.outputs("tc -s qdisc show"))
"""

from __future__ import annotations

import html
import re
import shlex
from typing import Any, Iterator, List, Optional, Tuple

from labtools import settings
from labtools.errors import InputError
from labtools.results.records import utc_now
from labtools.results.transcripts import ShellCommand, ShellTranscript

#: characters of a tool's output shown in a folded block (an iperf3 JSON document of a
#: 10 s run is 15 000-20 000: its start, the settings and first intervals, is shown); the
#: rest is in ``m.raw``
SHOWN_CHARS = 6_000
#: seconds a command typed by hand may run
HAND_TIMEOUT_S = 60.0
#: the ports a server typed by hand listens on when its command names none
DEFAULT_PORTS = {"iperf": 5001, "iperf3": 5201}
_PLACEHOLDER = re.compile(r"\{([A-Za-z][\w-]*)\}")


def command_line(result: Any) -> str:
    """``h1$ ping -D -n -c 100 -i 0.05 -s 56 10.0.4.2``: the node and the exact command of
    one tool run (a :class:`~labtools.judge.measurement.Measurement`)."""
    argv = [str(a) for a in (getattr(result, "command", None) or [])]
    where = getattr(result, "src", "") or "?"
    return f"{where}$ {shlex.join(argv)}" if argv else f"{where}$ (command not recorded)"


def tool_runs(result: Any) -> Iterator[Tuple[str, Any]]:
    """(label, measurement) for every tool run a result is made of, in the order they ran:
    the runs of a repeated call, the flows of concurrent transfers, the steps of a
    capacity search; a single measurement is its own run."""
    if hasattr(result, "runs") and hasattr(result, "spread"):  # repeated: runs of a call
        for k, run in enumerate(result.runs):
            for label, m in tool_runs(run):
                yield f"run {k + 1} of {len(result.runs)}: {label}", m
    elif hasattr(result, "measurements") and hasattr(result, "flows"):  # concurrent flows
        for m in result.measurements:
            yield f"flow {m.src} → {m.dst} ({m.tool})", m
    elif hasattr(result, "steps") and hasattr(result, "rows"):  # a capacity search
        for k, m in enumerate(result.steps):
            yield f"step {k + 1}: {m.src} → {m.dst} ({m.tool})", m
    else:
        load = (getattr(result, "extra", None) or {}).get("load")
        extra = f" under {load}" if load else ""
        yield f"{result.src} → {result.dst} ({result.tool}{extra})", result


def _folded(label: str, m: Any) -> str:
    raw = str(getattr(m, "raw", "") or "")
    lines = raw.count("\n") + (0 if raw.endswith("\n") or not raw else 1)
    shown = raw if len(raw) <= SHOWN_CHARS else (
        raw[:SHOWN_CHARS] + f"\n... ({len(raw) - SHOWN_CHARS} more characters: print(m.raw) "
        "shows all)")
    return (f"<details><summary><b>{html.escape(label)}</b>: "
            f"<code>{html.escape(command_line(m))}</code> ({lines} lines of output)"
            f"</summary><pre style=\"max-height:24em;overflow:auto\">{html.escape(shown)}"
            "</pre></details>")


def runs_html(*results: Any) -> str:
    """One folded ``<details>`` element per tool run of ``results`` (see the module
    docstring), each headed by the exact command, the output inside."""
    blocks = [_folded(label, m) for result in results for label, m in tool_runs(result)]
    if not blocks:
        raise InputError("no tool run to show")
    return "\n".join(blocks)


class RunsDisplay:
    """What :func:`show_runs` displays: HTML for the notebook, the commands as text."""

    def __init__(self, results: Tuple[Any, ...]) -> None:
        self.html = runs_html(*results)
        self.text = "\n".join(command_line(m) for r in results for _label, m in tool_runs(r))

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def show_runs(*results: Any) -> None:
    """Display, folded, the exact command and the raw output of every tool run of
    ``results`` (measurements, repeated measurements, concurrent flows, a capacity
    search). The commands are the ones saved with the measurements."""
    from IPython.display import display

    display(RunsDisplay(results))


# --- by hand -----------------------------------------------------------------------------
def _argv(lab: Any, node: str, command: str) -> List[str]:
    """The command line split like a shell would, ``{NODE}`` replaced by the address
    ``node`` reaches NODE at."""
    if not isinstance(command, str) or not command.strip():
        raise InputError("give the command as text, e.g. 'ping -c 3 {h4}'")

    def address(found: "re.Match[str]") -> str:
        return str(lab.ip_towards(node, found.group(1)))

    try:
        return shlex.split(_PLACEHOLDER.sub(address, command))
    except ValueError as err:
        raise InputError(f"cannot read the command {command!r}: {err}") from None


def _port(argv: List[str]) -> int:
    """The port a server command listens on: its ``-p``, else the tool's default."""
    for flag, value in zip(argv, argv[1:]):
        if flag in ("-p", "--port") and value.isdigit():
            return int(value)
    tool = argv[0].rsplit("/", 1)[-1]
    if tool not in DEFAULT_PORTS:
        raise InputError(f"which port does the server {tool!r} listen on? give it with -p")
    return DEFAULT_PORTS[tool]


def run_on(lab: Any, node: str, command: str, timeout_s: float = HAND_TIMEOUT_S,
           server: Optional[Tuple[str, str]] = None) -> str:
    """Run ``command`` on ``node`` of the running lab, as typed in a terminal on that node,
    and return what it printed. ``{NODE}`` in a command is NODE's address as ``node``
    reaches it. ``server``: ``(node, command)`` of a server started first and stopped
    after (it must listen on its ``-p`` port, or its tool's default: iperf 5001, iperf3
    5201). Raises :class:`~labtools.errors.ProbeTimeout` after ``timeout_s`` seconds.
    While grading (a replaying lab) nothing runs: the line returned says so."""
    argv = _argv(lab, node, command)
    if getattr(lab, "replaying", False):
        return (f"(grading: nothing runs on the hosts; on the student's machine this ran "
                f"{node}$ {shlex.join(argv)})")
    lab.check_node(node)
    started_at = utc_now()
    if server is None:
        output = lab.run(node, argv, timeout_s)
    else:
        host, text = server
        server_argv = _argv(lab, host, text)
        udp = "-u" in server_argv
        with lab.server(lab.check_node(host), server_argv, _port(server_argv), udp=udp):
            output = lab.run(node, argv, timeout_s)
    _keep(lab, node, command, argv, output, started_at)
    return str(output.text)


def _keep(lab: Any, node: str, typed: str, argv: List[str], output: Any,
          started_at: str) -> None:
    """Save a by-hand run as a one-command session on ``node`` (when the lab saves)."""
    store = getattr(lab, "store", None)
    if store is None:
        return

    line = shlex.join(argv) if _PLACEHOLDER.search(typed) else typed
    text = str(output.text)
    store.save_transcript(ShellTranscript(
        node=node, commands=[ShellCommand(line, text, getattr(output, "exit_status", None))],
        transcript=text, started_at=started_at, ended_at=utc_now(), ended_by="run_on",
        session_id=str(getattr(lab, "session_id", "")), case=str(getattr(lab, "case", "")),
        topology=lab.topo.name, student=settings.current().student))


def shell_transcripts(lab: Any, node: Optional[str] = None) -> List[ShellTranscript]:
    """The terminal sessions on the nodes of ``lab`` (on ``node`` only, when given), oldest
    first: those of ``labtools shell`` and of :func:`run_on`, each with its commands and
    their output (:class:`~labtools.results.transcripts.ShellTranscript`). A running lab
    gives its own session's; a replaying lab (grading) those of its case in the student's
    results file. Empty when the lab keeps no results."""
    store = getattr(lab, "store", None)
    if store is None:
        return []
    filters = {"node": lab.topo.node(node).name} if node is not None else {}
    if getattr(lab, "replaying", False):
        filters["case"] = lab.case
    else:
        filters["session_id"] = lab.session_id
    return list(store.transcripts(**filters))


def check_by_hand(lab: Any, *step_ids: str) -> None:
    """Fail with one line unless the lab's by-hand steps ``step_ids`` (ids of
    :data:`labtools.judge.by_hand.STEPS`) were run as asked, on what was recorded: this
    session's commands in a running lab, the student's results file while grading (a file
    that is not the student's fails with the reason the replay found)."""
    from labtools.judge.by_hand import STEPS, check_step

    unknown = [s for s in step_ids if s not in STEPS]
    if unknown or not step_ids:
        raise InputError(f"by-hand steps are {', '.join(STEPS)}; got {', '.join(unknown)}")
    problem = str(getattr(lab, "problem", "") or "") if getattr(lab, "replaying", False) else ""
    if problem:
        raise AssertionError(problem)
    recorded = [(t.node, c.command, c.output) for t in shell_transcripts(lab)
                for c in t.commands]
    for step_id in step_ids:
        found = check_step(step_id, recorded, lab.ip_towards)
        if found is not None:
            raise AssertionError(found)
    print(f"recorded by hand: {', '.join(STEPS[s].asked for s in step_ids)}")
