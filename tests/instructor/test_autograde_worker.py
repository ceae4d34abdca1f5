"""The grading worker's check of nbgrader's cell metadata (``SchemasCheckedOnce``): the same
answers and errors as ``jsonschema.validate``, with the schema itself checked once. The
notebooks are the course's own solutions (the real grading's test is test_class_grading,
which compares a class graded by workers with nbgrader's own serial run)."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import nbformat
import pytest

from labtools.instructor import autograde_worker

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "04-multiplexing.ipynb"


@pytest.fixture()
def nbgrader_schema():
    from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

    return MetadataValidatorV3().schema


def _graded_metadata():
    nb = nbformat.read(str(SOLUTION), as_version=4)
    return [c.metadata["nbgrader"] for c in nb.cells if "nbgrader" in c.metadata]


def _error_of(validate, instance, schema):
    try:
        validate(instance, schema)
    except jsonschema.ValidationError as err:
        return err.message, list(err.path)
    return None


def test_the_same_answers_as_jsonschema(nbgrader_schema):
    checked = autograde_worker.SchemasCheckedOnce(jsonschema)
    good = _graded_metadata()
    bad = copy.deepcopy(good[0])
    bad["points"] = "three"
    missing = {k: v for k, v in good[0].items() if k != "grade_id"}
    for meta in [*good, bad, missing]:
        assert _error_of(checked.validate, meta, nbgrader_schema) == \
            _error_of(jsonschema.validate, meta, nbgrader_schema)
    assert _error_of(checked.validate, bad, nbgrader_schema) is not None


def test_the_schema_itself_is_checked_once(nbgrader_schema, monkeypatch):
    kind = jsonschema.validators.validator_for(nbgrader_schema)
    calls = []
    real = kind.check_schema
    monkeypatch.setattr(kind, "check_schema", lambda schema: calls.append(1) or real(schema))
    checked = autograde_worker.SchemasCheckedOnce(jsonschema)
    for meta in _graded_metadata():
        checked.validate(meta, copy.deepcopy(nbgrader_schema))  # read anew, as nbgrader does
    assert len(calls) == 1
    with pytest.raises(jsonschema.SchemaError):
        checked.validate({}, {"type": "no such type"})


def test_nbgrader_checks_a_notebook_with_it(monkeypatch):
    from nbgrader.nbgraderformat import common, v3

    monkeypatch.setattr(common, "jsonschema", jsonschema)
    autograde_worker.check_schemas_once()
    autograde_worker.check_schemas_once()  # once is enough: not wrapped twice
    assert isinstance(common.jsonschema, autograde_worker.SchemasCheckedOnce)
    assert common.jsonschema._module is jsonschema
    nb = nbformat.read(str(SOLUTION), as_version=4)
    v3.MetadataValidatorV3().validate_nb(nb)
    graded = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    graded.metadata["nbgrader"]["points"] = "three"
    with pytest.raises(jsonschema.ValidationError):
        v3.MetadataValidatorV3().validate_nb(nb)


def test_the_shortcuts_apply_to_the_checked_versions_only(monkeypatch):
    monkeypatch.delenv("LABTOOLS_NBGRADER_SHORTCUTS", raising=False)
    import nbgrader

    assert autograde_worker.shortcuts_apply()  # the installed version is a checked one
    assert str(nbgrader.__version__).startswith(autograde_worker.SHORTCUT_VERSIONS)
    assert autograde_worker.shortcuts_apply("0.9.5")
    assert not autograde_worker.shortcuts_apply("0.10.0")
    monkeypatch.setenv("LABTOOLS_NBGRADER_SHORTCUTS", "0")
    assert not autograde_worker.shortcuts_apply("0.9.5")


@pytest.mark.parametrize("shortcuts, apps", [("1", 1), ("0", 3)])
def test_the_switch_makes_an_application_per_submission(monkeypatch, tmp_path, shortcuts, apps):
    """With LABTOOLS_NBGRADER_SHORTCUTS=0 a worker keeps to nbgrader's public path: an
    application made for each submission, as `nbgrader autograde --student ID` does."""
    import io
    import json

    monkeypatch.setenv("LABTOOLS_NBGRADER_SHORTCUTS", shortcuts)
    made, graded = [], []

    def new_app():
        made.append(object())
        return made[-1]

    monkeypatch.setattr(autograde_worker, "grade_one",
                        lambda app, student: graded.append((app, student)) or True)
    monkeypatch.setattr(autograde_worker, "_log_to", lambda path: None)
    requests = io.StringIO("".join(json.dumps({"student": s, "log": str(tmp_path / s)}) + "\n"
                                   for s in ("a", "b", "c")))
    replies = io.StringIO()
    autograde_worker.serve(new_app, requests, replies)
    assert len(made) == apps and [s for _, s in graded] == ["a", "b", "c"]
    assert len({id(app) for app, _ in graded}) == apps
    assert [json.loads(r)["ok"] for r in replies.getvalue().splitlines()] == [True] * 3


def test_without_the_shortcuts_nbgraders_own_schema_check_stays(monkeypatch, tmp_path):
    from nbgrader.nbgraderformat import common

    monkeypatch.setenv("LABTOOLS_NBGRADER_SHORTCUTS", "0")
    monkeypatch.setattr(common, "jsonschema", jsonschema)
    monkeypatch.chdir(tmp_path)
    autograde_worker.make_app("labs", [])
    assert common.jsonschema is jsonschema
