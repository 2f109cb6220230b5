"""``curate check`` on the worked example repository (examples/dataset-repo): it passes as
shipped; an injected problem fails it (exit 1) with the rule and the record named in every
output format; the baselined problem passes again; a broken configuration is exit 2 naming the
key. Every run works on a copy of the example in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from curate.cli.main import main
from curate.reports.verdict import fingerprint, normalise_message

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dataset-repo"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
FORMATS = ("text", "json", "markdown", "html", "junit", "github", "sarif")


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A fresh copy of the example repository, as the current folder."""
    dst = tmp_path / "repo"
    shutil.copytree(EXAMPLE, dst, ignore=shutil.ignore_patterns("reports"))
    monkeypatch.chdir(dst)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return dst


def inject_duplicate(repo: Path, new_id: int = 99999) -> None:
    """Append a copy of the first case under a new id: a duplicated case (KE401, an error in
    the example's config) that the baseline has never seen."""
    path = repo / "data" / "mquake" / "cases.json"
    cases = json.loads(path.read_text("utf-8"))
    copy = json.loads(json.dumps(cases[0]))
    copy["case_id"] = new_id
    cases.append(copy)
    path.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", "utf-8")


def validate_junit(text: str) -> None:
    import xmlschema

    xmlschema.XMLSchema(str(SCHEMAS / "JUnit.xsd")).validate(text)


def validate_sarif(text: str) -> dict[str, Any]:
    import jsonschema

    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text("utf-8"))
    doc = json.loads(text)
    jsonschema.Draft4Validator(schema).validate(doc)
    return doc


def test_every_family_is_in_the_example():
    import tomllib

    from curate.families import all_families

    cfg = tomllib.loads((EXAMPLE / "pyproject.toml").read_text("utf-8"))["tool"]["curate"]
    from curate.families import get_family

    used = {get_family(d["family"]).name for d in cfg["datasets"]}
    assert used == set(all_families())


def test_the_example_passes_as_shipped(repo, capsys):
    rc, out, err = run(capsys, "check")
    assert rc == 0, out + err
    assert "curate check passed: 5 dataset(s)" in out
    # the accepted findings are there, counted as baselined and ignored, not hidden
    assert "KE401" in out and "GL402" in out
    # the configured report files were written, and they validate
    validate_junit((repo / "reports" / "curate-junit.xml").read_text("utf-8"))
    doc = validate_sarif((repo / "reports" / "curate.sarif").read_text("utf-8"))
    states = {r["baselineState"] for r in doc["runs"][0]["results"]}
    assert states == {"unchanged", "new"}  # baselined ones, and the ignored KE401 9203
    ignored = [
        r
        for r in doc["runs"][0]["results"]
        if r.get("suppressions", [{}])[0].get("justification", "").startswith("curate-ignore")
    ]
    assert [r["properties"]["record"] for r in ignored] == ["9203"]
    assert "upstream MQuAKE-hard release" in ignored[0]["suppressions"][0]["justification"]


def test_the_config_is_found_from_a_subfolder(repo, capsys, monkeypatch):
    monkeypatch.chdir(repo / "data" / "glycan")
    rc, out, err = run(capsys, "check", "--dataset", "plant-glycans", "--no-step-summary")
    assert rc == 0, out + err
    assert "plant-glycans" in out and "mquake-sample" not in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_injected_duplicate_fails_naming_rule_and_record(repo, capsys, fmt):
    inject_duplicate(repo)
    rc, out, err = run(capsys, "check", "--format", fmt)
    assert rc == 1, err
    assert "KE401" in out
    assert "99999" in out
    if fmt == "junit":
        validate_junit(out)
        assert '<failure message="KE401: 1 new error finding" type="KE401">' in out
    elif fmt == "sarif":
        doc = validate_sarif(out)
        failing = [r for r in doc["runs"][0]["results"] if r["properties"]["fails"]]
        assert [(r["ruleId"], r["properties"]["record"]) for r in failing] == [("KE401", "99999")]
        assert failing[0]["level"] == "error"
        # the new case starts on a line of the JSON array: the region names it
        line = failing[0]["locations"][0]["physicalLocation"]["region"]["startLine"]
        text = (repo / "data" / "mquake" / "cases.json").read_text("utf-8").splitlines()
        assert text[line - 1].strip() == "{"
        assert '"case_id": 99999' in text[line]
    elif fmt == "github":
        errors = [x for x in out.splitlines() if x.startswith("::error ")]
        assert len(errors) == 1
        assert "file=data/mquake/cases.json" in errors[0]
        assert "title=KE401 duplicate-case (mquake-sample)" in errors[0]
        assert "record 99999" in errors[0]
    elif fmt == "json":
        doc = json.loads(out)
        assert doc["failed"] is True
        bad = [f for d in doc["datasets"] for f in d["findings"] if f["fails"]]
        assert [(f["rule"], f["record"], f["status"]) for f in bad] == [("KE401", "99999", "new")]
    elif fmt == "html":
        assert out.startswith("<!DOCTYPE html>") and "FAIL" in out


def test_a_baselined_problem_passes_again(repo, capsys):
    inject_duplicate(repo)
    assert run(capsys, "check")[0] == 1
    rc, _, err = run(capsys, "check", "--update-baseline")
    assert rc == 0, err
    assert "curate-baseline.json" in err
    doc = json.loads((repo / "curate-baseline.json").read_text("utf-8"))
    assert any(e["record"] == "99999" and e["rule"] == "KE401" for e in doc["findings"])
    # sorted and written by curate: the first key says so
    assert next(iter(doc)) == "curate-baseline"
    rc, out, err = run(capsys, "check")
    assert rc == 0, out + err
    # a second, different duplicate is new again
    inject_duplicate(repo, 88888)
    rc, out, _ = run(capsys, "check")
    assert rc == 1 and "88888" in out and "99999" not in out.split("failed:")[-1]


def test_findings_keep_their_fingerprint_when_rows_move(repo, capsys):
    """A new row at the top of the CSV moves every other row one line down (and changes the
    counts quoted in messages): nothing that was accepted becomes new."""
    path = repo / "data" / "glycan" / "plant_taxonomy.csv"
    head, *rows = path.read_text("utf-8").splitlines(keepends=True)
    # the first row's taxon again, a new id and a glycan of its own
    cells = rows[0].split(",")
    cells[0], cells[1] = "999999", "Glc(b1-4)Glc(b1-4)Glc(b1-4)Glc"
    path.write_text(head + ",".join(cells) + "".join(rows), "utf-8")
    rc, out, err = run(capsys, "check", "--dataset", "plant-glycans", "--format", "json")
    assert rc == 0, out + err
    findings = json.loads(out)["datasets"][0]["findings"]
    assert [f for f in findings if f["status"] == "new"] == []
    moved = next(f for f in findings if f["rule"] == "GL301" and f["record"] == "980")
    assert moved["line"] == 28 and moved["status"] == "baselined"  # line 27 before


def test_a_new_leak_is_annotated_on_its_csv_line(repo, capsys, monkeypatch, tmp_path):
    """Moving a training row into the test split leaks its glycan: the annotation points at
    the row's physical line, and the job summary is appended to $GITHUB_STEP_SUMMARY."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", "utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    path = repo / "data" / "glycan" / "plant_taxonomy.csv"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    # record 554 is a training row whose glycan other splits also hold (see GL402 messages)
    k = next(i for i, line in enumerate(lines) if line.startswith("554,"))
    assert lines[k].rstrip("\n").endswith(",train")
    lines[k] = lines[k].rstrip("\n")[: -len("train")] + "test\n"
    path.write_text("".join(lines), "utf-8")
    rc, out, _ = run(capsys, "check", "--dataset", "plant-glycans", "--format", "github")
    assert rc == 1
    errors = [x for x in out.splitlines() if x.startswith("::error ") and "record 554," in x]
    assert errors, out
    assert f"file=data/glycan/plant_taxonomy.csv,line={k + 1}," in errors[0]
    text = summary.read_text("utf-8")
    assert text.startswith("earlier step\n")
    assert "## curate check failed" in text and "554" in text


def test_without_the_baseline_the_accepted_errors_fail(repo, capsys):
    rc, out, _ = run(capsys, "check", "--no-baseline", "--no-step-summary")
    assert rc == 1
    assert "GL402 split-leakage-different-label failed" in out
    # GL501 is under its 40% threshold; KE401 9203 stays ignored by curate-ignore
    assert "GL501 singleton-class failed" not in out
    assert "KE401 duplicate-case failed" not in out


def test_a_threshold_fails_when_exceeded(repo, capsys):
    cfg = repo / "pyproject.toml"
    cfg.write_text(cfg.read_text("utf-8").replace('GL501 = "40%"', 'GL501 = "10%"'), "utf-8")
    rc, out, _ = run(capsys, "check", "--no-baseline", "--dataset", "plant-glycans")
    assert rc == 1
    assert (
        "GL501 singleton-class failed: 118 new findings in 54 records (33.8% of records), "
        "over threshold 10%" in out
    )


def test_update_baseline_refuses_a_file_curate_did_not_write(repo, capsys):
    foreign = repo / "curate-baseline.json"
    foreign.write_text('{"someone": "else"}\n', "utf-8")
    rc, _, err = run(capsys, "check", "--update-baseline")
    assert rc == 2
    assert err.count("\n") == 1 and "not a curate baseline" in err
    assert foreign.read_text("utf-8") == '{"someone": "else"}\n'


def _break(repo: Path, old: str, new: str) -> None:
    cfg = repo / "pyproject.toml"
    text = cfg.read_text("utf-8")
    assert old in text
    cfg.write_text(text.replace(old, new, 1), "utf-8")


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('family = "glycan"', 'famly = "glycan"', "[tool.curate] datasets[1].famly: unknown key"),
        ('fail-on = "error"', 'fail-on = "errors"', "[tool.curate] fail-on:"),
        ('format = "text"', 'formatt = "text"', "[tool.curate] output.formatt: unknown key"),
        ('family = "glycan"', 'family = "glycon"', "datasets[1].family: unknown family"),
        ('task = "taxonomy"', 'tasks = "taxonomy"', "datasets[1].options.tasks: glycan has no"),
        ('"random:8"', '"random:eight"', "datasets[0].options: --edit-set: bad edit set"),
        ('select = ["KE"]', 'select = ["GL"]', "datasets[0].select[0]: 'GL' matches no"),
        ('GL501 = "40%"', "GL501 = true", "datasets[1].thresholds: GL501:"),
        ("reason = ", "why = ", "curate-ignore[0].why: unknown key"),
        ('rule = "KE401"', 'rule = "KE999"', "curate-ignore[0].rule: 'KE999' is not a rule"),
        ('paths = ["data/glycan/*.csv"]', 'paths = ["data/glycan/*.tsv"]', "paths[0]"),
    ],
)
def test_a_broken_config_is_one_exit_2_line_naming_the_key(repo, capsys, old, new, named):
    _break(repo, old, new)
    rc, out, err = run(capsys, "check")
    assert rc == 2, out + err
    assert err.count("\n") == 1, err
    assert err.startswith("curate: error: pyproject.toml: ")
    assert named in err


@pytest.mark.parametrize(
    ("reason", "named"),
    [
        ('reason = "  "', "curate-ignore[0].reason: a reason is required"),
        ("", "curate-ignore[0].reason: required key missing"),
    ],
)
def test_a_reason_is_required_for_an_ignore(repo, capsys, reason, named):
    cfg = repo / "pyproject.toml"
    lines = cfg.read_text("utf-8").splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("reason = "))
    lines[k] = reason
    cfg.write_text("\n".join(lines) + "\n", "utf-8")
    rc, _, err = run(capsys, "check")
    assert rc == 2
    assert named in err


def test_a_curate_toml_and_an_unused_ignore(repo, capsys, tmp_path, monkeypatch):
    """A curate.toml has the keys at its top level; an ignore that matches nothing is said."""
    folder = tmp_path / "other"
    folder.mkdir()
    shutil.copy(repo / "data" / "glycan" / "plant_taxonomy.csv", folder / "t.csv")
    (folder / "curate.toml").write_text(
        'fail-on = "never"\n[[datasets]]\nname = "g"\nfamily = "glycan"\npaths = ["t.csv"]\n'
        '[[curate-ignore]]\nrule = "GL304"\nrecord = "1"\nreason = "test"\n',
        "utf-8",
    )
    monkeypatch.chdir(folder)
    rc, out, _ = run(capsys, "check")
    assert rc == 0
    assert "curate-ignore[0] (GL304 record 1) matched no finding" in out


def test_files_named_by_options_are_relative_to_the_configuration(
    repo, capsys, tmp_path, monkeypatch
):
    """Found by a new-user review: a table ``schema = "models.py:Row"`` and a ``pred-probs``
    beside the configuration were looked for in the current folder ("no such file", exit 2)
    run from anywhere else, though the README says the paths are relative to the file."""
    from curate.check.config import load_config
    from curate.check.run import plan

    folder = tmp_path / "proj"
    (folder / "data").mkdir(parents=True)
    shutil.copy(repo / "data" / "glycan" / "plant_taxonomy.csv", folder / "data" / "t.csv")
    (folder / "models.py").write_text(
        "from pydantic import BaseModel\n\nclass Row(BaseModel):\n    glycan: str\n", "utf-8"
    )
    options = 'text = ["glycan"], schema = "models.py:Row", label-model = "none"'
    (folder / "curate.toml").write_text(
        'fail-on = "never"\n[[datasets]]\nname = "g"\nfamily = "table"\n'
        f'paths = ["data/t.csv"]\noptions = {{ {options} }}\n',
        "utf-8",
    )
    monkeypatch.chdir(tmp_path)
    rc, _out, err = run(capsys, "check", "--config", "proj/curate.toml")
    assert rc == 0, err
    (folder / "curate.toml").write_text(
        (folder / "curate.toml")
        .read_text("utf-8")
        .replace('label-model = "none"', 'pred-probs = "probs.parquet"'),
        "utf-8",
    )
    (got,) = plan(load_config(folder / "curate.toml"))
    assert got.options.pred_probs == folder / "probs.parquet"
    assert got.options.schema == f"{folder / 'models.py'}:Row"


def test_a_file_named_twice_in_a_dataset_is_named_by_its_key(repo, capsys, tmp_path, monkeypatch):
    """``paths = ["t.csv", "./t.csv"]`` said "t.csv is given twice (as 't.csv' and 't.csv')":
    no key, and the two spellings shown alike (a new-user review)."""
    shutil.copy(repo / "data" / "glycan" / "plant_taxonomy.csv", tmp_path / "t.csv")
    (tmp_path / "curate.toml").write_text(
        '[[datasets]]\nname = "g"\nfamily = "glycan"\npaths = ["t.csv", "./t.csv"]\n', "utf-8"
    )
    monkeypatch.chdir(tmp_path)
    rc, _out, err = run(capsys, "check")
    assert rc == 2
    assert err.strip() == (
        "curate: error: curate.toml: datasets[0].paths[1]: './t.csv' is the file of "
        "datasets[0].paths[0] ('t.csv') again"
    )


def test_no_config_is_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "check")
    assert rc == 2 and "no curate configuration found" in err


def test_fingerprint_ignores_numbers_and_positions():
    a = fingerprint("d", "GL301", "t.csv", "980", "Class", "under 'X' in 24 rows")
    b = fingerprint("d", "GL301", "t.csv", "980", "Class", "under 'X' in 25 rows")
    c = fingerprint("d", "GL301", "t.csv", "980", "Class", "under 'Y' in 24 rows")
    d = fingerprint("d", "GL301", "t.csv", "981", "Class", "under 'X' in 24 rows")
    assert a == b and a != c and a != d
    assert normalise_message("mean 0.3796 over 27 episodes") == "mean # over # episodes"


def test_a_toml_syntax_error_in_pyproject_is_named_with_its_line(repo, capsys):
    """A broken ``[tool.curate]`` is the user's own mistake, not a missing configuration: the
    same "not valid TOML" as a curate.toml, with tomllib's line and column."""
    (repo / "pyproject.toml").write_text("[tool.curate\nx=1\n", "utf-8")
    rc, _, err = run(capsys, "check")
    assert rc == 2 and err.count("\n") == 1, err
    assert "pyproject.toml: not valid TOML" in err and "line 1" in err, err


def test_someone_elses_broken_pyproject_is_not_ours(tmp_path, monkeypatch, capsys):
    """A broken pyproject.toml that never mentions curate is still "no configuration"."""
    (tmp_path / "pyproject.toml").write_text("[project\nname='x'\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "check")
    assert rc == 2 and "no curate configuration found" in err


def test_the_ci_examples_install_curate_from_its_source():
    """`pip install curate` fetches an unrelated 2011 package from PyPI: the example workflow
    installs from the source repository, and the pre-commit hooks are `language: python`
    (pre-commit installs the hook's own repository, this one, not a PyPI name)."""
    import re

    import yaml

    root = EXAMPLE.parents[1]
    flow = yaml.safe_load((root / "examples" / "github-workflow.yml").read_text("utf-8"))
    runs = [s["run"] for job in flow["jobs"].values() for s in job["steps"] if "run" in s]
    installs = [r for r in runs if "pip install" in r]
    assert installs, runs
    for cmd in installs:
        assert not re.search(
            r"pip install\s+['\"]?curate(\[[^\]]*\])?['\"]?(?=\s|$)(?!\s+@)", cmd
        ), cmd
        assert re.search(r"curate(\[[^\]]*\])? @ git\+https://|pip install\s+\.", cmd), cmd
    hooks = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text("utf-8"))
    for hook in hooks:
        assert hook["language"] == "python" and hook["entry"].startswith("curate "), hook
        assert "curate" not in hook.get("additional_dependencies", []), hook
    # the card check validates croissant.json: its hook installs the `croissant` extra's package
    card = next(h for h in hooks if h["id"] == "curate-card-check")
    import tomllib

    extra = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]["croissant"]
    assert card["additional_dependencies"] == extra


#: The actions the example workflow uses, at their current major versions (December 2026).
CURRENT_ACTIONS = {
    "actions/checkout": "v6",
    "actions/setup-python": "v6",
    "actions/upload-artifact": "v7",
    "github/codeql-action/upload-sarif": "v4",
}


def test_the_example_workflow_runs_as_written(repo, tmp_path):
    """Every ``run:`` step of examples/github-workflow.yml but the one marked to edit (where
    curate is installed from) runs as written in the example dataset repository, with
    ``curate`` on PATH as the install step leaves it: it passes, appends the job summary and
    writes the files the later steps upload; the actions are at their current majors."""
    import os
    import subprocess
    import sys

    import yaml

    flow = yaml.safe_load((EXAMPLE.parents[1] / "examples" / "github-workflow.yml").read_text())
    steps = [s for job in flow["jobs"].values() for s in job["steps"]]
    marked = [s for s in steps if "edit this line" in s.get("name", "")]
    assert len(marked) == 1 and "pip install" in marked[0]["run"], marked
    for s in steps:
        if "uses" in s:
            action, _, major = s["uses"].partition("@")
            assert CURRENT_ACTIONS.get(action) == major, s["uses"]
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTIONS": "true",
    }
    ran = 0
    for s in steps:
        if "run" not in s or s in marked:
            continue
        done = subprocess.run(
            ["bash", "-e", "-c", s["run"]], cwd=repo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (s["run"], done.stdout[-2000:], done.stderr)
        ran += 1
    assert ran >= 1
    assert "## curate check passed" in summary.read_text("utf-8")
    for s in steps:
        with_ = s.get("with", {})
        for key in ("path", "sarif_file"):
            if key in with_:
                assert (repo / with_[key]).exists(), with_[key]


def _truncate_mquake(repo: Path) -> None:
    path = repo / "data" / "mquake" / "cases.json"
    path.write_bytes(path.read_bytes()[:200])


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_an_unusable_dataset_is_named_and_the_others_still_checked(repo, capsys, fmt):
    """A truncated input: every other dataset is still audited, the broken one is an error
    for that dataset in stdout and in both report files (JUnit error, SARIF result and
    notification), and the run exits 2 with one stderr line naming it."""
    _truncate_mquake(repo)
    rc, out, err = run(capsys, "check", "--format", fmt)
    assert rc == 2, out + err
    assert err.count("\n") == 1 and err.startswith("curate: error: dataset 'mquake-sample'"), err
    assert "cases.json" in err
    if fmt == "github":
        line = next(x for x in out.splitlines() if x.startswith("::error "))
        assert "file=data/mquake/cases.json" in line and "mquake-sample" in line, line
    if fmt == "json":
        doc = json.loads(out)
        broken = next(d for d in doc["datasets"] if d["name"] == "mquake-sample")
        assert broken["failed"] and "cases.json" in broken["error"]
    else:
        assert "mquake-sample" in out
    assert "plant-glycans" in out and "xland-random" in out  # the others were checked
    # what the broken dataset could not find is not stale: its baseline and ignore stay
    assert "no longer found" not in out and "matched no finding" not in out
    junit = (repo / "reports" / "curate-junit.xml").read_text("utf-8")
    validate_junit(junit)
    assert '<error message="data/mquake/cases.json' in junit and 'errors="1"' in junit
    assert junit.count("<testsuite ") == 5
    doc = validate_sarif((repo / "reports" / "curate.sarif").read_text("utf-8"))
    run0 = doc["runs"][0]
    hit = next(r for r in run0["results"] if r["ruleId"] == "unusable-input")
    assert hit["level"] == "error" and "mquake-sample" in hit["message"]["text"]
    inv = run0["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert "cases.json" in inv["toolExecutionNotifications"][0]["message"]["text"]


def test_a_missing_baseline_is_said_not_silent(repo, capsys):
    (repo / "curate-baseline.json").unlink()
    rc, _, err = run(capsys, "check", "--format", "junit")
    assert rc == 1  # the accepted errors are new now
    assert (
        "baseline curate-baseline.json not found: every finding counts as new; create it "
        "with --update-baseline" in err
    )


def test_update_baseline_says_what_it_recorded(repo, capsys):
    inject_duplicate(repo)
    rc, out, err = run(capsys, "check", "--update-baseline")
    assert rc == 0, err
    assert "failed" not in out + err
    doc = json.loads((repo / "curate-baseline.json").read_text("utf-8"))
    total = sum(e["count"] for e in doc["findings"])
    assert f"baseline curate-baseline.json: {total} findings recorded (1 new)" in err
    rc, _, _ = run(capsys, "check")
    assert rc == 0


def test_sarif_suppresses_accepted_findings(repo, capsys):
    """Code scanning opens an alert for every result without a suppression: baselined and
    curate-ignore'd findings carry one saying where they were accepted."""
    inject_duplicate(repo)
    rc, out, _ = run(capsys, "check", "--format", "sarif")
    assert rc == 1
    res = validate_sarif(out)["runs"][0]["results"]
    by = {s: [r for r in res if r["properties"]["fails"] == (s == "new")] for s in ("new", "old")}
    assert by["new"] and all("suppressions" not in r for r in by["new"])
    base = [r for r in res if r.get("baselineState") == "unchanged"]
    assert base and all(
        r["suppressions"][0]["justification"] == "in baseline curate-baseline.json" for r in base
    )
    ignored = next(r for r in res if r["properties"]["record"] == "9203" and r["ruleId"] == "KE401")
    assert ignored["suppressions"][0]["kind"] == "external"
    assert "upstream MQuAKE-hard release" in ignored["suppressions"][0]["justification"]
    for r in res:
        if "suppressions" not in r:
            assert r["baselineState"] == "new"


def test_a_threshold_not_exceeded_states_the_figure(repo, capsys):
    """A bare "ok (threshold 40%)" hides how close the data is: the share is printed too."""
    rc, out, _ = run(capsys, "check", "--no-baseline", "--dataset", "plant-glycans")
    assert rc == 1  # without the baseline, GL301/GL40x errors fail; GL501 does not
    line = next(x for x in out.splitlines() if x.strip().startswith("GL501"))
    assert "ok (33.8% of records <= threshold 40%)" in line, line


def _split_repo(tmp_path: Path, shared: Any) -> Path:
    """A repository with train.csv / test.csv and no split column (real glycowork rows) and the
    MQuAKE-hard cases in two JSON Lines files, checked through the config's split mapping."""
    import polars as pl

    folder = tmp_path / "splitrepo"
    (folder / "data").mkdir(parents=True)
    rows = pl.read_csv(shared("data/glycan/glycowork_sample.csv"), infer_schema_length=0)
    rows = rows.drop("split")
    rows.head(3000).write_csv(folder / "data" / "train.csv")
    rows.tail(1900).write_csv(folder / "data" / "test.csv")
    cases = json.loads(shared("data/mquake/MQuAKE-hard.json").read_text("utf-8"))
    for name, part in (("ke-train", cases[:300]), ("ke-test", cases[300:])):
        text = "".join(json.dumps(c) + "\n" for c in part)
        (folder / "data" / f"{name}.jsonl").write_text(text, "utf-8")
    return folder


def test_a_split_mapping_makes_files_one_table_with_splits(tmp_path, shared, capsys, monkeypatch):
    """``splits = {train = ..., test = ...}``: a glycan in both files is split leakage (GL402,
    an error naming the test file's line), not cross-task leakage between two tables."""
    folder = _split_repo(tmp_path, shared)
    train = {_key(g) for g in pl_col(folder / "data" / "train.csv")} - {None}
    leaked_rows = sum(_key(g) in train for g in pl_col(folder / "data" / "test.csv"))
    assert leaked_rows > 0
    (folder / "curate.toml").write_text(
        '[[datasets]]\nname = "g"\nfamily = "glycan"\nselect = ["leakage"]\n'
        'splits = { train = "data/train.csv", test = ["data/t*t.csv"] }\n',
        "utf-8",
    )
    monkeypatch.chdir(folder)
    rc, out, _ = run(capsys, "check", "--format", "json")
    report = json.loads(out)
    (ds,) = report["datasets"]
    assert [i["path"] for i in ds["inputs"]] == ["data/train.csv", "data/test.csv"]
    assert [i["records"] for i in ds["inputs"]] == [3000, 1900]
    counts = {r["rule"]: r["findings"] for r in ds["rules"]}
    assert counts.get("GL403", 0) == 0
    # every leaked test row is reported once, as same-label or different-label leakage
    assert counts["GL401"] + counts["GL402"] == leaked_rows
    assert rc == 1
    rc, out, _ = run(capsys, "check")
    assert "data/test.csv:" in out and "data/train.csv:" not in out.split("GL40", 1)[1]


def _key(glycan: str) -> str | None:
    """Leakage is by canonical key (branch order does not make another glycan)."""
    from curate.schemas.iupac import IUPACError, canonical_key

    try:
        return canonical_key(glycan)
    except IUPACError:
        return None


def pl_col(path: Path) -> list[str]:
    import polars as pl

    return pl.read_csv(path, infer_schema_length=0)["glycan"].to_list()


def test_a_split_mapping_tags_records_of_a_record_family(tmp_path, shared):
    """Records of JSON Lines files carry the split their file is mapped to."""
    from curate.api import load
    from curate.check.config import load_config
    from curate.io.records import split_of

    folder = _split_repo(tmp_path, shared)
    (folder / "curate.toml").write_text(
        '[[datasets]]\nname = "ke"\nfamily = "mquake"\n'
        'splits = { train = "data/ke-train.jsonl", test = "data/ke-test.jsonl" }\n',
        "utf-8",
    )
    loaded = load_config(folder / "curate.toml")
    paths = loaded.dataset_paths(0)
    assert [split_of(p) for p in paths] == ["train", "test"]
    data = load("mquake", paths)
    assert {i.path: i.splits for i in data.inputs} == {
        str(paths[0]): {"train": 300},
        str(paths[1]): {"test": 129},
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('paths = ["a.csv"]\nsplits = { train = "a.csv" }', "exactly one of the two"),
        ("", "exactly one of the two"),
        ("splits = { train = [] }", "splits.train: no files"),
        ('splits = { train = "data/nothing-*.csv" }', "datasets[0].splits.train[0]"),
    ],
)
def test_a_bad_split_mapping_is_one_exit_2_line(tmp_path, capsys, monkeypatch, body, named):
    (tmp_path / "data").mkdir()
    (tmp_path / "curate.toml").write_text(
        f'[[datasets]]\nname = "g"\nfamily = "glycan"\n{body}\n', "utf-8"
    )
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "check")
    assert rc == 2, err
    assert err.count("\n") == 1 and named in err, err


def test_update_baseline_with_an_unusable_dataset_keeps_its_entries(repo, capsys):
    """One unreadable input does not block accepting the others' findings, and does not erase
    its own accepted findings: once it is readable again the check passes as before."""
    base = repo / "curate-baseline.json"
    entries = json.loads(base.read_text("utf-8"))["findings"]
    xland_before = [e for e in entries if e["dataset"] == "xland-random"]
    assert xland_before
    hdf5 = next((repo / "data" / "xland").glob("*.hdf5"))
    good = hdf5.read_bytes()
    hdf5.write_bytes(good[: len(good) // 2])  # truncated: unusable
    inject_duplicate(repo)  # a new KE401 finding to accept meanwhile
    rc, _, err = run(capsys, "check", "--update-baseline")
    assert rc == 2 and err.count("\n") == 1, err
    assert "xland-random" in err and "baseline was updated for the other datasets" in err
    after = json.loads(base.read_text("utf-8"))["findings"]
    assert [e for e in after if e["dataset"] == "xland-random"] == xland_before
    assert any(e["rule"] == "KE401" and e["record"] == "99999" for e in after)
    hdf5.write_bytes(good)
    rc, out, _ = run(capsys, "check")
    assert rc == 0, out


def test_a_split_mapping_wins_over_the_files_split_column(tmp_path, shared, capsys, monkeypatch):
    """Every record of a mapped file is in the mapped split, whatever a split column of the
    file says: the real glycowork sample (a naive row-level split that leaks) mapped whole to
    train has no split leakage."""
    folder = tmp_path / "whole"
    folder.mkdir()
    shutil.copy(shared("data/glycan/glycowork_sample.csv"), folder / "all.csv")
    monkeypatch.chdir(folder)
    config = '[[datasets]]\nname = "g"\nfamily = "glycan"\nselect = ["leakage"]\n{}\n'
    (folder / "curate.toml").write_text(config.format('paths = ["all.csv"]'), "utf-8")
    rc, out, _ = run(capsys, "check", "--format", "json")
    leaks = {r["rule"]: r["findings"] for r in json.loads(out)["datasets"][0]["rules"]}
    assert leaks["GL401"] + leaks["GL402"] > 0  # the file's own split column leaks
    (folder / "curate.toml").write_text(config.format('splits = { train = "all.csv" }'), "utf-8")
    rc, out, _ = run(capsys, "check", "--format", "json")
    leaks = {r["rule"]: r["findings"] for r in json.loads(out)["datasets"][0]["rules"]}
    assert leaks["GL401"] + leaks["GL402"] == 0 and rc == 0, leaks
