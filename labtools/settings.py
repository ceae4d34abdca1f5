"""The kit's settings: every environment variable labtools reads, in one place.

:func:`current` reads the environment into one frozen :class:`Settings`; the rest of the kit
takes its settings from there and never reads ``os.environ`` itself. :data:`VARIABLES`
documents each variable (name, default, effect, who sets it) and ``labtools doctor`` prints
the values in force.

Reading is cheap (a few dictionary look-ups) and nothing is cached: every call of
:func:`current` reads the environment again, so a test that sets a variable with
``monkeypatch.setenv`` is seen by the next call. A value the kit cannot use (``LABTOOLS_MODE=
teacher``, ``LABTOOLS_VM_CPUS=two``) is an :class:`~labtools.errors.InputError` naming the
variable, the moment the settings are read.

Where a measurement runs is one word, :class:`Emulation`, the same in the machine's
calibration, in a saved run and in the results store: ``native``, ``vm-tcg`` (the lab VM
under software emulation) or ``vm-kvm`` (the lab VM with KVM). A run saved before the kit
told the two apart (results schema 1 and 2) says ``vm``: in the lab VM, how it was
accelerated not recorded (its calibration, saved beside it, says which). ``vm`` is read,
never written.

No imports beyond the standard library and the kit's errors: the command line reads this
before anything else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from labtools.errors import InputError

#: set to 1 by the VM runner inside its guest
IN_VM = "LABTOOLS_IN_VM"
#: set by the VM runner inside its guest: ``kvm`` or ``tcg`` (software emulation)
VM_MODE = "LABTOOLS_VM_MODE"
#: set by JupyterHub in a user's server: the user's name (nbgrader's student id there)
HUB_USER = "JUPYTERHUB_USER"
#: set by nbgrader while it executes a notebook: ``autograde`` or ``validate``
GRADING = "NBGRADER_EXECUTION"
#: every variable of the kit starts with this (the VM runner passes them into its guest)
PREFIX = "LABTOOLS_"
#: the modes ``LABTOOLS_MODE`` takes; unset is the instructor's
MODES = ("student", "instructor")
#: set to 1 by the student image (with ``LABTOOLS_MODE=student``): a course's lab
COURSE = "LABTOOLS_ON_COURSE"
#: the file ``labtools bundle --students`` writes into the package it bundles; its first
#: line names the edition (``student``); the full kit has none
EDITION_FILE = Path(__file__).resolve().parent / "EDITION"
#: the edition word of the student edition
STUDENT_EDITION = "student"
#: what the kit says, once, when ``LABTOOLS_SHOW_ANSWERS=1`` is set on a course
SHOW_ANSWERS_IGNORED = ("LABTOOLS_SHOW_ANSWERS=1 does nothing on a course (a hub student's "
                        "server, the student image or the student edition): expected values "
                        "stay hidden")


class Emulation(str, Enum):
    """Where the kit runs (see the module docstring); the value is the word saved."""

    NATIVE = "native"
    VM_TCG = "vm-tcg"
    VM_KVM = "vm-kvm"
    #: read only: a run saved before schema 3, in the lab VM, acceleration not recorded
    VM = "vm"

    @classmethod
    def parse(cls, word: str) -> "Emulation":
        """The emulation a saved word names; :class:`InputError` for another word."""
        for member in cls:
            if member.value == word:
                return member
        raise InputError(f"emulation must be one of {', '.join(m.value for m in cls)}, "
                         f"not {word!r}")

    @property
    def in_vm(self) -> bool:
        """True for the lab VM, however accelerated."""
        return self is not Emulation.NATIVE


@dataclass(frozen=True)
class Variable:
    """One environment variable the kit reads.

    Attributes:
        name: the variable.
        default: what holds when it is unset (as text).
        effect: what it changes.
        set_by: who sets it (a user, the VM runner, JupyterHub, nbgrader...).
    """

    name: str
    default: str
    effect: str
    set_by: str = "you"


#: every variable the kit reads, by area: the notebooks and a course server first
VARIABLES: Tuple[Variable, ...] = (
    Variable("LABTOOLS_MODE", "instructor",
             "student (always, in the student edition): no expected values handed out "
             "(lab.expected(), exercises.solve() and labtools expect refuse; a "
             "measurement's verdicts show them once measured); "
             "instructor: the whole kit", "the student's lab launchers (make lab, the lab "
             "VM, the container) and the course hub"),
    Variable(COURSE, "0",
             "1 with LABTOOLS_MODE=student: on a course (as on a hub student's server, "
             "JUPYTERHUB_USER set, and in the student edition, whose package holds an "
             "EDITION file): LABTOOLS_SHOW_ANSWERS does nothing", "the student image"),
    Variable("LABTOOLS_SHOW_ANSWERS", "0",
             "1: self-study with the full kit: expected values shown in student mode too, "
             "and a wrong compute-it-first answer beside the expected value; nothing on a "
             "course (see LABTOOLS_ON_COURSE)"),
    Variable("LABTOOLS_QUICK", "0", "1: the probes' short durations (CI)"),
    Variable("LABTOOLS_FORKED_KERNELS", "1",
             "0: nbgrader's autograde in a course the kit made starts each kernel anew, "
             "instead of forking it from one that has imported the labs' modules"),
    Variable("LABTOOLS_NBGRADER_SHORTCUTS", "1",
             "0: labtools autograde's workers keep to nbgrader's public API (an autograde "
             "application made for each submission, nbgrader's own check of the cells' "
             "metadata) instead of reusing one and checking each schema once"),
    Variable("LABTOOLS_VARIANT", "labtools-variant.txt beside the notebook, else the hub user",
             "the student's variant of a notebook's topology (portfolio,variant=ID)"),
    Variable("LABTOOLS_RATE_SCALE", "1",
             "every link rate of a notebook's lab times this factor (0.1..1), or auto: "
             "what the last calibration suggests for a machine too slow for the lab"),
    Variable(HUB_USER, "not on JupyterHub",
             "the student measuring: recorded with every run, and the default variant",
             "JupyterHub"),
    Variable("LABTOOLS_RECORD_URL", "not on a course hub",
             "the course's record (a service of the hub, http://HOST:PORT): every checked "
             "answer and every measurement is also posted there, with JUPYTERHUB_API_TOKEN",
             "the course hub"),
    Variable("JUPYTERHUB_API_TOKEN", "not on JupyterHub",
             "the server's token: the course's record learns from the hub whose it is "
             "(never printed)", "JupyterHub"),
    Variable("LABTOOLS_COURSE_RECORD", "none (the results file's own record)",
             "a file of the student's rows of the course's record (JSON): grading takes "
             "the compute-it-first answers and their times from it",
             "labtools autograde"),
    Variable(GRADING, "not grading",
             "autograde or validate: the notebook's lab replays the recorded measurements "
             "instead of starting a network", "nbgrader"),
    Variable("LABTOOLS_TOPOLOGIES", "the kit's topologies/", "the folder of named topologies"),
    Variable("LABTOOLS_CACHE_DIR", "$XDG_CACHE_HOME/labtools (~/.cache/labtools)",
             "where the KVM probe's result and (outside a checkout) the last calibration are "
             "kept"),
    Variable("XDG_CACHE_HOME", "~/.cache", "the user's cache folder (LABTOOLS_CACHE_DIR wins)"),
    Variable(IN_VM, "0", "1: this is the lab VM's guest", "the VM runner"),
    Variable(VM_MODE, "tcg", "how the guest is accelerated: kvm or tcg (software emulation)",
             "the VM runner"),
    Variable("LABTOOLS_VM_KERNEL", "the newest /boot/vmlinuz-* with its modules",
             "the kernel image the VM runner boots"),
    Variable("LABTOOLS_VM_KVM", "KVM when the cached probe says it works",
             "1: boot the VM with KVM; 0: software emulation"),
    Variable("LABTOOLS_VM_MEMORY", "2G", "the VM's memory (QEMU's notation: 2G, 1536M)"),
    Variable("LABTOOLS_VM_CPUS", "2 (the machine's cores, at most 2; 1 with idle polling)",
             "the VM's CPUs"),
    Variable("LABTOOLS_VM_IDLE_POLL", "0",
             "1 (software emulation only): one guest CPU that never halts (timers on time, "
             "one host core busy)"),
)


@dataclass(frozen=True)
class Settings:
    """The settings in force (see :data:`VARIABLES` for each variable's effect).

    Attributes:
        mode: ``student`` or ``instructor`` (``LABTOOLS_MODE``).
        show_answers: self-study (``LABTOOLS_SHOW_ANSWERS=1``).
        quick: the short durations (``LABTOOLS_QUICK=1``).
        forked_kernels: autograde's kernels forked (``LABTOOLS_FORKED_KERNELS``, default 1).
        nbgrader_shortcuts: the grading workers' two reaches past nbgrader's public API
            (``LABTOOLS_NBGRADER_SHORTCUTS``, default 1).
        variant: the variant asked for ('' when unset; ``LABTOOLS_VARIANT``).
        rate_scale: the rate scale asked for (None when unset or ``auto``).
        rate_scale_auto: ``LABTOOLS_RATE_SCALE=auto``.
        hub_user: the JupyterHub user ('' outside JupyterHub).
        grading: what nbgrader executes the notebook for ('', ``autograde``, ``validate``).
        topologies: the folder of named topologies asked for (None: the kit's own).
        cache_dir: the cache folder (``LABTOOLS_CACHE_DIR``, else the user's cache).
        cache_dir_chosen: ``LABTOOLS_CACHE_DIR`` is set.
        in_vm: this is the lab VM's guest.
        vm_kvm_guest: the guest runs with KVM (``LABTOOLS_VM_MODE=kvm``).
        vm_kernel: the VM's kernel image asked for (None: the newest stock one).
        vm_kvm: boot with KVM (True), without (False), or as the probe says (None).
        vm_memory: the VM's memory, QEMU's notation.
        vm_memory_chosen: whether ``LABTOOLS_VM_MEMORY`` set it (else the default).
        vm_cpus: the VM's CPUs asked for (None: the default).
        vm_idle_poll: one guest CPU that never halts.
        course_flag: ``LABTOOLS_ON_COURSE=1`` (the student image).
        edition: the package's edition (``student``, from :data:`EDITION_FILE`; '' for the
            full kit).
        record_url: the course's record (``LABTOOLS_RECORD_URL``; '' off a hub).
        hub_token: the server's hub token (``JUPYTERHUB_API_TOKEN``; never shown).
        course_record: the student's rows of the course's record, at grading
            (``LABTOOLS_COURSE_RECORD``; None when unset).
    """

    mode: str = "instructor"
    show_answers: bool = False
    quick: bool = False
    forked_kernels: bool = True
    nbgrader_shortcuts: bool = True
    variant: str = ""
    rate_scale: Optional[float] = None
    rate_scale_auto: bool = False
    hub_user: str = ""
    grading: str = ""
    topologies: Optional[Path] = None
    cache_dir: Path = Path("~/.cache/labtools")
    cache_dir_chosen: bool = False
    in_vm: bool = False
    vm_kvm_guest: bool = False
    vm_kernel: Optional[Path] = None
    vm_kvm: Optional[bool] = None
    vm_memory: str = "2G"
    vm_memory_chosen: bool = False
    vm_cpus: Optional[int] = None
    vm_idle_poll: bool = False
    course_flag: bool = False
    edition: str = ""
    record_url: str = ""
    hub_token: str = field(default="", repr=False)
    course_record: Optional[Path] = None

    @property
    def emulation(self) -> Emulation:
        """Where the kit runs now: ``native``, ``vm-tcg`` or ``vm-kvm``."""
        if not self.in_vm:
            return Emulation.NATIVE
        return Emulation.VM_KVM if self.vm_kvm_guest else Emulation.VM_TCG

    @property
    def student_mode(self) -> bool:
        """A student's lab (``LABTOOLS_MODE=student``)."""
        return self.mode == "student"

    @property
    def student_edition(self) -> bool:
        """The package is the student edition (``labtools bundle --students``)."""
        return self.edition == STUDENT_EDITION

    @property
    def on_course(self) -> bool:
        """A course's lab: the student edition, or student mode on a hub student's server
        (``JUPYTERHUB_USER``) or in the student image (``LABTOOLS_ON_COURSE=1``)."""
        return self.student_edition or (self.student_mode
                                        and (self.course_flag or bool(self.hub_user)))

    @property
    def student(self) -> Optional[str]:
        """The student measuring, when the lab knows it: the JupyterHub user (None
        outside JupyterHub); saved with every measurement and grading binds it."""
        return self.hub_user or None

    @property
    def show_answers_ignored(self) -> bool:
        """``LABTOOLS_SHOW_ANSWERS=1`` asked for, on a course: it does nothing."""
        return self.show_answers and self.on_course

    @property
    def answers_hidden(self) -> bool:
        """Expected values must not be handed out: on a course, and in student mode unless
        self-study (``LABTOOLS_SHOW_ANSWERS=1``, the full kit only)."""
        return self.on_course or (self.student_mode and not self.show_answers)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], edition: str = "") -> "Settings":
        """The settings ``environ`` gives, in a package of ``edition`` ('' for the full
        kit; in the student edition the mode is always ``student``).

        Raises:
            InputError: a value the kit cannot use, naming the variable.
        """
        text = _Reader(environ)
        scale = text.get("LABTOOLS_RATE_SCALE")
        auto = scale.lower() == "auto"
        cache = text.get("LABTOOLS_CACHE_DIR")
        home = Path(text.get("HOME")) if text.get("HOME") else Path.home()
        base = text.get("XDG_CACHE_HOME") or str(home / ".cache")
        mode = text.choice("LABTOOLS_MODE", MODES, "instructor")
        return cls(
            mode=STUDENT_EDITION if edition == STUDENT_EDITION else mode,
            course_flag=text.flag("LABTOOLS_ON_COURSE"), edition=edition,
            show_answers=text.flag("LABTOOLS_SHOW_ANSWERS"), quick=text.flag("LABTOOLS_QUICK"),
            forked_kernels=text.optional_flag("LABTOOLS_FORKED_KERNELS") is not False,
            nbgrader_shortcuts=text.optional_flag("LABTOOLS_NBGRADER_SHORTCUTS") is not False,
            variant=text.get("LABTOOLS_VARIANT"),
            rate_scale=None if auto or not scale else text.number("LABTOOLS_RATE_SCALE"),
            rate_scale_auto=auto, hub_user=text.get(HUB_USER), grading=text.get(GRADING),
            topologies=text.path("LABTOOLS_TOPOLOGIES"),
            cache_dir=Path(cache) if cache else Path(base) / "labtools",
            cache_dir_chosen=bool(cache), in_vm=text.flag(IN_VM),
            vm_kvm_guest=text.choice(VM_MODE, ("kvm", "tcg"), "tcg") == "kvm",
            vm_kernel=text.path("LABTOOLS_VM_KERNEL"), vm_kvm=text.optional_flag("LABTOOLS_VM_KVM"),
            vm_memory=text.get("LABTOOLS_VM_MEMORY") or "2G",
            vm_memory_chosen=bool(text.get("LABTOOLS_VM_MEMORY")),
            vm_cpus=text.whole("LABTOOLS_VM_CPUS"), vm_idle_poll=text.flag("LABTOOLS_VM_IDLE_POLL"),
            record_url=text.get("LABTOOLS_RECORD_URL"),
            hub_token=text.get("JUPYTERHUB_API_TOKEN"),
            course_record=text.path("LABTOOLS_COURSE_RECORD"))


class _Reader:
    """Typed reads of one environment, each error naming its variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def get(self, name: str) -> str:
        return self.environ.get(name, "").strip()

    def flag(self, name: str) -> bool:
        return bool(self.optional_flag(name))

    def optional_flag(self, name: str) -> Optional[bool]:
        value = self.get(name)
        if value not in ("", "0", "1"):
            raise InputError(f"{name} must be 1 or 0, got {value!r}")
        return None if not value else value == "1"

    def choice(self, name: str, allowed: Tuple[str, ...], default: str) -> str:
        value = self.get(name).lower() or default
        if value not in allowed:
            raise InputError(f"{name} must be {' or '.join(allowed)}, got {value!r}")
        return value

    def number(self, name: str) -> float:
        try:
            return float(self.get(name))
        except ValueError:
            raise InputError(f"{name} must be a number, got {self.get(name)!r}") from None

    def whole(self, name: str) -> Optional[int]:
        value = self.get(name)
        if not value:
            return None
        if not value.isdigit() or int(value) < 1:
            raise InputError(f"{name} must be a whole number of at least 1, got {value!r}")
        return int(value)

    def path(self, name: str) -> Optional[Path]:
        value = self.get(name)
        return Path(value) if value else None


def edition() -> str:
    """The package's edition: the first line of :data:`EDITION_FILE` (``student``), or ''
    for the full kit (no such file)."""
    try:
        lines = EDITION_FILE.read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return ""
    except OSError as err:
        raise InputError(f"cannot read {EDITION_FILE}: {err.strerror}") from None
    return lines[0] if lines else ""


def current() -> Settings:
    """The settings in force now, read from the environment and the package's edition
    (nothing cached).

    Raises:
        InputError: a variable holds a value the kit cannot use.
    """
    return Settings.from_environ(os.environ, edition())


def passed_on(also: Sequence[str] = (), environ: Optional[Mapping[str, str]] = None
              ) -> Dict[str, str]:
    """What a command started in another machine (the lab VM's guest) should see of this
    environment: every ``LABTOOLS_*`` variable except those the guest sets itself, and the
    variables named in ``also`` (``LANG``...) that are set."""
    found = os.environ if environ is None else environ
    return {k: v for k, v in found.items()
            if (k.startswith(PREFIX) and k not in (IN_VM, VM_MODE)) or k in also}


def in_force(environ: Optional[Mapping[str, str]] = None
             ) -> List[Tuple[Variable, Optional[str]]]:
    """Each variable with the value the environment gives it (None when unset: its
    default holds); ``labtools doctor`` prints them. A token is shown as ``(set)``."""
    found = os.environ if environ is None else environ
    return [(v, None if not found.get(v.name, "").strip() else
             "(set)" if v.name == "JUPYTERHUB_API_TOKEN" else found[v.name]) for v in VARIABLES]
