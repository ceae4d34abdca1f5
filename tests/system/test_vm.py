"""The VM runner: argument builders, the guest script, error mapping and one real boot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtools import settings
from labtools.commands import vm_cmd
from labtools.errors import InputError, VMError
from labtools.system import capabilities as caps
from labtools.system import vm

ROOT = Path(__file__).resolve().parents[2]


def vm_cache_dirs():
    from labtools.system import vm_cache

    return vm_cache.cached_shares(vm_cache.python_dirs(), ())


def spec(tmp_path: Path, **changes) -> vm.VMSpec:
    base = dict(command=("python", "-c", "print('a b')"),
                kernel=Path("/boot/vmlinuz-6.1.0-56-amd64"), vng="/venv/bin/vng", cwd=Path("/work/lab"), rwdirs=(Path("/work/lab"),),
                state_dir=tmp_path, path_dirs=("/venv/bin",))
    base.update(changes)
    return vm.VMSpec(**base)


def test_vng_args_software_emulation(tmp_path):
    args = vm.build_vng_args(spec(tmp_path))
    assert args[:7] == ["/venv/bin/vng", "--run", "/boot/vmlinuz-6.1.0-56-amd64",
                        "--memory", "2G", "--cpus", "2"]
    assert "--disable-kvm" in args
    assert "--force-9p" in args  # no futile virtiofs attempts (3 s each)
    rw = [args[i + 1] for i, a in enumerate(args) if a == "--rwdir"]
    assert rw == ["/work/lab", str(tmp_path)]
    assert args[args.index("--cwd") + 1] == "/work/lab"
    assert args[-2:] == ["--exec", f"sh {tmp_path / 'guest.sh'}"]
    assert not any(a.startswith("--qemu-opts") for a in args)


def test_vng_args_kvm_and_forwarded_port_on_loopback_only(tmp_path):
    args = vm.build_vng_args(spec(tmp_path, kvm=True, forward_ports=((18888, 8888),)))
    assert "--disable-kvm" not in args
    opts = [a for a in args if a.startswith("--qemu-opts=")]
    assert len(opts) == 1
    assert "hostfwd=tcp:127.0.0.1:18888-10.0.2.15:8888" in opts[0]
    assert "restrict=on" in opts[0] and "0.0.0.0" not in opts[0]


def test_the_kits_python_is_read_through_cached_shares(tmp_path):
    """Each cached folder is a 9p device of its own, mounted over the same path with
    ``cache=loose`` before the command runs; writable only inside a folder the guest may
    write; a path QEMU's options cannot carry stays uncached."""
    shares = spec(tmp_path, cached=(Path("/work/lab/.venv"), Path("/usr/lib/python3.11"),
                                    Path("/odd,path")))
    opts = [a for a in vm.build_vng_args(shares) if a.startswith("--qemu-opts=")]
    assert len(opts) == 1
    assert ("-fsdev local,id=labtools-cache0,path=/work/lab/.venv,security_model=none,"
            "multidevs=remap -device virtio-9p-pci,fsdev=labtools-cache0,"
            "mount_tag=labtools-cache0") in opts[0]
    assert "path=/usr/lib/python3.11,security_model=none,multidevs=remap,readonly=on" in opts[0]
    assert "odd" not in opts[0] and "labtools-cache2" not in opts[0]
    text = vm.guest_script(shares)
    venv = text.index("-o rw,trans=virtio,version=9p2000.L,msize=524288,access=any,"
                      "cache=loose labtools-cache0 /work/lab/.venv")
    assert "-o ro,trans=virtio" in text and "labtools-cache1 /usr/lib/python3.11" in text
    assert venv < text.index("python -c")
    assert "read uncached" in text  # a share that does not mount is a note, not a failure


def test_the_cached_folders_are_the_running_pythons():
    from labtools.system import vm_cache

    dirs = vm_cache.python_dirs()
    assert dirs and dirs[0] == Path(sys.prefix).resolve()
    assert not [d for d in dirs if any(o != d and o in d.parents for o in dirs)]


def test_guest_script_environment_and_command(tmp_path):
    text = vm.guest_script(spec(tmp_path, env=(("JUPYTER_TOKEN", "t o'k"),)))
    assert "export LABTOOLS_IN_VM=1" in text
    assert "export PATH=/venv/bin:/usr/local/sbin" in text
    assert "export JUPYTER_TOKEN='t o'\"'\"'k'" in text
    assert "for m in sch_netem sch_htb openvswitch; do" in text
    assert "python -c 'print('\"'\"'a b'\"'\"')'" in text
    assert f"echo $rc > {tmp_path / 'status'}" in text
    assert "10.0.2.15" not in text  # the NIC is only set up when ports are forwarded
    assert "ip addr add 10.0.2.15/24" in vm.guest_script(spec(tmp_path, forward_ports=((1, 2),)))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="runs the guest script in a throwaway network namespace (root)")
def test_guest_script_really_runs_and_records_the_status(tmp_path):
    s = spec(tmp_path, command=("sh", "-c", 'echo "in_vm=$LABTOOLS_IN_VM"; exit 3'),
             cwd=tmp_path, modules=())
    (tmp_path / "guest.sh").write_text(vm.guest_script(s))
    proc = subprocess.run(["unshare", "--net", "--", "sh", str(tmp_path / "guest.sh")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 3
    assert proc.stdout == "in_vm=1\n"
    assert (tmp_path / "status").read_text() == "3\n"
    assert "labtools vm: running: sh -c" in proc.stderr


@pytest.mark.parametrize("changes, reason", [
    (dict(command=()), "no command"),
    (dict(memory="2 GB"), "memory"),
    (dict(cpus=0), "cpus"),
    (dict(kernel_args=("idle=poll; reboot",)), "kernel option"),
    (dict(forward_ports=((70000, 8888),)), "port 70000"),
    (dict(env=(("BAD-NAME", "x"),)), "environment variable"),
])
def test_validate_spec_refuses_bad_options(tmp_path, changes, reason):
    with pytest.raises(InputError, match=reason):
        vm.validate_spec(spec(tmp_path, **changes))


def test_parse_forward_and_env(monkeypatch):
    assert vm_cmd.parse_forward("8888") == (8888, 8888)
    assert vm_cmd.parse_forward("18888:8888") == (18888, 8888)
    with pytest.raises(InputError):
        vm_cmd.parse_forward("0.0.0.0:8888")
    monkeypatch.setenv("LAB_TEST_VALUE", "v=1")
    assert vm_cmd.parse_env("LAB_TEST_VALUE") == ("LAB_TEST_VALUE", "v=1")
    assert vm_cmd.parse_env("A=b=c") == ("A", "b=c")
    monkeypatch.delenv("LAB_TEST_VALUE")
    with pytest.raises(InputError):
        vm_cmd.parse_env("LAB_TEST_VALUE")
    assert vm_cmd.strip_separator(["--", "ls", "--"]) == ["ls", "--"]


def test_default_rwdirs(tmp_path):
    root = vm.project_root()
    assert root == ROOT
    assert vm.default_rwdirs(ROOT / "notebooks") == (ROOT,)
    assert vm.default_rwdirs(tmp_path) == (ROOT, tmp_path)
    assert vm.default_rwdirs(Path("/")) == (ROOT,)


def test_missing_runner_parts_become_a_vm_error_with_a_fix(monkeypatch):
    monkeypatch.setattr(caps, "vm_runner_missing",
                        lambda: [("vng (virtme-ng)", "pip install virtme-ng")])
    with pytest.raises(VMError, match="fix: pip install virtme-ng"):
        vm.run_in_vm(["true"])


def _ready(monkeypatch, tmp_path):
    image = tmp_path / "vmlinuz-6.1.0-56-amd64"
    image.write_text("")
    monkeypatch.setattr(caps, "vm_runner_missing", lambda: [])
    monkeypatch.setattr(caps, "find_vm_kernel", lambda: image)
    monkeypatch.setattr(caps, "find_tool", lambda name: f"/usr/bin/{name}")


def test_kernel_options_are_appended_one_by_one(tmp_path):
    args = vm.build_vng_args(spec(tmp_path, kernel_args=("idle=poll", "nosmt")))
    appended = [args[i + 1] for i, a in enumerate(args) if a == "--append"]
    unused = "module_blacklist=" + ",".join(vm.UNUSED_GUEST_MODULES)
    assert appended == [unused, "idle=poll", "nosmt"]
    default = vm.build_vng_args(spec(tmp_path))
    assert [default[i + 1] for i, a in enumerate(default) if a == "--append"] == [unused]
    assert {"kvm", "libata"} <= set(vm.UNUSED_GUEST_MODULES)
    assert not {"sch_netem", "sch_htb", "openvswitch", "9p", "virtio_net", "overlay"} & set(
        vm.UNUSED_GUEST_MODULES)  # what the lab and the VM itself need


@pytest.mark.parametrize("kvm, env, cpus, kernel_args", [
    (False, {}, min(2, os.cpu_count() or 1), ()),
    (False, {"LABTOOLS_VM_IDLE_POLL": "1"}, 1, ("idle=poll",)),  # one CPU that never halts
    (False, {"LABTOOLS_VM_IDLE_POLL": "1", "LABTOOLS_VM_CPUS": "2"}, 2, ("idle=poll",)),
    (True, {"LABTOOLS_VM_IDLE_POLL": "1"}, min(2, os.cpu_count() or 1), ()),  # KVM: not needed
])
def test_spec_defaults_follow_the_emulation_mode(monkeypatch, tmp_path, kvm, env, cpus,
                                                 kernel_args):
    _ready(monkeypatch, tmp_path)
    for name in ("LABTOOLS_VM_CPUS", "LABTOOLS_VM_IDLE_POLL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s = vm.make_spec(["true"], tmp_path, cwd=tmp_path, kvm=kvm)
    assert (s.cpus, s.kernel_args) == (cpus, kernel_args)


def test_status_comes_back_from_the_status_file(monkeypatch, tmp_path):
    _ready(monkeypatch, tmp_path)

    def fake_vng(args, env, timeout_s, new_session=True):
        script = Path(args[-1].split(" ", 1)[1])
        (script.parent / vm.STATUS_FILE).write_text("7\n")
        return 0

    monkeypatch.setattr(vm, "run_vng", fake_vng)
    assert vm.run_in_vm(["false"], kvm=False) == 7
    monkeypatch.setattr(vm, "run_vng", lambda args, env, timeout_s, new_session=True: 1)
    with pytest.raises(VMError, match="stopped before the command finished"):
        vm.run_in_vm(["false"], kvm=False)


def test_run_vng_time_out_stops_the_process(capfd):
    start = time.monotonic()
    with pytest.raises(VMError, match="within 1 s"):
        vm.run_vng(["sh", "-c", "echo started; sleep 30"], dict(os.environ), timeout_s=1)
    assert time.monotonic() - start < 10
    assert "started" in capfd.readouterr().out


def test_run_vng_streams_and_returns_the_status(capfd):
    status = vm.run_vng(["sh", "-c", "echo out; echo err >&2; exit 4"], dict(os.environ), None)
    captured = capfd.readouterr()
    assert (status, captured.out, captured.err) == (4, "out\n", "err\n")
    with pytest.raises(VMError, match="cannot start"):
        vm.run_vng(["/nonexistent/vng"], dict(os.environ), None)


@pytest.mark.vm
@pytest.mark.skipif(settings.current().in_vm, reason="already inside the VM")
def test_real_vm_boot_runs_netem_and_returns_the_status(tmp_path):
    if caps.vm_runner_missing():
        pytest.skip(f"VM runner not ready: {caps.vm_runner_missing()}")
    guest = ("cat /proc/version; tc qdisc add dev lo root netem delay 1ms && echo netem-added; "
             "echo cached-shares=$(grep -c '^labtools-cache.* 9p .*loose' /proc/mounts); "
             "iperf3 -s -1 -D; echo receiver-lines=$(iperf3 -c 127.0.0.1 -t 1 | grep -c receiver); "
             f"uname -r > {tmp_path}/release; exit 5")
    # the host's /tmp shared too (as `labtools run --results /tmp/x.sqlite` does): iperf3
    # still finds a temporary folder that can hold its stream buffers
    proc = subprocess.run(
        [sys.executable, "-m", "labtools.cli", "vm", "--timeout", "900", "--rwdir", "/tmp",
         "--rwdir", str(tmp_path), "--", "sh", "-c", guest],
        capture_output=True, text=True, cwd=str(ROOT), timeout=960)
    assert proc.returncode == 5, proc.stderr
    assert "Linux version" in proc.stdout and "netem-added" in proc.stdout
    assert "receiver-lines=1" in proc.stdout, proc.stdout + proc.stderr
    assert f"cached-shares={len(vm_cache_dirs())}" in proc.stdout, proc.stdout + proc.stderr
    release = caps.find_vm_kernel().name[len("vmlinuz-"):]
    assert (tmp_path / "release").read_text().strip() == release
    assert "labtools vm: booting" in proc.stderr
