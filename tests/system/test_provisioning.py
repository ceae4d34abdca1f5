"""The lab VM's provisioning under a real systemd, as `vagrant up` runs it.

A fresh Debian 12 system (debootstrap from Debian's packages: systemd, Debian's kernel, a
``vagrant`` user; :mod:`tests.system_images`) boots under QEMU with systemd as its first
process (:mod:`tests.system_boot`). The student edition (``labtools bundle --students``:
what a course hands its students, with its own Vagrantfile) is shared where Vagrant's synced
folder is, and the port the Vagrantfile forwards is forwarded from the host's 127.0.0.1
(to a port other than 8888, as ``LAB_PORT=8899 vagrant up`` does). In it, the Vagrantfile's
own provisioning command runs with the Vagrantfile's environment (tests/system/*.sh),
twice; then the system restarts. The checks below read what it saw and what the host saw.

Marker ``system``: minutes (building the image the first time, provisioning under software
emulation). ``LABTOOLS_SYSTEM=ubuntu-24.04`` checks another system of
:data:`tests.system_images.RECIPES`. Logs stay under results/provisioning/.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Dict

import pytest
import system_boot as sysboot
import system_images as images

from labtools.instructor import student_edition

pytestmark = [pytest.mark.system]

ROOT = Path(__file__).resolve().parents[2]
STAGES = ROOT / "tests" / "support" / "system"
VAGRANTFILE = ROOT / "vagrant" / "Vagrantfile"
LOGS = ROOT / "results" / "provisioning"
GUEST_PORT = 8888
#: how long each stage may take under software emulation (first provisioning: apt + pip)
STAGE_TIMEOUT_S = 3600
#: the second provisioning must change nothing and take seconds
SECOND_RUN_MAX_S = 60
TOKEN_WAIT_S = 600


def vagrant_provisioner() -> Dict[str, str]:
    """The Vagrantfile's provisioning command and environment, read from the file itself."""
    text = VAGRANTFILE.read_text()
    block = re.search(r'config\.vm\.provision "shell".*?inline: "([^"]+)"', text, re.S)
    assert block, "the Vagrantfile has no shell provisioner with an inline command"
    env_text = re.search(r"env: \{(.*?)\}", block.group(0), re.S)
    assert env_text, "the Vagrantfile's provisioner has no env"
    env = dict(re.findall(r'"(\w+)" => "([^"]*)"', env_text.group(1)))
    # Ruby expressions: the port Vagrant forwards from the host (LAB_PORT or 8888)
    for name in re.findall(r'"(\w+)" => lab_port', env_text.group(1)):
        env[name] = "LAB_PORT_FROM_HOST"
    return {"command": block.group(1), **env}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(path: Path, alive: Callable[[], bool], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if not alive():
            raise AssertionError(f"the system stopped before {path.name} (see the logs)")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear within {limit_s:.0f} s")
        time.sleep(2)


def http_status(url: str) -> str:
    """'200', '302 -> /login?...' or '403': what a browser gets first (no redirects)."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=30) as reply:
            return str(reply.status)
    except urllib.error.HTTPError as err:
        where = err.headers.get("Location", "")
        return f"{err.code} -> {where}" if where else str(err.code)


def host_checks(ctl: Path, n: int, port: int, seen: Dict[str, str]) -> Callable:
    def check(alive: Callable[[], bool]) -> None:
        wait_for(ctl / f"ready-{n}", alive, STAGE_TIMEOUT_S)
        url = (ctl / f"url-{n}.txt").read_text().strip()
        seen[f"url-{n}"] = url
        token_free = re.sub(r"\?token=.*", "", url)
        seen[f"with-token-{n}"] = http_status(url.replace("127.0.0.1:", "127.0.0.1:"))
        seen[f"without-token-{n}"] = http_status(token_free)
        seen[f"api-without-token-{n}"] = http_status(
            token_free.replace("/lab", "/api/contents"))
        (ctl / f"host-done-{n}").touch()
    return check


@pytest.fixture(scope="module")
def provisioned(tmp_path_factory):
    """Boot the fresh system twice (provision, restart); returns what was seen."""
    name = os.environ.get("LABTOOLS_SYSTEM", "debian-12")
    image = images.build_image(images.recipe(name), say=lambda m: print(m, flush=True))
    work = tmp_path_factory.mktemp("system")
    ctl = work / "control"
    ctl.mkdir()
    disk = images.working_copy(image, work / "root.img")
    edition = work / "lab"  # what a student clones or unpacks: the student edition
    student_edition.write_edition(ROOT, edition)
    port = free_port()
    vagrant = vagrant_provisioner()
    env = {k: (str(port) if v == "LAB_PORT_FROM_HOST" else v)
           for k, v in vagrant.items() if k != "command"}
    (ctl / "provision.env").write_text(
        f"PROVISION_COMMAND='{vagrant['command']}'\n"
        f"PROVISION_ENV='{' '.join(f'{k}={v}' for k, v in env.items())}'\n"
        f"TOKEN_WAIT_S={TOKEN_WAIT_S}\n")
    shutil.copy(STAGES / "wait_lab.sh", ctl / "wait_lab.sh")
    seen: Dict[str, str] = {"port": str(port), "system": name}
    LOGS.mkdir(parents=True, exist_ok=True)
    for n, stage in ((1, "stage_provision.sh"), (2, "stage_reboot.sh")):
        shutil.copy(STAGES / stage, ctl / images.STAGE_SCRIPT)
        spec = sysboot.BootSpec(image=disk, kernel=image.kernel, initrd=image.initrd,
                                repo=edition, control=ctl, console_log=LOGS / f"console-{n}.log",
                                forwards=((port, GUEST_PORT),))
        print(f"booting {name} (stage {n}, software emulation)...", flush=True)
        try:
            seen[f"boot-{n}-s"] = f"{sysboot.boot(spec, STAGE_TIMEOUT_S, host_checks(ctl, n, port, seen)):.0f}"
        finally:
            for f in ctl.iterdir():
                if f.is_file() and f.suffix in (".log", ".txt", ".err", ".status", ".seconds"):
                    shutil.copy(f, LOGS / f.name)
        print(f"stage {n} done in {seen[f'boot-{n}-s']} s", flush=True)
    return ctl, seen


def read(ctl: Path, name: str) -> str:
    return (ctl / name).read_text().strip()


def test_first_provisioning_succeeds_and_the_service_answers(provisioned):
    ctl, seen = provisioned
    assert read(ctl, "provision-1.status") == "0", read(ctl, "provision-1.log")[-2000:]
    assert read(ctl, "service-1.txt").split() == ["active", "enabled"]
    assert read(ctl, "answer-1.txt").startswith("answered 200")


def test_the_printed_url_is_the_forwarded_port_and_needs_the_token(provisioned):
    _, seen = provisioned
    assert re.fullmatch(rf"http://127\.0\.0\.1:{seen['port']}/lab\?token=[0-9a-f]{{48}}",
                        seen["url-1"]), seen["url-1"]
    assert seen["with-token-1"] == "200"
    assert seen["without-token-1"].startswith("302 -> /login"), seen["without-token-1"]
    assert seen["api-without-token-1"].startswith("403"), seen["api-without-token-1"]


def listening(ctl: Path, name: str) -> set:
    """(address, port) of every listening TCP socket outside loopback."""
    found = set()
    for line in read(ctl, name).splitlines():
        local = line.split()[3]
        addr, port = local.rsplit(":", 1)
        if addr not in ("127.0.0.1", "[::1]") and not addr.startswith("127."):
            found.add((addr, int(port)))
    return found


def test_nothing_listens_beyond_the_forwarded_port(provisioned):
    ctl, _ = provisioned
    for n in (1, 2):  # after provisioning, and after a restart
        ports = {port for _, port in listening(ctl, f"listening-{n}.txt")}
        assert ports <= {GUEST_PORT}, listening(ctl, f"listening-{n}.txt")
    assert 'guest: 8888, host: lab_port, host_ip: "127.0.0.1"' in VAGRANTFILE.read_text()


def test_second_provisioning_changes_nothing_in_seconds(provisioned):
    ctl, _ = provisioned
    log = read(ctl, "provision-2.log")
    assert read(ctl, "provision-2.status") == "0", log
    for said in ("system packages: all present", "kit: already installed",
                 "service files: unchanged"):
        assert said in log, log
    assert float(read(ctl, "provision-2.seconds")) < SECOND_RUN_MAX_S
    assert read(ctl, "service-after-2.txt") == "active"


def test_after_a_restart_the_service_is_back(provisioned):
    ctl, seen = provisioned
    assert read(ctl, "service-2.txt") == "active"
    assert read(ctl, "answer-2.txt").startswith("answered 200")
    assert seen["url-2"] == seen["url-1"]  # the same token after a restart
    assert seen["with-token-2"] == "200"


def test_doctor_reports_a_ready_lab(provisioned):
    ctl, _ = provisioned
    report = read(ctl, "doctor.txt")
    assert read(ctl, "doctor.status") == "0", report
    assert "netem" in report and "mininet" in report.lower()


def test_plain_mininet_runs_with_its_own_controller(provisioned):
    """`mn --custom` with Open vSwitch: nothing else holds the controller's port 6653."""
    ctl, _ = provisioned
    out = read(ctl, "mn-2.txt")
    assert read(ctl, "mn-2.status") == "0", out
    assert "Results: 0% dropped" in out, out
    assert "shut down the controller" not in out, out
