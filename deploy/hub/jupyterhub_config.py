"""JupyterHub for a course (started by scripts/hub.sh; LABHUB_SETTINGS names the course's
settings file, see course.example.toml).

- The hub and configurable-http-proxy run on the host; each student's server is a
  container of the kit's image (deploy/image/), made by LabSpawner (lab_spawner.py): its
  own network, its own user id, no capability, no new privileges, the kit's seccomp
  profile, CPU, memory and process limits, a volume of its own on /home/lab, and the
  course's nbgrader exchange (a volume every server mounts).
- The instructor's server has nbgrader's formgrader (course folder ~/course); students'
  servers the Assignments tab.
- Idle servers are stopped by jupyterhub-idle-culler (a service of the hub).
- The course's record (record_service.py, a service of the hub on ``hub.record_port``)
  keeps every checked answer and measurement a server posts, under the token owner's hub
  name and at the hub's time, in the data folder (course_record.sqlite).
- Per-user subdomains (alice.lab.example.edu) with the __Host- cookie prefix when
  ``hub.subdomains`` (JupyterHub's advice where users must not reach each other).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from course_settings import TESTING_VARIABLE, SettingsError, load, resource_prefix  # noqa: E402

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - JupyterHub's config loader provides it

try:
    course = load(Path(os.environ["LABHUB_SETTINGS"]))
except KeyError:
    sys.exit("LABHUB_SETTINGS is not set: start the hub with scripts/hub.sh SETTINGS")
except SettingsError as err:
    sys.exit(f"course settings: {err}")
if course.auth_kind == "dummy" and os.environ.get(TESTING_VARIABLE) != "1":
    sys.exit("auth.kind = 'dummy' lets anyone in with one password: for the kit's tests "
             f"only ({TESTING_VARIABLE}=1)")

prefix = resource_prefix(course.course_id)
data = course.data_dir

# --- the hub, the proxy, where they keep their state ------------------------------------
c.JupyterHub.ip = course.listen_ip
c.JupyterHub.port = course.listen_port
if course.subdomains:
    c.JupyterHub.subdomain_host = course.public_url
    c.JupyterHub.cookie_host_prefix_enabled = course.public_url.startswith("https://")
else:
    c.JupyterHub.public_url = course.public_url + "/"
if course.tls_cert:
    c.JupyterHub.ssl_cert = course.tls_cert
    c.JupyterHub.ssl_key = course.tls_key
# The hub's API listens on every address of the host; the firewall (firewall.py, set up
# by scripts/hub.sh) lets the servers' networks reach this port and nothing else.
c.JupyterHub.hub_bind_url = f"http://0.0.0.0:{course.api_port}"
c.JupyterHub.hub_connect_url = f"http://127.0.0.1:{course.api_port}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{course.proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = str(data / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{data / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(data / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(data / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # a stopped hub leaves no server running

# --- who may log in ---------------------------------------------------------------------
c.JupyterHub.authenticator_class = course.authenticator_class
c.Authenticator.allowed_users = set(course.users)
c.Authenticator.admin_users = set(course.admins)
auth_traits = c[course.authenticator_class.rsplit(".", 1)[1]]
for key, value in course.auth_config.items():
    setattr(auth_traits, key, value)
if course.auth_kind == "dummy":
    c.DummyAuthenticator.password = os.environ.get("LABHUB_DUMMY_PASSWORD", "")

# --- the servers ------------------------------------------------------------------------
from lab_spawner import LabSpawner  # noqa: E402

LabSpawner.course = course
c.JupyterHub.spawner_class = LabSpawner
c.DockerSpawner.image = course.image  # the instructor's: LabSpawner.role_image
c.DockerSpawner.allowed_images = []  # nobody chooses an image (no form, no option)
c.DockerSpawner.pull_policy = "never"  # the image is built here (scripts/image.sh)
c.DockerSpawner.cmd = ["labtools-hub-server"]
c.DockerSpawner.prefix = prefix
c.DockerSpawner.name_template = "{prefix}u-{username}"
c.DockerSpawner.remove = True  # the container goes when the server stops; volumes stay
c.DockerSpawner.use_internal_ip = True
c.DockerSpawner.volumes = {
    f"{prefix}u-{{username}}": "/home/lab",
    f"{prefix}exchange": "/srv/nbgrader/exchange",
}
c.DockerSpawner.mem_limit = course.mem_limit
c.DockerSpawner.cpu_limit = course.cpu_limit
c.DockerSpawner.extra_host_config = {
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges",
                     "seccomp=" + (HERE.parent / "image" / "seccomp-userns.json").read_text()],
    "pids_limit": course.pids_limit,
}
c.Spawner.start_timeout = course.spawn_timeout_s
c.Spawner.http_timeout = 120
c.Spawner.default_url = "/lab"

# --- idle servers are stopped -----------------------------------------------------------
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}, {
    # identifies the token a post brings (GET /hub/api/user with that token) and reads
    # users' names
    "name": "course-record",
    "scopes": ["read:users:name"],
    "services": ["course-record"],
}]
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                f"--timeout={course.idle_timeout_s}", f"--cull-every={course.cull_every_s}"],
}, {
    "name": "course-record",
    "command": [sys.executable, str(HERE / "record_service.py"),
                f"--listen=0.0.0.0:{course.record_port}",
                f"--db={data / 'course_record.sqlite'}",
                "--readers=" + ",".join(dict.fromkeys((course.instructor, *course.admins)))],
}]
