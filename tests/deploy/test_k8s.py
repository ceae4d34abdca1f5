"""The Kubernetes values (deploy/k8s/values.yaml, for the Zero to JupyterHub chart): the pod
a student gets, made by KubeSpawner's own code (deploy/k8s/render_pod.py, run with the
hub's venv), checked for the security settings of deploy/hub/: never root, no privilege
escalation, no capability, the kit's seccomp profile, a user namespace of its own, limits,
a volume per user and the shared nbgrader exchange. No cluster is involved (this machine
cannot run Kubernetes); marker ``hub`` (it needs the hub's venv, which the hub's stage of
`make test` makes).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

pytestmark = [pytest.mark.hub]

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
HUB_PYTHON = Path("/opt/labtools-hub/bin/python")


@pytest.fixture(scope="module", autouse=True)
def only_when_selected(request: pytest.FixtureRequest) -> None:
    """Run with ``-m hub`` (`make test`'s hub stage, which makes the hub's venv first)."""
    if "hub" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the Kubernetes pod checks run with -m hub (make test's hub stage)")


def render(values: Path, user: str, user_id: int) -> Dict[str, Any]:
    if not HUB_PYTHON.exists():
        pytest.fail("the hub's venv is missing: bash scripts/hub.sh "
                    "deploy/hub/course.example.toml --check makes it")
    proc = subprocess.run([str(HUB_PYTHON), str(K8S / "render_pod.py"), str(values), user,
                           str(user_id)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def privileged_parts(pod: Dict[str, Any]) -> List[str]:
    """What in a pod breaks the rules: every container (init ones too) non-root, no
    escalation, no capability, not privileged, the kit's seccomp profile."""
    found = []
    spec = pod["spec"]
    for container in spec.get("initContainers", []) + spec["containers"]:
        sc = container.get("securityContext") or {}
        name = container["name"]
        if sc.get("privileged") or sc.get("runAsUser", 1) == 0:
            found.append(f"{name}: privileged or root")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: privilege escalation not refused")
        if (sc.get("capabilities") or {}).get("add") or \
                (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            found.append(f"{name}: capabilities not all dropped")
        if sc.get("runAsNonRoot") is not True:
            found.append(f"{name}: may run as root")
        if (sc.get("seccompProfile") or spec.get("securityContext", {}).get("seccompProfile")) != \
                {"type": "Localhost", "localhostProfile": "labtools-userns.json"}:
            found.append(f"{name}: not the kit's seccomp profile")
    if spec.get("hostUsers") is not False:
        found.append("pod: shares the node's user namespace")
    return found


@pytest.fixture(scope="module")
def pods() -> Dict[str, Dict[str, Any]]:
    return {"teacher": render(K8S / "values.yaml", "teacher", 1),
            "alice": render(K8S / "values.yaml", "alice", 2)}


def test_a_students_pod_is_unprivileged(pods):
    for pod in pods.values():
        assert privileged_parts(pod) == []
        container = pod["spec"]["containers"][0]
        assert container["securityContext"]["procMount"] == "Unmasked"
        assert not pod["spec"].get("initContainers")
        assert pod["spec"]["automountServiceAccountToken"] is False


def test_each_user_runs_as_an_id_of_their_own_with_their_role(pods):
    users = {name: pod["spec"]["containers"][0]["securityContext"]["runAsUser"]
             for name, pod in pods.items()}
    assert users == {"teacher": 20001, "alice": 20002}
    env = {name: {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
           for name, pod in pods.items()}
    assert env["teacher"]["LABTOOLS_ROLE"] == "instructor"
    assert env["alice"]["LABTOOLS_ROLE"] == "student"
    assert env["alice"]["LABTOOLS_COURSE"] == "netlab" and env["alice"]["JUPYTERHUB_USER"] == "alice"


def test_limits_image_command_and_volumes(pods):
    pod = pods["alice"]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"cpu": 1.0, "memory": 2 * 2 ** 30}
    assert container["resources"]["requests"] == {"cpu": 0.5, "memory": 2 ** 30}
    assert container["image"] == "registry.example.edu/labtools-lab:latest"
    assert pods["teacher"]["spec"]["containers"][0]["image"] == \
        "registry.example.edu/labtools-lab-instructor:latest"  # the whole kit
    assert container["args"] == ["labtools-hub-server"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]}
    assert claims[mounts["/home/lab"]] == "claim-alice"  # a volume of alice's own
    assert claims[mounts["/srv/nbgrader/exchange"]] == "labtools-nbgrader-exchange"
    exchange = yaml.safe_load((K8S / "exchange-pvc.yaml").read_text())
    assert exchange["metadata"]["name"] == "labtools-nbgrader-exchange"
    assert exchange["spec"]["accessModes"] == ["ReadWriteMany"]


def test_the_network_policy_lets_a_server_reach_nothing_but_the_hub():
    values = yaml.safe_load((K8S / "values.yaml").read_text())
    policy = values["singleuser"]["networkPolicy"]
    assert policy["enabled"] is True
    assert not any(policy["egressAllowRules"][key] for key in
                   ("cloudMetadataServer", "nonPrivateIPs", "privateIPs"))
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] == 3600


def test_the_nodes_get_the_profile_the_pods_name_and_netem():
    setup = (K8S / "node-setup.sh").read_text()
    assert "labtools-userns.json" in setup and "image/seccomp-userns.json" in setup
    assert "modprobe sch_netem" in setup and "modules-load.d" in setup


def test_the_check_catches_the_charts_privileged_default(tmp_path):
    """Without ``cloudMetadata.blockWithIptables: false`` the chart adds a privileged init
    container; the check must see it (and a pod sharing the node's user namespace)."""
    values = yaml.safe_load((K8S / "values.yaml").read_text())
    del values["singleuser"]["cloudMetadata"]
    del values["singleuser"]["extraPodConfig"]
    changed = tmp_path / "values.yaml"
    changed.write_text(yaml.safe_dump(values))
    found = privileged_parts(render(changed, "alice", 2))
    assert "block-cloud-metadata: privileged or root" in found
    assert "pod: shares the node's user namespace" in found
