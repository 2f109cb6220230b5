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
        assert "## curate audit failed" in summary.read_text("utf-8")
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


SAMPLE_CASES = Path(__file__).resolve().parents[1] / "curate" / "data" / "samples"


def _one_line_cases(tmp_path: Path) -> Path:
    """The shipped MQuAKE sample as ``json.dump`` writes it by default: one line."""
    cases = json.loads((SAMPLE_CASES / "mquake_sample.json").read_text("utf-8"))
    path = tmp_path / "data" / "cases.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cases, ensure_ascii=False), "utf-8")
    return path


def test_sarif_points_at_each_record_relative_to_its_root(capsys, tmp_path, monkeypatch):
    """Every result on a file named relative to SRCROOT (the working folder of an audit), and
    in a one-line JSON file on its record's own column, not all on line 1."""
    path = _one_line_cases(tmp_path)
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "audit", "mquake", "data/cases.json", "--format", "sarif")
    assert rc == 0, err
    doc = validate_sarif(out)
    run_ = doc["runs"][0]
    assert run_["originalUriBaseIds"] == {"SRCROOT": {"uri": tmp_path.as_uri() + "/"}}
    results = run_["results"]
    assert len(results) > 5
    text = path.read_text("utf-8")
    columns = set()
    for r in results:
        phys = r["locations"][0]["physicalLocation"]
        assert phys["artifactLocation"] == {"uri": "data/cases.json", "uriBaseId": "SRCROOT"}
        region = phys["region"]
        assert region["startLine"] == 1
        # the column (code points) is where the record's object starts: it decodes to the case
        case, _ = json.JSONDecoder().raw_decode(text, region["startColumn"] - 1)
        assert str(case["case_id"]) == r["properties"]["record"]
        columns.add(region["startColumn"])
    assert len(columns) > 1


def test_sarif_puts_a_finding_on_a_split_on_its_input(capsys, tmp_path, monkeypatch):
    """DF402 (a split's demographic imbalance) has no record: its result is on the manifest,
    as code scanning requires of every result; outside the root the URI climbs with ``..``."""
    from deepfake_data import clean_manifest

    m = clean_manifest()
    cell = [
        i
        for i, r in enumerate(m.rows)
        if (r["split"], r["sex"], r["skin_tone"], r["label"]) == ("test", "female", "dark", "fake")
    ]
    keep = [r for i, r in enumerate(m.rows) if i not in cell[:4]]
    import polars as pl

    manifest = tmp_path / "data" / "m.csv"
    manifest.parent.mkdir()
    pl.DataFrame(keep, infer_schema_length=None).write_csv(manifest)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    rc, out, err = run(capsys, "audit", "deepfake", "../data/m.csv", "--format", "sarif")
    assert rc in (0, 1), err
    doc = validate_sarif(out)
    hit = next(r for r in doc["runs"][0]["results"] if r["ruleId"] == "DF402")
    assert hit["properties"]["record"] == "test"
    where = hit["locations"][0]["physicalLocation"]["artifactLocation"]
    assert where == {"uri": "../data/m.csv", "uriBaseId": "SRCROOT"}
    assert all(r["locations"][0]["physicalLocation"] for r in doc["runs"][0]["results"])


def test_github_annotates_ten_of_each_level_and_says_so(capsys, tmp_path, monkeypatch):
    """GitHub shows 10 annotations of each level per step and drops the rest silently: the
    first 10 of each level are annotations, the rest log lines, the cap stated in the log and
    in the job summary; every finding is still there."""
    path = _one_line_cases(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = run(capsys, "audit", "mquake", path, "--format", "github", "--fail-on", "never")
    assert rc == 0, err
    lines = out.splitlines()
    annotated = [x for x in lines if x.startswith(("::error ", "::warning ", "::notice "))]
    for level in ("error", "warning", "notice"):
        assert sum(x.startswith(f"::{level} ") for x in annotated) <= 10
    logged = [x for x in lines if x.startswith(f"{path}:1:") and ": warning: " in x]
    rc, js, _ = run(capsys, "audit", "mquake", path, "--format", "json")
    warnings = [f for f in json.loads(js)["findings"] if f["severity"] == "warning"]
    assert len(warnings) > 10, "the sample must overflow the cap to test it"
    assert sum(x.startswith("::warning ") for x in annotated) == 10
    assert len(logged) == len(warnings) - 10
    assert all(",col=" in x for x in annotated if x.startswith("::warning file="))
    cap = next(x for x in lines if x.startswith("curate: GitHub shows 10 annotations"))
    assert f"found {len(warnings)} warnings" in cap  # the findings, not the lines printed
    assert cap.removeprefix("curate: ") in summary.read_text("utf-8")
