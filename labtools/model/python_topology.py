"""Loading a ``.py`` topology file in a child Python, within a time limit.

A topology file is a program: it may fail in any way, and it may never finish (a loop, a
wait for input). :func:`build` and :func:`cases` run it in a child process (a fresh
``python``, the request on its standard input), which imports the file, calls
``topology(**params)`` (or a Mininet ``topos`` factory, or reads ``CASES``) and writes the
result as JSON: a topology in its JSON form (:func:`labtools.model.json_topology.to_dict`),
which the caller reads back with ``from_dict``. A child still running after
:data:`labtools.model.limits.PYTHON_LOAD_TIME_S` is killed with whatever it started (it
runs in a session of its own; left alone, it ends itself a few seconds later), and the load
is one :class:`TopologyError` "topology file PATH did not finish loading within N s";
Ctrl-C while it runs kills it too. A child rather than a timer: a signal timer works only
in the main thread, a thread cannot be stopped, and the kit runs inside Jupyter kernels.

The child imports with the caller's ``sys.path`` and environment. There, whatever the file
raises (``SystemExit`` too) becomes one :class:`TopologyError` "topology file PATH failed:
...", and the kit's own one-line errors pass as they are (the caller raises the same class
with the same message); a ``KeyboardInterrupt`` raised there is raised again here. What
the file prints goes to standard error (standard output carries the result) and is shown
once the load is done. A result is kept for the file as it is (path, size, modification
time) and the same params, so loading it again in one process starts no other child.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, Tuple, TypeVar

from labtools import errors
from labtools.errors import LabtoolsError, TopologyError
from labtools.model import limits
from labtools.model.json_topology import to_dict
from labtools.model.limits import one_line
from labtools.model.mininet_import import from_mininet_topo
from labtools.model.topology import Topology
from labtools.paths import PACKAGE_PARENT

__all__ = ["build", "cases", "import_file", "child_main"]

_T = TypeVar("_T")
#: how the child is started: this module's :func:`child_main` in a fresh interpreter
_CHILD_CODE = "from labtools.model.python_topology import child_main; child_main()"
#: a child left alone ends itself this long after its time limit (s)
_GRACE_S = 5


def build(path: Path, params: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON form of the topology that ``path``'s ``topology(**params)`` (or ``topos``
    factory) makes, run in a child within the time limit (the kit's own files, which
    end, in this process: a child costs seconds in the lab VM)."""
    return _cached(path, "topology", params)["topology"]


def cases(path: Path) -> Dict[str, Any]:
    """The ``CASES`` that ``path`` declares (empty if none), read in a child (the kit's own
    files in this process)."""
    return _cached(path, "cases", {})["cases"]


def is_kit_file(path: Path) -> bool:
    """True for a topology file the kit ships (``topologies/`` beside the package)."""
    try:
        return path.resolve().parent == (PACKAGE_PARENT / "topologies").resolve()
    except (OSError, RuntimeError):
        return False


def _cached(path: Path, mode: str, params: Dict[str, Any]) -> Dict[str, Any]:
    try:
        stat = path.stat()
    except OSError as err:
        raise TopologyError(f"cannot read topology file {path}: {one_line(str(err))}") from None
    if is_kit_file(path):
        return json.loads(_answer_for(path, mode, params))
    identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    request = json.dumps({"mode": mode, "path": str(path), "params": params,
                          "sys_path": [p for p in sys.path if isinstance(p, str)],
                          "limit_s": limits.PYTHON_LOAD_TIME_S})
    return json.loads(_run_once(str(path), identity, request))


@functools.lru_cache(maxsize=64)
def _run_once(path: str, identity: Tuple[int, ...], request: str) -> str:
    """The child's answer (JSON text) to ``request``; cached by file and request."""
    del identity  # part of the cache key only
    return json.dumps(_run_child(Path(path), request))


def _child_env() -> Dict[str, str]:
    """The environment of the child: this one, with the kit's package first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT),
                                                    env.get("PYTHONPATH", "")) if p)
    return env


def _run_child(path: Path, request: str) -> Dict[str, Any]:
    limit_s = limits.PYTHON_LOAD_TIME_S
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env=_child_env())
    except OSError as problem:
        raise TopologyError(f"cannot start a Python ({sys.executable or 'none known'}) to load "
                            f"topology file {path}: {one_line(str(problem))}") from None
    try:
        out, err = proc.communicate(request.encode(), timeout=limit_s)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise TopologyError(f"topology file {path} did not finish loading within "
                            f"{limit_s:g} s (a loop, or a wait for input?)") from None
    finally:
        if proc.poll() is None:  # Ctrl-C, or anything else while waiting
            _stop(proc)
    return _answer(path, proc.returncode, out, err.decode(errors="replace"))


def _stop(proc: "subprocess.Popen[bytes]") -> None:
    """Kill the child and whatever it started (its session), and close its pipes."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _answer(path: Path, status: int, out: bytes, err_text: str) -> Dict[str, Any]:
    """The child's result, or the error it reports raised here."""
    try:
        answer = json.loads(out.decode())
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        last = err_text.strip().splitlines()[-1:] or ["no message"]
        raise TopologyError(f"topology file {path} failed: loading it ended with status "
                            f"{status} ({one_line(last[0])[:200]})")
    if err_text:
        sys.stderr.write(err_text)  # what the file printed
    if answer.get("interrupt"):
        raise KeyboardInterrupt
    if "error" in answer:
        raise _kit_error(str(answer["error"]), one_line(str(answer.get("message", ""))))
    return answer


def _kit_error(name: str, message: str) -> LabtoolsError:
    """The kit's error class ``name`` with ``message`` (a TopologyError when there is none)."""
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, LabtoolsError):
        try:
            return cls(message)
        except TypeError:  # an error made of parts (ParseError)
            pass
    return TopologyError(message)


# --- the child ----------------------------------------------------------------------------

def child_main() -> None:
    """The child's work: read the request on standard input, write the answer on standard
    output (what the file prints goes to standard error), exit without waiting for any
    thread the file started."""
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # the file's own output goes to standard error
    try:
        request = json.loads(sys.stdin.read())
        _end_by_itself(float(request["limit_s"]))
        given = request["sys_path"]  # the caller's: a file imports what it would import there
        sys.path[:] = given + [p for p in sys.path if p not in given]
        text = _answer_for(Path(request["path"]), request["mode"], request["params"])
    except KeyboardInterrupt:
        text = json.dumps({"interrupt": True})
    except LabtoolsError as err:
        text = json.dumps({"error": type(err).__name__, "message": one_line(str(err))})
    with os.fdopen(answer_fd, "w") as out:
        out.write(text)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _end_by_itself(limit_s: float) -> None:
    """Make sure the child ends a few seconds after the caller would have stopped it, even
    when the caller cannot (a kernel killed at once): a wall-clock alarm, whose signal ends
    the process, and a CPU limit the kernel enforces."""
    seconds = math.ceil(limit_s) + _GRACE_S
    signal.alarm(seconds)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    cap = seconds + 1 if hard == resource.RLIM_INFINITY else min(seconds + 1, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(seconds, cap), cap))  # SIGXCPU, then SIGKILL


def _answer_for(path: Path, mode: str, params: Dict[str, Any]) -> str:
    """The answer to one request, as JSON text."""
    module = import_file(path)
    if mode == "cases":
        found = _guarded(path, lambda: getattr(module, "CASES", None))
        answer: Dict[str, Any] = {"cases": dict(found) if isinstance(found, dict) else {}}
        what = "CASES"
    else:
        topo = _guarded(path, lambda: _build(path, module, params))
        answer = {"topology": to_dict(topo)}
        what = f"topology {topo.name!r}: params"
    try:
        return json.dumps(answer, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TopologyError(f"topology file {path}: {what} must be JSON values (text, numbers, "
                            f"lists, objects): {one_line(str(err))[:200]}") from None


def _guarded(path: Path, call: Callable[[], _T]) -> _T:
    """``call()``, where any exception of a user's file (``SystemExit`` too, but not
    Ctrl-C) becomes one :class:`TopologyError` naming the file; the kit's own errors
    (a bad value in a Topology it builds) pass as they are, on one line."""
    try:
        return call()
    except KeyboardInterrupt:
        raise
    except LabtoolsError as err:
        if len(str(err).splitlines()) > 1:
            raise TopologyError(f"topology file {path} failed: {_reason(err)}") from None
        raise
    except BaseException as err:  # noqa: BLE001 - a user's file may fail in any way: one line
        raise TopologyError(f"topology file {path} failed: {_reason(err)}") from None


def _reason(err: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters (even when ``str(err)`` fails)."""
    try:
        text = one_line(str(err))
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - an exception that cannot say what it is
        text = "(its message cannot be shown)"
    reason = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return reason if len(reason) <= 300 else reason[:297] + "..."


def import_file(path: Path) -> ModuleType:
    """The module of a topology file, run once more on every call (in this process: the
    child's, or a test's that builds a kit file's Mininet ``Topo``)."""
    name = f"labtools_topology_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise TopologyError(f"cannot load topology file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def run() -> ModuleType:
        sys.modules[name] = module  # as an import does: dataclasses look it up there
        try:
            loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    return _guarded(path, run)


def _check_parameters(path: Path, build_: Callable[..., Any], params: Dict[str, Any]) -> None:
    """Refuse parameters ``build_`` does not take, before calling it."""
    try:
        inspect.signature(build_).bind(**params)
    except TypeError as err:
        raise TopologyError(f"topology {path.stem}: bad parameters {params}: {err}") from None
    except ValueError:  # no signature to check (a built-in): the call will tell
        pass


def _build(path: Path, module: ModuleType, params: Dict[str, Any]) -> Topology:
    make = getattr(module, "topology", None)
    if callable(make):
        _check_parameters(path, make, params)
        topo = make(**params)
        if not isinstance(topo, Topology):
            raise TopologyError(f"{path}: topology() must return a labtools Topology, not "
                                f"{type(topo).__name__}")
        return topo
    topos = getattr(module, "topos", None)
    if isinstance(topos, dict) and topos:
        name, factory = next(iter(topos.items()))
        if not callable(factory):
            raise TopologyError(f"{path}: topos[{name!r}] must be a Mininet Topo class or a "
                                "function that makes one")
        _check_parameters(path, factory, params)
        return from_mininet_topo(factory(**params), str(name))
    raise TopologyError(f"{path} defines neither topology() nor topos = {{...}}")
