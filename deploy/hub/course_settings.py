"""A course's hub settings: one TOML file (course.example.toml explains every key), read,
checked and completed with defaults, and the names and numbers derived from them.

Pure and standard-library only: the hub's configuration (jupyterhub_config.py), its
command line (labhub.py) and the kit's tests use it alike. A bad setting is a
:class:`SettingsError` naming the key, one line.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Tuple
from urllib.parse import urlsplit

import tomllib

#: user ids of the students' and instructor's servers: FIRST_UID + the server's number
#: (each user a uid of their own, so nbgrader's exchange keeps students apart)
FIRST_UID = 20000
#: servers numbered above this get no subnet and no uid (a course of 4000 is far beyond)
MAX_USERS = 4000
#: each server's network: a /28 of the course's range (gateway, the server, room to spare)
SUBNET_PREFIX = 28
#: the authenticators a course may choose: kind -> JupyterHub authenticator class
AUTHENTICATORS: Dict[str, str] = {
    "native": "nativeauthenticator.NativeAuthenticator",
    "github": "oauthenticator.github.GitHubOAuthenticator",
    "gitlab": "oauthenticator.gitlab.GitLabOAuthenticator",
    "google": "oauthenticator.google.GoogleOAuthenticator",
    "azuread": "oauthenticator.azuread.AzureAdOAuthenticator",
    "generic-oauth": "oauthenticator.generic.GenericOAuthenticator",
    "lti13": "ltiauthenticator.lti13.auth.LTI13Authenticator",
    "dummy": "jupyterhub.auth.DummyAuthenticator",
}
#: the environment variable without which the dummy authenticator is refused
TESTING_VARIABLE = "LABHUB_TESTING"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_COURSE = re.compile(r"[a-z0-9][a-z0-9-]{0,23}")
_MEMORY = re.compile(r"[1-9][0-9]*[MG]")


class SettingsError(ValueError):
    """A setting that is missing, of the wrong type or out of range (one line)."""


@dataclass(frozen=True)
class CourseSettings:
    """Everything a course's hub needs (see course.example.toml for the meaning)."""

    course_id: str
    instructor: str
    students: Tuple[str, ...]
    admins: Tuple[str, ...]
    public_url: str
    listen_ip: str
    listen_port: int
    subdomains: bool
    tls_cert: str
    tls_key: str
    api_port: int
    proxy_api_port: int
    data_dir: Path
    subnets: ipaddress.IPv4Network
    image: str
    cpu_limit: float
    mem_limit: str
    pids_limit: int
    idle_timeout_s: int
    cull_every_s: int
    spawn_timeout_s: int
    internet: bool
    copy_notebooks: bool
    auth_kind: str
    auth_config: Dict[str, Any] = field(default_factory=dict)

    @property
    def users(self) -> Tuple[str, ...]:
        """Everyone who may log in: the instructor, the students and the admins."""
        return tuple(dict.fromkeys((self.instructor, *self.students, *self.admins)))

    @property
    def authenticator_class(self) -> str:
        """The JupyterHub authenticator class of :attr:`auth_kind`."""
        return AUTHENTICATORS[self.auth_kind]


def _table(data: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"[{key}] must be a table")
    return value


def _get(table: Dict[str, Any], where: str, key: str, kind: type, default: Any = None) -> Any:
    """``table[key]`` of type ``kind`` (an int is a float too), or ``default`` when absent;
    absent without a default is an error."""
    if key not in table:
        if default is None:
            raise SettingsError(f"{where}.{key} is missing")
        return default
    value = table[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SettingsError(f"{where}.{key} must be a {kind.__name__}, not {value!r}")
    return value


def _names(table: Dict[str, Any], where: str, key: str) -> Tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where}.{key} must be a list of user names")
    for name in value:
        if not _NAME.fullmatch(name):
            raise SettingsError(f"{where}.{key}: {name!r} is not a user name "
                                "(lower-case letters, digits, . _ -; at most 63)")
    return tuple(value)


def _students(course: Dict[str, Any], base: Path) -> Tuple[str, ...]:
    """``students`` and the names in ``students_file`` (one a line, # comments)."""
    names = list(_names(course, "course", "students"))
    if "students_file" in course:
        path = base / _get(course, "course", "students_file", str)
        try:
            lines = path.read_text().splitlines()
        except OSError as err:
            raise SettingsError(f"course.students_file: cannot read {path}: "
                                f"{err.strerror}") from None
        extra = [line.split("#")[0].strip() for line in lines]
        names += _names({"students_file": [n for n in extra if n]}, "course", "students_file")
    return tuple(dict.fromkeys(names))


def _listen(text: str) -> Tuple[str, int]:
    ip, sep, port = text.rpartition(":")
    try:
        ipaddress.ip_address(ip)
        number = int(port)
    except ValueError:
        raise SettingsError(f"hub.listen {text!r} is not ADDRESS:PORT") from None
    if not sep or not 0 < number < 65536:
        raise SettingsError(f"hub.listen {text!r} is not ADDRESS:PORT")
    return ip, number


def _port(table: Dict[str, Any], key: str, default: int) -> int:
    value = _get(table, "hub", key, int, default)
    if not 0 < value < 65536:
        raise SettingsError(f"hub.{key} {value} is not a port")
    return int(value)


def _hub(hub: Dict[str, Any], base: Path) -> Dict[str, Any]:
    public_url = _get(hub, "hub", "public_url", str).rstrip("/")
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path:
        raise SettingsError(f"hub.public_url {public_url!r} is not like https://lab.example.edu")
    cert = _get(hub, "hub", "tls_cert", str, "")
    key = _get(hub, "hub", "tls_key", str, "")
    if parts.scheme == "https" and not (cert and key):
        raise SettingsError("hub.public_url is https: hub.tls_cert and hub.tls_key are needed "
                            "(or put a TLS proxy in front and use http on loopback)")
    ip, port = _listen(_get(hub, "hub", "listen", str, "0.0.0.0:443"))
    try:
        subnets = ipaddress.ip_network(_get(hub, "hub", "student_subnets", str, "10.213.0.0/16"))
    except ValueError as err:
        raise SettingsError(f"hub.student_subnets: {err}") from None
    if not isinstance(subnets, ipaddress.IPv4Network) or subnets.prefixlen > 20:
        raise SettingsError("hub.student_subnets must be an IPv4 range of /20 or more")
    return {
        "public_url": public_url, "listen_ip": ip, "listen_port": port,
        "subdomains": _get(hub, "hub", "subdomains", bool, True),
        "tls_cert": str(base / cert) if cert else "", "tls_key": str(base / key) if key else "",
        "api_port": _port(hub, "api_port", 8081),
        "proxy_api_port": _port(hub, "proxy_api_port", 8001),
        "data_dir": base / _get(hub, "hub", "data_dir", str),
        "subnets": subnets,
    }


def _servers(servers: Dict[str, Any]) -> Dict[str, Any]:
    mem = _get(servers, "servers", "mem_limit", str, "2G")
    if not _MEMORY.fullmatch(mem):
        raise SettingsError(f"servers.mem_limit {mem!r} is not like 2G or 1536M")
    cpu = _get(servers, "servers", "cpu_limit", float, 1.0)
    if not 0.1 <= cpu <= 64:
        raise SettingsError(f"servers.cpu_limit {cpu} is not within 0.1-64 cores")
    numbers = {key: _get(servers, "servers", key, int, default) for key, default in (
        ("pids_limit", 1024), ("idle_timeout_s", 3600), ("cull_every_s", 600),
        ("spawn_timeout_s", 300))}
    for key, value in numbers.items():
        if value < 1:
            raise SettingsError(f"servers.{key} must be at least 1")
    return {"image": _get(servers, "servers", "image", str, "labtools-lab:latest"),
            "cpu_limit": cpu, "mem_limit": mem, **numbers,
            "internet": _get(servers, "servers", "internet", bool, False),
            "copy_notebooks": _get(servers, "servers", "copy_notebooks", bool, True)}


def parse(data: Dict[str, Any], base: Path) -> CourseSettings:
    """Settings from the parsed TOML ``data``; relative paths are relative to ``base``."""
    course, auth = _table(data, "course"), _table(data, "auth")
    unknown = sorted(set(data) - {"course", "hub", "servers", "auth"})
    if unknown:
        raise SettingsError(f"unknown section(s) {', '.join(unknown)}")
    course_id = _get(course, "course", "id", str)
    if not _COURSE.fullmatch(course_id):
        raise SettingsError(f"course.id {course_id!r}: lower-case letters, digits and -, "
                            "at most 24")
    instructor = _get(course, "course", "instructor", str)
    _names({"instructor": [instructor]}, "course", "instructor")
    kind = _get(auth, "auth", "kind", str, "native")
    if kind not in AUTHENTICATORS:
        raise SettingsError(f"auth.kind {kind!r}: one of {', '.join(AUTHENTICATORS)}")
    config = _table(auth, "config") if "config" in auth else {}
    return CourseSettings(
        course_id=course_id, instructor=instructor, students=_students(course, base),
        admins=_names(course, "course", "admins"), **_hub(_table(data, "hub"), base),
        **_servers(_table(data, "servers")), auth_kind=kind, auth_config=dict(config))


def load(path: Path) -> CourseSettings:
    """The settings in TOML file ``path``."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise SettingsError(f"cannot read {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{path} is not TOML: {err}") from None
    return parse(data, path.resolve().parent)


def server_number(numbers: Dict[str, int], user: str) -> Tuple[int, Dict[str, int]]:
    """The number of ``user``'s server (1, 2, ...: given once, kept for ever, never reused)
    and the numbers with it. Kept in the hub's data folder (uids.json) beside the volumes'
    lifetime, not the hub's database: a user removed and added again, or a new database,
    must find their files owned by their user id still."""
    if user in numbers:
        return numbers[user], numbers
    number = max(numbers.values(), default=0) + 1
    if number > MAX_USERS:
        raise SettingsError(f"more than {MAX_USERS} users have had a server in this course")
    return number, {**numbers, user: number}


def server_uid(number: int) -> int:
    """The user id of server number ``number`` (:func:`server_number`)."""
    if not 1 <= number <= MAX_USERS:
        raise SettingsError(f"server number {number} is outside 1-{MAX_USERS}")
    return FIRST_UID + number


def server_subnet(subnets: ipaddress.IPv4Network, number: int) -> ipaddress.IPv4Network:
    """The /28 of server number ``number``'s network (the range's first one is unused)."""
    server_uid(number)
    if number >= 2 ** (SUBNET_PREFIX - subnets.prefixlen):
        raise SettingsError(f"hub.student_subnets {subnets} has no subnet for user {number}")
    size = 2 ** (32 - SUBNET_PREFIX)
    return ipaddress.IPv4Network((int(subnets.network_address) + number * size, SUBNET_PREFIX))


def course_tag(course_id: str) -> str:
    """Five characters naming the course in interface and firewall chain names."""
    return "l" + hashlib.sha256(course_id.encode()).hexdigest()[:4]


def bridge_name(course_id: str, user: str) -> str:
    """The bridge of ``user``'s server network (15 characters at most, as Linux wants);
    every bridge of the course starts with :func:`course_tag` and ``-``."""
    return f"{course_tag(course_id)}-{hashlib.sha256(user.encode()).hexdigest()[:8]}"


def resource_prefix(course_id: str) -> str:
    """What every container, volume and network of the course is named with: a user's are
    ``PREFIX + "u-" + escaped user name``, the course's own ``PREFIX + what``. A course id
    has no ``_`` and an escaped user name neither, so no course's names start with
    another's prefix."""
    return f"labhub-{course_id}_"
