"""How a lab's sandbox is recognised on the machine, and what a broken one can leave.

A sandboxed lab (:mod:`labtools.lab.sandbox`) runs every process of its network in a user
namespace of its own, held by one small shell, the *holder* (its ``$0`` is
:data:`HOLDER_MARK`). Its node shells carry :data:`NODE_MARK` (``labtools-node:h1``), not
Mininet's ``mininet:`` mark, so that ``mn -c`` (``pkill -f mininet:``) and ``labtools
clean`` never stop a running lab of another user.

When the lab's process dies, the holder sees its pipe close and kills every process left in
its user namespace; the namespaces go with the last of them. Only a holder killed with the
lab's process (``kill -9`` of both) leaves its lab behind: :func:`orphaned_sandboxes` finds
such user namespaces (a node shell of the kit inside, no holder alive).
"""

from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional, Sequence

from labtools.system import procfs

#: the holder's ``$0`` (the word after its script on its command line)
HOLDER_MARK = "labtools-sandbox"
#: prefix of a sandboxed node shell's argument (``sh -s labtools-node:h1``)
NODE_MARK = "labtools-node:"


def user_namespace_of(pid: int) -> Optional[str]:
    """``user:[inode]`` of process ``pid``, None when it cannot be read."""
    return procfs.read_link(pid, "ns/user")


def pid_namespace_of(pid: int) -> Optional[str]:
    """``pid:[inode]`` of process ``pid`` (a container's differs), None when unreadable."""
    return procfs.read_link(pid, "ns/pid")


def machine_user_namespace() -> Optional[str]:
    """The machine's own user namespace: PID 1's, or this process's where PID 1's cannot
    be read (containers, sandboxes)."""
    return user_namespace_of(1) or user_namespace_of(os.getpid())


def is_holder(argv: Sequence[str]) -> bool:
    """True for a sandbox holder's command line (``sh -c SCRIPT labtools-sandbox ...``)."""
    return len(argv) >= 4 and argv[1] == "-c" and argv[3] == HOLDER_MARK


def is_node_shell(argv: Sequence[str]) -> bool:
    """True for a sandboxed node shell (``sh -s labtools-node:NAME``)."""
    return any(arg.startswith(NODE_MARK) for arg in argv[1:3])


def sandboxed(pids: Sequence[int], machine_ns: Optional[str] = None) -> Dict[int, str]:
    """pid -> user namespace, for the processes of ``pids`` that live in a user namespace
    other than the machine's (sandboxes: the kit's, or another program's)."""
    machine_ns = machine_ns or machine_user_namespace()
    found = {}
    for pid in pids:
        ns = user_namespace_of(pid)
        if ns is not None and ns != machine_ns:
            found[pid] = ns
    return found


def orphaned_sandboxes(argvs: Mapping[int, Sequence[str]],
                       namespaces: Mapping[int, str]) -> List[int]:
    """PIDs of every process in a kit sandbox whose holder is gone. ``argvs``: pid ->
    command line of the live processes; ``namespaces``: pid -> user namespace of those
    outside the machine's (:func:`sandboxed`). A user namespace counts as the kit's when a
    node shell of the kit runs in it; one with a live holder is a running lab."""
    by_ns: Dict[str, List[int]] = {}
    for pid, ns in namespaces.items():
        by_ns.setdefault(ns, []).append(pid)
    orphans: List[int] = []
    for pids in by_ns.values():
        argv_of = [argvs.get(pid, ()) for pid in pids]
        if any(is_node_shell(a) for a in argv_of) and not any(is_holder(a) for a in argv_of):
            orphans += pids
    return sorted(orphans)


def running_sandboxes(argvs: Optional[Mapping[int, Sequence[str]]] = None) -> int:
    """How many sandboxed labs run (their holders) among ``argvs`` (pid -> command line),
    by default on this whole machine, containers included."""
    if argvs is None:
        argvs = {}
        for pid in procfs.pids():
            argv = procfs.argv(pid)
            if argv is not None:
                argvs[pid] = argv
    return sum(1 for argv in argvs.values() if is_holder(argv))


def process_name(comm: str, argv: Sequence[str]) -> str:
    """The name of a process of a sandbox: ``labtools-node:h1`` for a node shell, else its
    command name."""
    marks = [arg for arg in argv[1:3] if arg.startswith(NODE_MARK)]
    return marks[0] if marks else comm


def owned_by(pids: Sequence[int], uid: int) -> bool:
    """True when every process of ``pids`` belongs to user ``uid`` (or is gone)."""
    owners = [procfs.owner_uid(pid) for pid in pids]
    return all(owner == uid for owner in owners if owner is not None)
