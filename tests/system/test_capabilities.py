"""Capability detection: version parsers on real outputs, the netem probe, kernel images,
the cached KVM probe, and the doctor's report shape."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from labtools import settings
from labtools.errors import ParseError
from labtools.system import capabilities as caps
from labtools.system import doctor as doctor_cmd
from labtools.system import toolenv, userns

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "capabilities"
SANDBOX = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"

# fixture file -> (tool, version it reports); see fixtures/capabilities/README.md
VERSIONS = {
    "iperf-version.txt": ("iperf", "2.1.8"),
    "iperf3-version.txt": ("iperf3", "3.12"),
    "ping-version.txt": ("ping", "20221126"),
    "brctl-version.txt": ("brctl", "1.7"),
    "ovs-vsctl-version.txt": ("ovs-vsctl", "3.1.0"),
    "mn-version.txt": ("mn", "2.3.0"),
    "vng-version.txt": ("vng", "1.42"),
    "qemu-version.txt": ("qemu", "7.2.22"),
    "tc-version.txt": ("tc", "6.1.0"),
}


@pytest.mark.parametrize("fixture", sorted(VERSIONS))
def test_parse_version_of_real_outputs(fixture):
    tool, version = VERSIONS[fixture]
    assert caps.parse_version(tool, (FIX / fixture).read_text()) == version


def test_parse_version_rejects_another_tools_output():
    with pytest.raises(ParseError, match="vng"):
        caps.parse_version("vng", (FIX / "iperf3-version.txt").read_text())
    with pytest.raises(ParseError):
        caps.parse_version("mn", (FIX / "tc-version.txt").read_text())


def test_every_tool_has_args_and_pattern():
    assert set(caps.VERSION_ARGS) == set(caps.VERSION_PATTERNS)
    assert caps.version_args("iperf", "/usr/bin/iperf") == ["/usr/bin/iperf", "-v"]


def test_netem_probe_runs_in_a_throwaway_namespace():
    args = caps.netem_probe_args()
    assert args[:3] == ["unshare", "--net", "--"]
    assert args[3:] == ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]
    user = caps.netem_probe_args(user_namespace=True)  # what a user without root can try
    assert user[:5] == ["unshare", "--user", "--map-root-user", "--net", "--"]
    assert user[5:] == args[3:]
    ok, detail = caps.interpret_netem_probe(2, (SANDBOX / "netem-userns-missing.txt").read_text())
    assert not ok and "no sch_netem" in detail


def test_the_netem_module_is_loaded_built_in_loadable_or_missing():
    dep = (SANDBOX / "modules-dep-sched.txt").read_text()
    builtin = (SANDBOX / "modules-builtin.txt").read_text()
    assert caps.module_state(dep, builtin, False, "sch_netem") == "not loaded"
    assert caps.module_state(dep, builtin, True, "sch_netem") == "loaded"
    assert caps.module_state(dep, builtin, False, "sch_fq_codel") == "built in"
    assert caps.module_state(dep, builtin, False, "sch_nosuch") == "missing"
    assert caps.module_state("", "", False, "sch_netem") == "missing"  # no modules: this host
    zst = dep.replace("sch_netem.ko:", "sch_netem.ko.zst:")  # Ubuntu compresses its modules
    assert caps.module_state(zst, builtin, False, "sch_netem") == "not loaded"
    assert caps.module_state(dep, builtin, False, "netem") == "missing"  # whole names only


def test_the_doctor_says_how_to_load_netem_or_to_use_the_vm():
    assert "modprobe sch_netem" in doctor_cmd.netem_fix("not loaded")
    assert "modules-load.d" in doctor_cmd.netem_fix("not loaded")
    assert doctor_cmd.netem_fix("missing") == doctor_cmd.USE_THE_VM


def test_sandbox_probe_builds_what_a_lab_builds():
    args = userns.probe_args()
    assert args[:5] == ["unshare", "--user", "--map-root-user", "--net", "--"]
    assert "type bridge" in args[-1] and "type veth" in args[-1] and " htb " in args[-1]
    nobody = userns.probe_args(as_ordinary_user=True)
    assert nobody[:5] == ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    assert nobody[5:] == args


@pytest.mark.parametrize("sysctl, value", [
    ("kernel.unprivileged_userns_clone", "0"), ("user.max_user_namespaces", "0"),
    ("kernel.apparmor_restrict_unprivileged_userns", "1")])
def test_a_refused_sandbox_names_the_setting_to_change(sysctl, value):
    refused = (SANDBOX / "probe-eperm.txt").read_text()
    detail, fix = userns.explain_failure(refused, {sysctl: value})
    assert detail.startswith(f"{sysctl} is {value} (unshare: unshare failed: Operation not "
                             "permitted)")
    assert f"sysctl -w {sysctl}=" in fix and "/etc/sysctl.d/" in fix
    allowing = {"kernel.unprivileged_userns_clone": "1", "user.max_user_namespaces": "96364",
                "kernel.apparmor_restrict_unprivileged_userns": "0"}
    detail, fix = userns.explain_failure(refused, allowing)
    assert detail == "the kernel refused it (unshare: unshare failed: Operation not permitted)"


def test_a_refused_sandbox_in_a_container_or_at_the_limit():
    refused = (SANDBOX / "probe-eperm.txt").read_text()
    detail, fix = userns.explain_failure(refused, {}, container=True)
    assert detail.startswith("refused in this container") and "seccomp" in fix
    full = (SANDBOX / "probe-enospc.txt").read_text()
    detail, fix = userns.explain_failure(full, {"user.max_user_namespaces": "15000"})
    assert "limit of user namespaces is reached" in detail and "max_user_namespaces" in fix


def test_the_sandbox_probe_on_this_machine_agrees_with_a_direct_try():
    import subprocess

    ok, detail, fix = userns.sandbox_ok()
    direct = subprocess.run(userns.probe_args(), capture_output=True, env=toolenv.tools_env())
    assert ok == (direct.returncode == 0), detail
    assert bool(fix) == (not ok)
    assert (SANDBOX / "probe-ok.txt").read_text() == ""  # what a working probe says


def test_interpret_netem_probe_missing_and_ok():
    ok, detail = caps.interpret_netem_probe(2, (FIX / "netem-probe-missing.txt").read_text())
    assert not ok and "no sch_netem" in detail
    ok, detail = caps.interpret_netem_probe(0, (FIX / "netem-probe-ok.txt").read_text())
    assert ok and "works" in detail
    ok, detail = caps.interpret_netem_probe(1, (FIX / "modprobe-missing.txt").read_text())
    assert not ok and "modprobe: FATAL" in detail


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_kernel_images_newest_first_and_only_with_modules(tmp_path):
    boot, mods = tmp_path / "boot", tmp_path / "modules"
    for release in ("6.1.0-9-amd64", "6.1.0-56-amd64", "5.10.0-30-amd64"):
        _touch(boot / f"vmlinuz-{release}")
    (mods / "6.1.0-9-amd64").mkdir(parents=True)
    (mods / "6.1.0-56-amd64").mkdir()
    found = caps.kernel_images(boot, mods)
    assert [p.name for p in found] == ["vmlinuz-6.1.0-56-amd64", "vmlinuz-6.1.0-9-amd64"]
    assert caps.kernel_images(tmp_path / "nothing", mods) == []


def test_find_vm_kernel_respects_the_override(tmp_path, monkeypatch):
    image = _touch(tmp_path / "vmlinuz-test")
    monkeypatch.setenv("LABTOOLS_VM_KERNEL", str(image))
    assert caps.find_vm_kernel() == image
    monkeypatch.setenv("LABTOOLS_VM_KERNEL", str(tmp_path / "missing"))
    assert caps.find_vm_kernel() is None
    assert any("kernel" in what for what, _ in caps.vm_runner_missing())


def test_tools_env_puts_the_venv_first():
    path = toolenv.tools_env()["PATH"].split(":")
    assert path[0] == str(toolenv.venv_bin_dir())
    assert "/usr/sbin" in path and len(path) == len(set(path))


def test_kvm_probe_is_cached_per_kernel(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caps, "kvm_device_ok", lambda: (True, "/dev/kvm is accessible"))
    monkeypatch.setattr(caps, "find_vm_kernel", lambda: Path("/boot/vmlinuz-A"))
    monkeypatch.setattr(caps, "probe_kvm", lambda t: calls.append(t) or (False, "hung"))
    assert caps.kvm_usable() == (False, "hung")
    ok, detail = caps.kvm_usable()
    assert not ok and "cached" in detail and len(calls) == 1
    caps.kvm_usable(recheck=True)
    assert len(calls) == 2
    monkeypatch.setattr(caps, "find_vm_kernel", lambda: Path("/boot/vmlinuz-B"))
    caps.kvm_usable()
    assert len(calls) == 3
    assert json.loads((tmp_path / caps.KVM_CACHE_FILE).read_text())["key"].endswith("vmlinuz-B")


def test_no_kvm_device_means_no_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caps, "kvm_device_ok", lambda: (False, "/dev/kvm does not exist"))
    monkeypatch.setattr(caps, "probe_kvm", lambda t: pytest.fail("probed without /dev/kvm"))
    assert caps.kvm_usable() == (False, "/dev/kvm does not exist")


def test_native_network_needs_a_sandbox_not_root(monkeypatch):
    from labtools import settings
    from labtools.lab.placement import runs_natively

    monkeypatch.setenv(settings.IN_VM, "0")
    monkeypatch.setattr(caps, "is_root", lambda: False)
    monkeypatch.setattr(caps, "mininet_available", lambda: (True, "here"))
    monkeypatch.setattr(caps, "find_tool", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(caps, "kernel_has_netem", lambda: (True, "works"))
    monkeypatch.setattr(userns, "sandbox_ok", lambda: (True, "works", ""))
    assert runs_natively() is True
    monkeypatch.setattr(userns, "sandbox_ok", lambda: (False, "refused", "allow it"))
    assert runs_natively() is False


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="the real netem probe needs root")
def test_real_netem_probe_agrees_with_a_direct_try():
    import subprocess

    ok, detail = caps.kernel_has_netem()
    direct = subprocess.run(caps.netem_probe_args(), capture_output=True, env=toolenv.tools_env())
    assert ok == (direct.returncode == 0), detail


def _check(name, ok, required=True):
    return doctor_cmd.Check(name, ok, "detail", "" if ok else "do this", required)


def _report(netem_ok, runner_ok, iperf_ok=True, sandbox_ok=True):
    return [_check("lab sandbox", sandbox_ok), _check("root", False, False),
            _check("iperf", iperf_ok),
            _check("netem in this kernel", netem_ok, False), _check("KVM", False, False),
            _check("VM runner", runner_ok, False)]


def test_kit_can_work_natively_or_through_the_vm():
    assert doctor_cmd.kit_can_work(_report(netem_ok=True, runner_ok=False))
    assert doctor_cmd.kit_can_work(_report(netem_ok=False, runner_ok=True))
    assert not doctor_cmd.kit_can_work(_report(netem_ok=False, runner_ok=False))
    assert not doctor_cmd.kit_can_work(_report(netem_ok=True, runner_ok=True, iperf_ok=False))
    assert not doctor_cmd.kit_can_work(_report(netem_ok=True, runner_ok=True, sandbox_ok=False))
    assert "VM runner" in doctor_cmd.verdict(_report(netem_ok=False, runner_ok=True))


def test_doctor_line_format():
    assert doctor_cmd.format_line(_check("root", True)) == "ok   root: detail"
    line = doctor_cmd.format_line(_check("netem in this kernel", False))
    assert line.startswith("FAIL netem in this kernel: ") and line.endswith("— fix: do this")


def test_doctor_report_on_this_machine(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caps, "kvm_usable", lambda **kw: (False, "not probed in tests"))
    from labtools.commands.doctor_cmd import run

    status = run(argparse.Namespace(json=True, recheck=False))
    full = json.loads(capsys.readouterr().out)
    assert full["calibration"] is None  # none in this empty cache folder
    report = full["checks"]
    assert [r["name"] for r in report] == list(doctor_cmd.CHECKS)
    for row in report:
        assert set(row) == {"name", "ok", "detail", "fix"}
        assert isinstance(row["ok"], bool) and row["detail"]
        assert bool(row["fix"]) == (not row["ok"])
    by_name = {r["name"]: r["ok"] for r in report}
    expected = all(by_name[n] for n in ("lab sandbox", "Mininet", "iperf", "iperf3", "ping",
                                        "bridge utilities"))
    expected = expected and (by_name["netem in this kernel"] or by_name["VM runner"])
    assert status == (0 if expected else 1)
    assert {s["name"]: s["value"] for s in full["settings"]}["LABTOOLS_CACHE_DIR"] == str(tmp_path)
    run(argparse.Namespace(json=False, recheck=False))
    lines = capsys.readouterr().out.splitlines()
    shown = len(settings.VARIABLES) + 1  # the settings in force, under a heading
    assert len(lines) == len(report) + 2 + shown
    assert all(line[:5] in ("ok   ", "FAIL ") for line in lines[:len(report)])
    assert lines[-shown - 1] == "calibration: none yet (a lab measures this machine when it starts)"
    assert f"  LABTOOLS_CACHE_DIR={tmp_path}" in lines[-shown:]


def test_doctor_shows_the_last_calibration_and_whether_the_lab_fits(tmp_path, monkeypatch):
    from labtools.judge.machine import MachineProfile
    from labtools.judge.policy import CAPACITY_HEADROOM
    from labtools.lab import calibration
    from labtools.model.catalog import load_topology
    from labtools.model.scaling import peak_load_mbps

    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    topo = load_topology("portfolio")
    load = peak_load_mbps(topo)
    slow = MachineProfile(0.1, 0.3, round(load / (2 * CAPACITY_HEADROOM), 4), "vm-tcg",
                          "2026-11-22T21:59:56+00:00", 6.6)
    calibration.remember(slow)
    assert calibration.last_calibration() == slow
    lines = calibration.calibration_lines(topo)
    assert lines[0].startswith("calibration (2026-11-22 21:59 UTC, 7 s): this machine (vm-tcg)")
    assert "run it with rate_scale=0.5 " in lines[1]
    calibration.remember(MachineProfile(0.1, 0.3, load * 10, "native", "2026-11-22T22:00", 5))
    assert "fit what this machine forwards" in calibration.calibration_lines(topo)[1]


def test_where_the_kernel_has_netem_the_vm_runner_checks_say_not_needed(monkeypatch):
    monkeypatch.setattr(caps, "kernel_has_netem", lambda: (True, "sch_netem works"))

    def no_probe(**kw):
        raise AssertionError("the KVM probe must not run where netem works")

    monkeypatch.setattr(caps, "kvm_usable", no_probe)
    by_name = {c.name: c for c in doctor_cmd.collect_checks()}
    for name in doctor_cmd.VM_ONLY:
        assert by_name[name].ok and by_name[name].detail.startswith("not needed")
        assert doctor_cmd.format_line(by_name[name]).startswith("ok   ")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to try as an ordinary user")
def test_a_kernel_image_an_ordinary_user_cannot_read_is_named_with_the_fix():
    """Ubuntu keeps /boot/vmlinuz-* readable by root only: the VM runner of an ordinary
    user cannot boot it."""
    import subprocess
    import sys
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="labtools-kernel-test-"))
    try:
        folder.chmod(0o755)  # pytest's own folders are root's only
        image = _touch(folder / "vmlinuz-6.8.0-1-generic")
        code = "from labtools.system import capabilities as c; print(c.vm_runner_missing())"
        said = []
        for mode in (0o600, 0o644):
            image.chmod(mode)
            run = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                 sys.executable, "-c", code], capture_output=True, text=True,
                env={"LABTOOLS_VM_KERNEL": str(image), "PATH": "/usr/bin:/bin"})
            assert run.returncode == 0, run.stderr
            said.append(run.stdout)
        assert f"read access to {image} (this user boots it)" in said[0]
        assert f"as root: chmod 0644 {image}" in said[0]
        assert "read access" not in said[1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
