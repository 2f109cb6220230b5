"""Export and fix write the MQuAKE layout they read (issue 8): a MQuAKE-Remastered input comes
out in MQuAKE-Remastered's own flat layout, with its split names, so code written against the
release (``d['split'][str(n)]``, ``edit['target_new_str']``, ``d['new_triples_labeled']``) runs on
curate's output; ``--layout original|remastered`` chooses, and both layouts round-trip through
``datasets.load_dataset`` and back through ``curate validate`` to the same cases.

The Remastered input is built from the real MQuAKE-hard cases, converted to the release's field
set (Hugging Face ``henryzhongsc/MQuAKE-Remastered``, as its own loader and its users read it):

* ``requested_rewrite[k]``: ``prompt``, ``subject``, ``relation_id``, ``target_new_str``,
  ``target_new_id``, ``target_true_str``, ``target_true_id``, ``question`` (the nested
  ``target_new``/``target_true`` objects flattened);
* ``orig.{triples, triples_labeled, new_triples, new_triples_labeled, edit_triples}`` as the
  top-level ``orig_triples``, ``orig_triples_labeled``, ``new_triples``, ``new_triples_labeled``,
  ``edit_triples``; no ``edit_triples_idx`` (the release's loaders never read one);
* ``split``: a struct from edit count to the case's labels in that evaluation. The release keys
  it by the evaluated edit counts (``"1"``, ``"100"``, ..., the split's size) and its loader asks
  only whether ``"edited"`` is among the labels; the other labels here (``"unedited"``) stand in
  for the release's, which that loader does not reveal;
* the file layout of the release, ``data/<split>-00000-of-00001.parquet``, with two of its split
  names: the first 300 cases as ``CF3k``, the other 129 as ``T`` (names only: all are CF cases).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import clone, to_flat, write_json

from curate.cli.main import main
from curate.core.errors import UsageError
from curate.families.knowledge_editing import FAMILY as FAM

#: The release's columns, in the order curate writes them.
RELEASE_COLUMNS = [
    "case_id",
    "requested_rewrite",
    "questions",
    "answer",
    "answer_alias",
    "new_answer",
    "new_answer_alias",
    "single_hops",
    "new_single_hops",
    "orig_triples",
    "orig_triples_labeled",
    "new_triples",
    "new_triples_labeled",
    "edit_triples",
    "split",
]
REWRITE_FIELDS = [
    "prompt",
    "subject",
    "relation_id",
    "target_new_str",
    "target_new_id",
    "target_true_str",
    "target_true_id",
    "question",
]
SPLITS = {"CF3k": slice(0, 300), "T": slice(300, None)}


def cli(*argv: Any) -> int:
    return main([str(a) for a in argv])


def release_record(case: dict[str, Any], k: int, size: int) -> dict[str, Any]:
    """The ``k``-th of ``size`` cases of a split, in the release's field set (module doc)."""
    flat = to_flat(clone(case), with_edit_triples=True, with_idx=False)
    flat["split"] = {
        str(n): ["edited"] if k < n else ["unedited"] for n in dict.fromkeys((1, 100, size))
    }
    return flat


@pytest.fixture(scope="module")
def release(hard_records, tmp_path_factory) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """A MQuAKE-Remastered-layout folder of the real MQuAKE-hard cases, and its rows per split."""
    folder = tmp_path_factory.mktemp("release")
    (folder / "data").mkdir()
    rows = {}
    for split, part in SPLITS.items():
        cases = hard_records[part]
        rows[split] = [release_record(c, k, len(cases)) for k, c in enumerate(cases)]
        table = pa.Table.from_pylist(rows[split])
        pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder, rows


def load_hf(folder: Path, cache: Path):
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


def present(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its ``split`` struct's null keys left out: one schema serves every split of a
    dataset, so a split's rows carry the other splits' edit counts as null (the release's own
    loaders, and curate's reader, never ask for those)."""
    split = row.get("split")
    if isinstance(split, dict):
        row = {**row, "split": {k: v for k, v in split.items() if v is not None}}
    return row


def case_tables(folder: Path, **options: Any) -> dict[str, Any]:
    """The cases as the rules see them (curate's three tables) and the audit's findings."""
    data = FAM.load([folder])
    report = FAM.audit(data, **options)
    findings = report.findings.drop("input").sort(["rule", "record", "field"])
    return {
        # a single file has no split; written, it is the "train" split
        "cases": data.cases.drop("layout").with_columns(pl.col("split").fill_null("train")),
        "hops": data.hops,
        "edits": data.edits,
        "findings": findings,
        "layouts": data.stats["layouts"],
    }


def same_tables(a: dict[str, Any], b: dict[str, Any]) -> None:
    for name in ("cases", "hops", "edits", "findings"):
        assert a[name].equals(b[name]), name


@pytest.fixture(scope="module")
def exported(release, tmp_path_factory) -> Path:
    folder, _ = release
    out = tmp_path_factory.mktemp("exported") / "out"
    assert cli("export", "mquake", folder, "--out", out) == 0
    return out


# --------------------------------------------------------------------------- Remastered kept


def test_release_exports_in_its_own_layout(release, exported, tmp_path) -> None:
    _, rows = release
    ds = load_hf(exported, tmp_path / "cache")
    assert sorted(ds) == sorted(SPLITS)  # the release's split names, not "train"
    for split, expected in rows.items():
        got = ds[split]
        assert got.column_names == RELEASE_COLUMNS
        assert list(got.features["requested_rewrite"].feature) == REWRITE_FIELDS
        assert [present(r) for r in got.to_list()] == expected  # values and order unchanged
        # what code written against the release reads:
        first = got[0]
        assert first["split"]["100"] == ["edited"]
        assert (
            first["requested_rewrite"][0]["target_new_str"]
            == expected[0]["requested_rewrite"][0]["target_new_str"]
        )


def test_release_export_revalidates_to_the_same_cases(release, exported, capsys) -> None:
    folder, _ = release
    assert cli("validate", "mquake", exported) == 0
    assert "No findings in 429 records" in capsys.readouterr().out
    before = case_tables(folder, edit_set="split:100")
    after = case_tables(exported, edit_set="split:100")
    assert before["layouts"] == after["layouts"] == {"remastered": 429}
    assert before["findings"].height > 0  # the comparison covers real contamination findings
    same_tables(before, after)


def test_card_and_croissant_name_the_layout(exported) -> None:
    readme = (exported / "README.md").read_text(encoding="utf-8")
    croissant = json.loads((exported / "croissant.json").read_text(encoding="utf-8"))
    for text in (readme, croissant["description"]):
        assert "MQuAKE-Remastered layout (flat: target_new_str/target_true_str" in text
        assert "as read" in text
        assert "orig.new_triples[i] is new_triples[i]" in text  # how findings name fields


# --------------------------------------------------------------------------- --layout


def test_release_written_in_the_original_layout_and_back(release, tmp_path) -> None:
    folder, rows = release
    nested = tmp_path / "nested"
    assert cli("export", "mquake", folder, "--out", nested, "--layout", "original") == 0
    ds = load_hf(nested, tmp_path / "cache")
    assert ds["T"].column_names == [*RELEASE_COLUMNS[:9], "orig", "split"]
    assert ds["T"][0]["requested_rewrite"][0]["target_new"]["str"]
    readme = (nested / "README.md").read_text(encoding="utf-8")
    assert "429 MQuAKE-Remastered (flat) cases written in the original MQuAKE layout" in readme
    assert cli("validate", "mquake", nested) == 0
    same_tables(case_tables(folder), case_tables(nested))

    # the nested copy keeps `split`, so it can be written in the Remastered layout again;
    # its default is its own layout (original), so that takes --layout
    back = tmp_path / "back"
    assert cli("export", "mquake", nested, "--out", back, "--layout", "remastered") == 0
    for split, expected in rows.items():
        got = load_hf(back, tmp_path / "cache2")[split]
        # edit_triples_idx comes along: the original layout requires it, and it holds what the
        # reader rebuilt from the flat record, so it cannot be told from a carried one
        assert got.column_names == [*RELEASE_COLUMNS[:14], "edit_triples_idx", "split"]
        assert [
            {k: v for k, v in present(r).items() if k != "edit_triples_idx"} for r in got.to_list()
        ] == expected
    same_tables(case_tables(folder), case_tables(back))


def test_original_input_stays_original_and_cannot_invent_split(hard_path, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli("export", "mquake", hard_path, "--out", out) == 0
    assert "orig" in pq.read_schema(next((out / "data").glob("train-*.parquet"))).names
    assert "Cases written in the original MQuAKE layout" in (out / "README.md").read_text()
    capsys.readouterr()
    code = cli("export", "mquake", hard_path, "--out", tmp_path / "flat", "--layout", "remastered")
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "429 original-layout cases have no `split`" in err and "cases 7417, 7428" in err
    assert not (tmp_path / "flat").exists()


def test_original_cases_with_split_become_remastered(hard_records, tmp_path) -> None:
    recs = [
        {**c, "split": {"1": ["edited"] if k == 0 else ["unedited"]}}
        for k, c in enumerate(hard_records[:20])
    ]
    src = write_json(tmp_path / "orig.json", recs)
    out = tmp_path / "out"
    assert cli("export", "mquake", src, "--out", out, "--layout", "remastered") == 0
    table = pq.read_table(next((out / "data").glob("train-*.parquet")))
    assert table.column_names == [*RELEASE_COLUMNS[:14], "edit_triples_idx", "split"]
    assert table.to_pylist()[0] == {
        **to_flat(hard_records[0], with_edit_triples=True),
        "split": {"1": ["edited"]},
    }
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "20 original-layout (nested) cases written in the MQuAKE-Remastered layout" in readme
    same_tables(case_tables(src), case_tables(out))


def test_mixed_layouts_need_a_choice(release, hard_path, tmp_path, capsys) -> None:
    folder, _ = release
    assert cli("export", "mquake", folder, hard_path, "--out", tmp_path / "a") == 2
    err = capsys.readouterr().err
    assert "mixes layouts (429 original, 429 MQuAKE-Remastered cases)" in err
    assert not (tmp_path / "a").exists()
    out = tmp_path / "b"
    assert cli("export", "mquake", folder, hard_path, "--out", out, "--layout", "original") == 0
    assert sorted(p.name.split("-")[0] for p in (out / "data").iterdir()) == ["CF3k", "T", "train"]


def test_a_field_without_a_place_in_the_flat_layout_is_not_dropped(hard_records, tmp_path, capsys):
    rec = {**hard_records[0], "split": {"1": ["edited"]}}
    rec["orig"] = {**rec["orig"], "source": "wikidata-2021"}
    src = write_json(tmp_path / "x.json", [rec])
    out = tmp_path / "out"
    assert cli("export", "mquake", src, "--out", out, "--layout", "remastered") == 2
    assert "field orig.source has no place in the MQuAKE-Remastered layout" in (
        capsys.readouterr().err
    )
    assert cli("export", "mquake", src, "--out", out) == 0  # its own layout keeps it
    assert pq.read_table(next((out / "data").glob("*.parquet"))).to_pylist()[0]["orig"][
        "source"
    ] == ("wikidata-2021")


def test_flat_extras_and_invalid_records(release, tmp_path) -> None:
    """Fields beyond the schema survive in either layout; an invalid record is never written."""
    _, rows = release
    recs = [dict(r) for r in rows["T"][:30]]
    recs[3] = {**recs[3], "requested_rewrite": [{**recs[3]["requested_rewrite"][0], "subject": 5}]}
    recs[4] = {**recs[4], "note": "kept"}
    src = write_json(tmp_path / "t.json", recs)
    for layout in ("remastered", "original"):
        out = tmp_path / layout
        assert cli("export", "mquake", src, "--out", out, "--layout", layout) == 0
        got = pq.read_table(next((out / "data").glob("train-*.parquet"))).to_pylist()
        assert [r["case_id"] for r in got] == [r["case_id"] for k, r in enumerate(recs) if k != 3]
        assert got[3]["note"] == "kept"
        assert cli("validate", "mquake", out) == 0


def test_layout_is_an_export_and_fix_option_only(release, tmp_path) -> None:
    folder, _ = release
    assert cli("audit", "mquake", folder, "--layout", "original") == 2
    with pytest.raises(UsageError, match="layout"):
        FAM.options(layout="flat")


# --------------------------------------------------------------------------- fix


def test_fix_keeps_the_release_layout(release, tmp_path, capsys) -> None:
    folder, _ = release
    out = tmp_path / "fixed"
    assert cli("fix", "mquake", folder, "--out", out, "--edit-set", "split:100") == 0
    assert "layout: Cases written in the MQuAKE-Remastered layout" in capsys.readouterr().out
    ds = load_hf(out, tmp_path / "cache")
    assert sorted(ds) == sorted(SPLITS)
    for split in SPLITS:
        assert ds[split].column_names == [*RELEASE_COLUMNS, "edited", "withheld_edits"]
    withheld = [r for r in ds["CF3k"].to_list() if r["withheld_edits"]]
    assert withheld and all(isinstance(w["case_id"], int) for w in withheld[0]["withheld_edits"])
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "Layout: Cases written in the MQuAKE-Remastered layout" in readme
    assert cli("validate", "mquake", out) == 0
    assert json.loads((out / "audit.after.json").read_text())["findings"] == []
    # the fixed copy carries its edit set and withheld edits in the flat layout too
    data = FAM.load([out])
    assert data.stats["layouts"] == {"remastered": data.cases.height}
    assert data.marks.height == data.cases.height


def test_release_edit_triples_are_read_not_rebuilt(hard_records, tmp_path) -> None:
    """The release carries ``edit_triples`` without indexes: a wrong edit triple is a finding
    (KE104) rather than silently replaced by the chain's hop."""
    flat = to_flat(clone(hard_records[0]), with_edit_triples=True, with_idx=False)
    good = FAM.audit(FAM.load([write_json(tmp_path / "a.json", [flat])]), select=["KE103", "KE104"])
    assert good.findings.is_empty()
    flat["edit_triples"][0] = [flat["edit_triples"][0][0], flat["edit_triples"][0][1], "Q1"]
    bad = FAM.audit(FAM.load([write_json(tmp_path / "b.json", [flat])]), select=["KE103", "KE104"])
    assert bad.findings.select("rule", "field").rows() == [
        ("KE104", "orig.edit_triples[0][2]"),  # 'Q1' is not the object of its hop, hop 0
        ("KE104", "requested_rewrite[0].target_new.id"),
    ]
