"""The shared duplicate and leakage joins against brute-force, dict-indexed references.

Why property tests: every family's duplicate and leakage rules now stand on these few joins, so
an off-by-one in "earlier" (first row, earliest split) would change four families' reports at
once. Hypothesis draws small frames with many collisions (few keys, shuffled rows, missing
splits, splits outside the order); the references are the obvious loops a reader can check.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.audits.shared.duplicates import (
    cross_split_copies,
    duplicates,
    first_occurrences,
    later_copies,
    later_occurrences,
    leaks,
    leaks_from,
    repeats,
    seen_in,
)
from curate.core.keys import SPLIT_ORDER, Keys

SPLITS = [None, "train", "validation", "test", "extra"]


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 30))
    rows = draw(st.permutations(list(range(0, 3 * n, 3))))  # unsorted, with gaps
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    other = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    splits = draw(st.lists(st.sampled_from(SPLITS), min_size=n, max_size=n))
    return pl.DataFrame(
        {
            "row": pl.Series(rows, dtype=pl.Int64),
            "record": pl.Series([f"r{r}" for r in rows], dtype=pl.String),
            "key": pl.Series(keys, dtype=pl.String),
            "other": pl.Series(other, dtype=pl.Int64),
            "split": pl.Series(splits, dtype=pl.String),
        }
    )


def brute_later(df: pl.DataFrame, by: list[str]) -> dict[int, int]:
    """row → first row of its group, for every row that is not its group's first."""
    first: dict[tuple, int] = {}
    for d in df.iter_rows(named=True):
        k = tuple(d[c] for c in by)
        first[k] = min(first.get(k, d["row"]), d["row"])
    out = {}
    for d in df.iter_rows(named=True):
        f = first[tuple(d[c] for c in by)]
        if f != d["row"]:
            out[d["row"]] = f
    return out


@settings(max_examples=150, deadline=None)
@given(frames(), st.sampled_from([["key"], ["key", "split"], ["key", "other"]]))
def test_later_copies_matches_brute_force(df: pl.DataFrame, by: list[str]) -> None:
    got = later_copies(df, by)
    assert dict(zip(got["row"], got["first_row"], strict=True)) == brute_later(df, by)


@settings(max_examples=150, deadline=None)
@given(frames())
def test_later_occurrences_names_the_first(df: pl.DataFrame) -> None:
    got = later_occurrences(df, ["key"], df, extra=("split",))
    want = brute_later(df, ["key"])
    assert got["row"].to_list() == sorted(want)
    by_row = {d["row"]: d for d in df.iter_rows(named=True)}
    for d in got.iter_rows(named=True):
        assert d["first_record"] == by_row[want[d["row"]]]["record"]
        assert d["first_split"] == by_row[want[d["row"]]]["split"]


def brute_cross(df: pl.DataFrame, key: str, order: tuple[str, ...]) -> dict[int, tuple[int, str]]:
    """row → (first row, first split) of its key over the rows with a split in ``order``, for
    rows in a later split than the key's earliest."""
    rank = {s: i for i, s in enumerate(order)}
    ranked = [d for d in df.iter_rows(named=True) if d["split"] in rank]
    first: dict[object, tuple[int, int]] = {}
    for d in ranked:
        cand = (rank[d["split"]], d["row"])
        first[d[key]] = min(first.get(d[key], cand), cand)
    return {
        d["row"]: (first[d[key]][1], order[first[d[key]][0]])
        for d in ranked
        if rank[d["split"]] > first[d[key]][0]
    }


@settings(max_examples=150, deadline=None)
@given(frames(), st.booleans())
def test_cross_split_copies_matches_brute_force(df: pl.DataFrame, enum: bool) -> None:
    if enum:  # the deepfake tables hold the split as an Enum: its codes are the rank
        df = df.filter(pl.col("split").is_null() | pl.col("split").is_in(SPLIT_ORDER))
        df = df.with_columns(pl.col("split").cast(pl.Enum(list(SPLIT_ORDER))))
    got = cross_split_copies(df, "key")
    assert got["row"].to_list() == sorted(got["row"].to_list())
    want = brute_cross(df, "key", SPLIT_ORDER)
    assert {
        r: (f, s) for r, f, s in zip(got["row"], got["first_row"], got["first_split"], strict=True)
    } == want


@settings(max_examples=100, deadline=None)
@given(frames())
def test_custom_split_order(df: pl.DataFrame) -> None:
    order = ("test", "extra")  # a family whose "earliest" split is another one
    got = cross_split_copies(df, ["key"], order=order)
    assert dict(zip(got["row"], got["first_row"], strict=True)) == {
        r: f for r, (f, _) in brute_cross(df, "key", order).items()
    }


@settings(max_examples=100, deadline=None)
@given(frames(), frames())
def test_seen_in_matches_brute_force(rows: pl.DataFrame, ref: pl.DataFrame) -> None:
    got = seen_in(rows, ref, "key", pl.len().alias("n"), pl.col("record").min().alias("r"))
    counts: dict[object, list[str]] = {}
    for d in ref.iter_rows(named=True):
        if d["key"] is not None:  # a join never matches nulls
            counts.setdefault(d["key"], []).append(d["record"])
    want = [
        (d["row"], len(counts[d["key"]]), min(counts[d["key"]]))
        for d in rows.iter_rows(named=True)
        if d["key"] in counts
    ]
    assert sorted(got.select("row", "n", "r").iter_rows()) == sorted(want)


def test_declared_keys_drive_duplicates_and_leaks() -> None:
    df = pl.DataFrame(
        {
            "row": [0, 1, 2, 3, 4],
            "record": ["a", "b", "c", "d", "e"],
            "text": ["x", "x", "x", "y", "y"],
            "group": ["g", "g", "h", "k", "k"],
            "split": ["train", "train", "test", "test", "validation"],
        }
    )
    by_text = Keys("text", ("text",))
    # a duplicate stays within its split: row 1 repeats row 0; rows 2 and 3 are leaks
    assert later_copies(df, by_text.within_split())["row"].to_list() == [1]
    assert duplicates(df, by_text)["row"].to_list() == [1]
    assert leaks(df, by_text).select("row", "first_row", "first_split").rows() == [
        (2, 0, "train"),
        (3, 4, "validation"),
    ]
    # declared groups, not the key, decide what must not cross splits
    by_group = Keys("text", ("text",), groups=("group",))
    assert leaks(df, by_group).select("row", "first_row").rows() == [(3, 4)]
    # no split declared: nothing can leak, every equal text is a duplicate
    flat = Keys("text", ("text",), split=None)
    assert leaks(df, flat).is_empty()
    assert duplicates(df, flat)["row"].to_list() == [1, 2, 4]


@pytest.mark.parametrize("prefilter", [None, "h"])
def test_prefilter_is_exact(prefilter: str | None) -> None:
    """A hash prefilter narrows the candidates without changing the result (a row whose hash
    is unique cannot repeat a key)."""
    df = pl.DataFrame(
        {
            "row": list(range(6)),
            "key": ["p", "q", "p", "r", "q", "p"],
            "split": ["train", "test", "test", "test", "train", "train"],
        }
    ).with_columns(pl.col("key").hash().alias("h"))
    assert later_copies(df, ["key", "split"], prefilter=prefilter)["row"].to_list() == [5]
    assert cross_split_copies(df, "key", prefilter=prefilter)["row"].to_list() == [1, 2]


@settings(max_examples=150, deadline=None)
@given(frames())
def test_repeats_names_the_first_and_skips_null_keys(df: pl.DataFrame) -> None:
    """``repeats`` (group-by form, the first row's columns taken with it) finds what the
    window form finds, except that a null key is no key."""
    got = repeats(df, ["key"], first="record")
    want = brute_later(df.filter(pl.col("key").is_not_null()), ["key"])
    assert dict(zip(got["row"], got["first_row"], strict=True)) == want
    assert got["first"].to_list() == [f"r{want[r]}" for r in got["row"]]


@settings(max_examples=150, deadline=None)
@given(frames())
def test_first_occurrences_in_a_given_order(df: pl.DataFrame) -> None:
    """Ordered by (other, row), as RL404 orders by (file, row): the earliest "file" wins over
    a smaller row in a later one."""
    got = first_occurrences(df, ["key"], order=("other", "row"), where="other")
    best: dict[str, tuple[int, int]] = {}
    for d in df.iter_rows(named=True):
        if d["key"] is not None:
            best[d["key"]] = min(best.get(d["key"], (d["other"], d["row"])), (d["other"], d["row"]))
    assert {k: (w, r) for k, r, w in got.select("key", "first_row", "where").iter_rows()} == best


@settings(max_examples=150, deadline=None)
@given(frames())
def test_leaks_from_counts_only_what_training_saw(df: pl.DataFrame) -> None:
    """Evaluation rows whose key train holds (GL401/GL402's shape): a key only in validation
    and test is no leak here, unlike :func:`leaks`."""
    got = leaks_from(df, Keys("k", ("key",)), pl.len().alias("n"))
    train: dict[str, int] = {}
    for d in df.iter_rows(named=True):
        if d["split"] == "train" and d["key"] is not None:
            train[d["key"]] = train.get(d["key"], 0) + 1
    want = [
        (d["row"], train[d["key"]])
        for d in df.iter_rows(named=True)
        if d["split"] in ("validation", "test") and d["key"] in train
    ]
    assert sorted(got.select("row", "n").iter_rows()) == sorted(want)
