"""Property tests of the course hub's settings (deploy/hub/course_settings.py, Hypothesis).

Whatever TOML a careless instructor or a hostile user writes, the settings either load
and hold the invariants (ports distinct and in range, the servers' range private, of /20
or more and off the machine's networks, CPU, memory and processes within the machine, the
data folder none of the system's) or are refused with a :class:`SettingsError` of one
line; never another exception.
"""

from __future__ import annotations

import ipaddress
import math
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "hub"))

import course_settings as cs  # noqa: E402
from data_folder import unsafe  # noqa: E402
from host_facts import Machine  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
MACHINE = Machine(cpus=4, memory_bytes=8 << 30, pid_max=32768,
                  networks=(("eth0", ipaddress.ip_network("192.168.1.0/24")),
                            ("docker0", ipaddress.ip_network("172.17.0.0/16"))))
#: what TOML can hold (datetimes aside)
JUNK = st.recursive(
    st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6)
ABSENT = object()
GOOD_PORTS = st.integers(1, 65535)
BAD_PORTS = st.sampled_from([-1, 0, 65536, 99999, 10 ** 20])
#: each key: (values that are fine, alone, or ABSENT; values that are not)
VALUES: Dict[str, Dict[str, Any]] = {
    "course": {
        "id": (st.sampled_from(["netlab", "a", "n-1"]),
               st.sampled_from(["Net", "x" * 25, "", "a_b", "-x"])),
        "instructor": (st.sampled_from(["teacher", "t.a"]),
                       st.sampled_from(["Dr Who", "", "T", "x" * 64])),
        "students": (st.lists(st.sampled_from(["alice", "bob", "carol"]), max_size=4),
                     st.lists(st.sampled_from(["Bob", "", "x" * 64, "a\nb"]), min_size=1,
                              max_size=2)),
        "students_file": (st.sampled_from([ABSENT, "students.txt"]),
                          st.sampled_from(["/dev/zero", ".", "none.txt", "bad.txt", "\x00",
                                           ""])),
        "admins": (st.lists(st.sampled_from(["alice", "dean"]), max_size=2),
                   st.lists(st.sampled_from(["a b", "Root"]), min_size=1, max_size=2)),
    },
    "hub": {
        "public_url": (st.sampled_from(["http://127.0.0.1:8000", "http://lab.example.edu/",
                                        "http://10.1.2.3"]),
                       st.sampled_from(["https://lab.example.edu", "ftp://x", "http://",
                                        "http://lab.example.edu:99999", "http://[::1",
                                        "https://a@b", "lab.example.edu", "http://a/b?c"])),
        "listen": (st.builds(lambda ip, port: f"{ip}:{port}",
                             st.sampled_from(["127.0.0.1", "0.0.0.0", "::"]), GOOD_PORTS),
                   st.sampled_from(["x:80", "127.0.0.1", "127.0.0.1:0", "1.2.3.4:+80",
                                    "1.2.3.4:70000", ":80"])),
        "subdomains": (st.booleans(), st.sampled_from(["yes", 1])),
        "tls_cert": (st.just(ABSENT), st.sampled_from(["cert.pem", ""])),
        "tls_key": (st.just(ABSENT), st.sampled_from(["key.pem", ""])),
        "data_dir": (st.sampled_from(["state", "/srv/labhub/netlab", "a/../b", "x/y"]),
                     st.sampled_from(["/", "..", ".", "../../../..", "/var/lib", "/usr/..",
                                      "/home/alice", "/proc/1", "", "s\x00", "/root"])),
        "api_port": (GOOD_PORTS, BAD_PORTS), "proxy_api_port": (GOOD_PORTS, BAD_PORTS),
        "record_port": (GOOD_PORTS, BAD_PORTS),
        "student_subnets": (
            st.sampled_from([ABSENT, "10.213.0.0/16", "172.20.0.0/16", "10.9.0.0/20",
                             "10.0.0.0/8"]),
            st.sampled_from(["0.0.0.0/0", "127.0.0.0/8", "169.254.0.0/16", "8.8.0.0/16",
                             "192.168.0.0/16", "172.16.0.0/12", "10.9.0.0/24", "fd00::/8",
                             "10.213.0.1/16", "x", "100.64.0.0/10"])),
    },
    "servers": {
        "image": (st.sampled_from(["labtools-lab:latest", "reg.io/a/b:1"]),
                  st.sampled_from(["x y", "", "A:b", "a;b"])),
        "cpu_limit": (st.floats(0.1, 4) | st.integers(1, 4),
                      st.floats().filter(lambda x: not 0.1 <= x <= 4)
                      | st.integers(-2, 0) | st.integers(5, 10 ** 9)),
        "mem_limit": (st.sampled_from(["2G", "8G", "256M", "1536M"]),
                      st.sampled_from(["9G", "255M", "0G", "2g", "99999999999G", "2 G"])),
        "pids_limit": (st.integers(64, 32768), st.integers(-1, 63) | st.integers(32769)),
        "idle_timeout_s": (st.integers(1, cs.MAX_WAIT_S), st.integers(max_value=0)),
        "cull_every_s": (st.integers(1, cs.MAX_WAIT_S), st.integers(cs.MAX_WAIT_S + 1)),
        "spawn_timeout_s": (st.integers(1, 600), st.sampled_from([0, -5, 2 ** 63])),
        "internet": (st.booleans(), st.just("no")),
        "copy_notebooks": (st.booleans(), st.just(0)),
    },
    "auth": {
        "kind": (st.sampled_from(["native", "github"]), st.sampled_from(["dummy", "ldap"])),
        "config": (st.dictionaries(st.sampled_from(["client_id", "scope"]), JUNK, max_size=2),
                   st.dictionaries(st.sampled_from(["__class__", "a b", "_x"]), JUNK,
                                   min_size=1, max_size=2) | st.lists(JUNK) | st.text()),
    },
}
KEY_NAMES = st.sampled_from(["mem_limt", "api-port", "id", "kind", "x"])


def chance(draw: st.DrawFn, per_mille: int) -> bool:
    """True about ``per_mille`` times in a thousand (Hypothesis favours the ends of a
    range, so the window is in its middle)."""
    return 300 <= draw(st.integers(0, 999)) < 300 + per_mille


@st.composite
def settings_dicts(draw: st.DrawFn) -> Dict[str, Any]:
    """A settings dict: each key's value fine (or the key absent when it may be), wrong,
    junk or missing; now and then an unknown key or section, or a section that is not a
    table. About a third of the dicts are fine."""
    data: Dict[str, Any] = {}
    for section, keys in VALUES.items():
        if chance(draw, 10):
            data[section] = draw(JUNK)
            continue
        table: Dict[str, Any] = {}
        for key, (good, bad) in keys.items():
            value = draw(bad if chance(draw, 20) else JUNK if chance(draw, 10) else good)
            if value is not ABSENT and not chance(draw, 10):
                table[key] = value
        if chance(draw, 15):
            table[draw(KEY_NAMES)] = draw(JUNK)
        data[section] = table
    if chance(draw, 10):
        data[draw(st.sampled_from(["extra", "servers2", "Hub"]))] = {}
    return data


@st.composite
def good_dicts(draw: st.DrawFn) -> Dict[str, Any]:
    """Settings that are fine: every key's value fine (or absent where it may be), the
    four ports different."""
    data = {section: {key: value for key, (good, _) in keys.items()
                      if (value := draw(good)) is not ABSENT}
            for section, keys in VALUES.items()}
    ports = draw(st.lists(GOOD_PORTS, min_size=4, max_size=4, unique=True))
    data["hub"]["listen"] = data["hub"]["listen"].rsplit(":", 1)[0] + f":{ports[0]}"
    data["hub"]["api_port"], data["hub"]["proxy_api_port"], data["hub"]["record_port"] = ports[1:]
    return data


def assert_invariants(s: cs.CourseSettings, base: Path) -> None:
    """What every loaded course's settings hold."""
    ports = (s.listen_port, s.api_port, s.proxy_api_port, s.record_port)
    assert all(isinstance(p, int) and 1 <= p <= 65535 for p in ports)
    assert len(set(ports)) == 4
    assert isinstance(s.subnets, ipaddress.IPv4Network) and s.subnets.prefixlen <= 20
    assert s.subnets.is_private and not (s.subnets.is_loopback or s.subnets.is_link_local
                                         or s.subnets.is_unspecified)
    assert any(s.subnets.subnet_of(p) for p in cs.PRIVATE_RANGES)
    assert not any(s.subnets.overlaps(net) for _, net in MACHINE.networks)
    assert math.isfinite(s.cpu_limit) and cs.MIN_CPUS <= s.cpu_limit <= MACHINE.cpus
    assert cs.MIN_MEMORY_BYTES <= cs.memory_bytes(s.mem_limit) <= MACHINE.memory_bytes
    assert cs.MIN_PIDS <= s.pids_limit <= MACHINE.pid_max
    assert all(1 <= t <= cs.MAX_WAIT_S for t in (s.idle_timeout_s, s.cull_every_s,
                                                  s.spawn_timeout_s))
    assert s.data_dir.is_absolute() and unsafe(s.data_dir, base) is None
    assert s.auth_kind in cs.AUTHENTICATORS and s.auth_kind != "dummy"
    assert len(s.users) <= 2 ** (cs.SUBNET_PREFIX - s.subnets.prefixlen) - 1


@pytest.fixture(scope="module")
def base() -> Path:
    """A course folder with a students file, one that is not UTF-8."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "students.txt").write_text("carol\n# a comment\ndave  # late\n")
        (Path(folder) / "bad.txt").write_bytes(b"jos\xe9\n")
        yield Path(folder)


@SETTINGS
@given(data=settings_dicts())
def test_any_settings_load_sane_or_are_refused_in_one_line(data, base, monkeypatch):
    monkeypatch.delenv(cs.TESTING_VARIABLE, raising=False)
    try:
        loaded = cs.parse(data, base, MACHINE)
    except cs.SettingsError as err:
        assert str(err) and len(str(err).splitlines()) == 1
        return
    assert_invariants(loaded, base)


@SETTINGS
@given(data=good_dicts(), where=st.sampled_from(
    [(section, key) for section, keys in VALUES.items() for key in keys]), draw=st.data())
def test_fine_settings_load_and_any_one_wrong_value_is_refused(data, where, draw, base,
                                                               monkeypatch):
    monkeypatch.delenv(cs.TESTING_VARIABLE, raising=False)
    assert_invariants(cs.parse(data, base, MACHINE), base)
    section, key = where
    data[section][key] = draw.draw(VALUES[section][key][1], label=f"{section}.{key}")
    with pytest.raises(cs.SettingsError) as err:
        cs.parse(data, base, MACHINE)
    assert len(str(err.value).splitlines()) == 1


@settings(SETTINGS, max_examples=80)
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(
    lambda b: b.decode("latin-1")))
def test_any_file_loads_or_is_refused_in_one_line(text, base):
    path = base / "course.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        loaded = cs.load(path, MACHINE)
    except cs.SettingsError as err:
        assert str(err) and len(str(err).splitlines()) == 1
        return
    assert_invariants(loaded, base)
