"""The package's layers, checked on the source: a lower layer never imports a higher one.

Every ``import`` in every module counts, the ones inside functions too. Layers, lowest
first: the base modules (``errors``, ``paths``, the package itself); ``model`` (pure),
``tools`` and ``system`` beside each other; ``judge``; ``results``; ``lab``; ``teach``;
``commands`` and ``cli``. Only ``lab/network.py`` imports Mininet.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "labtools"
BASE = {"errors", "paths", ""}
#: layer -> the layers its modules may import
ALLOWED: Dict[str, Set[str]] = {
    "base": {"base"},
    "model": {"base", "model"},
    "tools": {"base", "tools"},
    "system": {"base", "system"},
    "judge": {"base", "model", "tools", "judge"},
    "results": {"base", "model", "tools", "judge", "results"},
    "lab": {"base", "model", "tools", "judge", "results", "system", "lab"},
    "teach": {"base", "model", "tools", "judge", "results", "system", "lab", "teach"},
    "commands": {"base", "model", "tools", "judge", "results", "system", "lab", "teach",
                 "commands"},
}
MININET_MODULE = "labtools/lab/network.py"


def layer_of(module: str) -> str:
    """``labtools.model.expect`` -> ``model``; ``labtools.errors`` -> ``base``."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    if head in BASE or head.startswith("__"):  # errors, paths, labtools.__version__
        return "base"
    if head == "cli":
        return "commands"
    return head


def modules() -> Iterator[Tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        yield (name[: -len(".__init__")] if name.endswith(".__init__") else name), path


def imports(path: Path, module: str) -> List[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append(target)
            if target in ("labtools",) or target.endswith((".model", ".tools", ".judge",
                                                            ".results", ".system", ".lab",
                                                            ".teach")):
                found += [f"{target}.{alias.name}" for alias in node.names]
    return found


ALL = list(modules())


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_a_lower_layer_never_imports_a_higher_one(module, path):
    mine = layer_of(module)
    assert mine in ALLOWED, f"{module}: unknown layer {mine!r}"
    for target in imports(path, module):
        if target == "labtools" or not target.startswith("labtools."):
            continue
        theirs = layer_of(target)
        assert theirs in ALLOWED[mine], f"{module} ({mine}) imports {target} ({theirs})"


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_only_the_network_module_imports_mininet(module, path):
    uses = [t for t in imports(path, module) if t == "mininet" or t.startswith("mininet.")]
    rel = str(path.relative_to(PACKAGE.parent))
    assert not uses or rel == MININET_MODULE, f"{rel} imports {uses}"


def test_the_check_itself_sees_a_violation(tmp_path):
    """The layer rule is not vacuous: a model module importing the lab is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from labtools.lab.session import LabSession\nimport mininet.net\n")
    found = imports(bad, "labtools.model.bad")
    assert "labtools.lab.session" in found and "mininet.net" in found
    assert layer_of("labtools.lab.session") not in ALLOWED["model"]
