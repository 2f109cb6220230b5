"""CSV positions: a record named ``line N`` starts on physical line N, and a CSV error names
the line where its problem starts.

Why: a quoted value may hold line breaks (a note, a pasted glycan), and then "row index + 2"
names the wrong line for every later row; an unterminated quote is reported by polars with the
rest of the file as its "value" and no position at all. Built on a slice of the real glycowork
sample.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.cli.main import main
from curate.families.glycan import FAMILY as GLYCAN
from curate.io.read import read_frame


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def slice_rows(glycan_sample_csv) -> list[list[str]]:
    """Header + 30 rows of the real sample, without its id column (so records are named by
    line), as lists of cells."""
    df = pl.read_csv(glycan_sample_csv, infer_schema=False).drop("glycowork_row").head(30)
    return [df.columns] + [["" if v is None else v for v in row] for row in df.rows()]


def _cell(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n') else value


def build(rows: list[list[str]], eol: str = "\n") -> tuple[str, list[int]]:
    """CSV text of ``rows`` (rows end with ``eol``, values keep their own line breaks) and the
    physical line each data row starts on, counted here independently of the code under test."""
    out: list[str] = []
    starts: list[int] = []
    line = 1
    for k, row in enumerate(rows):
        if k:
            starts.append(line)
        text = ",".join(_cell(v) for v in row)
        out.append(text)
        line += text.count("\n") + 1  # a line ends at LF (CRLF too)
    return eol.join(out) + eol, starts


def _records(path: Path, *extra: str) -> list[str]:
    data = GLYCAN.load([str(path)], encoding=extra[0] if extra else None)
    return data.tables[0].rows["record"].to_list()


def test_rows_after_a_multi_line_glycan_are_named_by_their_physical_line(
    slice_rows, tmp_path, capsys
):
    """The reviewer's case: a quoted glycan over lines 2-3; the next rows are lines 4, 5, 6."""
    rows = [list(r) for r in slice_rows]
    glycan = rows[1][0]
    rows[1][0] = glycan[:8] + "\n" + glycan[8:]
    text, starts = build(rows)
    assert starts[:4] == [2, 4, 5, 6]
    src = tmp_path / "multi.csv"
    src.write_text(text, encoding="utf-8")
    assert _records(src) == [f"line {n}" for n in starts]
    # and through the CLI: the broken glycan is line 2, the 8th data row (line 10) is line 10
    rows[8][0] = "Man(a1-3)Mam(a1-6)Man"
    text, starts = build(rows)
    src.write_text(text, encoding="utf-8")
    rc, out, _ = run(capsys, "audit", "glycan", src, "-f", "json")
    assert rc == 1
    parse = {f["record"] for f in json.loads(out)["findings"] if f["rule"] in ("GL101", "GL102")}
    assert {"line 2", f"line {starts[7]}"} <= parse and starts[7] == 10


@pytest.mark.parametrize(
    ("encoding", "bom", "eol"),
    [
        ("utf-8", b"", "\r\n"),
        ("utf-8", codecs.BOM_UTF8, "\n"),
        ("latin-1", b"", "\n"),
        ("utf-16-le", codecs.BOM_UTF16_LE, "\r\n"),
    ],
)
def test_row_lines_respect_encodings_boms_and_crlf(slice_rows, tmp_path, encoding, bom, eol):
    rows = [list(r) for r in slice_rows]
    rows[3][9] = "first line\nsecond, with a comma\nthird"  # the ref column: 3 lines
    rows[10][1] = 'Homo "sapiens"\nsapiens'  # escaped quotes and a break
    rows[11][1] += "é"  # not ASCII: the encoding matters
    text, starts = build(rows, eol)
    src = tmp_path / "enc.csv"
    src.write_bytes(bom + text.encode(encoding))
    option = None if bom else encoding
    df, source = read_frame(src, encoding=option)
    assert df.height == len(starts)
    assert source.row_lines == starts
    assert starts[2:4] == [4, 7] and starts[9:11] == [13, 15]
    assert _records(src, *([option] if option else [])) == [f"line {n}" for n in starts]


def test_a_file_without_multi_line_values_keeps_the_fast_count(slice_rows, tmp_path):
    text, starts = build(slice_rows)
    src = tmp_path / "plain.csv"
    src.write_text(text + "\n\n", encoding="utf-8")  # blank lines: rows for polars, not here
    df, source = read_frame(src)
    assert source.row_lines == list(range(2, df.height + 2)) and df.height == len(starts)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, 29), st.integers(0, 11), st.sampled_from(["\n", "\r\n", '"\n"'])),
        max_size=6,
    ),
    st.sampled_from(["\n", "\r\n"]),
)
def test_row_lines_property(slice_rows, tmp_path, breaks, eol):
    """Wherever line breaks (and quotes) go into cells, each row's line is where it starts."""
    rows = [list(r) for r in slice_rows]
    for row, col, piece in breaks:
        value = rows[row + 1][col]
        rows[row + 1][col] = value[: len(value) // 2] + piece + value[len(value) // 2 :]
    text, starts = build(rows, eol)
    src = tmp_path / "p.csv"
    src.write_bytes(text.encode("utf-8"))
    df, source = read_frame(src)
    assert source.row_lines == starts
    assert df["glycan"].to_list() == [r[0] or None for r in rows[1:]]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 3)), max_size=5),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_blank_lines_are_no_records(slice_rows, tmp_path, blanks, eol, separators_row):
    """Blank lines anywhere (between rows, at the end, inside a quoted value) are skipped as
    pandas, pyarrow and ``datasets`` skip them: the same rows, each named by its own line. A
    line of separators only is a row of empty values and stays."""
    rows = [list(r) for r in slice_rows[:12]]
    rows[3][0] = rows[3][0][:4] + eol + eol + rows[3][0][4:]  # a blank line inside a value
    if separators_row:
        rows.insert(5, [""] * len(rows[0]))
    text, starts = build(rows, eol)
    lines = text.split("\n")
    kept = list(starts)
    for after, count in sorted(blanks, reverse=True):
        at = min(after, len(rows) - 1)
        # blank lines after data row ``at`` (0: after the header): rows below move down
        where = 1 if at == 0 else starts[at - 1] + "".join(rows[at]).count("\n")
        lines[where:where] = [eol.rstrip("\n")] * count
        kept = [n + count if n > where else n for n in kept]
    src = tmp_path / "b.csv"
    src.write_bytes("\n".join(lines).encode("utf-8"))
    df, source = read_frame(src)
    assert df["glycan"].to_list() == [r[0] or None for r in rows[1:]]
    assert source.row_lines == kept


# --------------------------------------------------------------------------- unterminated quotes


def _one_line_error(capsys, src: Path, tmp_path: Path) -> str:
    rc, out, err = run(capsys, "export", "glycan", src, "--out", tmp_path / "hf")
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert not (tmp_path / "hf").exists()
    return err


def test_an_unterminated_quote_names_the_line_it_starts_on(slice_rows, tmp_path, capsys):
    rows = [list(r) for r in slice_rows]
    rows[2][9] = 'a "quoted" note\nover two lines'  # a closed multi-line value before it
    text, starts = build(rows)
    lines = text.split("\n")
    at = starts[5]  # row 6 starts on this line (line 8: row 2 took two)
    lines[at - 1] = '"' + lines[at - 1]  # its glycan opens a quote that never closes
    src = tmp_path / "q.csv"
    src.write_text("\n".join(lines), encoding="utf-8")
    err = _one_line_error(capsys, src, tmp_path)
    assert at == 8
    assert err == (
        f"curate: error: {src}:8: not a readable CSV file "
        "(unterminated quoted field starting at line 8)\n"
    )


@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])
def test_a_csv_cut_mid_quote_names_the_line_of_the_quote(slice_rows, tmp_path, capsys, bom):
    text, starts = build(slice_rows[:6])
    src = tmp_path / "cut.csv"
    src.write_bytes(bom + (text + 'Gal(b1-4)Glc,"Homo_sap').encode("utf-8"))
    err = _one_line_error(capsys, src, tmp_path)
    line = starts[-1] + 1
    assert err == (
        f"curate: error: {src}:{line}: not a readable CSV file "
        f"(unterminated quoted field starting at line {line})\n"
    )
