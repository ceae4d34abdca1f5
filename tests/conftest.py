"""Shared fixtures. Unit tests run anywhere without root; real-network tests carry the
``network`` marker and run where the kernel can emulate links (natively or in the VM)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session")
def portfolio():
    """The reference topology."""
    from labtools.model.catalog import load_topology

    return load_topology("portfolio")


def run_cli(args: List[str], stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``labtools ARGS`` as a user would, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "labtools.cli", *args], input=stdin, capture_output=True,
        text=True, cwd=str(ROOT), timeout=120,
    )
