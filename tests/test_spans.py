"""Input shards (:class:`curate.io.spans.Span`): a file cut into spans anywhere reads, span by span,
as exactly the records of the whole-file reader — same bytes, line numbers, record indexes —
and the counting pass numbers the spans as the whole-file reader would.

Why it matters: ``--engine ray`` has each worker read its own span of a file, and the report
must equal the local one byte for byte, so a line lost or read twice at a cut, or a line number
off by one after blank lines or a byte order mark, would be a wrong finding.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import curate.io.read
import curate.io.records
import curate.io.spans
from curate.io.read import open_source
from curate.io.records import SplitInput, split_of
from curate.io.spans import SpanNumbering, input_spans


def _records(batches) -> list[tuple]:
    out = []
    for b in batches:
        if b.raw is not None:
            out.extend(
                (b.offset + i, n, r) for i, (n, r) in enumerate(zip(b.lines, b.raw, strict=True))
            )
        else:
            out.extend((b.offset + i, b.split, r) for i, r in enumerate(b.rows))
    return out


def _read_spans(spans) -> list[tuple]:
    return [r for s in spans for r in _records(s.open().batches)]


_RECORD = st.builds(
    lambda k, n: b'{"a": %d, "s": "%s"}\n' % (k, b"\xc3\xa9" * n),
    st.integers(0, 99),
    st.integers(0, 40),
)
_LINE = st.one_of(
    _RECORD,
    st.sampled_from([b"\n", b"   \n", b"\t\r\n", b" \x0c\x0b\n", b'  {"indented": 1}\n']),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(_LINE, min_size=1, max_size=40),
    bom=st.booleans(),
    trailing=st.booleans(),
    size=st.integers(1, 300),
    chunk=st.integers(1, 80),
)
def test_spans_read_as_the_whole_file(tmp_path_factory, lines, bom, trailing, size, chunk):
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(lines)
    if not trailing:
        data = data.rstrip(b"\n")
    path = tmp_path_factory.mktemp("s") / "x.jsonl"
    path.write_bytes(data)
    if len(data) <= 3 * bom:  # nothing to split: the whole-file reader says "empty file"
        assert input_spans(str(path)) is None
        return
    whole = list(open_source(str(path)).batches) if any(line.strip() for line in lines) else []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(curate.io.spans, "SPAN_MIN_BYTES", 1)
        mp.setattr(curate.io.spans, "SPAN_BYTES", size)
        mp.setattr(curate.io.spans, "_COUNT_CHUNK", chunk)  # lines across the counting pass's reads
        spans = input_spans(str(path), None, 1000)
        assert spans is not None and spans[0].start == 0 and spans[-1].end == len(data)
        sha = hashlib.sha256()
        numbering = SpanNumbering(spans, sha)
        spans = list(numbering)
    assert _read_spans(spans) == _records(whole)
    physical = data[3 if bom else 0 :]
    assert numbering.lines == len(physical.splitlines())
    assert numbering.records == len(_records(whole))
    assert sha.hexdigest() == hashlib.sha256(data).hexdigest()  # the same read hashes the file


def test_large_spans_and_batches(tmp_path, monkeypatch):
    """Spans of many batches (a batch boundary inside a span, not at its start)."""
    monkeypatch.setattr(curate.io.records, "BATCH_ROWS", 7)
    monkeypatch.setattr(curate.io.spans, "SPAN_MIN_BYTES", 1)
    monkeypatch.setattr(curate.io.spans, "SPAN_BYTES", 1000)
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(b'{"i": %d}\n%s' % (i, b"\n" * (i % 3 == 0)) for i in range(500)))
    spans = input_spans(str(path), None, 4)
    assert len(spans) > 5
    spans = list(SpanNumbering(spans))
    assert _read_spans(spans) == _records(open_source(str(path)).batches)


def test_what_is_not_split(tmp_path):
    """Inputs another process cannot read by offsets stay whole (None)."""
    (tmp_path / "a.json").write_text('[{"a": 1}]')
    (tmp_path / "a.jsonl.gz").write_bytes(b"")
    (tmp_path / "l1.jsonl").write_bytes('{"a": "é"}\n'.encode("latin-1"))
    (tmp_path / "u16.jsonl").write_bytes('\ufeff{"a": 1}\n'.encode("utf-16"))
    (tmp_path / "empty.parquet").write_bytes(b"")
    for name in ("a.json", "a.jsonl.gz", "u16.jsonl", "empty.parquet", "missing.jsonl"):
        assert input_spans(str(tmp_path / name)) is None, name
    assert input_spans(str(tmp_path / "l1.jsonl"), "latin-1") is None
    assert input_spans("-") is None
    assert input_spans("hf://datasets/x/y") is None


def test_parquet_spans_are_row_group_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(curate.io.spans, "SPAN_MIN_BYTES", 1)
    monkeypatch.setattr(curate.io.spans, "SPAN_BYTES", 1)
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": list(range(100))}), path, row_group_size=30)
    spans = input_spans(SplitInput(str(path), "test"))
    assert [(s.start, s.end, s.first_index, s.records) for s in spans] == [
        (0, 1, 0, 30),
        (1, 2, 30, 30),
        (2, 3, 60, 30),
        (3, 4, 90, 10),
    ]
    got = _read_spans(spans)
    assert got == [(i, "test", {"a": i}) for i in range(100)]
    assert str(spans[0]) == str(path) and Path(str(spans[0])) == path


def test_split_input_is_still_a_string():
    """A SplitInput is the path as a ``str`` (every reader takes it as one): its split rides on
    an attribute that does not hide a ``str`` method (it was named ``split``, which made
    ``path.split("/")`` call a string)."""
    path = SplitInput("data/train.csv", "train")
    assert path.split("/") == ["data", "train.csv"]
    assert split_of(path) == "train"
    assert pickle.loads(pickle.dumps(path)).split_name == "train"
