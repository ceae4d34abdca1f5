"""Single values of a course's settings, checked: a file read whole (bounded, UTF-8), the
public address, the listening address, the servers' range of addresses, a memory size;
and :class:`SettingsError`, a bad setting in one line. Standard library only
(course_settings.py puts them together).
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from pathlib import Path
from typing import Iterable, Tuple
from urllib.parse import urlsplit

from host_facts import HostNetwork

#: the most a settings file or a students file may hold
MAX_FILE_BYTES = 1 << 20
#: the servers' range lies in one of these (RFC 1918)
PRIVATE_RANGES = tuple(ipaddress.IPv4Network(n) for n in
                       ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_HOST = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*"
                   r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", re.IGNORECASE)
_MEMORY = re.compile(r"([1-9][0-9]{0,8})([MG])")


class SettingsError(ValueError):
    """A setting that is missing, of the wrong type or out of range (one line)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def read_limited(path: Path, what: str) -> str:
    """The UTF-8 text of regular file ``path``, at most :data:`MAX_FILE_BYTES` (no more
    is read); :class:`SettingsError` naming ``what`` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as err:
        raise SettingsError(f"{what}: cannot read {str(path)!r}: "
                            f"{getattr(err, 'strerror', None) or err}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SettingsError(f"{what}: {str(path)!r} is not a regular file")
        data = b""
        while len(data) <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as err:
        raise SettingsError(f"{what}: cannot read {str(path)!r}: {err.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise SettingsError(f"{what}: {str(path)!r} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SettingsError(f"{what}: {str(path)!r} is not UTF-8 text (byte {err.start})") \
            from None


def listen_address(text: str) -> Tuple[str, int]:
    ip, sep, port = text.rpartition(":")
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        raise SettingsError(f"hub.listen {text!r} is not ADDRESS:PORT") from None
    if not sep or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:
        raise SettingsError(f"hub.listen {text!r} is not ADDRESS:PORT (port 1-65535)")
    return ip, int(port)


def public_url(text: str) -> str:
    """``hub.public_url``: http(s)://HOST[:PORT], nothing more."""
    url = text.rstrip("/")
    bad = SettingsError(f"hub.public_url {text!r:.100} is not like https://lab.example.edu")
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError:
        raise bad from None
    if (parts.scheme not in ("http", "https") or not host or parts.path or parts.query
            or parts.fragment or "@" in parts.netloc or "#" in url or "?" in url
            or not (_HOST.fullmatch(host) or is_ip(host))):
        raise bad
    return url


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_subnets(text: str, networks: Iterable[HostNetwork],
                  own_prefix: str = "") -> ipaddress.IPv4Network:
    """``hub.student_subnets``: an IPv4 range of /20 or more inside a private range
    (:data:`PRIVATE_RANGES`), on none of the host's ``networks`` (those of interfaces
    named with ``own_prefix``, the course's own bridges, left out)."""
    try:
        subnets = ipaddress.ip_network(text)
    except ValueError as err:
        raise SettingsError(f"hub.student_subnets: {err}") from None
    if not isinstance(subnets, ipaddress.IPv4Network) or subnets.prefixlen > 20:
        raise SettingsError("hub.student_subnets must be an IPv4 range of /20 or more")
    if not any(subnets.subnet_of(private) for private in PRIVATE_RANGES):
        raise SettingsError(f"hub.student_subnets {subnets} is not inside a private range "
                            "(10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)")
    for name, net in networks:
        if not (own_prefix and name.startswith(own_prefix)) and subnets.overlaps(net):
            raise SettingsError(f"hub.student_subnets {subnets} overlaps {net} of this "
                                f"machine ({name!r:.20})")
    return subnets


def memory_bytes(text: str) -> int:
    """Bytes of a memory size like ``2G`` or ``1536M`` (binary units, as Docker's)."""
    match = _MEMORY.fullmatch(text)
    if not match:
        raise SettingsError(f"servers.mem_limit {text!r:.40} is not like 2G or 1536M")
    return int(match.group(1)) << (20 if match.group(2) == "M" else 30)
