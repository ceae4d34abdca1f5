"""Lab 7's solution program (mysimpleperf/) written out of the solution notebook's
``%%writefile`` cells, for tests that run it: tests/tools/test_conformance.py and
tests/instructor/test_simpleperf_own_code.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "07-write-simpleperf.ipynb"


def write_program(folder: Path, edits: Optional[Dict[str, Dict[str, str]]] = None,
                  files: Optional[Dict[str, str]] = None) -> Path:
    """The solution's mysimpleperf/ in ``folder``, ``edits`` (file -> {old: new}) applied
    and ``files`` (file -> text) written over it."""
    program = folder / "mysimpleperf"
    program.mkdir()
    for cell in json.loads(SOLUTION.read_text())["cells"]:
        source = "".join(cell["source"])
        if source.startswith("%%writefile mysimpleperf/"):
            name = source.splitlines()[0].rsplit("/", 1)[-1]
            text = source.split("\n", 1)[1]
            for old, new in (edits or {}).get(name, {}).items():
                assert old in text, (name, old)
                text = text.replace(old, new)
            (program / name).write_text(text)
    for name, text in (files or {}).items():
        (program / name).write_text(text)
    return program
