"""Judge what was measured: the destination a tool's output names must be the pair's node.

``labtools parse ping out.txt --topology portfolio --src h1 --dst h4`` judges the output
as a measurement from h1 to h4. When the output names where it went, that must be h4 (one
of its addresses; ``labtools expect`` shows the one h1 talks to as ``dst_ip``), or the
verdicts would judge a measurement of another path. What each tool's output names is read
by :mod:`labtools.tools.destinations`.

Output that names no destination (a killed ping without its header) is not checked.
"""

from __future__ import annotations

import ipaddress
from typing import List

from labtools.errors import InputError
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology
from labtools.tools.parsers.base import Parsed
from labtools.tools.registry import TOOLS


def named_destinations(parsed: Parsed) -> List[str]:
    """The addresses (or host names) a tool's output says it measured towards, in order,
    without repeats; empty when the output names none (its tool's descriptor says what
    names them: :mod:`labtools.tools.destinations`)."""
    tool = TOOLS.get(parsed.tool)
    found = [] if tool is None or tool.destinations is None else tool.destinations(parsed)
    return list(dict.fromkeys(host for host in found if host))


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_destination(parsed: Parsed, topo: Topology, src: str, dst: str) -> None:
    """Refuse to judge ``parsed`` as ``src`` -> ``dst`` when its output names another
    destination than ``dst`` (an address of ``dst``, or its name).

    Raises:
        InputError: one line naming what the output measured and what ``dst`` is.
    """
    named = named_destinations(parsed)
    if not named:
        return
    routing = compute_routing(topo)
    owners = {iface.ip: iface.node for iface in routing.addressing.interfaces}
    for host in named:
        if host == dst or owners.get(host) == dst:
            continue
        expected = routing.target(src, dst).ip
        if host in owners:
            what = f"{host} ({owners[host]})"
        elif _is_address(host):
            what = f"{host} (no node of topology {topo.name!r} has it)"
        else:
            what = f"host {host!r}"
        raise InputError(f"this {parsed.tool} output measured {what}, not {dst} ({expected}); "
                         f"give --src and --dst of the pair it measured")
