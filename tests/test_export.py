"""`curate export` and `curate fix`: Hugging Face dataset folders that load and say what changed.

The fix checks use a reference written independently of curate: a plain loop over the JSON that
follows MQuAKE-Remastered's protocol to compute, for each case, the edits to withhold.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from curate.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"

#: MQuAKE-hard's known duplicates: later occurrence → the case it repeats.
HARD_DUPLICATES = {9203: 9186, 9204: 9187, 9209: 9192, 9212: 9195, 9213: 9196}
CHANGELOG_KEYS = {"record", "field", "old", "new", "rule", "reason"}
#: A change a finding asked for also names the finding and the pass that applied it.
FINDING_KEYS = CHANGELOG_KEYS | {"finding", "pass"}


def cli(*argv) -> int:
    return main([str(a) for a in argv])


def load_hf(folder: Path, cache: Path):
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


def front_matter(readme: Path) -> tuple[dict, str]:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, sep, body = text[4:].partition("\n---\n")
    assert sep, "YAML front matter is not closed"
    return yaml.safe_load(head), body


def parquet_rows(folder: Path, split: str = "train") -> list[dict]:
    files = sorted((folder / "data").glob(f"{split}-*.parquet"))
    assert files
    return [r for f in files for r in pq.read_table(f).to_pylist()]


@pytest.fixture(scope="module")
def sample_records() -> list[dict]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "mquake-sample"
    assert cli("export", "mquake", SAMPLE, "--out", out) == 0
    return out


# --------------------------------------------------------------------------- export


def test_export_loads_with_datasets(exported, sample_records, tmp_path):
    ds = load_hf(exported, tmp_path / "cache")
    assert list(ds) == ["train"]
    rows = ds["train"].to_list()
    assert rows == sample_records  # same rows, same order, nested structs and lists intact
    assert all(type(r["case_id"]) is int for r in rows)
    f = ds["train"].features
    assert f["case_id"].dtype == "int64"
    assert f["orig"]["triples"].feature.feature.dtype == "string"
    assert f["requested_rewrite"].feature["target_new"]["id"].dtype == "string"
    # parquet shards written by curate hold the same rows
    assert parquet_rows(exported) == sample_records


def test_export_card(exported, sample_records, tmp_path):
    import datasets

    meta, body = front_matter(exported / "README.md")
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    info = meta["dataset_info"]
    assert [s["name"] for s in info["splits"]] == ["train"]
    assert info["splits"][0]["num_examples"] == 52
    assert info["splits"][0]["num_bytes"] > 0
    features = datasets.Features._from_yaml_list(info["features"])
    assert list(features) == list(sample_records[0])
    assert features == load_hf(exported, tmp_path / "cache")["train"].features
    assert meta["license"] == "mit"
    assert meta["task_categories"] == ["question-answering"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["pretty_name"] == "mquake_sample"
    # then the audit summary of what was exported
    assert body.lstrip().startswith("# mquake_sample")
    assert "## Audit: knowledge-editing" in body
    assert "12 findings in 12 of 52 records (0 errors, 12 warnings, 0 info)" in body
    assert "| KE401 | duplicate-case | duplicate | warning | 3 | 3 |" in body
    assert "| train | 52 |" in body
    audit = json.loads((exported / "audit.json").read_text(encoding="utf-8"))
    assert audit["summary"]["findings"] == 12
    assert audit["inputs"][0]["sha256"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    # export writes no changelog (nothing was changed)
    assert not (exported / "changelog.jsonl").exists()


def test_export_card_options(tmp_path):
    out = tmp_path / "named"
    assert cli("export", "mquake", SAMPLE, "--out", out, "--pretty-name", "My KE set",
               "--license", "cc-by-4.0") == 0  # fmt: skip
    meta, body = front_matter(out / "README.md")
    assert meta["pretty_name"] == "My KE set"
    assert meta["license"] == "cc-by-4.0"
    assert body.lstrip().startswith("# My KE set")


def test_export_shards(tmp_path, sample_records):
    out = tmp_path / "sharded"
    assert cli("export", "mquake", SAMPLE, "--out", out, "--max-rows-per-shard", "10") == 0
    names = sorted(p.name for p in (out / "data").iterdir())
    assert names == [f"train-{i:05d}-of-00006.parquet" for i in range(6)]
    sizes = [pq.read_metadata(out / "data" / n).num_rows for n in names]
    assert sizes == [10, 10, 10, 10, 10, 2]
    assert parquet_rows(out) == sample_records
    ds = load_hf(out, tmp_path / "cache")
    assert ds["train"].to_list() == sample_records
    meta, _ = front_matter(out / "README.md")
    assert meta["dataset_info"]["splits"][0]["num_examples"] == 52


def test_export_keeps_splits(tmp_path, sample_records):
    src = tmp_path / "hub"
    (src / "data").mkdir(parents=True)
    import pyarrow as pa

    pq.write_table(
        pa.Table.from_pylist(sample_records[:40]), src / "data" / "train-00000-of-00001.parquet"
    )
    pq.write_table(
        pa.Table.from_pylist(sample_records[40:]), src / "data" / "test-00000-of-00001.parquet"
    )
    out = tmp_path / "out"
    assert cli("export", "mquake", src, "--out", out) == 0
    ds = load_hf(out, tmp_path / "cache")
    assert sorted(ds) == ["test", "train"]
    assert ds["train"].to_list() == sample_records[:40]
    assert ds["test"].to_list() == sample_records[40:]
    meta, _ = front_matter(out / "README.md")
    assert {s["name"]: s["num_examples"] for s in meta["dataset_info"]["splits"]} == {
        "train": 40,
        "test": 12,
    }


def test_export_refuses_non_empty_folder(tmp_path, capsys, sample_records):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    capsys.readouterr()
    assert cli("export", "mquake", SAMPLE, "--out", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "--overwrite" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]  # no temporary leftovers

    # --overwrite does not make a user's folder curate's to delete
    assert cli("export", "mquake", SAMPLE, "--out", out, "--overwrite") == 2
    assert "not written by curate" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]


def test_export_into_empty_folder_is_fine(tmp_path, sample_records):
    out = tmp_path / "empty"
    out.mkdir()
    assert cli("export", "mquake", SAMPLE, "--out", out) == 0
    assert parquet_rows(out) == sample_records


def test_failed_export_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    capsys.readouterr()
    assert cli("export", "mquake", tmp_path / "missing.json", "--out", out) == 2
    assert list(tmp_path.iterdir()) == []


def test_export_keeps_date_like_strings_as_text(tmp_path, sample_records):
    recs = [dict(r, added="2023-01-15") for r in sample_records[:5]]
    src = tmp_path / "dated.json"
    src.write_text(json.dumps(recs), encoding="utf-8")
    out = tmp_path / "out"
    assert cli("export", "mquake", src, "--out", out) == 0
    rows = parquet_rows(out)
    assert [r["added"] for r in rows] == ["2023-01-15"] * 5
    assert rows == recs


def test_export_folder_follows_umask(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "perm"
        assert cli("export", "mquake", SAMPLE, "--out", out) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755


# --------------------------------------------------------------------------- fix


@pytest.fixture(scope="module")
def hard_records(hard_path) -> list[dict]:
    return json.loads(hard_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fixed(hard_path, tmp_path_factory) -> dict:
    """Two ``fix`` runs of MQuAKE-hard with the random:100 edit set, and the input's hash."""
    before = hashlib.sha256(hard_path.read_bytes()).hexdigest()
    base = tmp_path_factory.mktemp("fix")
    outs = []
    for name in ("a", "b"):
        out = base / name
        # --unsafe-fixes: one duplicate case is in the edit set (dropping it is unsafe)
        args = ("--out", out, "--edit-set", "random:100", "--unsafe-fixes")
        assert cli("fix", "mquake", hard_path, *args) == 0
        outs.append(out)
    return {"before": before, "out": outs[0], "again": outs[1]}


@pytest.fixture(scope="module")
def fixed_rows(fixed) -> list[dict]:
    return parquet_rows(fixed["out"])


@pytest.fixture(scope="module")
def changelog(fixed) -> list[dict]:
    lines = (fixed["out"] / "changelog.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(ln) for ln in lines]


def reference_edit_set(records: list[dict]) -> set[int]:
    ids = [r["case_id"] for r in records]
    state = random.getstate()
    try:
        random.seed(100)
        chosen = random.sample(ids, 100)
    finally:
        random.setstate(state)
    return set(chosen) - set(HARD_DUPLICATES)


def test_fix_leaves_input_untouched(hard_path, fixed):
    assert hashlib.sha256(hard_path.read_bytes()).hexdigest() == fixed["before"]


def test_fix_drops_later_duplicates(fixed_rows, changelog, hard_records):
    ids = [r["case_id"] for r in fixed_rows]
    assert len(fixed_rows) == 424
    assert ids == [r["case_id"] for r in hard_records if r["case_id"] not in HARD_DUPLICATES]
    assert set(HARD_DUPLICATES.values()) <= set(ids)
    raw = {r["case_id"]: r for r in hard_records}
    dropped = [c for c in changelog if c["rule"] == "KE401"]
    assert sorted(int(c["record"]) for c in dropped) == sorted(HARD_DUPLICATES)
    for c in dropped:
        cid = int(c["record"])
        assert c["old"] == raw[cid]  # the whole record, so it can be restored
        assert c["new"] is None
        assert c["field"] == ""
        assert str(HARD_DUPLICATES[cid]) in c["reason"]


def test_changelog_lines_are_complete(changelog, fixed_rows):
    assert changelog
    for c in changelog:
        assert set(c) == FINDING_KEYS
        assert c["rule"] in {"KE401", "KE110", "KE201", "KE202"}
        assert c["finding"]["rule"] == c["rule"] and c["finding"]["record"] == c["record"]
        assert c["pass"] == 1
        assert isinstance(c["reason"], str) and c["reason"]
    assert sum(c["rule"] == "KE110" for c in changelog) == 23


def test_fix_changes_only_what_the_changelog_says(fixed_rows, changelog, hard_records):
    raw = {r["case_id"]: r for r in hard_records}
    by_record: dict[str, list[dict]] = {}
    for c in changelog:
        by_record.setdefault(c["record"], []).append(c)
    for row in fixed_rows:
        assert isinstance(row["edited"], bool)
        assert isinstance(row["withheld_edits"], list)
        rec = {k: v for k, v in row.items() if k not in ("edited", "withheld_edits")}
        withheld = [
            c for c in by_record.get(str(row["case_id"]), []) if c["field"] == "withheld_edits"
        ]
        if withheld:  # one change per contaminated hop, each adding to the list
            assert {c["rule"] for c in withheld} == {"KE201" if row["edited"] else "KE202"}
            assert withheld[0]["old"] == []
            for a, b in itertools.pairwise(withheld):
                assert a["new"] == b["old"]
            assert sorted(map(repr, withheld[-1]["new"])) == sorted(
                map(repr, row["withheld_edits"])
            )
        for c in by_record.get(str(row["case_id"]), []):
            if c["field"] == "withheld_edits":
                continue
            assert c["rule"] == "KE110"
            assert rec[c["field"]] == c["new"]
            assert raw[row["case_id"]][c["field"]] == c["old"]
            rec[c["field"]] = c["old"]
        assert rec == raw[row["case_id"]]
        if row["withheld_edits"]:
            assert any(c["field"] == "withheld_edits" for c in by_record[str(row["case_id"])])


def test_cleaned_aliases(fixed_rows, changelog):
    for c in (c for c in changelog if c["rule"] == "KE110"):
        new = c["new"]
        assert set(new) <= set(c["old"]) and len(new) < len(c["old"])
        keys = [a.strip().upper() for a in new]
        assert len(keys) == len(set(keys)) and "" not in keys


def test_withheld_edits_match_reference(fixed_rows, hard_records):
    """Plain-Python MQuAKE-Remastered reference: withhold, when asking case c, every applied
    edit of another edited case that shares (subject id, relation) with a hop of c's correct
    path (new_triples if c is edited, else triples) but sets another object."""
    edited = reference_edit_set(hard_records)
    kept = [r for r in hard_records if r["case_id"] not in HARD_DUPLICATES]
    applied = [
        (r["case_id"], k, tuple(t))
        for r in kept
        if r["case_id"] in edited
        for k, t in enumerate(r["orig"]["edit_triples"])
    ]
    got_rows = {r["case_id"]: r for r in fixed_rows}
    n_with = 0
    for r in kept:
        cid = r["case_id"]
        is_edited = cid in edited
        path = r["orig"]["new_triples"] if is_edited else r["orig"]["triples"]
        expected = set()
        for src, k, (s, rel, o) in applied:
            if src == cid:
                continue
            if any(s == hs and rel == hr and o != ho for hs, hr, ho in path):
                expected.add((src, k, (s, rel, o)))
        row = got_rows[cid]
        assert row["edited"] is is_edited
        got = [(w["case_id"], w["edit_index"], tuple(w["triple"])) for w in row["withheld_edits"]]
        assert len(got) == len(set(got)), cid
        assert set(got) == expected, cid
        n_with += bool(expected)
    # the random:100 edit set contaminates most of MQuAKE-hard: the check is not vacuous
    assert n_with > 200


def test_edit_set_file(fixed, fixed_rows, hard_records):
    ids = json.loads((fixed["out"] / "edit_set.json").read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)) == 100
    expected = reference_edit_set(hard_records)
    assert {int(i) for i in ids} == expected
    assert {r["case_id"] for r in fixed_rows if r["edited"]} == expected


def test_edit_set_file_keeps_id_type(fixed, fixed_rows):
    ids = json.loads((fixed["out"] / "edit_set.json").read_text(encoding="utf-8"))
    assert ids == [r["case_id"] for r in fixed_rows if r["edited"]]


def test_fix_is_deterministic(fixed):
    a, b = fixed["out"], fixed["again"]
    names = sorted(p.name for p in (a / "data").iterdir())
    assert names == sorted(p.name for p in (b / "data").iterdir())
    assert names == ["train-00000-of-00001.parquet"]
    for n in names:
        assert (a / "data" / n).read_bytes() == (b / "data" / n).read_bytes()
    for f in ("changelog.jsonl", "edit_set.json"):
        assert (a / f).read_bytes() == (b / f).read_bytes()


def test_fixed_dataset_loads_and_card_mentions_changes(fixed, fixed_rows, tmp_path):
    ds = load_hf(fixed["out"], tmp_path / "cache")
    assert ds["train"].num_rows == 424
    assert ds["train"].to_list() == fixed_rows
    meta, body = front_matter(fixed["out"] / "README.md")
    assert meta["dataset_info"]["splits"][0]["num_examples"] == 424
    assert "## Changelog summary" in body
    assert "| KE401 | `<record>` | 5 |" in body
    assert re.search(r"\| KE110 \| `answer_alias` \| \d+ \|", body)


def test_a_fixs_withheld_edits_keep_their_type_when_re_exported(tmp_path):
    """Found by a new-user review: a remaster whose cases withheld no edit, exported again,
    had ``withheld_edits: list<null>`` (Arrow's type of empty lists), which ``datasets``
    reads as ``List(Value('null'))`` and cannot concatenate with a remaster that withheld
    some. The re-export keeps the type the fix wrote."""
    import datasets

    assert main(["fix", "mquake", str(SAMPLE), "--out", str(tmp_path / "fixed")]) == 0
    assert main(["export", "mquake", str(tmp_path / "fixed"), "--out", str(tmp_path / "hf")]) == 0
    fixed = pq.read_schema(next((tmp_path / "fixed" / "data").glob("*.parquet")))
    again = pq.read_schema(next((tmp_path / "hf" / "data").glob("*.parquet")))
    assert again.field("withheld_edits").type == fixed.field("withheld_edits").type
    assert "struct" in str(again.field("withheld_edits").type)
    features = datasets.load_dataset(str(tmp_path / "hf"))["train"].features
    assert "null" not in str(features["withheld_edits"])
