"""The simpleperf wire protocol (version 2), over TCP.

In one paragraph: the client opens ``P`` TCP connections; on each it sends a HELLO, gets
a WELCOME, then sends data (any bytes) for as long or as much as planned, then a 12-byte
END record carrying the number of data bytes it sent, then closes its sending side. The
server counts every byte; when the connection's sending side closes, the transfer ended
as planned if and only if the last 12 bytes are an END record whose count equals the
bytes before it. Anything else (the client stopped early or was killed, the connection
broke: TCP closes a killed process's connections with a FIN too) is a transfer cut
short. The server answers with an ACK holding the data bytes it received.

A client session is ``P`` independent TCP connections (``1 <= P <= 5``) to the server's
port, each tagged with the same random 16-byte session id, so the server can group them
and several clients (or several sessions of one client) can share one server.

Every connection goes through the same steps (all integers in network byte order)::

    client -> server  HELLO    28 bytes  "!4sHBBI16s"
                               magic b"SPRF", protocol version (2), connection number
                               (1..P), P, receiver report interval in ms (0 = none,
                               else 100..3 600 000), session id (16 bytes)
    server -> client  WELCOME   8 bytes  "!4sH2x"
                               magic b"SPOK" and the server's protocol version, or
                               b"SPNO" and its version when it refuses the HELLO
                               (then it closes the connection)
    client -> server  DATA     any number of bytes (the kit's client sends zeros; their
                               content is not looked at)
    client -> server  END      12 bytes  "!4sQ": magic b"SPND", number of DATA bytes
                               sent; only when the client sent all it planned (its time
                               ran out or its amount is sent). Then the client
                               half-closes the connection (``shutdown(SHUT_WR)``).
    server -> client  PROG*    20 bytes each "!4sQQ": magic b"SPIV", time since WELCOME in
                               microseconds, DATA bytes received so far (an END already
                               received is not counted); sent during DATA, about once per
                               requested interval
    server -> client  ACK      20 bytes  "!4sQQ": magic b"SPAK", time from WELCOME to the
                               end of the data in microseconds, DATA bytes received (the
                               END record not included); then the server closes the
                               connection. The server sends it whenever the client's
                               sending side closed, with or without END, so a client
                               stopped by its user still learns what arrived.

Why a trailer and not a length prefix: the data is bulk bytes that the server never has
to look at; only the last 12 bytes before the FIN matter, so the server keeps just those.
A false END needs the payload to end in b"SPND" followed by its own exact length.

The server's ACK count is the truth about what crossed the network; the client's own
count (bytes accepted by ``send``) includes what was still queued in its socket buffer
when it measured. The client drains PROG records while it sends, so they never fill its
receive buffer. Times in PROG and ACK are on the server's clock, from its WELCOME. A PROG
or ACK whose time or count goes backwards is malformed.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import List, Optional, Tuple

#: protocol version spoken by this module
VERSION = 2

HELLO = struct.Struct("!4sHBBI16s")
WELCOME = struct.Struct("!4sH2x")
RECORD = struct.Struct("!4sQQ")  # PROG and ACK share one layout
END = struct.Struct("!4sQ")

MAGIC_HELLO = b"SPRF"
MAGIC_WELCOME = b"SPOK"
MAGIC_REFUSE = b"SPNO"
MAGIC_PROG = b"SPIV"
MAGIC_ACK = b"SPAK"
MAGIC_END = b"SPND"

#: largest number of parallel connections in one session
MAX_PARALLEL = 5
#: receiver report intervals a HELLO may ask for, in ms (0 = none)
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: most PROG records a connection may send (36 000 at -t 3600 -i 0.1); more is malformed
MAX_PROGRESS = 100_000


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
    """The HELLO in ``data`` (28 bytes), or None if it is not a valid HELLO (the version is
    returned as sent: the caller refuses another version)."""
    if len(data) != HELLO.size:
        return None
    magic, version, conn, parallel, interval_ms, session = HELLO.unpack(data)
    if magic != MAGIC_HELLO or not 1 <= parallel <= MAX_PARALLEL or not 1 <= conn <= parallel:
        return None
    if interval_ms and not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
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


def encode_end(data_bytes: int) -> bytes:
    """The 12 END bytes that follow ``data_bytes`` bytes of DATA."""
    return END.pack(MAGIC_END, data_bytes)


class EndTracker:
    """The receiving side's view of the END record: keeps the last 12 bytes received.

    Attributes:
        received: every byte received after the WELCOME (DATA and END), bytes.
    """

    def __init__(self) -> None:
        self.received = 0
        self._tail = b""

    def add(self, chunk: memoryview) -> None:
        """Note a received chunk (only its last 12 bytes are kept)."""
        size = len(chunk)
        self.received += size
        if size >= END.size:
            self._tail = bytes(chunk[size - END.size:])
        else:
            self._tail = (self._tail + bytes(chunk))[-END.size:]

    @property
    def ended(self) -> bool:
        """True when the bytes so far end with a valid END record (its count equals the
        bytes before it): the transfer ended as the client planned, if nothing follows."""
        if len(self._tail) < END.size:
            return False
        magic, count = END.unpack(self._tail)
        return magic == MAGIC_END and count == self.received - END.size

    @property
    def data_bytes(self) -> int:
        """DATA bytes received so far: everything but a valid END record."""
        return self.received - END.size if self.ended else self.received


@dataclass
class RecordReader:
    """Splits the server's reply stream into PROG and ACK records.

    Attributes:
        progress: (elapsed_s, cumulative bytes) of every PROG record seen so far.
        ack: (elapsed_s, total bytes) once the ACK has arrived, else None.
        malformed: True once a record with an unknown magic was seen, or one whose time
            or count went backwards.
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
            last_s, last_bytes = self.progress[-1] if self.progress else (0.0, 0)
            point = (elapsed_us / 1e6, total)
            if magic not in (MAGIC_PROG, MAGIC_ACK) or point[0] < last_s or \
                    total < last_bytes or len(self.progress) >= MAX_PROGRESS:
                self.malformed = True
            elif magic == MAGIC_PROG:
                self.progress.append(point)
            else:
                self.ack = point
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
