"""The columnar reader builds exactly the tables, findings and ids of the per-record reader.

The per-record reader (every record through pydantic, the tables from its objects) is the
reference: ``load(..., keep_records=True)`` still takes it. The columnar path (Arrow parses a
batch, a check derived from the models vouches for records, polars lays the tables out) must
give the same ``KEData`` for the same input, valid or not: same tables row for row, same KE001
rows naming the same case, field and line, same ids, same noted shape.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import curate.io.json_files
import curate.io.read
import curate.io.records
import curate.io.spans
from curate.families import get_family
from curate.families.knowledge_editing_columns import model_check
from curate.families.knowledge_editing_read import batch_columns, parse_type
from curate.io.read import open_source

FAM = get_family("knowledge-editing")


def _same(fast: Any, slow: Any) -> None:
    for name in ("cases", "hops", "edits", "marks", "schema_findings"):
        assert_frame_equal(getattr(fast, name), getattr(slow, name), check_column_order=True)
    assert fast.all_ids == slow.all_ids
    assert fast.stats == slow.stats
    assert (fast.shape.present, fast.shape.id_types, fast.shape.irregular) == (
        slow.shape.present,
        slow.shape.id_types,
        slow.shape.irregular,
    )
    assert [vars(i) for i in fast.inputs] == [vars(i) for i in slow.inputs]


def _load_both(paths: list[Path]) -> tuple[Any, Any]:
    return FAM.load(paths), FAM.load(paths, keep_records=True)


def _dumps(record: Any) -> bytes:
    try:
        return orjson.dumps(record)
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(record).encode()


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(_dumps(r) + b"\n" for r in records))
    return path


def _columnar_batches(path: Path) -> int:
    """How many of the file's batches the columnar path takes (the test must exercise it)."""
    src = open_source(path)
    row, n = 0, 0
    for b in src.batches:
        n += batch_columns(b, row) is not None
        row += len(b)
    return n


def test_real_cases_as_json_lines_identical(hard_records: list[dict], tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "hard.jsonl", hard_records)
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 100):
        assert _columnar_batches(path) == 5
        fast, slow = _load_both([path])
    _same(fast, slow)
    assert fast.cases.height == 429 and fast.schema_findings.height == 0


def test_real_json_array_unchanged(hard_path: Path) -> None:
    fast, slow = _load_both([hard_path])
    _same(fast, slow)


# --------------------------------------------------------------------------- invalid records


def _paths(x: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(x, dict):
        for k, v in x.items():
            out += _paths(v, (*at, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += _paths(v, (*at, i))
    return out


def _mutate(rec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One random defect (or oddity a valid record may have) somewhere in the record."""
    rec = copy.deepcopy(rec)
    where = rng.choice([p for p in _paths(rec) if p])
    parent = rec
    for k in where[:-1]:
        parent = parent[k]
    key = where[-1]
    value = parent[key]
    kind = rng.choice(
        ["null", "drop", "empty", "int", "float", "bool", "str", "list", "extra", "short", "big"]
    )
    if kind == "drop" and isinstance(parent, dict):
        del parent[key]
    elif kind == "drop":
        parent.pop(key)
    elif kind == "null":
        parent[key] = None
    elif kind == "empty":
        parent[key] = "" if isinstance(value, str) else [] if isinstance(value, list) else {}
    elif kind == "int":
        parent[key] = 7
    elif kind == "float":
        parent[key] = 7.5
    elif kind == "bool":
        parent[key] = True
    elif kind == "str":
        parent[key] = "x"
    elif kind == "list":
        parent[key] = [value]
    elif kind == "extra" and isinstance(value, dict):
        value["note"] = "an extra field"
    elif kind == "short" and isinstance(value, list) and value:
        value.pop()
    elif kind == "big" and where == ("case_id",):
        parent[key] = 2**70  # (in edit_triples_idx the per-record reader fails: not compared)
    else:
        parent[key] = None
    return rec


#: Records a valid file may hold that the columnar path leaves to pydantic.
ODD = [
    lambda r: {**r, "case_id": str(r["case_id"])},  # another kind of id in the batch
    lambda r: {**r, "answer_extended": ["x", "y"]},
    lambda r: {**r, "edited": True},
    lambda r: {
        **r,
        "single_hops": [
            {k: v for k, v in h.items() if k != "answer_alias"} for h in r["single_hops"]
        ],
    },
    lambda r: {
        **r,
        "requested_rewrite": [
            {**w, "target_new": {"str": w["target_new"]["str"]}, "question": None}
            for w in r["requested_rewrite"]
        ],
    },
    lambda r: {**r, "single_hops": [{**h, "cloze": None} for h in r["single_hops"]]},
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_invalid_records_mixed_in_identical(
    hard_records: list[dict], tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    records: list[Any] = []
    for i in range(1200):
        rec = hard_records[i % len(hard_records)]
        rec = {**rec, "case_id": rec["case_id"] + (i // len(hard_records)) * 10**6}
        roll = rng.random()
        if roll < 0.04:
            rec = _mutate(rec, rng)
        elif roll < 0.05:
            rec = rng.choice(ODD)(rec)
        records.append(rec)
    path = _write_jsonl(tmp_path / "mixed.jsonl", records)
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 50):
        assert _columnar_batches(path) >= 3  # several clean batches take the columnar path
        fast, slow = _load_both([path])
    _same(fast, slow)
    assert slow.schema_findings.height > 0  # the mutations did make invalid records


def test_workers_do_not_change_the_result(hard_records: list[dict], tmp_path: Path) -> None:
    """Batches laid out in 1, 2 or 3 threads (out of order, several in flight) give the same
    data, invalid records named alike, in file order; and the per-record reader's."""
    rng = random.Random(4)
    records: list[Any] = []
    for i in range(1500):
        rec = hard_records[i % len(hard_records)]
        rec = {**rec, "case_id": rec["case_id"] + (i // len(hard_records)) * 10**6}
        roll = rng.random()
        records.append(
            _mutate(rec, rng) if roll < 0.03 else rng.choice(ODD)(rec) if roll < 0.04 else rec
        )
    path = _write_jsonl(tmp_path / "mixed.jsonl", records)
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 40):
        loads = [FAM.load([path], workers=w) for w in (1, 2, 3)]
        slow = FAM.load([path], keep_records=True)
    assert loads[0].schema_findings.height > 0
    for other in (*loads[1:], slow):
        _same(loads[0], other)


def test_check_never_vouches_for_an_invalid_record(hard_records: list[dict]) -> None:
    """The check may leave a valid record to pydantic, never pass an invalid one."""
    from curate.families.knowledge_editing_columns import parse_json
    from curate.families.knowledge_editing_read import validate_record

    rng = random.Random(7)
    schema = pa.schema(list(parse_type(int)))
    check = model_check(int)
    assert check is not None
    recs, parsed = [], []
    for i in range(3000):
        rec = _mutate(hard_records[i % len(hard_records)], rng)
        table = parse_json(_dumps(rec) + b"\n", 1, schema)
        if table is not None:  # else Arrow refused it: read record by record
            recs.append(rec)
            parsed.append(table)
    assert len(parsed) > 500
    # the check is row by row: run once over all the parsed records (one frame per record
    # cost ~10 ms each)
    ok = pl.from_arrow(pa.concat_tables(parsed)).select(check).to_series().to_list()
    assert len(ok) == len(recs)
    vouched_invalid = [
        r for r, v in zip(recs, ok, strict=True) if v and validate_record(r)[1] is None
    ]
    assert not vouched_invalid, vouched_invalid[:1]


# --------------------------------------------------------------------------- parquet


@pytest.mark.parametrize("group", [100, 10])
def test_parquet_of_the_raw_cases_identical(
    hard_records: list[dict], tmp_path: Path, group: int
) -> None:
    """Row groups above a batch are read one by one (in batches), smaller ones several to a
    batch (10-row groups: 6 to a 64-row batch)."""
    path = tmp_path / "hard.parquet"
    pq.write_table(pa.Table.from_pylist(hard_records), path, row_group_size=group)
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 64):
        n = _columnar_batches(path)
        assert n >= 5 and (group > 64 or n == -(-len(hard_records) // 60))
        fast, slow = _load_both([path])
    _same(fast, slow)
    jsonl = FAM.load([_write_jsonl(tmp_path / "hard.jsonl", hard_records)])
    for name in ("cases", "hops", "edits"):
        assert_frame_equal(getattr(fast, name), getattr(jsonl, name))


def test_parquet_curate_exported_identical(hard_path: Path, tmp_path: Path) -> None:
    from curate import api

    out = tmp_path / "export"
    api.export("mquake", [hard_path], out)
    files = sorted(out.rglob("*.parquet"))
    assert files
    fast, slow = _load_both(files)
    _same(fast, slow)
    assert fast.cases.height == 429
    assert _columnar_batches(files[0]) >= 1


def _coded_defect(rec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """An empty, null or missing value in a field the parquet reader keeps coded."""
    rec = copy.deepcopy(rec)
    where = rng.choice(
        [
            ("requested_rewrite", 0, "subject"),
            ("requested_rewrite", 0, "prompt"),
            ("requested_rewrite", 0, "target_new", "str"),
            ("requested_rewrite", 0, "target_new", "id"),
            ("orig", "triples", 0, 1),
            ("orig", "new_triples_labeled", 0, 2),
            ("orig", "edit_triples", 0, 0),
            ("single_hops", 0, "answer"),
        ]
    )
    parent = rec
    for k in where[:-1]:
        parent = parent[k]
    parent[where[-1]] = rng.choice(["", None])
    return rec


@pytest.mark.parametrize("seed", [1, 2])
def test_parquet_coded_fields_identical(
    hard_records: list[dict], tmp_path: Path, seed: int
) -> None:
    """Parquet batches hand the coded fields over as dictionaries (codes through the tables):
    the same tables and the same KE001 rows (case, field) as the per-record reader, whether a
    row group's dictionaries hold an empty string (the batch then goes decoded) or not."""
    from curate.families import knowledge_editing_columns as kc

    rng = random.Random(seed)
    records = []
    for i in range(1300):
        rec = hard_records[i % len(hard_records)]
        rec = {**rec, "case_id": rec["case_id"] + (i // len(hard_records)) * 10**6}
        # defects only in the last row groups: the first ones stay clean (coded)
        records.append(_coded_defect(rec, rng) if i > 900 and rng.random() < 0.05 else rec)
    path = tmp_path / "coded.parquet"
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=100)
    coded = []
    real = kc.Codes.categories

    def counted(self: Any) -> pl.Series:
        coded.append(1)
        return real(self)

    # 100-row groups above a 64-row batch: each read alone, with its dictionaries
    with (
        mock.patch.object(kc.Codes, "categories", counted),
        mock.patch.object(curate.io.records, "BATCH_ROWS", 64),
    ):
        fast, slow = _load_both([path])
    _same(fast, slow)
    assert len(coded) >= 9  # the clean row groups took the coded path
    assert slow.schema_findings.height > 5  # and the defects made invalid records
    jsonl = FAM.load([_write_jsonl(tmp_path / "coded.jsonl", records)])
    for name in ("cases", "hops", "edits"):
        assert_frame_equal(getattr(fast, name), getattr(jsonl, name))
    named = ("row", "record", "field", "message")  # details name the file and its line or row
    assert_frame_equal(fast.schema_findings.select(named), jsonl.schema_findings.select(named))


#: Values for coded fields: shared and private entities, the empty string (refused), text JSON
#: escapes, non-ASCII, a long label.
_CODED_VALUES = st.sampled_from(
    ["Q1", "Q2", "P17", "", 'say "hi"', "back\\slash", "Ørsted", "東京", "x" * 300, "Q1 "]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), group=st.integers(1, 9), cases=st.integers(1, 24))
def test_parquet_codes_round_trip(tmp_path: Path, data: Any, group: int, cases: int) -> None:
    """Any strings in the coded fields, any row groups: the parquet load (coded fields as codes)
    gives the tables and KE001 rows the same cases give as JSON Lines (decoded strings)."""
    from conftest import simple_case

    records = []
    for i in range(cases):
        rec = simple_case(100 + i)
        for rw in rec["requested_rewrite"]:
            rw["subject"] = data.draw(_CODED_VALUES)
            rw["target_new"]["str"] = data.draw(_CODED_VALUES)
        for key in ("triples", "new_triples_labeled", "edit_triples"):
            for t in rec["orig"][key]:
                t[data.draw(st.integers(0, 2))] = data.draw(_CODED_VALUES)
        for h in rec["single_hops"]:
            h["answer"] = data.draw(_CODED_VALUES)
        records.append(rec)
    folder = tmp_path / f"{group}-{cases}-{abs(hash(str(records))) % 10**9}"
    folder.mkdir()
    path = folder / "cases.parquet"
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=group)
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 4):  # groups of 1-4 rows read together
        got = FAM.load([path])
    want = FAM.load([_write_jsonl(folder / "cases.jsonl", records)])
    for name in ("cases", "hops", "edits"):
        assert_frame_equal(getattr(got, name), getattr(want, name))
    named = ("row", "record", "field", "message")
    assert_frame_equal(got.schema_findings.select(named), want.schema_findings.select(named))


def test_coded_dictionary_holding_a_null_is_not_vouched_for(hard_records: list[dict]) -> None:
    """A dictionary may hold a null (Arrow allows it; a value whose index points there is
    null): the coded check sees only the index, so such a batch must go decoded, where the
    record check sees the null subject and leaves the record to pydantic."""
    from curate.families.knowledge_editing_columns import Codes, conform

    batch = pa.Table.from_pylist(hard_records[:3]).to_batches()[0]
    at = batch.schema.get_field_index("requested_rewrite")
    rewrites = batch.column(at)
    struct = rewrites.values
    subject = struct.field("subject").dictionary_encode()
    indices = subject.indices.to_pylist()
    indices[0] = len(subject.dictionary)  # record 0, edit 0: the dictionary's null
    dictionary = pa.concat_arrays([subject.dictionary, pa.nulls(1, pa.string())])
    subject = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), dictionary)
    children = [subject if f.name == "subject" else struct.field(f.name) for f in struct.type]
    struct = pa.StructArray.from_arrays(children, names=[f.name for f in struct.type])
    rewrites = pa.ListArray.from_arrays(rewrites.offsets, struct)
    batch = batch.set_column(at, "requested_rewrite", rewrites)
    assert batch.column(at).to_pylist()[0][0]["subject"] is None

    cols = batch_columns(curate.io.records.Batch(None, 0, arrow=batch), 0)
    assert cols is not None
    assert cols[0].unsure == [0]
    conformed = conform(batch, parse_type(int), Codes(int))
    assert conformed is not None
    assert conformed[1] is None  # decoded: the null is a null again


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["", "a", "b", "Q1", "é", "a\x00", "long " * 5]) | st.text(),
            max_size=30,
        ),
        max_size=4,
    )
)
def test_string_pool_distinct_gives_each_string_once_and_back(parts: list[list[str]]) -> None:
    """:meth:`StringPool.distinct` (what a Ray shard sends): each string of the pool once, and
    indexes that give every pooled string back in order, whatever repeats across the parts."""
    from curate.families.knowledge_editing_read import StringPool

    pool = StringPool()
    for i, part in enumerate(parts):
        # a parquet dictionary is plain or large; the pool holds both
        pool._parts.append(pa.array(part, pa.string() if i % 2 else pa.large_string()))
        pool._size += len(part)
    strings, index = pool.distinct()
    flat = [x for part in parts for x in part]
    assert strings.type == pa.large_string()
    assert len(set(strings.to_pylist())) == len(strings)
    got = strings.to_pylist() if index is None else strings.take(index.to_arrow()).to_pylist()
    assert got == flat
    assert sorted(set(flat)) == sorted(strings.to_pylist())


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "mixed"])
def test_shard_round_trip_keeps_tables_and_row_order_note(
    hard_records: list[dict], tmp_path: Path, kind: str
) -> None:
    """A Ray shard (:class:`_Shard`: tables as Arrow, coded columns as indexes into the shard's
    strings) unpacks to the tables the worker built, and ``row`` keeps polars' sorted note that
    Arrow drops (the rules' group-bys on ``row`` ran 2x slower without it).

    The ways a batch reaches a shard's string pool: parquet row groups whose coded fields come
    as dictionaries (kept as codes); JSON Lines in several blocks (coded after the parse, kept as
    codes too), one of them holding a string case id among integers (that batch goes through
    pydantic: categories, mapped to indexes once per shard); and ``mixed``, a parquet shard
    where one row group's dictionary holds an empty subject (that batch is read decoded, as
    categories, between coded ones)."""
    import pickle

    from curate.families import knowledge_editing_read as ke_read
    from curate.families.knowledge_editing import FAMILY as KE
    from curate.families.knowledge_editing import load_span
    from curate.io.spans import SpanNumbering, input_spans

    records = copy.deepcopy(hard_records)
    if kind == "mixed":
        records[120]["requested_rewrite"][0]["subject"] = ""
    if kind == "jsonl":
        records[260]["case_id"] = "case-260"
        path = tmp_path / "hard.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    else:
        path = tmp_path / "hard.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=50)
    with (
        mock.patch.object(curate.io.spans, "SPAN_MIN_BYTES", 1),
        mock.patch.object(curate.io.json_files, "JSONL_BLOCK", 64 << 10),
    ):
        spans = input_spans(path, None, 2)
        assert spans is not None and len(spans) >= 2
        if kind == "jsonl":
            spans = list(SpanNumbering(spans))
        kept, owned = [], []
        add, own = ke_read.StringPool.add, ke_read.StringPool.own
        with (
            mock.patch.object(
                ke_read.StringPool, "add", lambda p, *a: kept.append(1) or add(p, *a)
            ),
            mock.patch.object(ke_read.StringPool, "own", lambda p, c: owned.append(1) or own(p, c)),
        ):
            shards = [load_span(span, span.first_index, None) for span in spans]
        # each way was taken: codes kept (parquet's and parsed JSON's), categories mapped
        assert kept, kind
        assert len(owned) == len(spans)
        for span, made in zip(spans, shards, strict=True):
            # each string once: the driver makes each a category once
            assert len(made.strings.unique()) == len(made.strings)
            shard = pickle.loads(pickle.dumps(made, protocol=5))
            got = shard.unpack()
            want = KE._load([span], progress=None, keep_records=False, first_row=span.first_index)
            for name in ("cases", "hops", "edits"):
                assert_frame_equal(getattr(got, name), getattr(want, name))
                assert getattr(got, name)["row"].flags["SORTED_ASC"], name
            assert_frame_equal(got.schema_findings, want.schema_findings)


def _lists_of(lengths: list[int | None], tag: str) -> list[list[str] | None]:
    return [
        None if n is None else [f"{tag}{r}.{h}" for h in range(n)] for r, n in enumerate(lengths)
    ]


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(*[st.one_of(st.none(), st.integers(0, 4))] * 3), min_size=1, max_size=12
    ),
    aligned=st.booleans(),
)
def test_aligned_rows_are_the_per_record_loop(
    rows: list[tuple[int | None, int | None, int | None]], aligned: bool
) -> None:
    """``_aligned`` (the hops' and edits' rows: item ``h`` of each list, null past its end) is
    the per-record reader's loop, whether the batch takes its shortcut (every record's lists
    there and as long as one another: exploded as they are) or the gathers."""
    from curate.families.knowledge_editing_columns import _aligned

    if aligned:  # the shortcut's batches: the first list's length everywhere, no null
        rows = [(a or 0,) * 3 for a, _, _ in rows]
    cols = list(zip(*rows, strict=True))
    df = pl.DataFrame(
        {
            "row": list(range(len(rows))),
            **{n: _lists_of(list(c), n) for n, c in zip("abc", cols, strict=True)},
        },
        schema_overrides={n: pl.List(pl.String) for n in "abc"},
    )
    got = _aligned(df, [pl.col(n) for n in "abc"], ["x", "y", "z"])
    want: list[tuple[Any, ...]] = []
    for r, lens in enumerate(rows):
        if None in lens:
            continue  # a null list (a record pydantic rejects): no rows
        for h in range(max(lens)):
            items = [f"{n}{r}.{h}" if h < k else None for n, k in zip("abc", lens, strict=True)]
            want.append((r, h, *items))
    assert got.rows() == want


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"\xef", b"\xbb", b"\xbf", b"a", b"\n", "，".encode(), "\ufeff".encode()]),
        max_size=400,
    )
)
def test_bom_search_is_the_whole_scan(data: list[bytes]) -> None:
    """``_has_bom`` (hops from one ``0xEF`` byte to the next, then the whole scan past
    ``_BOM_HOPS`` of them) says what ``BOM in data`` says, a mark at the end of a long run of
    lead bytes included."""
    from curate.families.knowledge_editing_columns import _BOM, _BOM_HOPS, _has_bom

    blob = b"".join(data)
    assert _has_bom(blob) == (_BOM in blob)
    late = b"\xef" * (_BOM_HOPS + 1) + blob
    assert _has_bom(late) == (_BOM in late)
