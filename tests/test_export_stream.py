"""Streamed export, dataset-card metadata and Croissant: what the Hub, `datasets` and `mlcroissant`
read from a curate export.

Checked on the shipped MQuAKE sample and, through the conftest fixtures, on MQuAKE-hard and the
glycowork sample: the declared Features come back from ``load_dataset`` (nested lists and structs
included), every parquet file carries them, the card's sizes follow the ``datasets`` conventions,
row groups and shards stay within their byte limits, and ``croissant.json`` validates and yields
the parquet rows through ``mlcroissant``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_croissant_rows import plain_value

from curate.cli.main import main
from curate.core.errors import InputError, UsageError
from curate.core.streams import SplitStream
from curate.families import get_family
from curate.families.glycan import numeric_columns
from curate.publish.card import footer
from curate.publish.folder import write_hf_dataset
from curate.publish.metadata import (
    CardInfo,
    check_license,
    hub_licenses,
    size_buckets,
    size_category,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"
GLYCAN_SAMPLE = ROOT / "curate" / "data" / "samples" / "glycan_taxonomy_sample.csv"
KE = get_family("mquake")


def cli(*argv) -> int:
    return main([str(a) for a in argv])


def front_matter(folder: Path) -> tuple[dict, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    head, sep, body = text[4:].partition("\n---\n")
    assert text.startswith("---\n") and sep
    return yaml.safe_load(head), body


def shards(folder: Path, split: str | None = None) -> list[Path]:
    return sorted((folder / "data").glob(f"{split or ''}*.parquet"))


def load_hf(folder: Path, cache: Path):
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


def declared_features(folder: Path):
    import datasets

    meta, _ = front_matter(folder)
    return datasets.Features._from_yaml_list(meta["dataset_info"]["features"])


# --------------------------------------------------------------------------- exports under test


@pytest.fixture(scope="module")
def exports(tmp_path_factory, hard_path, glycan_sample_csv) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("exports")
    runs = {
        "sample": ("mquake", SAMPLE),
        "hard": ("mquake", hard_path),
        "glycan": ("glycan", glycan_sample_csv),
    }
    out = {}
    for name, (family, src) in runs.items():
        out[name] = base / name
        assert cli("export", family, src, "--out", out[name]) == 0
    return out


@pytest.fixture(params=["sample", "hard", "glycan"])
def export(request, exports) -> Path:
    return exports[request.param]


def test_load_dataset_restores_the_declared_features(export, tmp_path):
    declared = declared_features(export)
    ds = load_hf(export, tmp_path / "cache")
    meta, _ = front_matter(export)
    splits = {s["name"]: s["num_examples"] for s in meta["dataset_info"]["splits"]}
    assert {name: ds[name].num_rows for name in ds} == splits
    for name in ds:
        assert ds[name].features == declared
        rows = [r for f in shards(export, name) for r in pq.read_table(f).to_pylist()]
        assert ds[name].to_list() == rows


def test_every_parquet_file_carries_the_features(export):
    import datasets

    declared = declared_features(export)
    for f in shards(export):
        schema = pq.read_schema(f)
        info = json.loads(schema.metadata[b"huggingface"])
        assert datasets.Features.from_dict(info["info"]["features"]) == declared
        assert datasets.Features.from_arrow_schema(schema) == declared


def test_card_sizes_follow_the_datasets_conventions(export):
    meta, _ = front_matter(export)
    info = meta["dataset_info"]
    for split in info["splits"]:
        files = shards(export, split["name"])
        # uncompressed Arrow bytes of the split as read back, not the compressed file size
        assert split["num_bytes"] == sum(pq.read_table(f).nbytes for f in files)
        assert split["num_bytes"] > sum(f.stat().st_size for f in files)
    assert info["download_size"] == sum(f.stat().st_size for f in shards(export))
    assert info["dataset_size"] == sum(s["num_bytes"] for s in info["splits"])


def test_mquake_hard_num_bytes_is_the_arrow_size(exports):
    """The figure the issue measured with ``datasets`` (the old card said 212,594: the file)."""
    meta, _ = front_matter(exports["hard"])
    assert meta["dataset_info"]["splits"][0]["num_bytes"] == 1_512_222


def test_mquake_nested_features(exports, tmp_path):
    from datasets import List, Value

    f = load_hf(exports["hard"], tmp_path / "cache")["train"].features
    assert f["case_id"] == Value("int64")
    assert f["orig"]["triples"] == List(List(Value("string")))
    assert f["orig"]["edit_triples_idx"] == List(Value("int64"))
    assert f["requested_rewrite"].feature["target_new"] == {
        "str": Value("string"),
        "id": Value("string"),
    }
    assert f["single_hops"].feature["answer_alias"] == List(Value("string"))


def test_glycan_export_keeps_numbers_and_drops_the_split_column(exports, glycan_sample_csv):
    import datasets

    declared = declared_features(exports["glycan"])
    assert "split" not in declared
    assert declared["glycowork_row"] == datasets.Value("int64")
    assert declared["taxon_id"] == datasets.Value("int64")
    assert declared["Species"] == datasets.Value("large_string")
    # the values are the file's own numbers, row for row
    src = pl.read_csv(glycan_sample_csv)  # polars' own inference: integers where the file has
    got = pl.concat([pl.read_parquet(f) for f in shards(exports["glycan"])])
    want = src.filter(pl.col("glycowork_row").is_in(got["glycowork_row"].to_list()))
    assert got.height == want.height == src.height - 1  # one glycan does not parse (GL101)
    cols = ["glycowork_row", "glycan", "Species", "taxon_id"]
    assert got.sort("glycowork_row").select(cols).to_dicts() == (
        want.sort("glycowork_row").select(cols).to_dicts()
    )
    assert want.schema["taxon_id"] == got.schema["taxon_id"] == pl.Int64


# --------------------------------------------------------------------------- shards and row groups


def test_row_groups_and_shards_stay_within_their_byte_limits(hard_path, tmp_path):
    data = KE.load([hard_path])
    tables = KE.to_tables(data)
    out = tmp_path / "small"
    write_hf_dataset(
        out,
        tables,
        CardInfo(pretty_name="hard"),
        max_row_group_bytes=60_000,
        max_shard_bytes=300_000,
    )
    files = shards(out, "train")
    n = len(files)
    assert n > 3
    assert [f.name for f in files] == [f"train-{i:05d}-of-{n:05d}.parquet" for i in range(n)]
    assert not list((out / "data").glob(".*"))  # no temporary names left
    group_counts = []
    for f in files:
        pf = pq.ParquetFile(f)
        groups = [pf.read_row_group(i) for i in range(pf.num_row_groups)]
        assert all(g.nbytes <= 60_000 or g.num_rows == 1 for g in groups)
        assert sum(g.nbytes for g in groups) <= 300_000
        group_counts.append(pf.num_row_groups)
    assert max(group_counts[:-1]) > 1  # full shards hold several row groups
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert rows == json.loads(hard_path.read_text(encoding="utf-8"))


def _table(n: int, width: int) -> pa.Table:
    return pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "s": pa.array(["x" * ((i * 7) % width) for i in range(n)]),
            "l": pa.array([[f"{i}-{k}" for k in range(i % 4)] for i in range(n)]),
        }
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(0, 300),
    width=st.integers(1, 400),
    batch=st.integers(1, 120),
    group=st.integers(200, 20_000),
    shard_factor=st.integers(1, 6),
    max_rows=st.one_of(st.none(), st.integers(1, 120)),
)
def test_sharding_invariants(tmp_path_factory, n, width, batch, group, shard_factor, max_rows):
    """Any batch sizes and limits: rows kept in order, every row group within the byte limit
    (or a single row), every shard within the byte and row limits, no empty file but one."""
    table = _table(n, width)
    stream = SplitStream(table.schema, lambda: table.to_batches(max_chunksize=batch), n)
    out = tmp_path_factory.mktemp("prop") / "out"
    shard_bytes = group * shard_factor
    write_hf_dataset(
        out,
        {"train": stream},
        CardInfo(pretty_name="p"),
        max_row_group_bytes=group,
        max_shard_bytes=shard_bytes,
        max_rows_per_shard=max_rows,
    )
    files = shards(out)
    got = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert got == table.to_pylist()
    assert len(files) == (1 if n == 0 else len(files))
    for f in files:
        pf = pq.ParquetFile(f)
        sizes = [pf.read_row_group(i).nbytes for i in range(pf.num_row_groups)]
        rows = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
        slack = 64  # read-back validity bitmaps may differ by a few bytes per column
        for size, r in zip(sizes, rows, strict=True):
            assert size <= group + slack or r == 1
        assert sum(sizes) <= shard_bytes + slack * len(sizes) or sum(rows) == 1
        if max_rows is not None:
            assert pf.metadata.num_rows <= max_rows
        assert pf.metadata.num_rows > 0 or n == 0


def test_a_stream_that_yields_other_than_it_promised_is_refused(tmp_path):
    table = _table(10, 5)
    stream = SplitStream(table.schema, lambda: table.to_batches(), num_rows=11)
    with pytest.raises(InputError, match="expected 11 records, read 10"):
        write_hf_dataset(tmp_path / "o", {"train": stream}, CardInfo(pretty_name="x"))
    assert not (tmp_path / "o").exists()


def test_tables_and_bare_batch_iterators_are_accepted(tmp_path):
    table = _table(50, 9)
    out = tmp_path / "o"
    write_hf_dataset(
        out,
        {"train": table, "test": iter(table.slice(10, 5).to_batches())},
        CardInfo(pretty_name="x"),
    )
    assert pq.read_table(shards(out, "train")[0]).to_pylist() == table.to_pylist()
    assert pq.read_table(shards(out, "test")[0]).to_pylist() == table.slice(10, 5).to_pylist()


def test_declared_features_are_what_is_written(tmp_path):
    import datasets

    table = pa.table({"a": [1, 2], "b": [None, None]})
    feats = datasets.Features({"a": datasets.Value("int32"), "b": datasets.Value("string")})
    out = tmp_path / "o"
    write_hf_dataset(out, {"train": table}, CardInfo(pretty_name="x"), features=feats)
    assert datasets.Features.from_arrow_schema(pq.read_schema(shards(out)[0])) == feats
    assert declared_features(out) == feats


# --------------------------------------------------------------------------- KE streams


def test_ke_streams_without_keeping_records(hard_path, hard_records):
    data = KE.load([hard_path])  # keep_records off: nothing but the columnar tables in memory
    assert not data.records
    tables = KE.to_tables(data)
    assert list(tables) == ["train"]
    stream = tables["train"]
    assert isinstance(stream, SplitStream) and stream.num_rows == 429
    batches = list(stream)
    assert all(b.schema == stream.schema for b in batches)
    assert pa.Table.from_batches(batches).to_pylist() == hard_records


def test_ke_stream_follows_the_input_in_batches(tmp_path, hard_records, monkeypatch):
    """JSON Lines bigger than one reader batch: several record batches, one schema, order kept;
    a field present only in later records (and null-only in a batch) gets one type."""
    import curate.io.read
    import curate.io.records

    monkeypatch.setattr(curate.io.records, "BATCH_ROWS", 300)  # the batches of a big file, smaller
    n = curate.io.records.BATCH_ROWS + 100
    recs = [dict(hard_records[i % len(hard_records)], case_id=i) for i in range(n)]
    recs[-1] = dict(recs[-1], note="only here")
    src = tmp_path / "many.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    data = KE.load([src])
    stream = KE.to_tables(data)["train"]
    batches = list(stream)
    assert len(batches) >= 2  # the reader's batches: BATCH_ROWS lines or a block of bytes
    assert stream.schema.field("note").type == pa.string()
    rows = pa.Table.from_batches(batches).to_pylist()
    assert [r["case_id"] for r in rows] == list(range(n))
    assert rows[-1]["note"] == "only here" and rows[0]["note"] is None


def _inferred(data) -> pa.Table:
    """The export of ``data`` with its Arrow type inferred from the records (the type pass)."""
    data.shape = None
    return pa.Table.from_batches(list(KE.to_tables(data)["train"]))


def test_ke_declared_type_is_the_inferred_type_without_a_type_pass(
    hard_path, hard_records, tmp_path, monkeypatch
):
    """The type declared from the schema models is the one inferred from the records (on
    MQuAKE-hard, and with an optional field only a late record has), and it costs no pass over
    the input: ``to_tables`` opens nothing, each stream reads the input once."""
    import curate.families.knowledge_editing as ke
    import curate.io.read

    monkeypatch.setattr(curate.io.records, "BATCH_ROWS", 500)  # the batches of a big file, smaller
    recs = [dict(r, case_id=i) for i, r in enumerate(hard_records * 2)]  # 858: two batches
    recs[-1] = dict(recs[-1], answer_extended=["late"])
    for i in (5, 700):
        # copies: the hops are the session's MQuAKE-hard records, which later tests read
        recs[i] = dict(recs[i], single_hops=[dict(sh) for sh in recs[i]["single_hops"]])
        for sh in recs[i]["single_hops"]:
            sh.pop("cloze", None)  # optional and absent here: still one type
    late = tmp_path / "late.jsonl"
    late.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    opened = []
    real_open = ke.open_source
    monkeypatch.setattr(ke, "open_source", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    for path in (hard_path, late):
        data = KE.load([path])
        opened.clear()
        stream = KE.to_tables(data)["train"]
        assert opened == []
        declared = pa.Table.from_batches(list(stream))
        assert len(opened) == 1
        again = KE.load([path])
        opened.clear()
        inferred = _inferred(again)
        assert len(opened) == 2  # the type pass, then the stream
        assert declared.schema == inferred.schema == stream.schema
        assert declared.equals(inferred)
    assert declared.schema.field("answer_extended").type == pa.list_(pa.string())
    assert declared.column("answer_extended").to_pylist()[-2:] == [None, ["late"]]


def test_ke_input_given_new_fields_after_load_is_an_error(tmp_path, hard_records):
    """The declared type has no column for a field the load never saw; a record that gains one
    before the export is reported, not written without it."""
    src = tmp_path / "cases.json"
    src.write_text(json.dumps(hard_records[:20]), encoding="utf-8")
    data = KE.load([src])
    changed = [dict(r) for r in hard_records[:20]]
    changed[3]["note"] = "added"
    src.write_text(json.dumps(changed), encoding="utf-8")
    with pytest.raises(InputError, match="input changed since it was read"):
        list(KE.to_tables(data)["train"])


def test_ke_mixed_case_id_types_leave_the_strings_out(tmp_path, hard_records, capsys):
    """One id an integer, one a string: KE003 names the string (on a tie) and the export
    leaves it out like any invalid record (it was refused whole, exit 2, after validate had
    called the file clean)."""
    recs = [dict(hard_records[0], case_id=1), dict(hard_records[1], case_id="two")]
    src = tmp_path / "mixed.json"
    src.write_text(json.dumps(recs), encoding="utf-8")
    capsys.readouterr()
    assert cli("validate", "mquake", src) == 1
    assert "KE003 error record two, case_id" in capsys.readouterr().out
    assert cli("export", "mquake", src, "--out", tmp_path / "o") == 0
    assert "(1 invalid record left out)" in capsys.readouterr().out
    assert pq.read_table(next((tmp_path / "o").rglob("*.parquet")))["case_id"].to_pylist() == [1]


def test_ke_input_changed_between_load_and_export(tmp_path, hard_records):
    src = tmp_path / "cases.json"
    src.write_text(json.dumps(hard_records[:20]), encoding="utf-8")
    data = KE.load([src])
    src.write_text(json.dumps(hard_records[:15]), encoding="utf-8")
    with pytest.raises(InputError, match="expected 20 records, read 15"):
        write_hf_dataset(tmp_path / "o", KE.to_tables(data), CardInfo(pretty_name="x"))


# --------------------------------------------------------------------------- Croissant


def croissant_leaves(record: dict[str, Any]) -> dict[str, Any]:
    """An mlcroissant record as {leaf field id: value}.

    mlcroissant renders a struct as a dict of its subfields and a repeated struct as a list of
    such dicts, but puts a struct nested inside another one beside it under its own id; leaf
    ids are full paths, so collecting them wherever they sit is unambiguous.
    """
    out: dict[str, Any] = {}

    def walk(key: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, v)
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for k in dict.fromkeys(k for x in value for k in x):
                walk(k, [x.get(k) for x in value])
        else:
            out[key] = plain_value(value)

    for k, v in record.items():
        walk(k, v)
    return out


def _pick(value: Any, key: str) -> Any:
    """The subfield ``key`` of a value; a dotted key (``target_new.str``: a struct's leaf
    declared on its parent, see curate.publish.croissant) one step per part."""
    for part in key.split("."):
        value = _pick_one(value, part)
    return value


def _pick_one(value: Any, key: str) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_pick_one(v, key) for v in value]
    return value.get(key)


def expected_leaves(fields: list[dict], row: dict[str, Any]) -> dict[str, Any]:
    """The leaves a parquet row should give, following croissant.json's field tree."""
    out: dict[str, Any] = {}

    def visit(field: dict, value: Any) -> None:
        if "subField" not in field:
            out[field["@id"]] = value
        elif field.get("repeated") and value == []:
            out[field["@id"]] = []  # an empty repeated struct has no element to hold leaves
        else:
            for sub in field["subField"]:
                visit(sub, _pick(value, sub["name"]))

    for field in fields:
        visit(field, row[field["name"]])
    return out


def test_croissant_validates_and_yields_the_parquet_rows(export, caplog):
    import mlcroissant as mlc

    doc = json.loads((export / "croissant.json").read_text(encoding="utf-8"))
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    ds = mlc.Dataset(jsonld=str(export / "croissant.json"))
    assert not ds.metadata.ctx.issues.errors
    # every shard listed with its real checksum
    objects = [d for d in doc["distribution"] if d["@type"] == "cr:FileObject"]
    assert sorted(o["contentUrl"] for o in objects) == [f"data/{f.name}" for f in shards(export)]
    for o in objects:
        blob = (export / o["contentUrl"]).read_bytes()
        assert o["sha256"] == hashlib.sha256(blob).hexdigest()
    # the splits, then one RecordSet per config: one field per feature and the record's split
    splits_set, record_set = doc["recordSet"]
    assert splits_set["dataType"] == "cr:Split"
    names = [s.name.split("-")[0] for s in shards(export)]
    assert sorted(d["splits/name"] for d in splits_set["data"]) == sorted(set(names))
    *fields, split_field = record_set["field"]
    assert [f["name"] for f in fields] == list(declared_features(export))
    assert split_field["references"] == {"field": {"@id": "splits/name"}}
    rows = [
        {**r, "__split": f.name.split("-")[0]}
        for f in shards(export)
        for r in pq.read_table(f).to_pylist()
    ]
    with caplog.at_level("WARNING"):
        records = list(ds.records(record_set=record_set["@id"]))
    assert not [r for r in caplog.records if "Could not match" in r.getMessage()]
    split_id = split_field["@id"]
    got_splits = [plain_value(r.pop(split_id)) for r in records]
    assert got_splits == [r["__split"] for r in rows]
    got = [croissant_leaves(r) for r in records]
    want = [expected_leaves(fields, r) for r in rows]
    assert len(got) == len(want) == len(rows)
    assert got == want


def test_croissant_nested_fields(exports):
    doc = json.loads((exports["hard"] / "croissant.json").read_text(encoding="utf-8"))
    fields = {f["name"]: f for f in doc["recordSet"][1]["field"]}
    rw = fields["requested_rewrite"]
    assert rw["repeated"] is True
    # a struct in a list of structs: its leaves on the list's field, named and keyed by path
    # (mlcroissant builds records one level deep; tests/test_croissant_rows.py reads them back)
    assert not any(f["name"] == "target_new" for f in rw["subField"])
    text = next(f for f in rw["subField"] if f["name"] == "target_new.str")
    assert text["@id"] == "default/requested_rewrite/target_new/str"
    assert text["dataType"] == "sc:Text"
    assert text["source"]["extract"] == {"column": "requested_rewrite"}
    assert text["source"]["transform"] == [{"jsonPath": "target_new"}, {"jsonPath": "str"}]
    assert fields["case_id"]["dataType"] == "sc:Integer"
    triples = next(f for f in fields["orig"]["subField"] if f["name"] == "triples")
    assert triples["repeated"] is True and triples["dataType"] == "sc:Text"


# --------------------------------------------------------------------------- card metadata


def test_licence_outside_the_hub_list_is_one_exit_2_line(tmp_path, capsys):
    capsys.readouterr()
    rc = cli("export", "mquake", SAMPLE, "--out", tmp_path / "o", "--license", "cc-by-4")
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "'cc-by-4' is not a Hub licence identifier" in err
    assert "did you mean cc-by-4.0" in err
    for ident in ("apache-2.0", "mit", "cc0-1.0", "odc-by", "other", "unknown"):
        assert f" {ident}," in err or f" {ident} (" in err
    assert not (tmp_path / "o").exists()


def test_licence_list_is_the_hubs():
    """The dated copy of the Hub's table (hub-docs, August 2026: 83 identifiers), as
    scripts/make_hub_licenses.py parses the page."""
    import json
    from importlib import resources

    known = hub_licenses()
    copy = json.loads(resources.files("curate").joinpath("data/hub_licenses.json").read_text())
    assert copy["date"] >= "2026-08-22" and len(copy["commit"]) == 40
    assert len(known) >= 83
    for newer in ("eupl-1.2", "llama3.1", "llama4", "openmdw-1.1", "gemma"):
        assert check_license(newer) == newer
    assert known["cc-by-nc-sa-4.0"] == "Creative Commons Attribution Non Commercial Share Alike 4.0"
    assert check_license("MIT") == "mit"
    assert check_license(" cc-by-sa-4.0 ") == "cc-by-sa-4.0"
    with pytest.raises(UsageError):
        check_license("GPL-3.0-or-later")


def test_card_tags_language_and_source_datasets(tmp_path):
    out = tmp_path / "o"
    assert (
        cli(
            "export", "mquake", SAMPLE, "--out", out, "--license", "CC-BY-4.0",
            "--tag", "knowledge-editing", "--tag", "multi-hop", "--language", "en",
            "--source-dataset", "princeton-nlp/MQuAKE",
        )
        == 0
    )  # fmt: skip
    meta, _ = front_matter(out)
    assert meta["license"] == "cc-by-4.0"
    assert meta["tags"] == ["knowledge-editing", "multi-hop"]
    assert meta["language"] == ["en"]
    assert meta["source_datasets"] == ["princeton-nlp/MQuAKE"]
    doc = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    assert doc["license"] == "cc-by-4.0"
    assert doc["inLanguage"] == ["en"]
    assert doc["isBasedOn"] == ["princeton-nlp/MQuAKE"]
    assert "knowledge-editing" in doc["keywords"]


def test_unknown_language_is_one_exit_2_line(tmp_path, capsys):
    capsys.readouterr()
    assert cli("export", "mquake", SAMPLE, "--out", tmp_path / "o", "--language", "english") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--language 'english'" in err


def test_footer_says_what_happened(exports, tmp_path, hard_path):
    _, body = front_matter(exports["sample"])
    assert body.rstrip().endswith(footer(["audited", "exported"]))
    assert "curate 0.1.0: audited and exported." in body
    assert "fixed" not in body.splitlines()[-1] and "pypi.org" not in body
    out = tmp_path / "fixed"
    assert cli("fix", "mquake", SAMPLE, "--out", out, "--tag", "remastered") == 0
    meta, body = front_matter(out)
    last = body.rstrip().splitlines()[-1]
    assert "audited and fixed." in last and "exported" not in last
    assert meta["tags"] == ["remastered"]
    assert (out / "croissant.json").exists()


#: Every boundary of the Hub's buckets: (n, label).
BOUNDARIES = [(0, "n<1K")] + [
    (n, label)
    for (bound, label), (_, nxt) in zip(
        size_buckets(), [*size_buckets()[1:], (0, "n>1T")], strict=True
    )
    for n, label in ((bound - 1, label), (bound, nxt))
]


@pytest.mark.parametrize(("n", "label"), BOUNDARIES)
def test_size_category_at_every_boundary(n, label):
    assert size_category(n) == label


def test_size_buckets_are_the_hubs_labels():
    import datasets

    path = Path(datasets.__file__).parent / "utils" / "resources" / "size_categories.json"
    labels = json.loads(path.read_text())
    assert [label for _, label in size_buckets()] + ["n>1T"] == [
        x for x in labels if x != "unknown"
    ]
    assert size_category(10**10) == "10B<n<100B"  # was 1B<n<10B before
    assert size_category(10**11 + 5) == "100B<n<1T"
    assert size_category(10**15) == "n>1T"


@given(st.integers(0, 10**14))
def test_size_category_is_the_decade(n):
    label = size_category(n)
    k = len(str(n)) - 1 if n else 0  # n in [10**k, 10**(k+1))
    assert label == ("n<1K" if k < 3 else "n>1T" if k >= 12 else size_buckets()[k - 2][1])


# --------------------------------------------------------------------------- numeric columns


@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1))
def test_integer_text_columns_come_back_as_integers(values):
    df = pl.DataFrame(
        {"x": [None if v is None else str(v) for v in values]}, schema={"x": pl.String}
    )
    out = numeric_columns(df)
    if all(v is None for v in values):
        assert out.schema["x"] == pl.String
    else:
        assert out.schema["x"] == pl.Int64
        assert out["x"].to_list() == values


@given(st.lists(st.floats(allow_nan=False), min_size=1))
def test_float_text_columns_come_back_as_floats(values):
    df = pl.DataFrame({"x": [repr(v) for v in values]})
    out = numeric_columns(df)
    assert out.schema["x"] == pl.Float64
    assert out["x"].to_list() == values


@pytest.mark.parametrize(
    "cells", [["007", "8"], ["+3", "4"], ["1.50", "2"], ["5", "five"], ["", "1"], ["1e400"]]
)
def test_text_that_would_change_stays_text(cells):
    assert numeric_columns(pl.DataFrame({"x": cells})).schema["x"] == pl.String


def test_glycan_and_protein_columns_stay_text():
    df = pl.DataFrame({"glycan": ["1", "2"], "n": ["1", "2"]})
    out = numeric_columns(df, text=["glycan"])
    assert out.schema == {"glycan": pl.String, "n": pl.Int64}


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_typed_inputs_keep_their_text_columns_text(tmp_path, fmt):
    """A parquet or JSON column of digit strings (a taxon id, a zip code) was text in the input
    and stays text; a CSV has no types, so there digits become numbers. Integers stay integers.
    """
    glycans = pl.read_csv(GLYCAN_SAMPLE, infer_schema=False).head(60)
    df = glycans.select("glycan", "Species", "Genus", "taxon_id").with_columns(
        pl.int_range(pl.len()).alias("n")
    )
    assert df["taxon_id"].drop_nulls().str.contains(r"^[0-9]+$").all()
    src = tmp_path / f"in.{fmt}"
    df.write_parquet(src) if fmt == "parquet" else df.write_ndjson(src)
    out = tmp_path / "hf"
    assert cli("export", "glycan", src, "--out", out) in (0, 1)
    schema = pq.read_schema(shards(out)[0])
    assert pa.types.is_large_string(schema.field("taxon_id").type)
    assert schema.field("n").type == pa.int64()
    rows = [r for f in shards(out) for r in pq.read_table(f).to_pylist()]
    assert sorted(r["taxon_id"] or "" for r in rows) == sorted(
        df["taxon_id"].fill_null("").to_list()
    )


def test_interaction_matrix_export_is_numeric_and_reads_through_croissant(tmp_path):
    """A real binding-matrix slice (glycowork's v12 table): every glycan column a float, even
    one with no measurement in the slice, and odd column names survive Croissant."""
    from importlib.resources import files

    import datasets
    import mlcroissant as mlc

    full = pl.read_csv(str(files("glycowork") / "glycan_data" / "v12_glycan_binding.csv"),
                       infer_schema=False)  # fmt: skip
    glycans = [c for c in full.columns if c not in ("target", "protein")][:30]
    part = full.select(*glycans, "target", "protein").head(40)
    src = tmp_path / "matrix.csv"
    part.write_csv(src)
    out = tmp_path / "hf"
    assert cli("export", "glycan", src, "--out", out) == 0
    declared = declared_features(out)
    assert all(declared[g] == datasets.Value("float64") for g in glycans)
    assert any(part[g].null_count() == part.height for g in glycans)  # an empty column too
    assert declared["protein"] == datasets.Value("large_string")
    rows = [r for f in shards(out) for r in pq.read_table(f).to_pylist()]
    assert [r["protein"] for r in rows] == part["protein"].to_list()
    doc = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    fields = doc["recordSet"][1]["field"][:-1]  # the last is the split
    assert {f["name"] for f in fields} == set(part.columns)
    ds = mlc.Dataset(jsonld=str(out / "croissant.json"))
    records = list(ds.records(record_set="default"))
    assert {plain_value(r.pop("default/split")) for r in records} == {"train"}
    got = [croissant_leaves(r) for r in records]
    assert got == [expected_leaves(fields, r) for r in rows]


def test_a_row_bigger_than_a_row_group_gets_one_of_its_own(tmp_path):
    """After smaller rows in the same shard (this once looped forever)."""
    table = pa.table({"s": ["a" * 10] * 5 + ["b" * 5000] + ["c" * 10] * 3})
    out = tmp_path / "o"
    write_hf_dataset(out, {"train": table}, CardInfo(pretty_name="x"), max_row_group_bytes=1000)
    (f,) = shards(out)
    meta = pq.read_metadata(f)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [5, 1, 3]
    assert pq.read_table(f).column("s").to_pylist() == table.column("s").to_pylist()


def test_a_streams_row_group_cap_lowers_the_writers_limit_per_split(tmp_path):
    """``SplitStream.row_group_bytes`` (set by a family whose rows are long nested lists) caps
    that split's row groups below the writer's limit; a split without one, or with a cap above
    the limit, keeps the limit (the cap never raises it)."""
    table = pa.table({"s": ["x" * 100] * 40})  # 104 bytes a row (string and offset)
    capped = SplitStream(table.schema, lambda: table.to_batches(), 40, row_group_bytes=1100)
    above = SplitStream(table.schema, lambda: table.to_batches(), 40, row_group_bytes=10**9)
    out = tmp_path / "o"
    write_hf_dataset(
        out,
        {"train": capped, "test": above, "validation": table},
        CardInfo(pretty_name="x"),
        max_row_group_bytes=2200,
    )
    groups = {}
    for f in shards(out):
        meta = pq.read_metadata(f)
        split = Path(f).name.split("-")[0]
        groups[split] = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert groups["train"] == [10, 10, 10, 10]  # 1100 bytes: ten rows
    assert groups["test"] == groups["validation"] == [21, 19]  # the writer's 2200


def test_the_licence_refresh_script_parses_the_hubs_page(tmp_path, monkeypatch):
    """scripts/make_hub_licenses.py on a page like hub-docs' (rows with and without a trailing
    comment, an escaped asterisk): every identifier, in order, with its name."""
    import importlib.util
    import json

    path = Path(__file__).resolve().parents[1] / "scripts" / "make_hub_licenses.py"
    spec = importlib.util.spec_from_file_location("make_hub_licenses", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = [f"| Licence {i} | `lic-{i}` |" for i in range(60)]
    rows[3] += " <!-- info: https://example.org -->"
    rows.append("| Do What The F\\*ck You Want To Public License | `wtfpl` |")
    page = "intro\n<!-- region licenses -->\n| Fullname | id |\n|---|---|\n"
    page += "\n".join(rows) + "\n<!-- endregion -->\nafter | `not-a-licence` |\n"
    got = script.parse(page)
    assert list(got) == [*(f"lic-{i}" for i in range(60)), "wtfpl"]
    assert got["wtfpl"] == "Do What The F*ck You Want To Public License"
    out = tmp_path / "hub_licenses.json"
    monkeypatch.setattr(script, "OUT", out)
    src = tmp_path / "page.md"
    src.write_text(page, "utf-8")
    argv = ["x", "--file", str(src), "--commit", "c" * 40, "--date", "2026-12-06"]
    monkeypatch.setattr("sys.argv", argv)
    script.main()
    doc = json.loads(out.read_text("utf-8"))
    assert doc["date"] == "2026-12-06" and len(doc["licenses"]) == 61


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("original", True),
        ("extended|princeton-nlp/MQuAKE", True),
        ("princeton-nlp/MQuAKE", True),
        ("not a valid thing!!", False),
        ("extended|a/b/c", False),
    ],
)
def test_source_dataset_takes_the_hubs_forms(value, ok, tmp_path, capsys):
    """original, extended, extended|ID or a dataset id (as huggingface_hub checks repo ids);
    anything else is one exit-2 line before any work, and a card holding it is a defect."""
    capsys.readouterr()
    out = tmp_path / "o"
    rc = cli("export", "mquake", SAMPLE, "--out", out, "--source-dataset", value)
    err = capsys.readouterr().err
    if ok:
        assert rc == 0, err
        meta, _ = front_matter(out)
        assert meta["source_datasets"] == [value]
        return
    assert rc == 2 and err.count("\n") == 1 and "not a source dataset the Hub knows" in err
    assert not out.exists()
    good = tmp_path / "good"
    assert cli("export", "mquake", SAMPLE, "--out", good, "--source-dataset", "original") == 0
    card = good / "README.md"
    card.write_text(card.read_text("utf-8").replace("- original", f"- '{value}'", 1), "utf-8")
    capsys.readouterr()
    assert cli("card", "check", good) == 1
    assert "source_datasets[0]" in capsys.readouterr().out


def test_shards_are_written_as_datasets_writes_them(tmp_path):
    """datasets' own ParquetWriter settings: content-defined chunking (its options recorded in
    the file, as datasets records them), a page index, its per-column compression."""
    from datasets import config
    from datasets.arrow_writer import get_parquet_column_options

    out = tmp_path / "o"
    assert cli("export", "mquake", SAMPLE, "--out", out) == 0
    (f,) = shards(out)
    md = pq.ParquetFile(f).metadata
    assert json.loads(md.metadata[b"content_defined_chunking"]) == config.DEFAULT_CDC_OPTIONS
    want = get_parquet_column_options(declared_features(out), pq.read_schema(f))["compression"]
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            assert col.has_offset_index and col.has_column_index, col.path_in_schema
            assert col.compression.lower() == want[col.path_in_schema], col.path_in_schema


def test_card_metadata_comes_from_the_data(tmp_path):
    """An audio-only manifest's card names audio classification only (not video or image);
    a MQuAKE card is English unless --language says otherwise."""
    root = Path(__file__).resolve().parents[1] / "curate" / "data" / "samples"
    out = tmp_path / "audio"
    musiccaps = ["--column", "sample_id=ytid", "--value", "label=real", "--value", "modality=audio"]
    assert cli("export", "deepfake", root / "musiccaps_manifest.csv", "--out", out, *musiccaps) == 0
    meta, _ = front_matter(out)
    assert meta["task_categories"] == ["audio-classification"]
    croissant = json.loads((out / "croissant.json").read_text("utf-8"))
    assert "video-classification" not in croissant["keywords"]
    en = tmp_path / "en"
    assert cli("export", "mquake", SAMPLE, "--out", en) == 0
    assert front_matter(en)[0]["language"] == ["en"]
    assert json.loads((en / "croissant.json").read_text("utf-8"))["inLanguage"] == ["en"]
    de = tmp_path / "de"
    assert cli("export", "mquake", SAMPLE, "--out", de, "--language", "de") == 0
    assert front_matter(de)[0]["language"] == ["de"]
