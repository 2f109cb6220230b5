"""The CLI as CI uses it: `main(argv)` → exit code, reports on stdout or in a file."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path

import pytest

import curate
from curate.audits.knowledge_editing import RULES
from curate.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"

#: Every knowledge-editing rule code (written out, so a rule that disappears is noticed).
KE_CODES = [
    "KE001", "KE002", "KE003",
    "KE101", "KE102", "KE103", "KE104", "KE105", "KE106", "KE107", "KE108", "KE109", "KE110",
    "KE111", "KE112", "KE113",
    "KE201", "KE202", "KE203",
    "KE301", "KE302",
    "KE401", "KE402",
]  # fmt: skip


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    rc, out, err = run(capsys, *argv, "--format", "json")
    assert "Traceback" not in err
    return rc, json.loads(out)


def keyset(report: dict) -> set[tuple]:
    return {(f["rule"], f["record"], f["field"], f["message"]) for f in report["findings"]}


# --------------------------------------------------------------------------- exit codes


def test_audit_hard_all_edited_only_warnings(hard_path, capsys):
    rc, out, err = run(capsys, "audit", "mquake", hard_path)
    assert rc == 0
    assert "Traceback" not in err
    assert "0 errors" in out and "warnings" in out
    rc, rep = run_json(capsys, "audit", "mquake", hard_path)
    assert rc == 0
    sev = rep["summary"]["by_severity"]
    assert sev["error"] == 0 and sev["warning"] > 0
    assert {f["severity"] for f in rep["findings"]} == {"warning"}
    # the five known duplicate pairs of MQuAKE-hard, later occurrence reported
    dups = {
        (f["record"], f["details"]["duplicate_of"]) for f in rep["findings"] if f["rule"] == "KE401"
    }
    assert dups == {
        ("9203", "9186"),
        ("9204", "9187"),
        ("9209", "9192"),
        ("9212", "9195"),
        ("9213", "9196"),
    }


def test_audit_fail_on_warning_exits_1(hard_path, capsys):
    rc, _, _ = run(capsys, "audit", "mquake", hard_path, "--fail-on", "warning")
    assert rc == 1
    rc, _, _ = run(
        capsys, "audit", "mquake", hard_path, "--fail-on", "never", "--edit-set", "random:100"
    )
    assert rc == 0


def test_audit_random_edit_set_has_contamination_errors(hard_path, capsys):
    rc, rep = run_json(capsys, "audit", "mquake", hard_path, "--edit-set", "random:100")
    assert rc == 1
    rules = {f["rule"] for f in rep["findings"] if f["severity"] == "error"}
    assert "KE202" in rules  # unedited cases whose original path an applied edit overrides
    c = rep["summary"]["stats"]["contamination"]
    assert c["edited_cases"] == 100 and c["unedited_cases"] == 329
    assert c["unedited_contaminated"] > 0
    assert c["unedited_contaminated"] == len(
        {f["record"] for f in rep["findings"] if f["rule"] == "KE202"}
    )


def test_bad_edit_set_is_usage_error(capsys):
    for spec in ("random:x", "random:100000", "nonsense", "ids:/no/such/file"):
        rc, _out, err = run(capsys, "audit", "mquake", SAMPLE, "--edit-set", spec)
        assert rc == 2, spec
        assert err.count("\n") == 1 and err.startswith("curate: error: ") and spec in err


def test_unknown_family_is_usage_error(capsys):
    rc, _out, err = run(capsys, "audit", "no-such-family", SAMPLE)
    assert rc == 2
    assert err.count("\n") == 1 and "no-such-family" in err
    assert "glycan" in err and "knowledge-editing (alias mquake, ke)" in err


# --------------------------------------------------------------------------- JSON report


def test_json_report_shape_and_sha256(hard_path, capsys):
    rc, rep = run_json(capsys, "audit", "mquake", hard_path)
    assert rc == 0
    assert {"tool", "version", "family", "inputs", "findings", "summary"} <= set(rep)
    assert rep["tool"] == "curate"
    assert rep["version"] == curate.__version__
    assert rep["family"] == "knowledge-editing"
    assert rep["inputs"] == [
        {
            "path": str(hard_path),
            "sha256": hashlib.sha256(hard_path.read_bytes()).hexdigest(),
            "records": 429,
        }
    ]
    required = {"rule", "category", "severity", "input", "row", "record", "field", "message"}
    required |= {"details"}
    assert rep["findings"]
    records = [c["case_id"] for c in json.loads(hard_path.read_text(encoding="utf-8"))]
    for f in rep["findings"]:
        assert required <= set(f) <= required | {"fix"}
        assert f["input"] == str(hard_path)
        assert str(records[f["row"]]) == f["record"]  # row: the record's index in its file
        assert f["rule"] in KE_CODES
        assert f["severity"] == RULES[f["rule"]].severity.value
        assert f["category"] == RULES[f["rule"]].category
        assert isinstance(f["details"], dict)
        assert isinstance(f["record"], str) and f["message"]
    s = rep["summary"]
    assert s["records"] == 429
    assert s["findings"] == len(rep["findings"])
    assert sum(s["by_severity"].values()) == len(rep["findings"])
    assert s["records_with_findings"] == len({f["record"] for f in rep["findings"]})
    for code, n in s["by_rule"].items():
        assert n["findings"] == sum(1 for f in rep["findings"] if f["rule"] == code)


def test_output_file_gets_the_report(tmp_path, capsys):
    rc, stdout_report, _ = run(capsys, "audit", "mquake", SAMPLE, "--format", "json")
    target = tmp_path / "reports" / "audit.json"
    rc2, out, err = run(capsys, "audit", "mquake", SAMPLE, "--format", "json", "--output", target)
    assert rc == rc2 == 0
    assert out == ""
    assert str(target) in err
    on_disk = target.read_text(encoding="utf-8")
    # the same report as on stdout, byte for byte (no timings in reports)
    assert on_disk == stdout_report
    assert sorted(p.name for p in target.parent.iterdir()) == ["audit.json"]


def test_output_file_untouched_when_run_fails(tmp_path, capsys):
    target = tmp_path / "audit.json"
    rc, _out, _err = run(capsys, "audit", "mquake", tmp_path / "missing.json", "--output", target)
    assert rc == 2
    assert not target.exists()
    target.write_text("previous report")
    rc, _, _ = run(capsys, "audit", "mquake", SAMPLE, "--select", "KE999", "--output", target)
    assert rc == 2
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.json"]


# --------------------------------------------------------------------------- rule selection


def test_select_and_ignore(hard_path, capsys):
    rc, rep = run_json(capsys, "audit", "mquake", hard_path, "--select", "KE4", "--ignore", "KE402")
    assert rc == 0
    assert set(rep["summary"]["rules_run"]) == {"KE401"}
    assert {f["rule"] for f in rep["findings"]} == {"KE401"}
    assert len(rep["findings"]) == 5
    # a category and a comma list select the same way
    rc, rep = run_json(capsys, "audit", "mquake", hard_path, "--select", "duplicate,KE110")
    assert set(rep["summary"]["rules_run"]) == {"KE110", "KE401", "KE402"}
    assert {f["rule"] for f in rep["findings"]} <= {"KE110", "KE401", "KE402"}
    assert "KE110" in {f["rule"] for f in rep["findings"]}


@pytest.mark.parametrize("opt", ["--select", "--ignore"])
def test_unknown_selector_exit_2(capsys, opt):
    rc, out, err = run(capsys, "audit", "mquake", SAMPLE, opt, "KE999")
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and "KE999" in err and "Traceback" not in err


def test_markdown_report_has_a_table(capsys):
    rc, out, _ = run(capsys, "audit", "mquake", SAMPLE, "--format", "markdown")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "## Audit: knowledge-editing"
    i = lines.index("| rule | name | category | severity | findings | records |")
    assert lines[i + 1] == "|---|---|---|---|---:|---:|"
    rows = [ln for ln in lines[i + 2 :] if ln.startswith("| KE")]
    assert {r.split(" | ")[0][2:] for r in rows} == {"KE110", "KE302", "KE401"}
    assert "| KE401 | duplicate-case | duplicate | warning | 3 | 3 |" in rows


# --------------------------------------------------------------------------- validate


def test_validate_good_data(capsys):
    rc, out, _err = run(capsys, "validate", "mquake", SAMPLE)
    assert rc == 0
    assert "No findings" in out
    rc, rep = run_json(capsys, "validate", "mquake", SAMPLE)
    assert rc == 0 and rep["findings"] == []
    assert set(rep["summary"]["rules_run"]) == {"KE001", "KE002", "KE003", "KE203"}


def test_validate_corrupted_records(tmp_path, capsys):
    recs = json.loads(SAMPLE.read_text(encoding="utf-8"))
    bad = copy.deepcopy(recs)
    bad[3]["answer"] = 7
    bad[5]["orig"]["triples"][1] = bad[5]["orig"]["triples"][1][:2]
    p = tmp_path / "corrupt.json"
    p.write_text(json.dumps(bad), encoding="utf-8")
    id3, id5 = str(recs[3]["case_id"]), str(recs[5]["case_id"])

    rc, out, _err = run(capsys, "validate", "mquake", p)
    assert rc == 1
    assert f"record {id3}, answer" in out
    assert f"record {id5}, orig.triples[1]" in out

    rc, rep = run_json(capsys, "validate", "mquake", p)
    assert rc == 1
    got = {(f["rule"], f["record"], f["field"]) for f in rep["findings"]}
    assert got == {("KE001", id3, "answer"), ("KE001", id5, "orig.triples[1]")}
    by_rec = {f["record"]: f for f in rep["findings"]}
    assert by_rec[id3]["details"]["input"] == 7
    assert by_rec[id3]["details"]["position"] == "record index 3"
    assert by_rec[id5]["details"]["position"] == "record index 5"


def test_validate_jsonl_names_the_line(tmp_path, capsys):
    recs = json.loads(SAMPLE.read_text(encoding="utf-8"))[:4]
    recs[2]["requested_rewrite"][0]["target_new"]["id"] = ""
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    rc, rep = run_json(capsys, "validate", "mquake", p)
    assert rc == 1
    [f] = rep["findings"]
    assert f["record"] == str(recs[2]["case_id"])
    assert f["field"] == "requested_rewrite[0].target_new.id"
    assert f["details"]["position"] == "line 3"


def test_validate_duplicate_case_id(tmp_path, capsys):
    recs = json.loads(SAMPLE.read_text(encoding="utf-8"))[:5]
    recs[4]["case_id"] = recs[1]["case_id"]
    p = tmp_path / "dupid.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    rc, rep = run_json(capsys, "validate", "mquake", p)
    assert rc == 1
    assert [(f["rule"], f["record"], f["field"]) for f in rep["findings"]] == [
        ("KE002", str(recs[1]["case_id"]), "case_id")
    ]


# --------------------------------------------------------------------------- rules / version


def test_rules_lists_every_code(capsys):
    assert [r.code for r in RULES] == KE_CODES
    rc, out, _ = run(capsys, "rules")
    assert rc == 0
    listed = [ln.split()[0] for ln in out.splitlines() if ln.startswith("KE")]
    assert listed == KE_CODES
    for r in RULES:
        assert f"{r.code}  {r.name}  [knowledge-editing; {r.category}; {r.severity.value}" in out
        assert r.summary.replace("``", "`") in out  # reStructuredText's ``code`` as `code`


def test_rules_json(capsys):
    rc, out, _ = run(capsys, "rules", "knowledge-editing", "--format", "json")
    assert rc == 0
    rules = json.loads(out)
    assert [r["code"] for r in rules] == KE_CODES
    for r in rules:
        assert {
            "code",
            "name",
            "family",
            "category",
            "severity",
            "fixable",
            "summary",
            "doc",
        } <= set(r)
        assert r["family"] == "knowledge-editing"
        assert len(r["doc"]) > len(r["summary"]) > 20
        assert r["doc"].replace("\n", " ").startswith(r["summary"])
    fixable = {r["code"] for r in rules if r["fixable"]}
    # alias cleanup, duplicate drop, and withheld edits for contaminated cases (curate fix)
    assert fixable == {"KE110", "KE201", "KE202", "KE203", "KE401"}
    rc, out2, _ = run(capsys, "rules", "mquake", "--format", "json")
    assert json.loads(out2) == rules


def test_rules_code_prints_full_doc(capsys):
    rc, out, _ = run(capsys, "rules", "--code", "KE201")
    assert rc == 0
    doc = RULES["KE201"].doc
    assert doc.replace("``", "`") in out  # as the terminal shows it (`code`, not ``code``)
    # the whole doc, not only the summary line
    assert "MQuAKE-Remastered's protocol withholds" in out
    assert "curate fix" in out
    assert "KE202" not in out
    rc, out_lower, _ = run(capsys, "rules", "--code", "ke201")
    assert out_lower == out
    # `curate rules KE201`, as `ruff rule E501`: the code in place of a family
    rc, bare, _ = run(capsys, "rules", "KE201")
    assert rc == 0 and bare == out


def test_rules_unknown_code_exit_2(capsys):
    rc, _out, err = run(capsys, "rules", "--code", "KE999")
    assert rc == 2 and err.count("\n") == 1 and "KE999" in err
    rc, _out, err = run(capsys, "rules", "KE999")
    assert rc == 2 and err.count("\n") == 1 and "no rule 'KE999'" in err


def test_version(capsys):
    rc, out, _err = run(capsys, "--version")
    assert rc == 0
    assert out == f"curate {curate.__version__}\n"


# --------------------------------------------------------------------------- determinism


def test_findings_are_deterministic(hard_path, tmp_path, capsys):
    args = ("audit", "mquake", hard_path, "--edit-set", "random:100")
    _, a = run_json(capsys, *args)
    _, b = run_json(capsys, *args)
    assert a["findings"] == b["findings"]  # same order, same details
    assert a["findings"]


def _normalised(report: dict) -> set[tuple]:
    """Finding keys, with "which of two equal cases is first" rules made order-free."""
    out = set()
    for f in report["findings"]:
        if f["rule"] == "KE401":
            out.add(("KE401", frozenset({f["record"], f["details"]["duplicate_of"]})))
        else:
            out.add((f["rule"], f["record"], f["field"], f["message"]))
    return out


def test_findings_do_not_depend_on_file_order(hard_path, tmp_path, capsys):
    recs = json.loads(hard_path.read_text(encoding="utf-8"))
    shuffled = recs[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != recs
    p = tmp_path / "shuffled.json"
    p.write_text(json.dumps(shuffled), encoding="utf-8")
    _, a = run_json(capsys, "audit", "mquake", hard_path, "--edit-set", "all")
    _, b = run_json(capsys, "audit", "mquake", p, "--edit-set", "all")
    assert len(a["findings"]) == len(b["findings"]) > 0
    assert _normalised(a) == _normalised(b)
    # apart from which member of a duplicate pair comes first, the keys agree exactly
    non_dup = {k for k in keyset(a) if k[0] != "KE401"}
    assert non_dup == {k for k in keyset(b) if k[0] != "KE401"}
    # and the report is sorted by file position, whatever the order
    pos = {str(r["case_id"]): i for i, r in enumerate(shuffled)}
    rows = [pos[f["record"]] for f in b["findings"]]
    assert rows == sorted(rows)


@pytest.mark.parametrize("verb", ["validate", "audit", "fix", "export"])
@pytest.mark.parametrize("family", ["mquake", "glycan"])
def test_every_family_command_has_help(verb, family, capsys):
    """``--help`` renders (rich once read ``[/PATH]`` in a help text as markup: exit 3)."""
    from curate.cli.main import main

    assert main([verb, family, "--help"]) == 0
    out = capsys.readouterr().out
    assert "PATHS" in out
    if verb == "fix":
        assert "--unsafe-fixes" in out and "--select" in out


def test_usage_errors_are_one_line(capsys):
    from curate.cli.main import main

    assert main(["fix", "mquake", "x.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["curate: error: Missing option '--out'. (see `curate fix mquake --help`)"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["KE2"], "KE201  contaminated-edited-case"),  # a prefix lists its rules
        (["glycan", "--code", "KE201"], "no rule KE201 in glycan: it is knowledge-editing's"),
        (["NOPE"], "unknown family 'nope'; known: "),
        (["XX999"], "no rule 'XX999' (a rule's code, such as KE201, or the start of codes"),
    ],
)
def test_rules_say_what_a_code_or_name_matches(args, expected, capsys) -> None:
    rc = main(["rules", *args])
    out, err = capsys.readouterr()
    if rc == 0:
        assert expected in out and "KE301" not in out and "GL" not in out
    else:
        assert rc == 2 and expected in err and err.count("\n") == 1
