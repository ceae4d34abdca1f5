"""The environment the kit runs tools in (the lowest module of ``system``: the machine's
checks, the lab sandbox's probe, the lab and the VM runner all start tools with it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict


def venv_bin_dir() -> Path:
    """The directory of the running Python's scripts (where ``vng`` of the venv lives)."""
    return Path(sys.executable).parent


def tools_env() -> Dict[str, str]:
    """The environment for tool commands: ``PATH`` with the venv's scripts first.

    ``vng`` runs helpers such as ``virtme-run`` through ``PATH``, so they must be found
    even when the venv was not activated.
    """
    env = dict(os.environ)
    parts = [str(venv_bin_dir())] + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")
    for extra in ("/usr/sbin", "/sbin"):
        if extra not in parts:
            parts.append(extra)
    env["PATH"] = ":".join(dict.fromkeys(p for p in parts if p))
    return env
