"""The variant as a topology, end to end: a notebook's lab is chosen once, as a
:class:`~labtools.model.choice.TopologyChoice` (its topology, the student's variant, the rate
scale), and that object travels to the lab, to grading's replay and to the question values;
text is read into a choice only where it comes as text. One rule and one constant for a
variant, one loader of topology files."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from labtools.errors import TopologyError
from labtools.judge.question_givens import LAB_TOPOLOGIES, kit_topology
from labtools.model.catalog import kit_module, load_topology, to_dict
from labtools.model.choice import TopologyChoice, choose
from labtools.teach import notebook

PACKAGE = Path(__file__).resolve().parents[2] / "labtools"
#: the modules that read a choice out of a spec's text (the catalog and the choice itself)
SPEC_READERS = {"model/catalog.py", "model/choice.py"}
#: where text becomes a choice: the Python API's argument, read by ``choose``
FROM_SPEC = {"model/choice.py"}
#: what loads a Python file as a module: topology files, and a file of a student's own
#: simpleperf program (not a topology, in a Python without the kit)
FILE_LOADERS = {"model/python_topology.py", "teach/simpleperf_calls.py"}


def _calls(name: str) -> Iterator[Tuple[str, int]]:
    """(module path under labtools/, line) of every call of a function or method ``name``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else \
                    func.id if isinstance(func, ast.Name) else ""
                if called == name:
                    yield str(path.relative_to(PACKAGE)), node.lineno


def test_a_spec_is_read_only_where_it_comes_as_text():
    """No module builds a spec's text to read it again elsewhere: ``split_spec`` is called
    by the catalog and the choice only, and no f-string writes ``,variant=`` or
    ``,rate_scale=`` into a spec."""
    assert {m for m, _ in _calls("split_spec")} <= SPEC_READERS
    assert {m for m, _ in _calls("from_spec")} <= FROM_SPEC
    written: List[Tuple[str, int]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value for v in node.values
                               if isinstance(v, ast.Constant) and isinstance(v.value, str))
                if ",variant=" in text or ",rate_scale=" in text:
                    written.append((str(path.relative_to(PACKAGE)), node.lineno))
    assert written == []


def test_one_loader_of_topology_files():
    assert {m for m, _ in _calls("spec_from_file_location")} <= FILE_LOADERS
    assert kit_module("portfolio") is kit_module("portfolio")  # imported once
    with pytest.raises(TopologyError, match="not one of the kit's topologies"):
        kit_module("no_such_topology")


def test_one_rule_and_one_constant_for_a_variant():
    defined = [(str(path.relative_to(PACKAGE)), node.name if isinstance(node, ast.FunctionDef)
                else ast.unparse(node.targets[0]))
               for path in sorted(PACKAGE.rglob("*.py"))
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if (isinstance(node, ast.FunctionDef)
                   and node.name in ("check_variant", "variant_of"))
               or (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "VARIANT")]
    assert sorted(defined) == [("model/json_topology.py", "VARIANT"),
                               ("model/json_topology.py", "check_variant"),
                               ("model/json_topology.py", "variant_of")]


def test_a_choice_reads_and_writes_its_spec():
    spec = "dumbbell,pairs=3,bw_mbps=2.5,variant=007,rate_scale=0.5"
    choice = TopologyChoice.from_spec(spec)
    assert choice == TopologyChoice("dumbbell", (("pairs", 3), ("bw_mbps", 2.5)), "007", 0.5)
    assert choice.spec == spec and TopologyChoice.from_spec(choice.spec) == choice
    assert hash(choice) == hash(TopologyChoice.from_spec(spec))
    assert choose(choice) is choice and choose(spec) == choice
    assert to_dict(choice.build()) == to_dict(load_topology(spec))
    with pytest.raises(TopologyError, match="'rate_scale' is a field of the choice"):
        TopologyChoice("portfolio", (("rate_scale", 0.5),))
    with pytest.raises(TopologyError, match="letters, digits"):
        TopologyChoice.from_spec("portfolio,variant=o'neil")
    with pytest.raises(TopologyError, match="outside"):
        TopologyChoice("portfolio", rate_scale=2)


def test_the_kit_build_is_the_catalogs():
    """The answer keys' and question values' build in this process is the catalog's
    (validated in a child process), for a variant and a rate scale too."""
    for choice in (LAB_TOPOLOGIES["00"].with_variant("s0005"),
                   LAB_TOPOLOGIES["06"].with_variant("s0005").with_rate_scale(0.5)):
        assert to_dict(choice.build_kit()) == to_dict(choice.build())
    assert kit_topology("portfolio", "s0005") is kit_topology(LAB_TOPOLOGIES["00"], "s0005")


class _Spy:
    """Stands in for a lab class: keeps what open_lab hands it."""

    given: List[object] = []

    def __init__(self, topology: object, *args: object, **kwargs: object) -> None:
        _Spy.given.append(topology)

    def stop(self) -> None:
        """Nothing runs."""


@pytest.mark.parametrize("grading", ["", "autograde"])
def test_open_lab_hands_the_lab_its_choice(tmp_path, monkeypatch, grading):
    """The variant and the rate scale of the settings travel as fields of one object, to a
    live lab and to grading's replay alike."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABTOOLS_VARIANT", "s43")
    monkeypatch.setenv("LABTOOLS_RATE_SCALE", "0.5")
    monkeypatch.delenv("LABTOOLS_MODE", raising=False)
    if grading:
        monkeypatch.setenv("NBGRADER_EXECUTION", grading)
    else:
        monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    for name in ("LabSession", "StudentLabSession", "ReplaySession"):
        monkeypatch.setattr(notebook, name, _Spy)
    monkeypatch.setattr(notebook, "draw_no_figures", lambda: None)
    _Spy.given = []
    notebook.open_lab("mux", topology="dumbbell,pairs=2")
    assert _Spy.given == [TopologyChoice("dumbbell", (("pairs", 2),), "s43", 0.5)]


def test_a_lab_keeps_its_choice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABTOOLS_VARIANT", "s43")
    monkeypatch.delenv("LABTOOLS_RATE_SCALE", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    lab = notebook.open_lab("path")
    assert lab.choice == TopologyChoice("portfolio", variant="s43")
    assert lab.choice.variant == lab.topo.params["variant"] == "s43"
    assert to_dict(lab.topo) == to_dict(lab.choice.build())
