"""``curate diff``: the record-level diff of two versions of a dataset.

The central check (issue 34): the diff of each family's shipped sample and its ``curate fix``
output equals the fix's own changelog, replayed — every record the changelog drops is removed,
every field it sets ends at its last value, every split move is a move, and nothing else
differs. The changelog and the diff are made by different code (the fix engine's edits; the
diff's pairing of two files read back), so agreeing is evidence for both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import curate
from curate.cli.main import main
from curate.core.diff import KINDS, DiffSpec, diff_frames, nested_changes
from curate.reports.diff import summary_line

SAMPLES = Path(curate.__file__).parent / "data" / "samples"


def replay(changelog: Path, members: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """What the changelog says changed: removed records, per record the fields set (first old,
    last new; a field set back to where it was is no change) and split moves.

    ``members``: for learning histories, the histories (``g/h``) of each task group ``g``: a
    group's renumbering (record ``g``, field ``group``) changes each of its histories."""
    removed: set[str] = set()
    fields: dict[tuple[str, str], list[Any]] = {}
    splits: dict[str, list[Any]] = {}
    entries = [json.loads(line) for line in changelog.read_text().splitlines()]
    for e in entries:
        if members and e["field"] == "group" and str(e["record"]) in members:
            entries += [{**e, "record": h} for h in members[str(e["record"])]]
            e["field"] = None  # the group's own line: said by its histories' lines
    for e in entries:
        rec, field = str(e["record"]), e["field"]
        if field is None:
            continue
        if field == "" and e["new"] is None:
            removed.add(rec)
        elif field == "split":
            splits.setdefault(rec, [e["old"], e["new"]])[1] = e["new"]
        else:
            fields.setdefault((rec, field), [e["old"], e["new"]])[1] = e["new"]
    return {
        "removed": removed,
        "fields": {
            k: (a, b)
            for k, (a, b) in fields.items()
            if k[0] not in removed and _norm(a) != _norm(b)
        },
        "moved": {r: (a, b) for r, (a, b) in splits.items() if r not in removed and a != b},
    }


def observed(d: Any) -> dict[str, Any]:
    """The same three things, read off a :class:`~curate.core.diff.Diff`."""
    out: dict[str, Any] = {"removed": set(), "fields": {}, "moved": {}}
    for c in d.changes:
        if c.kind == "removed":
            out["removed"].add(c.record)
            continue
        assert c.kind != "added", c.to_json()
        for f in c.fields:
            out["fields"][(c.record, f.field)] = (f.old, f.new)
        if c.new_split != c.split:
            out["moved"][c.record] = (c.split, c.new_split)
    return out


def _norm(v: Any) -> Any:
    """A value as both sides can hold it: text from a CSV against a number from parquet."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int | float):
        return str(int(v)) if float(v).is_integer() else str(v)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def _same(replayed: dict[str, Any], seen: dict[str, Any]) -> None:
    assert seen["removed"] == replayed["removed"]
    assert seen["moved"] == replayed["moved"]
    assert set(seen["fields"]) == set(replayed["fields"])
    for k, (a, b) in replayed["fields"].items():
        old, new = seen["fields"][k]
        assert (_norm(old), _norm(new)) == (_norm(a), _norm(b)), k


def _deepfake(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    """The ILLUSION-like manifest with planted defects (no media: ``--no-files``)."""
    from deepfake_data import defective_manifest

    path = tmp_path / "manifest.csv"
    defective_manifest().frame().write_csv(path)
    return path, ["--no-files"], {"no_files": True}


def _icrl(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    """A learning-history file with one invalid history, one invalid task group and one
    history copying another (the drops RL205, RL103 and RL403 make; RL101 renumbers)."""
    import h5py
    import numpy as np
    from icrl_data import write_file

    (tmp_path / "in").mkdir()
    path = write_file(tmp_path / "in" / "histories.hdf5", tasks=4)
    with h5py.File(path, "r+") as f:
        f["0"]["rewards"][2, 50] = np.float16("nan")
        del f["1"]["dones"]
        for name in ("states", "actions", "rewards", "dones", "expert_actions"):
            f["2"][name][1] = f["0"][name][0]
    return path, [], {}


def _members(path: Path) -> dict[str, list[str]]:
    """``group → [group/0, group/1, ...]``, read from the HDF5 file itself."""
    import h5py

    with h5py.File(path) as f:
        return {
            g: [f"{g}/{h}" for h in range(f[g]["rewards"].shape[0])]
            for g in f
            if isinstance(f[g], h5py.Group) and "rewards" in f[g]
        }


def _table(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    """MusicCaps' real manifest as a plain table with an id, two rows repeated under new ids
    and one leaking across splits (TB-rule drops and moves)."""
    df = pl.read_csv(SAMPLES / "musiccaps_manifest.csv", infer_schema_length=0)
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) % 5 == 0)
        .then(pl.lit("test"))
        .otherwise(pl.lit("train"))
        .alias("split")
    )
    dup = df.head(2).with_columns(pl.format("{}-copy", "ytid").alias("ytid"))
    path = tmp_path / "table.csv"
    pl.concat([df, dup]).write_csv(path)
    opts = ["--id", "ytid", "--split", "split", "--key", "start_s,end_s,author_id"]
    return path, opts, {"id": "ytid", "split": "split", "key": ["start_s", "end_s", "author_id"]}


def _sample(name: str, *extra: str) -> Any:
    return lambda _: (SAMPLES / name, list(extra), _kw(extra))


def _kw(extra: tuple[str, ...]) -> dict[str, Any]:
    return {"label_model": "none"} if "--label-model" in extra else {}


FIXES = {
    "mquake": _sample("mquake_sample.json"),
    "glycan": _sample("glycan_taxonomy_sample.csv", "--label-model", "none"),
    "deepfake": _deepfake,
    "icrl": _icrl,
    "table": _table,
}


@pytest.mark.parametrize("family", sorted(FIXES))
def test_diff_of_a_fix_equals_its_changelog(family: str, tmp_path: Path) -> None:
    src, extra, options = FIXES[family](tmp_path)
    out = tmp_path / "fixed"
    rc = main(["fix", family, str(src), "--out", str(out), "--unsafe-fixes", *extra])
    assert rc == 0
    expected = replay(out / "changelog.jsonl", _members(src) if family == "icrl" else None)
    assert expected["removed"] or expected["fields"], "a fix that changed nothing tests nothing"
    d = curate.diff(family, src, out, **options)
    _same(expected, observed(d))
    counts = d.counts()
    assert counts["removed"] == len(expected["removed"])
    assert counts["unchanged"] + sum(1 for c in d.changes if c.kind != "added") == d.records_old
    # the fix's own diff (from its frames in memory) is the diff of the files read back
    written = json.loads((out / "diff.json").read_text())
    assert written["counts"] == counts
    assert sorted((c["kind"], c["record"]) for c in written["changes"]) == sorted(
        (c.kind, c.record) for c in d.changes
    )
    card = (out / "README.md").read_text()
    assert "## Changes from the source" in card
    assert f"Compared record by record with the input: {summary_line(d)}." in card


def test_mquake_pairs_a_re_keyed_case(tmp_path: Path) -> None:
    """A case published under a new id, one alias edited: re-keyed and changed (paired by its
    chain and edits), not one case removed and another added."""
    cases = json.loads((SAMPLES / "mquake_sample.json").read_text())
    old = tmp_path / "old.json"
    old.write_text(json.dumps(cases))
    moved = dict(cases[3])
    moved["case_id"] = 990001
    moved["new_answer_alias"] = [*moved["new_answer_alias"], "an extra alias"]
    new = tmp_path / "new.json"
    new.write_text(json.dumps([*cases[:3], moved, *cases[4:]]))
    d = curate.diff("mquake", old, new)
    assert len(d.changes) == 1
    c = d.changes[0]
    assert (c.kind, c.record, c.new_record) == ("rekeyed", str(cases[3]["case_id"]), "990001")
    assert [f.field for f in c.fields] == ["new_answer_alias"]
    (path,) = c.fields[0].paths
    assert path[1:] == (None, "an extra alias")
    assert path[0] == f"new_answer_alias[{len(cases[3]['new_answer_alias'])}]"
    assert d.counts()["rekeyed"] == 1 and d.counts()["changed"] == 1


def test_identical_versions_differ_in_nothing() -> None:
    src = SAMPLES / "mquake_sample.json"
    d = curate.diff("mquake", src, src)
    assert d.identical and d.counts()["unchanged"] == d.records_old == d.records_new


# --------------------------------------------------------------------------- the engine itself


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return (
        pl.DataFrame(rows)
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("__row"),
            pl.col("id").cast(pl.String).alias("__record"),
            pl.col("split").alias("__split"),
        )
        .drop("split")
    )


def test_positional_ids_pair_by_content_then_key() -> None:
    """Without stable ids (row numbers), dropping the first row must not shift every other
    row onto its neighbour: identical rows pair first, then rows of the same key."""
    old = _frame(
        [
            {"id": 0, "glycan": "A", "label": "x", "split": "train"},
            {"id": 1, "glycan": "B", "label": "y", "split": "train"},
            {"id": 2, "glycan": "C", "label": "z", "split": "test"},
        ]
    )
    new = _frame(
        [
            {"id": 0, "glycan": "B", "label": "y", "split": "train"},
            {"id": 1, "glycan": "C", "label": "q", "split": "train"},
        ]
    ).drop("id")
    d = diff_frames(old.drop("id"), new, DiffSpec(stable_ids=False, content_key=("glycan",)))
    kinds = {(c.kind, c.record) for c in d.changes}
    assert kinds == {("removed", "0"), ("changed", "2")}
    (changed,) = [c for c in d.changes if c.kind == "changed"]
    assert [(f.field, f.old, f.new) for f in changed.fields] == [("label", "z", "q")]
    assert (changed.split, changed.new_split) == ("test", "train")
    assert d.counts() == {
        "added": 0,
        "removed": 1,
        "changed": 1,
        "moved": 1,
        "rekeyed": 0,
        "unchanged": 1,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("xyz"), inner),
    max_leaves=12,
)


@given(json_values, json_values)
def test_nested_changes_are_empty_exactly_when_equal(a: Any, b: Any) -> None:
    """The paths are empty iff the values are equal; a path with the same value on both sides
    is a null put in or taken out (None stands for the missing side too)."""
    paths = nested_changes("v", a, b)
    assert (paths == []) == (a == b)
    for path, old, new in paths:
        assert path.startswith("v")
        assert old != new or old is None


# --------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def mquake_fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("diff_cli") / "fixed"
    src = SAMPLES / "mquake_sample.json"
    assert main(["fix", "mquake", str(src), "--out", str(out), "--unsafe-fixes"]) == 0
    return out


def test_cli_exit_codes_follow_the_difference(mquake_fixed: Path, tmp_path: Path, capsys) -> None:
    src = str(SAMPLES / "mquake_sample.json")
    assert main(["diff", "mquake", src, src]) == 0
    assert "identical: 52 records" in capsys.readouterr().out
    assert main(["diff", "mquake", src, str(mquake_fixed)]) == 1
    text = capsys.readouterr().out
    assert "52 records → 49: 3 removed, 5 changed; 44 unchanged" in text
    assert "answer_alias[2]: 'en_US' → (none)" in text
    # only the kinds named fail the run: this remaster adds and moves nothing
    assert main(["diff", "mquake", src, str(mquake_fixed), "--fail-on", "added,moved"]) == 0
    assert main(["diff", "mquake", src, str(mquake_fixed), "--fail-on", "never"]) == 0
    assert main(["diff", "mquake", src, str(mquake_fixed), "--fail-on", "removed"]) == 1
    capsys.readouterr()
    assert main(["diff", "mquake", src, str(mquake_fixed), "--fail-on", "renamed"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fail-on: renamed is not one of" in err[0]
    assert main(["diff", "mquake", src, str(mquake_fixed), "--fail-on", "any,never"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "never cannot be combined with any, never" in err[0]
    assert main(["diff", "mquake", src, str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.json" in err[0]


def test_cli_formats(mquake_fixed: Path, tmp_path: Path, capsys) -> None:
    src = str(SAMPLES / "mquake_sample.json")
    js = tmp_path / "d.json"
    assert main(["diff", "mquake", src, str(mquake_fixed), "-f", "json", "-o", str(js)]) == 1
    obj = json.loads(js.read_text())
    assert obj["tool"] == "curate" and obj["counts"]["removed"] == 3
    assert obj["by_field"] == {"answer_alias": 4, "new_answer_alias": 1}
    removed = [c for c in obj["changes"] if c["kind"] == "removed"]
    assert {c["record"] for c in removed} == {"9203", "9204", "9209"}
    assert all(c["value"]["case_id"] == int(c["record"]) for c in removed)
    page = tmp_path / "d.html"
    assert main(["diff", "mquake", src, str(mquake_fixed), "-f", "html", "-o", str(page)]) == 1
    html = page.read_text()
    assert "<td class='old'><pre>en_US</pre></td>" in html and "changed 7437 (train)" in html
    md = tmp_path / "d.md"
    assert main(["diff", "mquake", src, str(mquake_fixed), "-f", "markdown", "-o", str(md)]) == 1
    assert "| train | 0 | 3 | 5 | 0 | 0 |" in md.read_text()
    # the report is never written over an input
    capsys.readouterr()
    assert main(["diff", "mquake", src, str(mquake_fixed), "-o", src]) == 2
    assert "input" in capsys.readouterr().err


@pytest.mark.parametrize("family", ["mquake", "glycan", "table", "deepfake"])
def test_an_export_differs_from_its_source_only_by_invalid_records(
    family: str, tmp_path: Path
) -> None:
    """What the export card says: every valid record published with its values."""
    src, extra, options = FIXES[family](tmp_path)
    extra = [x for x in extra if x not in ("--label-model", "none")]
    out = tmp_path / "exported"
    assert main(["export", family, str(src), "--out", str(out), *extra]) == 0
    opts = {k: v for k, v in options.items() if k != "label_model"}
    d = curate.diff(family, src, out, **opts)
    assert all(c.kind == "removed" and c.note for c in d.changes), [
        c.to_json() for c in d.changes if c.kind != "removed" or not c.note
    ]
    assert "## Changes from the source" in (out / "README.md").read_text()
    # the source, invalid records and all, is the same as itself (a CI gate on a dataset with
    # an invalid record must not see it removed in every run)
    same = curate.diff(family, src, src, **opts)
    assert same.identical and same.records_old == same.records_new, [
        c.to_json() for c in same.changes
    ]


def test_an_invalid_record_in_the_new_version_is_compared_not_dropped(tmp_path: Path) -> None:
    """Invalid in both versions: the same is unchanged, edited is changed (whole); invalid only
    in the new one is an addition noted as invalid; the counts hold every record of each. An
    invalid record is counted in its own split, not under "(none)"."""
    row = "{},{:064d},{},audio,{}\n"
    head = "sample_id,sha256,split,modality,label\n"
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    old.write_text(
        head
        + row.format("a", 1, "train", "maybe")
        + row.format("b", 2, "train", "real")
        + row.format("c", 3, "test", "neither")
        + row.format("e", 5, "validation", "unknown")
    )
    new.write_text(
        head
        + row.format("a", 1, "train", "maybe")
        + row.format("b", 2, "train", "real")
        + row.format("c", 3, "test", "nope")
        + row.format("d", 4, "test", "unsure")
    )
    d = curate.diff("deepfake", old, new)
    assert (d.records_old, d.records_new) == (4, 4)
    kinds = {c.record: (c.kind, c.note.split(": ")[0]) for c in d.changes}
    assert kinds == {
        "c": ("changed", "invalid in both"),
        "d": ("added", f"invalid in {new}"),
        "e": ("removed", "dropped"),
    }
    assert d.counts()["unchanged"] == 2
    assert d.by_split() == {
        "test": {**dict.fromkeys(KINDS, 0), "changed": 1, "added": 1},
        "validation": {**dict.fromkeys(KINDS, 0), "removed": 1},
    }


# --------------------------------------------------------------------------- curate check pins


def _pinned_repo(tmp_path: Path, expect: str) -> Path:
    """A dataset repository whose MQuAKE file is pinned to its published copy; the working
    copy has one alias edited (case 3) and the last case dropped."""
    cases = json.loads((SAMPLES / "mquake_sample.json").read_text())
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "mquake.json").write_text(json.dumps(cases))
    edited = [dict(c) for c in cases[:-1]]
    edited[3]["new_answer_alias"] = [*edited[3]["new_answer_alias"], "an edit in a data PR"]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mquake.json").write_text(json.dumps(edited))
    (tmp_path / "pyproject.toml").write_text(
        "[tool.curate]\n"
        'fail-on = "error"\n'
        "[[tool.curate.datasets]]\n"
        'name = "mquake"\n'
        'family = "knowledge-editing"\n'
        'paths = ["data/mquake.json"]\n'
        'select = ["KE0"]\n'
        'frozen = "published/mquake.json"\n' + expect
    )
    return tmp_path


def test_check_fails_a_pinned_dataset_that_changed(tmp_path: Path, monkeypatch, capsys) -> None:
    cases = json.loads((SAMPLES / "mquake_sample.json").read_text())
    monkeypatch.chdir(_pinned_repo(tmp_path, ""))
    assert main(["check", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    found = [f for d in out["datasets"] for f in d["findings"] if f["rule"] == "CK101"]
    by_record = {f["record"]: f for f in found}
    assert set(by_record) == {str(cases[3]["case_id"]), str(cases[-1]["case_id"])}
    assert "'an edit in a data PR'" in by_record[str(cases[3]["case_id"])]["message"]
    assert by_record[str(cases[-1]["case_id"])]["message"].startswith("removed since")
    assert main(["check", "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    rules = {r["id"] for run in sarif["runs"] for r in run["tool"]["driver"]["rules"]}
    assert "CK101" in rules


def test_check_allows_the_expected_kinds_of_change(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(_pinned_repo(tmp_path, 'expect = ["changed", "removed"]\n'))
    assert main(["check"]) == 0
    (tmp_path / "pyproject.toml").write_text(
        (tmp_path / "pyproject.toml").read_text().replace('"changed", "removed"', '"changed"')
    )
    assert main(["check"]) == 1
    assert "CK101" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text(
        (tmp_path / "pyproject.toml").read_text().replace('["changed"]', '["renamed"]')
    )
    assert main(["check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expect" in err[0]


def test_cli_ci_formats_name_each_changed_record(mquake_fixed: Path, capsys) -> None:
    """junit, github and sarif: one CK101 finding per record changed in a failing kind."""
    import xml.etree.ElementTree as ET

    src = str(SAMPLES / "mquake_sample.json")
    args = ["diff", "mquake", src, str(mquake_fixed), "--fail-on", "removed"]
    assert main([*args, "-f", "github"]) == 1
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("::error")]
    assert len(lines) == 3 and all("removed since the frozen version" in x for x in lines)
    # on the version checked, as every annotation of a check is on a file
    assert all(x.startswith(f"::error file={mquake_fixed},") for x in lines), lines
    assert main([*args, "-f", "junit"]) == 1
    suite = ET.fromstring(capsys.readouterr().out).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    assert main([*args, "-f", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"CK101"} and len(results) == 3
    assert main(["diff", "mquake", src, src, "-f", "junit"]) == 0


def test_audits_say_which_findings_the_remaster_took_away(mquake_fixed: Path, tmp_path) -> None:
    """``--audits``: the fix removed the duplicates (KE401) and repeated aliases (KE110) it
    was asked to fix, and brought no finding of its own."""
    src = str(SAMPLES / "mquake_sample.json")
    out = tmp_path / "d.json"
    assert (
        main(["diff", "mquake", src, str(mquake_fixed), "--audits", "-f", "json", "-o", str(out)])
        == 1
    )
    found = json.loads(out.read_text())["findings"]
    assert found["appeared"] == []
    gone: dict[str, int] = {}
    for f in found["gone"]:
        gone[f["rule"]] = gone.get(f["rule"], 0) + 1
    assert gone == {"KE110": 5, "KE401": 3}
    plain = tmp_path / "plain.json"
    assert main(["diff", "mquake", src, src, "-f", "json", "-o", str(plain)]) == 0
    assert "findings" not in json.loads(plain.read_text())


def test_mquake_parquet_versions_are_hashed_while_loading(tmp_path: Path, monkeypatch) -> None:
    """Parquet on both sides: each side's column hashes are taken in its load's own pass
    (:class:`~curate.core.diff.ColumnHashes`), the new side keeping the values of the records
    that may differ. The diff is the one the separate hashing pass gives, record for record."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import curate.core.diff as engine

    cases = json.loads((SAMPLES / "mquake_sample.json").read_text())
    old = tmp_path / "old.parquet"
    pq.write_table(pa.Table.from_pylist(cases), old, row_group_size=40)
    new_cases = [dict(c) for c in cases]
    new_cases[5]["new_answer_alias"] = [*new_cases[5]["new_answer_alias"], "one more"]
    new_cases[9]["case_id"] = 990009  # re-keyed
    gone = new_cases.pop(20)
    test_rows = [new_cases.pop(30)]  # moved to test
    folder = tmp_path / "new" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(new_cases), folder / "train-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(test_rows), folder / "test-00000-of-00001.parquet")

    made: list[Any] = []
    real = engine.ColumnHashes.prehashed
    monkeypatch.setattr(
        engine.ColumnHashes,
        "prehashed",
        lambda self, *a: made.append(real(self, *a)) or made[-1],
    )
    hashed = curate.diff("mquake", old, folder.parent)
    assert len(made) == 2 and made[1].kept is not None
    # the new side kept the re-keyed and changed cases' values, no unchanged one
    assert 2 <= made[1].kept.height <= 3, made[1].kept.height
    monkeypatch.setattr(engine.ColumnHashes, "add", lambda self, *a, **k: self.give_up())
    passed = curate.diff("mquake", old, folder.parent)
    assert len(made) == 2  # the second diff hashed in a pass of its own
    assert hashed.to_json() == passed.to_json()
    kinds = {c.record: c.kinds for c in hashed.changes}
    assert kinds[str(new_cases[5]["case_id"])] == ("changed",)
    assert kinds[str(cases[9]["case_id"])] == ("rekeyed",)
    assert kinds[str(gone["case_id"])] == ("removed",)
    assert kinds[str(test_rows[0]["case_id"])] == ("moved",)


def test_a_field_one_version_adds_changes_no_record(tmp_path: Path) -> None:
    """One case with a field more: the JSON reader infers the nested structs' fields in another
    order on that side (a struct hashes by position), which must not make every case
    "changed"; the field is a column added, a re-keyed case still pairs."""
    cases = json.loads((SAMPLES / "mquake_sample.json").read_text())
    new = [dict(c) for c in cases]
    new[0]["extra"] = "x"
    new[3]["case_id"] = 999999
    path = tmp_path / "new.json"
    path.write_text(json.dumps(new))
    d = curate.diff("mquake", SAMPLES / "mquake_sample.json", path)
    assert d.columns_added == ["extra"]
    assert [(c.kind, c.record, c.new_record) for c in d.changes] == [
        ("rekeyed", str(cases[3]["case_id"]), "999999")
    ]
    assert d.counts()["unchanged"] == len(cases) - 1


def test_another_familys_file_is_named_with_a_two_file_diff(capsys) -> None:
    """A diff given another family's file says what it looks like, and not a command that could
    not run (``curate diff knowledge-editing FILE``: a diff takes two files)."""
    old, new = SAMPLES / "glycan_taxonomy_sample.csv", SAMPLES / "mquake_sample.json"
    assert main(["diff", "glycan", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it looks like a MQuAKE" in err, err
    assert "(curate diff knowledge-editing OLD NEW, both of that family)" in err, err


@pytest.mark.parametrize("family", ["deepfake", "mquake"])
def test_a_diff_report_never_replaces_a_file_curate_did_not_write(
    family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deepfake manifest names its media, so the early check leaves "not curate's" to the
    data's: the diff, which never made that check, wrote its report over a hand-made file."""
    src = tmp_path / "manifest.csv"
    src.write_text(f"sample_id,sha256,split,modality,label\na,{1:064d},train,audio,real\n")
    if family == "mquake":
        src = SAMPLES / "mquake_sample.json"
    mine = tmp_path / "notes.txt"
    mine.write_text("my own notes\n")
    args = ["diff", family, str(src), str(src), "-o", str(mine)]
    assert main(args) == 2
    assert "not written by curate" in capsys.readouterr().err
    assert mine.read_text() == "my own notes\n"
    assert main([*args, "--overwrite"]) == 0
    assert "curate diff" in mine.read_text()


def test_markdown_shows_markup_in_values_as_written(tmp_path: Path) -> None:
    """A value gaining an HTML comment or Markdown emphasis: the PR comment (CommonMark with
    tables, as GitHub renders it) shows the characters, not their effect, so the change is
    visible; the per-field table still names the field."""
    from markdown_it import MarkdownIt

    from curate.reports.diff import render_markdown

    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    old.write_text("id,text,split\n1,hello,train\n2,<i>two</i>,test\n3,a_b,test\n")
    new.write_text("id,text,split\n1,hello<!-- -->,train\n2,<i>two</i> **x**,test\n3,a_b|c,test\n")
    d = curate.diff("table", old, new, id="id", split="split")
    shown = MarkdownIt("commonmark").enable("table").render(render_markdown(d))
    assert "hello&lt;!-- --&gt;" in shown
    assert "&lt;i&gt;two&lt;/i&gt; **x**" in shown
    assert "<strong>" not in shown and "<em>" not in shown and "<i>" not in shown
    assert "a_b|c" in shown  # one cell, the pipe as written


def test_an_id_in_two_splits_pairs_by_split_before_order(tmp_path: Path) -> None:
    """Id 1 is in train and in test (a copy across splits). Re-sorting the file changes
    nothing; editing the test copy is one change in test; moving the train copy to
    validation is one move. Pairing by file order alone paired the train copy with the test
    one: two phantom moves for a re-sort."""
    head = "id,text,label,split\n"
    rows = ["1,alpha,pos,train", "2,beta,neg,train", "1,alpha,pos,test", "3,gamma,neg,test"]
    old = tmp_path / "old.csv"
    old.write_text(head + "\n".join(rows) + "\n")

    def diff_to(*new_rows: str) -> curate.Diff:
        new = tmp_path / "new.csv"
        new.write_text(head + "\n".join(new_rows) + "\n")
        return curate.diff("table", old, new, id="id", split="split")

    assert diff_to(rows[1], rows[2], rows[0], rows[3]).identical
    edited = diff_to(rows[1], "1,alpha!,pos,test", rows[0], rows[3])
    assert [(c.kind, c.split, c.new_split) for c in edited.changes] == [("changed", "test", "test")]
    moved = diff_to("1,alpha,pos,validation", *rows[1:])
    assert [(c.kind, c.split, c.new_split) for c in moved.changes] == [
        ("moved", "train", "validation")
    ]


def test_the_summary_says_when_a_record_is_counted_twice(tmp_path: Path) -> None:
    """One record relabelled and moved to test: counted as changed and as moved, and the line
    says so, so that "1 changed, 1 moved" is not read as two records."""
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    old.write_text("id,text,label,split\n1,a,x,train\n2,b,y,train\n3,c,x,test\n")
    new.write_text("id,text,label,split\n1,a,y,test\n2,b,y,train\n3,c,x,test\n")
    d = curate.diff("table", old, new, id="id", split="split")
    assert d.counts()["changed"] == d.counts()["moved"] == 1
    assert summary_line(d) == (
        "3 records → 3: 1 changed, 1 moved (1 record under more than one kind); 2 unchanged"
    )


def test_unchanged_says_it_covers_the_columns_both_sides_have(tmp_path: Path) -> None:
    """Found by a new-user review: a fix card said "401 unchanged" beside "KE202: 313
    records changed": the columns the fix adds (``withheld_edits``) are not compared. The
    summary says what "unchanged" covers when columns were added or removed."""
    sample = SAMPLES / "mquake_sample.json"
    out = curate.fix("mquake", sample, tmp_path / "fixed", unsafe_fixes=True)
    d = curate.diff("mquake", sample, out.path)
    assert set(d.columns_added) >= {"withheld_edits"}
    line = summary_line(d)
    assert "unchanged in the columns both sides have; columns added: " in line, line
    same = curate.diff("mquake", sample, sample)
    assert "both sides" not in summary_line(same)


def test_unreadable_records_of_a_file_without_splits_are_counted_in_its_split(
    tmp_path: Path,
) -> None:
    """Found by a new-user review: MQuAKE records that fail the schema, left out by export,
    were counted under a split "(none)" beside "train" for a file whose every case is in
    train. They are in the one split every record read is in."""
    cases = json.loads((SAMPLES / "mquake_sample.json").read_text("utf-8"))
    cases[3]["answer"] = 7  # not a string
    del cases[5]["questions"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(cases), "utf-8")
    out = curate.export("mquake", broken, tmp_path / "hf")
    d = curate.diff("mquake", broken, out.path)
    assert set(d.by_split()) == {"train"}, d.by_split()
    assert d.by_split()["train"]["removed"] == 2
    assert d.counts()["removed"] == 2
