"""The tests lie like the package: one folder per layer of ``labtools/`` (and ``deploy/``
for the hub, the image and Kubernetes), the helpers they share in ``tests/support/``, and
only the kit-wide tests at the top (layers, docs, the browser)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "labtools"
#: folders of tests that are not a layer of the package
OTHER_FOLDERS = frozenset({"deploy", "support", "fixtures", "__pycache__"})
#: the tests of the kit as a whole, at the top
KIT_WIDE = frozenset({"conftest.py", "test_layers.py", "test_docs.py", "test_browser.py",
                      "test_page_reading.py", "test_slowest_tests.py", "test_layout.py"})


def _layers() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def test_each_folder_of_tests_is_a_layer_of_the_package():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()}
    assert folders - OTHER_FOLDERS <= _layers(), folders - OTHER_FOLDERS - _layers()


def test_only_the_kit_wide_tests_lie_at_the_top():
    top = {p.name for p in TESTS.glob("*.py")}
    assert top <= KIT_WIDE, sorted(top - KIT_WIDE)


def test_helpers_lie_apart_from_the_tests():
    strays = [p.relative_to(TESTS).as_posix() for p in TESTS.glob("*/*.py")
              if p.parent.name != "support" and not p.name.startswith("test_")]
    assert not strays, strays
    tests_in_support = [p.name for p in (TESTS / "support").glob("test_*.py")]
    assert not tests_in_support, tests_in_support
