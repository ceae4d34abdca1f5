"""The machine side of a course hub, for tests/deploy/test_hub.py and the `class` benchmark (not a
test module): a Docker daemon started here when none runs (as on a machine without
systemd) and everything it changed put back afterwards, a course hub started with
scripts/hub.sh, TLS for it, and `*.localhost` names resolved to this machine.

    with DockerDaemon(log) as docker, Hub(settings_dir, log) as hub:
        ...
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

ROOT = Path(__file__).resolve().parents[2]
DOCKER = "/usr/bin/docker"  # Debian's docker.io (another `docker` earlier in PATH may be newer)
DAEMON_START_S = 120
HUB_START_S = 180
HUB_STOP_S = 120


def docker(*args: str, check: bool = True, timeout: float = 600) -> str:
    """``docker ARGS``; its output."""
    proc = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def docker_answers() -> bool:
    """Does a Docker daemon answer on its socket?"""
    try:
        return subprocess.run([DOCKER, "info"], capture_output=True, timeout=30,
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _read(path: str) -> Optional[str]:
    try:
        return Path(path).read_text()
    except OSError:
        return None


class DockerDaemon:
    """The Docker daemon for the duration of a ``with``: the running one, or ``dockerd``
    started here (Debian's docker.io installed first when missing). One started here is
    stopped at the end, and what it changed on the machine is put back: the firewall
    (iptables as it was, Docker's chains gone), IP forwarding, bridges' netfilter calls and
    the ``docker0`` bridge. Its images stay (/var/lib/docker: the next build is quick)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        self._saved: Dict[str, Optional[str]] = {}

    def __enter__(self) -> "DockerDaemon":
        if not Path(DOCKER).exists():
            subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                            "docker.io"], check=True, env=dict(os.environ,
                                                                DEBIAN_FRONTEND="noninteractive"),
                           stdout=subprocess.DEVNULL)
        if docker_answers():
            return self
        self._saved = {
            "iptables": self._iptables_save(),
            "/proc/sys/net/ipv4/ip_forward": _read("/proc/sys/net/ipv4/ip_forward"),
            "/proc/sys/net/bridge/bridge-nf-call-iptables":
                _read("/proc/sys/net/bridge/bridge-nf-call-iptables"),
            "docker0": "yes" if Path("/sys/class/net/docker0").exists() else None,
        }
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + DAEMON_START_S
        while not docker_answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise AssertionError(f"dockerd did not start: see {self.log}")
            time.sleep(1)
        return self

    @staticmethod
    def _iptables_save() -> Optional[str]:
        try:
            return subprocess.run(["iptables-save"], capture_output=True, text=True,
                                  check=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return None

    def __exit__(self, *exc: Any) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._restore()

    def _restore(self) -> None:
        """The machine as it was before dockerd started."""
        saved = self._saved.get("iptables")
        for table in ("filter", "nat"):  # Docker's rules and chains out
            subprocess.run(["iptables", "-w", "-t", table, "-F"], capture_output=True)
            subprocess.run(["iptables", "-w", "-t", table, "-X"], capture_output=True)
        for chain in ("INPUT", "FORWARD", "OUTPUT"):
            subprocess.run(["iptables", "-w", "-P", chain, "ACCEPT"], capture_output=True)
        if saved:
            subprocess.run(["iptables-restore"], input=saved, text=True, capture_output=True)
        for path in ("/proc/sys/net/ipv4/ip_forward",
                     "/proc/sys/net/bridge/bridge-nf-call-iptables"):
            value = self._saved.get(path)
            if value is not None:
                with contextlib.suppress(OSError):
                    Path(path).write_text(value)
        if self._saved.get("docker0") is None and Path("/sys/class/net/docker0").exists():
            subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True)


def make_certificate(folder: Path, host: str) -> None:
    """A self-signed certificate for ``host`` and ``*.host`` (cert.pem, key.pem)."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"),
                    "-subj", f"/CN={host}", "-addext",
                    f"subjectAltName=DNS:{host},DNS:*.{host}"],
                   check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def localhost_names() -> Iterator[None]:
    """In this process, every ``*.localhost`` name resolves to 127.0.0.1 (as browsers do;
    this machine's resolver does not)."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".localhost"):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    socket.getaddrinfo = resolve  # type: ignore[assignment]
    try:
        yield
    finally:
        socket.getaddrinfo = real  # type: ignore[assignment]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def course_settings(folder: Path, course: str, instructor: str, students: List[str],
                    **servers: Any) -> Dict[str, Any]:
    """A course's settings file in ``folder`` for a hub on this machine only
    (https://hub.localhost:PORT, a certificate made here, the dummy authenticator);
    the values it chose."""
    make_certificate(folder, "hub.localhost")
    port, api, proxy_api, record = free_port(), free_port(), free_port(), free_port()
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in servers.items())
    (folder / "course.toml").write_text(f"""
[course]
id = "{course}"
instructor = "{instructor}"
students = {json.dumps(students)}
[hub]
public_url = "https://hub.localhost:{port}"
listen = "127.0.0.1:{port}"
subdomains = true
tls_cert = "cert.pem"
tls_key = "key.pem"
data_dir = "data"
api_port = {api}
proxy_api_port = {proxy_api}
record_port = {record}
[servers]
{extra}[auth]
kind = "dummy"
""")
    return {"port": port, "api_port": api, "record_port": record,
            "settings": folder / "course.toml",
            "url": f"https://hub.localhost:{port}", "cafile": str(folder / "cert.pem")}


def _default_sigint() -> None:
    """The hub as from a terminal: SIGINT not ignored. A test run started in the background
    by a shell without job control inherits SIGINT ignored, and so would the hub's services
    (its idle culler then held the hub's stop for 30 s, until SIGKILL)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Hub:
    """``bash scripts/hub.sh SETTINGS`` running (the dummy authenticator, one password
    for everyone, made here); :meth:`stop` stops it, :meth:`purge` removes the course."""

    def __init__(self, settings: Path, log: Path) -> None:
        self.settings = settings
        self.log = log
        self.password = secrets.token_hex(12)
        self.proc: Optional["subprocess.Popen[bytes]"] = None

    def start(self) -> "Hub":
        env = dict(os.environ, LABHUB_TESTING="1", LABHUB_DUMMY_PASSWORD=self.password)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "wb")
        self.proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "hub.sh"),
                                      str(self.settings)], stdout=out,
                                     stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                     start_new_session=True, preexec_fn=_default_sigint)
        out.close()
        deadline = time.monotonic() + HUB_START_S
        while "JupyterHub is now running" not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("the hub did not start:\n" + self.text()[-3000:])
            time.sleep(1)
        return self

    def text(self) -> str:
        """What the hub has printed so far."""
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> float:
        """SIGTERM, as `systemctl stop` or Ctrl-C; seconds the hub took to stop."""
        began = time.monotonic()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(HUB_STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        return time.monotonic() - began

    def purge(self) -> str:
        """``scripts/hub.sh SETTINGS --purge``: the course's servers, networks, volumes
        and data gone; what it said."""
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "hub.sh"), str(self.settings),
                               "--purge"], capture_output=True, text=True, timeout=300,
                              cwd=ROOT)
        return proc.stdout + proc.stderr

    def __enter__(self) -> "Hub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self.purge()


def prepare(log_dir: Path) -> int:
    """What the hub's tests need, made ahead (`make test` runs this in the background while
    other stages run): Debian's docker.io, configurable-http-proxy and the hub's venv
    (scripts/hub.sh --check with the example settings), and the lab image (a Docker daemon
    started for the build, then stopped, the machine put back). Exit status 0 when all is
    ready; seconds per step in prepare.json."""
    import sys

    # stopped by `make test` when another stage failed: the daemon stops, the firewall
    # is put back (the ``with`` below unwinds)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    log_dir.mkdir(parents=True, exist_ok=True)
    took: Dict[str, float] = {}
    began = time.monotonic()
    with open(log_dir / "prepare.log", "ab") as log:
        checked = subprocess.run(["bash", str(ROOT / "scripts" / "hub.sh"),
                                  str(ROOT / "deploy" / "hub" / "course.example.toml"),
                                  "--check"], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        took["packages_and_venv_s"] = round(time.monotonic() - began, 1)
        if checked.returncode != 0:
            return checked.returncode
        began = time.monotonic()
        with DockerDaemon(log_dir / "dockerd.log"):
            took["docker_daemon_s"] = round(time.monotonic() - began, 1)
            began = time.monotonic()
            built = subprocess.run(["bash", str(ROOT / "scripts" / "image.sh")], stdout=log,
                                   stderr=subprocess.STDOUT, cwd=ROOT)
            took["image_build_s"] = round(time.monotonic() - began, 1)
    (log_dir / "prepare.json").write_text(json.dumps(took, indent=2) + "\n")
    print(json.dumps(took))
    return built.returncode


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["prepare"] or len(sys.argv) != 3:
        print("usage: python tests/support/hub_machine.py prepare LOG_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(prepare(Path(sys.argv[2])))
