"""`make test` ends with the slowest tests of each stage, read from pytest's JUnit XML."""

import subprocess
import sys
from pathlib import Path

from slowest_tests import main, slowest


def test_the_slowest_tests_of_a_real_pytest_report_come_first(tmp_path: Path, capsys):
    (tmp_path / "test_two.py").write_text(
        "import time\n\ndef test_quick():\n    pass\n\n"
        "def test_slow():\n    time.sleep(0.3)\n")
    report = tmp_path / "junit" / "1-unit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--junitxml={report}", str(tmp_path / "test_two.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    cases = slowest(report, 5)
    assert [name.split("::")[-1] for _, name in cases] == ["test_slow", "test_quick"]
    assert cases[0][0] >= 0.3
    (tmp_path / "junit" / "2-broken.xml").write_text("<testsuite")
    assert main([str(tmp_path / "junit"), "1"]) == 0
    out = capsys.readouterr().out
    assert "1-unit: the 1 slowest tests" in out and "test_slow" in out
    assert "test_quick" not in out and "2-broken: unreadable" in out
