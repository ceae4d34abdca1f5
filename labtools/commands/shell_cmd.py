"""``labtools shell NODE [--lab RESULTS] [-c COMMAND]``: a terminal on a node of your
running lab, as ``xterm h1`` gives one in Mininet; what you type there and what it prints
is kept with the lab's results.

The lab is the one you run (a notebook's ``lab.start()``); with several, ``--lab`` names
it by its results file or folder. The shell runs inside the node's namespaces
(:mod:`labtools.lab.running_labs`), its prompt names the node, and when it ends (``exit``,
Ctrl-D, or the terminal closing) the session is saved to the lab's results store
(:mod:`labtools.results.transcripts`). ``-c COMMAND`` runs one command there, saved the
same way; the exit status is then the command's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from labtools import settings
from labtools.commands import options
from labtools.lab import terminal
from labtools.lab.running_labs import RunningLab, choose
from labtools.results.transcripts import ShellTranscript
from labtools.system.toolenv import tools_env

#: the exit status of a shell whose terminal closed (128 + SIGHUP, as a shell's)
HANGUP_STATUS = 129


def add_parser(sub: Any) -> None:
    """Register ``labtools shell``."""
    p = sub.add_parser(
        "shell", help="a terminal on a node of your running lab (recorded)",
        description="Open a shell on NODE (h1, r2, s1...) of your running lab, as "
        "`xterm h1` does in Mininet. The commands you type and their output are saved "
        "with the lab's results.")
    p.add_argument("node", metavar="NODE", type=options.text, help="a host, router or switch")
    p.add_argument("--lab", metavar="RESULTS", type=options.text,
                   help="the lab's results file or folder (needed when several labs run)")
    p.add_argument("-c", dest="run_command", metavar="COMMAND", type=options.text,
                   help="run COMMAND on NODE and return its exit status")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Open the shell, or run the command; the exit status (the command's with ``-c``)."""
    lab = choose(args.lab)
    workdir = os.getcwd()
    if args.run_command is not None:
        argv = lab.enter(args.node, ["sh", "-c", args.run_command], workdir)
        status, record = terminal.one_command(argv, tools_env(), args.node, args.run_command,
                                              terminal.show_on_stdout)
        _save(lab, record, quiet=True)
        return status
    with tempfile.TemporaryDirectory(prefix="labtools-shell-") as private:
        rcfile = Path(private, "bashrc")
        rcfile.write_text(terminal.BASH_RC.replace("{prompt}", terminal.prompt(args.node)))
        shell, extra = terminal.shell_argv(args.node, str(rcfile))
        argv = lab.enter(args.node, shell, workdir)
        kept = f"kept in {lab.results}" if lab.results else "not kept (the lab saves nothing)"
        _say(f"{args.node} of {lab.topology}: what you type here and its output is {kept}; "
             "exit or Ctrl-D ends it")
        handlers = terminal.saved_hangups()
        try:
            record = terminal.interactive(argv, {**tools_env(), **extra}, args.node)
            saved = _save(lab, record, quiet=False)
        finally:
            terminal.restore_hangups(handlers)
    if saved is not None and record.ended_by == "exit":
        _say(f"saved: {len(record.commands)} command(s) on {args.node}, shell session "
             f"{saved} in {lab.results}")
    return 0 if record.ended_by == "exit" else HANGUP_STATUS


def _save(lab: RunningLab, record: ShellTranscript, quiet: bool) -> Optional[int]:
    """Save the session to the lab's store (None when the lab keeps no results)."""
    from labtools.results.store import ResultStore

    if lab.results is None:
        if not quiet:
            _say("not saved: this lab keeps no results")
        return None
    record.session_id, record.case, record.topology = lab.session_id, lab.case, lab.topology
    record.student = settings.current().student
    return ResultStore(lab.results, create=False).save_transcript(record)


def _say(text: str) -> None:
    """A line on stderr (the terminal's own output stays the node's); nothing when the
    terminal is gone."""
    try:
        print(f"labtools shell: {text}", file=sys.stderr, flush=True)
    except OSError:
        pass
