"""The course hub's helper commands (scripts/hub.sh runs them with the hub's Python).

    python deploy/hub/labhub.py check SETTINGS          # the settings, checked, in words
    python deploy/hub/labhub.py get SETTINGS KEY        # one value (image, data_dir...)
    python deploy/hub/labhub.py data-dir SETTINGS       # the data folder, made and marked
    python deploy/hub/labhub.py firewall up|down SETTINGS
    python deploy/hub/labhub.py purge SETTINGS          # the course's containers, networks,
                                                        # volumes and hub data: all gone

``get`` answers the keys of :data:`GETTABLE` only. ``check`` refuses what the hub would
refuse when it starts (the dummy authenticator without LABHUB_TESTING=1 among them).
``purge`` first says what it will remove, and removes the data folder only when the hub
made it for this course (data_folder.py). A bad setting or command is one line on stderr
and exit status 2.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, NoReturn, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from course_settings import CourseSettings, SettingsError, load, resource_prefix  # noqa: E402
from data_folder import FolderError, make, purge_refusal  # noqa: E402
from firewall import down_commands, up_commands  # noqa: E402

DOCKER = shutil.which("docker", path="/usr/bin:/usr/local/bin:/bin") or "docker"
#: what ``get`` answers: the settings' names (course.example.toml and CourseSettings)
GETTABLE: Tuple[str, ...] = (
    "course_id", "instructor", "students", "admins", "users", "public_url", "listen_ip",
    "listen_port", "subdomains", "tls_cert", "tls_key", "api_port", "proxy_api_port",
    "record_port", "data_dir", "subnets", "image", "instructor_image", "cpu_limit", "mem_limit",
    "pids_limit", "idle_timeout_s", "cull_every_s", "spawn_timeout_s", "internet",
    "copy_notebooks", "auth_kind")


def describe(s: CourseSettings) -> List[str]:
    """The settings as a student's and an instructor's view, one line each."""
    return [
        f"course {s.course_id}: instructor {s.instructor}, {len(s.students)} student(s), "
        f"admins {', '.join(s.admins) or 'none'}; log in with {s.auth_kind}",
        f"address {s.public_url} (listening on {s.listen_ip}:{s.listen_port}; "
        f"{'a subdomain per user' if s.subdomains else 'one domain for all users'})",
        f"servers: image {s.image} (the instructor's {s.instructor_image}), "
        f"{s.cpu_limit:g} CPU, {s.mem_limit} memory, {s.pids_limit} processes each; "
        f"stopped after {s.idle_timeout_s} s idle; "
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


def _resources(prefix: str) -> List[Tuple[str, str]]:
    return [(kind, name) for kind in ("container", "network", "volume")
            for name in _docker_names(kind, prefix)]


def purge(s: CourseSettings) -> int:
    """Remove every container, network and volume of the course, and its hub data folder
    when the hub made it for this course; what goes is said first. 2 (nothing removed)
    when the data folder may not be removed, 1 when something could not be."""
    refusal = purge_refusal(s.data_dir, s.settings_dir, s.course_id)
    if refusal:
        print(f"labhub: purge refused: hub.data_dir: {refusal}", file=sys.stderr)
        return 2
    found = _resources(resource_prefix(s.course_id))
    data = s.data_dir.exists()
    print("will remove: " + (", ".join(f"{kind} {name}" for kind, name in found) or
                             "no container, network or volume") +
          (f"; the folder {s.data_dir}" if data else ""))
    failed = 0
    verbs = {"container": ["rm", "--force"], "network": ["network", "rm"],
             "volume": ["volume", "rm", "--force"]}
    for kind, name in found:
        proc = subprocess.run([DOCKER, *verbs[kind], name], capture_output=True, text=True,
                              check=False)
        print(f"removed {kind} {name}" if proc.returncode == 0
              else f"could not remove {kind} {name}: {proc.stderr.strip()}")
        failed += proc.returncode != 0
    if data:
        shutil.rmtree(s.data_dir)
        print(f"removed {s.data_dir}")
    return 1 if failed else 0


def get(s: CourseSettings, key: str) -> str:
    """The value of ``key`` (one of :data:`GETTABLE`) as a shell reads it; lists are one
    line, space-separated. :class:`SettingsError` for any other key."""
    if key not in GETTABLE:
        close = difflib.get_close_matches(key, GETTABLE, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SettingsError(f"no setting {key!r:.40}{hint}")
    value = getattr(s, key)
    if isinstance(value, tuple):
        return " ".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Parser(argparse.ArgumentParser):
    """argparse with its error in one line (``labhub: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"labhub: {message}", file=sys.stderr)
        raise SystemExit(2)


def _arguments(argv: List[str]) -> argparse.Namespace:
    parser = _Parser(prog="labhub", description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in ("check", "data-dir", "purge"):
        sub.add_parser(name).add_argument("settings", type=Path)
    getter = sub.add_parser("get")
    getter.add_argument("settings", type=Path)
    getter.add_argument("key")
    fw = sub.add_parser("firewall")
    fw.add_argument("action", choices=("up", "down"))
    fw.add_argument("settings", type=Path)
    return parser.parse_args(argv)


def _run(args: argparse.Namespace) -> int:
    # purge and taking the firewall down need only the course's names: a machine that
    # changed, or the tests' authenticator, does not stop a course's end
    ending = args.command == "purge" or getattr(args, "action", "") == "down"
    s = load(args.settings, starting=not ending)
    if args.command == "check":
        print("\n".join(describe(s)))
        return 0
    if args.command == "get":
        print(get(s, args.key))
        return 0
    if args.command == "data-dir":
        print(make(s.data_dir, s.settings_dir, s.course_id))
        return 0
    if args.command == "firewall":
        return firewall(s, args.action)
    return purge(s)


def main(argv: List[str]) -> int:
    """The command line; 2 with one line on stderr for a bad setting or command."""
    args = _arguments(argv)
    try:
        return _run(args)
    except (SettingsError, FolderError) as err:
        print(f"labhub: {err}", file=sys.stderr)
    except OSError as err:
        print(f"labhub: {err.filename or args.settings}: {err.strerror or err}",
              file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
