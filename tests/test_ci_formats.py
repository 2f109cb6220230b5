"""``validate`` and ``audit`` in the CI formats: JUnit and SARIF validate against their
schemas; annotations and the job summary name the rule and the record; exit codes unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curate.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dataset-repo"
SCHEMAS = Path(__file__).resolve().parent / "schemas"


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def validate_junit(text: str) -> None:
    import xmlschema

    xmlschema.XMLSchema(str(SCHEMAS / "JUnit.xsd")).validate(text)


def validate_sarif(text: str) -> dict[str, Any]:
    import jsonschema

    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text("utf-8"))
    doc = json.loads(text)
    jsonschema.Draft4Validator(schema).validate(doc)
    return doc


GLYCAN = EXAMPLE / "data" / "glycan" / "plant_taxonomy.csv"


@pytest.mark.parametrize("fmt", ["junit", "sarif", "github", "html"])
def test_audit_in_ci_formats(capsys, fmt, monkeypatch, tmp_path):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = run(capsys, "audit", "glycan", GLYCAN, "--format", fmt)
    assert rc == 1, err  # GL301/GL40x errors, as with --format text
    assert "GL402" in out and "2145" in out  # a leaking record, by its id
    if fmt == "junit":
        validate_junit(out)
        from curate.families import get_family

        assert out.count("<testcase ") == len(list(get_family("glycan").rules))  # each ran
        assert 'type="GL402"' in out and 'type="GL303"' not in out  # warnings do not fail
    elif fmt == "sarif":
        doc = validate_sarif(out)
        res = doc["runs"][0]["results"]
        hit = next(r for r in res if r["properties"]["record"] == "2145")
        assert hit["ruleId"] == "GL402" and hit["level"] == "error"
        line = hit["locations"][0]["physicalLocation"]["region"]["startLine"]
        assert GLYCAN.read_text("utf-8").splitlines()[line - 1].startswith("2145,")
    elif fmt == "github":
        assert "::error file=" in out and "::warning file=" in out
        assert "## curate check failed" in summary.read_text("utf-8")
    if fmt != "github":
        assert not summary.exists()  # only --format github writes the job summary


def test_audit_below_fail_on_passes_in_junit(capsys):
    rc, out, _ = run(capsys, "audit", "glycan", GLYCAN, "--format", "junit", "--fail-on", "never")
    assert rc == 0
    validate_junit(out)
    assert "<failure" not in out


def test_validate_junit_and_output_file(capsys, tmp_path):
    target = tmp_path / "junit.xml"
    rc, _, err = run(
        capsys, "validate", "mquake", EXAMPLE / "data" / "mquake" / "cases.json",
        "--format", "junit", "--output", target,
    )  # fmt: skip
    assert rc == 0, err
    text = target.read_text("utf-8")
    validate_junit(text)
    assert 'name="KE001' in text and "<failure" not in text


def test_icrl_sarif_has_no_line_but_the_record(capsys):
    path = EXAMPLE / "data" / "xland" / "xland_format_sample_9x9_random.hdf5"
    rc, out, _ = run(capsys, "audit", "icrl", path, "--format", "sarif")
    assert rc == 0
    doc = validate_sarif(out)
    res = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in res} == {"RL109", "RL207"}
    r = next(r for r in res if r["properties"]["record"] == "0/2")
    assert "region" not in r["locations"][0]["physicalLocation"]
    assert r["properties"]["recordIndex"] is not None
    assert json.loads(out)["runs"][0]["tool"]["driver"]["name"] == "curate"
    assert Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name == path.name


def test_audit_junit_does_not_say_new_without_a_baseline(capsys):
    """An audit has no baseline: "1 new error finding" would claim a comparison never made."""
    rc, out, _ = run(capsys, "audit", "glycan", GLYCAN, "--format", "junit")
    assert rc == 1
    assert 'message="GL401: 1 error finding"' in out and " new " not in out
