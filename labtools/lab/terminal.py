"""A terminal on a node, recorded: an interactive shell through a pseudo-terminal, or one
command, with every command and its output kept.

The interactive shell is bash (``sh`` where there is no bash) started inside the node's
namespaces on a pseudo-terminal of its own; this process copies the user's keys to it and
its output to the user's terminal, and keeps the output. Bash reads the user's
``~/.bashrc``, then a few lines of the kit's (:data:`BASH_RC`): the prompt names the node,
and around each command line bash prints two escape sequences the terminal never shows
(they are taken out of the output here): one when a line is accepted, with the line as the
shell's history has it (base64), one when it has run, with its exit status. So each
command's own output is cut out exactly, whatever the line editing did, and empty lines or
Ctrl-C at the prompt make no command. Under ``sh`` only the whole transcript is kept.

Whatever ends the session - ``exit``, Ctrl-D, the terminal closing (SIGHUP), SIGTERM -
the caller gets a :class:`~labtools.results.transcripts.ShellTranscript`: what the node
printed so far is never lost.
"""

from __future__ import annotations

import base64
import fcntl
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import termios
import tty
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from labtools.results.records import utc_now
from labtools.results.transcripts import ShellCommand, ShellTranscript, plain_text

#: the escape sequence that opens the kit's marks (an OSC no terminal acts on)
MARK = b"\x1b]6973;"
#: what ends a mark
MARK_END = b"\x07"
#: bytes read at once
CHUNK_BYTES = 65536
#: a mark longer than this is not the kit's (a long command line's is far shorter): its
#: bytes are shown as they are
MARK_MAX_BYTES = 1 << 20
#: seconds a shell may take to end after the terminal closed, before it is killed
HANGUP_WAIT_S = 2.0
#: the kit's lines after the user's ``~/.bashrc`` ({prompt}: the node's prompt)
BASH_RC = r"""[ -f ~/.bashrc ] && . ~/.bashrc
unset HISTFILE
HISTCONTROL=
HISTIGNORE=
__labtools_start() {
    local line
    line=$(HISTTIMEFORMAT= builtin history 1)
    printf '\033]6973;C;%s\007' "$(printf %s "$line" | base64 -w0)"
}
__labtools_end() { local s=$?; printf '\033]6973;D;%s\007' "$s"; return "$s"; }
PROMPT_COMMAND="__labtools_end${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
PS0="${PS0:-}"'$(__labtools_start)'
PS1='{prompt}'
"""


def prompt(node: str) -> str:
    """The prompt on ``node``: ``h1:~# `` (the node's root, in the sandbox)."""
    return f"{node}:\\w\\$ "


def shell_argv(node: str, rcfile: str) -> Tuple[List[str], Dict[str, str]]:
    """The interactive shell (bash with ``rcfile``, else sh) and what to add to its
    environment."""
    if shutil.which("bash"):
        return ["bash", "--rcfile", rcfile, "-i"], {}
    return ["sh", "-i"], {"PS1": f"{node}$ "}


class TranscriptReader:
    """Takes what a node's shell prints, chunk by chunk: gives back what to show (the
    kit's marks taken out) and keeps the whole transcript and each command's output."""

    def __init__(self) -> None:
        self.shown = bytearray()
        self.commands: List[ShellCommand] = []
        self._pending = b""
        self._line: Optional[str] = None
        self._output = bytearray()

    def feed(self, data: bytes) -> bytes:
        """What of ``data`` the user's terminal shows."""
        data, self._pending = self._pending + data, b""
        display = bytearray()
        while data:
            start = data.find(MARK)
            end = data.find(MARK_END, start) if start >= 0 else -1
            if end < 0:  # no whole mark left: keep what may start one for the next chunk
                keep = len(data) - start if start >= 0 else _partial_mark(data)
                self._add(data[:len(data) - keep])
                display += data[:len(data) - keep]
                self._pending = data[len(data) - keep:]
                break
            self._add(data[:start])
            display += data[:start]
            self._take(data[start + len(MARK):end].decode("ascii", "replace"))
            data = data[end + 1:]
        if len(self._pending) > MARK_MAX_BYTES:
            self._add(self._pending)
            display += self._pending
            self._pending = b""
        return bytes(display)

    def _add(self, shown: bytes) -> None:
        self.shown += shown
        if self._line is not None:
            self._output += shown

    def _take(self, mark: str) -> None:
        """A mark: ``C;LINE`` (a line accepted) or ``D;STATUS`` (it has run)."""
        kind, _, value = mark.partition(";")
        if kind == "C":
            self.close(None)
            self._line = _history_line(value)
        elif kind == "D" and self._line is not None:
            self.close(int(value) if value.lstrip("-").isdigit() else None)

    def close(self, status: Optional[int]) -> None:
        """End the open command (if any) with ``status``."""
        if self._line is not None:
            text = plain_text(self._output.decode("utf-8", "replace"))
            self.commands.append(ShellCommand(self._line, text, status))
        self._line, self._output = None, bytearray()

    def transcript(self, node: str, started_at: str, ended_by: str) -> ShellTranscript:
        """The session so far (an open command is kept without an exit status)."""
        self._add(self._pending)
        self._pending = b""
        self.close(None)
        return ShellTranscript(node=node, commands=list(self.commands),
                               transcript=plain_text(self.shown.decode("utf-8", "replace")),
                               started_at=started_at, ended_at=utc_now(), ended_by=ended_by)


def _partial_mark(data: bytes) -> int:
    """How many bytes at the end of ``data`` may start a mark (kept for the next chunk)."""
    for n in range(min(len(MARK) - 1, len(data)), 0, -1):
        if MARK.startswith(data[-n:]):
            return n
    return 0


def _history_line(encoded: str) -> str:
    """The command of a ``history 1`` line (``  12  ip route``), from base64."""
    try:
        line = base64.b64decode(encoded).decode("utf-8", "replace")
    except ValueError:
        return "?"
    number, _, command = line.lstrip().partition(" ")
    return command.strip() if number.isdigit() else line.strip()


class HangUp(Exception):
    """The terminal closed (SIGHUP) or this process was asked to end (SIGTERM)."""


@contextmanager
def hangups_raise() -> Iterator[None]:
    """Inside the block SIGHUP and SIGTERM raise :class:`HangUp`; after it they are
    ignored until the caller has saved (the previous handlers are restored at exit)."""
    def raise_hangup(signum: int, _frame: Any) -> None:
        raise HangUp(signal.Signals(signum).name)

    before = {s: signal.signal(s, raise_hangup) for s in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for s in before:
            signal.signal(s, signal.SIG_IGN)


def restore_hangups(handlers: Dict[int, Any]) -> None:
    """Put back SIGHUP and SIGTERM handlers saved by :func:`saved_hangups`."""
    for s, handler in handlers.items():
        signal.signal(s, handler)


def saved_hangups() -> Dict[int, Any]:
    """The current SIGHUP and SIGTERM handlers."""
    return {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM)}


def interactive(argv: List[str], env: Dict[str, str], node: str, out_fd: int = 1,
                in_fd: int = 0, reader: Optional[TranscriptReader] = None) -> ShellTranscript:
    """Run ``argv`` (an interactive shell in a node) on a pseudo-terminal, the user's
    terminal on ``in_fd``/``out_fd`` connected to it, until it ends or the terminal
    closes; what it printed, as a transcript (not saved here), read by ``reader``."""
    started, reader = utc_now(), reader or TranscriptReader()
    pid, master = pty.fork()
    if pid == 0:  # the child: the shell, on the new terminal
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    ended_by = "hangup"
    with _raw(in_fd), _window_follows(in_fd, master):
        try:
            with hangups_raise():
                _copy(in_fd, out_fd, master, reader)
            ended_by = "exit"
        except (HangUp, KeyboardInterrupt):
            pass
        finally:
            _end_child(pid, master, hung_up=ended_by != "exit")
    return reader.transcript(node, started, ended_by)


def _copy(in_fd: int, out_fd: int, master: int, reader: TranscriptReader) -> None:
    """Keys to the shell, its output to the user, until the shell's terminal closes."""
    sources = [master, in_fd]
    while True:
        ready, _, _ = select.select(sources, [], [])
        if master in ready:
            try:
                data = os.read(master, CHUNK_BYTES)
            except OSError:  # EIO: the shell ended, its terminal is gone
                return
            if not data:
                return
            _write_all(out_fd, reader.feed(data))
        if in_fd in ready:
            keys = os.read(in_fd, CHUNK_BYTES)
            if not keys:  # the user's input ended: as Ctrl-D at the prompt
                sources.remove(in_fd)
                keys = b"\x04"
            _write_all(master, keys)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError as err:  # the user's terminal is gone
        raise HangUp(str(err)) from None


def _end_child(pid: int, master: int, hung_up: bool) -> None:
    """Close the shell's terminal and collect the shell (killed when it lingers)."""
    try:
        os.close(master)
    except OSError:
        pass
    if hung_up:
        _signal(pid, signal.SIGHUP)
    for _ in range(int(HANGUP_WAIT_S / 0.05)):
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        select.select([], [], [], 0.05)
    _signal(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _signal(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


@contextmanager
def _raw(fd: int) -> Iterator[None]:
    """The user's terminal in raw mode inside the block (keys go to the node's shell as
    typed, Ctrl-C included); nothing changes when ``fd`` is not a terminal."""
    if not os.isatty(fd):
        yield
        return
    mode = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSAFLUSH, mode)
        except (termios.error, OSError):  # the terminal is gone
            pass


@contextmanager
def _window_follows(fd: int, master: int) -> Iterator[None]:
    """The shell's terminal has the size of the user's, also after it is resized."""
    def copy_size(*_args: Any) -> None:
        try:
            size = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(master, termios.TIOCSWINSZ, size)
        except OSError:
            pass

    if not os.isatty(fd):
        yield
        return
    copy_size()
    before = signal.signal(signal.SIGWINCH, copy_size)
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, before)


def one_command(argv: List[str], env: Dict[str, str], node: str, command: str,
                show: Callable[[bytes], None]) -> Tuple[int, ShellTranscript]:
    """Run ``argv`` (``sh -c COMMAND`` in a node), its output shown as it comes; its exit
    status (128+N when a signal ended it) and the transcript."""
    started, out = utc_now(), bytearray()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    ended_by, status = "hangup", 129
    try:
        with hangups_raise():
            while proc.stdout is not None:
                chunk = os.read(proc.stdout.fileno(), CHUNK_BYTES)
                if not chunk:
                    break
                out += chunk
                show(chunk)
            code = proc.wait()
            status = code if code >= 0 else 128 - code
            ended_by = "command"
    except (HangUp, KeyboardInterrupt):
        proc.terminate()
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.poll() is None:
            try:
                proc.wait(timeout=HANGUP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    text = plain_text(out.decode("utf-8", "replace"))
    record = ShellTranscript(node=node, started_at=started, ended_at=utc_now(),
                             ended_by=ended_by, transcript=text, commands=[ShellCommand(
                                 command, text, status if ended_by == "command" else None)])
    return status, record


def show_on_stdout(data: bytes) -> None:
    """Write ``data`` to standard output at once."""
    sys.stdout.flush()
    _write_all(sys.stdout.fileno(), data)
