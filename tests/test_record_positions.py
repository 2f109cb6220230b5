"""Where each record of a JSON array starts (line, column in code points): checked against the
positions known while the text is written, for any values, whitespace and escapes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from curate.reports.locations import record_positions

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_space = st.sampled_from(["", " ", "\n", "\n  ", "\t", " \n\n "])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_values, _space, st.booleans()), max_size=8),
    _space,
)
def test_json_array_positions_are_where_the_writer_put_each_record(records, tail) -> None:
    text, expected = "[", []
    for i, (value, space, ascii_only) in enumerate(records):
        text += space
        before = text
        line = before.count("\n") + 1
        expected.append((line, len(before) - (before.rfind("\n") + 1) + 1))
        text += json.dumps(value, ensure_ascii=ascii_only)
        if i < len(records) - 1:
            text += ","
    text += tail + "]"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "records.json"
        path.write_text(text, encoding="utf-8")
        assert record_positions(str(path), "json") == tuple(expected)


def test_a_twenty_megabyte_value_on_one_line_is_scanned_once(tmp_path: Path) -> None:
    """An array on one line with a 20 MB string in it: each record's column counts on from the
    one before (it decoded the whole prefix per record, and the string pattern held 2.3 GB)."""
    records = [{"id": i, "v": "x" * (20_000_000 if i == 1 else 10)} for i in range(6)]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    found = record_positions(str(path), "json")
    assert found is not None and [line for line, _ in found] == [1] * 6
    text = path.read_text(encoding="utf-8")
    assert [c - 1 for _, c in found] == [text.index(f'{{"id": {i}') for i in range(6)]
