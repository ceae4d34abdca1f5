"""What one line of a ping's output is, for every form :mod:`labtools.tools.parsers.ping`
reads: iputils (Linux; IPv4 and IPv6, names, ``-D -O -p -s -I -v -q -f``), busybox, and the
BSD ping of macOS and FreeBSD (``ping`` and ``ping6``).

:func:`classify` names a line's kind and returns the regular expression match that holds
its fields. Numbers are matched with a bounded count of digits, so every number read is
finite and small enough for Python's ``int``.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

_N = r"\d{1,9}"  # a count or size
_F = r"\d{1,9}(?:\.\d{1,9})?"  # a time in ms
_ADDR = r"[^\s()]+"
#: an address, or ``NAME (ADDR)`` (replies and errors of a ping that resolves names)
_FROM = rf"(?P<src>\S+(?: \({_ADDR}\))?)"

#: ``ping -D``: ``[1795275082.645398]`` before a per-packet line (Unix seconds)
TIMESTAMP = re.compile(r"^\[(?P<ts>\d{1,10}(?:\.\d{1,9})?)\]\s*")
#: the largest ``ping -D`` time read (2200-01-01): a later one is not a real clock
MAX_TIMESTAMP_S = 7_258_118_400.0

#: (kind, pattern) in the order they are tried
PATTERNS: List[Tuple[str, "re.Pattern[str]"]] = [
    # headers
    ("header", re.compile(  # iputils, IPv4: PING NAME (ADDR) [from SRC DEV: ]56(84) bytes of data.
        rf"^PING (?P<dest>\S*) \((?P<addr>{_ADDR})\) (?:from \S+ \S*: )?"
        rf"(?P<size>{_N})\({_N}\) bytes of data\.$")),
    ("header", re.compile(  # iputils, IPv6: PING NAME(ADDR) or PING NAME(CNAME (ADDR))
        rf"^PING (?P<dest>[^\s(]*)\((?:[^\s()]* \((?P<addr>{_ADDR})\)|(?P<addr6>{_ADDR}))\) "
        rf"(?:, flow 0x[0-9a-f]{{1,8}}, )?(?:from \S+ \S*: )?(?P<size>{_N}) data bytes$")),
    ("header", re.compile(  # busybox, macOS, FreeBSD: PING NAME (ADDR)[ from SRC]: 56 data bytes
        rf"^PING (?P<dest>\S*) \((?P<addr>{_ADDR})\)(?: from \S+)?: (?P<size>{_N}) data bytes$")),
    ("header", re.compile(  # macOS and FreeBSD ping6: PING6(56=40+8+8 bytes) SRC --> DST
        rf"^PING6?\({_N}={_N}\+{_N}\+(?P<size>{_N}) bytes\) \S+ --> (?P<addr>\S+)$")),
    ("windows", re.compile(r"^Pinging \S+ (?:\[[^\]]+\] )?with \d+ bytes of data:$")),
    # one line per packet
    ("reply", re.compile(
        rf"^(?P<bytes>{_N}) bytes from {_FROM}(?::|,) (?P<seqname>icmp_seq|seq)=(?P<seq>{_N})"
        rf"(?: [a-z]{{1,16}}=\S{{1,32}})*? (?:ttl|hlim)=(?P<ttl>{_N})(?: time=(?P<rtt>{_F}) ?ms)?"
        r"(?P<flags>(?: \((?:DUP!|BAD CHECKSUM!|DIFFERENT ADDRESS!|truncated)\))*)$")),
    ("timeout", re.compile(
        rf"^(?:no answer yet for icmp_seq=|Request timeout for icmp_seq )(?P<seq>{_N})$")),
    ("error", re.compile(  # iputils: From ADDR icmp_seq=N MESSAGE
        rf"^From {_FROM}:? (?:icmp_seq=(?P<seq>{_N}) )?(?P<msg>\S.*)$")),
    ("error", re.compile(  # BSD: 92 bytes from ROUTER (ADDR): Destination Host Unreachable
        rf"^(?P<bytes>{_N}) bytes from {_FROM}(?::|,) (?P<msg>(?:Destination|Time|Frag|Source|"
        r"Redirect|Parameter|Packet too big|Echo Request|Bad|Address|Timestamp|Info|Router|"
        r"Unknown|Mobile|Return)[^=]*)$")),
    # what an error (or ping -v) prints after it: the returned header, its ICMP part
    ("detail", re.compile(r"^Vr HL TOS\s+Len\s+ID\s+Flg\s+off\s+TTL\s+Pro\s+cks\s+Src\s+Dst"
                          r"(?:\s+Data)?$")),
    ("detail", re.compile(r"^[0-9a-f]{1,2}(?:\s+[0-9a-f]{1,4}){9}\s+\S+\s+\S+(?:\s.*)?$")),
    ("detail", re.compile(r"^IP Hdr Dump:$|^(?:[0-9a-f]{4} ?){4,}$")),
    ("detail", re.compile(r"^(?:TCP|UDP): from port \d{1,5}, to port \d{1,5} \(decimal\)$")),
    ("icmp", re.compile(r"^ICMP: type \d{1,3}, code \d{1,3}, size \d{1,6}"
                        r"(?:, id 0x[0-9a-f]{1,4}, seq 0x(?P<seq>[0-9a-f]{1,4}))?$")),
    ("detail", re.compile(r"^wrong data byte #\d{1,9} should be 0x[0-9a-f]{1,2} but was "
                          r"0x[0-9a-f]{1,2}$|^#\d{1,9}\s+(?:[0-9a-f]{1,2} ?)*$")),
    # statistics
    ("title", re.compile(r"^--- (?P<dest>.*) ping6? statistics ---$")),
    ("counts", re.compile(
        r"^(?P<tx>\d{1,12}) packets transmitted, (?P<rx>\d{1,12}) (?:packets )?received"
        r"(?P<extras>(?:, \+?\d{1,12} (?:duplicates|corrupted|errors))*)"
        r"(?:, (?P<loss>\d{1,3}(?:\.\d{1,9})?(?:e[-+]\d{1,3})?)% packet loss)?"
        r"(?:, time (?P<time>\d{1,12}(?:\.\d{1,9})?) ?ms)?"
        r"(?:, \d{1,12} packets out of wait time)?$")),
    ("rtt", re.compile(
        rf"^(?:rtt|round-trip) min/avg/max(?P<label4>/(?:mdev|stddev|std-dev))? = "
        rf"(?P<min>{_F})/(?P<avg>{_F})/(?P<max>{_F})(?:/(?P<mdev>{_F}))? ms"
        rf"(?:, pipe {_N})?(?:, ipg/ewma {_F}/{_F} ms)?$")),
    # ping's own messages
    ("ping_says", re.compile(r"^(?:ping6?|PING): (?P<msg>.+)$")),
    ("note", re.compile(r"^(?P<msg>WARNING: .+|[Uu]nknown host.*)$")),
    ("noise", re.compile(  # -p, -f, Ctrl-C, pipe, -v, SIGQUIT's status line
        r"^(?:PATTERN: 0x[0-9a-f]{1,32}|[.\x08 !EC]+|\^C|pipe \d{1,9}|"
        r"ai->ai_family: \S+, ai->ai_canonname: '.*'|"
        r"\d{1,12}/\d{1,12} packets, \d{1,3}% loss(?:, min/avg/ewma/max = [\d./]+ ms)?)$")),
]

#: ping's messages about one packet it could not send (each is an error of that packet)
SEND_FAILURE = re.compile(r"^(?:sendmsg|sendto|send|local error)\b", re.IGNORECASE)


def strip_timestamp(line: str) -> Tuple[str, Optional[float], bool]:
    """The line without a ``ping -D`` timestamp, the timestamp (Unix seconds) and whether
    it is a time ping could have printed (False: the line is not understood)."""
    m = TIMESTAMP.match(line)
    if m is None:
        return line, None, True
    seconds = float(m["ts"])
    return line[m.end():], seconds, seconds <= MAX_TIMESTAMP_S


def classify(line: str) -> Tuple[str, Optional["re.Match[str]"]]:
    """``(kind, match)`` of one stripped line: kind is one of ``empty``, ``header``,
    ``windows``, ``reply``, ``timeout``, ``error``, ``detail``, ``icmp``, ``title``,
    ``counts``, ``rtt``, ``ping_says``, ``note``, ``noise``, or ``unparsed`` (match None)."""
    if not line:
        return "empty", None
    if line.startswith("^C") and line != "^C":
        line = line[2:]
    for kind, pattern in PATTERNS:
        m = pattern.match(line)
        if m is not None:
            if kind == "rtt" and (m["label4"] is None) != (m["mdev"] is None):
                continue  # three names and four numbers, or the other way round
            return kind, m
    return "unparsed", None
