"""The host's firewall for a course hub: what a student's server may reach on the host.

Every server has a network of its own (a bridge named ``<course tag>-<user hash>``), so
Docker already keeps servers from reaching each other. These rules, in chains of the
course's own, add what Docker does not:

- from the servers' bridges to the host, only the hub's API port (the server reports to the
  hub), the course's record (``record_port``: the kit posts each checked answer and each
  measurement to record_service.py) and replies to connections the host opened (the proxy
  reaching the server); nothing else on the host (its SSH, the proxy's public port,
  anything listening on it);
- without ``internet``, nothing forwarded out of a server's network either (no Internet,
  no other network).

Pure: :func:`up_commands` and :func:`down_commands` give ``iptables`` argument lists.
"""

from __future__ import annotations

from typing import List

from course_settings import CourseSettings, course_tag

#: Docker's chain for the administrator's own forwarding rules (jumped to first)
DOCKER_USER = "DOCKER-USER"


def chains(course_id: str) -> tuple[str, str]:
    """The course's input and forward chains."""
    tag = course_tag(course_id).upper()
    return f"LABHUB-{tag}-IN", f"LABHUB-{tag}-FWD"


def up_commands(s: CourseSettings) -> List[List[str]]:
    """The commands that install the course's rules (after :func:`down_commands`)."""
    ifaces = course_tag(s.course_id) + "-+"
    inp, fwd = chains(s.course_id)
    cmds = [
        ["-N", inp],
        ["-A", inp, "-i", ifaces, "-p", "tcp", "--dport", str(s.api_port), "-j", "ACCEPT"],
        ["-A", inp, "-i", ifaces, "-p", "tcp", "--dport", str(s.record_port), "-j", "ACCEPT"],
        ["-A", inp, "-i", ifaces, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED",
         "-j", "ACCEPT"],
        ["-A", inp, "-i", ifaces, "-j", "DROP"],
        ["-I", "INPUT", "1", "-j", inp],
        ["-N", fwd],
    ]
    if not s.internet:
        cmds.append(["-A", fwd, "-i", ifaces, "-j", "DROP"])
    cmds += [["-A", fwd, "-j", "RETURN"], ["-I", DOCKER_USER, "1", "-j", fwd]]
    return [["iptables", "-w", *c] for c in cmds]


def down_commands(course_id: str) -> List[List[str]]:
    """The commands that remove the course's rules (each may fail: nothing to remove)."""
    inp, fwd = chains(course_id)
    cmds = [["-D", "INPUT", "-j", inp], ["-F", inp], ["-X", inp],
            ["-D", DOCKER_USER, "-j", fwd], ["-F", fwd], ["-X", fwd]]
    return [["iptables", "-w", *c] for c in cmds]
