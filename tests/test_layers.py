"""The package's layers, checked on the source: a lower layer never imports a higher one,
and no modules import each other in a loop.

Every ``import`` in every module counts, the ones inside functions too, and the ones under
``if TYPE_CHECKING:`` as well: a module that names another's types depends on it all the
same (the calibration once reached back to the lab session only that way, and the session
could not be understood without it). Layers, lowest first: the base modules (``errors``,
``paths``, ``settings``, ``frame_sizes``, the package itself); ``model`` (pure), ``tools`` and ``system`` beside each
other; ``judge``; ``results``; ``lab``; ``teach``; ``commands`` and ``cli``; on top, the
instructor's wing, ``instructor`` (grading, the class report, the answer keys, the student
edition, and the instructor's subcommands in ``instructor/commands``), which may import
every layer and which no module outside it imports (the student edition leaves it out;
``cli`` names its subcommands by string, imported only when there). Only
``lab/network.py`` imports Mininet. As the layers only import downwards, a loop can only
form inside one folder; the loop check covers the whole package anyway.
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "labtools"
BASE = {"errors", "paths", "settings", "frame_sizes", ""}
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
    "instructor": {"base", "model", "tools", "judge", "results", "system", "lab", "teach",
                   "commands", "instructor"},
}
#: the instructor's wing: nothing outside it imports it
WING = "instructor"
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


def modules(package: Path = PACKAGE) -> Iterator[Tuple[str, Path]]:
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
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
                                                            ".teach", ".instructor")):
                found += [f"{target}.{alias.name}" for alias in node.names]
    return found


def import_graph(found: Iterable[Tuple[str, Path]]) -> Dict[str, Set[str]]:
    """module -> the package's modules it imports (a name imported from a module, such as
    a function, counts as that module; a module importing itself is no edge)."""
    found = list(found)
    known = {module for module, _ in found}
    graph: Dict[str, Set[str]] = {}
    for module, path in found:
        graph[module] = set()
        for target in imports(path, module):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].add(target)
    return graph


def import_loop(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One loop of imports in ``graph`` (``[a, b, a]``: a imports b, b imports a), or None."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as err:
        return list(reversed(err.args[1]))  # graphlib gives it against the arrows
    return None


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


def wing_imports(path: Path, module: str) -> List[str]:
    """What ``module`` imports of the instructor's wing, where it is outside the wing."""
    if layer_of(module) == WING:
        return []
    return [t for t in imports(path, module)
            if t.startswith("labtools.") and layer_of(t) == WING]


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_nothing_on_the_students_side_imports_the_instructors_wing(module, path):
    assert not wing_imports(path, module), (
        f"{module} imports the instructor's wing {wing_imports(path, module)}: the student "
        "edition leaves labtools/instructor out")


def test_the_wing_check_sees_an_import_of_the_wing(tmp_path):
    """A student-side module that imports the wing, even inside a function, is caught; the
    wing importing itself and the lower layers is not."""
    probe = tmp_path / "probe.py"
    probe.write_text("from labtools.teach import plots\n\n\ndef key():\n"
                     "    from labtools.instructor import answer_keys\n"
                     "    import labtools.instructor.commands.bundle_cmd\n")
    assert wing_imports(probe, "labtools.teach.probe") == [
        "labtools.instructor", "labtools.instructor.answer_keys",
        "labtools.instructor.commands.bundle_cmd"]
    assert wing_imports(probe, "labtools.instructor.probe") == []
    assert WING not in set().union(*(ALLOWED[layer] for layer in ALLOWED if layer != WING))


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_only_the_network_module_imports_mininet(module, path):
    uses = [t for t in imports(path, module) if t == "mininet" or t.startswith("mininet.")]
    rel = str(path.relative_to(PACKAGE.parent))
    assert not uses or rel == MININET_MODULE, f"{rel} imports {uses}"


#: SQL a module outside the results layer must not hold: the store owns its queries
SQL = re.compile(r"\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b")


def sql_in(path: Path) -> List[str]:
    """The string literals of ``path`` that hold SQL."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and SQL.search(node.value)]


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_only_the_results_layer_holds_sql(module, path):
    if layer_of(module) == "results":
        return
    assert not sql_in(path), f"{module} queries the store itself: {sql_in(path)}"


def test_the_sql_check_sees_a_query(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("rows = store.query('SELECT id FROM runs WHERE \"case\" = ?')\n")
    assert sql_in(probe) == ['SELECT id FROM runs WHERE "case" = ?']


def test_no_modules_import_each_other_in_a_loop():
    loop = import_loop(import_graph(ALL))
    assert loop is None, "modules import each other in a loop: " + " -> ".join(loop or [])


def test_the_loop_check_sees_a_loop_through_a_function_and_a_type_only_import(tmp_path):
    """The loop the lab once had: the session imports the calibration inside a function,
    the calibration imports the session only for its type."""
    lab = tmp_path / "labtools" / "lab"
    lab.mkdir(parents=True)
    for folder in (lab.parent, lab):
        (folder / "__init__.py").write_text("")
    (lab / "session.py").write_text(
        "from labtools.lab.base import LabBase\n\n\ndef start():\n"
        "    from labtools.lab.calibration import calibrate\n")
    (lab / "calibration.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from labtools.lab.session import LabSession\n")
    (lab / "base.py").write_text("from labtools.errors import LabtoolsError\n")
    graph = import_graph(modules(tmp_path / "labtools"))
    assert graph["labtools.lab.session"] == {"labtools.lab.base", "labtools.lab.calibration"}
    loop = import_loop(graph)
    assert loop is not None and loop[0] == loop[-1]
    assert set(loop) == {"labtools.lab.session", "labtools.lab.calibration"}
    (lab / "calibration.py").write_text("from labtools.lab.base import LabBase\n")
    assert import_loop(import_graph(modules(tmp_path / "labtools"))) is None


def test_the_check_itself_sees_a_violation(tmp_path):
    """The layer rule is not vacuous: a model module importing the lab is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from labtools.lab.session import LabSession\nimport mininet.net\n")
    found = imports(bad, "labtools.model.bad")
    assert "labtools.lab.session" in found and "mininet.net" in found
    assert layer_of("labtools.lab.session") not in ALLOWED["model"]


#: the sizes docs/developers.md asks for ("modules of about 400 lines at most, functions
#: of about 50"), as the package keeps them: lines of a module, lines of a function from
#: its ``def`` to its last line (a function inside another counts on its own too)
MODULE_LINES_MAX = 410
FUNCTION_LINES_MAX = 50


def too_long(path: Path) -> List[str]:
    """The module ``path`` and its functions where they are longer than the limits."""
    text = path.read_text(encoding="utf-8")
    found = []
    if len(text.splitlines()) > MODULE_LINES_MAX:
        found.append(f"the module: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > FUNCTION_LINES_MAX:
                found.append(f"{node.name} (line {node.lineno}): {lines} lines")
    return found


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_modules_and_functions_stay_short(module, path):
    assert not too_long(path), (
        f"{module} is too long: {'; '.join(too_long(path))} (at most {MODULE_LINES_MAX} "
        f"lines a module, {FUNCTION_LINES_MAX} a function: split it where it falls apart)")


def test_the_size_check_sees_a_long_function_and_a_long_module(tmp_path):
    """A function of 51 lines (one inside another too) and a module of 411 are caught;
    50 and 410 are not."""
    probe = tmp_path / "probe.py"

    def lines(n: int, indent: str) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(n))

    probe.write_text("def fits():\n" + lines(FUNCTION_LINES_MAX - 1, "    "))
    assert too_long(probe) == []
    probe.write_text("def outer():\n    async def inner():\n"
                     + lines(FUNCTION_LINES_MAX, "        ") + "    return inner\n")
    assert too_long(probe) == [f"outer (line 1): {FUNCTION_LINES_MAX + 3} lines",
                               f"inner (line 2): {FUNCTION_LINES_MAX + 1} lines"]
    probe.write_text("x = 1\n" * MODULE_LINES_MAX)
    assert too_long(probe) == []
    probe.write_text("x = 1\n" * (MODULE_LINES_MAX + 1))
    assert too_long(probe) == [f"the module: {MODULE_LINES_MAX + 1} lines"]


def test_no_type_check_is_switched_off_in_the_package():
    """mypy checks every line of ``labtools/``: no ``# type: ignore`` (a method replaced on
    purpose is typed ``Any`` where it is done, and says why)."""
    marker = "type: " + "ignore"
    found = [f"{module} line {n}" for module, path in ALL
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if marker in line]
    assert not found, found
