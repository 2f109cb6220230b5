"""The generic fix engine (curate.core.fixes): edits carried by findings, applied the same way for
every family. Family-level behaviour (what MQuAKE or glycan fixes produce) is tested with the
families; here the engine's own contract: old-value checks, order independence, drops that keep
the whole record, merges that log what they discard, and the select/unsafe choice."""

from __future__ import annotations

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.core.errors import UsageError
from curate.core.findings import RULE_OUTPUT_SCHEMA
from curate.core.fixes import FixChoice, apply_edits, edits_of
from curate.core.rules import RuleSet


def _rules() -> RuleSet:
    rs = RuleSet("toy")

    def make(code: str, name: str, **kw):
        def f(data, ctx):
            """Toy rule."""

        f.__doc__ = f"Toy rule {code}."
        rs.rule(code, name, category="label", severity="warning", **kw)(f)

    make("TY001", "strip", fix="always")
    make("TY002", "dedupe", fix="always")
    make("TY003", "resplit", fix="always", unsafe=True)
    make("TY004", "note")
    make("TY005", "withhold", fix="sometimes")
    return rs


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "__row": [10, 11, 12, 13],
            "__record": ["a", "b", "c", "d"],
            "__split": ["train", "train", "test", "test"],
            "label": [" x", "y", "y ", None],
            "tags": [[], ["t"], [], []],
            "score": [1.0, None, 3.0, None],
        }
    )


def _findings(rows: list[dict]) -> pl.DataFrame:
    out = []
    for r in rows:
        out.append(
            {
                "rule": r["rule"],
                "row": r.get("row"),
                "record": r.get("record"),
                "field": r.get("field", ""),
                "message": r.get("message", "m"),
                "details": "{}",
                "fix": None if r.get("fix") is None else orjson.dumps(r["fix"]).decode(),
            }
        )
    return pl.DataFrame(out, schema={"rule": pl.String, **RULE_OUTPUT_SCHEMA})


FINDINGS = [
    {"rule": "TY001", "row": 10, "record": "a", "field": "label",
     "fix": {"op": "set", "field": "label", "old": " x", "new": "x"}},
    {"rule": "TY001", "row": 12, "record": "c", "field": "label",
     "fix": {"op": "set", "field": "label", "old": "y ", "new": "y"}},
    # the same cell twice (two findings, one edit): applied once, logged once
    {"rule": "TY001", "row": 12, "record": "c", "field": "label",
     "fix": {"op": "set", "field": "label", "old": "y ", "new": "y"}},
    # a stale edit (the cell no longer holds "old"): skipped, left for the next pass
    {"rule": "TY001", "row": 11, "record": "b", "field": "label",
     "fix": {"op": "set", "field": "label", "old": "Y", "new": "z"}},
    {"rule": "TY002", "row": 13, "record": "d", "fix": {"op": "merge_rows", "into": 11}},
    {"rule": "TY003", "row": 10, "record": "a",
     "fix": {"op": "move", "old": "train", "new": "test"}},
    {"rule": "TY004", "row": 11, "record": "b"},
    {"rule": "TY005", "row": 11, "record": "b", "field": "tags",
     "fix": {"op": "extend", "field": "tags", "values": ["t", "u"]}},
]  # fmt: skip


def test_edits_apply_and_log_their_findings():
    rs = _rules()
    applied, withheld = FixChoice(unsafe=True).rules(rs)
    res = apply_edits(_frame(), edits_of(_findings(FINDINGS), applied))
    out = res.frame.sort("__row")
    assert out["__record"].to_list() == ["a", "b", "c"]  # d merged into b, then dropped
    assert out["label"].to_list() == ["x", "y", "y"]
    assert out["__split"].to_list() == ["test", "train", "test"]
    assert out["tags"].to_list() == [[], ["t", "u"], []]
    assert out["score"].to_list() == [1.0, None, 3.0]  # d had no score to give b
    assert res.skipped == 1  # the stale "Y" edit
    logged = [(c.rule, c.record, c.field) for c in res.changes]
    assert logged.count(("TY001", "c", "label")) == 1
    assert ("TY002", "d", "") in logged  # the drop, whole record kept
    drop = next(c for c in res.changes if c.rule == "TY002" and c.field == "")
    assert drop.old["label"] is None and drop.new is None
    assert all(c.finding and c.finding["rule"] == c.rule for c in res.changes)
    assert withheld == []


def test_unsafe_fixes_need_the_flag_and_select_must_name_a_fixable_rule():
    rs = _rules()
    applied, withheld = FixChoice().rules(rs)
    assert {r.code for r in applied} == {"TY001", "TY002", "TY005"}
    assert [r.code for r in withheld] == ["TY003"]
    res = apply_edits(_frame(), edits_of(_findings(FINDINGS), applied))
    assert res.frame["__split"].to_list()[0] == "train"  # the move was not applied
    with pytest.raises(UsageError, match="no fixable rule"):
        FixChoice(select=("TY004",)).rules(rs)
    applied, _ = FixChoice(select=("TY0",), ignore=("TY001",)).rules(rs)
    assert {r.code for r in applied} == {"TY002", "TY005"}


def test_merge_columns_keeps_the_first_value_and_logs_the_discarded_one():
    rs = _rules()
    frame = pl.DataFrame(
        {
            "__row": [0, 1, 2],
            "__record": ["p", "q", "r"],
            "__split": ["train"] * 3,
            "G1": [1.0, None, 5.0],
            "G1b": [2.0, 4.0, 5.0],
        }
    )
    f = _findings(
        [{"rule": "TY002", "row": None, "record": None, "field": "G1b",
          "fix": {"op": "merge_columns", "into": "G1", "from": "G1b"}}]
    )  # fmt: skip
    res = apply_edits(frame, edits_of(f, rs))
    assert res.frame.columns == ["__row", "__record", "__split", "G1"]
    assert res.frame["G1"].to_list() == [1.0, 4.0, 5.0]
    discarded = [c for c in res.changes if c.new is None and c.old == 2.0]
    assert discarded and discarded[0].record == "p" and discarded[0].field == "G1b"


def test_a_move_takes_its_group_along_once():
    """A leak is fixed by moving every row of one glycan into one split, training rows (which
    are no findings) included: each finding states the whole group, the first one applied moves
    it, the other finds nothing left, and a row dropped in the same pass stays dropped."""
    rs = _rules()
    frame = pl.DataFrame(
        {
            "__row": [0, 1, 2, 3, 4],
            "__record": ["t1", "t2", "v1", "x1", "other"],
            "__split": ["train", "train", "validation", "test", "train"],
            "g": ["G", "G", "G", "G", "H"],
        }
    )
    group = {"op": "move", "new": "test", "with": [[0, "train"], [1, "train"], [2, "validation"],
                                                   [3, "test"]]}  # fmt: skip
    f = _findings(
        [
            {"rule": "TY003", "row": 2, "record": "v1", "fix": {**group, "old": "validation"}},
            {"rule": "TY003", "row": 3, "record": "x1", "fix": {**group, "old": "test"}},
            # a stale member (the row is no longer in the split the edit says): left alone
            {"rule": "TY003", "row": 4, "record": "other",
             "fix": {"op": "move", "old": "validation", "new": "test"}},
            {"rule": "TY002", "row": 1, "record": "t2", "fix": {"op": "drop"}},
        ]
    )  # fmt: skip
    applied, _ = FixChoice(unsafe=True).rules(rs)
    res = apply_edits(frame, edits_of(f, applied))
    assert res.frame["__record"].to_list() == ["t1", "v1", "x1", "other"]
    assert res.frame["__split"].to_list() == ["test", "test", "test", "train"]
    moves = [(c.record, c.old, c.new, c.finding["record"]) for c in res.changes if c.field]
    assert moves == [("v1", "validation", "test", "v1"), ("t1", "train", "test", "v1")]
    assert res.applied == 2 and res.skipped == 2  # x1's group was moved already; "other" stale


@settings(max_examples=40, deadline=None)
@given(st.permutations(FINDINGS))
def test_the_result_does_not_depend_on_finding_order(perm):
    rs = _rules()
    applied, _ = FixChoice(unsafe=True).rules(rs)
    a = apply_edits(_frame(), edits_of(_findings(FINDINGS), applied))
    b = apply_edits(_frame(), edits_of(_findings(list(perm)), applied))
    assert a.frame.equals(b.frame)
    assert [c.to_json() for c in a.changes] == [c.to_json() for c in b.changes]
