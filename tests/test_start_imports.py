"""What ``labtools run`` loads before its lab starts: not pandas (about 15 s under software
emulation, where every Python module costs tens of milliseconds): the command boots the VM,
and the lab builds its network, without it."""

from __future__ import annotations

import subprocess
import sys

#: what ``labtools run`` imports before its lab starts
BEFORE_THE_LAB = ("labtools.commands.run_cmd", "labtools.lab.session", "labtools.lab.cases",
                  "labtools.lab.probes", "labtools.lab.calibration", "labtools.lab.network",
                  "labtools.results.store", "labtools.model.catalog", "labtools.system.vm")


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_starting_a_lab_needs_no_pandas():
    imports = "; ".join(f"import {m}" for m in BEFORE_THE_LAB)
    out = _python(f"import sys; {imports}; print('pandas' in sys.modules)")
    assert out == "False"
