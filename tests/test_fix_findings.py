"""``curate fix`` driven by findings, on real MQuAKE-hard: what is selected is what changes, the
fixed folder re-audits clean for the fixed rules, and both reports are written."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

import curate
from curate.cli.main import main

FIXED_RULES = {"KE110", "KE201", "KE202", "KE401"}


def _changelog(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / "changelog.jsonl").read_text().splitlines()]


#: What each edit set finds on MQuAKE-hard (no edited case of it is contaminated, KE201).
EXPECTED = {"random:100": {"KE110", "KE202", "KE401"}, "all": {"KE110", "KE401"}}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def fixed_hard(request, hard_path, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("fixfind")
    out = base / "out"
    done = curate.fix("mquake", hard_path, out, edit_set=request.param, unsafe_fixes=True)
    return {"out": out, "done": done, "edit_set": request.param}


def test_fixed_folder_reaudits_clean_for_the_fixed_rules(fixed_hard, hard_path):
    out, done = fixed_hard["out"], fixed_hard["done"]
    before = done.report.findings
    assert set(before["rule"].unique()) & FIXED_RULES == EXPECTED[fixed_hard["edit_set"]]
    # the same options, as a user would re-run them; and the default options
    for options in ({"edit_set": fixed_hard["edit_set"]}, {}):
        again = curate.audit("mquake", out, **options)
        left = set(again.findings["rule"].unique())
        assert not left & FIXED_RULES, (options, left & FIXED_RULES)
        assert again.stats["edit_set"]["edited_cases"] == done.fix.summary["edited_cases"]
        assert "curate fix" in again.stats["edit_set"]["from"]
        assert again.records == done.rows
    # audit.after.json is that re-audit: the same findings as auditing the folder
    after = json.loads((out / "audit.after.json").read_text())
    again = curate.audit("mquake", out)
    assert [(f["rule"], f["record"], f["field"]) for f in after["findings"]] == [
        (r["rule"], r["record"], r["field"]) for r in again.findings.iter_rows(named=True)
    ]
    before_json = json.loads((out / "audit.before.json").read_text())
    assert before_json["inputs"][0]["path"] == str(hard_path)
    assert len(before_json["findings"]) == before.height
    card = (out / "README.md").read_text()
    assert "audit.after.json" in card and "audit.before.json" in card
    assert not (out / "audit.json").exists()
    # the re-audit names what it read as audit.after.json does, from the folder (it read the
    # folder itself: "."), not from where the command ran ("..")
    (where,) = {i["path"] for i in after["inputs"]}
    section = card[card.index("This is the re-audit") :]
    assert f"- `{where}`: {after['inputs'][0]['records']} records" in section


def test_every_change_names_a_finding_of_the_report(fixed_hard):
    out, done = fixed_hard["out"], fixed_hard["done"]
    f = done.report.findings
    known = {(r["rule"], r["record"], r["field"]) for r in f.iter_rows(named=True)}
    changes = _changelog(out)
    assert changes
    for c in changes:
        ref = c["finding"]
        assert (ref["rule"], ref["record"], ref["field"]) in known
        assert c["rule"] == ref["rule"]
    # the summary counts the findings each rule's fixes applied
    applied = done.fix.summary["fixed"]
    assert set(applied) == EXPECTED[fixed_hard["edit_set"]]


def test_dropped_edited_cases_are_named(fixed_hard):
    done = fixed_hard["done"]
    dropped = done.fix.summary["edited_cases_dropped"]
    drops = {c["record"] for c in _changelog(fixed_hard["out"]) if c["rule"] == "KE401"}
    edit_set = json.loads((fixed_hard["out"] / "edit_set.json").read_text())
    assert {d["case"] for d in dropped} <= drops
    assert all(d["rule"] == "KE401" and "dropped" in d["reason"] for d in dropped)
    # the edit set that remains plus the edited cases dropped is the edit set fixed for
    edited = done.report.stats["edit_set"]["edited_cases"]
    assert len(edit_set) + len(dropped) == edited
    if fixed_hard["edit_set"] == "all":
        assert dropped  # every duplicate dropped was an edited case


def test_select_applies_only_the_chosen_rules(hard_path, tmp_path):
    out = tmp_path / "ke2"
    done = curate.fix("mquake", hard_path, out, edit_set="random:100", select=["KE2"])
    rules = {c["rule"] for c in _changelog(out)}
    assert rules == {"KE201", "KE202"} or rules == {"KE202"}
    assert done.fix.summary["dropped"] == 0  # KE401 not selected: no duplicate dropped
    assert done.rows == done.report.records
    # not fixed, so still found after
    assert "KE401" in set(done.fix.after.findings["rule"].unique())
    ignored = curate.fix("mquake", hard_path, edit_set="random:100", ignore=["KE110", "KE2"])
    assert {c.rule for c in ignored.fix.changelog} == {"KE401"}


def test_select_of_unfixable_rules_is_a_usage_error(hard_path, tmp_path, capsys):
    out = tmp_path / "never"
    rc = main(["fix", "mquake", str(hard_path), "--out", str(out), "--select", "KE302"])
    err = capsys.readouterr().err
    assert rc == 2 and "no fixable rule" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_rules_show_fix_availability_and_safety(capsys):
    assert main(["rules", "--format", "json"]) == 0
    rules = {r["code"]: r for r in json.loads(capsys.readouterr().out)}
    assert {c for c, r in rules.items() if r["fix"] != "never"} >= FIXED_RULES
    assert rules["KE201"]["fix"] == "always" and rules["KE201"]["fix_safety"] == "safe"
    assert rules["KE302"]["fix"] == "never" and rules["KE302"]["fix_safety"] is None
    assert main(["rules", "knowledge-editing"]) == 0
    text = capsys.readouterr().out
    # an edited case's drop is unsafe: the header says some are (it said "safe" alone while
    # fix held those back, found by a new-user review)
    header = (
        "KE401  duplicate-case  [knowledge-editing; duplicate; warning; "
        "fix: always (safe, some unsafe)]"
    )
    assert header in text
    assert rules["KE401"]["some_unsafe"] is True and rules["KE201"]["some_unsafe"] is False


def test_glycan_select_changes_only_what_it_selects(glycan_sample_csv, tmp_path):
    """``--select GL2`` on the glycan sample changes label cells and nothing else (no row
    dropped or moved, no glycan rewritten), and the folder re-audits clean of GL2xx."""
    out = tmp_path / "g"
    done = curate.fix("glycan", glycan_sample_csv, out, select=["GL2"])
    before = done.report.findings
    labels = {"Species", "Genus", "Family", "Order", "Class", "Phylum", "Kingdom", "Domain"}
    known = {(r["rule"], r["record"], r["field"]) for r in before.iter_rows(named=True)}
    fixed = [c for c in _changelog(out) if c["pass"] > 0]  # pass 0: invalid rows left out
    assert fixed and {c["rule"] for c in fixed} == {"GL201", "GL203"}
    for c in fixed:
        assert c["field"] in labels and c["old"] != c["new"]
        ref = c["finding"]
        assert (ref["rule"], ref["record"], ref["field"]) in known
    # only the invalid row is gone; everything else is where it was
    assert done.fix.summary["dropped"] == 0 and done.fix.summary["rows_moved_between_splits"] == 0
    invalid = before.filter(pl.col("rule") == "GL101").height
    assert invalid == done.fix.summary["invalid_dropped"] == 1
    assert done.rows == done.report.records - invalid
    assert set(done.fix.summary["fixed"]) == {"GL201", "GL203"}
    assert not set(curate.audit("glycan", out).findings["rule"].to_list()) & {
        "GL201",
        "GL202",
        "GL203",
    }
    # GL3/GL4 were not selected: still found
    left = set(done.fix.after.findings["rule"].to_list())
    assert {"GL301", "GL303", "GL402"} <= left


def test_glycan_rules_show_fix_availability_and_safety(capsys):
    assert main(["rules", "glycan", "--format", "json"]) == 0
    rules = {r["code"]: r for r in json.loads(capsys.readouterr().out)}
    fixes = {c: (r["fix"], r["fix_safety"]) for c, r in rules.items() if r["fixable"]}
    assert fixes == {
        "GL201": ("always", "safe"),
        "GL202": ("always", "safe"),
        "GL203": ("sometimes", "safe"),
        "GL301": ("sometimes", "unsafe"),
        "GL303": ("always", "safe"),
        "GL304": ("always", "safe"),
        "GL305": ("sometimes", "unsafe"),
        "GL401": ("always", "unsafe"),
        "GL402": ("always", "unsafe"),
        "GL601": ("always", "unsafe"),
        "GL602": ("always", "safe"),
        "GL603": ("always", "unsafe"),
    }
    assert main(["rules", "glycan"]) == 0
    text = capsys.readouterr().out
    assert "GL401  split-leakage-same-label  [glycan; leakage; error; fix: always (unsafe)]" in text


def test_fixing_in_two_steps_leaves_no_dangling_withheld_edit(hard_path, tmp_path):
    """Withhold first, drop duplicates later: the withheld edits of a dropped case are found
    (KE203) and removed by the next fix, so both routes end with consistent data."""
    first = tmp_path / "withheld"
    curate.fix("mquake", hard_path, first, edit_set="random:20:0", select=["KE2"])
    second = tmp_path / "deduplicated"
    done = curate.fix("mquake", first, second, select=["KE401"], unsafe_fixes=True)
    dropped = {c.record for c in done.fix.changelog if c.rule == "KE401"}
    assert "9203" in dropped  # an edited case others withheld
    gone = curate.audit("mquake", second, select=["KE203"]).findings
    assert gone.height and "9203" in gone["message"].str.extract(r"case (\S+)$").to_list()
    third = tmp_path / "clean"
    curate.fix("mquake", second, third, select=["KE203"])
    assert curate.audit("mquake", third, select=["KE2"]).findings.height == 0
    rows = [r for f in sorted(third.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()]
    referred = {str(w["case_id"]) for r in rows for w in r["withheld_edits"]}
    assert referred and not referred & dropped


def test_an_edited_duplicate_is_dropped_only_with_unsafe_fixes(hard_path, tmp_path):
    safe = curate.fix("mquake", hard_path, edit_set="random:20:0")
    assert safe.fix.summary["unsafe_fixes_available"] == {"KE401": 1}
    assert safe.fix.summary["edited_cases_dropped"] == []
    unsafe = curate.fix("mquake", hard_path, edit_set="random:20:0", unsafe_fixes=True)
    (case,) = unsafe.fix.summary["edited_cases_dropped"]
    assert case["case"] == "9203" and case["rule"] == "KE401" and "9186" in case["reason"]


def test_one_file_given_twice_is_refused(hard_path, capsys):
    """Read twice, every record would be its own duplicate (KE002/KE401 on all of them)."""
    twice = str(hard_path.parent / ".." / hard_path.parent.name / hard_path.name)
    assert main(["audit", "mquake", str(hard_path), twice]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "given twice" in line


def test_fixed_folder_loads_with_datasets_and_mlcroissant(fixed_hard):
    import datasets
    import mlcroissant as mlc

    out, done = fixed_hard["out"], fixed_hard["done"]
    ds = datasets.load_dataset(str(out))
    assert sum(len(s) for s in ds.values()) == done.rows
    assert "withheld_edits" in ds["train"].features and "edited" in ds["train"].features
    cr = mlc.Dataset(jsonld=str(out / "croissant.json"))
    records = list(cr.records(record_set="default"))
    assert len(records) == done.rows
    assert {r["default/split"].decode() for r in records} == set(ds)


def test_glycan_rows_without_a_split_are_audited_where_they_are_published(tmp_path):
    """An empty split cell is published in train: the audit counts it there, so the leak it
    makes is found and fixed, not created by publishing."""
    src = tmp_path / "ns.csv"
    src.write_text(
        "glycan,immunogenicity,split\nGal(b1-4)Glc,1,\nGal(b1-4)Glc,1,test\n"
        "Man(a1-3)Man,0,train\nGlc(a1-4)Glc,0,test\nGlc(a1-6)Glc,0,train\n",
        encoding="utf-8",
    )
    report = curate.audit("glycan", src, select=["GL4"])
    assert report.findings["rule"].to_list() == ["GL401"]
    out = tmp_path / "fixed"
    curate.fix("glycan", src, out, unsafe_fixes=True)
    assert curate.audit("glycan", out, select=["GL4"]).findings.height == 0


def test_glycan_fixed_folder_reads_with_the_same_column_options(tmp_path):
    """``--column split=fold`` names the input's split column; the published folder has its
    splits as files, and the same options still read it."""
    src = tmp_path / "imm.csv"
    src.write_text(
        "id,seq,immu,fold\n1,Gal(b1-4)Glc,1,train\n2,Man(a1-3)Man,0,test\n"
        "3,Gal(b1-4)Glc,1,test\n4,Glc(a1-4)Glc,0,train\n5,Glc(a1-6)Glc,1,validation\n",
        encoding="utf-8",
    )
    opts = {
        "task": "immunogenicity",
        "columns": {"glycan": "seq", "label": "immu", "split": "fold"},
    }
    out = tmp_path / "fixed"
    done = curate.fix("glycan", src, out, unsafe_fixes=True, **opts)
    again = curate.audit("glycan", out, **opts)
    assert again.records == done.rows and again.findings.height == 0
