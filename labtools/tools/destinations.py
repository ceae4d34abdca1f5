"""What a tool's output names as its destination: the address (or host name) each
measured connection went to, read from the text the tool printed.

- ping: the header's address (``PING h4 (10.0.2.1)``; BSD ``ping6``: ``SRC --> DST``), from
  the parser's summary;
- iperf3 JSON: a client's ``start.connected[].remote_host`` (else
  ``start.connecting_to.host``), a server's ``start.connected[].local_host``;
- iperf 2 text: a client's ``connected with ADDR`` (else ``Client connecting to ADDR``), a
  server's ``local ADDR``;
- simpleperf JSON lines: a client's ``conn_start`` ``remote`` (else ``start`` ``server``), a
  server's ``server_conn_start`` ``local``.

Each function takes the parsed output and returns the destinations in order (None where a
connection names none); :data:`labtools.tools.registry.TOOLS` says which one reads which
tool. Judging them against a pair is :mod:`labtools.judge.destination`'s.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

from labtools.tools.parsers.base import Parsed
from labtools.tools.parsers.simpleperf import json_records

_NAN = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
_IPERF2_CLIENT = re.compile(r"^Client connecting to (?P<host>[^\s,]+),", re.MULTILINE)
_IPERF2_CONNECTED = re.compile(
    r"local (?P<local>\S+) port \d+ connected with (?P<remote>\S+) port \d+")


def host_of(value: Any) -> Optional[str]:
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


def iperf3_destinations(parsed: Parsed) -> List[Optional[str]]:
    """Where an iperf3 JSON report's connections went (client) or arrived (server)."""
    doc = _iperf3_document(parsed.raw)
    if doc is None:
        return []
    start = doc["start"]
    listed = start.get("connected")
    connected = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    target = start.get("connecting_to")
    if isinstance(target, dict):  # the client's own output
        remote = [host_of(c.get("remote_host")) for c in connected]
        return remote if any(remote) else [host_of(target.get("host"))]
    return [host_of(c.get("local_host")) for c in connected]


def iperf2_destinations(parsed: Parsed) -> List[Optional[str]]:
    """Where an iperf 2 text report's connections went (client) or arrived (server)."""
    client = _IPERF2_CLIENT.search(parsed.raw)
    pairs = _IPERF2_CONNECTED.findall(parsed.raw)
    if client is not None:
        return [host_of(remote) for _, remote in pairs] or [host_of(client["host"])]
    return [host_of(local) for local, _ in pairs]


def simpleperf_destinations(parsed: Parsed) -> List[Optional[str]]:
    """Where a simpleperf JSON-lines report's connections went (client) or arrived
    (server)."""
    records = json_records(parsed.raw)
    remote = [host_of(r.get("remote")) for r in records if r.get("type") == "conn_start"]
    if any(remote):
        return remote
    server = [host_of(r.get("server")) for r in records if r.get("type") == "start"]
    if any(server):
        return server
    return [host_of(r.get("local")) for r in records if r.get("type") == "server_conn_start"]


def ping_destinations(parsed: Parsed) -> List[Optional[str]]:
    """The address ping's header names (its parser's summary)."""
    return [host_of(parsed.summary.get("address") or parsed.summary.get("destination"))]
