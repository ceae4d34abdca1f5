"""The course hub's helper commands (scripts/hub.sh runs them with the hub's Python).

    python deploy/hub/labhub.py check SETTINGS          # the settings, checked, in words
    python deploy/hub/labhub.py get SETTINGS KEY        # one value (image, data_dir...)
    python deploy/hub/labhub.py firewall up|down SETTINGS
    python deploy/hub/labhub.py purge SETTINGS          # the course's containers, networks,
                                                        # volumes and hub data: all gone

A bad setting is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from course_settings import CourseSettings, SettingsError, load, resource_prefix  # noqa: E402
from firewall import down_commands, up_commands  # noqa: E402

DOCKER = shutil.which("docker", path="/usr/bin:/usr/local/bin:/bin") or "docker"


def describe(s: CourseSettings) -> List[str]:
    """The settings as a student's and an instructor's view, one line each."""
    return [
        f"course {s.course_id}: instructor {s.instructor}, {len(s.students)} student(s), "
        f"admins {', '.join(s.admins) or 'none'}; log in with {s.auth_kind}",
        f"address {s.public_url} (listening on {s.listen_ip}:{s.listen_port}; "
        f"{'a subdomain per user' if s.subdomains else 'one domain for all users'})",
        f"servers: image {s.image}, {s.cpu_limit:g} CPU, {s.mem_limit} memory, "
        f"{s.pids_limit} processes each; stopped after {s.idle_timeout_s} s idle; "
        f"{'Internet allowed' if s.internet else 'no Internet'}",
        f"state in {s.data_dir}; servers' networks in {s.subnets}",
    ]


def firewall(s: CourseSettings, action: str) -> int:
    """Remove the course's rules, then (``up``) install them; 1 when one cannot be made."""
    for argv in down_commands(s.course_id):
        subprocess.run(argv, capture_output=True, check=False)
    if action == "down":
        return 0
    for argv in up_commands(s):
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"labhub: {' '.join(argv)}: {proc.stderr.strip()}", file=sys.stderr)
            return 1
    return 0


def _docker_names(kind: str, prefix: str) -> List[str]:
    fmt = "{{.Names}}" if kind == "container" else "{{.Name}}"
    argv = [DOCKER, kind, "ls", "--format", fmt] + (["--all"] if kind == "container" else [])
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return [n for n in proc.stdout.split() if n.startswith(prefix)]


def purge(s: CourseSettings) -> int:
    """Remove every container, network and volume of the course, and its hub data."""
    prefix = resource_prefix(s.course_id)
    failed = 0
    for kind, verb in (("container", ["rm", "--force"]), ("network", ["network", "rm"]),
                       ("volume", ["volume", "rm", "--force"])):
        for name in _docker_names(kind, prefix):
            proc = subprocess.run([DOCKER, *verb, name], capture_output=True, text=True,
                                  check=False)
            print(f"removed {kind} {name}" if proc.returncode == 0
                  else f"could not remove {kind} {name}: {proc.stderr.strip()}")
            failed += proc.returncode != 0
    if s.data_dir.exists():
        shutil.rmtree(s.data_dir)
        print(f"removed {s.data_dir}")
    return 1 if failed else 0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="labhub", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check").add_argument("settings", type=Path)
    get = sub.add_parser("get")
    get.add_argument("settings", type=Path)
    get.add_argument("key")
    fw = sub.add_parser("firewall")
    fw.add_argument("action", choices=("up", "down"))
    fw.add_argument("settings", type=Path)
    sub.add_parser("purge").add_argument("settings", type=Path)
    args = parser.parse_args(argv)
    try:
        s = load(args.settings)
    except SettingsError as err:
        print(f"labhub: {args.settings}: {err}", file=sys.stderr)
        return 2
    if args.command == "check":
        print("\n".join(describe(s)))
        return 0
    if args.command == "get":
        if not hasattr(s, args.key):
            print(f"labhub: no setting {args.key!r}", file=sys.stderr)
            return 2
        print(getattr(s, args.key))
        return 0
    if args.command == "firewall":
        return firewall(s, args.action)
    return purge(s)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
