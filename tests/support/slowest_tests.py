"""Where a `make test` run's time went: the slowest tests of each stage, read from the
JUnit XML files pytest wrote (``--junitxml``), printed at the end of the run.

    python tests/support/slowest_tests.py results/junit [N]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import List, Tuple


def slowest(report: Path, count: int) -> List[Tuple[float, str]]:
    """The ``count`` slowest test cases of one JUnit XML file: (seconds, test id)."""
    cases = []
    for case in ElementTree.parse(report).iter("testcase"):
        seconds = float(case.get("time") or 0.0)
        cases.append((seconds, f"{case.get('classname', '')}::{case.get('name', '')}"))
    return sorted(cases, reverse=True)[:count]


def main(argv: List[str]) -> int:
    folder = Path(argv[0])
    count = int(argv[1]) if len(argv) > 1 else 5
    for report in sorted(folder.glob("*.xml")):
        try:
            cases = slowest(report, count)
        except (ElementTree.ParseError, OSError) as err:
            print(f"{report.stem}: unreadable ({err})")
            continue
        print(f"-- {report.stem}: the {len(cases)} slowest tests --")
        for seconds, name in cases:
            print(f"{seconds:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
