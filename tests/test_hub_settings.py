"""The course hub's settings, names, firewall rules and the lab image's security files,
checked without Docker (deploy/hub/, deploy/image/). The hub itself runs in tests/test_hub.py
(marker ``hub``)."""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB = ROOT / "deploy" / "hub"
IMAGE = ROOT / "deploy" / "image"
sys.path.insert(0, str(HUB))

import course_settings as cs  # noqa: E402
import firewall  # noqa: E402

MINIMAL = """
[course]
id = "netlab"
instructor = "teacher"
students = ["alice", "bob"]
[hub]
public_url = "http://127.0.0.1:8000"
listen = "127.0.0.1:8000"
data_dir = "state"
"""


def settings(text: str = MINIMAL, tmp: Path = ROOT):
    import tomllib

    return cs.parse(tomllib.loads(text), tmp)


def test_the_example_file_is_valid_and_says_what_a_course_gets():
    s = cs.load(HUB / "course.example.toml")
    assert s.course_id == "netlab" and s.instructor == "teacher"
    assert s.students == ("alice", "bob") and s.auth_kind == "native"
    assert s.subdomains and s.public_url == "https://lab.example.edu"
    assert (s.cpu_limit, s.mem_limit, s.internet) == (1.0, "2G", False)
    assert s.authenticator_class == "nativeauthenticator.NativeAuthenticator"


def test_defaults_and_relative_paths():
    s = settings(tmp=Path("/srv/course"))
    assert s.data_dir == Path("/srv/course/state")
    assert (s.api_port, s.proxy_api_port, s.idle_timeout_s, s.image) == (
        8081, 8001, 3600, "labtools-lab:latest")
    assert s.users == ("teacher", "alice", "bob")


@pytest.mark.parametrize("change, message", [
    (("id = \"netlab\"", ""), "course.id is missing"),
    (("id = \"netlab\"", "id = \"Net_Lab\""), "course.id 'Net_Lab'"),
    (("students = [\"alice\", \"bob\"]", "students = [\"Alice Smith\"]"), "is not a user name"),
    (("students = [\"alice\", \"bob\"]", "students = \"alice\""), "must be a list"),
    (("http://127.0.0.1:8000", "https://lab.example.edu"), "tls_cert and hub.tls_key"),
    (("http://127.0.0.1:8000", "lab.example.edu"), "is not like https://"),
    (("listen = \"127.0.0.1:8000\"", "listen = \"127.0.0.1\""), "is not ADDRESS:PORT"),
    (("[hub]", "[servers]\nmem_limit = \"lots\"\n[hub]"), "mem_limit 'lots'"),
    (("[hub]", "[servers]\ncpu_limit = 0\n[hub]"), "cpu_limit 0.0"),
    (("[hub]", "[servers]\ninternet = \"yes\"\n[hub]"), "servers.internet must be a bool"),
    (("[hub]", "[auth]\nkind = \"ldap\"\n[hub]"), "auth.kind 'ldap'"),
    (("[hub]", "[extra]\n[hub]"), "unknown section(s) extra"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"10.0.0.0/24\""),
     "/20 or more"),
])
def test_a_bad_setting_is_one_line_naming_it(change, message):
    with pytest.raises(cs.SettingsError) as err:
        settings(MINIMAL.replace(*change))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_students_file_adds_names_once(tmp_path):
    (tmp_path / "students.txt").write_text("# the class\ncarol\nalice  # already listed\n\n")
    s = settings(MINIMAL.replace("[hub]", "students_file = \"students.txt\"\n[hub]"), tmp_path)
    assert s.students == ("alice", "bob", "carol")


def test_server_numbers_are_given_once_and_never_reused():
    first, numbers = cs.server_number({}, "alice")
    again, same = cs.server_number(numbers, "alice")
    second, numbers = cs.server_number(numbers, "bob")
    assert (first, again, second) == (1, 1, 2) and same == {"alice": 1}
    gone = {"bob": 2}  # alice's number is never given to anyone else
    assert cs.server_number(gone, "carol")[0] == 3
    with pytest.raises(cs.SettingsError, match="more than 4000"):
        cs.server_number({"x": cs.MAX_USERS}, "y")


def test_each_user_gets_a_uid_and_a_subnet_of_their_own():
    subnets = ipaddress.ip_network("10.213.0.0/16")
    nets = [cs.server_subnet(subnets, uid) for uid in range(1, cs.MAX_USERS + 1)]
    assert len(set(nets)) == cs.MAX_USERS
    assert all(n.subnet_of(subnets) and n.prefixlen == cs.SUBNET_PREFIX for n in nets)
    assert subnets.network_address not in nets[0]  # the range's first /28 is left unused
    assert cs.server_uid(1) == cs.FIRST_UID + 1
    for bad in (0, cs.MAX_USERS + 1):
        with pytest.raises(cs.SettingsError):
            cs.server_subnet(subnets, bad)
    with pytest.raises(cs.SettingsError, match="no subnet for user 300"):
        cs.server_subnet(ipaddress.ip_network("10.0.0.0/20"), 300)


def test_names_fit_linux_and_never_reach_into_another_course():
    for course in ("netlab", "netlab-2", "a" * 24):
        for user in ("alice", "bob", "x" * 63):
            name = cs.bridge_name(course, user)
            assert len(name) <= 15 and name.startswith(cs.course_tag(course) + "-")
    assert cs.bridge_name("netlab", "alice") != cs.bridge_name("netlab", "bob")
    assert cs.course_tag("netlab") != cs.course_tag("netlab-2")
    # an escaped user name has no "_": no course's names start with another's prefix
    assert not cs.resource_prefix("netlab-2").startswith(cs.resource_prefix("netlab"))
    assert not (cs.resource_prefix("netlab") + "u-2").startswith(cs.resource_prefix("netlab-2"))


def test_firewall_lets_servers_reach_the_hub_api_only():
    s = settings()
    rules = [" ".join(argv[2:]) for argv in firewall.up_commands(s)]
    inp, fwd = firewall.chains("netlab")
    tag = cs.course_tag("netlab")
    assert rules.index(f"-A {inp} -i {tag}-+ -p tcp --dport 8081 -j ACCEPT") < \
        rules.index(f"-A {inp} -i {tag}-+ -j DROP")
    assert f"-I INPUT 1 -j {inp}" in rules
    assert f"-A {fwd} -i {tag}-+ -j DROP" in rules  # no Internet by default
    with_internet = settings(MINIMAL + "[servers]\ninternet = true\n")
    assert f"-A {fwd} -i {tag}-+ -j DROP" not in [
        " ".join(a[2:]) for a in firewall.up_commands(with_internet)]
    down = [" ".join(argv[2:]) for argv in firewall.down_commands("netlab")]
    assert f"-D INPUT -j {inp}" in down and f"-X {fwd}" in down


def test_seccomp_profile_allows_namespaces_and_refuses_what_labs_never_need():
    profile = json.loads((IMAGE / "seccomp-userns.json").read_text())
    allowed, denied = profile["syscalls"][0], profile["syscalls"][1]
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert allowed["action"] == "SCMP_ACT_ALLOW" and "args" not in allowed
    for call in ("unshare", "setns", "clone", "mount", "umount2", "socket", "execve"):
        assert call in allowed["names"]
    for call in ("keyctl", "bpf", "init_module", "kexec_load", "io_uring_setup", "reboot",
                 "open_by_handle_at", "perf_event_open"):
        assert call in denied["names"] and call not in allowed["names"]
    sys.path.insert(0, str(IMAGE))
    import seccomp

    assert sorted({n for group in seccomp.DENIED.values() for n in group}) == denied["names"]


def test_image_gives_every_hub_uid_a_passwd_entry():
    text = (IMAGE / "Dockerfile").read_text()
    first = int(re.search(r"ARG HUB_FIRST_UID=(\d+)", text).group(1))
    last = int(re.search(r"ARG HUB_LAST_UID=(\d+)", text).group(1))
    assert (first, last) == (cs.server_uid(1), cs.server_uid(cs.MAX_USERS))


def test_hub_and_image_run_the_same_jupyterhub():
    def pin(path: Path) -> str:
        return re.search(r"^jupyterhub==(\S+)", path.read_text(), re.MULTILINE).group(1)

    assert pin(HUB / "requirements.txt") == pin(IMAGE / "requirements.txt")


def test_solutions_never_enter_the_image():
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*"
    assert not any("solutions" in ln or ln in ("!.", "!**") for ln in lines if ln.startswith("!"))


def test_labhub_check_says_a_bad_setting_in_one_line(tmp_path):
    bad = tmp_path / "course.toml"
    bad.write_text(MINIMAL.replace("id = \"netlab\"", "id = \"NET\""))
    proc = subprocess.run([sys.executable, str(HUB / "labhub.py"), "check", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "course.id 'NET'" in proc.stderr
    good = tmp_path / "good.toml"
    good.write_text(MINIMAL)
    proc = subprocess.run([sys.executable, str(HUB / "labhub.py"), "check", str(good)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "course netlab: instructor teacher, 2 student(s)" in proc.stdout


def test_the_instructor_is_a_user_name_too():
    with pytest.raises(cs.SettingsError, match="course.instructor: 'Dr Who'"):
        settings(MINIMAL.replace("instructor = \"teacher\"", "instructor = \"Dr Who\""))
