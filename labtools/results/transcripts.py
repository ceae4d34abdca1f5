"""What was typed on a node and what it printed: the record of a terminal on a node.

``labtools shell NODE`` (an interactive shell in a node's namespaces, or one command with
``-c``) and the notebooks' by-hand runs (:func:`labtools.teach.tool_runs.run_on`) keep
each command with its output in the lab's results store, so a lab can grade a step done by
hand on what it printed. A :class:`ShellTranscript` is one such session: the node, when it
started and ended, how it ended, each command (:class:`ShellCommand`) and everything the
terminal showed. The store keeps them in the table ``shell_transcripts``
(:data:`labtools.results.schema.TRANSCRIPTS`); only this module turns a record into its
columns and back.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from labtools.errors import StoreError
from labtools.results.records import utc_now

#: how a session ended: ``exit`` (``exit`` or Ctrl-D), ``hangup`` (the terminal closed:
#: SIGHUP, or SIGTERM), ``command`` (one command run with ``-c``), ``run_on`` (a notebook's
#: by-hand run)
ENDINGS = ("exit", "hangup", "command", "run_on")
#: characters of a session's whole transcript kept (a shell left running ``ping`` for
#: hours prints megabytes; the commands' own outputs are kept whole)
TRANSCRIPT_MAX_CHARS = 1_000_000
#: the columns of ``shell_transcripts`` a save writes (all but ``id``), in order
TRANSCRIPT_COLUMNS = ("session_id", "case", "topology", "node", "student", "started_at",
                      "ended_at", "ended_by", "commands_json", "transcript")
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def plain_text(text: str) -> str:
    """Terminal output as plain text: colour and cursor escapes removed, ``\\r\\n`` line
    ends made ``\\n``, other carriage returns and backspaces dropped."""
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    return text.replace("\r", "").replace("\b", "")


@dataclass(frozen=True)
class ShellCommand:
    """One command typed on a node: the line as the shell read it, what it printed
    (stdout and stderr as the terminal showed them, as plain text) and its exit status
    (None when the session ended before it finished)."""

    command: str
    output: str
    exit_status: Optional[int] = None


@dataclass
class ShellTranscript:
    """A terminal session on ``node`` of a lab (see the module docstring).

    ``session_id`` and ``case`` are the lab session's; ``transcript`` is what the terminal
    showed (echoed input included, at most :data:`TRANSCRIPT_MAX_CHARS`, plain text);
    times are ISO 8601 UTC; ``ended_by`` one of :data:`ENDINGS`; ``student`` who typed it
    (the JupyterHub user, None elsewhere)."""

    node: str
    commands: List[ShellCommand] = field(default_factory=list)
    transcript: str = ""
    started_at: str = field(default_factory=utc_now)
    ended_at: str = ""
    ended_by: str = "exit"
    session_id: str = ""
    case: str = ""
    topology: str = ""
    student: Optional[str] = None
    id: Optional[int] = None

    def outputs(self, containing: str = "") -> List[str]:
        """The outputs of the commands whose line contains ``containing`` (all without)."""
        return [c.output for c in self.commands if containing in c.command]


def transcript_row(record: ShellTranscript) -> Dict[str, Any]:
    """The columns of ``record`` (:data:`TRANSCRIPT_COLUMNS`)."""
    if record.ended_by not in ENDINGS:
        raise StoreError(f"a shell session ends by {', '.join(ENDINGS)}, "
                         f"not {record.ended_by!r}")
    row = asdict(record)
    row["ended_at"] = record.ended_at or utc_now()
    row["commands_json"] = json.dumps([asdict(c) for c in record.commands])
    row["transcript"] = record.transcript[-TRANSCRIPT_MAX_CHARS:]
    return {name: row[name] for name in TRANSCRIPT_COLUMNS}


def transcript_record(row: Dict[str, Any], where: str) -> ShellTranscript:
    """The record of a ``shell_transcripts`` row; :class:`StoreError` naming ``where``
    for commands that are not what the kit saves."""
    try:
        data = json.loads(row["commands_json"] or "[]")
        commands = [ShellCommand(str(c["command"]), str(c["output"]),
                                 None if c.get("exit_status") is None
                                 else int(c["exit_status"])) for c in data]
    except (ValueError, TypeError, KeyError) as err:
        raise StoreError(f"{where}: commands_json is not a list of commands ({err})") from None
    return ShellTranscript(
        node=str(row["node"]), commands=commands, transcript=str(row["transcript"] or ""),
        started_at=str(row["started_at"]), ended_at=str(row["ended_at"]),
        ended_by=str(row["ended_by"]), session_id=str(row["session_id"] or ""),
        case=str(row["case"] or ""), topology=str(row["topology"] or ""),
        student=row["student"], id=int(row["id"]))
