"""The report's order of findings: by row, rule, field and message, ties kept in given order."""

from __future__ import annotations

import itertools

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.core.findings import FINDING_SCHEMA, InputInfo, Report

_ROW = st.none() | st.integers(0, 4)
_TEXT = st.none() | st.sampled_from(["a", "b", "c"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(_ROW, st.sampled_from(["KE101", "KE202"]), _TEXT, _TEXT, st.integers()),
        max_size=30,
    ),
    st.integers(1, 2),
)
def test_report_order_is_one_sort_on_all_four_keys(rows, n_inputs):
    """Two-step sort (message compared only on ties) == one stable sort on all four keys, and
    every finding with a row is placed in its input."""
    frame = pl.DataFrame(
        [
            {"row": r, "rule": rule, "field": fld, "message": msg, "details": str(i)}
            for r, rule, fld, msg, i in rows
        ],
        schema={
            "row": pl.Int64,
            "rule": pl.String,
            "field": pl.String,
            "message": pl.String,
            "details": pl.String,
        },
    )
    inputs = [InputInfo(f"in{i}.jsonl", "0" * 64, 3) for i in range(n_inputs)]
    report = Report("mquake", inputs, frame, rules_run=["KE101", "KE202"])
    want = frame.sort(["row", "rule", "field", "message"], nulls_last=True, maintain_order=True)
    got = report.findings
    assert got.columns == list(FINDING_SCHEMA)
    assert got.select("row", "rule", "field", "message", "details").equals(want)
    for row, path, at in got.select("row", "input", "input_row").iter_rows():
        if row is None:
            assert path is None and at is None
        else:
            i = min(row // 3, n_inputs - 1)
            assert (path, at) == (f"in{i}.jsonl", row - 3 * i)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_ROW, st.none() | st.sampled_from(["KE101", "KE202"]), _TEXT), max_size=12),
    st.booleans(),
)
def test_order_scan_says_what_a_sort_would_change(rows, pre_sorted):
    """The one-pass check that lets the report skip its sort says "in order" exactly when the
    stable sort (nulls last) would leave the findings as they are, and of sorted findings
    whether two neighbours tie on every key (then the message must decide); sorted inputs are
    drawn half the time, so both answers are exercised."""
    from curate.core.findings import _scan_order

    keys = ["row", "rule", "field"]
    frame = pl.DataFrame(
        rows, schema={"row": pl.Int64, "rule": pl.String, "field": pl.String}, orient="row"
    )
    if pre_sorted:
        frame = frame.sort(keys, nulls_last=True, maintain_order=True)
    want = frame.sort(keys, nulls_last=True, maintain_order=True).equals(frame)
    ordered, ties = _scan_order(frame, keys)
    assert ordered == want
    assert want or not pre_sorted
    if ordered:
        listed = frame.rows()
        assert ties == any(a == b for a, b in itertools.pairwise(listed))
