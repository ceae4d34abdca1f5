"""A course's hub settings: one TOML file (course.example.toml explains every key), read,
checked whole and completed with defaults, and the names and numbers derived from them.

Every key is known (a typo is refused, naming the closest key), typed and ranged, and
checked against this machine (host_facts.py): ports distinct, limits within its CPUs,
memory and process ids, the servers' range private and off its networks. Relative paths
are relative to the settings file's folder. Standard library only: the hub's
configuration (jupyterhub_config.py), its command line (labhub.py) and the kit's tests use
it alike. A bad setting is a :class:`SettingsError` naming the key, one line.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import tomllib
from data_folder import unsafe
from host_facts import Machine, this_machine
from settings_values import (  # noqa: F401 - SettingsError and the checks are the settings'
    MAX_FILE_BYTES,
    PRIVATE_RANGES,
    SettingsError,
    check_subnets,
    listen_address,
    memory_bytes,
    public_url,
    read_limited,
)

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
#: every key of every section (course.example.toml documents each)
KEYS: Dict[str, Tuple[str, ...]] = {
    "course": ("id", "instructor", "students", "students_file", "admins"),
    "hub": ("public_url", "listen", "subdomains", "tls_cert", "tls_key", "data_dir",
            "api_port", "proxy_api_port", "record_port", "student_subnets"),
    "servers": ("image", "instructor_image", "cpu_limit", "mem_limit", "pids_limit",
                "idle_timeout_s", "cull_every_s", "spawn_timeout_s", "internet", "copy_notebooks"),
    "auth": ("kind", "config"),
}
#: bounds that hold whatever the machine: cores, memory, processes, waits
MIN_CPUS, MAX_CPUS = 0.1, 64.0
MIN_MEMORY_BYTES = 256 << 20
MIN_PIDS, MAX_PIDS = 64, 1 << 22  # the kernel's PID_MAX_LIMIT
MAX_WAIT_S = 30 * 24 * 3600
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_COURSE = re.compile(r"[a-z0-9][a-z0-9-]{0,23}")
_IMAGE = re.compile(r"(?=.{1,255}$)[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                    r"(@sha256:[0-9a-f]{64})?")
_TRAIT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


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
    #: the course's record (record_service.py: answers and measurements, the hub's time)
    record_port: int
    data_dir: Path
    subnets: ipaddress.IPv4Network
    #: the students' servers' image (the student edition)
    image: str
    #: the instructor's server's image (the whole kit: autograde runs the hidden tests)
    instructor_image: str
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
    settings_dir: Path = Path("/")

    @property
    def users(self) -> Tuple[str, ...]:
        """Everyone who may log in: the instructor, the students and the admins."""
        return tuple(dict.fromkeys((self.instructor, *self.students, *self.admins)))

    @property
    def authenticator_class(self) -> str:
        """The JupyterHub authenticator class of :attr:`auth_kind`."""
        return AUTHENTICATORS[self.auth_kind]


def closest_key(section: str, key: str) -> str:
    """The known key a user most likely meant by ``section.key`` (``""``: none near):
    the same key in another section, else a close one of the section, else of any."""
    every = [f"{name}.{known}" for name, keys in KEYS.items() for known in keys]
    for candidates in ([n for n in every if n.split(".")[1] == key],
                       [f"{section}.{k}" for k in difflib.get_close_matches(
                           key, KEYS.get(section, ()), n=1)],
                       difflib.get_close_matches(f"{section}.{key}", every, n=1)):
        if candidates:
            return candidates[0]
    return ""


def _known(data: Dict[str, Any]) -> None:
    """Every section and key is one of :data:`KEYS`; else the closest known one named."""
    for section, table in data.items():
        if section not in KEYS:
            close = difflib.get_close_matches(str(section), list(KEYS), n=1)
            hint = f" (did you mean [{close[0]}]?)" if close else ""
            raise SettingsError(f"unknown section {section!r:.40}{hint}; "
                                f"the sections are {', '.join(KEYS)}")
        if not isinstance(table, dict):
            raise SettingsError(f"[{section}] must be a table")
        for key in table:
            if key not in KEYS[section]:
                name = closest_key(section, str(key))
                hint = f" (did you mean {name}?)" if name else ""
                raise SettingsError(f"unknown key {section}.{key!r:.40}{hint}")


def _get(table: Dict[str, Any], where: str, key: str, kind: type, default: Any = None) -> Any:
    """``table[key]`` of type ``kind`` (an int is a float too), or ``default`` when absent;
    absent without a default is an error. A string is one line of printable characters."""
    if key not in table:
        if default is None:
            raise SettingsError(f"{where}.{key} is missing")
        return default
    value = table[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SettingsError(f"{where}.{key} must be a {kind.__name__}, not {value!r:.60}")
    if isinstance(value, str) and (len(value) > 4096
                                   or any(ord(c) < 32 or ord(c) == 127 for c in value)):
        raise SettingsError(f"{where}.{key} must be one line of printable characters")
    return value


def _names(table: Dict[str, Any], where: str, key: str) -> Tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where}.{key} must be a list of user names")
    for name in value:
        if not _NAME.fullmatch(name):
            raise SettingsError(f"{where}.{key}: {name!r:.80} is not a user name "
                                "(lower-case letters, digits, . _ -; at most 63)")
    return tuple(value)


def _path(table: Dict[str, Any], where: str, key: str, base: Path, default: str = "") -> str:
    """The path ``table[key]`` relative to ``base`` (the settings file's folder), ``..``
    resolved; ``""`` when absent and no default."""
    text = _get(table, where, key, str, default)
    if not text:
        if key in table:
            raise SettingsError(f"{where}.{key} is empty")
        return ""
    return os.path.normpath(base / text)


def _students(course: Dict[str, Any], base: Path) -> Tuple[str, ...]:
    """``students`` and the names in ``students_file`` (one a line, # comments)."""
    names = list(_names(course, "course", "students"))
    if "students_file" in course:
        path = Path(_path(course, "course", "students_file", base))
        lines = read_limited(path, "course.students_file").splitlines()
        extra = [line.split("#")[0].strip() for line in lines]
        names += _names({"students_file": [n for n in extra if n]}, "course", "students_file")
    return tuple(dict.fromkeys(names))


def _port(table: Dict[str, Any], key: str, default: int) -> int:
    value = _get(table, "hub", key, int, default)
    if not 0 < value < 65536:
        raise SettingsError(f"hub.{key} {value} is not a port (1-65535)")
    return int(value)


def _subnets(text: str, machine: Machine, course_id: str,
             users: int) -> ipaddress.IPv4Network:
    """``hub.student_subnets`` checked (:func:`check_subnets`; the course's own bridges
    are not the host's), with a /28 for each of ``users``."""
    subnets = check_subnets(text, machine.networks, course_tag(course_id) + "-")
    room = min(MAX_USERS, 2 ** (SUBNET_PREFIX - subnets.prefixlen) - 1)
    if users > room:
        raise SettingsError(f"the course has {users} users; at most {room} have a server "
                            f"(hub.student_subnets {subnets}, {MAX_USERS} at most)")
    return subnets


def _hub(hub: Dict[str, Any], base: Path, course_id: str, users: int,
         machine: Machine) -> Dict[str, Any]:
    url = public_url(_get(hub, "hub", "public_url", str))
    cert, key = (_path(hub, "hub", name, base) for name in ("tls_cert", "tls_key"))
    if bool(cert) != bool(key):
        raise SettingsError("hub.tls_cert and hub.tls_key go together")
    if url.startswith("https:") != bool(cert):
        raise SettingsError("hub.public_url is https: hub.tls_cert and hub.tls_key are needed "
                            "(or put a TLS proxy in front and use http on loopback)"
                            if cert == "" else "hub.tls_cert is set: hub.public_url must be "
                            "https")
    ip, port = listen_address(_get(hub, "hub", "listen", str, "0.0.0.0:443"))
    ports = {"listen": port, "api_port": _port(hub, "api_port", 8081),
             "proxy_api_port": _port(hub, "proxy_api_port", 8001),
             "record_port": _port(hub, "record_port", 8082)}
    if len(set(ports.values())) < len(ports):
        raise SettingsError("hub.listen's port, hub.api_port, hub.proxy_api_port and "
                            "hub.record_port must differ, not "
                            f"{', '.join(map(str, ports.values()))}")
    data_dir = Path(_path(hub, "hub", "data_dir", base)).resolve()
    reason = unsafe(data_dir, base)
    if reason:
        raise SettingsError(f"hub.data_dir: {reason}")
    return {
        "public_url": url, "listen_ip": ip, "listen_port": port,
        "subdomains": _get(hub, "hub", "subdomains", bool, True), "tls_cert": cert,
        "tls_key": key, "api_port": ports["api_port"],
        "proxy_api_port": ports["proxy_api_port"], "record_port": ports["record_port"],
        "data_dir": data_dir,
        "subnets": _subnets(_get(hub, "hub", "student_subnets", str, "10.213.0.0/16"),
                            machine, course_id, users),
    }


def _servers(servers: Dict[str, Any], machine: Machine) -> Dict[str, Any]:
    mem = _get(servers, "servers", "mem_limit", str, "2G")
    most = machine.memory_bytes or 1 << 50
    if not MIN_MEMORY_BYTES <= memory_bytes(mem) <= most:
        raise SettingsError(f"servers.mem_limit {mem} is not within {MIN_MEMORY_BYTES >> 20}M"
                            f"-{most >> 20}M (this machine's memory)")
    cpu = _get(servers, "servers", "cpu_limit", float, 1.0)
    cores = min(MAX_CPUS, float(machine.cpus or MAX_CPUS))
    if not MIN_CPUS <= cpu <= cores:
        raise SettingsError(f"servers.cpu_limit {cpu} is not within {MIN_CPUS:g}-{cores:g} "
                            "cores (this machine's)")
    numbers = {key: _get(servers, "servers", key, int, default) for key, default in (
        ("pids_limit", 1024), ("idle_timeout_s", 3600), ("cull_every_s", 600),
        ("spawn_timeout_s", 300))}
    pids = min(MAX_PIDS, machine.pid_max or MAX_PIDS)
    if not MIN_PIDS <= numbers["pids_limit"] <= pids:
        raise SettingsError(f"servers.pids_limit {numbers['pids_limit']} is not within "
                            f"{MIN_PIDS}-{pids} (this machine's pid_max)")
    for key, value in numbers.items():
        if key != "pids_limit" and not 1 <= value <= MAX_WAIT_S:
            raise SettingsError(f"servers.{key} {value} is not within 1-{MAX_WAIT_S} s")
    images = {key: _get(servers, "servers", key, str, default) for key, default in (
        ("image", "labtools-lab:latest"), ("instructor_image", "labtools-lab-instructor:latest"))}
    for key, image in images.items():
        if not _IMAGE.fullmatch(image):
            raise SettingsError(f"servers.{key} {image!r:.80} is not an image name like "
                                "labtools-lab:latest")
    return {**images, "cpu_limit": cpu, "mem_limit": mem, **numbers,
            "internet": _get(servers, "servers", "internet", bool, False),
            "copy_notebooks": _get(servers, "servers", "copy_notebooks", bool, True)}


def _auth(auth: Dict[str, Any], starting: bool) -> Tuple[str, Dict[str, Any]]:
    kind = _get(auth, "auth", "kind", str, "native")
    if kind not in AUTHENTICATORS:
        raise SettingsError(f"auth.kind {kind!r:.40}: one of {', '.join(AUTHENTICATORS)}")
    if starting and kind == "dummy" and os.environ.get(TESTING_VARIABLE) != "1":
        raise SettingsError("auth.kind = 'dummy' lets anyone in with one password: for the "
                            f"kit's tests only ({TESTING_VARIABLE}=1)")
    config = auth.get("config", {})
    if not isinstance(config, dict):
        raise SettingsError("[auth.config] must be a table")
    for name in config:
        if not _TRAIT.fullmatch(name):
            raise SettingsError(f"auth.config.{name!r:.40} is not a setting's name")
    return kind, dict(config)


def parse(data: Dict[str, Any], base: Path, machine: Optional[Machine] = None, *,
          starting: bool = True) -> CourseSettings:
    """Settings from the parsed TOML ``data``; relative paths are relative to ``base``.
    Checked against ``machine`` (default: this one) when ``starting``; ``starting=False``
    (for ``purge``) checks neither the machine nor the authenticator's use."""
    if not isinstance(data, dict):
        raise SettingsError("the settings must be a table")
    _known(data)
    tables = {name: data.get(name, {}) for name in KEYS}
    machine = machine or (this_machine() if starting else Machine(None, None, None))
    course = tables["course"]
    course_id = _get(course, "course", "id", str)
    if not _COURSE.fullmatch(course_id):
        raise SettingsError(f"course.id {course_id!r:.40}: lower-case letters, digits and -, "
                            "at most 24")
    instructor = _get(course, "course", "instructor", str)
    _names({"instructor": [instructor]}, "course", "instructor")
    students, admins = _students(course, base), _names(course, "course", "admins")
    users = len({instructor, *students, *admins})
    kind, config = _auth(tables["auth"], starting)
    return CourseSettings(
        course_id=course_id, instructor=instructor, students=students, admins=admins,
        **_hub(tables["hub"], base, course_id, users, machine),
        **_servers(tables["servers"], machine), auth_kind=kind, auth_config=config,
        settings_dir=base)


def load(path: Path, machine: Optional[Machine] = None, *,
         starting: bool = True) -> CourseSettings:
    """The settings in TOML file ``path`` (UTF-8, at most :data:`MAX_FILE_BYTES`); see
    :func:`parse`."""
    text = read_limited(path, "settings")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{str(path)!r} is not TOML: {err}") from None
    except RecursionError:
        raise SettingsError(f"{str(path)!r} is nested too deeply") from None
    return parse(data, path.resolve().parent, machine, starting=starting)


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
