"""Integers beyond 64 bits are read exactly from JSON and JSON Lines, never as floats.

Why: orjson reads ``18446744073709551616`` as ``1.8446744073709552e19`` without a word, which
would change an id or a count; the readers send such documents to the stdlib parser
(:func:`curate.io.json_files._loads`). What cannot be stored (parquet has no integer beyond 64
bits) is
one exit-2 line, not a crash and not a float.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.cli.main import main
from curate.io.read import open_source, read_frame

BIG = st.one_of(
    st.integers(min_value=2**63 - 5, max_value=2**64 + 5),
    st.integers(min_value=-(2**63) - 5, max_value=-(2**63) + 5),
    st.integers(min_value=-(10**400), max_value=10**400),
)
VALUES = st.one_of(
    BIG,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="0123456789", min_size=18, max_size=30),  # long digit strings stay text
)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for b in open_source(path).batches for r in b.rows]


def test_orjson_alone_would_lose_the_value():
    """The premise, checked so this file notices if orjson ever changes."""
    assert orjson.loads("[18446744073709551616]") == [1.8446744073709552e19]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.dictionaries(st.sampled_from("abc"), VALUES, min_size=1), min_size=1))
def test_json_array_and_json_lines_keep_every_integer_exact(tmp_path, records):
    array = tmp_path / "a.json"
    array.write_text(json.dumps(records), encoding="utf-8")
    lines = tmp_path / "a.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for path in (array, lines):
        got = _rows(path)
        assert got == records
        for g, r in zip(got, records, strict=True):
            assert {k: type(v) for k, v in g.items()} == {k: type(v) for k, v in r.items()}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(BIG, min_size=1, max_size=5))
def test_big_integers_in_nested_values_and_other_encodings(tmp_path, ints):
    records = [{"id": str(i), "nested": {"xs": ints, "pair": [ints[0], "é"]}} for i in range(3)]
    path = tmp_path / "n.jsonl"
    path.write_bytes(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-16")
    )
    assert _rows(path) == records


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('[{"a": 1' + "0" * 400 + ".5}]", "1:8"),  # a float too big for a double: still invalid
        ('[{"a": 1' + "0" * 30 + ', "b": NaN}]', "1:46"),  # NaN next to a long integer
        ('[{"a": 1' + "0" * 400 + ", }]", "1:411"),  # the integer is fine; no key after the comma
    ],
)
def test_what_orjson_refuses_stays_refused(tmp_path, capsys, text, position):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["validate", "mquake", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"curate: error: {path}:{position}: invalid JSON"
    )


def test_a_glycan_table_keeps_a_big_id_as_its_exact_text(tmp_path):
    path = tmp_path / "g.jsonl"
    rows = [{"glycan": "Gal(b1-4)Glc", "taxon_id": 2**70 + 1}, {"glycan": "Man", "taxon_id": 7}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    df, _ = read_frame(path)
    assert df["taxon_id"].to_list() == [str(2**70 + 1), "7"]


@pytest.mark.parametrize("command", ["fix", "export"])
def test_a_case_with_an_unstorable_integer_is_one_exit_2_line(
    hard_records, tmp_path, capsys, command
):
    records = json.loads(json.dumps(hard_records[:20]))
    records[4]["meta"] = {"counts": [1, 2**64]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    capsys.readouterr()
    assert main(["audit", "mquake", str(path)]) in (0, 1)  # reading and auditing are fine
    capsys.readouterr()
    assert main([command, "mquake", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"curate: error: {path}, record {records[4]['case_id']}, field meta.counts[1]: "
        f"integer {2**64} is outside the 64-bit range parquet can store (write it as a string)\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_chain_index_beyond_64_bits_is_a_schema_finding(hard_records, tmp_path, capsys, suffix):
    """``edit_triples_idx`` is stored as int64: a larger index is KE001 on its case (exit 1),
    not a crash while the tables are built."""
    records = json.loads(json.dumps(hard_records[:20]))
    records[3]["orig"]["edit_triples_idx"][0] = 2**70
    path = tmp_path / f"big{suffix}"
    text = json.dumps(records) if suffix == ".json" else "\n".join(map(json.dumps, records))
    path.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["audit", "mquake", str(path), "-f", "json", "--select", "KE001"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["record"] == str(records[3]["case_id"])
    assert finding["field"] == "orig.edit_triples_idx[0]"


def test_the_columnar_reader_mirrors_every_model_constraint():
    """A model constraint the vectorised check cannot mirror switches the fast reader off for
    every file, silently (a validator on ``split`` once did): keep it on."""
    from curate.families.knowledge_editing_columns import model_check

    assert model_check(int) is not None and model_check(str) is not None


def test_fix_keeps_a_huge_integer_exact_in_the_changelog(tmp_path):
    """The invalid record (an integer where a string belongs) is logged whole, digit for digit."""
    import json

    from conftest import SAMPLE

    from curate.cli.main import main

    recs = json.loads(SAMPLE.read_text(encoding="utf-8"))
    recs[1]["new_answer"] = 2**70
    src = tmp_path / "in.json"
    src.write_text(json.dumps(recs), encoding="utf-8")
    assert main(["fix", "mquake", str(src), "--out", str(tmp_path / "o")]) == 0
    lines = (tmp_path / "o" / "changelog.jsonl").read_text(encoding="utf-8").splitlines()
    dropped = [json.loads(x) for x in lines if json.loads(x)["rule"] == "KE001"]
    assert [d["old"]["new_answer"] for d in dropped] == [2**70]
