"""The kit's settings in one place (labtools/settings.py): every environment variable the
package reads is read there, documented there, typed there, and shown by labtools doctor."""

from __future__ import annotations

import argparse
import ast
import json
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from conftest import run_cli

from labtools import settings
from labtools.errors import InputError
from labtools.settings import Emulation, Settings

PACKAGE = Path(__file__).resolve().parents[2] / "labtools"


def _environment_reads(path: Path) -> list:
    """``os.environ.get``/``os.environ[...]``/``os.getenv`` in a module's source (building a
    child's environment from ``dict(os.environ)`` passes it on, it reads no setting)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr == "getenv" or (
                    node.func.attr in ("get", "items", "keys")
                    and isinstance(owner, ast.Attribute) and owner.attr == "environ"):
                found.append(node.lineno)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "environ":
            found.append(node.lineno)
    return found


def test_only_the_settings_module_reads_the_environment():
    readers = {str(p.relative_to(PACKAGE.parent)): _environment_reads(p)
               for p in sorted(PACKAGE.rglob("*.py"))}
    readers = {p: lines for p, lines in readers.items() if lines}
    # vm_cmd's --env NAME passes on a variable the user names: no setting of the kit's
    assert set(readers) == {"labtools/settings.py", "labtools/commands/vm_cmd.py"}, readers


def test_every_variable_is_documented_once_and_every_documented_one_is_read():
    names = [v.name for v in settings.VARIABLES]
    assert len(names) == len(set(names))
    source = (PACKAGE / "settings.py").read_text()
    for variable in settings.VARIABLES:
        assert variable.default and variable.effect and variable.set_by
        read = variable.name in (settings.HUB_USER, settings.GRADING, settings.IN_VM,
                                 settings.VM_MODE)
        assert read or f'"{variable.name}"' in source.split("class _Reader")[0].split(
            "def from_environ")[1], f"{variable.name} is documented but not read"


def test_nothing_set_gives_the_defaults(tmp_path):
    found = Settings.from_environ({"HOME": str(tmp_path)})
    assert found.mode == "instructor" and not found.student_mode and not found.answers_hidden
    assert (found.quick, found.show_answers, found.variant, found.hub_user, found.grading) == (
        False, False, "", "", "")
    assert found.rate_scale is None and not found.rate_scale_auto
    assert found.emulation is Emulation.NATIVE
    assert found.cache_dir == tmp_path / ".cache" / "labtools" and not found.cache_dir_chosen
    assert (found.vm_kvm, found.vm_cpus, found.vm_memory, found.vm_kernel) == (None, None, "2G", None)


def test_each_variable_has_its_effect():
    found = Settings.from_environ({
        "LABTOOLS_MODE": " Student ", "LABTOOLS_QUICK": "1", "LABTOOLS_VARIANT": "s43",
        "LABTOOLS_RATE_SCALE": "0.5", "JUPYTERHUB_USER": "student1",
        "NBGRADER_EXECUTION": "autograde", "LABTOOLS_TOPOLOGIES": "/srv/topos",
        "XDG_CACHE_HOME": "/x", "LABTOOLS_IN_VM": "1", "LABTOOLS_VM_MODE": "kvm",
        "LABTOOLS_VM_KVM": "0", "LABTOOLS_VM_CPUS": "3", "LABTOOLS_VM_MEMORY": "1536M",
        "LABTOOLS_VM_IDLE_POLL": "1", "LABTOOLS_VM_KERNEL": "/boot/vmlinuz-6.1"})
    assert found.student_mode and found.answers_hidden and found.quick
    assert (found.variant, found.hub_user, found.grading) == ("s43", "student1", "autograde")
    assert found.rate_scale == 0.5 and found.topologies == Path("/srv/topos")
    assert found.cache_dir == Path("/x/labtools")
    assert found.emulation is Emulation.VM_KVM and found.emulation.in_vm
    assert (found.vm_kvm, found.vm_cpus, found.vm_memory, found.vm_idle_poll) == (
        False, 3, "1536M", True)
    assert found.vm_kernel == Path("/boot/vmlinuz-6.1")
    self_study = Settings.from_environ({"LABTOOLS_MODE": "student", "LABTOOLS_SHOW_ANSWERS": "1",
                                        "LABTOOLS_RATE_SCALE": "AUTO",
                                        "LABTOOLS_CACHE_DIR": "/c", "LABTOOLS_IN_VM": "1"})
    assert self_study.student_mode and not self_study.answers_hidden
    assert self_study.rate_scale_auto and self_study.rate_scale is None
    assert self_study.cache_dir == Path("/c") and self_study.cache_dir_chosen
    assert self_study.emulation is Emulation.VM_TCG


@pytest.mark.parametrize("name, value, message", [
    ("LABTOOLS_MODE", "teacher", "LABTOOLS_MODE must be student or instructor, got 'teacher'"),
    ("LABTOOLS_QUICK", "yes", "LABTOOLS_QUICK must be 1 or 0, got 'yes'"),
    ("LABTOOLS_VM_KVM", "2", "LABTOOLS_VM_KVM must be 1 or 0"),
    ("LABTOOLS_VM_CPUS", "two", "LABTOOLS_VM_CPUS must be a whole number of at least 1"),
    ("LABTOOLS_VM_CPUS", "0", "LABTOOLS_VM_CPUS must be a whole number of at least 1"),
    ("LABTOOLS_RATE_SCALE", "half", "LABTOOLS_RATE_SCALE must be a number, got 'half'"),
    ("LABTOOLS_VM_MODE", "hvf", "LABTOOLS_VM_MODE must be kvm or tcg"),
])
def test_a_value_the_kit_cannot_use_names_its_variable(name, value, message):
    with pytest.raises(InputError, match=message):
        Settings.from_environ({name: value})


def test_reading_is_not_cached(monkeypatch):
    monkeypatch.delenv("LABTOOLS_QUICK", raising=False)
    assert not settings.current().quick
    monkeypatch.setenv("LABTOOLS_QUICK", "1")
    assert settings.current().quick
    with pytest.raises(FrozenInstanceError):  # a setting is changed in the environment only
        settings.current().quick = False  # type: ignore[misc]


def test_the_guest_gets_the_kits_variables_but_its_own():
    environ = {"LABTOOLS_QUICK": "1", "LABTOOLS_IN_VM": "1", "LABTOOLS_VM_MODE": "kvm",
               "LANG": "C.UTF-8", "HOME": "/root"}
    assert settings.passed_on(("LANG",), environ) == {"LABTOOLS_QUICK": "1", "LANG": "C.UTF-8"}


@pytest.mark.parametrize("word", ["native", "vm-tcg", "vm-kvm", "vm"])
def test_one_emulation_vocabulary(word):
    assert Emulation.parse(word).value == word
    assert Emulation.parse(word).in_vm == (word != "native")


def test_another_emulation_word_is_refused():
    with pytest.raises(InputError, match="emulation must be one of native, vm-tcg, vm-kvm, vm"):
        Emulation.parse("cloud")


def _doctor(monkeypatch, capsys, json_form: bool) -> str:
    from labtools.commands.doctor_cmd import run
    from labtools.system import capabilities

    monkeypatch.setattr(capabilities, "kvm_usable", lambda **kw: (False, "not probed in tests"))
    status = run(argparse.Namespace(json=json_form, recheck=False))
    return f"{status}\n{capsys.readouterr().out}"


def test_doctor_prints_the_settings_in_force(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    monkeypatch.delenv("LABTOOLS_VM_MEMORY", raising=False)
    lines = _doctor(monkeypatch, capsys, False).splitlines()
    assert "  LABTOOLS_MODE=student" in lines and "  LABTOOLS_VM_MEMORY (unset): 2G" in lines
    rows = json.loads(_doctor(monkeypatch, capsys, True).split("\n", 1)[1])["settings"]
    assert [r["name"] for r in rows] == [v.name for v in settings.VARIABLES]
    mode = next(r for r in rows if r["name"] == "LABTOOLS_MODE")
    assert mode["value"] == "student" and mode["default"] == "instructor" and mode["effect"]


def test_doctor_names_a_setting_it_cannot_use_and_still_lists_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LABTOOLS_VM_CPUS", "x")
    status, *lines = _doctor(monkeypatch, capsys, False).splitlines()
    assert status == "1"
    assert lines[0].startswith("FAIL settings: LABTOOLS_VM_CPUS must be a whole number")
    assert "  LABTOOLS_VM_CPUS=x" in lines
    done = run_cli(["expect", "portfolio", "h1", "h4"])  # inherits the environment
    assert done.returncode == 2 and "LABTOOLS_VM_CPUS must be a whole number" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
