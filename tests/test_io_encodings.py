"""Text encodings, robust tables and damaged binary files in the readers (``curate.io.read``).

Real MQuAKE-hard cases and real glycowork rows are re-encoded (latin-1, cp1252, UTF-16/32, with
and without a byte order mark) and must give the same records and the same findings as the UTF-8
original when the encoding is known (from a BOM or ``--encoding``), and one InputError line that
names the file, the byte offset and the likely encoding when it is not. Damaged parquet/Arrow
files and a catalogue of unusable inputs must end in exit 1 or 2 with one stderr line for every
command of both families.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import tempfile
from pathlib import Path
from unittest import mock

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curate.io.encodings
import curate.io.read
import curate.io.records
from curate.cli.main import main
from curate.core.errors import InputError, UsageError
from curate.families import get_family
from curate.io.encodings import guess_encoding, read_text
from curate.io.read import open_source, read_frame

KE = get_family("mquake")
GLYCAN = get_family("glycan")


def rows_of(path: Path, encoding: str | None = None) -> list[dict]:
    return [r for b in open_source(path, encoding=encoding).batches for r in b.rows]


def cli(capsys, *args: str | Path) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    assert err.startswith("curate: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def findings(report_json: str) -> list[tuple]:
    """Findings of a JSON report, without what depends on the file name."""
    doc = json.loads(report_json)
    return sorted(
        (f["rule"], str(f.get("record")), str(f.get("field")), f["message"])
        for f in doc["findings"]
    )


# --------------------------------------------------------------------------- real data, re-encoded


@pytest.fixture(scope="module")
def ke_latin1_records(hard_records) -> list[dict]:
    """Real MQuAKE-hard cases that latin-1 can spell, several with accented labels."""
    fits = [r for r in hard_records if max(map(ord, json.dumps(r, ensure_ascii=False))) < 256]
    accented = [r for r in fits if max(map(ord, json.dumps(r, ensure_ascii=False))) > 127]
    chosen = accented[:6] + [r for r in fits if r not in accented][:6]
    assert len(accented) >= 6 and len(chosen) == 12
    return chosen


@pytest.fixture(scope="module")
def ke_records(hard_records) -> list[dict]:
    """Real cases with characters beyond latin-1 (only a UTF can spell them)."""
    wide = [r for r in hard_records if max(map(ord, json.dumps(r, ensure_ascii=False))) > 255]
    assert len(wide) >= 8
    return wide[:8] + hard_records[:8]


def _json_text(records: list[dict]) -> str:
    return json.dumps(records, ensure_ascii=False, indent=1)


def _jsonl_text(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


@pytest.fixture(scope="module")
def glycan_text(glycan_sample_csv: Path) -> str:
    """300 real glycowork rows; the ASCII-only sample gets realistic accented references."""
    lines = glycan_sample_csv.read_text(encoding="utf-8").splitlines()[:301]
    rows = list(csv.DictReader(lines))
    refs = ["Pérez-Vilar J., Glycobiology 2004", "Müller & Schröder, Carbohydr. Res.", "Kühn R."]
    for i, row in enumerate(rows):
        if i % 7 == 0:
            row["ref"] = refs[i % 3]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    text = buf.getvalue()
    assert any(ord(c) > 127 for c in text)
    return text


# Each: (file encoding, --encoding to pass or None when a BOM says it).
SELF_DESCRIBING = [
    ("utf-8-sig", None),
    ("utf-16", None),  # Python writes a BOM (little-endian here)
    ("utf-32", None),
]
BY_OPTION = [
    ("utf-16-le", "utf-16-le"),
    ("utf-16-be", "utf-16-be"),
    ("utf-16", "utf-16"),  # a BOM that agrees with the option
    ("utf-8-sig", "utf-8"),  # a UTF-8 BOM is fine with --encoding utf-8
]


def _write(path: Path, text: str, encoding: str) -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def test_ke_json_and_jsonl_with_a_bom_or_encoding_give_the_same_cases(tmp_path, ke_records):
    original = _write(tmp_path / "orig.json", _json_text(ke_records), "utf-8")
    base = KE.load([original], keep_records=True)
    expected_rows = rows_of(original)
    for enc, option in SELF_DESCRIBING + BY_OPTION:
        for suffix, text in (
            (".json", _json_text(ke_records)),
            (".jsonl", _jsonl_text(ke_records)),
        ):
            p = _write(tmp_path / f"cases-{enc}-{option}{suffix}", text, enc)
            assert rows_of(p, option) == expected_rows, (enc, option, suffix)
            data = KE.load([p], keep_records=True, encoding=option)
            assert data.cases.drop("row").equals(base.cases.drop("row")), (enc, suffix)


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
@pytest.mark.parametrize("enc", ["latin-1", "cp1252"])
def test_ke_latin1_reads_with_encoding_and_names_the_byte_without(
    tmp_path, capsys, ke_latin1_records, suffix, enc
):
    text = (_json_text if suffix == ".json" else _jsonl_text)(ke_latin1_records)
    utf8 = _write(tmp_path / f"utf8{suffix}", text, "utf-8")
    legacy = _write(tmp_path / f"legacy{suffix}", text, enc)
    raw = legacy.read_bytes()
    first_high = next(i for i, b in enumerate(raw) if b > 127)
    # without --encoding: one line, the exact byte offset, the likely encoding, the option
    with pytest.raises(InputError) as ei:
        rows_of(legacy)
    line = ei.value.one_line()
    assert str(legacy) in line
    assert f"byte 0x{raw[first_high]:02X} at byte offset {first_high}" in line
    # the library names the API's argument (the CLI's --encoding: tests/test_api_errors.py)
    assert "looks like latin-1" in line and "encoding='latin-1'" in line
    assert ei.value.position == str(raw.count(b"\n", 0, first_high) + 1)
    for cmd in ("validate", "audit", "fix", "export"):
        out = ["--out", tmp_path / f"out-{cmd}"] if cmd in ("fix", "export") else []
        rc, _, err = cli(capsys, cmd, "mquake", legacy, *out)
        assert rc == 2, (cmd, err)
        assert f"byte offset {first_high}" in one_error_line(err)
    # with it: the same rows and the same findings as the UTF-8 file
    assert rows_of(legacy, enc) == rows_of(utf8)
    rc1, out1, _ = cli(capsys, "audit", "mquake", utf8, "-f", "json")
    rc2, out2, _ = cli(capsys, "audit", "mquake", legacy, "-f", "json", "--encoding", enc)
    assert rc1 == rc2 and rc1 in (0, 1)
    assert findings(out1) == findings(out2)


@pytest.mark.parametrize(("enc", "guess"), [("utf-16-le", "utf-16-le"), ("utf-16-be", "utf-16-be")])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_ke_utf16_without_bom_is_recognised(tmp_path, capsys, ke_records, enc, guess, suffix):
    text = (_json_text if suffix == ".json" else _jsonl_text)(ke_records)
    p = _write(tmp_path / f"cases{suffix}", text, enc)
    rc, _, err = cli(capsys, "audit", "mquake", p)
    assert rc == 2
    line = one_error_line(err)
    assert str(p) in line and f"looks like {guess}" in line and f"--encoding {guess}" in line
    assert "byte offset 0" in line or "byte offset 1" in line  # the first NUL
    utf8 = _write(tmp_path / f"utf8{suffix}", text, "utf-8")
    _, out1, _ = cli(capsys, "audit", "mquake", utf8, "-f", "json")
    _, out2, _ = cli(capsys, "audit", "mquake", p, "-f", "json", "--encoding", enc)
    assert findings(out1) == findings(out2)


GLYCAN_ENCODINGS = [
    ("latin-1", "latin-1"),
    ("cp1252", "cp1252"),
    ("utf-16", None),
    ("utf-16", "utf-16"),
    ("utf-16-le", "utf-16-le"),
    ("utf-16-be", "utf-16-be"),
    ("utf-8-sig", None),
    ("utf-32", None),
]


@pytest.mark.parametrize(("enc", "option"), GLYCAN_ENCODINGS)
def test_glycan_csv_in_any_encoding_gives_the_same_task_and_findings(
    tmp_path, capsys, glycan_text, enc, option
):
    utf8 = _write(tmp_path / "utf8.csv", glycan_text, "utf-8")
    other = _write(tmp_path / "other.csv", glycan_text, enc)
    frame_utf8, _ = read_frame(utf8)
    frame_other, _ = read_frame(other, encoding=option)
    assert frame_other.equals(frame_utf8)
    data = GLYCAN.load([other], encoding=option)
    assert data.stats["tables"][0]["task"] == "taxonomy"
    rc1, out1, _ = cli(capsys, "audit", "glycan", utf8, "-f", "json")
    extra = ["--encoding", option] if option else []
    rc2, out2, err2 = cli(capsys, "audit", "glycan", other, "-f", "json", *extra)
    assert rc1 == rc2 and rc1 in (0, 1), err2
    assert findings(out1) == findings(out2)


@pytest.mark.parametrize(
    ("enc", "fragment"),
    [
        ("latin-1", "looks like latin-1"),
        ("utf-16-le", "looks like utf-16-le"),
        ("utf-16-be", "looks like utf-16-be"),
        ("utf-32-le", "looks like utf-32-le"),
    ],
)
def test_glycan_csv_in_an_unannounced_encoding_is_one_line_not_a_task_error(
    tmp_path, capsys, glycan_text, enc, fragment
):
    p = _write(tmp_path / "taxonomy.csv", glycan_text, enc)
    for cmd in ("validate", "audit", "fix", "export"):
        out = ["--out", tmp_path / f"out-{cmd}"] if cmd in ("fix", "export") else []
        rc, _, err = cli(capsys, cmd, "glycan", p, *out)
        assert rc == 2
        line = one_error_line(err)
        assert str(p) in line and fragment in line and "byte offset" in line
        assert "cannot tell which glycan task" not in line


def test_latin1_byte_offset_is_exact_late_in_a_csv(tmp_path, glycan_text):
    lines = glycan_text.splitlines(keepends=True)
    early = "".join(lines[:200]).encode("ascii", "replace").decode()  # accents only from row 200
    p = _write(tmp_path / "late.csv", early + "".join(lines[200:]), "latin-1")
    raw = p.read_bytes()
    first_high = next(i for i, b in enumerate(raw) if b > 127)
    assert first_high > 10_000
    with pytest.raises(InputError) as ei:
        read_frame(p)
    assert f"at byte offset {first_high}" in ei.value.message
    assert ei.value.position == str(raw.count(b"\n", 0, first_high) + 1)


def test_cp1252_punctuation_is_guessed_as_cp1252(tmp_path, ke_latin1_records):
    recs = [dict(r) for r in ke_latin1_records[:3]]
    recs[1]["answer"] = "Côte d’Ivoire – République"  # typographic quote and dash: cp1252 only
    p = _write(tmp_path / "word.json", _json_text(recs), "cp1252")
    with pytest.raises(InputError, match=r"looks like cp1252: read it with encoding='cp1252'"):
        rows_of(p)
    assert rows_of(p, "cp1252")[1]["answer"] == "Côte d’Ivoire – République"
    assert rows_of(p, "windows-1252") == rows_of(p, "cp1252")


def test_jsonl_invalid_utf8_on_a_later_line_names_file_offset_and_line(tmp_path, ke_records):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in ke_records[:5]]
    lines[3] = lines[3].replace(b'"answer": "', b'"answer": "\xe9', 1)
    p = tmp_path / "cases.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    offset = p.read_bytes().index(b"\xe9")
    with pytest.raises(InputError) as ei:
        rows_of(p)
    assert ei.value.position == "4"
    assert f"byte 0xE9 at byte offset {offset}" in ei.value.message


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_non_utf8_jsonl_is_decoded_in_chunks_with_exact_offsets(tmp_path, ke_records, chunk):
    """A lone surrogate in UTF-16: its offset must not drift with the decoder's chunking."""
    text = _jsonl_text(ke_records[:4])
    good = _write(tmp_path / "good.jsonl", text, "utf-16-le")
    with mock.patch.object(curate.io.records, "DECODE_CHUNK", chunk):
        assert rows_of(good, "utf-16-le") == rows_of(_write(tmp_path / "u8.jsonl", text, "utf-8"))
        data = good.read_bytes()
        at = len(text[: text.index("\n", len(text) // 2)].encode("utf-16-le"))
        bad = tmp_path / "bad.jsonl"
        bad.write_bytes(data[:at] + b"\x00\xdc" + data[at:])  # U+DC00: a lone low surrogate
        with pytest.raises(InputError) as ei:
            rows_of(bad, "utf-16-le")
    assert f"at byte offset {at}" in ei.value.message
    assert "utf-16-le" in ei.value.message and "\n" not in ei.value.one_line()


def test_bom_that_contradicts_encoding_is_reported(tmp_path, ke_records):
    p = _write(tmp_path / "c.json", _json_text(ke_records), "utf-16")
    with pytest.raises(InputError, match=r"UTF-16-LE byte order mark but encoding='latin-1'"):
        rows_of(p, "latin-1")


@pytest.mark.parametrize("name", ["klingon", "base64", "rot13", "zlib"])
def test_unknown_or_non_text_encoding_is_a_usage_error(tmp_path, capsys, ke_records, name):
    p = _write(tmp_path / "c.json", _json_text(ke_records), "utf-8")
    with pytest.raises(UsageError):
        open_source(p, encoding=name)
    for fam in ("mquake", "glycan"):
        rc, out, err = cli(capsys, "audit", fam, p, "--encoding", name)
        assert rc == 2 and out == ""
        assert "unknown text encoding" in one_error_line(err)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("[{“a”: 1}]".encode("utf-16-le"), "utf-16-le"),
        ('[{"a": "text"}]'.encode("utf-16-le"), "utf-16-le"),
        ('[{"a": "text"}]'.encode("utf-16-be"), "utf-16-be"),
        ('[{"a": "text"}]'.encode("utf-32-le"), "utf-32-le"),
        ('[{"a": "text"}]'.encode("utf-32-be"), "utf-32-be"),
        ("Zürich, Genève".encode("latin-1"), "latin-1"),
        ("l’été – déjà".encode("cp1252"), "cp1252"),
        ("Zürich".encode(), "utf-8"),
        (bytes(range(256)) * 4, None),
    ],
)
def test_guess_encoding(data, expected):
    assert guess_encoding(data) == expected


# --------------------------------------------------------------------------- BOMs everywhere


@pytest.mark.parametrize("bom_codec", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".tsv"])
def test_a_bom_is_accepted_in_every_text_format(tmp_path, bom_codec, suffix):
    rows = [{"id": "1", "name": "Zürich"}, {"id": "2", "name": "東京"}]
    if suffix == ".json":
        text = json.dumps(rows, ensure_ascii=False)
    elif suffix == ".jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    else:
        sep = "\t" if suffix == ".tsv" else ","
        text = f"id{sep}name\n" + "".join(f"{r['id']}{sep}{r['name']}\n" for r in rows)
    data = text.encode(bom_codec)
    if bom_codec == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    p = tmp_path / f"t{suffix}"
    p.write_bytes(data)
    assert rows_of(p) == rows


# --------------------------------------------------------------------------- read_frame


def test_read_frame_flattens_mixed_and_nested_json_rows(tmp_path):
    rows = [
        {"glycan": "Gal(b1-4)Glc", "n": 1, "meta": {"src": "a", "k": [1, 2]}, "tags": ["x", "y"]},
        {"glycan": 42, "n": "two", "meta": None, "tags": []},
        {"glycan": None, "n": 2.5, "meta": [1, "b"], "tags": None, "flag": True},
        {"glycan": "Man", "n": None, "meta": "plain", "tags": ["z", None], "flag": False},
    ]
    p = tmp_path / "mixed.json"
    p.write_text(json.dumps(rows), encoding="utf-8")
    df, _ = read_frame(p)
    assert df.schema == {
        "glycan": pl.String,
        "n": pl.String,
        "meta": pl.String,
        "tags": pl.List(pl.String),
        "flag": pl.String,
    }
    assert df["glycan"].to_list() == ["Gal(b1-4)Glc", "42", None, "Man"]
    assert df["n"].to_list() == ["1", "two", "2.5", None]
    assert [orjson.loads(v) if v and v[0] in "[{" else v for v in df["meta"]] == [
        {"src": "a", "k": [1, 2]},
        None,
        [1, "b"],
        "plain",
    ]
    assert df["tags"].to_list() == [["x", "y"], [], None, ["z", None]]
    assert df["flag"].to_list() == [None, None, "true", "false"]


def test_read_frame_list_column_with_non_strings_becomes_json_text(tmp_path):
    p = tmp_path / "lists.jsonl"
    p.write_text('{"a": ["x"]}\n{"a": [1, 2]}\n{"a": "solo"}\n', encoding="utf-8")
    df, _ = read_frame(p)
    assert df["a"].to_list() == ['["x"]', "[1,2]", "solo"]


def test_read_frame_parquet_structs_and_int_lists_become_text(tmp_path):
    t = pa.table(
        {
            "glycan": ["Gal", "Man"],
            "pos": pa.array(
                [{"x": 1, "y": "a"}, None], pa.struct([("x", pa.int64()), ("y", pa.string())])
            ),
            "ids": pa.array([[1, 2], []], pa.list_(pa.int64())),
            "labels": pa.array([["Homo_sapiens"], ["Mus_musculus", "Rattus"]]),
            "score": [0.5, None],
        }
    )
    p = tmp_path / "t.parquet"
    pq.write_table(t, p)
    df, _ = read_frame(p)
    assert df["pos"].to_list() == ['{"x":1,"y":"a"}', None]
    assert df["ids"].to_list() == ["[1,2]", "[]"]
    assert df["labels"].to_list() == [["Homo_sapiens"], ["Mus_musculus", "Rattus"]]
    assert df["score"].to_list() == ["0.5", None]


def test_read_frame_deeply_nested_cells_do_not_crash(tmp_path):
    # orjson parses up to 1024 levels but writes only 255: deeper cells fall back to json
    deep = "[" * 600 + "]" * 600
    p = tmp_path / "deep.json"
    p.write_text(f'[{{"glycan": "Gal", "x": {deep}}}]', encoding="utf-8")
    df, _ = read_frame(p)
    assert df["x"].to_list() == [json.dumps(json.loads(deep))]


def test_glycan_json_with_mixed_types_matches_the_csv_findings(tmp_path, capsys, glycan_text):
    """The same real rows as CSV and as JSON whose numbers are numbers and with a nested extra
    column: read_frame must give the rules the same text, hence the same findings."""
    csv_path = _write(tmp_path / "taxonomy.csv", glycan_text, "utf-8")
    rows = list(csv.DictReader(io.StringIO(glycan_text)))
    for r in rows:
        r["glycowork_row"] = int(r["glycowork_row"])
        r["taxon_id"] = int(r["taxon_id"]) if r["taxon_id"] else None
        r["meta"] = {"source": "glycowork", "row": r["glycowork_row"]}
        r["ref"] = r["ref"] or None
    json_path = tmp_path / "taxonomy.json"
    json_path.write_text(json.dumps(rows), encoding="utf-8")
    rc1, out1, _ = cli(capsys, "audit", "glycan", csv_path, "-f", "json")
    rc2, out2, err2 = cli(capsys, "audit", "glycan", json_path, "-f", "json")
    assert rc1 == rc2 and rc1 in (0, 1), err2
    assert findings(out1) == findings(out2)
    assert findings(out1)  # the real rows do have findings


# --------------------------------------------------------------------------- damaged parquet/Arrow


def _ke_parquet(path: Path, records: list[dict], **kw) -> Path:
    # ``orig`` last: the records are cases (MQuAKE's layout), so that the reader goes on past
    # the first row group to the damage (records of no layout are refused on their first batch)
    table = pa.Table.from_pylist(
        [
            {
                "case_id": r["case_id"],
                "answer": r["answer"],
                "questions": r["questions"],
                "orig": r["orig"],
            }
            for r in records
        ]
    )
    pq.write_table(
        table,
        path,
        compression="NONE",
        use_dictionary=False,
        row_group_size=len(records) // 4,
        **kw,
    )
    return path


def _flip_in_data_page(path: Path, row_group: int, column: int = 1, count: int = 16) -> None:
    """Overwrite bytes in the middle of one column chunk's data page (after its header)."""
    md = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    data = bytearray(path.read_bytes())
    mid = md.data_page_offset + md.total_compressed_size // 2
    for i in range(mid, mid + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_parquet_data_page_is_one_line_naming_the_row_group(tmp_path, capsys, hard_records):
    p = _ke_parquet(tmp_path / "cases.parquet", hard_records[:200])
    assert len(rows_of(p)) == 200  # the intact file reads
    _flip_in_data_page(p, row_group=2)
    pq.ParquetFile(p)  # opening still works: the damage only shows while reading
    with pytest.raises(InputError) as ei:
        rows_of(p)
    line = ei.value.one_line()
    assert str(p) in line and "row group 2 of 4" in line and "\n" not in line
    for fam in ("mquake", "glycan"):
        for cmd in ("validate", "audit", "fix", "export"):
            out = ["--out", tmp_path / f"o-{fam}-{cmd}"] if cmd in ("fix", "export") else []
            rc, _, err = cli(capsys, cmd, fam, p, *out)
            assert rc == 2, (fam, cmd, err)
            assert "row group 2" in one_error_line(err)


def test_corrupt_page_header_is_one_line(tmp_path, hard_records):
    p = _ke_parquet(tmp_path / "cases.parquet", hard_records[:200])
    md = pq.ParquetFile(p).metadata.row_group(1).column(1)
    data = bytearray(p.read_bytes())
    for i in range(md.data_page_offset + 1, md.data_page_offset + 12):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(InputError) as ei:
        rows_of(p)
    assert "row group 1 of 4" in ei.value.one_line()
    assert "\n" not in ei.value.one_line()


def test_page_checksums_are_verified(tmp_path, hard_records):
    p = _ke_parquet(tmp_path / "crc.parquet", hard_records[:200], write_page_checksum=True)
    _flip_in_data_page(p, row_group=3, count=1)
    with pytest.raises(InputError, match=r"row group 3 of 4 .*CRC"):
        rows_of(p)


def test_corrupt_hub_shard_names_the_shard(tmp_path, capsys, hard_records):
    root = tmp_path / "hub"
    (root / "data").mkdir(parents=True)
    _ke_parquet(root / "data" / "train-00000-of-00002.parquet", hard_records[:100])
    bad = _ke_parquet(root / "data" / "train-00001-of-00002.parquet", hard_records[100:200])
    _flip_in_data_page(bad, row_group=0)
    rc, _, err = cli(capsys, "audit", "mquake", root)
    assert rc == 2
    line = one_error_line(err)
    assert str(bad) in line and "row group 0" in line and "record #100 or later" in line


@pytest.mark.parametrize("damage", ["truncate", "schema"])
def test_damaged_save_to_disk_is_one_line(tmp_path, capsys, hard_records, damage):
    import datasets

    datasets.disable_progress_bars()
    root = tmp_path / "disk"
    datasets.Dataset.from_list(hard_records[:50]).save_to_disk(str(root))
    arrow = next(root.glob("*.arrow"))
    data = arrow.read_bytes()
    if damage == "truncate":
        arrow.write_bytes(data[: len(data) // 2])
    else:
        arrow.write_bytes(data[:200] + bytes(b ^ 0xFF for b in data[200:260]) + data[260:])
    for fam in ("mquake", "glycan"):
        rc, _, err = cli(capsys, "audit", fam, root)
        assert rc == 2
        assert str(root) in one_error_line(err)


# --------------------------------------------------------------------------- ids: files


def test_ids_file_not_utf8_is_exit_2_with_offset(tmp_path, capsys, ke_records):
    cases = _write(tmp_path / "cases.json", _json_text(ke_records), "utf-8")
    ids = [str(r["case_id"]) for r in ke_records[:3]]
    latin = tmp_path / "ids.txt"
    latin.write_bytes("# cas édités\n".encode("latin-1") + "\n".join(ids).encode() + b"\n")
    rc, _, err = cli(capsys, "audit", "mquake", cases, "--edit-set", f"ids:{latin}")
    assert rc == 2
    line = one_error_line(err)
    assert str(latin) in line and "byte offset 6" in line and "latin-1" in line
    # a UTF-16 or BOM'd id list selects the same cases as a plain one
    plain = _write(tmp_path / "plain.txt", "\n".join(ids) + "\n", "utf-8")
    _, ref, _ = cli(capsys, "audit", "mquake", cases, "--edit-set", f"ids:{plain}", "-f", "json")
    for enc in ("utf-16", "utf-8-sig"):
        other = _write(tmp_path / f"ids-{enc}.txt", "\n".join(ids) + "\n", enc)
        _, got, _ = cli(
            capsys, "audit", "mquake", cases, "--edit-set", f"ids:{other}", "-f", "json"
        )
        assert findings(got) == findings(ref)
    assert read_text(_write(tmp_path / "j.json", json.dumps(ids), "utf-16")) == json.dumps(ids)


# --------------------------------------------------------------------------- unusable inputs


def _unusable(tmp: Path, hard: list[dict], glycan_text: str) -> dict[str, Path]:
    """Inputs no command of either family may crash on."""
    out: dict[str, Path] = {}

    def put(name: str, data: bytes | str) -> None:
        p = tmp / name
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        out[name] = p

    out["missing.json"] = tmp / "missing.json"
    (tmp / "notds").mkdir()
    (tmp / "notds" / "readme.txt").write_text("hello")
    out["notds"] = tmp / "notds"
    garbage = bytes((i * 131 + 7) % 256 for i in range(4096))
    for ext in ("json", "jsonl", "csv", "parquet"):
        put(f"empty.{ext}", b"")
        put(f"blank.{ext}", b" \n\t \n")
        put(f"garbage.{ext}", garbage)
    cut = json.dumps(hard[:5])
    put("truncated.json", cut[: len(cut) // 2])
    put("object.json", json.dumps({"a": 1, "b": [2]}))
    put("scalar.json", "42")
    html = "<!DOCTYPE html>\n<html><head><title>Not found, sorry</title></head>\n<body>x</body>\n"
    put("page.json", html)
    put("page.csv", html)
    put("wrong_columns.csv", "a,b,c\n1,2,3\n")
    header, *rest = glycan_text.splitlines()
    put("ragged.csv", f"{header}\n{rest[0]}\n{rest[1]},extra,fields\n")
    put("header_only.csv", header + "\n")
    put("deep.json", "[" * 100_000 + "]" * 100_000)
    put("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    big = "x" * (1 << 20)
    put("big_strings.json", json.dumps([dict(r, answer=big) for r in hard[:2]]))
    put("nulls.json", json.dumps([dict.fromkeys(r) for r in hard[:5]]))
    put("numbers.json", json.dumps([{k: 7 for k in r} for r in hard[:5]]))
    rows = list(csv.DictReader(io.StringIO(glycan_text)))[:20]
    mixed = [dict(r, Species=[5, {"a": 1}, None, "x"][i % 4]) for i, r in enumerate(rows)]
    put("mixed_rows.json", json.dumps(mixed))
    put("empty_objects.json", "[{}, {}]")
    return out


UNUSABLE = [
    "missing.json", "notds", "empty.json", "blank.json", "garbage.json", "empty.jsonl",
    "blank.jsonl", "garbage.jsonl", "empty.csv", "blank.csv", "garbage.csv", "empty.parquet",
    "blank.parquet", "garbage.parquet", "truncated.json", "object.json", "scalar.json",
    "page.json", "page.csv", "wrong_columns.csv", "ragged.csv", "header_only.csv", "deep.json",
    "deep.jsonl", "big_strings.json", "nulls.json", "numbers.json", "mixed_rows.json",
    "empty_objects.json",
]  # fmt: skip


#: Odd but readable: a 1 MB label or a number where a taxon name belongs is the rules' business.
MAY_PASS = {"big_strings.json", "mixed_rows.json"}


@pytest.fixture(scope="module")
def unusable(tmp_path_factory, hard_records, glycan_text) -> dict[str, Path]:
    built = _unusable(tmp_path_factory.mktemp("unusable"), hard_records, glycan_text)
    assert sorted(built) == sorted(UNUSABLE)
    return built


@pytest.mark.parametrize("name", UNUSABLE)
def test_unusable_input_every_command_both_families(unusable, tmp_path, capsys, name):
    path = unusable[name]
    for fam in ("mquake", "glycan"):
        for cmd in ("validate", "audit", "fix", "export"):
            out = ["--out", tmp_path / f"{fam}-{cmd}"] if cmd in ("fix", "export") else []
            rc, _, err = cli(capsys, cmd, fam, path, *out)
            assert rc in ((0, 1, 2) if name in MAY_PASS else (1, 2)), (fam, cmd, rc, err)
            if rc == 2:
                one_error_line(err)


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("blank.csv", ["empty file"]),
        ("garbage.csv", ["binary data"]),
        ("garbage.json", ["byte offset", "binary data"]),
        ("page.json", ["1:1", "HTML page, not JSON"]),
        ("page.csv", ["HTML page, not CSV"]),
        ("ragged.csv", [":3:", "15 fields where the header has 13"]),
        ("header_only.csv", ["no records"]),
        ("deep.json", ["depth limit"]),
        ("empty_objects.json", ["no fields"]),
    ],
)
def test_unusable_input_messages(unusable, capsys, name, fragments):
    path = unusable[name]
    rc, _, err = cli(capsys, "audit", "glycan", path)
    assert rc == 2
    line = one_error_line(err)
    assert str(path) in line
    for frag in fragments:
        assert frag in line, (frag, line)


# --------------------------------------------------------------------------- property


_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff\r"),
    min_size=1,
    max_size=12,
)
_records = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "ç", "名"]), _text, min_size=1),
    min_size=1,
    max_size=15,
)


@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    records=_records,
    case=st.sampled_from(
        [
            ("utf-8", None),
            ("utf-8-sig", None),
            ("utf-16", None),
            ("utf-16-le", "utf-16-le"),
            ("utf-16-be", "utf-16-be"),
            ("utf-32", None),
            ("utf-8", "utf-8"),
        ]
    ),
    chunk=st.sampled_from([1, 5, 1 << 20]),
)
def test_text_records_survive_any_utf_with_the_right_encoding(records, case, chunk):
    enc, option = case
    with (
        tempfile.TemporaryDirectory() as d,
        mock.patch.object(curate.io.records, "DECODE_CHUNK", chunk),
    ):
        pj, pl_ = Path(d) / "r.json", Path(d) / "r.jsonl"
        pj.write_bytes(json.dumps(records, ensure_ascii=False).encode(enc))
        pl_.write_bytes(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode(enc)
        )
        assert rows_of(pj, option) == records
        assert rows_of(pl_, option) == records
        # CSV: a flat table of text (every record gets every column)
        cols = sorted({k for r in records for k in r})
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writeheader()
        w.writerows(records)
        pc = Path(d) / "r.csv"
        pc.write_bytes(buf.getvalue().encode(enc))
        got = rows_of(pc, option)
        assert [{k: v for k, v in r.items() if v not in (None, "")} for r in got] == records


_latin1_text = st.text(
    st.characters(max_codepoint=255, blacklist_characters="\x00\r"), min_size=1, max_size=10
)
_latin1_records = st.lists(
    st.dictionaries(st.sampled_from(["a", "é"]), _latin1_text, min_size=1), min_size=1, max_size=10
)


@settings(max_examples=40, deadline=None, database=None)
@given(records=_latin1_records, enc=st.sampled_from(["latin-1", "cp1252"]))
def test_single_byte_records_survive_with_encoding(records, enc):
    """latin-1 decodes every byte; cp1252 leaves five bytes undefined (0x81, 0x8D, 0x8F, 0x90,
    0x9D), so the records are those that cp1252 can spell."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    try:
        data = text.encode(enc)
    except UnicodeEncodeError:
        return
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.jsonl"
        p.write_bytes(data)
        assert rows_of(p, enc) == records
        pj = Path(d) / "r.json"
        pj.write_bytes(json.dumps(records, ensure_ascii=False).encode(enc))
        assert rows_of(pj, enc) == records
