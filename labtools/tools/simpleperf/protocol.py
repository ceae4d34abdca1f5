"""The simpleperf wire protocol (version 1), over TCP.

A client session is ``P`` independent TCP connections (``1 <= P <= 5``) to the server's
port, each tagged with the same random 16-byte session id, so the server can group them
and several clients (or several sessions of one client) can share one server.

Every connection goes through the same four steps (all integers in network byte order)::

    client -> server  HELLO    28 bytes  "!4sHBBI16s"
                               magic b"SPRF", protocol version (1), connection number
                               (1..P), P, receiver report interval in ms (0 = none),
                               session id (16 bytes)
    server -> client  WELCOME   8 bytes  "!4sH2x"
                               magic b"SPOK" and the server's protocol version, or
                               b"SPNO" and its version when it refuses the HELLO
                               (then it closes the connection)
    client -> server  DATA     any number of bytes (their content is ignored), until the
                               client half-closes the connection (``shutdown(SHUT_WR)``):
                               the TCP FIN is the final marker, so the server's count is
                               exact whatever the payload contains
    server -> client  PROG*    20 bytes each "!4sQQ": magic b"SPIV", time since WELCOME in
                               microseconds, cumulative payload bytes received so far;
                               sent during DATA, about once per requested interval
    server -> client  ACK      20 bytes  "!4sQQ": magic b"SPAK", time from WELCOME to the
                               FIN in microseconds, total payload bytes received; then the
                               server closes the connection

The server's ACK count is the truth about what crossed the network; the client's own
count (bytes accepted by ``send``) includes what was still queued in its socket buffer
when it measured. The client drains PROG records while it sends, so they never fill its
receive buffer. Times in PROG and ACK are on the server's clock, from its WELCOME.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import List, Optional, Tuple

#: protocol version spoken by this module
VERSION = 1

HELLO = struct.Struct("!4sHBBI16s")
WELCOME = struct.Struct("!4sH2x")
RECORD = struct.Struct("!4sQQ")  # PROG and ACK share one layout

MAGIC_HELLO = b"SPRF"
MAGIC_WELCOME = b"SPOK"
MAGIC_REFUSE = b"SPNO"
MAGIC_PROG = b"SPIV"
MAGIC_ACK = b"SPAK"

#: largest number of parallel connections in one session
MAX_PARALLEL = 5


@dataclass(frozen=True)
class Hello:
    """A decoded HELLO: which connection of which session, and the report interval."""

    conn: int
    parallel: int
    interval_ms: int
    session: bytes
    version: int = VERSION

    def encode(self) -> bytes:
        """The 28 HELLO bytes."""
        return HELLO.pack(
            MAGIC_HELLO, self.version, self.conn, self.parallel, self.interval_ms, self.session
        )


def decode_hello(data: bytes) -> Optional[Hello]:
    """The HELLO in ``data`` (28 bytes), or None if it is not a valid version-1 HELLO."""
    if len(data) != HELLO.size:
        return None
    magic, version, conn, parallel, interval_ms, session = HELLO.unpack(data)
    if magic != MAGIC_HELLO or not 1 <= parallel <= MAX_PARALLEL or not 1 <= conn <= parallel:
        return None
    return Hello(conn, parallel, interval_ms, session, version)


def encode_welcome(accept: bool) -> bytes:
    """The 8 WELCOME bytes: accepted (``SPOK``) or refused (``SPNO``)."""
    return WELCOME.pack(MAGIC_WELCOME if accept else MAGIC_REFUSE, VERSION)


def decode_welcome(data: bytes) -> Tuple[bool, int]:
    """(accepted, server protocol version) from the 8 WELCOME bytes.

    Anything that is not a WELCOME counts as refused with version 0.
    """
    if len(data) != WELCOME.size:
        return False, 0
    magic, version = WELCOME.unpack(data)
    if magic == MAGIC_WELCOME and version == VERSION:
        return True, version
    return False, version if magic in (MAGIC_WELCOME, MAGIC_REFUSE) else 0


def encode_record(magic: bytes, elapsed_s: float, total_bytes: int) -> bytes:
    """A PROG or ACK record: ``elapsed_s`` seconds since WELCOME, cumulative bytes."""
    return RECORD.pack(magic, max(0, int(round(elapsed_s * 1e6))), total_bytes)


@dataclass
class RecordReader:
    """Splits the server's reply stream into PROG and ACK records.

    Attributes:
        progress: (elapsed_s, cumulative bytes) of every PROG record seen so far.
        ack: (elapsed_s, total bytes) once the ACK has arrived, else None.
        malformed: True once a record with an unknown magic was seen.
    """

    progress: List[Tuple[float, int]]
    ack: Optional[Tuple[float, int]] = None
    malformed: bool = False
    _pending: bytes = b""

    def feed(self, data: bytes) -> None:
        """Add received bytes; complete records are decoded at once."""
        buf = self._pending + data
        used = 0
        while len(buf) - used >= RECORD.size and self.ack is None and not self.malformed:
            magic, elapsed_us, total = RECORD.unpack_from(buf, used)
            used += RECORD.size
            if magic == MAGIC_PROG:
                self.progress.append((elapsed_us / 1e6, total))
            elif magic == MAGIC_ACK:
                self.ack = (elapsed_us / 1e6, total)
            else:
                self.malformed = True
        self._pending = buf[used:]


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock``, or fewer if the peer closed first."""
    chunks = []
    remaining = size
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
