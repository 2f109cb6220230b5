"""Only valid records are published: fix/export leave out (or, with --strict, refuse) every record
the family's schema and parse rules call invalid; every row is checked, labelled or not; an input
without records is an exit-2 line; odd cells are findings, not crashes.

Run on the real glycowork sample and MQuAKE-hard with defects injected, through the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.cli.main import main
from curate.families.glycan import FAMILY as GLYCAN
from curate.families.glycan import _cell_text
from curate.schemas.glycan import LEVELS, parse_list_cell
from curate.schemas.iupac import IUPACError, canonical_key

INVALID_GLYCAN = {"GL001", "GL101", "GL102"}


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def parses(g: str | None) -> bool:
    try:
        canonical_key(g)  # type: ignore[arg-type]
        return True
    except (IUPACError, TypeError):
        return False


def exported(out: Path) -> pl.DataFrame:
    """Every row of an exported folder (all splits), as text."""
    tables = [pq.read_table(p) for p in sorted((out / "data").glob("*.parquet"))]
    return pl.from_arrow(pa.concat_tables(tables, promote_options="permissive"))  # type: ignore[return-value]


def changelog(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------- glycan, injected

#: Rows appended to the real sample: the glycowork_row id says which defect each one carries.
BROKEN_LABELLED = "90001,Gal(b1-4)[Fuc(a1-3)GlcNAc,Homo_sapiens,Homo,Hominidae,Primates,Mammalia,Chordata,Animalia,Eukarya,,9606,train"  # noqa: E501
BROKEN_UNLABELLED = "90002,Man(a1-3)Mam(a1-6)Man,,,,,,,,,,,test"
CUT_MID_GLYCAN = "90003,Gal(b1-4)GlcNAc(b1-"  # a row of 2 fields, inside the file


@pytest.fixture(scope="module")
def injected(glycan_sample_csv, tmp_path_factory) -> dict[str, Any]:
    """The sample + 5 all-null lines + a line cut in the middle of its glycan (a short row
    inside the file: the rules' to report; as the last line it is a truncated file, exit 2),
    a broken labelled glycan and an unknown residue on an unlabelled row."""
    text = glycan_sample_csv.read_text(encoding="utf-8").rstrip("\n")
    n_cols = text.splitlines()[0].count(",") + 1
    lines = ["," * (n_cols - 1)] * 5 + [CUT_MID_GLYCAN, BROKEN_LABELLED, BROKEN_UNLABELLED]
    path = tmp_path_factory.mktemp("inj") / "injected.csv"
    path.write_text(text + "\n" + "\n".join(lines), encoding="utf-8")  # no final newline
    table = pl.read_csv(path, infer_schema=False)
    original = pl.read_csv(glycan_sample_csv, infer_schema=False)
    already = original.filter(~pl.col("glycan").map_elements(parses, return_dtype=pl.Boolean))
    assert already.height == 1  # the sample's own malformed glycan (glycowork row 3632)
    return {
        "path": path,
        "table": table,
        "rows": table.height,
        "invalid": 5 + 3 + already.height,
        "invalid_ids": {"90001", "90002", "90003", *already["glycowork_row"].to_list()},
    }


def test_audit_reports_every_row_labelled_or_not(injected, capsys):
    rc, out, _ = run(capsys, "audit", "glycan", injected["path"], "-f", "json")
    assert rc == 1
    findings = json.loads(out)["findings"]
    by_rule = Counter(f["rule"] for f in findings)
    assert by_rule["GL001"] == 5  # the null rows: "missing glycan"
    assert all(f["message"] == "missing glycan" for f in findings if f["rule"] == "GL001")
    parse = {f["record"]: f for f in findings if f["rule"] in ("GL101", "GL102")}
    assert set(parse) == {"line 4907", "line 4908", "line 4909", "line 471"}
    assert parse["line 4909"]["rule"] == "GL102"  # unlabelled: reported all the same
    assert parse["line 4907"]["rule"] == "GL101"  # the cut line
    assert "unknown residue 'Mam'" in parse["line 4909"]["message"]


def test_export_leaves_out_exactly_the_invalid_rows(injected, tmp_path, capsys):
    out = tmp_path / "hf"
    rc, stdout, err = run(capsys, "export", "glycan", injected["path"], "--out", out)
    assert rc == 0, err
    assert f"({injected['invalid']} invalid records left out)" in stdout
    got = exported(out)
    assert got.height == injected["rows"] - injected["invalid"] == 4899
    assert got["glycan"].null_count() == 0
    assert got["glycan"].map_elements(parses, return_dtype=pl.Boolean).all()
    assert not set(got["glycowork_row"].drop_nulls().to_list()) & injected["invalid_ids"]
    # every valid input row is there, unchanged
    valid = injected["table"].filter(
        pl.col("glycan").map_elements(parses, return_dtype=pl.Boolean, skip_nulls=False)
    )
    # published without the split column (each split is its own files), integers as integers
    valid = valid.drop("split").with_columns(pl.col("glycowork_row", "taxon_id").cast(pl.Int64))
    assert sorted(got.select(valid.columns).rows(), key=repr) == sorted(valid.rows(), key=repr)
    card = (out / "README.md").read_text()
    assert "## Invalid records left out" in card
    assert f"{injected['invalid']} invalid records of the input failed" in card
    assert "| GL001 | 5 |" in card and "| GL102 | 1 |" in card


def test_fix_drops_the_invalid_rows_and_logs_them_whole(injected, tmp_path, capsys):
    out = tmp_path / "fixed"
    rc, stdout, err = run(capsys, "fix", "glycan", injected["path"], "--out", out)
    assert rc == 0, err
    assert f"invalid_dropped={injected['invalid']}" in stdout
    log = changelog(out)
    dropped = [c for c in log if c["rule"] in INVALID_GLYCAN]
    assert len(dropped) == injected["invalid"]
    assert all(c["field"] == "" and c["new"] is None for c in dropped)
    # logged whole, exactly as read: the changelog restores every dropped row
    as_read = [dict(r) for r in injected["table"].iter_rows(named=True)]
    for c in dropped:
        assert c["old"] in as_read
    assert Counter(c["rule"] for c in dropped) == {"GL001": 5, "GL101": 3, "GL102": 1}
    # nothing else is logged for a dropped row
    ids = {c["record"] for c in dropped}
    assert not [c for c in log if c["record"] in ids and c["rule"] not in INVALID_GLYCAN]
    got = exported(out)
    duplicates = sum(c["rule"] == "GL304" for c in log)
    assert got.height == injected["rows"] - injected["invalid"] - duplicates
    assert not set(got["glycowork_row"].drop_nulls().to_list()) & injected["invalid_ids"]
    summary = json.loads((out / "fix_summary.json").read_text())
    assert summary["invalid_dropped"] == injected["invalid"]
    assert summary["rows_out"] == got.height
    assert "## Invalid records left out" in (out / "README.md").read_text()


@pytest.mark.parametrize("command", ["fix", "export"])
def test_strict_refuses_and_writes_nothing(injected, tmp_path, capsys, command):
    out = tmp_path / "never"
    rc, stdout, err = run(capsys, command, "glycan", injected["path"], "--out", out, "--strict")
    assert rc == 1
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(
        f"curate: {injected['invalid']} of {injected['rows']} records are invalid"
    )
    # the first invalid record, by file, record and field
    assert f"first: {injected['path']}, record line 471, field glycan: GL101" in err
    assert not out.exists()
    assert not list(tmp_path.iterdir())


def test_strict_on_a_valid_file_writes_it(glycan_sample_csv, tmp_path, capsys):
    src = tmp_path / "valid.csv"
    sample = pl.read_csv(glycan_sample_csv, infer_schema=False)
    sample.filter(pl.col("glycan").map_elements(parses, return_dtype=pl.Boolean)).head(
        300
    ).write_csv(src)
    rc, stdout, _ = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf", "--strict")
    assert rc == 0 and "(0 invalid records left out)" in stdout
    assert exported(tmp_path / "hf").height == 300


def test_a_file_cut_mid_row_is_one_exit_2_line(injected, tmp_path, capsys):
    """The same rows with the cut one last: the file ends inside a row (it was read as data,
    the cut glycan a GL101 finding, the 11 missing fields never mentioned)."""
    src = tmp_path / "cut.csv"
    text = injected["path"].read_text(encoding="utf-8")
    src.write_text(text.replace(CUT_MID_GLYCAN + "\n", "") + "\n" + CUT_MID_GLYCAN)
    for command in ("audit", "fix", "export"):
        out = ["--out", tmp_path / command] if command != "audit" else []
        rc, stdout, err = run(capsys, command, "glycan", src, *out)
        assert rc == 2 and stdout == ""
        assert err == (
            f"curate: error: {src}:4909: truncated file: its last row has 2 of the header's 13 "
            "fields (the file ends inside a row: a download or copy that stopped early?)\n"
        )
        assert not (tmp_path / command).exists()


def test_a_line_cut_inside_quotes_is_one_exit_2_line(glycan_sample_csv, tmp_path, capsys):
    src = tmp_path / "cut.csv"
    head = glycan_sample_csv.read_text(encoding="utf-8").splitlines()[:40]
    src.write_text("\n".join(head) + '\n90004,"Gal(b1-4)[Fuc(a1-3)]GlcNAc,Homo', encoding="utf-8")
    rc, _, err = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert err == (
        f"curate: error: {src}:41: not a readable CSV file "
        "(unterminated quoted field starting at line 41)\n"
    )
    assert not (tmp_path / "hf").exists()


# --------------------------------------------------------------------------- odd cells


@pytest.fixture(scope="module")
def sample_head(glycan_sample_csv) -> pl.DataFrame:
    return pl.read_csv(glycan_sample_csv, infer_schema=False).head(60)


def test_object_and_nested_list_cells_are_findings_and_dropped(sample_head, tmp_path, capsys):
    records = sample_head.to_dicts()
    records[3]["Genus"] = {"name": "Homo"}  # an object where a label belongs
    records[7]["Species"] = [["Homo_sapiens"]]  # a nested list
    records[9]["glycan"] = ["Gal(b1-4)Glc"]  # a list where one glycan belongs
    records[11]["split"] = {"train": 1}
    records[13]["Family"] = ["Hominidae", "Pongidae"]  # a list of labels: fine
    src = tmp_path / "odd.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    rc, out, err = run(capsys, "audit", "glycan", src, "-f", "json", "--select", "GL001")
    assert rc == 1, err
    found = {f["record"]: f for f in json.loads(out)["findings"]}
    ids = [records[i]["glycowork_row"] for i in (3, 7, 9, 11)]
    assert set(found) == set(ids)
    assert found[ids[0]]["field"] == "Genus"
    assert found[ids[0]]["message"].startswith("an object where a label or a list of labels")
    assert found[ids[1]]["message"].startswith("a nested list where")
    assert found[ids[2]]["message"].startswith("a list where a glycan string belongs")
    assert found[ids[3]]["field"] == "split"

    rc, stdout, err = run(capsys, "fix", "glycan", src, "--out", tmp_path / "fixed")
    assert rc == 0, err
    dropped = {c["record"]: c for c in changelog(tmp_path / "fixed") if c["rule"] == "GL001"}
    assert set(dropped) == set(ids)
    # logged as read: the object itself, not a text rendering of it
    assert dropped[ids[0]]["old"] == records[3]
    assert dropped[ids[1]]["old"]["Species"] == [["Homo_sapiens"]]
    got = exported(tmp_path / "fixed")
    # the JSON wrote the row numbers as strings ("4"): published as the text they were
    assert got.schema["glycowork_row"] == pl.String
    published = {str(r) for r in got["glycowork_row"].to_list()}
    assert not published & set(ids)
    assert records[13]["glycowork_row"] in published

    rc, stdout, _ = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf")
    assert rc == 0 and "(4 invalid records left out)" in stdout
    assert exported(tmp_path / "hf").height == 60 - 4


def test_a_whole_object_column_is_reported_per_row(sample_head, tmp_path, capsys):
    table = sample_head.with_columns(pl.struct(pl.col("Genus").alias("name")).alias("Genus"))
    src = tmp_path / "struct.parquet"
    table.write_parquet(src)
    rc, out, _ = run(capsys, "validate", "glycan", src, "-f", "json")
    assert rc == 1
    assert Counter(f["rule"] for f in json.loads(out)["findings"])["GL001"] == 60
    rc, _, err = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf")
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(
        f"curate: error: {src}, record 4, field Genus: nothing to write: all 60 records are "
        "invalid (first: GL001 an object where a label or a list of labels belongs"
    )
    assert not (tmp_path / "hf").exists()


def test_parquet_list_label_columns_read_as_label_lists(sugarbase_csv, tmp_path, capsys):
    """v3_sugarbase's taxonomy cells are list literals (``"['Homo_sapiens']"``); the same table
    with real ``list<string>`` columns must give the same audit and keep its list type."""
    head = pl.read_csv(sugarbase_csv, infer_schema=False).head(3000)
    levels = [c for c in head.columns if c.lower() in LEVELS]
    as_text = tmp_path / "sugar.csv"
    head.write_csv(as_text)

    def to_list(v: str | None) -> list[str] | None:
        return None if v is None else parse_list_cell(v)

    as_lists = head.with_columns(
        [pl.col(c).map_elements(to_list, return_dtype=pl.List(pl.String)) for c in levels]
    )
    assert as_lists["Species"].list.len().max() > 1  # several species in one cell
    as_parquet = tmp_path / "sugar.parquet"
    as_lists.write_parquet(as_parquet)

    def by_rule(path: Path) -> dict[str, int]:
        rc, out, err = run(capsys, "audit", "glycan", path, "-f", "json", "--fail-on", "never")
        assert rc == 0, err
        return {k: v["findings"] for k, v in json.loads(out)["summary"]["by_rule"].items()}

    assert by_rule(as_parquet) == by_rule(as_text)
    for command in ("fix", "export"):
        out = tmp_path / command
        rc, _, err = run(capsys, command, "glycan", as_parquet, "--out", out)
        assert rc == 0, err
        schema = pq.read_schema(next((out / "data").glob("*.parquet")))
        assert pa.types.is_large_list(schema.field("Species").type) or pa.types.is_list(
            schema.field("Species").type
        )


def test_a_megabyte_glycan_is_a_finding_not_a_hang(sample_head, tmp_path, capsys):
    huge = "Gal(b1-4)" * 120_000 + "Glc"
    table = pl.concat([sample_head, sample_head.head(1).with_columns(pl.lit(huge).alias("glycan"))])
    src = tmp_path / "huge.csv"
    table.write_csv(src)
    rc, out, _ = run(capsys, "audit", "glycan", src, "-f", "json", "--select", "GL1")
    assert rc == 1
    (finding,) = json.loads(out)["findings"]
    assert finding["record"] == "line 62"
    assert "too long for a glycan: 1,080,003 characters" in finding["message"]
    assert len(finding["message"]) < 400  # the report quotes it shortened
    rc, stdout, _ = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf")
    assert rc == 0 and "(1 invalid record left out)" in stdout
    assert exported(tmp_path / "hf").height == 60


def test_matrix_invalid_rows_and_headers_are_dropped_and_logged(tmp_path, capsys):
    src = tmp_path / "matrix.csv"
    src.write_text(
        "protein,target,Gal(b1-4)Glc,Man(a1-3)Man,Gal(b1-4)[Fuc(a1-3)Glc,Neu5Ac(a2-3)Gal\n"
        "P1,MKT,0.5,1.2,0.1,\n"
        "P2,MKV,n/a,0.3,,2.0\n"
        "P3,MKW,0.1,,0.9,1.5\n",
        encoding="utf-8",
    )
    rc, _, err = run(capsys, "fix", "glycan", src, "--out", tmp_path / "fixed")
    assert rc == 0, err
    log = changelog(tmp_path / "fixed")
    row = next(c for c in log if c["rule"] == "GL001")
    assert row["record"] == "line 3" and row["old"]["Gal(b1-4)Glc"] == "n/a"
    column = next(c for c in log if c["rule"] == "GL101")
    assert column["field"] == "Gal(b1-4)[Fuc(a1-3)Glc"
    assert column["old"] == {"line 2": "0.1", "line 4": "0.9"}
    got = exported(tmp_path / "fixed")
    assert got["protein"].to_list() == ["P1", "P3"]
    assert "Gal(b1-4)[Fuc(a1-3)Glc" not in got.columns
    rc, _, err = run(capsys, "export", "glycan", src, "--out", tmp_path / "x", "--strict")
    assert rc == 1 and "field Gal(b1-4)Glc: GL001 non-numeric interaction value 'n/a'" in err


# --------------------------------------------------------------------------- --mapping


@pytest.mark.parametrize(
    ("mapping", "where"),
    [
        ({"genus": {"Homo": 3}}, "field genus.Homo"),
        ({"genus": {"Homo": ""}}, "field genus.Homo"),
        ({"genus": ["Homo"]}, "field genus"),
        ({"genera": {"Homo": "Hominidae"}}, "field genera"),
        ({"domain": {"Eukarya": "Life"}}, "field domain"),
        ([{"genus": {}}], None),
    ],
)
def test_bad_mapping_is_one_exit_2_line(sample_head, tmp_path, capsys, mapping, where):
    src = tmp_path / "s.csv"
    sample_head.write_csv(src)
    m = tmp_path / "map.json"
    m.write_text(json.dumps(mapping), encoding="utf-8")
    rc, _, err = run(capsys, "fix", "glycan", src, "--out", tmp_path / "o", "--mapping", m)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"curate: error: {m}" + (f", {where}:" if where else ":"))
    assert not (tmp_path / "o").exists()


def test_good_mapping_still_applies(sample_head, tmp_path, capsys):
    src = tmp_path / "s.csv"
    sample_head.write_csv(src)
    genus = sample_head["Genus"].drop_nulls()[0]
    m = tmp_path / "map.json"
    m.write_text(json.dumps({"Genus": {genus: "Mappedaceae"}}), encoding="utf-8")
    # the mapping decides GL301's edits, which choose a label: unsafe fixes
    rc, _, err = run(
        capsys, "fix", "glycan", src, "--out", tmp_path / "o", "--mapping", m, "--unsafe-fixes"
    )
    assert rc == 0, err
    got = exported(tmp_path / "o")
    assert set(got.filter(pl.col("Genus") == genus)["Family"]) == {"Mappedaceae"}


# --------------------------------------------------------------------------- no records


def _empty_inputs(tmp_path: Path, family: str) -> list[Path]:
    header_only = tmp_path / "header.csv"
    if family == "glycan":
        header_only.write_text("glycowork_row,glycan,Species,Genus,split\n", encoding="utf-8")
        schema = pa.schema(
            [("glycan", pa.string()), ("Species", pa.string()), ("Genus", pa.string())]
        )
    else:
        header_only.write_text("case_id,requested_rewrite,orig\n", encoding="utf-8")
        schema = pa.schema([("case_id", pa.int64()), ("answer", pa.string())])
    empty_array = tmp_path / "empty.json"
    empty_array.write_text("[]", encoding="utf-8")
    empty_parquet = tmp_path / "empty.parquet"
    pq.write_table(schema.empty_table(), empty_parquet)
    zero_bytes = tmp_path / "zero.jsonl"
    zero_bytes.write_bytes(b"")
    blank_csv = tmp_path / "blank.csv"
    blank_csv.write_text("\n\n", encoding="utf-8")
    return [header_only, empty_array, empty_parquet, zero_bytes, blank_csv]


@pytest.mark.parametrize("family", ["glycan", "mquake"])
@pytest.mark.parametrize("command", ["validate", "audit", "fix", "export"])
def test_no_records_is_exit_2_for_every_family_and_command(tmp_path, capsys, family, command):
    for src in _empty_inputs(tmp_path, family):
        extra = (
            ["--out", tmp_path / f"out-{src.suffix[1:]}"] if command in ("fix", "export") else []
        )
        rc, out, err = run(capsys, command, family, src, *extra)
        assert rc == 2, (src, out, err)
        blank = "" if src.read_bytes().strip() else " (empty file)"
        assert err == f"curate: error: {src}: no records{blank}\n"
        assert out == ""
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["blank.csv", "empty.json", "empty.parquet", "header.csv", "zero.jsonl"]


def test_one_empty_file_among_several_is_named(tmp_path, capsys):
    sample = Path(__file__).resolve().parents[1] / "curate" / "data" / "samples"
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    rc, _, err = run(capsys, "audit", "mquake", sample / "mquake_sample.json", empty)
    assert rc == 2 and err == f"curate: error: {empty}: no records\n"
    rc, _, err = run(capsys, "audit", "glycan", sample / "glycan_taxonomy_sample.csv", empty)
    assert rc == 2 and err == f"curate: error: {empty}: no records\n"


# --------------------------------------------------------------------------- knowledge editing


@pytest.fixture(scope="module")
def broken_hard(hard_records, tmp_path_factory) -> dict[str, Any]:
    """MQuAKE-hard with three records broken in three ways."""
    records = json.loads(json.dumps(hard_records))
    broken = {10: records[10]["case_id"], 20: records[20]["case_id"], 30: records[30]["case_id"]}
    records[10]["new_answer"] = 42  # a number where a string belongs
    records[20] = {"case_id": records[20]["case_id"], "note": "not a case"}  # no layout at all
    records[30]["orig"]["triples"][0] = records[30]["orig"]["triples"][0][:2]  # a 2-element triple
    path = tmp_path_factory.mktemp("ke") / "hard_broken.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return {"path": path, "records": records, "broken": broken}


def test_ke_export_leaves_out_the_schema_invalid_cases(broken_hard, tmp_path, capsys):
    out = tmp_path / "hf"
    rc, stdout, err = run(capsys, "export", "mquake", broken_hard["path"], "--out", out)
    assert rc == 0, err
    assert "(3 invalid records left out)" in stdout
    got = exported(out)
    assert got.height == len(broken_hard["records"]) - 3
    assert not set(got["case_id"].to_list()) & set(broken_hard["broken"].values())
    assert "| KE001 | 3 |" in (out / "README.md").read_text()


def test_ke_fix_logs_each_invalid_case_whole(broken_hard, tmp_path, capsys):
    out = tmp_path / "fixed"
    rc, stdout, err = run(capsys, "fix", "mquake", broken_hard["path"], "--out", out)
    assert rc == 0, err
    assert "invalid_dropped=3" in stdout
    log = changelog(out)
    invalid = {c["record"]: c for c in log if c["rule"] == "KE001"}
    assert set(invalid) == {str(v) for v in broken_hard["broken"].values()}
    for i, case_id in broken_hard["broken"].items():
        assert invalid[str(case_id)]["old"] == broken_hard["records"][i]
        assert invalid[str(case_id)]["reason"].startswith("dropped: invalid record")
    duplicates = sum(c["rule"] == "KE401" for c in log)
    assert exported(out).height == len(broken_hard["records"]) - 3 - duplicates


@pytest.mark.parametrize("command", ["fix", "export"])
def test_ke_strict_refuses(broken_hard, tmp_path, capsys, command):
    out = tmp_path / "never"
    rc, stdout, err = run(capsys, command, "mquake", broken_hard["path"], "--out", out, "--strict")
    assert rc == 1 and stdout == ""
    assert len(err.strip().splitlines()) == 1
    n = len(broken_hard["records"])
    first = broken_hard["broken"][10]
    assert err.startswith(f"curate: 3 of {n} records are invalid, nothing written (--strict)")
    assert f"first: {broken_hard['path']}, record {first}, field new_answer: KE001" in err
    assert not out.exists()


# --------------------------------------------------------------------------- fix summaries


def _summary_line(stdout: str) -> dict[str, str]:
    """``key=value`` pairs of the line ``fix`` prints."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith("wrote "))
    inner = line.split("; ", 1)[1]
    return dict(pair.split("=", 1) for pair in inner.split(", "))


def test_ke_fix_summary_counts_duplicates_and_invalid_apart(broken_hard, tmp_path, capsys):
    """``dropped`` = records a fix removed, ``invalid_dropped`` = invalid ones; no overlap."""
    records = json.loads(json.dumps(broken_hard["records"]))
    top = max(int(r["case_id"]) for r in records)
    for k, i in enumerate((0, 1), start=1):  # two duplicate cases (same chain, same edits)
        records.append({**json.loads(json.dumps(records[i])), "case_id": top + k})
    src = tmp_path / "dups.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    out = tmp_path / "fixed"
    # every case is edited (edit set all): dropping an edited duplicate is an unsafe fix
    rc, stdout, err = run(capsys, "fix", "mquake", src, "--out", out, "--unsafe-fixes")
    assert rc == 0, err
    log = changelog(out)
    duplicates = {c["record"] for c in log if c["rule"] == "KE401"}
    assert {str(top + 1), str(top + 2)} <= duplicates
    line = _summary_line(stdout)
    assert int(line["invalid_dropped"]) == 3
    assert int(line["dropped"]) == len(duplicates)
    assert exported(out).height == len(records) - 3 - len(duplicates)


def test_glycan_fix_summary_counts_duplicates_and_invalid_apart(injected, tmp_path, capsys):
    out = tmp_path / "fixed"
    rc, stdout, err = run(capsys, "fix", "glycan", injected["path"], "--out", out)
    assert rc == 0, err
    duplicates = sum(c["rule"] == "GL304" for c in changelog(out))
    assert duplicates > 0
    line = _summary_line(stdout)
    assert int(line["invalid_dropped"]) == injected["invalid"]
    assert int(line["dropped"]) == duplicates
    assert exported(out).height == injected["rows"] - injected["invalid"] - duplicates


def test_matrix_fix_summary_counts_merged_rows_and_invalid_apart(tmp_path, capsys):
    src = tmp_path / "matrix.csv"
    src.write_text(
        "protein,target,Gal(b1-4)Glc,Man(a1-3)Man\n"
        "P1,MKT,0.5,1.2\n"
        "P2,MKV,n/a,0.3\n"  # invalid: GL001
        "P3,MKT,,0.7\n"  # the same sequence as P1: merged into it (GL603)
        "P4,MKY,,\n",  # no value at all (GL602)
        encoding="utf-8",
    )
    out = tmp_path / "fixed"
    rc, stdout, err = run(capsys, "fix", "glycan", src, "--out", out, "--unsafe-fixes")
    assert rc == 0, err
    rules = Counter(c["rule"] for c in changelog(out) if c["field"] == "")
    assert rules == {"GL001": 1, "GL603": 1, "GL602": 1}
    # P3 merged into P1: its name and its differing value are logged as discarded
    merged = [c for c in changelog(out) if c["rule"] == "GL603" and c["field"]]
    assert [(c["field"], c["old"], c["new"]) for c in merged] == [
        ("protein", "P3", None),
        ("Man(a1-3)Man", "0.7", None),
    ]
    assert all(c["reason"].startswith("discarded: line 2 holds") for c in merged)
    line = _summary_line(stdout)
    assert (int(line["invalid_dropped"]), int(line["dropped"])) == (1, 2)
    assert exported(out)["protein"].to_list() == ["P1"]


# --------------------------------------------------------------------------- properties


@given(st.lists(st.text(max_size=12), max_size=6))
def test_mixed_list_cells_round_trip_through_the_label_reader(values):
    assert parse_list_cell(_cell_text(values)) == values


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sets(st.integers(0, 39), max_size=12), st.sampled_from(["(", "Mam", "[Gal", ""]))
def test_export_count_is_rows_minus_invalid(sample_head, tmp_path, broken, damage):
    """Whatever rows are damaged, and however, exactly those rows are left out."""
    table = sample_head.head(40).filter(
        pl.col("glycan").map_elements(parses, return_dtype=pl.Boolean)
    )
    glycans = table["glycan"].to_list()
    for i in broken:
        if i < len(glycans):
            glycans[i] = glycans[i] + damage if damage else None
    src = tmp_path / "p.csv"
    table.with_columns(pl.Series("glycan", glycans, dtype=pl.String)).write_csv(src)
    data = GLYCAN.load([src])
    n_bad = sum(1 for i in broken if i < len(glycans))
    tables = GLYCAN.to_tables(data)
    assert sum(t.num_rows for t in tables.values()) == table.height - n_bad
    assert GLYCAN.invalid_records(data)["row"].n_unique() == n_bad


def test_an_export_counts_an_invalid_glycan_column_as_a_column(tmp_path, capsys):
    """An interaction matrix with one bad value (a record) and one header that does not parse
    (a column): the count adds up to what was read (it said "2 invalid records" of 2 rows, one
    of them published)."""
    src = tmp_path / "matrix.csv"
    src.write_text(
        "target,protein,Gal(b1-4)Glc,Gal(b1-4Glc,Man(a1-3)Man\n"
        "MKVLAAGIC,lectin A,0.5,1.2,abc\nMQRWSEDLK,lectin C,0.1,0.9,0.2\n"
    )
    out = tmp_path / "hf"
    rc, stdout, err = run(capsys, "export", "glycan", src, "--out", out)
    assert rc == 0, err
    assert "train=1 (1 invalid record and 1 invalid column left out)" in stdout
    card = (out / "README.md").read_text()
    assert "1 invalid record and 1 invalid column of the input failed" in card
    assert "1 invalid record and 1 invalid column that fail the schema are left out" in card
