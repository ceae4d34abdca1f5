"""Measurements typed by hand: which probe call a command line typed on a node amounts to.

A notebook's by-hand runs (:func:`labtools.teach.tool_runs.run_on`) and ``labtools shell
NODE`` keep each command line with its output (:mod:`labtools.results.transcripts`). A
command that pings another node, or sends it a rate test, measures what a probe call
would; :func:`typed_calls` reads it as one (:class:`~labtools.judge.prediction_order.MeasuredCall`)
so that the predict-first check counts it (:mod:`labtools.judge.prediction_order`):

- ``ping``/``ping6``/``fping`` to a node: the ``ping`` probe between the two;
- ``iperf3 -c`` / ``iperf -c`` to a node: the ``iperf3`` probe (its ``-w`` window, in
  bytes, K/M/G being 1024-based as iperf reads them), or ``iperf_udp`` with ``-u``;
- a simpleperf client (``... simpleperf ... -c -I ADDRESS``): the ``simpleperf`` probe.

A node is named by its address in the lab's topology (:func:`node_addresses`) or by its
name. Lines joined by ``;``, ``&&``, ``||`` or ``|`` are read one by one, and ``sudo``,
``timeout SECONDS``, ``time``, ``nohup``, ``exec`` and ``stdbuf``/``nice`` in front of a
tool are skipped. Anything else (a shell script, an alias) is not recognised: off a
course the order is on the honour system (``docs/students.md``).
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime
from typing import Dict, Iterator, List, Mapping, Optional

from labtools.judge.prediction_order import MeasuredCall
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology

#: words typed before a tool that run it (the tool is the next word)
_WRAPPERS = frozenset({"sudo", "time", "nohup", "exec", "nice", "stdbuf", "command"})
#: what separates two commands on one line
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMG]?)B?$", re.IGNORECASE)
_UNIT = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def node_addresses(topo: Topology) -> Dict[str, str]:
    """``{address or name: node}`` for every host and router of ``topo``."""
    named = {iface.ip: iface.node for iface in compute_routing(topo).addressing.interfaces}
    named.update({node.name: node.name for node in topo.nodes if node.has_ip})
    return named


def _commands(line: str) -> Iterator[List[str]]:
    """The words of each command of ``line`` (none when it is not shell syntax)."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return
    current: List[str] = []
    for word in words:
        if word in _SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def _tool(words: List[str]) -> List[str]:
    """``words`` from the tool on (wrappers and their options skipped)."""
    while words:
        head = words[0].rsplit("/", 1)[-1]
        if head == "timeout":
            words = words[1:]
            while words and (words[0].startswith("-") or words[0][:1].isdigit()):
                words = words[1:]
        elif head in _WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        else:
            return words
    return words


def _option(words: List[str], *names: str) -> Optional[str]:
    """The value after the first of ``names`` in ``words`` (``-w 64K``, ``--window=64K``)."""
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if name.startswith("--") and word.startswith(name + "="):
                return word[len(name) + 1:]
            if not name.startswith("--") and word.startswith(name) and len(word) > len(name):
                return word[len(name):]
    return None


def _bytes(text: Optional[str]) -> Optional[int]:
    found = _SIZE.match(text.strip()) if text else None
    return None if found is None else int(float(found.group(1)) * _UNIT[found.group(2).upper()])


def _call(node: str, words: List[str], nodes: Mapping[str, str]) -> Optional[Dict]:
    """The probe and arguments of one command's ``words`` (a tool first), or None."""
    tool = words[0].rsplit("/", 1)[-1] if words else ""
    if tool in ("python", "python3") and "-m" in words:
        tool = words[words.index("-m") + 1] if words.index("-m") + 1 < len(words) else ""
    elif tool in ("python", "python3") and len(words) > 1:
        tool = words[1].rsplit("/", 1)[-1]
    if tool in ("ping", "ping6", "fping"):
        dst = next((nodes[w] for w in words[1:] if w in nodes and nodes[w] != node), None)
        return None if dst is None else {"probe": "ping", "src": node, "dst": dst}
    if tool in ("iperf", "iperf3"):
        dst = nodes.get(_option(words, "-c", "--client") or "")
        if dst is None or dst == node:
            return None
        if "-u" in words or "--udp" in words:
            return {"probe": "iperf_udp", "src": node, "dst": dst}
        return {"probe": "iperf3", "src": node, "dst": dst,
                "window_bytes": _bytes(_option(words, "-w", "--window"))}
    if "simpleperf" in tool and "-c" in words:
        dst = nodes.get(_option(words, "-I", "--serverip") or "")
        if dst is None or dst == node:
            return None
        return {"probe": "simpleperf", "src": node, "dst": dst}
    return None


def typed_calls(node: str, line: str, started_at: datetime, nodes: Mapping[str, str],
                source: str = "") -> List[MeasuredCall]:
    """The measurements of the command ``line`` typed on ``node`` at ``started_at`` (aware
    UTC): one per command of the line the module docstring lists. ``nodes`` maps addresses
    and names to nodes (:func:`node_addresses`); ``source`` says what ran it, for the
    feedback (``run_on on h1 in notebook intro``)."""
    calls = []
    for words in _commands(line):
        found = _call(node, _tool(words), nodes)
        if found is not None:
            probe = found.pop("probe")
            calls.append(MeasuredCall(probe, found, started_at, source))
    return calls
