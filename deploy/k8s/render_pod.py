"""The pod a user would get from Zero to JupyterHub with deploy/k8s/values.yaml, made by
KubeSpawner's own code (``KubeSpawner.get_pod_manifest``), without a cluster.

The values reach KubeSpawner as the chart's hub configuration (its
files/hub/jupyterhub_config.py) puts them there; this script does the same for the keys
the values file uses: ``singleuser`` (image, cmd, defaultUrl, uid, fsGid, cpu, memory,
extraEnv, extraPodConfig, allowPrivilegeEscalation, storage with extraVolumes and
extraVolumeMounts, cloudMetadata.blockWithIptables, which makes the chart add a privileged
init container), ``hub.config`` (passed through as traitlets config) and
``hub.extraConfig`` (executed; its ``pre_spawn_hook`` run as the hub runs it before a
server starts: the instructor's image is chosen there). A key it does not handle is
refused, so the check cannot pass by ignoring a setting.

Runs with KubeSpawner installed (the hub's venv, scripts/hub.sh makes it):

    /opt/labtools-hub/bin/python deploy/k8s/render_pod.py VALUES USER USER_ID
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Dict

import yaml
from traitlets.config import Config

#: the singleuser keys handled, as the chart maps them to KubeSpawner traits
TRAITS = {
    "uid": "uid", "fsGid": "fs_gid", "extraEnv": "environment",
    "extraPodConfig": "extra_pod_config", "startTimeout": "start_timeout",
    "extraLabels": "extra_labels", "nodeSelector": "node_selector",
}
HANDLED = set(TRAITS) | {"image", "cmd", "defaultUrl", "cpu", "memory",
                         "allowPrivilegeEscalation", "storage", "cloudMetadata",
                         "networkPolicy"}


def chart_config(values: Dict[str, Any]) -> Config:
    """KubeSpawner's configuration from the chart's values (see the module's description)."""
    c = Config()
    single = values.get("singleuser", {})
    unknown = set(single) - HANDLED
    if unknown:
        raise SystemExit(f"render_pod.py does not handle singleuser.{sorted(unknown)}")
    for key, trait in TRAITS.items():
        if single.get(key) is not None:
            setattr(c.KubeSpawner, trait, single[key])
    image = single["image"]
    c.KubeSpawner.image = f"{image['name']}:{image['tag']}" if image.get("tag") else image["name"]
    c.KubeSpawner.image_pull_policy = image.get("pullPolicy")
    c.KubeSpawner.allow_privilege_escalation = single.get("allowPrivilegeEscalation", False)
    c.Spawner.cmd = single.get("cmd", "jupyterhub-singleuser")
    if single.get("defaultUrl"):
        c.Spawner.default_url = single["defaultUrl"]
    for kind in ("cpu", "memory"):
        for key, suffix in (("limit", "limit"), ("guarantee", "guarantee")):
            value = single.get(kind, {}).get(key)
            if value is not None:
                setattr(c.KubeSpawner, f"{'cpu' if kind == 'cpu' else 'mem'}_{suffix}", value)
    volumes, mounts = storage(single.get("storage", {}), c)
    c.KubeSpawner.volumes = volumes
    c.KubeSpawner.volume_mounts = mounts
    if single.get("cloudMetadata", {}).get("blockWithIptables", True):  # the chart's default
        c.KubeSpawner.init_containers = [{
            "name": "block-cloud-metadata", "image": "quay.io/jupyterhub/k8s-network-tools",
            "securityContext": {"privileged": True, "runAsUser": 0,
                                "capabilities": {"add": ["NET_ADMIN"]}}}]
    for section, traits in values.get("hub", {}).get("config", {}).items():
        c[section].update(traits)
    for _, source in sorted(values.get("hub", {}).get("extraConfig", {}).items()):
        exec(compile(source, "hub.extraConfig", "exec"), {"c": c})  # as the chart does
    return c


def storage(spec: Dict[str, Any], c: Config) -> tuple[Dict[str, Any], Dict[str, Any]]:
    """The home volume (dynamic: a claim per user) and the extra volumes, as the chart
    builds them."""
    if spec.get("type", "dynamic") != "dynamic":
        raise SystemExit("render_pod.py handles singleuser.storage.type dynamic only")
    dynamic = spec.get("dynamic", {})
    name = dynamic.get("volumeNameTemplate", "volume-{user_server}")
    c.KubeSpawner.storage_pvc_ensure = True
    c.KubeSpawner.storage_capacity = spec.get("capacity", "10Gi")
    c.KubeSpawner.storage_access_modes = dynamic.get("storageAccessModes", ["ReadWriteOnce"])
    volumes = {name: {"name": name, "persistentVolumeClaim": {"claimName": "{pvc_name}"}}}
    mounts = {name: {"mountPath": spec.get("homeMountPath", "/home/jovyan"), "name": name}}
    for volume in spec.get("extraVolumes") or []:
        volumes[volume["name"]] = volume
    for index, mount in enumerate(spec.get("extraVolumeMounts") or []):
        mounts[f"{index}-{mount['name']}"] = mount
    return volumes, mounts


class _User:
    """What KubeSpawner reads of a hub user."""

    def __init__(self, name: str, user_id: int) -> None:
        self.name = name
        self.id = user_id
        self.url = f"/user/{name}/"
        self.escaped_name = name


class _Hub:
    """What KubeSpawner reads of the hub."""

    public_host = "https://lab.example.edu"
    url = "http://hub:8081/hub/"
    base_url = "/hub/"
    api_url = "http://hub:8081/hub/api"


#: a cluster that is never contacted: KubeSpawner loads a client configuration when it is
#: made, and making a pod's manifest talks to no cluster
NO_CLUSTER = {
    "apiVersion": "v1", "kind": "Config", "current-context": "none",
    "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:1"}}],
    "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
    "users": [{"name": "none", "user": {}}],
}


async def pod(values_file: Path, user: str, user_id: int) -> Dict[str, Any]:
    """The pod manifest, as the Kubernetes API would receive it (JSON-ready)."""
    import os
    import tempfile

    values = yaml.safe_load(values_file.read_text())
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as kubeconfig:
        yaml.safe_dump(NO_CLUSTER, kubeconfig)
    os.environ["KUBECONFIG"] = kubeconfig.name
    try:
        from kubernetes_asyncio.client import ApiClient
        from kubespawner import KubeSpawner

        return await _manifest(values, user, user_id, KubeSpawner, ApiClient)
    finally:
        os.unlink(kubeconfig.name)


async def _manifest(values: Dict[str, Any], user: str, user_id: int, spawner_class: Any,
                    api_client: Any) -> Dict[str, Any]:
    KubeSpawner, ApiClient = spawner_class, api_client
    spawner = KubeSpawner(_mock=True, config=chart_config(values), user=_User(user, user_id),
                          hub=_Hub())
    spawner.api_token = "token-of-the-hub"
    hooked = spawner.run_pre_spawn_hook()  # as the hub does before it starts a server
    if hooked is not None and hasattr(hooked, "__await__"):
        await hooked
    manifest = await spawner.get_pod_manifest()
    await spawner.api.api_client.close()  # made with the spawner; never used
    return ApiClient().sanitize_for_serialization(manifest)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(pod(Path(argv[0]), argv[1], int(argv[2]))), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
