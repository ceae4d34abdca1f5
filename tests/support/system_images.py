"""Fresh Debian and Ubuntu systems for checking the kit's provisioning under a real systemd.

The lab VM students get from ``vagrant up`` is a stock Debian 12 system whose systemd starts
the JupyterLab service that ``scripts/setup.sh --service`` installs. To check that path
where Vagrant cannot run, this module makes such a system from the distribution's own
packages: ``debootstrap`` a minimal root file system with systemd, the distribution's
kernel and a ``vagrant`` user (as Vagrant boxes have), then pack it into an ext4 disk image
that :mod:`tests.system_boot` boots under QEMU with systemd as the first process.

The pristine image is cached per recipe (``/var/cache/labtools/images`` or
``$LABTOOLS_IMAGE_CACHE``): it is never booted, each check boots a copy, so the cache
cannot carry one run's changes into the next.

The system gets this host's network as it is: where the host trusts certificate
authorities of its own (a TLS-inspecting proxy's, in ``/usr/local/share/ca-certificates``)
and tells pip to use the system's store (``/etc/pip.conf``), the system does the same, or
downloads over HTTPS would fail there for a reason that has nothing to do with the kit.

Stages: :func:`debootstrap_command` and the ``*_files`` functions are pure;
:func:`build_image` runs them (minutes, needs root and the network).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from labtools.errors import EnvironmentProblem, InputError

#: bump when the way images are made changes (old cache entries are then not reused)
IMAGE_FORMAT = 4
#: tag and mount point of the 9p share that stands in for Vagrant's synced folder
REPO_TAG, REPO_MOUNT = "lab", "/home/vagrant/lab"
#: tag and mount point of the share the host and the booted system talk through
CONTROL_TAG, CONTROL_MOUNT = "labctl", "/mnt/labtools-control"
#: the script in the control share that the booted system runs once it is up
STAGE_SCRIPT = "stage.sh"
#: size of the image's file system (sparse: only what is written takes space)
IMAGE_SIZE = "12G"
#: QEMU user networking's resolver (the guest's DNS)
SLIRP_DNS = "10.0.2.3"


@dataclass(frozen=True)
class Recipe:
    """What goes into one system image.

    Attributes:
        name: short name used in messages and the cache (``debian-12``).
        suite: the distribution's code name (``bookworm``, ``jammy``, ``noble``).
        mirror: the package archive debootstrap downloads from.
        kernel_package: the distribution's kernel meta-package.
        packages: packages installed on top of debootstrap's minimal base.
        script: debootstrap's script for the suite when it has none of its own.
        check_gpg: verify the archive's signatures (needs the distribution's keyring here).
        components: archive components.
    """

    name: str
    suite: str
    mirror: str
    kernel_package: str
    packages: Tuple[str, ...] = ()
    script: Optional[str] = None
    check_gpg: bool = True
    components: Tuple[str, ...] = ("main",)

    def key(self) -> str:
        """Short hash of the recipe and :data:`IMAGE_FORMAT` (the cache key)."""
        text = json.dumps([IMAGE_FORMAT, asdict(self)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


#: what any of these systems needs to boot under systemd, reach the network and sudo
BASE_PACKAGES = ("systemd", "systemd-sysv", "dbus", "udev", "kmod", "iproute2", "sudo",
                 "ca-certificates", "initramfs-tools", "procps", "less")

#: the systems the provisioning was checked on (explicit registry)
RECIPES: Dict[str, Recipe] = {
    "debian-12": Recipe("debian-12", "bookworm", "http://deb.debian.org/debian",
                        "linux-image-amd64", BASE_PACKAGES),
    "ubuntu-22.04": Recipe("ubuntu-22.04", "jammy", "http://archive.ubuntu.com/ubuntu",
                           "linux-image-generic", BASE_PACKAGES, script="gutsy",
                           check_gpg=False, components=("main", "universe")),
    "ubuntu-24.04": Recipe("ubuntu-24.04", "noble", "http://archive.ubuntu.com/ubuntu",
                           "linux-image-generic", BASE_PACKAGES, script="gutsy",
                           check_gpg=False, components=("main", "universe")),
}


@dataclass(frozen=True)
class SystemImage:
    """A built, cached system: its disk image and the kernel and initrd that boot it."""

    recipe: Recipe
    image: Path
    kernel: Path
    initrd: Path
    built_s: float = 0.0
    meta: Dict[str, str] = field(default_factory=dict)


def recipe(name: str) -> Recipe:
    """The recipe called ``name``; :class:`InputError` listing the known ones otherwise."""
    if name not in RECIPES:
        raise InputError(f"unknown system {name!r}; known: {', '.join(RECIPES)}")
    return RECIPES[name]


def cache_root() -> Path:
    """Where pristine images are kept between runs on this machine."""
    return Path(os.environ.get("LABTOOLS_IMAGE_CACHE", "/var/cache/labtools/images"))


def debootstrap_command(r: Recipe, target: Path) -> List[str]:
    """The ``debootstrap`` argument list that makes the root file system in ``target``."""
    argv = ["debootstrap", "--variant=minbase", f"--components={','.join(r.components)}",
            f"--include={','.join((*r.packages, r.kernel_package))}"]
    if not r.check_gpg:
        argv.append("--no-check-gpg")
    argv += [r.suite, str(target), r.mirror]
    if r.script:
        argv.append(f"/usr/share/debootstrap/scripts/{r.script}")
    return argv


def system_files(r: Recipe) -> Dict[str, str]:
    """Files written into the root file system (path inside it -> content)."""
    fstab = (
        "/dev/vda / ext4 defaults,errors=remount-ro 0 1\n"
        f"{REPO_TAG} {REPO_MOUNT} 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0\n"
        f"{CONTROL_TAG} {CONTROL_MOUNT} 9p trans=virtio,version=9p2000.L,nofail 0 0\n"
    )
    network = "[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n"
    hook = (
        "[Unit]\n"
        "Description=Run the host's check script from the control share\n"
        "After=multi-user.target network-online.target\n"
        "Wants=network-online.target\n"
        f"RequiresMountsFor={CONTROL_MOUNT} {REPO_MOUNT}\n"
        f"ConditionPathExists={CONTROL_MOUNT}/{STAGE_SCRIPT}\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart=/bin/bash {CONTROL_MOUNT}/{STAGE_SCRIPT}\n"
        f"StandardOutput=append:{CONTROL_MOUNT}/stage.log\n"
        "StandardError=inherit\n"
        "TimeoutStartSec=infinity\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
    sources = " ".join(r.components)
    return {
        "etc/hostname": "netlab\n",
        "etc/hosts": "127.0.0.1 localhost\n127.0.1.1 netlab\n",
        "etc/fstab": fstab,
        "etc/resolv.conf": f"nameserver {SLIRP_DNS}\n",
        "etc/apt/sources.list": f"deb {r.mirror} {r.suite} {sources}\n",
        "etc/systemd/network/80-dhcp.network": network,
        "etc/systemd/system/labtools-stage.service": hook,
        "etc/sudoers.d/vagrant": "vagrant ALL=(ALL) NOPASSWD: ALL\n",
        # loaded before local file systems are mounted, so the 9p shares in fstab find them
        "etc/modules-load.d/9p.conf": "9p\n9pnet_virtio\n",
    }


#: what the system copies of this host's network set-up (see the module docstring)
HOST_TRUST = (Path("/usr/local/share/ca-certificates"), Path("/etc/pip.conf"))


def host_trust_files() -> Dict[str, bytes]:
    """This host's extra CA certificates and pip setting (path in the system -> content)."""
    found: Dict[str, bytes] = {}
    for path in HOST_TRUST:
        files = sorted(path.glob("*.crt")) if path.is_dir() else [path] if path.is_file() else []
        for f in files:
            found[str(f).lstrip("/")] = f.read_bytes()
    return found


def host_trust_key() -> str:
    """A short hash of :func:`host_trust_files` (part of the cache key)."""
    digest = hashlib.sha256()
    for rel, content in sorted(host_trust_files().items()):
        digest.update(rel.encode() + b"\0" + content)
    return digest.hexdigest()[:8]


def chroot_commands() -> List[List[str]]:
    """Commands run inside the new root file system to finish it (user, services)."""
    return [
        ["update-ca-certificates"],
        ["useradd", "--create-home", "--shell", "/bin/bash", "vagrant"],
        ["systemctl", "enable", "systemd-networkd", "labtools-stage.service"],
        ["systemctl", "mask", "getty@tty1.service"],
        ["mkdir", "-p", REPO_MOUNT, CONTROL_MOUNT],
        ["chown", "vagrant:vagrant", REPO_MOUNT],
    ]


def _run(argv: List[str], what: str, log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise EnvironmentProblem(f"{what} failed (exit status {done.returncode}); see {log}")


def _finish_root(r: Recipe, root: Path, log: Path) -> Tuple[Path, Path]:
    for rel, text in system_files(r).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_text(text)
    os.chmod(root / "etc/sudoers.d/vagrant", 0o440)
    for rel, content in host_trust_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    for argv in chroot_commands():
        _run(["chroot", str(root), *argv], f"{argv[0]} in the new system", log)
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise EnvironmentProblem(f"{r.name}: no kernel or initrd in /boot after debootstrap")
    return kernels[-1], initrds[-1]


def cache_folder(r: Recipe) -> Path:
    """Where the image of ``r`` made on this host is kept."""
    return cache_root() / f"{r.name}-{r.key()}-{host_trust_key()}"


def cached(r: Recipe) -> Optional[SystemImage]:
    """The cached image of ``r`` if a complete one exists."""
    folder = cache_folder(r)
    meta_file = folder / "image.json"
    if not meta_file.is_file():
        return None
    meta = json.loads(meta_file.read_text())
    return SystemImage(r, folder / "root.img", folder / "vmlinuz", folder / "initrd.img",
                       float(meta.get("built_s", 0)), meta)


def build_image(r: Recipe, say: Callable[[str], None] = print) -> SystemImage:
    """The cached image of ``r``, built first when there is none (minutes; root, network).

    Raises :class:`EnvironmentProblem` when debootstrap or mkfs is missing or fails.
    """
    found = cached(r)
    if found is not None:
        say(f"{r.name}: cached image {found.image} (built {found.meta.get('built_at', '?')})")
        return found
    for tool in ("debootstrap", "mkfs.ext4", "chroot"):
        if shutil.which(tool) is None:
            raise EnvironmentProblem(f"{tool} is missing (scripts/setup.sh --test installs it)")
    folder = cache_folder(r)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "build.log"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"labtools-{r.name}-", dir=folder) as tmp:
        root = Path(tmp) / "root"
        say(f"{r.name}: debootstrap {r.suite} from {r.mirror} (a few minutes; log {log})")
        _run(debootstrap_command(r, root), "debootstrap", log)
        kernel, initrd = _finish_root(r, root, log)
        shutil.copy(kernel, folder / "vmlinuz")
        shutil.copy(initrd, folder / "initrd.img")
        say(f"{r.name}: packing the root file system into an ext4 image")
        _run(["mkfs.ext4", "-q", "-F", "-L", "labroot", "-d", str(root),
              str(folder / "root.img"), IMAGE_SIZE], "mkfs.ext4", log)
    took = time.monotonic() - start
    meta = {"recipe": json.dumps(asdict(r)), "built_s": f"{took:.1f}",
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "kernel": kernel.name}
    (folder / "image.json").write_text(json.dumps(meta, indent=2) + "\n")
    say(f"{r.name}: image built in {took:.0f} s")
    return SystemImage(r, folder / "root.img", folder / "vmlinuz", folder / "initrd.img",
                       took, meta)


def working_copy(img: SystemImage, target: Path) -> Path:
    """A throwaway copy of the pristine image (sparse), for one check to boot and change."""
    subprocess.run(["cp", "--sparse=always", str(img.image), str(target)], check=True)
    return target
