"""Running a student's own simpleperf (lab 7) for real: on loopback against itself and
against the kit's simpleperf, and by hand on a lab's hosts.

The student's program is a folder with ``__main__.py`` (``mysimpleperf/``) or a file,
started as the kit starts it (:func:`labtools.lab.own_simpleperf.program_argv`): with a
Python that cannot import the kit, in a clean environment
(:mod:`labtools.lab.kit_free_python`). A program that hands its work to the kit fails with
one line that says so (an :class:`AssertionError`), and :func:`load_module` runs the
functions of a file of the program in that Python too. On
loopback (127.0.0.1, a free port each time) :class:`Server` runs a server for a ``with``
block (the student's, :func:`student_server`, or the kit's printing JSON,
:func:`kit_server`) and :func:`student_client` / :func:`kit_client` run a client to its
end. Everything has a time-out: a run that cannot go on (a server that stops at once or
never listens, a client that hangs) raises an :class:`AssertionError` with one readable
line, like :func:`labtools.teach.notebook.check_network`, and leaves no process behind.
"""

from __future__ import annotations

import ast
import builtins
import random
import selectors
import shlex
import signal
import socket
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, Union, cast

from labtools.lab import kit_free_python
from labtools.lab.own_simpleperf import Program, program_argv
from labtools.lab.processes import last_line, listening, wait_output
from labtools.tools import args as toolargs

#: seconds a client run on loopback may take (its transfer lasts a second or two)
CLIENT_TIMEOUT_S = 20.0
#: seconds a server gets to listen (a Python start takes seconds under software emulation)
SERVER_READY_S = 15.0
#: seconds a server gets to exit after Ctrl-C (SIGINT) before it is killed
SERVER_STOP_S = 3.0
#: seconds between checks while a server starts
SERVER_POLL_S = 0.05
#: seconds a client run by hand on a lab's host may take
BY_HAND_TIMEOUT_S = 120.0
LOOPBACK = "127.0.0.1"
#: Mbit/s at most on each connection a client opens on loopback (the kernel paces it,
#: SO_MAX_PACING_RATE): flat out, a Python client and its server each burn a CPU second
#: per second of a timed run, for rates nobody grades (loopback is not the link)
LOOPBACK_PACE_MBPS = 200.0
PACED_START = Path(__file__).resolve().parent / "paced_start.py"
#: serves calls of a student's file from a Python that cannot import the kit
CALLS = Path(__file__).resolve().parent / "simpleperf_calls.py"
#: the loopback servers' ports are picked at random from here up to the start of the
#: kernel's ephemeral ports (ip_local_port_range): a port from that range could be given
#: to some connection between the pick and the server's bind (while a class is graded
#: several submissions at once, lab 7's transfers take ephemeral ports all the time)
SERVER_PORT_FLOOR = 20000
#: where Linux says which ports it hands out by itself (first and last)
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: random ports tried before asking the kernel for any free one
PORT_TRIES = 50


@dataclass
class Finished:
    """A program that ran to its end: its command, exit status and output."""

    argv: List[str]
    status: int
    out: str
    err: str

    def why(self) -> str:
        """How it ended, in one line: the exit status and its last words."""
        said = last_line(self.err) or last_line(self.out) or "nothing"
        return f"exit status {self.status}; last line: {said}"


def _ephemeral_start() -> int:
    """The first port the kernel hands out by itself (32768 where it does not say)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now, below the ephemeral ports
    where there is room (:data:`SERVER_PORT_FLOOR`), else any the kernel gives."""
    below = range(SERVER_PORT_FLOOR, _ephemeral_start())
    for port in random.sample(below, min(PORT_TRIES, len(below))):
        if _bindable(port):
            return port
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _text(data: Union[str, bytes, None]) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def _where(own: bool) -> Dict[str, Any]:
    """How a program is started: a student's own (``own``) in the clean environment and
    folder of :mod:`labtools.lab.kit_free_python`, the kit's as it is."""
    return {"env": kit_free_python.environment(), "cwd": kit_free_python.folder()} \
        if own else {}


def refuse_handoff(who: str, output: str) -> None:
    """:class:`AssertionError` with one line when ``output`` says that ``who`` (a
    student's program) handed its work to the kit
    (:func:`labtools.lab.kit_free_python.handoff`)."""
    handed = kit_free_python.handoff(who, output)
    if handed:
        raise AssertionError(handed)


def run(argv: List[str], who: str, timeout_s: Optional[float] = None,
        own: bool = False) -> Finished:
    """Run ``argv`` to its end. :class:`AssertionError` naming ``who`` when it takes longer
    than ``timeout_s`` seconds (default :data:`CLIENT_TIMEOUT_S`; it is killed). With
    ``own``, a student's program: run in the clean environment of
    :mod:`labtools.lab.kit_free_python`, and one line (:func:`refuse_handoff`) when it
    handed its work to the kit."""
    timeout_s = CLIENT_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout_s, stdin=subprocess.DEVNULL, **_where(own))
    except subprocess.TimeoutExpired as late:
        said = _text(late.stdout) + _text(late.stderr)
        if own:
            refuse_handoff(who, said)
        raise AssertionError(f"{who} did not finish within {timeout_s:g} s (is it waiting "
                             f"for the other side?); its last line: "
                             f"{last_line(_text(late.stdout)) or 'nothing'}") from None
    if own:
        refuse_handoff(who, done.stdout + done.stderr)
    return Finished(argv, done.returncode, done.stdout, done.stderr)


class Server:
    """A server on 127.0.0.1 for a ``with`` block: started at once, awaited until it
    listens when the block starts, stopped with Ctrl-C (SIGINT; killed after
    :data:`SERVER_STOP_S`) when it ends. ``output``: what it printed, stdout and stderr.

    Args:
        argv_for: the server's command for a port.
        who: how the messages name it (``your server``).
        own: a student's program: started as :func:`run` starts one, and when it stops
            at once or never listens because it handed its work to the kit, one line
            that says so (:func:`refuse_handoff`).
    """

    def __init__(self, argv_for: Callable[[int], List[str]], who: str,
                 own: bool = False) -> None:
        self.port = free_port()
        self.argv = argv_for(self.port)
        self.who = who
        self.own = own
        self._lines: List[str] = []
        self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      text=True, errors="replace", **_where(own))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._proc.stdout or ():
            self._lines.append(line)

    @property
    def output(self) -> str:
        """What the server printed so far."""
        return "".join(self._lines)

    def __enter__(self) -> "Server":
        deadline = time.monotonic() + SERVER_READY_S
        while not listening(self._proc.pid, self.port):
            if self._proc.poll() is not None:
                self._reader.join(timeout=SERVER_STOP_S)
                self._refuse_handoff()
                raise AssertionError(f"{self.who} stopped at once (exit status "
                                     f"{self._proc.returncode}); its last line: "
                                     f"{last_line(self.output) or 'nothing'}")
            if time.monotonic() > deadline:
                self.stop()
                self._refuse_handoff()
                raise AssertionError(f"{self.who} did not listen on port {self.port} "
                                     f"within {SERVER_READY_S:g} s")
            time.sleep(SERVER_POLL_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _refuse_handoff(self) -> None:
        if self.own:
            refuse_handoff(self.who, self.output)

    def stop(self) -> str:
        """Stop the server (Ctrl-C, then kill); everything it printed."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=SERVER_STOP_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reader.join(timeout=SERVER_STOP_S)
        return self.output


def student_server(program: Program, *args: str) -> Server:
    """The student's server on 127.0.0.1 (``args``: more options, e.g. ``"-f", "B"``)."""
    return Server(lambda port: [*program_argv(program), "-s", "-b", LOOPBACK,
                                "-p", str(port), *args], "your server", own=True)


def kit_server() -> Server:
    """The kit's simpleperf server on 127.0.0.1, printing JSON."""
    return Server(lambda port: toolargs.simpleperf_server_args(LOOPBACK, port),
                  "the kit's simpleperf server")


def paced(argv: List[str], rate_mbps: float = LOOPBACK_PACE_MBPS) -> List[str]:
    """``argv`` (Python, its options, a program, the program's arguments) started through
    :mod:`labtools.teach.paced_start`: each TCP connection the program opens sends at
    most ``rate_mbps`` (Mbit/s); the program runs as it would otherwise."""
    python_end = next(i for i, word in enumerate(argv[1:], 1) if not word.startswith("-"))
    rate_bytes_s = str(round(rate_mbps * 1e6 / 8))
    return [*argv[:python_end], str(PACED_START), rate_bytes_s, *argv[python_end:]]


def student_client(program: Program, port: int, *args: str) -> Finished:
    """The student's client against 127.0.0.1:``port`` with ``args``, run to its end,
    each connection paced at :data:`LOOPBACK_PACE_MBPS`."""
    return run(paced([*program_argv(program), "-c", "-I", LOOPBACK, "-p", str(port), *args]),
               "your client", own=True)


def kit_client(port: int, *args: str) -> Finished:
    """The kit's simpleperf client against 127.0.0.1:``port``, printing JSON, each
    connection paced at :data:`LOOPBACK_PACE_MBPS`."""
    return run(paced([*toolargs.SIMPLEPERF, "-c", "-I", LOOPBACK, "-p", str(port), *args,
                      "--json"]), "the kit's simpleperf client")


class StudentModule:
    """A file of a student's program imported in a Python that cannot import the kit
    (:mod:`labtools.teach.simpleperf_calls`, one process kept for its calls): its
    functions are called there, with arguments and results that are plain values (numbers,
    strings, lists...); an exception they raise is raised here as its nearest built-in
    class, with its message. Made by :func:`load_module`."""

    def __init__(self, path: Path, timeout_s: float = CLIENT_TIMEOUT_S) -> None:
        self._name = path.name
        self._timeout_s = timeout_s
        self._proc = subprocess.Popen(
            [*program_argv(CALLS), str(path.resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, errors="replace", **_where(True))
        weakref.finalize(self, _end, self._proc)
        self._answer(("import", "", (), {}))

    def _answer(self, request: Tuple[str, str, Any, Any]) -> Tuple[Any, ...]:
        """Send ``request``; the answer, or the exception it says was raised, raised."""
        what, name = request[0], request[1]
        if what != "import":
            sending = cast(IO[str], self._proc.stdin)  # Popen(stdin=PIPE) made it
            try:
                sending.write(repr(request) + "\n")
                sending.flush()
            except OSError:
                raise AssertionError(f"your {self._name} is no longer running (did it "
                                     "exit?)") from None
        line = _read_line(self._proc, self._timeout_s)
        if line is None:
            _end(self._proc)
            doing = f"{name}() did not return" if what == "call" else "did not load"
            raise AssertionError(f"your {self._name}: {doing} within {self._timeout_s:g} s")
        answer: Tuple[Any, ...] = ast.literal_eval(line)
        if answer[0] == "raised":
            raise _exception(self._name, name, *answer[1:])
        return answer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        answer = self._answer(("get", name, (), {}))
        if answer[0] == "missing":
            raise AttributeError(f"your {self._name} has no {name}")
        if answer[0] == "value":
            return _value(answer[1], f"{self._name}'s {name}")
        return lambda *args, **kwargs: _value(
            self._answer(("call", name, args, kwargs))[1], f"{name}() in {self._name}")


def _end(proc: "subprocess.Popen[str]") -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _read_line(proc: "subprocess.Popen[str]", timeout_s: float) -> Optional[str]:
    """One line of ``proc``'s stdout within ``timeout_s`` seconds (None: none came)."""
    answers = cast(IO[str], proc.stdout)  # Popen(stdout=PIPE) made it
    with selectors.DefaultSelector() as waiting:
        waiting.register(answers, selectors.EVENT_READ)
        if not waiting.select(timeout_s):
            return None
    return answers.readline() or None


def _value(text: str, what: str) -> Any:
    """The value ``text`` (its ``repr``) stands for; :class:`AssertionError` when it is
    not a plain value."""
    if text in ("nan", "inf", "-inf"):
        return float(text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise AssertionError(f"{what} gave {text[:80]}, not a plain value (a number, a "
                             "string, a list...)") from None


def _exception(file: str, name: str, builtin: str, own: str, message: str) -> BaseException:
    """What to raise for an exception the student's code raised: the one line of
    :func:`labtools.lab.kit_free_python.handoff` when importing the kit failed; else its
    nearest built-in class with its message (an :class:`AssertionError` saying it for one
    that stops the kernel or takes other arguments)."""
    handed = kit_free_python.handoff(f"your {file}", f"{own}: {message}")
    if handed:
        return AssertionError(handed)
    kind = getattr(builtins, builtin, None)
    said = f"{own}: {message}" if own != builtin else message
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(said)
        except TypeError:
            pass
    where = f"{name}() in {file}" if name else file
    return AssertionError(f"{where} raised {own}: {message}")


def load_module(path: Union[str, Path]) -> StudentModule:
    """A file of the student's program imported afresh (an edited file is read again,
    nothing is cached) in a Python that cannot import the kit: :class:`StudentModule`.

    Raises:
        AssertionError: one line when the file imports the kit, or cannot be imported;
            otherwise the exception its import raised (its nearest built-in class).
    """
    return StudentModule(Path(path))


def by_hand(lab: Any, server_host: str, server_cmd: List[str], client_host: str,
            client_cmd: List[str], port: int = 8088) -> str:
    """What a student sees who types ``server_cmd`` in a terminal on ``server_host`` and,
    once the server listens on ``port``, ``client_cmd`` on ``client_host``: each command
    after its host's prompt, then what it printed (the server is stopped after the
    client). A lab replaying its measurements (grading) runs nothing and says so."""
    if lab.replaying:
        return "grading: nothing runs on the hosts (this step is not graded)"
    with lab.server(server_host, server_cmd, port) as proc:
        client_out = lab.run(client_host, client_cmd, BY_HAND_TIMEOUT_S).text
    server_out = wait_output(proc, server_cmd, server_host, BY_HAND_TIMEOUT_S).text
    return (f"{server_host}$ {shlex.join(server_cmd)}\n{server_out.rstrip()}\n\n"
            f"{client_host}$ {shlex.join(client_cmd)}\n{client_out.rstrip()}\n")
