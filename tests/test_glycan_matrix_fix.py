"""Interaction-matrix fixes on a real slice of glycowork's binding matrix, and list-cell reading."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import datasets
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import curate
from curate.cli.main import main
from curate.schemas.glycan import parse_list_cell
from curate.schemas.iupac import IUPACError, canonical_key


@pytest.fixture(scope="module")
def matrix_slice(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    """400 real glycan columns × 300 real proteins, plus injected GL601/GL602/GL603 defects."""
    glycowork = pytest.importorskip("glycowork")
    del glycowork
    src = files("glycowork") / "glycan_data" / "v12_glycan_binding.csv"
    full = pl.read_csv(str(src), infer_schema=False)
    cols = [c for c in full.columns if c not in ("target", "protein")]

    def parses(c: str) -> bool:
        try:
            canonical_key(c)
            return True
        except IUPACError:
            return False

    cols = [c for c in cols if parses(c)][:400]
    part = full.select(*cols, "target", "protein").head(300)
    # GL601: a real glycan with a branch, re-spelled with its branches swapped, disagreeing once
    src_col = next(c for c in cols if "[" in c and part[c].drop_nulls().len() >= 2)
    head, rest = src_col.split("[", 1)
    branch, tail = rest.split("]", 1)
    # X[B]Y → B[X]Y is the same tree only when both hang on the same residue: check by key
    alt = f"{branch}[{head}]{tail}"
    if not parses(alt) or canonical_key(alt) != canonical_key(src_col):
        pytest.skip("no re-spellable column in the slice")
    measured = part[src_col].to_list()
    i = next(k for k, v in enumerate(measured) if v is not None)
    alt_values = [None] * part.height
    alt_values[i] = str(float(measured[i]) + 1.0)  # disagrees with the original column
    j = next(k for k, v in enumerate(measured) if v is None)
    alt_values[j] = "0.5"  # fills a gap of the original column
    part = part.with_columns(pl.Series(alt, alt_values, dtype=pl.String))
    # GL603: a repeated protein sequence under another name (a row with neither column measured,
    # so the two injections stay independent)
    r0 = next(k for k in range(part.height) if measured[k] is None and alt_values[k] is None)
    copy = part.slice(r0, 1).with_columns(pl.lit("renamed copy").alias("protein"))
    part = pl.concat([part, copy])
    path = tmp_path_factory.mktemp("matrix") / "matrix.csv"
    part.write_csv(path)
    return path, part.with_columns(pl.lit(src_col).alias("__orig"), pl.lit(alt).alias("__alt"))


def _log(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "changelog.jsonl").read_text().splitlines()]


def _rules_left(out: Path) -> set[str]:
    return set(curate.audit("glycan", out).findings["rule"].unique().to_list())


def test_matrix_default_fix_only_drops_empty_rows(matrix_slice, tmp_path, capsys) -> None:
    """Merging columns or rows discards values that disagree: unsafe, so the default run
    only drops the protein rows with no value (safe) and says what it left."""
    path, part = matrix_slice
    out = tmp_path / "safe"
    assert main(["fix", "glycan", str(path), "--out", str(out)]) == 0
    assert "more fix(es) available with --unsafe-fixes" in capsys.readouterr().out
    log = _log(out)
    assert {c["rule"] for c in log} == {"GL602"}
    assert all(c["field"] == "" and c["new"] is None for c in log)
    summary = json.loads((out / "fix_summary.json").read_text())
    assert set(summary["unsafe_fixes_available"]) == {"GL601", "GL603"}
    left = _rules_left(out)
    assert "GL602" not in left and {"GL601", "GL603"} <= left
    ds = datasets.load_dataset(str(out))["train"]
    assert ds.column_names == [c for c in part.columns if not c.startswith("__")]


def test_matrix_fix_merges_drops_and_logs(matrix_slice, tmp_path, capsys) -> None:
    path, part = matrix_slice
    out = tmp_path / "fixed"
    assert main(["audit", "glycan", str(path), "--select", "GL6", "--fail-on", "never"]) == 0
    before = capsys.readouterr().out
    assert "GL601" in before and "GL602" in before and "GL603" in before
    assert main(["fix", "glycan", str(path), "--out", str(out), "--unsafe-fixes"]) == 0
    capsys.readouterr()
    log = _log(out)
    rules = {c["rule"] for c in log}
    assert rules == {"GL601", "GL602", "GL603"}
    # every change names a finding of the audit of the input
    found = json.loads((out / "audit.before.json").read_text())["findings"]
    named = {(f["rule"], f["record"], f["field"], f["message"]) for f in found}
    for c in log:
        ref = c["finding"]
        assert c["pass"] > 1 or (ref["rule"], ref["record"], ref["field"], ref["message"]) in named
        assert c["pass"] > 0  # no invalid row here
    # every dropped row is kept whole in the changelog
    dropped = [c for c in log if c["field"] == "" and c["new"] is None]
    glycan_cols = [c for c in part.columns if c not in ("target", "protein", "__orig", "__alt")]
    empty = part.filter(~pl.any_horizontal([pl.col(c).is_not_null() for c in glycan_cols]))
    assert len([c for c in dropped if c["rule"] == "GL602"]) == empty.height
    assert [c["old"]["protein"] for c in dropped if c["rule"] == "GL603"] == ["renamed copy"]
    ds = datasets.load_dataset(str(out))["train"]
    assert ds.num_rows == part.height - len(dropped)
    # numbers stay numbers
    assert all(ds.features[c].dtype == "float64" for c in ds.column_names if c not in
               ("target", "protein"))  # fmt: skip
    # one column per glycan afterwards, and the re-audit has no matrix finding
    keys = [canonical_key(c) for c in ds.column_names if c not in ("target", "protein")]
    assert len(keys) == len(set(keys))
    assert main(["audit", "glycan", str(out), "--select", "GL6"]) == 0
    assert "No findings" in capsys.readouterr().out


def test_matrix_fix_keeps_the_column_with_most_values(matrix_slice, tmp_path, capsys) -> None:
    path, part = matrix_slice
    orig, alt = part["__orig"][0], part["__alt"][0]
    counts = {c: part[c].drop_nulls().len() for c in (orig, alt)}
    kept, other = sorted((orig, alt), key=lambda c: (-counts[c], c))
    out = tmp_path / "fixed"
    assert main(["fix", "glycan", str(path), "--out", str(out), "--select", "GL601",
                 "--unsafe-fixes"]) == 0  # fmt: skip
    capsys.readouterr()
    gl601 = [c for c in _log(out) if c["rule"] == "GL601"]
    k, o = part[kept].to_list(), part[other].to_list()
    want_discarded = {(i, o[i]) for i in range(part.height) if k[i] and o[i] and k[i] != o[i]}
    want_moved = {(i, o[i]) for i in range(part.height) if k[i] is None and o[i] is not None}
    line = {f"line {i + 2}": i for i in range(part.height)}
    discarded = [c for c in gl601 if c["old"] is not None and c["new"] is None]
    moved = [c for c in gl601 if c["old"] is None and c["new"] is not None]
    assert {(line[c["record"]], c["old"]) for c in discarded} == want_discarded
    assert {(line[c["record"]], c["new"]) for c in moved} == want_moved
    assert all(c["field"] == other for c in discarded)
    assert all(c["field"] == kept for c in moved)
    # and the column itself is logged as merged
    assert [c["field"] for c in gl601 if "column dropped" in c["reason"]] == [other]
    ds = datasets.load_dataset(str(out))["train"]
    assert kept in ds.column_names and other not in ds.column_names
    assert _rules_left(out).isdisjoint({"GL601"})


@given(
    st.lists(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\\"),
            max_size=12,
        ),
        max_size=6,
    )
)
def test_list_cells_round_trip(values: list[str]) -> None:
    assert parse_list_cell(repr(values)) == values


def test_list_cells_reject_what_is_not_a_list_of_strings() -> None:
    for cell in ("Homo_sapiens", "['a' 'b']", "[1, 2]", "['a', 2]", "['unterminated]"):
        assert parse_list_cell(cell) is None


def test_protein_column_named_by_hand_keeps_the_sequence_out_of_the_glycans(matrix_slice) -> None:
    """``--column protein=protein`` (the name column as the row key): the sequence column
    ``target`` is the other protein column, not a glycan column whose every cell is a GL101."""
    path, part = matrix_slice
    auto = curate.audit("glycan", path, task="interaction")
    named = curate.audit("glycan", path, task="interaction", columns={"protein": "protein"})
    for report in (auto, named):
        assert not report.findings.filter(
            (pl.col("rule") == "GL101") & (pl.col("field") == "target")
        ).height
    from curate.families import get_family

    loaded = get_family("glycan").load(
        [str(path)], task="interaction", columns={"protein": "protein"}
    )
    (table,) = loaded.tables
    assert table.columns.protein == "protein" and table.columns.protein_name == "target"
    assert "target" not in table.columns.glycan_columns
    assert len(table.columns.glycan_columns) == len(part.columns) - 4  # target, protein, __*
