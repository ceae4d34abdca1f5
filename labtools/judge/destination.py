"""Judge what was measured: the destination a tool's output names must be the pair's node.

``labtools parse ping out.txt --topology portfolio --src h1 --dst h4`` judges the output
as a measurement from h1 to h4. When the output names where it went, that must be h4 (one
of its addresses; ``labtools expect`` shows the one h1 talks to as ``dst_ip``), or the
verdicts would judge a measurement of another path. What each tool's output names:

- ping: the header's address (``PING h4 (10.0.2.1)``; BSD ``ping6``: ``SRC --> DST``);
- iperf3 JSON: a client's ``start.connected[].remote_host`` (else
  ``start.connecting_to.host``), a server's ``start.connected[].local_host``;
- iperf 2 text: a client's ``connected with ADDR`` (else ``Client connecting to ADDR``), a
  server's ``local ADDR``;
- simpleperf JSON lines: a client's ``conn_start`` ``remote`` (else ``start`` ``server``), a
  server's ``server_conn_start`` ``local``.

Output that names no destination (a killed ping without its header) is not checked.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any, Dict, List, Optional

from labtools.errors import InputError
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology
from labtools.tools.parsers.base import Parsed
from labtools.tools.parsers.simpleperf import json_records

_NAN = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
_IPERF2_CLIENT = re.compile(r"^Client connecting to (?P<host>[^\s,]+),", re.MULTILINE)
_IPERF2_CONNECTED = re.compile(
    r"local (?P<local>\S+) port \d+ connected with (?P<remote>\S+) port \d+")


def _host(value: Any) -> Optional[str]:
    """``10.0.2.1`` from ``10.0.2.1``, ``10.0.2.1:5201``, ``[fd00::1]:5201`` or
    ``fe80::1%eth0``; None for anything that is not text."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.startswith("[") and "]" in text:
        text = text[1:text.index("]")]
    elif text.count(":") == 1:
        text = text.rsplit(":", 1)[0]
    return text.split("%", 1)[0]


def _iperf3_document(raw: str) -> Optional[Dict[str, Any]]:
    """The last iperf3 JSON object in ``raw`` that has a ``start`` section."""
    text = _NAN.sub(r"\1null", raw)
    decoder = json.JSONDecoder()
    found: Optional[Dict[str, Any]] = None
    for m in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            doc, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("start"), dict):
            found = doc
    return found


def _iperf3(raw: str) -> List[Optional[str]]:
    doc = _iperf3_document(raw)
    if doc is None:
        return []
    start = doc["start"]
    listed = start.get("connected")
    connected = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    target = start.get("connecting_to")
    if isinstance(target, dict):  # the client's own output
        remote = [_host(c.get("remote_host")) for c in connected]
        return remote if any(remote) else [_host(target.get("host"))]
    return [_host(c.get("local_host")) for c in connected]


def _iperf2(raw: str) -> List[Optional[str]]:
    client = _IPERF2_CLIENT.search(raw)
    pairs = _IPERF2_CONNECTED.findall(raw)
    if client is not None:
        return [_host(remote) for _, remote in pairs] or [_host(client["host"])]
    return [_host(local) for local, _ in pairs]


def _simpleperf(raw: str) -> List[Optional[str]]:
    records = json_records(raw)
    remote = [_host(r.get("remote")) for r in records if r.get("type") == "conn_start"]
    if any(remote):
        return remote
    server = [_host(r.get("server")) for r in records if r.get("type") == "start"]
    if any(server):
        return server
    return [_host(r.get("local")) for r in records if r.get("type") == "server_conn_start"]


def named_destinations(parsed: Parsed) -> List[str]:
    """The addresses (or host names) a tool's output says it measured towards, in order,
    without repeats; empty when the output names none."""
    if parsed.tool == "ping":
        found = [_host(parsed.summary.get("address") or parsed.summary.get("destination"))]
    elif parsed.tool == "iperf3":
        found = _iperf3(parsed.raw)
    elif parsed.tool == "iperf":
        found = _iperf2(parsed.raw)
    elif parsed.tool == "simpleperf":
        found = _simpleperf(parsed.raw)
    else:
        found = []
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
