"""DockerSpawner for a course: each server in a container of its own, on a network of its
own, as a user id of its own, unprivileged.

What it adds to DockerSpawner (configured in jupyterhub_config.py):

- a Docker network per server (``labhub-<course>_u-<user>``, a /28 of the course's range,
  bridge ``<course tag>-<user hash>``), made before the server starts and removed when it
  stops: a server reaches no other server, and the host's firewall (firewall.py) lets it
  reach only the hub's API on the host;
- the server runs as a user id of its own, 20000 + the user's server number (given at the
  user's first start and kept in the hub's data folder, uids.json), so nbgrader's
  exchange, shared by every server, keeps students' submissions apart by ownership as on a
  multi-user machine, and the user's volume stays theirs;
- the course's folder in nbgrader's exchange (``COURSE/`` and its ``outbound``,
  ``inbound`` and ``feedback``), made by the hub in the exchange's volume before any server
  starts, owned by the instructor's user id (exchange_folder.py): no student can make it
  first and stop the instructor's releases;
- the hub's API address on that network, the course's record's (``LABTOOLS_RECORD_URL``,
  record_service.py), the user's role (instructor or student) and the course, in the
  server's environment;
- /proc and /sys unmasked for the container (Docker's ``systempaths=unconfined``): a lab's
  routers forward through /proc/sys/net of their own namespace, which Docker's read-only
  /proc/sys would refuse. The container's user is not root and has no capability, so the
  unmasked files stay out of its reach.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
from pathlib import Path
from typing import Any, Dict

from course_settings import (
    CourseSettings,
    bridge_name,
    resource_prefix,
    server_number,
    server_subnet,
    server_uid,
)
from dockerspawner import DockerSpawner
from exchange_folder import make as make_exchange

#: serialises network creation and removal (two spawns at once must not race for names)
_NETWORK_LOCK = asyncio.Lock()
#: serialises making the exchange's course folder
_EXCHANGE_LOCK = asyncio.Lock()
#: the file of server numbers in the hub's data folder
NUMBERS_FILE = "uids.json"


def number_of(course: CourseSettings, user: str) -> int:
    """``user``'s server number, given on first use and written to the data folder."""
    path = course.data_dir / NUMBERS_FILE
    numbers = json.loads(path.read_text()) if path.exists() else {}
    number, updated = server_number(numbers, user)
    if updated != numbers:
        part = path.with_suffix(".part")
        part.write_text(json.dumps(updated, indent=1, sort_keys=True))
        os.replace(part, path)
    return number


class LabSpawner(DockerSpawner):
    """A course server: see the module's description. ``LabSpawner.course`` holds the
    course's settings (set by jupyterhub_config.py)."""

    course: CourseSettings

    @property
    def lab_network(self) -> str:
        """The name of this server's Docker network."""
        return f"{resource_prefix(self.course.course_id)}u-{self.escaped_name}"

    @property
    def lab_number(self) -> int:
        """This user's server number (their user id and subnet follow from it)."""
        return number_of(self.course, self.user.name)

    @property
    def lab_subnet(self) -> ipaddress.IPv4Network:
        """This server's /28."""
        return server_subnet(self.course.subnets, self.lab_number)

    @property
    def hub_address(self) -> str:
        """The host's address on this server's network (the network's gateway)."""
        return str(self.lab_subnet.network_address + 1)

    @property
    def role(self) -> str:
        """``instructor`` or ``student`` (admins are students in their servers)."""
        return "instructor" if self.user.name == self.course.instructor else "student"

    @property
    def role_image(self) -> str:
        """The image of this user's server: the whole kit for the instructor (autograde
        runs the hidden tests), the student edition for everyone else."""
        return self.course.instructor_image if self.role == "instructor" else self.course.image

    async def start(self) -> Any:
        """Make the course's exchange folder and the server's network, then start its
        container on it as its user id."""
        uid = server_uid(self.lab_number)
        self.image = self.role_image
        self.network_name = self.lab_network
        self.extra_create_kwargs = {"user": f"{uid}:{uid}", "hostname": "lab"}
        await self._ensure_exchange()
        await self._ensure_network()
        return await super().start()

    async def _ensure_exchange(self) -> None:
        """The exchange's volume (made if missing) holds ``COURSE/`` and its folders,
        owned by the instructor's server's user id (exchange_folder.py)."""
        from docker.errors import NotFound

        name = f"{resource_prefix(self.course.course_id)}exchange"
        async with _EXCHANGE_LOCK:
            try:
                volume = await super().docker("inspect_volume", name)
            except NotFound:
                volume = await super().docker(
                    "create_volume", name=name, labels={"labhub.course": self.course.course_id})
            instructor = server_uid(number_of(self.course, self.course.instructor))
            make_exchange(Path(volume["Mountpoint"]), self.course.course_id, instructor,
                          instructor, say=self.log.warning)

    async def stop(self, now: bool = False) -> None:
        """Stop (and remove) the container, then its network."""
        await super().stop(now=now)
        await self._remove_network()

    def get_env(self) -> Dict[str, str]:
        """The hub's API and the course's record reached through the host's address on the
        server's network."""
        env: Dict[str, str] = super().get_env()
        api = f"http://{self.hub_address}:{self.course.api_port}/hub/api"
        env["JUPYTERHUB_API_URL"] = api
        env["JUPYTERHUB_ACTIVITY_URL"] = f"{api}/users/{self.user.name}/activity"
        env["LABTOOLS_ROLE"] = self.role
        env["LABTOOLS_COURSE"] = self.course.course_id
        env["LABTOOLS_COPY_NOTEBOOKS"] = "1" if self.course.copy_notebooks else "0"
        env["LABTOOLS_RECORD_URL"] = f"http://{self.hub_address}:{self.course.record_port}"
        return env

    def docker(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Docker's API, with /proc and /sys unmasked in every container this creates
        (docker-py's host config has no such option; the API has)."""
        if method == "create_container":
            host_config = kwargs.setdefault("host_config", {})
            host_config["MaskedPaths"] = []
            host_config["ReadonlyPaths"] = []
        return super().docker(method, *args, **kwargs)

    async def _ensure_network(self) -> None:
        from docker.errors import NotFound
        from docker.types import IPAMConfig, IPAMPool

        async with _NETWORK_LOCK:
            try:
                await super().docker("inspect_network", self.lab_network)
                return
            except NotFound:
                pass
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=str(self.lab_subnet),
                                                     gateway=self.hub_address)])
            await super().docker(
                "create_network", self.lab_network, driver="bridge", ipam=ipam,
                options={"com.docker.network.bridge.name":
                         bridge_name(self.course.course_id, self.user.name)},
                labels={"labhub.course": self.course.course_id, "labhub.user": self.user.name})
            self.log.info("network %s (%s) made for %s", self.lab_network, self.lab_subnet,
                          self.user.name)

    async def _remove_network(self) -> None:
        from docker.errors import APIError, NotFound

        async with _NETWORK_LOCK:
            try:
                await super().docker("remove_network", self.lab_network)
            except NotFound:
                pass
            except APIError as err:  # still in use (a container that has not gone yet)
                self.log.warning("network %s not removed: %s", self.lab_network, err)
