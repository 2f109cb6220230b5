"""Readers (``curate.io.read``) and unusable input.

The same real MQuAKE records are written in every supported format and read back through the
knowledge-editing family; every kind of unusable input must become one ``InputError`` line (and
exit code 2 from the CLI) that names the file and, where it applies, the position or record.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import tempfile
from pathlib import Path
from unittest import mock

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curate.io.json_files
import curate.io.read
import curate.io.records
from curate.cli.main import main
from curate.core.errors import InputError
from curate.core.outputs import atomic_path, write_bytes_atomic
from curate.families import get_family
from curate.io.read import open_source
from curate.schemas.knowledge_editing_tables import with_record

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"
FAM = get_family("mquake")


@pytest.fixture(scope="module")
def sample_records() -> list[dict]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def read_all(path: Path) -> list[curate.io.records.Batch]:
    """Open and drain a source, records included (readers are lazy: most errors surface while
    iterating, a JSON Lines line's when its batch's records are asked for)."""
    batches = list(open_source(path).batches)
    for b in batches:
        b.rows  # noqa: B018
    return batches


def rows_of(batches: list[curate.io.records.Batch]) -> list[dict]:
    return [r for b in batches for r in b.rows]


def load_cases(path: Path) -> tuple[dict[int, dict], dict[int, str | None], object]:
    """KE-load ``path``: case_id → validated record (original layout), case_id → split, data."""
    data = FAM.load([path], keep_records=True)
    recs = {c.case_id: c.to_original() for c in data.records.values()}
    split = {int(r): s for r, s in zip(data.cases["record"], data.cases["split"], strict=True)}
    return recs, split, data


def cases_frame(data):
    """The ``cases`` table without the columns that depend on file order and layout."""
    return data.cases.drop("row", "split").sort("record")


# --------------------------------------------------------------------------- round trips


@pytest.fixture(scope="module")
def roundtrip_dir(tmp_path_factory, sample_records) -> dict[str, Path]:
    """The 52 sample records in every format; hub/disk dict layouts split 40 train / 12 test."""
    import datasets

    datasets.disable_progress_bars()
    d = tmp_path_factory.mktemp("formats")
    recs = sample_records
    train, test = recs[:40], recs[40:]
    out: dict[str, Path] = {}

    out["json"] = d / "cases.json"
    out["json"].write_text(json.dumps(recs, ensure_ascii=False, indent=1), encoding="utf-8")

    out["jsonl"] = d / "cases.jsonl"
    # blank lines between records are allowed and must not shift anything
    out["jsonl"].write_text(
        "\n\n".join(json.dumps(r, ensure_ascii=False) for r in recs) + "\n", encoding="utf-8"
    )

    out["parquet"] = d / "cases.parquet"
    pq.write_table(pa.Table.from_pylist(recs), out["parquet"])

    hub = d / "hub"
    (hub / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(train), hub / "data" / "train-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(test), hub / "data" / "test-00000-of-00001.parquet")
    out["hub"] = hub

    out["disk"] = d / "disk"
    datasets.Dataset.from_list(recs).save_to_disk(str(out["disk"]))

    out["diskdict"] = d / "diskdict"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(train), "test": datasets.Dataset.from_list(test)}
    ).save_to_disk(str(out["diskdict"]))
    return out


@pytest.mark.parametrize(
    ("fmt", "expected_format"),
    [
        ("json", "json"),
        ("jsonl", "jsonl"),
        ("parquet", "parquet"),
        ("hub", "hf-parquet"),
        ("disk", "hf-disk"),
        ("diskdict", "hf-disk"),
    ],
)
def test_every_format_loads_identical_cases(roundtrip_dir, sample_records, fmt, expected_format):
    path = roundtrip_dir[fmt]
    assert open_source(path).format == expected_format
    recs, _splits, data = load_cases(path)
    ref_recs, _, ref_data = load_cases(SAMPLE)

    # Every record survives validation, with exactly the values of the input JSON.
    assert data.schema_findings.is_empty()
    assert len(recs) == len(sample_records) == 52
    assert recs == {r["case_id"]: r for r in sample_records}
    assert all(isinstance(k, int) for k in recs)
    assert recs == ref_recs
    # The columnar tables the rules read are identical too (hop and edit rows name their
    # case by row, which differs by format: compared by case id).
    assert cases_frame(data).equals(cases_frame(ref_data))
    for name, order in (("hops", ["record", "path", "hop"]), ("edits", ["record", "k"])):
        mine, ref = (
            with_record(d, getattr(d, name)).drop("row").sort(order) for d in (data, ref_data)
        )
        assert mine.equals(ref), name
    assert data.inputs[0].records == 52
    assert data.inputs[0].format == expected_format


@pytest.mark.parametrize("fmt", ["hub", "diskdict"])
def test_splits_come_through(roundtrip_dir, sample_records, fmt):
    _recs, splits, data = load_cases(roundtrip_dir[fmt])
    want = {r["case_id"]: "train" for r in sample_records[:40]}
    want |= {r["case_id"]: "test" for r in sample_records[40:]}
    assert splits == want
    assert data.inputs[0].splits == {"train": 40, "test": 12}
    # Splits are kept when the family lays the records out again for export.
    tables = FAM.to_tables(data)
    assert {s: t.num_rows for s, t in tables.items()} == {"train": 40, "test": 12}
    assert sorted(tables["test"].to_table().column("case_id").to_pylist()) == sorted(
        r["case_id"] for r in sample_records[40:]
    )


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet", "disk"])
def test_unsplit_formats_have_no_split(roundtrip_dir, fmt):
    _, splits, data = load_cases(roundtrip_dir[fmt])
    assert set(splits.values()) == {None}
    assert data.inputs[0].splits == {}


def test_jsonl_batches_carry_line_numbers(roundtrip_dir):
    batches = read_all(roundtrip_dir["jsonl"])
    lines = [ln for b in batches for ln in b.lines]
    # records are separated by one blank line: record i sits on line 2i+1
    assert lines == [2 * i + 1 for i in range(52)]


def test_reader_batches_are_bounded_and_contiguous(roundtrip_dir, sample_records):
    with mock.patch.object(curate.io.records, "BATCH_ROWS", 7):
        for fmt in ("json", "jsonl", "parquet", "disk"):
            batches = read_all(roundtrip_dir[fmt])
            assert all(0 < len(b) <= 7 for b in batches), fmt
            ends = [b.offset + len(b) for b in batches]
            assert [b.offset for b in batches] == [0, *ends[:-1]], fmt
            assert rows_of(batches) == sample_records, fmt
            if fmt != "jsonl":  # JSON Lines: blocks of lines, blank ones (here) not counted
                assert len(batches) == 8, fmt  # ceil(52 / 7)


def test_json_single_key_wrapper_is_unwrapped(tmp_path, sample_records):
    p = tmp_path / "wrapped.json"
    p.write_bytes(orjson.dumps({"data": sample_records[:3]}))
    assert rows_of(read_all(p)) == sample_records[:3]


def test_sha256_of_file_matches_hashlib(roundtrip_dir):
    import hashlib

    p = roundtrip_dir["parquet"]
    assert open_source(p).sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- CSV


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_csv_flat_table_reads_as_strings(tmp_path, suffix):
    p = tmp_path / f"flat{suffix}"
    rows = [
        {"id": "007", "name": "Hey Jude", "score": "1.50", "n": "12"},
        {"id": "8", "name": "Madonna, Louise", "score": "", "n": "-3"},
        {"id": "9", "name": "Ünïcode ✓", "score": "2e3", "n": "0"},
    ]
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(
            fh, fieldnames=list(rows[0]), delimiter="\t" if suffix == ".tsv" else ","
        )
        w.writeheader()
        w.writerows(rows)
    src = open_source(p)
    assert src.format == "csv"
    got = rows_of(list(src.batches))
    assert len(got) == 3
    for g, r in zip(got, rows, strict=True):
        assert list(g) == list(r)
        for k in r:
            # values stay text ("007" keeps its zero, "12" is not an int); empty may read as null
            assert g[k] == r[k] or (r[k] == "" and g[k] in ("", None)), (k, g[k])
            assert g[k] is None or isinstance(g[k], str)


# --------------------------------------------------------------------------- unusable input


def _write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _bad_inputs(tmp: Path) -> list[tuple[str, Path, list[str]]]:
    """(id, path, fragments the one-line message must contain beyond the path)."""
    cases: list[tuple[str, Path, list[str]]] = []
    cases.append(("missing", tmp / "nope.json", ["no such file"]))
    cases.append(("empty-json", _write(tmp / "empty.json", b""), ["empty"]))
    cases.append(("blank-json", _write(tmp / "blank.json", b"  \n\t\n"), ["empty"]))
    cases.append(("empty-jsonl", _write(tmp / "empty.jsonl", b""), ["empty"]))
    cases.append(("blank-jsonl", _write(tmp / "blank.jsonl", b"\n\n  \n"), ["empty"]))
    cases.append(
        (
            "truncated-json",
            _write(tmp / "trunc.json", '[{"a": 1}, {"b"'),
            [":1:16:", "invalid JSON"],
        )
    )
    cases.append(("object-json", _write(tmp / "obj.json", '{"a": 1, "b": [2]}'), ["dict", "array"]))
    cases.append(("number-json", _write(tmp / "num.json", "42"), ["int", "array"]))
    cases.append(("string-json", _write(tmp / "str.json", '"text"'), ["str", "array"]))
    cases.append(
        (
            "non-object-in-array",
            _write(tmp / "arr.json", '[{"a": 1}, {"a": 2}, 3]'),
            ["record #2", "int"],
        )
    )
    cases.append(("list-in-array", _write(tmp / "arr2.json", "[[1, 2]]"), ["record #0", "list"]))
    cases.append(
        (
            "bad-jsonl-line",
            _write(tmp / "bad.jsonl", '{"a": 1}\n{"a": 2}\n{"a": 3,\n{"a": 4}\n'),
            [":3:", "invalid JSON"],
        )
    )
    cases.append(
        ("non-object-jsonl", _write(tmp / "nonobj.jsonl", '{"a": 1}\n\n[1, 2]\n'), [":3:", "list"])
    )
    cases.append(
        # a UTF-16-LE byte order mark, then an odd number of bytes: decoded as UTF-16, it ends
        # inside a character
        (
            "not-utf8-json",
            _write(tmp / "bin.json", b"\xff\xfe\x00\x01garbage"),
            ["not valid utf-16-le text", "byte offset 10"],
        )
    )
    cases.append(
        ("garbage-parquet", _write(tmp / "garbage.parquet", bytes(range(256)) * 4), ["parquet"])
    )
    cases.append(("empty-parquet", _write(tmp / "empty.parquet", b""), ["parquet"]))
    notds = tmp / "notds"
    notds.mkdir()
    _write(notds / "notes.txt", "hello")
    cases.append(("folder-not-dataset", notds, ["not a dataset folder"]))
    emptydir = tmp / "emptydir"
    emptydir.mkdir()
    cases.append(("empty-folder", emptydir, ["not a dataset folder"]))
    badhf = tmp / "badhf"
    badhf.mkdir()
    _write(badhf / "dataset_info.json", "{broken")
    cases.append(("corrupt-save-to-disk", badhf, ["save_to_disk"]))
    hubgarb = tmp / "hubgarb"
    (hubgarb / "data").mkdir(parents=True)
    shard = _write(hubgarb / "data" / "train-00000-of-00001.parquet", b"not parquet at all" * 10)
    cases.append(("garbage-hub-shard", hubgarb, [str(shard), "parquet"]))
    cases.append(
        ("unknown-suffix", _write(tmp / "cases.xml", "<a/>"), ["unknown file type", ".xml"])
    )
    cases.append(("no-suffix", _write(tmp / "cases", "[]"), ["unknown file type"]))
    return cases


BAD_IDS = [
    "missing",
    "empty-json",
    "blank-json",
    "empty-jsonl",
    "blank-jsonl",
    "truncated-json",
    "object-json",
    "number-json",
    "string-json",
    "non-object-in-array",
    "list-in-array",
    "bad-jsonl-line",
    "non-object-jsonl",
    "not-utf8-json",
    "garbage-parquet",
    "empty-parquet",
    "folder-not-dataset",
    "empty-folder",
    "corrupt-save-to-disk",
    "garbage-hub-shard",
    "unknown-suffix",
    "no-suffix",
]


@pytest.fixture
def bad_inputs(tmp_path) -> dict[str, tuple[Path, list[str]]]:
    built = {cid: (p, frags) for cid, p, frags in _bad_inputs(tmp_path)}
    assert list(built) == BAD_IDS
    return built


@pytest.mark.parametrize("case", BAD_IDS)
def test_unusable_input_raises_input_error(bad_inputs, case):
    path, fragments = bad_inputs[case]
    with pytest.raises(InputError) as ei:
        read_all(path)
    line = ei.value.one_line()
    assert str(path) in line
    for frag in fragments:
        assert frag in line, (frag, line)
    assert "\n" not in line


@pytest.mark.parametrize("case", BAD_IDS)
def test_cli_unusable_input_exit_2_one_line(bad_inputs, case, capsys):
    path, fragments = bad_inputs[case]
    capsys.readouterr()
    rc = main(["audit", "mquake", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("curate: error: ")
    assert "Traceback" not in err
    assert str(path) in err
    for frag in fragments:
        assert frag in err


def test_input_error_fields_for_json_positions(tmp_path):
    p = _write(tmp_path / "trunc.json", '[{"a": 1}, {"b"')
    with pytest.raises(InputError) as ei:
        read_all(p)
    assert ei.value.path == str(p)
    assert ei.value.position == "1:16"
    p = _write(tmp_path / "arr.json", '[{"a": 1}, 3]')
    with pytest.raises(InputError) as ei:
        read_all(p)
    assert ei.value.record == "#1"
    assert ei.value.one_line().startswith(f"{p}, record #1: ")


def test_truncated_ascii_multiline_json_position(tmp_path, sample_records):
    # pretty-printed, ASCII-only: line:col of the end of data is unambiguous
    text = json.dumps(sample_records[:3], indent=2, ensure_ascii=True)
    cut = text[: text.index("\n", len(text) // 2)]
    p = _write(tmp_path / "cut.json", cut)
    line = cut.count("\n") + 1
    col = len(cut) - (cut.rfind("\n") + 1) + 1
    with pytest.raises(InputError) as ei:
        read_all(p)
    assert ei.value.position == f"{line}:{col}"
    assert f"{p}:{line}:{col}: invalid JSON" in ei.value.one_line()


def test_truncated_non_ascii_json_position(tmp_path):
    text = SAMPLE.read_text(encoding="utf-8")
    cut = text[: text.index("\n", len(text) // 2)]
    assert any(ord(ch) > 127 for ch in cut)  # the real data has non-ASCII labels
    p = _write(tmp_path / "cut.json", cut)
    try:
        json.loads(cut)
    except json.JSONDecodeError as e:
        expected = f"{e.lineno}:{e.colno}"
    assert expected == f"{cut.count(chr(10)) + 1}:{len(cut) - (cut.rfind(chr(10)) + 1) + 1}"
    with pytest.raises(InputError) as ei:
        read_all(p)
    assert ei.value.position == expected


def test_corrupt_parquet_footer_is_one_line(tmp_path, capsys):
    body = b"\x00" * 16
    p = _write(
        tmp_path / "corrupt.parquet", b"PAR1" + body + len(body).to_bytes(4, "little") + b"PAR1"
    )
    with pytest.raises(InputError) as ei:
        read_all(p)
    assert "\n" not in ei.value.one_line()
    capsys.readouterr()
    assert main(["audit", "mquake", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err


def test_empty_json_array_is_unusable_for_a_family(tmp_path, capsys):
    p = _write(tmp_path / "none.json", "[]")
    assert rows_of(read_all(p)) == []  # the reader itself: no rows, no error
    capsys.readouterr()
    assert main(["audit", "mquake", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(p) in err and "no records" in err


# --------------------------------------------------------------------------- atomic writes


def _siblings(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_atomic_path_leaves_nothing_when_body_raises(tmp_path):
    target = tmp_path / "sub" / "report.json"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        assert tmp.exists() and tmp.parent == target.parent and tmp != target
        raise RuntimeError("boom")
    assert not target.exists()
    assert _siblings(target.parent) == []


def test_atomic_path_keeps_old_content_when_body_raises(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("new but unfinished")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert _siblings(tmp_path) == ["report.json"]


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    old_inode = target.stat().st_ino
    with atomic_path(target) as tmp:
        tmp.write_text("new")
        # until the body finishes, readers still see the complete old file
        assert target.read_text() == "old"
    assert target.read_text() == "new"
    assert target.stat().st_ino != old_inode  # renamed into place, not rewritten in place
    assert _siblings(tmp_path) == ["report.json"]
    write_bytes_atomic(target, b"third")
    assert target.read_bytes() == b"third"
    assert _siblings(tmp_path) == ["report.json"]


def test_atomic_path_result_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "report.json"
        write_bytes_atomic(target, b"{}")
        plain = tmp_path / "plain.json"
        plain.write_bytes(b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o644


# --------------------------------------------------------------------------- property


_scalar = st.one_of(st.text(max_size=12), st.integers(min_value=-(2**63), max_value=2**63 - 1))
_records = st.lists(
    st.dictionaries(st.text(max_size=6), _scalar, max_size=5), min_size=1, max_size=25
)


@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(records=_records, batch_rows=st.integers(min_value=1, max_value=6))
def test_jsonl_and_json_readers_yield_the_same_rows(records, batch_rows):
    with (
        tempfile.TemporaryDirectory() as d,
        mock.patch.object(curate.io.records, "BATCH_ROWS", batch_rows),
    ):
        pj = Path(d) / "r.json"
        pl_ = Path(d) / "r.jsonl"
        pj.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        pl_.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
        )
        for path in (pj, pl_):
            batches = read_all(path)
            assert rows_of(batches) == records
            offsets = [b.offset for b in batches]
            assert offsets == list(range(0, len(records), batch_rows))
            assert all(0 < len(b.rows) <= batch_rows for b in batches)
        jl = read_all(pl_)
        assert [ln for b in jl for ln in b.lines] == list(range(1, len(records) + 1))


def test_csv_path_with_glob_characters_is_read_as_a_path(tmp_path):
    """``[``, ``*`` and ``?`` are ordinary characters in a file name, not a pattern."""
    from curate.io.read import read_frame

    src = ROOT / "curate" / "data" / "samples" / "glycan_taxonomy_sample.csv"
    odd = tmp_path / "taxonomy [v2] *final?.csv"
    odd.write_bytes(src.read_bytes())
    df, _ = read_frame(odd)
    assert df.height == len(src.read_text(encoding="utf-8").splitlines()) - 1


def _reference_jsonl(data: bytes) -> list[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of every non-blank line, as iterating the file gives
    them: the reader's output before it read whole blocks."""
    out, at = [], 0
    for n, line in enumerate(io.BytesIO(data), start=1):
        if line.strip():
            out.append((n, at, line))
        at += len(line)
    return out


_LINE = st.one_of(
    st.dictionaries(
        st.sampled_from("abc"), st.integers(-5, 5) | st.text(max_size=30), max_size=3
    ).map(lambda d: orjson.dumps(d)),
    st.sampled_from([b"", b"  ", b"\t", b" \r", b"\x0b"]),  # blank lines
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_LINE, max_size=40),
    crlf=st.booleans(),
    trailing=st.booleans(),
    block=st.integers(1, 64),
    rows=st.integers(1, 9),
)
def test_jsonl_blocks_match_line_iteration(tmp_path, lines, crlf, trailing, block, rows):
    """Reading whole blocks (tiny ones here, so lines straddle them and outgrow them) gives
    the same records, line numbers and lines as iterating the file line by line."""
    sep = b"\r\n" if crlf else b"\n"
    data = sep.join(lines) + (sep if trailing and lines else b"")
    want = _reference_jsonl(data)
    p = tmp_path / "x.jsonl"
    p.write_bytes(data)
    with (
        mock.patch.object(curate.io.records, "BATCH_ROWS", rows),
        mock.patch.object(curate.io.json_files, "JSONL_BLOCK", block),
    ):
        if not want:
            with pytest.raises(InputError, match="empty file"):
                read_all(p)
            return
        batches = read_all(p)
    assert all(0 < len(b) <= rows for b in batches)
    assert [b.offset for b in batches] == [0, *[b.offset + len(b) for b in batches][:-1]]
    assert [n for b in batches for n in b.lines] == [n for n, _, _ in want]
    assert [r for b in batches for r in b.raw] == [line for _, _, line in want]
    assert rows_of(batches) == [orjson.loads(line) for _, _, line in want]
    blobs = [b.blob for b in batches if b.blob is not None]
    for blob in blobs:  # a block in one piece is exactly its lines joined
        raws, nums, ats = blob.split()
        assert b"".join(raws) == blob.data and len(raws) == blob.count
        assert [(n, a, r) for n, a, r in zip(nums, ats, raws, strict=True)] == [
            w for w in want if w[0] in set(nums)
        ]


_LINE = st.one_of(
    st.text(alphabet=" \t\r\x0b\x0c", max_size=3),  # blank (whitespace only) or empty
    st.text(alphabet='ab{}" \t', min_size=1, max_size=40),
    st.text(alphabet="x", min_size=600, max_size=1200),  # long lines: the find path
).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(_LINE, max_size=200),
    tail=st.binary(max_size=5),
    cut=st.tuples(st.integers(0, 400), st.integers(0, 400)),
)
def test_line_stats_counts_as_the_two_scans(lines, tail, cut) -> None:
    """``line_stats`` (newline to newline by ``find``) gives the newline and blank-line counts
    that ``bytes.count`` and the blank-line scan give, on any slice, short lines or long."""
    from curate.io.json_files import _blank_lines, line_stats

    chunk = b"\n".join(lines) + tail
    start, end = sorted(min(c, len(chunk)) for c in cut)
    if cut[1] == 400:
        end = len(chunk)
    assert line_stats(chunk, start, end) == (
        chunk.count(b"\n", start, end),
        _blank_lines(chunk, start, end),
    )
    assert line_stats(bytearray(chunk), start, end) == line_stats(chunk, start, end)
