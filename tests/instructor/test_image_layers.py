"""The reader of an image's layers (tests/support/image_layers.py) finds what it exists to find:
the kit's withheld sources byte for byte under any name, solution notebooks, nbgrader's
markers; and passes what the student edition holds. The real student image is read by
tests/deploy/test_hub.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from image_layers import leaks, saved_tar, withheld_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("edition-layers") / "students"
    done = run_cli(["bundle", "--students", str(folder)])
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def withheld(edition: Path) -> dict:
    return withheld_files(ROOT, edition)


def test_the_withheld_files_are_the_answers(withheld):
    names = set(withheld.values())
    assert "labtools/tools/simpleperf/server.py" in names  # bytecode only in the edition
    assert "solutions/07-write-simpleperf.ipynb" in names
    assert not any(n.startswith("labtools/model/") for n in names)  # the model is the same


def test_a_layer_with_the_whole_kit_is_found(withheld):
    server = (ROOT / "labtools" / "tools" / "simpleperf" / "server.py").read_bytes()
    solution = (ROOT / "solutions" / "02-link-latency-throughput.ipynb").read_bytes()
    found, layers = leaks(saved_tar({"tmp/kit/labtools/tools/simpleperf/server.py": server,
                                     "home/x/renamed.py": server,
                                     "srv/solutions/02.ipynb": solution}), withheld)
    assert layers == 1
    assert len([f for f in found if "the kit's labtools/tools/simpleperf/server.py" in f]) == 2
    assert any("a solution notebook" in f for f in found)
    assert any("### BEGIN SOLUTION" in f for f in found)


def test_a_layer_with_the_edition_only_passes(edition, withheld):
    files = {f"opt/venv/lib/{p.relative_to(edition)}": p.read_bytes()
             for p in edition.rglob("*") if p.is_file() and p.suffix in (".py", ".ipynb")}
    assert len(files) > 100
    found, _ = leaks(saved_tar(files), withheld)
    assert found == []
