"""Serve calls of one file of a student's program (lab 7's ``report.py``) to the kit, one
line each, from a Python that cannot import the kit.

Run by path, with :mod:`labtools.lab.kit_free_python`'s Python: ``python -B -E -s -S
simpleperf_calls.py FILE``. It imports FILE and then answers each line of stdin, a Python
literal ``(what, name, args, kwargs)``:

- ``("get", NAME, (), {})``: ``("callable",)`` when the module has a callable NAME,
  ``("value", REPR)`` for another value, ``("missing",)`` when it has none;
- ``("call", NAME, ARGS, KWARGS)``: ``("value", REPR)`` of what the call returned, or
  ``("raised", BUILTIN, NAME, MESSAGE)``: the exception, the nearest built-in class of it
  (``ValueError`` for a class derived from it) and its own class's name.

The first line it writes says whether FILE imported: ``("imported",)`` or
``("raised", ...)``. Each answer is one line on stdout; what the student's code prints
goes to stderr. It imports nothing of the kit (which its Python could not import).
"""

import ast
import builtins
import importlib.util
import os
import sys
from typing import Any, TextIO, Tuple


def _raised(err: BaseException) -> Tuple[str, ...]:
    nearest = next(k.__name__ for k in type(err).__mro__
                   if getattr(builtins, k.__name__, None) is k)
    return ("raised", nearest, type(err).__name__, str(err))


def _answer(module: Any, request: Tuple[Any, ...]) -> Tuple[Any, ...]:
    what, name, args, kwargs = request
    if not hasattr(module, name):
        return ("missing",)
    found = getattr(module, name)
    if what == "get":
        return ("callable",) if callable(found) else ("value", repr(found))
    try:
        return ("value", repr(found(*args, **kwargs)))
    except BaseException as err:  # noqa: BLE001 - whatever it raised goes back to the kit
        return _raised(err)


def main(path: str, answers: TextIO) -> None:
    """Import the file at ``path`` and answer the requests of stdin on ``answers``."""
    def say(answer: Tuple[Any, ...]) -> None:
        answers.write(repr(answer) + "\n")
        answers.flush()

    sys.path.insert(0, os.path.dirname(path))  # its sibling files, as its program has them
    spec = importlib.util.spec_from_file_location("student_" + os.path.basename(path)[:-3],
                                                  path)
    try:
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except BaseException as err:  # noqa: BLE001 - told to the kit, which says it in one line
        say(_raised(err))
        return
    say(("imported",))
    for line in sys.stdin:
        say(_answer(module, ast.literal_eval(line)))


if __name__ == "__main__":
    OUT = sys.stdout
    sys.stdout = sys.stderr  # what the student's code prints stays out of the answers
    main(os.path.abspath(sys.argv[1]), OUT)
