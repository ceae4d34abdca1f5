"""The pure parts of the fresh-system check: image recipes, the files put into the system,
the QEMU command line, and reading the Vagrantfile's provisioner (no root, no network)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import system_boot as sysboot
import system_images as images

from labtools.errors import InputError
from tests.system.test_provisioning import VAGRANTFILE, vagrant_provisioner


def test_known_systems_and_a_clear_error_for_others():
    assert set(images.RECIPES) == {"debian-12", "ubuntu-22.04", "ubuntu-24.04"}
    with pytest.raises(InputError, match="unknown system 'fedora'; known: debian-12"):
        images.recipe("fedora")


def test_debootstrap_builds_a_minimal_system_with_systemd_and_the_distributions_kernel():
    r = images.recipe("debian-12")
    argv = images.debootstrap_command(r, Path("/tmp/root"))
    assert argv[:2] == ["debootstrap", "--variant=minbase"]
    include = next(a for a in argv if a.startswith("--include=")).split("=", 1)[1].split(",")
    assert {"systemd", "systemd-sysv", "sudo", "linux-image-amd64"} <= set(include)
    assert argv[-3:] == ["bookworm", "/tmp/root", "http://deb.debian.org/debian"]
    noble = images.debootstrap_command(images.recipe("ubuntu-24.04"), Path("/r"))
    assert noble[-1] == "/usr/share/debootstrap/scripts/gutsy" and "--no-check-gpg" in noble
    assert "--components=main,universe" in noble  # mininet is in universe


def test_the_cache_key_follows_the_recipe():
    r = images.recipe("debian-12")
    assert r.key() == images.recipe("debian-12").key()
    assert replace(r, packages=(*r.packages, "vim")).key() != r.key()


def test_the_system_mounts_the_repository_where_vagrant_does_and_runs_the_stage_script():
    files = images.system_files(images.recipe("debian-12"))
    fstab = files["etc/fstab"].splitlines()
    assert f"{images.REPO_TAG} {images.REPO_MOUNT} 9p" in fstab[1]
    assert images.REPO_MOUNT == "/home/vagrant/lab"
    assert "/home/vagrant/lab/scripts/setup.sh" in vagrant_provisioner()["command"]
    unit = files["etc/systemd/system/labtools-stage.service"]
    assert f"ExecStart=/bin/bash {images.CONTROL_MOUNT}/{images.STAGE_SCRIPT}" in unit
    assert "WantedBy=multi-user.target" in unit
    assert files["etc/sudoers.d/vagrant"] == "vagrant ALL=(ALL) NOPASSWD: ALL\n"


def spec(tmp_path: Path, **kw) -> sysboot.BootSpec:
    for name in ("root.img", "vmlinuz", "initrd.img"):
        (tmp_path / name).write_text("x")
    (tmp_path / "ctl").mkdir(exist_ok=True)
    base = dict(image=tmp_path / "root.img", kernel=tmp_path / "vmlinuz",
                initrd=tmp_path / "initrd.img", repo=tmp_path, control=tmp_path / "ctl",
                console_log=tmp_path / "console.log", forwards=((18899, 8888),))
    base.update(kw)
    return sysboot.BootSpec(**base)


def test_qemu_forwards_from_the_hosts_loopback_only_and_exits_on_reboot(tmp_path):
    argv = sysboot.qemu_args(spec(tmp_path))
    netdev = argv[argv.index("-netdev") + 1]
    assert netdev == "user,id=net0,hostfwd=tcp:127.0.0.1:18899-:8888"
    assert "-no-reboot" in argv and argv[argv.index("-accel") + 1] == "tcg"
    assert f"mount_tag={images.REPO_TAG}" in " ".join(argv)
    assert "root=/dev/vda" in argv[argv.index("-append") + 1]


def test_bad_boot_specs_are_refused(tmp_path):
    good = spec(tmp_path)
    sysboot.validate(good)
    with pytest.raises(InputError, match="does not exist"):
        sysboot.validate(replace(good, kernel=tmp_path / "missing"))
    with pytest.raises(InputError, match="outside"):
        sysboot.validate(replace(good, forwards=((0, 8888),)))
    with pytest.raises(InputError, match="512 MiB"):
        sysboot.validate(replace(good, memory_mb=128))


def test_the_vagrantfile_passes_the_forwarded_port_to_the_provisioner():
    vagrant = vagrant_provisioner()
    assert vagrant["LAB_PORT"] == "LAB_PORT_FROM_HOST"
    assert vagrant["LABTOOLS_VENV"] == "/opt/labtools/venv"
    assert vagrant["command"] == "bash /home/vagrant/lab/scripts/setup.sh --service"
    assert 'run: "always"' in VAGRANTFILE.read_text()


def test_the_closing_message_names_what_the_provisioning_check_runs():
    """vagrant up's message tells students two commands; the check runs exactly those."""
    text = VAGRANTFILE.read_text()
    stage = (Path(__file__).parents[1] / "support" / "system" / "stage_provision.sh").read_text()
    for command in ("sudo labtools-lab-url", "sudo labtools doctor"):
        assert f"vagrant ssh -c '{command}'" in text
        assert f"runuser -u vagrant -- {command}" in stage


def test_the_system_trusts_what_this_host_trusts(tmp_path, monkeypatch):
    cas = tmp_path / "ca-certificates"
    cas.mkdir()
    (cas / "proxy.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n")
    (cas / "notes.txt").write_text("not a certificate")
    pip_conf = tmp_path / "pip.conf"
    monkeypatch.setattr(images, "HOST_TRUST", (cas, pip_conf, tmp_path / "absent"))
    before = images.host_trust_key()
    assert set(images.host_trust_files()) == {str(cas / "proxy.crt").lstrip("/")}
    pip_conf.write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    assert str(pip_conf).lstrip("/") in images.host_trust_files()
    assert images.host_trust_key() != before  # another host set-up, another cached image
    assert ["update-ca-certificates"] in images.chroot_commands()
