"""The course hub's settings, names, firewall rules and the lab image's security files,
checked without Docker (deploy/hub/, deploy/image/). The hub itself runs in tests/deploy/test_hub.py
(marker ``hub``)."""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
    assert (s.api_port, s.proxy_api_port, s.record_port, s.idle_timeout_s, s.image,
            s.instructor_image) == (
        8081, 8001, 8082, 3600, "labtools-lab:latest", "labtools-lab-instructor:latest")
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
    (("[hub]", "[servers]\ninstructor_image = \"Lab Kit\"\n[hub]"),
     "servers.instructor_image 'Lab Kit' is not an image name"),
    (("[hub]", "[auth]\nkind = \"ldap\"\n[hub]"), "auth.kind 'ldap'"),
    (("[hub]", "[extra]\n[hub]"), "unknown section 'extra'"),
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


def test_firewall_lets_servers_reach_the_hub_api_and_the_record_only():
    s = settings(MINIMAL.replace('data_dir = "state"', 'data_dir = "state"\nrecord_port = 8093'))
    rules = [" ".join(argv[2:]) for argv in firewall.up_commands(s)]
    inp, fwd = firewall.chains("netlab")
    tag = cs.course_tag("netlab")
    drop = rules.index(f"-A {inp} -i {tag}-+ -j DROP")
    assert rules.index(f"-A {inp} -i {tag}-+ -p tcp --dport 8081 -j ACCEPT") < drop
    assert rules.index(f"-A {inp} -i {tag}-+ -p tcp --dport 8093 -j ACCEPT") < drop
    assert [r for r in rules[:drop] if "--dport" in r] == [
        f"-A {inp} -i {tag}-+ -p tcp --dport {port} -j ACCEPT" for port in (8081, 8093)]
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


# --- hostile and careless settings: each refused in one line, exit status 2 ---------------

import labhub  # noqa: E402
from data_folder import MARK, purge_refusal, unsafe  # noqa: E402
from host_facts import Machine  # noqa: E402

#: a machine of 4 CPUs, 8 GiB, pid_max 32768, on 192.168.1.0/24 and Docker's 172.17.0.0/16
SMALL = Machine(cpus=4, memory_bytes=8 << 30, pid_max=32768,
                networks=(("eth0", ipaddress.ip_network("192.168.1.0/24")),
                          ("docker0", ipaddress.ip_network("172.17.0.0/16"))))


def labhub_main(capsys, *argv) -> tuple:
    """labhub's exit status, stdout and stderr lines for ``argv``."""
    status = labhub.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


def refused(capsys, path: Path, *argv, command: str = "check") -> str:
    """The one line labhub says for settings file ``path`` (asserting exit status 2)."""
    status, out, err = labhub_main(capsys, command, path, *argv)
    assert status == 2 and out == "" and len(err) == 1, (status, out, err)
    assert err[0].startswith("labhub: ")
    return err[0]


@pytest.mark.parametrize("change, message", [
    (("data_dir = \"state\"", "data_dir = \"/\""), "/ is a system folder"),
    (("data_dir = \"state\"", "data_dir = \"../../../../../../..\""), "/ is a system folder"),
    (("data_dir = \"state\"", "data_dir = \".\""), "holds the settings file's folder"),
    (("data_dir = \"state\"", "data_dir = \"/usr/bin/..\""), "/usr is a system folder"),
    (("data_dir = \"state\"", "data_dir = \"/var/lib\""), "/var/lib is a system folder"),
    (("data_dir = \"state\"", "data_dir = \"/home/someone\""), "/home/someone is a home"),
    (("data_dir = \"state\"", "data_dir = \"/proc/1\""), "inside a system folder"),
    (("data_dir = \"state\"", f"data_dir = \"{ROOT}\""), "the kit's folder"),
    (("[hub]", "[servers]\nmem_limt = \"4G\"\n[hub]"),
     "unknown key servers.'mem_limt' (did you mean servers.mem_limit?)"),
    (("listen =", "mem_limit = \"4G\"\nlisten ="), "(did you mean servers.mem_limit?)"),
    (("data_dir = \"state\"", "data_dir = \"state\"\napi_port = 8000"), "must differ"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nproxy_api_port = 8081"), "must differ"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nrecord_port = 8081"), "must differ"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nrecord_port = 0"), "0 is not a port"),
    (("data_dir = \"state\"", "data_dir = \"state\"\napi_port = 99999"), "99999 is not a port"),
    (("data_dir = \"state\"", "data_dir = \"state\"\napi_port = 0"), "0 is not a port"),
    (("listen = \"127.0.0.1:8000\"", "listen = \"127.0.0.1:+8000\""), "is not ADDRESS:PORT"),
    (("http://127.0.0.1:8000", "http://127.0.0.1:99999"), "is not like https://"),
    (("http://127.0.0.1:8000", "ftp://lab.example.edu"), "is not like https://"),
    (("http://127.0.0.1:8000", "http://user@lab.example.edu"), "is not like https://"),
    (("http://127.0.0.1:8000", "http://lab.example.edu/?x=1"), "is not like https://"),
    (("http://127.0.0.1:8000", "http://[::1"), "is not like https://"),
    (("http://127.0.0.1:8000", "http://"), "is not like https://"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"0.0.0.0/0\""),
     "not inside a private range"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"127.0.0.0/8\""),
     "not inside a private range"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"169.254.0.0/16\""),
     "not inside a private range"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"8.8.0.0/16\""),
     "not inside a private range"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"192.168.0.0/16\""),
     "overlaps 192.168.1.0/24 of this machine ('eth0')"),
    (("data_dir = \"state\"", "data_dir = \"state\"\nstudent_subnets = \"172.16.0.0/12\""),
     "overlaps 172.17.0.0/16"),
    (("[hub]", "[servers]\npids_limit = 1000000000\n[hub]"), "not within 64-32768"),
    (("[hub]", "[servers]\nmem_limit = \"100000G\"\n[hub]"), "not within 256M-8192M"),
    (("[hub]", "[servers]\nmem_limit = \"9G\"\n[hub]"), "not within 256M-8192M"),
    (("[hub]", "[servers]\ncpu_limit = 1000\n[hub]"), "not within 0.1-4 cores"),
    (("[hub]", "[servers]\ncpu_limit = nan\n[hub]"), "cpu_limit nan"),
    (("[hub]", "[servers]\nidle_timeout_s = 0\n[hub]"), "idle_timeout_s 0 is not within"),
    (("[hub]", "[servers]\nimage = \"x; rm -rf /\"\n[hub]"), "is not an image name"),
    (("[hub]", "[auth]\nkind = \"dummy\"\n[hub]"), "for the kit's tests only"),
    (("[hub]", "[auth.config]\n__class__ = 1\n[hub]"), "is not a setting's name"),
    (("id = \"netlab\"", "id = \"netlab\"\nadmins = [\"x\\ny\"]"), "is not a user name"),
    (("data_dir = \"state\"", "data_dir = \"sta\\u0000te\""), "one line of printable"),
    (("[hub]", "[servers]\nspawn_timeout_s = 9223372036854775807\n[hub]"), "is not within"),
])
def test_hostile_and_careless_settings_are_refused_in_one_line(
        change, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(cs.TESTING_VARIABLE, raising=False)
    monkeypatch.setattr(cs, "this_machine", lambda: SMALL)
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL.replace(*change))
    assert message in refused(capsys, path)
    assert not (tmp_path / "state").exists()


def test_a_course_too_big_for_its_range_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cs, "this_machine", lambda: SMALL)
    (tmp_path / "students.txt").write_text("".join(f"s{i}\n" for i in range(255)))
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL.replace("[hub]", "students_file = \"students.txt\"\n[hub]")
                    .replace("data_dir = \"state\"",
                             "data_dir = \"state\"\nstudent_subnets = \"10.9.0.0/20\""))
    assert "the course has 258 users; at most 255 have a server" in refused(capsys, path)


@pytest.mark.parametrize("content, message", [
    (b"[course]\nid = \"caf\xe9\"\n", "is not UTF-8 text"),
    (b"a = " + b"[" * 5000 + b"]" * 5000, "is nested too deeply"),
    (b"x" * (cs.MAX_FILE_BYTES + 1), "is larger than 1048576 bytes"),
    (b"[course\n", "is not TOML"),
])
def test_a_settings_file_that_is_not_toml_text_is_one_line(content, message, tmp_path, capsys):
    path = tmp_path / "course.toml"
    path.write_bytes(content)
    assert message in refused(capsys, path)


@pytest.mark.parametrize("students_file, message", [
    ("/dev/zero", "'/dev/zero' is not a regular file"),
    (".", "is not a regular file"),
    ("latin1.txt", "is not UTF-8 text"),
    ("missing.txt", "No such file or directory"),
])
def test_a_students_file_that_is_not_a_small_text_file_is_one_line(
        students_file, message, tmp_path, capsys):
    (tmp_path / "latin1.txt").write_bytes(b"jos\xe9\n")
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL.replace("[hub]", f"students_file = \"{students_file}\"\n[hub]"))
    line = refused(capsys, path)
    assert line.startswith("labhub: course.students_file: ") and message in line


def test_the_settings_file_itself_must_be_a_small_regular_file(tmp_path, capsys):
    assert "'/dev/zero' is not a regular file" in refused(capsys, Path("/dev/zero"))
    assert "is not a regular file" in refused(capsys, tmp_path)
    assert "No such file" in refused(capsys, tmp_path / "none.toml")


def test_get_answers_the_documented_keys_only(tmp_path, capsys):
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL)
    for key in ("__class__", "__dict__", "auth_config", "authenticator_class", "settings_dir",
                "_NAME", "imag"):
        assert "no setting" in refused(capsys, path, key, command="get")
    assert "(did you mean image?)" in refused(capsys, path, "imag", command="get")
    assert labhub_main(capsys, "get", path, "image") == (0, "labtools-lab:latest\n", [])
    assert labhub_main(capsys, "get", path, "instructor_image")[1] == \
        "labtools-lab-instructor:latest\n"
    assert labhub_main(capsys, "get", path, "users")[1] == "teacher alice bob\n"
    assert labhub_main(capsys, "get", path, "data_dir")[1] == f"{tmp_path / 'state'}\n"
    assert set(labhub.GETTABLE) <= {f.name for f in cs.CourseSettings.__dataclass_fields__
                                    .values()} | {"users"}


def test_a_bad_command_line_is_one_line_too(capsys):
    with pytest.raises(SystemExit) as out:
        labhub.main(["get", "only-a-file"])
    assert out.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "labhub: the following arguments are required: key"]


def test_the_servers_range_is_checked_against_the_networks_given():
    nets = [("eth0", ipaddress.ip_network("10.213.5.0/24")),
            ("lab12-0a0b0c0d", ipaddress.ip_network("10.214.0.16/28"))]
    with pytest.raises(cs.SettingsError, match="overlaps 10.213.5.0/24 of this machine"):
        cs.check_subnets("10.213.0.0/16", nets)
    assert str(cs.check_subnets("10.214.0.0/16", nets, "lab12-")) == "10.214.0.0/16"
    with pytest.raises(cs.SettingsError, match="overlaps 10.214.0.16/28"):
        cs.check_subnets("10.214.0.0/16", nets, "other-")
    # the course's own bridges (named with its tag) are not the host's networks
    own = Machine(2, 4 << 30, 32768, ((f"{cs.course_tag('netlab')}-1234abcd",
                                       ipaddress.ip_network("10.213.0.16/28")),))
    assert settings().subnets == cs.parse(__import__("tomllib").loads(MINIMAL), ROOT, own).subnets


# --- the data folder: made and marked by the hub; purge removes only that ----------------

@pytest.fixture()
def no_docker(monkeypatch):
    """labhub's purge without Docker: no container, network or volume listed."""
    monkeypatch.setattr(labhub, "DOCKER", shutil.which("true"))


def test_purge_removes_the_folder_the_hub_made_and_said_so(tmp_path, capsys, no_docker):
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL)
    status, out, _ = labhub_main(capsys, "data-dir", path)
    data = tmp_path / "state"
    assert status == 0 and out == f"{data}\n" and (data / MARK).read_text() == "netlab\n"
    assert data.stat().st_mode & 0o777 == 0o700
    (data / "jupyterhub.sqlite").write_text("db")
    assert labhub_main(capsys, "data-dir", path)[0] == 0  # made once, found again
    status, out, err = labhub_main(capsys, "purge", path)
    assert status == 0 and err == [] and not data.exists()
    assert out.splitlines() == [f"will remove: no container, network or volume; the folder "
                                f"{data}", f"removed {data}"]


@pytest.mark.parametrize("mark", [None, "othercourse"])
def test_purge_never_removes_a_folder_without_the_course_mark(
        mark, tmp_path, capsys, no_docker):
    data = tmp_path / "state"
    (data / "work").mkdir(parents=True)
    (data / "work" / "thesis.tex").write_text("years of work")
    if mark:
        (data / MARK).write_text(mark)
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL)
    line = refused(capsys, path, command="purge")
    assert line.startswith("labhub: purge refused: hub.data_dir:")
    assert (data / "work" / "thesis.tex").read_text() == "years of work"
    # nor does the hub take it as its own
    said = refused(capsys, path, command="data-dir")
    assert ("data folder of course 'othercourse'" if mark else "no .labhub-data mark") in said
    assert (data / MARK).read_text() == mark if mark else not (data / MARK).exists()


def test_purge_refuses_system_home_and_settings_folders_and_links(tmp_path):
    settings_dir = tmp_path / "course"
    settings_dir.mkdir()
    homes = [tmp_path / "home" / "alice"]
    for folder in ("/", "/etc", "/usr/lib", "/var/lib", "/lib64", "/tmp", "/home/alice",
                   "/root", "/dev/shm", "/sys/fs", "/home", str(homes[0]),
                   str(tmp_path / "home"), str(settings_dir), str(tmp_path)):
        assert purge_refusal(Path(folder), settings_dir, "netlab", homes), folder
        assert unsafe(Path(folder), settings_dir, homes), folder
    marked = tmp_path / "data"
    marked.mkdir()
    (marked / MARK).write_text("netlab\n")
    assert purge_refusal(marked, settings_dir, "netlab", homes) is None
    assert purge_refusal(tmp_path / "not-made-yet", settings_dir, "netlab", homes) is None
    link = tmp_path / "link"
    link.symlink_to(marked)
    assert "symbolic link" in purge_refusal(link, settings_dir, "netlab", homes)
    etc = tmp_path / "etc-link"
    etc.symlink_to("/etc")
    assert "/etc is a system folder" in unsafe(etc, settings_dir, homes)


def test_the_hub_tests_settings_are_valid_marked_and_purged(tmp_path, capsys, monkeypatch,
                                                             no_docker):
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import hub_machine

    monkeypatch.setattr(hub_machine, "make_certificate", lambda folder, host: None)
    info = hub_machine.course_settings(tmp_path, "labhubtest", "teacher", ["alice", "bob"],
                                       mem_limit="2G", cpu_limit=1.0, idle_timeout_s=3600)
    monkeypatch.setenv(cs.TESTING_VARIABLE, "1")
    assert labhub_main(capsys, "check", info["settings"])[0] == 0
    assert labhub_main(capsys, "data-dir", info["settings"])[0] == 0
    assert (tmp_path / "data" / MARK).read_text() == "labhubtest\n"
    monkeypatch.delenv(cs.TESTING_VARIABLE)  # purge needs no LABHUB_TESTING
    assert "dummy" in refused(capsys, info["settings"])
    assert labhub_main(capsys, "purge", info["settings"])[0] == 0
    assert not (tmp_path / "data").exists()
