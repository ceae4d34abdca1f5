"""What this machine has, as a course's settings are checked against it: its CPUs, its
memory, the most process ids it gives, and the IPv4 networks it is already on.

Each read is robust: a fact that cannot be read is ``None`` (or no network), and the
settings are then checked against the fixed bounds of course_settings.py only.
Standard library only.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

#: a network of the host: the interface's name and the IPv4 network it is on or routes to
HostNetwork = Tuple[str, ipaddress.IPv4Network]

IP_TIMEOUT_S = 5


@dataclass(frozen=True)
class Machine:
    """The facts the settings are checked against (``None``: could not be read)."""

    cpus: Optional[int]
    memory_bytes: Optional[int]
    pid_max: Optional[int]
    networks: Tuple[HostNetwork, ...] = ()


def cpu_count() -> Optional[int]:
    """CPUs this process may use (its affinity), or ``None``."""
    try:
        return len(os.sched_getaffinity(0)) or None
    except (AttributeError, OSError):
        return os.cpu_count()


def memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> Optional[int]:
    """MemTotal of ``/proc/meminfo`` in bytes, or ``None``."""
    try:
        for line in meminfo.read_text(encoding="ascii", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key == "MemTotal" and value.split()[1:] == ["kB"]:
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def pid_max(path: Path = Path("/proc/sys/kernel/pid_max")) -> Optional[int]:
    """The kernel's largest process id, or ``None``."""
    try:
        value = int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return value if value > 0 else None


def _from_ip_addr(text: str) -> List[HostNetwork]:
    """The IPv4 networks of ``ip -j addr``'s JSON."""
    found: List[HostNetwork] = []
    for link in json.loads(text):
        for addr in link.get("addr_info", []) if isinstance(link, dict) else []:
            if isinstance(addr, dict) and addr.get("family") == "inet":
                net = ipaddress.ip_network(f"{addr['local']}/{addr['prefixlen']}", strict=False)
                if isinstance(net, ipaddress.IPv4Network):
                    found.append((str(link.get("ifname", "")), net))
    return found


def _from_route_table(text: str) -> List[HostNetwork]:
    """The IPv4 networks routed to in ``/proc/net/route`` (the default route left out)."""
    found: List[HostNetwork] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        dest, mask = (socket.inet_ntoa(struct.pack("<I", int(f, 16))) for f in
                      (fields[1], fields[7]))
        net = ipaddress.IPv4Network(f"{dest}/{mask}", strict=False)
        if net.prefixlen > 0:
            found.append((fields[0], net))
    return found


def host_networks() -> Tuple[HostNetwork, ...]:
    """Every IPv4 network this machine has an address on (``ip -j addr``) or a route to
    (``/proc/net/route``); what cannot be read is left out."""
    found: List[HostNetwork] = []
    ip = shutil.which("ip", path="/usr/sbin:/usr/bin:/sbin:/bin")
    if ip:
        try:
            proc = subprocess.run([ip, "-j", "-4", "addr"], capture_output=True, text=True,
                                  timeout=IP_TIMEOUT_S, check=False)
            found += _from_ip_addr(proc.stdout) if proc.returncode == 0 else []
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
            pass
    try:
        found += _from_route_table(Path("/proc/net/route").read_text(encoding="ascii"))
    except (OSError, ValueError, struct.error):
        pass
    return tuple(dict.fromkeys(found))


def this_machine() -> Machine:
    """The facts of the machine this runs on."""
    return Machine(cpus=cpu_count(), memory_bytes=memory_bytes(), pid_max=pid_max(),
                   networks=host_networks())
